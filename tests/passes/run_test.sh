#!/usr/bin/env bash
# A pass test: runs `aotgrad opt FILE.fx` with the options of the file's `# RUN:` line (and
# --stats, whose table follows the printed graph) and checks the output against the file's
# `# CHECK` lines with LLVM's FileCheck (Debian's llvm-14-tools; scripts/setup.sh installs it).
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
  bash "$0" "$2" "$3" "$tmp/good.fx" >/dev/null || { echo "self-test: a right CHECK failed" >&2; exit 1; }
  if bash "$0" "$2" "$3" "$tmp/bad.fx" >/dev/null 2>&1; then
    echo "self-test: a wrong CHECK passed" >&2
    exit 1
  fi
  echo "self-test: ok"
  exit 0
fi

aotgrad="$1" filecheck="$2" fx="$3"
if [ ! -x "$filecheck" ]; then
  echo "FileCheck not found ('$filecheck'): scripts/setup.sh installs llvm-14-tools" >&2
  exit 1
fi
run="$(sed -n 's/^# RUN: //p' "$fx" | head -n 1)"
if [ -z "$run" ]; then
  echo "$fx: no '# RUN: OPTIONS' line" >&2
  exit 1
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# shellcheck disable=SC2086  # the RUN line is a list of options
if ! "$aotgrad" opt "$fx" $run --stats >"$tmp/out" 2>"$tmp/stats"; then
  echo "$fx: aotgrad opt $run failed:" >&2
  cat "$tmp/stats" >&2
  exit 1
fi
cat "$tmp/out" "$tmp/stats" >"$tmp/all"
"$filecheck" "$fx" --input-file="$tmp/all" --dump-input=fail
