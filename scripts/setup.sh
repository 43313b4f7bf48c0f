#!/usr/bin/env bash
# Installs aotgrad's build and test dependencies: Debian's packages with apt-get, and PyTorch 2.11's
# wheel with the Python packages beside it with pip into the project's own venv (.venv, or
# $AOTGRAD_VENV). Idempotent: installs only what is missing, runs apt-get update only when a package
# is, and leaves a venv whose packages are already at the pinned versions alone.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  clang-format                        # tests/style/format_test.sh keeps the tree formatted
  clang libclang-rt-14-dev            # scripts/fuzz.sh: the libFuzzer targets, with ASan and UBSan
  llvm-14-tools                       # FileCheck, which checks the pass tests (tests/passes/*.fx)
  libgloo-dev                         # Gloo's headers, which c10d's ProcessGroupGloo.hpp includes (collectives)
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev
  libboost-graph-dev                  # Boost.Graph max-flow (header-only) for the min-cut partitioner
  coinor-libcbc-dev                   # CBC, the ILP solver of the activation memory budget (--solver=ilp)
  graphviz                            # dot, which renders `aotgrad compile --dot` in a test
  python3-venv                        # the project's venv: PyTorch 2.11's wheels, networkx, ... (below)
  python3-dev                         # Python.h, for the aotgrad package's extension (aotgrad._C, src/python)
  hyperfine                           # bench/cli_startup.sh: process wall time of the command line
  libtcmalloc-minimal4 libjemalloc2   # the allocators `aotgrad launch` preloads, as PyTorch's run_cpu
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# PyTorch 2.11 from PyPI, into the project's venv: libtorch 2.11 for C++ (its headers, libraries and
# share/cmake; CMake builds against it, cmake/torch_wheel.cmake) and PyTorch
# for Python. torchaudio's 2.11.1 on PyPI needs a newer libtorch than 2.11.0: all three are pinned.
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${AOTGRAD_VENV:-$root/.venv}"
# Beside them: networkx for PyTorch's min-cut partitioner (the reference of the benchmarks and of
# tests/cli/partition_test.sh), expecttest for op_db's imports (tools/opinfo_sweep.py), pyyaml for
# tools/gen_op_tags.py, pytest; scikit-build-core, which builds the aotgrad package (pyproject.toml).
python_packages=(torch==2.11.0 torchvision==0.26.0 torchaudio==2.11.0 expecttest networkx pytest pyyaml
  scikit-build-core)
if ! "$venv/bin/python" - "${python_packages[@]}" 2>/dev/null <<'PY'
import sys
from importlib.metadata import version, PackageNotFoundError
for spec in sys.argv[1:]:
    name, _, pinned = spec.partition("==")
    try:
        have = version(name)
    except PackageNotFoundError:
        sys.exit(1)
    if pinned and have.split("+")[0] != pinned:
        sys.exit(1)
PY
then
  echo "setup: installing ${python_packages[*]} into $venv"
  [ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "${python_packages[@]}"
fi

# The aotgrad Python package, into the same venv (issue 42): built by the project's CMake in the
# project's build tree (scripts/build_dir.sh; only the extension and the libraries it links), so
# that scripts/build.sh then builds the rest. --no-build-isolation: it links the venv's libtorch.
. "$root/scripts/build_dir.sh"
echo "setup: installing the aotgrad package into $venv (build tree $build)"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation \
  --config-settings=build-dir="$build" \
  --config-settings=cmake.build-type="${AOTGRAD_BUILD_TYPE:-RelWithDebInfo}" \
  --config-settings=cmake.define.AOTGRAD_PYTHON="$venv/bin/python" "$root"
