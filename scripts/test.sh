#!/usr/bin/env bash
# Sets up, builds and runs every aotgrad test, against libtorch 2.11 from the project's venv
# (scripts/build.sh), then the concurrency and compile-cache tests under ThreadSanitizer
# (scripts/tsan.sh, a build of its own) and the libFuzzer targets for a bounded time
# (scripts/fuzz.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
. "$root/scripts/build_dir.sh"
cd "$build"
ctest --output-on-failure -j2 --timeout 600
# ThreadSanitizer: no report from the concurrency tests or the compile cache's.
"$root/scripts/tsan.sh"
# The libFuzzer targets (tests/fuzz), 20 s each: no crash, hang, leak or sanitizer report.
"$root/scripts/fuzz.sh" --seconds=20
