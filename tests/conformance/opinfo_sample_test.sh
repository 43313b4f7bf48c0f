#!/usr/bin/env bash
# ctest conformance.opinfo_sample: a fixed sample of the OpInfo conformance sweep (issue 20;
# tools/opinfo_sweep.py, the full sweep is scripts/opinfo_sweep.sh). The ops of opinfo_sample.txt,
# chosen to cover the op families, with the same cases as the full sweep, through `aotgrad run`;
# the test fails when an op listed there as passing fails (a regression) and prints the ops listed
# as failing that now pass (an improvement: update the file with `tools/opinfo_sweep.py expected`).
# Then the harness's own failure handling: the checker flags a regression, a hung aotgrad is killed
# and recorded as a timeout, a crashing one as a crash with its signal.
# usage: opinfo_sample_test.sh AOTGRAD_BINARY SOURCE_DIR WORK_DIR
#   WORK_DIR/cache keeps the exported cases between runs, WORK_DIR/report the sample's report.
set -u
bin="$1"
src="$2"
work="$3"
cache="$work/cache"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# The Python whose torch matches the build's libtorch (ctest sets AOTGRAD_PYTHON), else the venv's.
PY="${AOTGRAD_PYTHON:-$src/.venv/bin/python}"
sweep=("$PY" "$src/tools/opinfo_sweep.py")
expected="$src/tests/conformance/opinfo_sample.txt"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# What the cases rely on in tools/export.py's writer: annotations are taken when a node ran (an
# in-place transpose_ of an input does not change the input's annotation), and a tensor whose
# size-1 dimension has a stride other than 1 is written as its values.
"$PY" - "$src/tools" "$tmp" <<'P' || fail "tools/export.py's writer"
import sys
sys.path.insert(0, sys.argv[1])
import torch
from torch.fx.experimental.proxy_tensor import make_fx
import export
gm = make_fx(lambda x: x.transpose_(0, 1))(torch.zeros(2, 3))
text = export.graph_text(gm, ["x"], export._record_values(gm, [torch.zeros(2, 3)]))
assert 'x: "f32[2, 3][3, 1]cpu"' in text and 'transpose_: "f32[3, 2][1, 3]cpu"' in text, text
t = torch.arange(1.0, 2.0).as_strided((1, 1), (6, 6))
path = sys.argv[2] + "/t.safetensors"
export.write_safetensors(path, {"t": t})
assert torch.equal(export.read_safetensors(path)[0]["t"], t.contiguous()), "round trip"
P

# The sample: no regression against the checked-in expectations.
rm -f "$work/report/report.json"
"${sweep[@]}" run --aotgrad="$bin" --out="$work/report" --cache-dir="$cache" --ops-file="$expected" \
  --expected="$expected" --no-functorch -j2 --timeout=120
[ $? -eq 0 ] || fail "regressions against $expected (see REGRESSION lines above)"
[ -s "$work/report/report.json" ] || { fail "no report"; exit 1; }

# The checker can fail: an op that passes listed as failing is an improvement (exit 0), an op
# that fails listed as passing a regression (exit 1).
"${sweep[@]}" expected "$work/report/report.json" >"$tmp/now.txt"
"${sweep[@]}" check "$work/report/report.json" "$tmp/now.txt" >"$tmp/check0.txt"
[ $? -eq 0 ] || fail "the report does not check against its own expectations"
pass_op="$(grep -m1 '^[^#].* a=pass' "$tmp/now.txt" | cut -d' ' -f1)"
fail_op="$(grep -m1 '^[^#].* a=fail' "$tmp/now.txt" | cut -d' ' -f1)"
if [ -n "$pass_op" ]; then
  sed "s/^\($pass_op \+\)a=pass/\1a=fail/" "$tmp/now.txt" >"$tmp/improved.txt"
  "${sweep[@]}" check "$work/report/report.json" "$tmp/improved.txt" >"$tmp/check1.txt"
  [ $? -eq 0 ] || fail "an improvement made the check fail"
  grep -q "^IMPROVED: $pass_op (a)" "$tmp/check1.txt" || fail "no IMPROVED line for $pass_op"
fi
if [ -n "$fail_op" ]; then
  sed "s/^\($fail_op \+\)a=fail/\1a=pass/" "$tmp/now.txt" >"$tmp/regressed.txt"
  "${sweep[@]}" check "$work/report/report.json" "$tmp/regressed.txt" >"$tmp/check2.txt"
  [ $? -eq 1 ] || fail "a regression did not make the check fail"
  grep -q "^REGRESSION: $fail_op (a)" "$tmp/check2.txt" || fail "no REGRESSION line for $fail_op"
fi

# A hung aotgrad is killed after --timeout and recorded as a timeout; a crashing one (a signal)
# as a crash naming the signal. The cases come from the cache the sample filled.
printf '#!/bin/sh\nexec sleep 60\n' >"$tmp/hang"
printf '#!/bin/sh\nkill -SEGV $$\n' >"$tmp/crash"
chmod +x "$tmp/hang" "$tmp/crash"
for fake in hang crash; do
  "${sweep[@]}" run --aotgrad="$tmp/$fake" --out="$tmp/$fake.out" --cache-dir="$cache" --ops=sin \
    --no-functorch -j2 --timeout=2 >"$tmp/$fake.log" 2>&1
  [ $? -eq 0 ] || fail "the sweep with a $fake aotgrad did not finish"
done
"$PY" - "$tmp/hang.out/report.json" "$tmp/crash.out/report.json" <<'P' || fail "timeout / crash causes"
import json, sys
for path, cause in zip(sys.argv[1:], ("timeout", "crash (signal 11)")):
    ops = json.load(open(path))["ops"]
    causes = {c["aotgrad"]["cause"] for o in ops for c in o["cases"]}
    assert causes == {cause}, (path, causes)
    assert all(o["aotgrad"]["a"] == "fail" for o in ops), path
P

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "opinfo sample: ok"
