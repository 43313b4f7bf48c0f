#!/usr/bin/env bash
# Dynamic shapes (issue 16): tools/export.py --dynamic makes the symbolic graphs of
# tests/data/models (*_dyn.fx), and one symbolic graph trains with `aotgrad run --train` at several
# batch sizes and sequence lengths to PyTorch eager's loss, grads and running statistics (under the
# core and full decompositions and a memory budget); inputs whose sizes contradict each other and
# a symbol no input binds are errors.
# usage: dynamic_test.sh AOTGRAD_BINARY TEST_DATA_DIR
source "$(dirname "$0")/lib.sh" "$@"
exporter="$root/tools/export.py"
checker="$root/tests/cli/dynamic_check.py"

# The shipped symbolic graphs are what the exporter makes (with the venv's PyTorch 2.11).
"$PY" "$exporter" gpt_block_long "$tmp/gpt" --dynamic=idx.0,idx.1,targets.0,targets.1 >/dev/null
check cmp "$tmp/gpt.fx" "$data/models/gpt_block_dyn.fx"
"$PY" "$exporter" cnn_bn "$tmp/cnn" --dynamic=x.0,target.0 >/dev/null
check cmp "$tmp/cnn.fx" "$data/models/cnn_bn_dyn.fx"
check has "$tmp/gpt.fx" "# hints: s0=2, s1=8"
check has "$tmp/gpt.fx" 'idx: "i64[s0, s1][s1, 1]cpu"'
check has "$tmp/gpt.fx" 'mul_1: "Sym(s0*s1)" = sym_size_int_1 * sym_size_int'

# Training at batch x sequence 1x5, 3x16, 8x33, 17x5 (the CNN at batch 1, 3, 8, 17) against eager.
gpt_sizes=1x5,3x16,8x33,17x5
cnn_sizes=1,3,8,17
for opts in "" "--decomp=full" "--memory-budget=0.3"; do
  "$PY" "$checker" "$bin" gpt_block_long "$tmp/gpt.fx" "$tmp/gpt.inputs.safetensors" "$tmp" \
    "$gpt_sizes" $opts >"$tmp/check.out" 2>&1
  check [ $? -eq 0 ] || cat "$tmp/check.out"
  check has "$tmp/check.out" "largest difference over 4 sizes"
  "$PY" "$checker" "$bin" cnn_bn "$tmp/cnn.fx" "$tmp/cnn.inputs.safetensors" "$tmp" \
    "$cnn_sizes" $opts >"$tmp/check.out" 2>&1
  check [ $? -eq 0 ] || cat "$tmp/check.out"
done

# Contradicting sizes: idx and targets share s0 and s1.
"$PY" -c "
import sys; sys.path.insert(0, '$root/tools')
import export as E, torch
t, meta = E.read_safetensors('$tmp/gpt.inputs.safetensors')
t['idx'] = torch.zeros(2, 8, dtype=torch.long); t['targets'] = torch.zeros(3, 8, dtype=torch.long)
E.write_safetensors('$tmp/bad.safetensors', t)
"
expect_exit 1 "contradicting sizes" "$bin" run "$tmp/gpt.fx" --inputs="$tmp/bad.safetensors" --train
check has "$tmp/err" "inputs disagree on size symbol s0: input 'targets' dimension 0 is 3, but s0 = 2 from input 'idx' dimension 0"

# A symbol no input binds is an error before anything runs.
cat >"$tmp/unbound.fx" <<'FX'
def forward(self, x: "f32[2*s0 + 1]"):
    neg = torch.ops.aten.neg.default(x)
    return (neg,)
FX
expect_exit 1 "unbound symbol" "$bin" run "$tmp/unbound.fx" --random-inputs
check has "$tmp/err" "size symbol s0 (in input 'x', 2*s0 + 1) is bound by no input"

# The exporter's --dynamic errors.
expect_exit 1 "unknown input" "$PY" "$exporter" cnn_bn "$tmp/e" --dynamic=y.0
check has "$tmp/err" "--dynamic 'y.0': expected INPUT.DIM with an input among x, target"
# compile --stats=json lists the symbols (hint, the input dimension that binds each) and the
# guards; --hint overrides the text's hints.
"$bin" compile "$data/models/gpt_block_dyn.fx" --grad=all --stats=json >"$tmp/stats.json"
check has "$tmp/stats.json" '"symbols":[{"name":"s0","hint":2,"source":"idx.size()[0]"},{"name":"s1","hint":8,"source":"idx.size()[1]"}]'
check has "$tmp/stats.json" "\"guards\":[\"2 <= s0\",\"2 <= s1\",\"L['targets'].size()[0] == s0\",\"L['targets'].size()[1] == s1\"]"
"$bin" compile "$data/models/gpt_block_dyn.fx" --stats=json --hint=s0=8,s1=32 >"$tmp/stats.json"
check has "$tmp/stats.json" '{"name":"s0","hint":8,"source":"idx.size()[0]"},{"name":"s1","hint":32,'
expect_exit 2 "malformed hint" "$bin" compile "$data/models/gpt_block_dyn.fx" --hint=s0
check has "$tmp/err" "--hint:"

