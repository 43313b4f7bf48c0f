#!/usr/bin/env bash
# `aotgrad compile --grad` and `aotgrad run --train`: dumps, statistics, and grads and buffers of
# the example models against PyTorch eager (the venv's torch) on the same inputs.
# usage: train_test.sh AOTGRAD_BINARY TEST_DATA_DIR
source "$(dirname "$0")/lib.sh" "$@"

# compile --grad: joint.fx, fw.fx, bw.fx that parse and verify; the statistics the issue lists.
"$bin" compile "$data/models/mlp.fx" --grad=all --dump "$tmp/mlp" --stats=json >"$tmp/mlp.json"
check [ $? -eq 0 ]
for f in joint fw bw; do
  "$bin" check "$tmp/mlp/$f.fx" >/dev/null 2>&1
  check [ $? -eq 0 ]
done
check "$PY" - "$tmp/mlp.json" <<'P'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["kind"] == "autograd" and j["partition"] == "min_cut" and j["decomp"] == "core", j
for k in ("joint_nodes", "fw_nodes", "bw_nodes", "saved_bytes", "saved_activation_bytes", "total_us"):
    assert isinstance(j[k], (int, float)) and j[k] > 0, k
assert list(j["phases_us"])[1:] == ["decompose_composites", "functionalize", "joint", "decompose", "partition", "schedule", "dump"], j["phases_us"]
for s in j["saved"]:
    assert set(s) == {"name", "dtype", "shape", "bytes", "is_input"}, s
assert j["saved_bytes"] == sum(s["bytes"] for s in j["saved"])
assert j["saved_activation_bytes"] <= j["saved_bytes"]
P

# §13.20: F.linear(x, w, b).relu() with x not requiring grad saves x and relu's output.
cat >"$tmp/lin.fx" <<'G'
def forward(self, x: "f32[4, 8]", w: "f32[16, 8]", b: "f32[16]"):
    linear = torch.ops.aten.linear.default(x, w, b)
    relu = torch.ops.aten.relu.default(linear)
    return (relu,)
G
# The default partition saves relu itself; min_cut (the default) its alias detach_1, the cut nearest
# the backward, as the seed's fw_module (relu, primals_1, detach_1).
"$bin" compile "$tmp/lin.fx" --grad=w,b --partition=default --stats=json >"$tmp/lin.json"
check "$PY" -c "import json; j=json.load(open('$tmp/lin.json')); assert j['partition'] == 'default'; assert [s['name'] for s in j['saved']] == ['primals_1', 'relu'], j['saved']; assert j['saved'][0]['is_input'] and not j['saved'][1]['is_input']"
"$bin" compile "$tmp/lin.fx" --grad=w,b --stats=json >"$tmp/lin_mc.json"
check "$PY" -c "import json; j=json.load(open('$tmp/lin_mc.json')); assert [s['name'] for s in j['saved']] == ['primals_1', 'detach_1'], j['saved']; assert j['saved_activation_bytes'] == 256, j"

# compile --explain: why each value is saved, what is recomputed, what may not be and why.
"$bin" compile "$tmp/lin.fx" --grad=w,b --explain >"$tmp/explain.txt"
check [ $? -eq 0 ]
check grep -qx "  detach_1 f32\[4, 16\]\[16, 1\]cpu 256 bytes: min cut" "$tmp/explain.txt"
check grep -qx "  relu aten::relu: materialized in backward" "$tmp/explain.txt"
check grep -qx "  addmm aten::addmm: not in recomputable allowlist" "$tmp/explain.txt"
"$bin" compile "$tmp/lin.fx" --grad=w,b --explain --stats=json >"$tmp/explain.json"
check "$PY" -c "import json; e=json.load(open('$tmp/explain.json'))['explain']; assert [s['why'] for s in e['saved']] == ['primal input', 'min cut'], e; assert {'name': 'relu', 'op': 'aten::relu', 'reason': 'materialized in backward'} in e['banned'], e"
"$bin" compile "$tmp/lin.fx" --grad=w,b --explain --partition=default 2>"$tmp/err"
check [ $? -eq 2 ]
check grep -q "explain" "$tmp/err"

