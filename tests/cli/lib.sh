# Shared setup of the command-line tests, sourced first: `source "$(dirname "$0")/lib.sh" "$@"`.
# Every test is run by ctest as `bash TEST AOTGRAD_BINARY TEST_DATA_DIR`. It sets
#   bin   the aotgrad binary          data  tests/data          root  the source tree
#   tmp   a scratch directory, removed when the test exits
#   PY    $AOTGRAD_PYTHON, the Python whose torch matches the build's libtorch (ctest sets it),
#         else the project's venv's (scripts/setup.sh)
# and the checks, which count passes and failures; `finish` prints the counts (prefixed by the
# test's name) and exits non-zero when a check failed.
set -u
bin="$1"
data="${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../data" && pwd)}"
root="$(cd "$data/../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failures=0
passes=0
PY="${AOTGRAD_PYTHON:-$root/.venv/bin/python}"

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { passes=$((passes + 1)); }
# check COMMAND...: passes when the command succeeds.
check() { if "$@"; then pass; else fail "$*"; fi; }
# has FILE TEXT / hasnt FILE TEXT: whether FILE contains TEXT (fixed string), saying what was missing.
has() { grep -qF -- "$2" "$1" || { echo "missing in $1: $2"; return 1; }; }
hasnt() { ! grep -qF -- "$2" "$1" || { echo "unexpected in $1: $2"; return 1; }; }
# expect_exit CODE DESCRIPTION COMMAND...: runs COMMAND with stdout in $tmp/out and stderr in
# $tmp/err and checks its exit status.
expect_exit() {
  local want="$1" what="$2"
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -ne "$want" ]; then
    fail "$what: exit $got, expected $want; stderr: $(head -c 300 "$tmp/err")"
  else
    pass
  fi
}

finish() {
  echo "$(basename "$0" .sh): $passes passed, $failures failed"
  [ "$failures" -eq 0 ]
  exit
}
