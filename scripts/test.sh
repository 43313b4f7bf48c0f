#!/usr/bin/env bash
# Sets up, builds and runs every aotgrad test, against libtorch 2.11 from the project's venv
# (scripts/build.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
. "$root/scripts/build_dir.sh"
cd "$build"
ctest --output-on-failure -j2 --timeout 600
