#!/usr/bin/env bash
# Packs the GPU test group and the GPT demo for a machine with a GPU and PyTorch 2.11 but without
# aotgrad's build dependencies: builds gpu_tests and gpt_demo, and copies them with aotgrad's
# libraries (debug info stripped, ~40 MiB) and the demo's text into gpu-bundle/ (git-ignored),
# beside run.sh, which runs there with the libtorch of that machine's python3:
#
#   scripts/gpu_bundle.sh               # here
#   bash gpu-bundle/run.sh [OUT_DIR]    # there: gpu_tests, then the demo on cuda, logs in OUT_DIR
#
# environment: AOTGRAD_BUILD_DIR (default build/).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/scripts/build_dir.sh"
"$root/scripts/build.sh" gpu_tests gpt_demo
out="$root/gpu-bundle"
rm -rf "$out"
mkdir -p "$out/lib"
for f in "$build"/libaotgrad_*.so; do strip --strip-debug -o "$out/lib/$(basename "$f")" "$f"; done
strip --strip-debug -o "$out/gpu_tests" "$build/tests/gpu_tests"
strip --strip-debug -o "$out/gpt_demo" "$build/examples/gpt_demo/gpt_demo"
cp "$root/examples/gpt_demo/corpus.txt" "$out/"
cat >"$out/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs the GPU test group and the GPT demo on cuda against this machine's PyTorch 2.11 libtorch.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
logs="${1:-$here/logs}"
mkdir -p "$logs"
py="${AOTGRAD_PYTHON:-python3}"
torch_lib="$("$py" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')"
"$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpu",
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)' | tee "$logs/machine.txt"
export LD_LIBRARY_PATH="$here/lib:$torch_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export AOTGRAD_CACHE_DIR=off
rc=0
"$here/gpu_tests" 2>&1 | tee "$logs/gpu_tests.txt" || rc=1
for budget in 1 auto; do
  "$here/gpt_demo" --device=cuda --text="$here/corpus.txt" --seq=256 --steps=30 --sample=0 \
    --memory-budget=$budget 2>&1 | tee "$logs/gpt_demo_budget_$budget.txt" || rc=1
done
exit $rc
RUN
chmod +x "$out/run.sh"
du -sh "$out"
