#!/usr/bin/env bash
# The real-model sweep (issue 20): every model of tools/model_sweep.py (torchvision's
# classification families, torchaudio's models, nn.TransformerEncoder; the venv's PyTorch 2.11,
# torchvision and torchaudio, scripts/setup.sh) trained one step through tools/export.py and
# `aotgrad run --train`, against eager's loss, grads and buffers (tools/model_sweep.py says how).
# Builds the aotgrad command line, writes report.json and report.md into $AOTGRAD_MODELS_OUT and,
# for a full run, rewrites the "Real models" section of BENCHMARKS.md (between its model_sweep
# markers).
#
# usage: scripts/model_sweep.sh [OPTION ...]   options of `tools/model_sweep.py run`, such as
#          --models=resnet18,swin_t  --timeout=S   (a partial run leaves BENCHMARKS.md alone)
# environment: AOTGRAD_BUILD_DIR (default build/), AOTGRAD_MODELS_OUT (default $build/model-sweep).
# About 3 minutes on two cores; one process at a time.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${AOTGRAD_BUILD_DIR:-$root/build}"
out="${AOTGRAD_MODELS_OUT:-$build/model-sweep}"
# The venv's Python (scripts/setup.sh), whose torch is the libtorch build/ links.
PY="${AOTGRAD_PYTHON:-${AOTGRAD_VENV:-$root/.venv}/bin/python}"

full=1
for a in "$@"; do
  case "$a" in --models=* | --models-file=*) full=0 ;; esac
done
"$root/scripts/build.sh" aotgrad_cli aotgrad_torch
"$PY" "$root/tools/model_sweep.py" run --aotgrad="$build/aotgrad" --out="$out" "$@"
if [ "$full" -eq 1 ]; then
  cmd="scripts/model_sweep.sh${*:+ $*}"
  "$PY" "$root/tools/model_sweep.py" benchmarks "$out/report.json" "$root/BENCHMARKS.md" --command="$cmd"
  echo "model_sweep.sh: rewrote the Real models section of $root/BENCHMARKS.md"
fi