# Bad pipeline options are usage errors naming the option.
"$bin" compile "$tmp/lin.fx" --grad=all --decomp=core,nosuch 2>"$tmp/err"
check [ $? -eq 2 ]
check grep -q "decomp.*unknown op 'nosuch'" "$tmp/err"
"$bin" compile "$tmp/lin.fx" --grad=all --partition=magic 2>"$tmp/err"
check [ $? -eq 2 ]
"$bin" run "$tmp/lin.fx" --random-inputs --no-compile --decomp=none 2>/dev/null
check [ $? -eq 2 ]
for bad in "--memory-budget=1.5" "--memory-budget=abc" "--solver=magic" "--partition=default --memory-budget=0.5"; do
  # shellcheck disable=SC2086
  "$bin" compile "$tmp/lin.fx" --grad=all $bad 2>"$tmp/err"
  check [ $? -eq 2 ]
  check grep -q "memory-budget\|solver" "$tmp/err"
done
"$bin" run "$tmp/lin.fx" --random-inputs --no-compile --memory-budget=0 2>/dev/null
check [ $? -eq 2 ]

# run --train: forward + backward of each example model; grads and mutated buffers equal eager.
# Buffers do not require grad (as in PyTorch, where BatchNorm's running stats cannot).
grads() { grep -m1 'def forward' "$data/models/$1.fx" | grep -o '[a-z_0-9]*: "f[0-9]*\[' | cut -d: -f1 | grep -v 'running_\|num_batches' | paste -sd, -; }
# min_cut:0 and min_cut:0.5 are the min-cut partition under an activation memory budget.
for run in mlp:min_cut gpt_block:min_cut cnn_bn:min_cut mlp:default gpt_block:default cnn_bn:default \
  gpt_block:min_cut:0.5 cnn_bn:min_cut:0; do
  m=${run%%:*}
  part=${run#*:}
  budget=()
  case "$part" in min_cut:*) budget=(--memory-budget="${part#min_cut:}" --solver=ilp); part=min_cut ;; esac
  "$bin" run "$data/models/$m.fx" --inputs "$data/models/$m.inputs.safetensors" --train --grad="$(grads $m)" \
    --partition="$part" "${budget[@]}" --outputs "$tmp/$m.out.safetensors" --stats=json >"$tmp/$m.stats.json"
  check [ $? -eq 0 ]
  check "$PY" -c "import json; j=json.load(open('$tmp/$m.stats.json')); assert j['bw_us'] > 0 and j['peak_bytes'] > 0, j"
  check "$PY" - "$root" "$m" "$data/models/$m.inputs.safetensors" "$tmp/$m.out.safetensors" <<'P'
import json, struct, sys
import torch
root, name, inputs_path, out_path = sys.argv[1:5]
sys.path.insert(0, root + "/tools")
import export  # the exporter's model definitions

DT = {"F32": torch.float32, "F64": torch.float64, "I64": torch.int64, "BOOL": torch.bool}
def load(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    out = {}
    for k, v in h.items():
        if k == "__metadata__": continue
        s, e = v["data_offsets"]
        raw = bytearray(b[8 + n + s:8 + n + e])
        t = torch.frombuffer(raw, dtype=DT[v["dtype"]]) if raw else torch.empty(0, dtype=DT[v["dtype"]])
        out[k] = t.reshape(v["shape"]).clone()
    return out

inputs, got = load(inputs_path), load(out_path)
model, example = export.MODELS[name][1]()
model.train()
with torch.no_grad():
    for pname, p in list(model.named_parameters()) + list(model.named_buffers()):
        p.copy_(inputs["p_" + pname.replace(".", "_")])
args = {k: inputs[k] for k in example}
for k, v in args.items():
    if v.is_floating_point(): v.requires_grad_(True)
loss = model(**args)
loss.backward()
assert torch.allclose(got["out_0"], loss.detach(), rtol=1e-5, atol=1e-6), (got["out_0"], loss)
checked = 0
for pname, p in model.named_parameters():
    g = got["grad_p_" + pname.replace(".", "_")]
    assert torch.allclose(g, p.grad, rtol=1e-4, atol=1e-5), (pname, (g - p.grad).abs().max())
    checked += 1
for k, v in args.items():
    if v.is_floating_point():
        assert torch.allclose(got["grad_" + k], v.grad, rtol=1e-4, atol=1e-5), k
for bname, buf in model.named_buffers():
    key = "p_" + bname.replace(".", "_")
    if key in got:  # mutated buffers (BatchNorm running stats, num_batches_tracked)
        assert torch.allclose(got[key].to(buf.dtype), buf), (bname, got[key], buf)
        checked += 1
assert checked > 0
P
done

finish
