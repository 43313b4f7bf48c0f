#!/usr/bin/env bash
# Checkpoint policies on the command line (--recompute=KEY=POLICY,...) and in the text form
# (`# recompute=POLICY` after a statement): what the min-cut partition then saves and recomputes
# (--explain), the same loss and grads with and without them (run --train), and bad specs.
# usage: recompute_test.sh AOTGRAD_BINARY TEST_DATA_DIR
source "$(dirname "$0")/lib.sh" "$@"

cat >"$tmp/two.fx" <<'FX'
def forward(self, x: "f32[4, 8]", w1: "f32[8, 8]", w2: "f32[8, 3]"):
    mm = torch.ops.aten.mm.default(x, w1)
    tanh = torch.ops.aten.tanh.default(mm)
    mm_1 = torch.ops.aten.mm.default(tanh, w2)
    sum_1 = torch.ops.aten.sum.default(mm_1)
    return (sum_1,)
FX
sed -e 's/(x, w1)$/(x, w1)  # recompute=MUST_RECOMPUTE/' -e 's/(mm)$/(mm)  # recompute=must_recompute/' \
  "$tmp/two.fx" >"$tmp/tagged.fx"
check has "$tmp/tagged.fx" "# recompute=MUST_RECOMPUTE"

# No policy: the min-cut saves tanh and recomputes nothing.
"$bin" compile "$tmp/two.fx" --grad=w1,w2 --explain >"$tmp/plain.txt"
check [ $? -eq 0 ]
check has "$tmp/plain.txt" "recomputed: 0 ops"
# The first layer recomputed from the inputs, by flag and by the text's tags: the matmul too.
for how in flag text; do
  if [ $how = flag ]; then
    "$bin" compile "$tmp/two.fx" --grad=w1,w2 --explain --recompute=mm=MUST_RECOMPUTE,aten::tanh=MUST_RECOMPUTE >"$tmp/$how.txt"
  else
    "$bin" compile "$tmp/tagged.fx" --grad=w1,w2 --explain >"$tmp/$how.txt"
  fi
  check [ $? -eq 0 ]
  check has "$tmp/$how.txt" "recomputed: 2 ops"
  check has "$tmp/$how.txt" "aten::mm"
  check has "$tmp/$how.txt" "aten::tanh"
done
# Save the matmuls, recompute the rest.
"$bin" compile "$tmp/two.fx" --grad=w1,w2 --explain --recompute='aten::mm=MUST_SAVE,*=PREFER_RECOMPUTE' >"$tmp/sel.txt"
check [ $? -eq 0 ]
check has "$tmp/sel.txt" "recomputed: 1 ops"
check has "$tmp/sel.txt" "  mm f32[4, 8]"
# The tags print back as written (compile prints the joint graph).
"$bin" compile "$tmp/tagged.fx" --grad=w1,w2 >"$tmp/joint.txt"
check has "$tmp/joint.txt" "torch.ops.aten.tanh.default(mm);  mm = None  # recompute=MUST_RECOMPUTE"

# Training with the policies gives the loss and grads of training without them.
"$bin" run "$tmp/two.fx" --random-inputs --seed=3 --train --grad=w1,w2 --outputs="$tmp/a.safetensors" >/dev/null
check [ $? -eq 0 ]
"$bin" run "$tmp/two.fx" --random-inputs --seed=3 --train --grad=w1,w2 --recompute='*=MUST_RECOMPUTE' \
  --outputs="$tmp/b.safetensors" >/dev/null
check [ $? -eq 0 ]
check cmp -s "$tmp/a.safetensors" "$tmp/b.safetensors"

# Bad input: a clear error, exit 2 for the flag, 1 for the text.
expect_exit 2 "unknown policy" "$bin" compile "$tmp/two.fx" --grad=w1 --recompute=mm=SOMETIMES
check has "$tmp/err" "--recompute: unknown policy 'SOMETIMES'"
expect_exit 2 "key matching nothing" "$bin" compile "$tmp/two.fx" --grad=w1 --recompute=aten::relu=MUST_SAVE
check has "$tmp/err" "--recompute: 'aten::relu' matches no call of the graph"
expect_exit 2 "not KEY=POLICY" "$bin" compile "$tmp/two.fx" --grad=w1 --recompute=mm
check has "$tmp/err" "is not KEY=POLICY"
sed 's/(x, w1)$/(x, w1)  # recompute=LATER/' "$tmp/two.fx" >"$tmp/bad.fx"
expect_exit 1 "unknown policy in the text" "$bin" compile "$tmp/bad.fx" --grad=w1
check has "$tmp/err" "bad.fx:2:5: error: unknown recompute policy 'LATER' of 'mm'"

finish
