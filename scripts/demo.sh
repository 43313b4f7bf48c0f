#!/usr/bin/env bash
# Sets up, builds and runs aotgrad's main job on a graph shipped in the repo.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh" aotgrad_cli
build="${AOTGRAD_BUILD_DIR:-$root/build}"
"$build/aotgrad" check "$root/examples/linear_relu_joint.fx"
