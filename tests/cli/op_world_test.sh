#!/usr/bin/env bash
# The op world on the command line: a graph of ops the registry does not declare (cumsum, logsumexp,
# flip, softplus; group_norm, a composite op) is checked, compiled and trained by `aotgrad`, which
# loads libtorch only for them; the loss and grads equal PyTorch's eager autograd.
# usage: op_world_test.sh AOTGRAD_BINARY TEST_DATA_DIR
set -u
bin="$1"
data="$2"
root="$(cd "$data/../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failures=0
passes=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
check() { if "$@"; then passes=$((passes + 1)); else fail "$*"; fi; }
# The Python whose torch matches the build's libtorch (ctest sets AOTGRAD_PYTHON), else the venv's,
# as in lib.sh.
PY="${AOTGRAD_PYTHON:-$root/.venv/bin/python}"

cat >"$tmp/g.fx" <<'G'
def forward(self, x: "f32[2, 6, 5]", w: "f32[6]", b: "f32[6]"):
    group_norm = torch.ops.aten.group_norm.default(x, 3, w, b)
    cumsum = torch.ops.aten.cumsum.default(group_norm, 2)
    flip = torch.ops.aten.flip.default(cumsum, [1])
    softplus = torch.ops.aten.softplus.default(flip, 2.0)
    logsumexp = torch.ops.aten.logsumexp.default(softplus, [2])
    sum_1 = torch.ops.aten.sum.default(logsumexp)
    return (sum_1,)
G

# check prints the canonical form (annotations from libtorch's kernels), a fixed point.
"$bin" check "$tmp/g.fx" >"$tmp/once.fx" 2>"$tmp/err"
check [ $? -eq 0 ]
"$bin" check "$tmp/once.fx" >"$tmp/twice.fx" 2>>"$tmp/err"
check cmp -s "$tmp/once.fx" "$tmp/twice.fx"
check grep -q 'logsumexp: "f32\[2, 6\]\[6, 1\]cpu" = torch.ops.aten.logsumexp.default' "$tmp/once.fx"
[ -s "$tmp/err" ] && cat "$tmp/err"

# compile: the composite op is decomposed through its kernel, the backward traced, the partitioner
# bans what it cannot classify.
"$bin" compile "$tmp/g.fx" --grad=all --explain --dump="$tmp/dump" >"$tmp/explain.txt" 2>"$tmp/err"
check [ $? -eq 0 ]
check grep -q 'unknown op class' "$tmp/explain.txt"
check grep -q 'torch.ops.aten.native_group_norm.default' "$tmp/dump/fw.fx"
check grep -q 'torch.ops.aten.native_group_norm_backward.default' "$tmp/dump/bw.fx"
"$bin" compile "$tmp/g.fx" --grad=all --stats=json >"$tmp/stats.json" 2>"$tmp/err"
check "$PY" - "$tmp/stats.json" <<'P'
import json, sys
j = json.load(open(sys.argv[1]))["op_world"]
assert j["nodes_provided"] > 0 and j["nodes_declared"] > 0, j
assert j["traced_derivatives"] >= 4 and j["traced_decompositions"] >= 1, j
assert j["meta_kernel"] > 0 and j["meta_cpu_kernel"] > 0, j  # flip: no Meta kernel in libtorch (torch._refs's is Python)
P

# An op that neither the registry nor libtorch knows, and a schema aotgrad cannot represent.
sed 's/aten.flip.default/aten.nosuchop.default/' "$tmp/g.fx" >"$tmp/unknown.fx"
"$bin" check "$tmp/unknown.fx" >/dev/null 2>"$tmp/err"
check [ $? -eq 1 ]
check grep -q "unknown.fx:4:.*unknown op 'aten::nosuchop.default' (libtorch's dispatcher has none either)" "$tmp/err"

# run --train: loss and grads equal PyTorch eager autograd on the same inputs.
check "$PY" - "$root/tools" "$tmp/in.safetensors" <<'P'
import sys
sys.path.insert(0, sys.argv[1])
import torch
from export import write_safetensors
torch.manual_seed(0)
write_safetensors(sys.argv[2], {"x": torch.randn(2, 6, 5), "w": torch.randn(6), "b": torch.randn(6)})
P
"$bin" run "$tmp/g.fx" --inputs="$tmp/in.safetensors" --train --grad=all \
  --outputs="$tmp/out.safetensors" 2>"$tmp/err"
check [ $? -eq 0 ]
[ -s "$tmp/err" ] && cat "$tmp/err"
check "$PY" - "$root/tools" "$tmp/in.safetensors" "$tmp/out.safetensors" <<'P'
import sys
sys.path.insert(0, sys.argv[1])
import torch
import torch.nn.functional as F
from export import read_safetensors
inp = {k: v.clone().requires_grad_() for k, v in read_safetensors(sys.argv[2])[0].items()}
out = read_safetensors(sys.argv[3])[0]
y = F.group_norm(inp["x"], 3, inp["w"], inp["b"]).cumsum(2).flip([1])
loss = F.softplus(y, 2.0).logsumexp(2).sum()
loss.backward()
assert torch.allclose(out["out_0"], loss.detach(), rtol=1e-5, atol=1e-5), (out["out_0"], loss)
for k in ("x", "w", "b"):
    assert torch.allclose(out["grad_" + k], inp[k].grad, rtol=1e-4, atol=1e-5), k
P
# A tensor constant is part of the model: --random-inputs does not make one up.
cat >"$tmp/c.fx" <<'G'
def forward(self, x: "f32[3][1]cpu"):
    _tensor_constant0: "i64[2][1]cpu" = self._tensor_constant0
    index = torch.ops.aten.index.Tensor(x, [_tensor_constant0])
    return (index,)
G
"$bin" run "$tmp/c.fx" --random-inputs 2>"$tmp/err"
check [ $? -ne 0 ]
check grep -q "no value for the tensor constant '_tensor_constant0'" "$tmp/err"
echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
