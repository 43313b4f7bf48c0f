#!/usr/bin/env bash
# ThreadSanitizer (issue 44, item 4): builds aotgrad with -fsanitize=thread (clang, -O1) in a build
# directory of its own (build-tsan/, or $AOTGRAD_TSAN_BUILD_DIR) and runs the concurrency tests
# (tests/api/concurrency_test.cc) and the compile cache's tests under it. Any report fails the run
# (halt_on_error); tests/tsan.supp lists what is suppressed, and why.
#
# usage: scripts/tsan.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${AOTGRAD_TSAN_BUILD_DIR:-$root/build-tsan}"
# -O1 -g1: line tables for the reports, and a faster build than full debug info.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DAOTGRAD_TSAN=ON \
  -DAOTGRAD_BUILD_BENCHMARKS=OFF -DAOTGRAD_BUILD_EXAMPLES=OFF >/dev/null
ninja -C "$build" -j"${AOTGRAD_JOBS:-2}" tsan_tests driver_tests
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$root/tests/tsan.supp"
export AOTGRAD_CACHE_DIR=off
"$build/tests/tsan_tests"
"$build/tests/driver_tests" --gtest_filter='*Cache*'
echo "tsan.sh: no ThreadSanitizer report"
