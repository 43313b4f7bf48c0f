#!/usr/bin/env bash
# The GPT demo data-parallel under the project's launcher (issue 15): 2 ranks on 127.0.0.1 (Gloo)
# each train aot_module on half of every batch, and the ranks' average loss equals one eager
# process trained on the whole batch, with one compilation; 3 ranks with --vary-seq likewise; a
# batch that the ranks cannot split is a usage error on every rank.
# Usage: gpt_demo_data_parallel_test.sh AOTGRAD GPT_DEMO
set -uo pipefail
aotgrad="$1"
demo="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export AOTGRAD_CACHE_DIR=off AOTGRAD_DIST_TIMEOUT=30
fail() { echo "FAIL: $*"; echo "--- output:"; cat "$tmp/out" "$tmp/err" 2>/dev/null; exit 1; }
launch() { "$aotgrad" launch --nproc="$1" --timeout=150 -- "${@:2}" >"$tmp/out" 2>"$tmp/err"; }

# The final relative difference of the two runs' losses is below 1e-5 (float32 rounding of the
# slices' mean against the whole batch's).
agree() {
  line="$(grep -E '^losses agree: final relative difference ' "$tmp/out")" || fail "$1: losses do not agree"
  diff="$(sed -E 's/^losses agree: final relative difference ([^,]+),.*/\1/' <<<"$line")"
  awk -v d="$diff" 'BEGIN { exit !(d < 1e-5) }' || fail "$1: final relative difference $diff >= 1e-5"
  grep -Eq '; 1 compilation$' "$tmp/out" || fail "$1: aot_module did not compile exactly once"
}

launch 2 "$demo" --steps=5 --sample=0 || fail "2 ranks exited $?"
grep -q '^data parallel: 2 ranks, each trains aot_module on 8 of the 16 windows' "$tmp/out" ||
  fail "no data-parallel line"
# Rank 0 prints: one table, one progress line per mode.
[ "$(grep -c '^aot_module  ' "$tmp/out")" -eq 1 ] || fail "not one aot_module table row"
agree "2 ranks"

launch 3 "$demo" --steps=4 --batch=6 --vary-seq --sample=0 || fail "3 ranks --vary-seq exited $?"
grep -q '^data parallel: 3 ranks, each trains aot_module on 2 of the 6 windows' "$tmp/out" ||
  fail "no data-parallel line for 3 ranks"
agree "3 ranks --vary-seq"

launch 2 "$demo" --steps=2 --batch=5 --sample=0
code=$?
[ "$code" -eq 2 ] || fail "--batch=5 on 2 ranks exited $code, not 2"
grep -q 'gpt_demo: --batch (5) must be a multiple of the 2 data-parallel ranks' "$tmp/err" ||
  fail "no message for a batch the ranks cannot split"
echo "gpt_demo_data_parallel_test: passed"
