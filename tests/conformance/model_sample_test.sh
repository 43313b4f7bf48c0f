#!/usr/bin/env bash
# ctest conformance.model_sample: a fixed sample of the real-model sweep (issue 20;
# tools/model_sweep.py, the full sweep is scripts/model_sweep.sh). The models of model_sample.txt
# are trained one step through tools/export.py and `aotgrad run --train` and compared with eager's
# loss, grads and buffers; the test fails when a model listed there as passing fails (a regression)
# and prints the models listed as failing that now pass (update the file with
# `tools/model_sweep.py expected`). Then the harness's own failure handling: the checker flags a
# regression and not an improvement, a hung aotgrad is killed and recorded as a timeout, a crashing
# one as a crash with its signal, and wrong grads are found (and told from eager's own errors).
# usage: model_sample_test.sh AOTGRAD_BINARY SOURCE_DIR WORK_DIR   (WORK_DIR/report: the report)
set -u
bin="$1"
src="$2"
work="$3"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# The Python whose torch matches the build's libtorch (ctest sets AOTGRAD_PYTHON), else the venv's.
PY="${AOTGRAD_PYTHON:-$src/.venv/bin/python}"
sweep=("$PY" "$src/tools/model_sweep.py")
expected="$src/tests/conformance/model_sample.txt"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
for m in torchvision torchaudio; do
  "$PY" -c "import $m" 2>/dev/null || fail "$m is missing from $PY (scripts/setup.sh installs it)"
done

# The sample: no regression against the checked-in expectations.
rm -f "$work/report/report.json"
"${sweep[@]}" run --aotgrad="$bin" --out="$work/report" --models-file="$expected" \
  --expected="$expected" --timeout=120 --no-functorch
[ $? -eq 0 ] || fail "regressions against $expected (see REGRESSION lines above)"
[ -s "$work/report/report.json" ] || { fail "no report"; exit 1; }
grep -q "^| resnet18 | torchvision |" "$work/report/report.md" || fail "no resnet18 row in report.md"

# The checker can fail: a passing model listed as failing is an improvement (exit 0), a failing
# one listed as passing a regression (exit 1).
"${sweep[@]}" expected "$work/report/report.json" >"$tmp/now.txt"
"${sweep[@]}" check "$work/report/report.json" "$tmp/now.txt" >/dev/null || fail "own expectations"
sed 's/^\(resnet18 \+\)pass/\1fail/' "$tmp/now.txt" >"$tmp/improved.txt"
"${sweep[@]}" check "$work/report/report.json" "$tmp/improved.txt" >"$tmp/check1.txt"
[ $? -eq 0 ] || fail "an improvement made the check fail"
grep -q "^IMPROVED: resnet18 passes" "$tmp/check1.txt" || fail "no IMPROVED line"

# The report goes into BENCHMARKS.md between its model_sweep markers, leaving the OpInfo section as
# it is, and bench/report.py (scripts/bench.sh) keeps both sections when it rewrites the file.
printf '# b\n\n<!-- opinfo_sweep: begin -->\nOPINFO\n<!-- opinfo_sweep: end -->\n' >"$tmp/B.md"
"${sweep[@]}" benchmarks "$work/report/report.json" "$tmp/B.md" --command=CMD
"${sweep[@]}" benchmarks "$work/report/report.json" "$tmp/B.md" --command=CMD
"$PY" - "$src" "$tmp/B.md" <<'P' || fail "the BENCHMARKS.md section"
import importlib.util, sys
text = open(sys.argv[2]).read()
assert text.count("<!-- model_sweep: begin -->") == 1 and "## Real models" in text, text
assert "OPINFO" in text and "`CMD`" in text, text
spec = importlib.util.spec_from_file_location("report", sys.argv[1] + "/bench/report.py")
report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(report)
kept = report._kept_sections(sys.argv[2])
assert "OPINFO" in kept and "## Real models" in kept and kept.index("OPINFO") < kept.index("Real"), kept
P

# A hung aotgrad is killed after --timeout and recorded as a timeout; a crashing one (a signal)
# as a crash naming the signal; one that writes a wrong grad is a wrong grad, which float64 finite
# differences confirm is aotgrad's (they agree with eager's).
printf '#!/bin/sh\nexec sleep 60\n' >"$tmp/hang"
printf '#!/bin/sh\nkill -SEGV $$\n' >"$tmp/crash"
cat >"$tmp/wrong" <<W
#!/bin/sh
# the real aotgrad, then one grad scaled by 2
"$bin" "\$@" || exit \$?
for a in "\$@"; do case "\$a" in --outputs=*) out="\${a#--outputs=}" ;; esac; done
[ -n "\${out:-}" ] || exit 0
exec "$PY" - "$src/tools" "\$out" <<'P'
import sys
sys.path.insert(0, sys.argv[1])
import export
t, meta = export.read_safetensors(sys.argv[2])
t["grad_p_net_layers_0_linear1_weight"] *= 2
export.write_safetensors(sys.argv[2], t, meta)
P
W
chmod +x "$tmp/hang" "$tmp/crash" "$tmp/wrong"
for fake in hang crash wrong; do
  limit=120  # the wrong-grad stand-in runs the real aotgrad and a Python: slow on a loaded machine
  [ "$fake" = hang ] && limit=5
  "${sweep[@]}" run --aotgrad="$tmp/$fake" --out="$tmp/$fake.out" --models=transformer_encoder \
    --timeout=$limit --no-functorch >"$tmp/$fake.log" 2>&1
  [ $? -eq 0 ] || fail "the sweep with a $fake aotgrad did not finish: $(tail -3 "$tmp/$fake.log")"
done
"$PY" - "$tmp" <<'P' || fail "timeout / crash / wrong grad causes"
import json, sys
for fake, cause, words in (("hang", "timeout", "killed after 5 s"), ("crash", "crash (signal 11)", ""),
                           ("wrong", "wrong grad", "finite differences agree with eager's")):
    (row,) = json.load(open("%s/%s.out/report.json" % (sys.argv[1], fake)))["models"]
    assert row["result"] == "fail" and row["cause"] == cause, (fake, row)
    assert words in (row["detail"] or ""), (fake, row["detail"])
P
# A model listed as passing that fails (the crashing stand-in's) is a regression.
printf 'transformer_encoder pass\n' >"$tmp/regressed.txt"
"${sweep[@]}" check "$tmp/crash.out/report.json" "$tmp/regressed.txt" >"$tmp/check2.txt"
[ $? -eq 1 ] || fail "a regression did not make the check fail"
grep -q "^REGRESSION: transformer_encoder: crash (signal 11)" "$tmp/check2.txt" ||
  fail "no REGRESSION line for transformer_encoder: $(cat "$tmp/check2.txt")"
[ "$failures" -eq 0 ] || tail -n 5 "$tmp"/*.log

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "model sample: ok"
