#!/usr/bin/env bash
# Smoke test of the benchmark scripts (scripts/bench.sh's parts, not its figures):
# bench/compile_compare.py on the 1-layer GPT-2-width model with one repetition each (aotgrad's and
# PyTorch's AOTAutograd's phases, saved activation bytes, the ratio), the Google Benchmark programs
# on a filter with a tiny minimum time, bench/cli_startup.sh with two runs, and bench/report.py
# writing BENCHMARKS.md and its SVG plots from them.
# usage: bench_test.sh AOTGRAD_BINARY TEST_DATA_DIR
source "$(dirname "$0")/lib.sh" "$@"
benchdir="$(dirname "$bin")/bench"

# Bad arguments are usage errors naming the cause.
"$PY" "$root/bench/compile_compare.py" --aotgrad="$bin" --dir="$tmp/g" --models=nosuch 2>"$tmp/err"
check [ $? -eq 2 ]
check grep -q "unknown model nosuch (known: gpt_1l, gpt_2l, gpt_4l, gpt_12l, gpt_24l, gpt_48l, resnet18)" "$tmp/err"
"$PY" "$root/bench/compile_compare.py" --aotgrad="$tmp/none" --dir="$tmp/g" 2>"$tmp/err"
check [ $? -eq 2 ]
check grep -q "is not an executable" "$tmp/err"

"$PY" "$root/bench/report.py" machine >"$tmp/machine.json"
check [ $? -eq 0 ]
"$PY" "$root/bench/compile_compare.py" --aotgrad="$bin" --dir="$tmp/g" --models=gpt_1l --aotgrad-reps=1 \
  --functorch-reps=1 --out="$tmp/compile.json" 2>"$tmp/compile.err"
check [ $? -eq 0 ]
check [ -s "$tmp/g/gpt_1l.fx" ] && check [ ! -e "$tmp/g/gpt_1l.inputs.safetensors" ]
check "$PY" - "$tmp/compile.json" "$bin" "$tmp/g/gpt_1l.fx" "$root" <<'P'
import json, subprocess, sys
sys.path.insert(0, sys.argv[4] + "/bench")
import compile_compare
doc = json.load(open(sys.argv[1]))
(m,) = doc["models"]
assert m["model"] == "gpt_1l" and doc["gpt_width"]["d"] == 768, m
a, f = m["aotgrad"], m["functorch"]
for k in ("parse", "decompose_composites", "functionalize", "joint", "decompose", "partition", "total"):
    assert a["phases_s"][k] > 0, (k, a)
# The reference is the venv's PyTorch's own AOTAutograd (one trace, then the joint graph's
# clean-up passes), named by its version.
import torch
assert doc["reference"] == f["reference"] == "PyTorch %s's AOTAutograd" % ".".join(torch.__version__.split(".")[:2]), (doc["reference"], f)
assert list(f["phases_s"]) == list(f["cpu_phases_s"]) == list(compile_compare.REFERENCE_PHASES), f
for k in ("forward", "joint_trace", "post_trace", "partition", "total"):
    assert f["phases_s"][k] > 0, (k, f)
assert f["phases_s"]["total"] >= f["phases_s"]["joint_trace"] + f["phases_s"]["partition"], f
assert abs(m["ratio"] - f["phases_s"]["total"] / a["phases_s"]["total"]) < 1e-9 * m["ratio"], m
assert a["joint_nodes"] > m["forward_ops"] > 50 and f["joint_nodes"] > m["forward_ops"], m
assert a["reps"] == 1 and f["reps"] == 1, m
# aotgrad's bytes are the CLI's own figure, and both partitioners save something.
grad = compile_compare.grad_spec(compile_compare.MODELS["gpt_1l"][1]()[0])
j = json.loads(subprocess.run([sys.argv[2], "compile", sys.argv[3], "--grad=" + grad, "--stats=json"],
                              stdout=subprocess.PIPE, check=True).stdout)
assert j["saved_activation_bytes"] == a["saved_activation_bytes"]["min_cut"], (j["saved_activation_bytes"], a)
# Every phase has its CPU time too; the compilation is single-threaded, so CPU time stays within
# wall time (plus the clocks' granularity).
assert list(j["phases_cpu_us"]) == list(j["phases_us"]), j
assert all(v >= 0 for v in j["phases_cpu_us"].values()) and j["total_cpu_us"] > 0, j
assert j["total_cpu_us"] <= 1.05 * j["total_us"] + 1000, j
for who in (a, f):
    assert who["cpu_phases_s"]["total"] > 0, who
for who in (a, f):
    for part in ("min_cut", "default"):
        assert who["saved_activation_bytes"][part] > 0, who
P

# The Google Benchmark programs, briefly, and the report from all of it.
gb=(--benchmark_repetitions=2 --benchmark_min_time=0.01 --benchmark_report_aggregates_only=true
    --benchmark_out_format=json)
check [ -x "$benchdir/train_step_bench" ] && check [ -x "$benchdir/call_overhead_bench" ]
"$benchdir/train_step_bench" "${gb[@]}" --benchmark_filter='TrainStep/gpt_block/' \
  --benchmark_out="$tmp/train_step.json" >/dev/null 2>"$tmp/gb.err"