# A graph traced for even batches (s0 is half the batch): the symbol's source divides, its guard
# says so, and run --random-inputs and --train bind it from the input's size.
cat >"$tmp/half.fx" <<'FX'
# hints: s0=3
def forward(self, x: "f32[2*s0, 3]", y: "f32[s0, 6]"):
    sym_size_int: "Sym(2*s0)" = torch.ops.aten.sym_size.int(x, 0)
    floordiv: "Sym(s0)" = sym_size_int // 2
    view: "f32[s0, 6]" = torch.ops.aten.view.default(x, [floordiv, 6])
    mul: "f32[s0, 6]" = torch.ops.aten.mul.Tensor(view, y)
    sum_1: "f32[]" = torch.ops.aten.sum.default(mul)
    return (sum_1,)
FX
"$bin" compile "$tmp/half.fx" --grad=all --stats=json >"$tmp/stats.json"
check has "$tmp/stats.json" '"symbols":[{"name":"s0","hint":3,"source":"y.size()[0]"}]'
check has "$tmp/stats.json" "\"guards\":[\"2 <= s0\",\"L['x'].size()[0] == 2*s0\"]"
sed 's/, y: "f32\[s0, 6\]"//; s/mul.Tensor(view, y)/mul.Tensor(view, view)/' "$tmp/half.fx" >"$tmp/half1.fx"
"$bin" compile "$tmp/half1.fx" --grad=all --stats=json >"$tmp/stats.json"
check has "$tmp/stats.json" '"symbols":[{"name":"s0","hint":3,"source":"x.size()[0] // 2"}]'
check has "$tmp/stats.json" "\"guards\":[\"2 <= s0\",\"Eq(Mod(L['x'].size()[0], 2), 0)\"]"
"$bin" run "$tmp/half1.fx" --random-inputs --train >"$tmp/half.out"
check [ $? -eq 0 ]

# run --random-inputs gives a SymInt input its symbol's hint and the tensors sizes at the hints.
"$bin" run "$data/text/symbolic.fx" --random-inputs --hint=s0=3,s1=5 --outputs="$tmp/sym.safetensors"
check [ $? -eq 0 ]
"$PY" -c "
import sys; sys.path.insert(0, '$root/tools')
import export as E
t, meta = E.read_safetensors('$tmp/sym.safetensors')
assert tuple(t['out_0'].shape) == (3, 8) and tuple(t['out_1'].shape) == (6, 5), {k: v.shape for k, v in t.items()}
"
check [ $? -eq 0 ]
# A graph exported with PyTorch's make_fx(tracing_mode="symbolic") (every input dimension a
# symbol, duck-sized) round-trips: it parses with its hints and trains at other batch sizes to
# eager's loss and grads.
"$PY" -c "
import sys; sys.path.insert(0, '$root/tools')
import export as E, torch
torch.manual_seed(0)
m = E.MLP()
E.export(m, {'x': torch.randn(6, 8), 'y': torch.randn(6, 4)}, '$tmp/mlp_sym', tracing_mode='symbolic')
"
check [ $? -eq 0 ]
check has "$tmp/mlp_sym.fx" "# hints: s0=32, s1=8, s2=4, s3=6"
check has "$tmp/mlp_sym.fx" 'x: "f32[s3, s1][s1, 1]cpu", y: "f32[s3, s2][s2, 1]cpu"'
"$PY" "$checker" "$bin" mlp "$tmp/mlp_sym.fx" "$tmp/mlp_sym.inputs.safetensors" "$tmp" 6,3,9,17 \
  >"$tmp/check.out" 2>&1
check [ $? -eq 0 ] || cat "$tmp/check.out"
check has "$tmp/check.out" "largest difference over 4 sizes"
expect_exit 1 "symbolic with --dynamic" "$PY" "$exporter" mlp "$tmp/e" --tracing-mode=symbolic --dynamic=x.0
check has "$tmp/err" "does not go with --tracing-mode=symbolic"
finish
