#!/usr/bin/env bash
# `aotgrad opt`: passes in order, --print-after-all, --stats, and bad pass lists.
# usage: opt_test.sh AOTGRAD_BINARY TEST_DATA_DIR
source "$(dirname "$0")/lib.sh" "$@"

cat >"$tmp/g.fx" <<'G'
def forward(self, x: "f32[4, 8]", w: "f32[8]", b: "f32[8]"):
    layer_norm = torch.ops.aten.layer_norm.default(x, [8], w, b)
    mul = torch.ops.aten.mul.Tensor(layer_norm, 1)
    relu = torch.ops.aten.relu.default(x)
    relu_1 = torch.ops.aten.relu.default(x)
    add = torch.ops.aten.add.Tensor(relu, relu_1)
    unused = torch.ops.aten.sin.default(x)
    return (mul, add)
G
"$bin" opt "$tmp/g.fx" --passes=decomp:core,cse,dce,simplify --stats >"$tmp/out.fx" 2>"$tmp/stats"
check [ $? -eq 0 ]
check grep -q "native_layer_norm = torch.ops.aten.native_layer_norm.default(x, \[8\], w, b, 1e-05)" "$tmp/out.fx"
check grep -q "add: .* = torch.ops.aten.add.Tensor(relu, relu)" "$tmp/out.fx"  # cse merged relu_1
check [ "$(grep -c "sin\|relu_1\|mul" "$tmp/out.fx")" -eq 0 ]          # dce, simplify
check grep -q "^cse .* 1 " "$tmp/stats"
"$bin" check "$tmp/out.fx" >/dev/null
check [ $? -eq 0 ]
# A decomposition spec may hold commas; --print-after-all writes each stage to standard error.
"$bin" opt "$tmp/g.fx" --passes=decomp:core,-aten::layer_norm,cse --print-after-all >"$tmp/out2.fx" 2>"$tmp/all"
check [ $? -eq 0 ]
check grep -q "layer_norm: .* = torch.ops.aten.layer_norm.default" "$tmp/out2.fx"
check grep -q "^# after cse" "$tmp/all"
# A pass name after a decomp: item is a pass, aliases included (fold = constant_fold).
"$bin" opt "$tmp/g.fx" --passes=decomp:core,fold,dce --stats >/dev/null 2>"$tmp/stats2"
check [ $? -eq 0 ]
check grep -q "^constant_fold\|^fold" "$tmp/stats2"
# Bad lists are usage errors naming the pass.
"$bin" opt "$tmp/g.fx" --passes=cse,nosuch 2>"$tmp/err"
check [ $? -eq 2 ]
check grep -q "nosuch" "$tmp/err"
"$bin" opt "$tmp/g.fx" 2>/dev/null
check [ $? -eq 2 ]
"$bin" opt "$tmp/g.fx" --passes=decomp:core,-aten::nosuch 2>"$tmp/err"
check [ $? -eq 2 ]
check grep -q "unknown op" "$tmp/err"
# partition needs joint before it, and is the last; joint comes once.
"$bin" opt "$tmp/g.fx" --passes=cse,partition 2>"$tmp/err"
check [ $? -eq 2 ]
check grep -q "run joint before it" "$tmp/err"
"$bin" opt "$tmp/g.fx" --passes=joint,partition,dce 2>"$tmp/err"
check [ $? -eq 2 ]
check grep -q "must be the last" "$tmp/err"
"$bin" opt "$tmp/g.fx" --passes=joint,cse,joint 2>"$tmp/err"
check [ $? -eq 2 ]
check grep -q "a second joint" "$tmp/err"
# A decomposition spec ends at joint.
"$bin" opt "$tmp/g.fx" --passes=decomp:core,joint --stats >"$tmp/joint.fx" 2>"$tmp/stats3"
check [ $? -eq 0 ]
check grep -q "def forward(self, primals, tangents)" "$tmp/joint.fx"
check grep -q "^decomp:core " "$tmp/stats3"

finish
