#!/usr/bin/env bash
# The GPT demo (examples/gpt_demo) for a few steps: its progress lines and table, eager and
# aot_module losses that agree, one compilation, a text sample, --vary-seq, --memory-budget=auto,
# --zero-grad, --checkpoint-blocks; bad flags and a missing text file.
# Usage: gpt_demo_test.sh GPT_DEMO
set -uo pipefail
demo="$1"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export AOTGRAD_CACHE_DIR="$tmp/cache"  # compile here, not into the user's cache
fail() { echo "FAIL: $*"; echo "--- output:"; cat "$tmp/out" "$tmp/err" 2>/dev/null; exit 1; }

"$demo" --steps=5 --sample=40 >"$tmp/out" 2>"$tmp/err" || fail "demo exited $?"
number='[0-9]+\.[0-9]+'
for mode in eager aot_module; do
  grep -Eq "^$mode +\[#{30}\] 5/5 +loss $number  median $number ms/step\$" "$tmp/out" ||
    fail "no finished progress line for $mode"
  grep -Eq "^$mode +$number +$number ms +$number ms +$number MiB\$" "$tmp/out" ||
    fail "no table row for $mode"
done
grep -Eq '^mode +final loss +median step +first step +peak step memory$' "$tmp/out" ||
  fail "no table header"
grep -Eq '; 1 compilation$' "$tmp/out" || fail "aot_module did not compile exactly once"
line="$(grep -E '^losses agree: final relative difference ' "$tmp/out")" || fail "losses do not agree"
# The two runs compute the same function of the same weights and batches: after 5 float32 steps
# their losses agree far closer than the demo's own tolerance.
diff="$(sed -E 's/^losses agree: final relative difference ([^,]+),.*/\1/' <<<"$line")"
awk -v d="$diff" 'BEGIN { exit !(d < 1e-4) }' || fail "final relative difference $diff >= 1e-4"
# Both final losses from the table, and they are below the untrained model's ln(vocabulary).
eager_loss="$(awk '$1 == "eager" && $4 == "ms" { print $2 }' "$tmp/out" | tail -1)"
aot_loss="$(awk '$1 == "aot_module" && $4 == "ms" { print $2 }' "$tmp/out" | tail -1)"
vocab="$(sed -nE 's/.*vocabulary ([0-9]+),.*/\1/p' "$tmp/out")"
[[ -n "$eager_loss" && -n "$aot_loss" && -n "$vocab" ]] || fail "table or header unreadable"
awk -v l="$aot_loss" -v v="$vocab" 'BEGIN { exit !(l > 0 && l < log(v)) }' ||
  fail "aot_module loss $aot_loss is not below ln($vocab)"
grep -q '^sample from the aot_module-trained weights:$' "$tmp/out" || fail "no sample"

# --vary-seq: windows of random lengths train through one compilation (the sequence length a
# size symbol) to eager's losses.
"$demo" --steps=6 --vary-seq --sample=0 >"$tmp/out" 2>"$tmp/err" || fail "--vary-seq exited $?"
grep -q '(random lengths from 16)' "$tmp/out" || fail "--vary-seq not in the header"
grep -Eq '; 1 compilation$' "$tmp/out" || fail "--vary-seq compiled more than once"
grep -Eq '^losses agree: ' "$tmp/out" || fail "--vary-seq losses do not agree"

# --memory-budget=auto: the lowest predicted peak within 3% estimated extra step time; the losses
# still agree, and its peak is below eager's (12.5 MiB against 23.1 MiB at the default sizes).
"$demo" --steps=3 --sample=0 --memory-budget=auto >"$tmp/out" 2>"$tmp/err" || fail "auto exited $?"
grep -q 'activation memory budget auto (max slowdown 0.1)' "$tmp/out" || fail "auto not in the header"
grep -Eq '^losses agree: ' "$tmp/out" || fail "auto losses do not agree"
ratio="$(sed -nE 's/.*peak step memory ([0-9.]+)x;.*/\1/p' "$tmp/out")"
awk -v r="$ratio" 'BEGIN { exit !(r != "" && r < 0.8) }' || fail "auto's peak ratio '$ratio' is not below 0.8"
grep -q '^zero_grad: each .grad dropped before every step$' "$tmp/out" ||
  fail "the default zero_grad convention is not libtorch 2's (dropped) in the header"
# --zero-grad=in-place: each .grad kept and zeroed (zero_grad(false)); aot_module plans for it and
# its peak is below eager's too.
"$demo" --steps=3 --sample=0 --memory-budget=auto --zero-grad=in-place >"$tmp/out" 2>"$tmp/err" ||
  fail "--zero-grad=in-place exited $?"
grep -q '^zero_grad: each .grad kept and zeroed in place before every step$' "$tmp/out" ||
  fail "--zero-grad=in-place not in the header"
grep -Eq '^losses agree: ' "$tmp/out" || fail "--zero-grad=in-place losses do not agree"
ratio="$(sed -nE 's/.*peak step memory ([0-9.]+)x;.*/\1/p' "$tmp/out")"
awk -v r="$ratio" 'BEGIN { exit !(r != "" && r < 0.8) }' ||
  fail "--zero-grad=in-place's peak ratio '$ratio' is not below 0.8"
"$demo" --zero-grad=zero >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 2 ]] || fail "--zero-grad=zero did not exit 2"
grep -q -- "--zero-grad takes none or in-place, not 'zero'" "$tmp/err" || fail "--zero-grad message"
"$demo" --max-slowdown=0.1 >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 2 ]] || fail "--max-slowdown without auto did not exit 2"
grep -q -- "--max-slowdown applies to --memory-budget=auto" "$tmp/err" || fail "--max-slowdown message"

# --checkpoint-blocks: eager with every block checkpointed by hand (the baseline a libtorch user
# writes) computes the same losses, says so in the header, and peaks below aot_module's budget-1
# cut (10.2 MiB against 23.1 MiB at the default sizes).
"$demo" --steps=3 --sample=0 --checkpoint-blocks >"$tmp/out" 2>"$tmp/err" || fail "--checkpoint-blocks exited $?"
grep -q '^eager: every block checkpointed by hand' "$tmp/out" || fail "--checkpoint-blocks not in the header"
grep -Eq '^losses agree: ' "$tmp/out" || fail "--checkpoint-blocks losses do not agree"
ratio="$(sed -nE 's/.*peak step memory ([0-9.]+)x;.*/\1/p' "$tmp/out")"
awk -v r="$ratio" 'BEGIN { exit !(r != "" && r > 1.5) }' ||
  fail "aot_module / checkpointed eager peak ratio '$ratio' is not above 1.5"

# Bad usage exits 2 naming the flag; an unreadable text exits 1 naming the file.
"$demo" --steps=many >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 2 ]] || fail "--steps=many did not exit 2"
grep -q "gpt_demo: --steps expects an integer, got 'many'" "$tmp/err" || fail "--steps message"
"$demo" --d=30 --heads=4 >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 2 ]] || fail "--d=30 --heads=4 did not exit 2"
grep -q "must be a multiple of --heads" "$tmp/err" || fail "--heads message"
"$demo" --bogus=1 >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 2 ]] || fail "--bogus did not exit 2"
"$demo" --steps=1 --text="$tmp/missing.txt" >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 1 ]] || fail "a missing text did not exit 1"
grep -q "missing.txt: cannot read the training text" "$tmp/err" || fail "missing-text message"
"$demo" --help >"$tmp/out" 2>"$tmp/err" || fail "--help exited $?"
grep -q '^usage: gpt_demo' "$tmp/out" || fail "--help text"
echo "OK"
