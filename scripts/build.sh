#!/usr/bin/env bash
# Configures and builds aotgrad into build/ (or $AOTGRAD_BUILD_DIR) with Ninja, two jobs.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${AOTGRAD_BUILD_DIR:-$root/build}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${AOTGRAD_BUILD_TYPE:-RelWithDebInfo}" >/dev/null
ninja -C "$build" -j"${AOTGRAD_JOBS:-2}" "$@"
