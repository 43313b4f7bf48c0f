#!/usr/bin/env bash
# The command line's process wall time, median of N runs (hyperfine, Debian's package): aotgrad
# check, opt, compile and compile --grad=all on a generated graph of 1,000 nodes, ops, and run
# (which loads libtorch) for comparison. The target of issue 19: check within 30 ms.
# usage: bench/cli_startup.sh AOTGRAD_BINARY [--runs=N] [--out=FILE.json]
#   --runs   runs per command (default 20; run, at ~0.85 s each, gets a quarter of them)
#   --out    also write the figures as JSON (for bench/report.py)
set -euo pipefail
bin="${1:?usage: bench/cli_startup.sh AOTGRAD_BINARY [--runs=N] [--out=FILE.json]}"
shift
runs=20
out=""
for a in "$@"; do
  case "$a" in
    --runs=*) runs="${a#--runs=}" ;;
    --out=*) out="${a#--out=}" ;;
    *) echo "bench/cli_startup.sh: unknown option '$a'" >&2; exit 2 ;;
  esac
done
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "bench/cli_startup.sh: --runs takes a positive integer" >&2; exit 2; }
[ -x "$bin" ] || { echo "bench/cli_startup.sh: $bin is not an executable" >&2; exit 2; }
command -v hyperfine >/dev/null || { echo "bench/cli_startup.sh: needs hyperfine (scripts/setup.sh)" >&2; exit 2; }
# The venv's Python (scripts/setup.sh), as scripts/bench.sh uses; only for the JSON.
root="$(cd "$(dirname "$0")/.." && pwd)"
PY="${AOTGRAD_PYTHON:-${AOTGRAD_VENV:-$root/.venv}/bin/python}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# 1,000 nodes (Graph::size()): two inputs, 997 pointwise calls in a chain, the output.
g="$tmp/chain.fx"
{
  echo 'def forward(self, x: "f32[16, 16]", y: "f32[16, 16]"):'
  prev=x
  for ((i = 0; i < 997; ++i)); do
    case $((i % 4)) in
      0) echo "    v$i = torch.ops.aten.add.Tensor($prev, y)" ;;
      1) echo "    v$i = torch.ops.aten.mul.Tensor($prev, y)" ;;
      2) echo "    v$i = torch.ops.aten.sigmoid.default($prev)" ;;
      3) echo "    v$i = torch.ops.aten.relu.default($prev)" ;;
    esac
    prev="v$i"
  done
  echo "    return ($prev,)"
} >"$g"
"$bin" check "$g" >/dev/null

few=$(((runs + 3) / 4))
hyperfine -N --style=none --warmup 3 --runs "$runs" --export-json "$tmp/core.json" \
  -n check "$bin check $g" -n ops "$bin ops" -n opt "$bin opt $g --passes=cse,dce" \
  -n compile "$bin compile $g" -n compile_grad "$bin compile $g --grad=all" >/dev/null \
  2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
hyperfine -N --style=none --warmup 1 --runs "$few" --export-json "$tmp/run.json" \
  -n run "$bin run $g --random-inputs" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
"$PY" - "$tmp/core.json" "$tmp/run.json" "$runs" "$few" "$out" <<'P'
import json, sys
core, run, runs, few, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
results = json.load(open(core))["results"] + json.load(open(run))["results"]
doc = {"graph_nodes": 1000, "target_check_ms": 30.0, "commands": {}}
print("%-13s %6s %11s %9s %9s" % ("command", "runs", "median ms", "min ms", "max ms"))
for r in results:
    n = r["command"]
    row = {"runs": len(r["times"]), "median_ms": r["median"] * 1e3, "min_ms": r["min"] * 1e3,
           "max_ms": r["max"] * 1e3, "mean_ms": r["mean"] * 1e3}
    doc["commands"][n] = row
    print("%-13s %6d %11.1f %9.1f %9.1f" % (n, row["runs"], row["median_ms"], row["min_ms"], row["max_ms"]))
check = doc["commands"]["check"]["median_ms"]
print("check on a 1,000-node graph: %.1f ms median, target 30 ms: %s" % (check, "met" if check <= 30 else "missed"))
if out:
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
P
