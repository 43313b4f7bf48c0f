#!/usr/bin/env bash
# The tree stays formatted by the repository's .clang-format (clang-format 14, Debian 12's).
# usage: format_test.sh SOURCE_DIR. Exits 77 (skipped) without clang-format 14, whose output
# another version would not reproduce.
set -u
root="$1"
cd "$root" || exit 1
command -v clang-format >/dev/null || { echo "SKIP: no clang-format"; exit 77; }
version=$(clang-format --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
[ "$version" = 14 ] || { echo "SKIP: clang-format $version, not 14"; exit 77; }
bad=0
while IFS= read -r f; do
  if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "not formatted: $f (clang-format -i $f)"
    bad=$((bad + 1))
  fi
done < <(find include src tests bench examples tools -name '*.cc' -o -name '*.h' | sort)
[ "$bad" -eq 0 ] || { echo "FAIL: $bad files differ from clang-format's output"; exit 1; }
echo "all C++ files formatted"
