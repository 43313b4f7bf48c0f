#!/usr/bin/env bash
# Installs aotgrad's build and test dependencies from Debian's packages. Idempotent: installs
# only what is missing, and runs apt-get update only when something is.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  clang-format                        # tests/style/format_test.sh keeps the tree formatted
  llvm-14-tools                       # FileCheck, which checks the pass tests (tests/passes/*.fx)
  libtorch-dev libopenblas0-pthread   # libtorch 1.13; OpenBLAS so ATen does not use the reference BLAS
  libgloo-dev                         # Gloo's headers, which c10d's ProcessGroupGloo.hpp includes (collectives)
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev
  libboost-graph-dev                  # Boost.Graph max-flow (header-only) for the min-cut partitioner
  coinor-libcbc-dev                   # CBC, the ILP solver of the activation memory budget (--solver=ilp)
  python3-torch                       # PyTorch 1.13 for the exporter and conformance checks
  python3-torchvision                 # torchvision's models: the exporter's tests, the model sweep
  python3-torchaudio                  # torchaudio's models for the model sweep (tools/model_sweep.py)
  graphviz                            # dot, which renders `aotgrad compile --dot` in a test
  python3-networkx                    # functorch's min-cut partitioner, the reference in tests/cli/partition_test.sh
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
