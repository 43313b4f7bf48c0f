#!/usr/bin/env bash
# The full OpInfo conformance sweep (issue 20): every OpInfo of PyTorch's op_db (the venv's PyTorch
# 2.11) with float32 CPU support, up to 3 samples each, through `aotgrad run` and through PyTorch's
# own AOTAutograd's aot_function as the anchor (tools/opinfo_sweep.py says how; --no-functorch
# skips the anchor). Builds the aotgrad command line,
# writes report.json and report.md into $AOTGRAD_OPINFO_OUT and, for a full run, rewrites the
# "OpInfo conformance" section of BENCHMARKS.md (between its opinfo_sweep markers).
#
# usage: scripts/opinfo_sweep.sh [OPTION ...]   options of `tools/opinfo_sweep.py run`, such as
#          --ops=add,mul  --no-functorch  -j1  --timeout=S  -v   (a partial run leaves BENCHMARKS.md)
# environment: AOTGRAD_BUILD_DIR (default build/), AOTGRAD_OPINFO_OUT (default $build/opinfo),
#              AOTGRAD_OPINFO_CACHE (exported cases, default $build/opinfo-cache).
# About 30 minutes on two quiet cores from an empty cache; a rerun reuses the exported cases.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${AOTGRAD_BUILD_DIR:-$root/build}"
out="${AOTGRAD_OPINFO_OUT:-$build/opinfo}"
cache="${AOTGRAD_OPINFO_CACHE:-$build/opinfo-cache}"
# The venv's Python (scripts/setup.sh), whose torch is the libtorch build/ links.
PY="${AOTGRAD_PYTHON:-${AOTGRAD_VENV:-$root/.venv}/bin/python}"

full=1
for a in "$@"; do
  case "$a" in --ops=* | --ops-file=* | --samples=* | --no-functorch) full=0 ;; esac
done
"$root/scripts/build.sh" aotgrad_cli
"$PY" "$root/tools/opinfo_sweep.py" run --aotgrad="$build/aotgrad" --out="$out" --cache-dir="$cache" "$@"
if [ "$full" -eq 1 ]; then
  cmd="scripts/opinfo_sweep.sh${*:+ $*}"
  "$PY" "$root/tools/opinfo_sweep.py" benchmarks "$out/report.json" "$root/BENCHMARKS.md" --command="$cmd"
  echo "opinfo_sweep.sh: rewrote the OpInfo section of $root/BENCHMARKS.md"
fi
