#!/usr/bin/env bash
# Configures and builds aotgrad with Ninja, two jobs, against libtorch 2.11 from the project's venv,
# into the directory scripts/build_dir.sh picks.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/scripts/build_dir.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${AOTGRAD_BUILD_TYPE:-RelWithDebInfo}" >/dev/null
ninja -C "$build" -j"${AOTGRAD_JOBS:-2}" "$@"
