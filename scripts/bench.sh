#!/usr/bin/env bash
# Builds aotgrad's benchmarks and runs all of them -- compile time and saved activation bytes
# against PyTorch's own AOTAutograd (the venv's PyTorch 2.11), training-step memory and time
# against eager, call overhead, the command line's start-up -- then rewrites BENCHMARKS.md and its
# plots (docs/bench/*.svg) at the repo root.
#
# usage: scripts/bench.sh [--quick]
#   --quick   gpt_1l and resnet18 only, one repetition each (a smoke run; BENCHMARKS.md is then
#             written to $AOTGRAD_BENCH_OUT instead of the repo root)
# environment: AOTGRAD_BUILD_DIR (default build/), AOTGRAD_BENCH_OUT (default: a temporary directory
#              for the raw results), AOTGRAD_BENCH_REPS (Google Benchmark repetitions, default 5).
# Needs the venv's torch, torchvision and networkx, and hyperfine (scripts/setup.sh installs
# them); no other dependency.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# The build directory scripts/build.sh builds into: $AOTGRAD_BUILD_DIR, else build/.
. "$root/scripts/build_dir.sh"
# The venv's Python (scripts/setup.sh), whose torch is the libtorch the build links.
PY="${AOTGRAD_PYTHON:-${AOTGRAD_VENV:-$root/.venv}/bin/python}"
quick=0
case "${1:-}" in
  --quick) quick=1 ;;
  "") ;;
  *) echo "usage: scripts/bench.sh [--quick]" >&2; exit 2 ;;
esac
out="${AOTGRAD_BENCH_OUT:-$(mktemp -d)}"
mkdir -p "$out"
reps="${AOTGRAD_BENCH_REPS:-5}"

"$root/scripts/build.sh" aotgrad_cli train_step_bench call_overhead_bench
"$PY" "$root/bench/report.py" machine --build-dir="$build" >"$out/machine.json"
# Compilation is measured, not the on-disk compile cache.
export AOTGRAD_CACHE_DIR=off

gbench=(--benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true
        --benchmark_format=console --benchmark_out_format=json)
if [ "$quick" -eq 1 ]; then
  "$PY" "$root/bench/compile_compare.py" --aotgrad="$build/aotgrad" --dir="$out/graphs" \
    --models=gpt_1l,resnet18 --aotgrad-reps=1 --functorch-reps=1 --out="$out/compile.json"
  gbench=(--benchmark_repetitions=1 --benchmark_min_time=0.01 --benchmark_format=console
          --benchmark_out_format=json)
  md="$out/BENCHMARKS.md"
  svg="$out/bench"
  cmd="scripts/bench.sh --quick"
else
  "$PY" "$root/bench/compile_compare.py" --aotgrad="$build/aotgrad" --dir="$out/graphs" \
    --out="$out/compile.json"
  md="$root/BENCHMARKS.md"
  svg="$root/docs/bench"
  cmd="scripts/bench.sh"
fi
"$build/bench/train_step_bench" "${gbench[@]}" --benchmark_out="$out/train_step.json"
"$build/bench/call_overhead_bench" "${gbench[@]}" --benchmark_out="$out/call_overhead.json"
if [ "$quick" -eq 1 ]; then startup_runs=2; else startup_runs=20; fi
"$root/bench/cli_startup.sh" "$build/aotgrad" --runs="$startup_runs" --out="$out/cli_startup.json"
"$PY" "$root/bench/report.py" write --results="$out" --md="$md" --svg-dir="$svg" --command="$cmd"
echo "wrote $md (raw results in $out)"
