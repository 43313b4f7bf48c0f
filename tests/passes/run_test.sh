#!/usr/bin/env bash
# A pass test: runs `aotgrad opt FILE.fx` with the options of the file's `# RUN:` line (and
# --stats, whose table follows the printed graph) and checks the output against the file's
# `# CHECK` lines with LLVM's FileCheck (Debian's llvm-14-tools; scripts/setup.sh installs it).
#
# A line `# -----` splits a file into cases, as MLIR's --split-input-file does: each case is its
# own graph, run and checked alone against its own CHECK lines, with its own `# RUN:` line or
# else the file's first. Line numbers in FileCheck's messages are the file's.
#
# usage: run_test.sh AOTGRAD FILECHECK FILE.fx
#        run_test.sh --self-test AOTGRAD FILECHECK   (a wrong CHECK line must fail)
set -euo pipefail

if [ "${1:-}" = "--self-test" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  printf '%s\n' '# RUN: --passes=cse' 'def forward(self, x: "f32[4]"):' \
    '    neg = torch.ops.aten.neg.default(x)' '    return (neg,)' \
    '# CHECK: neg: {{"[^"]*"}} = torch.ops.aten.neg.default(x)' >"$tmp/good.fx"
  sed '/^# CHECK/s/neg.default/abs.default/' "$tmp/good.fx" >"$tmp/bad.fx"
  # Two cases; the second's CHECK is wrong in split_bad.fx, and must fail alone.
  { cat "$tmp/good.fx"; echo '# -----'; sed '/^# RUN/d' "$tmp/good.fx"; } >"$tmp/split_good.fx"
  { cat "$tmp/good.fx"; echo '# -----'; sed '/^# RUN/d' "$tmp/bad.fx"; } >"$tmp/split_bad.fx"
  for good in good split_good; do
    bash "$0" "$2" "$3" "$tmp/$good.fx" >/dev/null || { echo "self-test: a right CHECK failed ($good)" >&2; exit 1; }
  done
  for bad in bad split_bad; do
    if bash "$0" "$2" "$3" "$tmp/$bad.fx" >/dev/null 2>&1; then
      echo "self-test: a wrong CHECK passed ($bad)" >&2
      exit 1
    fi
  done
  echo "self-test: ok"
  exit 0
fi

aotgrad="$1" filecheck="$2" fx="$3"
if [ ! -x "$filecheck" ]; then
  echo "FileCheck not found ('$filecheck'): scripts/setup.sh installs llvm-14-tools" >&2
  exit 1
fi
first_run="$(sed -n 's/^# RUN: //p' "$fx" | head -n 1)"
if [ -z "$first_run" ]; then
  echo "$fx: no '# RUN: OPTIONS' line" >&2
  exit 1
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cases=$(($(grep -c '^# -----$' "$fx" || true) + 1))
for ((c = 0; c < cases; ++c)); do
  # The case's lines where they stand in the file, every other line blank.
  awk -v c="$c" '$0 == "# -----" { k++; print ""; next } { print (k == c ? $0 : "") }' "$fx" \
    >"$tmp/case.fx"
  where="$fx"
  [ "$cases" -gt 1 ] && where="$fx (case $((c + 1)) of $cases)"
  run="$(sed -n 's/^# RUN: //p' "$tmp/case.fx" | head -n 1)"
  [ -n "$run" ] || run="$first_run"
  if ! grep -q '^# CHECK' "$tmp/case.fx"; then
    echo "$where: no CHECK line" >&2
    exit 1
  fi
  # shellcheck disable=SC2086  # the RUN line is a list of options
  if ! "$aotgrad" opt "$tmp/case.fx" $run --stats >"$tmp/out" 2>"$tmp/stats"; then
    echo "$where: aotgrad opt $run failed:" >&2
    cat "$tmp/stats" >&2
    exit 1
  fi
  cat "$tmp/out" "$tmp/stats" >"$tmp/all"
  if ! "$filecheck" "$tmp/case.fx" --input-file="$tmp/all" --dump-input=fail; then
    echo "$where: FileCheck failed" >&2
    exit 1
  fi
done