check [ $? -eq 0 ]
# The torchvision models, one step each: mobilenet_v2 (batch 16, 3x64x64) eager and the default
# compiled step; at budget 1 aotgrad's peak is below eager's (re-inplacing and the memory schedule).
"$benchdir/train_step_bench" --benchmark_repetitions=1 --benchmark_min_time=0.01 \
  --benchmark_out_format=json --benchmark_filter='TrainStep/mobilenet_v2/(eager|aotgrad_min_cut)$' \
  --benchmark_out="$tmp/train_step_vision.json" >/dev/null 2>>"$tmp/gb.err"
check [ $? -eq 0 ]
check "$PY" - "$tmp/train_step_vision.json" <<'P'
import json, sys
rows = {b["name"]: b for b in json.load(open(sys.argv[1]))["benchmarks"]}
eager, mc = rows["TrainStep/mobilenet_v2/eager"], rows["TrainStep/mobilenet_v2/aotgrad_min_cut"]
assert eager["peak_bytes_above_pre_step"] > 50e6, eager
assert mc["peak_bytes_above_pre_step"] < eager["peak_bytes_above_pre_step"], (mc, eager)
P
"$benchdir/call_overhead_bench" "${gb[@]}" --benchmark_out="$tmp/call_overhead.json" >/dev/null 2>>"$tmp/gb.err"
check [ $? -eq 0 ]
# The command line's start-up: two runs per command, the figures as JSON.
"$root/bench/cli_startup.sh" "$bin" --runs=2 --out="$tmp/cli_startup.json" >"$tmp/startup.out"
check [ $? -eq 0 ]
check grep -q "^check on a 1,000-node graph: .* ms median, target 30 ms: " "$tmp/startup.out"
check "$PY" - "$tmp/cli_startup.json" <<'P'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["graph_nodes"] == 1000 and set(d["commands"]) == {"check", "ops", "opt", "compile", "compile_grad", "run"}, d
assert all(r["median_ms"] > 0 and r["min_ms"] <= r["median_ms"] <= r["max_ms"] for r in d["commands"].values()), d
P
"$root/bench/cli_startup.sh" "$bin" --runs=0 2>"$tmp/err"
check [ $? -eq 2 ]
"$PY" "$root/bench/report.py" write --results="$tmp" --md="$tmp/BENCHMARKS.md" --svg-dir="$tmp/svg" \
  --command="scripts/bench.sh --quick"
check [ $? -eq 0 ]
check "$PY" - "$tmp" <<'P'
import os, sys, xml.etree.ElementTree as ET
d = sys.argv[1]
md = open(os.path.join(d, "BENCHMARKS.md")).read()
for s in ("## Machine", "## Targets", "## Compile time", "## Saved activation bytes", "## Training step",
          "## Call overhead", "## Command-line start-up", "| `aotgrad check` |", "| gpt_1l |", "scripts/bench.sh --quick", "BM_Inference_CompiledGraph",
          "gpt_block", "svg/compile_time.svg", "svg/train_step_gpt_block.svg", "svg/budget_curve.svg",
          "| torch (venv) | ", "| torchvision (venv) | ", "| torchaudio (venv) | ", "| networkx (venv) | ",
          "| torch's CUDA build | ", "| cmake | "):
    assert s in md, s
# The machine table names the venv's torch, not Debian's packages.
assert "python3-torch" not in md and "libtorch-dev" not in md, md
# The report names the reference compile.json measured, and its phases.
import json
ref = json.load(open(os.path.join(d, "compile.json")))["reference"]
assert "| aotgrad min-cut / %s min-cut |" % ref in md and "%s phases, ms" % ref in md, ref
assert "post-trace" in md and "functorch 1.13" not in md, ref
assert md.count("**met**") + md.count("**missed**") >= 5, md
for f in ("compile_time.svg", "train_step_gpt_block.svg", "budget_curve.svg"):
    root = ET.parse(os.path.join(d, "svg", f)).getroot()
    assert root.tag.endswith("svg") and len(root.findall("{http://www.w3.org/2000/svg}circle")) >= 2, f
P
# A model with a per-block checkpoint baseline gets a dashed line at its peak ratio, in its colour.
check "$PY" - "$root" <<'P'
import sys
sys.path.insert(0, sys.argv[1] + "/bench")
import report
row = lambda t, b: {"time_us": t, "peak_bytes_above_pre_step": b}
train = {"TrainStep/m/eager": row(100, 1000), "TrainStep/m/eager_checkpoint": row(150, 400),
         "TrainStep/m/aotgrad_min_cut": row(90, 900), "TrainStep/m/aotgrad_min_cut_budget_0": row(120, 350)}
svg = report.budget_curve_svg(train, ["m"])
assert "m per-block checkpoint" in svg and "1.50x time" in svg, svg
assert svg.count('stroke-dasharray') == 1, svg
del train["TrainStep/m/eager_checkpoint"]
assert "per-block" not in report.budget_curve_svg(train, ["m"])
P
"$PY" "$root/bench/report.py" write --results="$tmp/nothing" --md="$tmp/x.md" --svg-dir="$tmp/x" 2>"$tmp/err"
check [ $? -eq 1 ]
check grep -q "has no machine.json" "$tmp/err"

finish
