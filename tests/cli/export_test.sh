#!/usr/bin/env bash
# tools/export.py: its command line and errors, and torchvision's resnet18 and a GPT-style model
# exported from PyTorch, trained one step by `aotgrad run --train` (default min-cut partition), with
# the loss, every parameter grad and the written-back buffers compared with PyTorch eager autograd.
# usage: export_test.sh AOTGRAD_BINARY TEST_DATA_DIR
source "$(dirname "$0")/lib.sh" "$@"
exporter="$root/tools/export.py"
# torch and torchvision are the venv's (scripts/setup.sh), PyTorch 2.11's wheels.
if ! "$PY" -c "import torchvision" 2>"$tmp/tv.err"; then
  echo "FAIL: torchvision is missing from $PY (scripts/setup.sh installs it): $(tail -1 "$tmp/tv.err")"
  exit 1
fi

# The command line: --help lists the models; an unknown model is a usage error; a prefix that
# cannot be written is an error naming it, and leaves no file behind.
"$PY" "$exporter" --help >"$tmp/help.txt"
check [ $? -eq 0 ]
for m in mlp gpt_block cnn_bn gpt resnet18; do check grep -q "^  $m " "$tmp/help.txt"; done
"$PY" "$exporter" nosuch "$tmp/x" 2>"$tmp/err"
check [ $? -eq 2 ]
check grep -q "unknown model 'nosuch' (known: mlp, " "$tmp/err"
echo "not a directory" >"$tmp/file"
"$PY" "$exporter" mlp "$tmp/file/mlp" 2>"$tmp/err"
check [ $? -eq 1 ]
check grep -q "^export.py: error: .*$tmp/file is not a directory" "$tmp/err"
"$PY" "$exporter" mlp "$tmp/" 2>"$tmp/err"
check [ $? -eq 1 ]
check grep -q "must end in a file name" "$tmp/err"
check [ ! -e "$tmp/x.fx" ] && check [ ! -e "$tmp/file/mlp.fx" ] && check [ ! -e "$tmp/.fx" ]
check [ -z "$(find "$tmp" -name '*.tmp' -o -name '*.safetensors')" ]
# --no-inputs writes the graph only, the same graph as with the inputs.
"$PY" "$exporter" mlp "$tmp/noin/mlp" --no-inputs >"$tmp/noin.out"
check [ $? -eq 0 ]
check grep -q "^wrote $tmp/noin/mlp.fx ([0-9]* ops)\$" "$tmp/noin.out"
check [ -s "$tmp/noin/mlp.fx" ] && check [ ! -e "$tmp/noin/mlp.inputs.safetensors" ]
"$PY" "$exporter" mlp "$tmp/noin/mlp2" >/dev/null
check cmp -s "$tmp/noin/mlp.fx" "$tmp/noin/mlp2.fx"
check [ -s "$tmp/noin/mlp2.inputs.safetensors" ]

# The library: naming (parameters, buffers, inputs by dict key; a tied parameter once), bad input,
# and no half-written files when a write fails.
check "$PY" - "$root" "$tmp/lib" <<'P'
import os, re, sys
import torch, torch.nn as nn
root, out = sys.argv[1:3]
sys.path.insert(0, root + "/tools")
import export

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6))
        self.dec = nn.Linear(6, 4)
        self.dec.weight = nn.Parameter(torch.randn(4, 6))
        self.tied = nn.Linear(6, 4)
        self.tied.weight = self.dec.weight
    def forward(self, y, x):  # the dict's order, not the signature's, gives the placeholders
        h = self.enc(x)
        return ((self.dec(h) + self.tied(h) - y) ** 2).mean()

net = Net()
text = export.export(net, {"x": torch.randn(3, 4), "y": torch.randn(3, 4)}, out + "/net")
names = re.findall(r'(\w+): "', text.splitlines()[1])
expected = ["p_enc_0_weight", "p_enc_0_bias", "p_enc_1_weight", "p_enc_1_bias", "p_dec_weight",
            "p_dec_bias", "p_tied_bias", "p_enc_1_running_mean", "p_enc_1_running_var",
            "p_enc_1_num_batches_tracked", "x", "y"]
assert names == expected, names
assert "p_tied_weight" not in text and text.count("p_dec_weight") >= 3, text
tensors, meta = export.read_safetensors(out + "/net.inputs.safetensors")
assert list(tensors) == expected, list(tensors)
assert meta["parameters"].split(",") == expected[:7], meta
assert open(out + "/net.fx").read() == text
assert net.enc[1].num_batches_tracked.item() == 0  # the model is not modified

def raises(kind, words, f):
    try:
        f()
    except kind as e:
        assert all(w in str(e) for w in words), (kind, words, str(e))
        return
    raise AssertionError("no %s for %s" % (kind.__name__, words))

x = torch.randn(3, 4)
raises(TypeError, ["'x'", "int", "not a tensor"], lambda: export.export(net, {"x": 3, "y": x}, out + "/a"))
raises(TypeError, ["dict", "list"], lambda: export.export(net, [x, x], out + "/a"))
raises(ValueError, ["'2x'", "identifier"], lambda: export.export(net, {"2x": x}, out + "/a"))
raises(TypeError, ["torch.nn.Module", "function"], lambda: export.export(lambda x: x, {"x": x}, out + "/a"))

class Constant(nn.Module):  # a plain tensor attribute and a tensor made in forward: constants
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4))
        self.scale = torch.randn(4)
    def forward(self, x):
        idx = torch.tensor([2, 0])
        return (x * self.w * self.scale).sum() + (x[:, idx] * self.scale[idx]).sum()
const = Constant()
text = export.export(const, {"x": x}, out + "/const")
consts = dict(re.findall(r'(_tensor_constant\d): "(\w+)\[\d\]\[1\]cpu" = self\.\1\n', text))
assert sorted(consts.values()) == ["f32", "i64"], text
scale, idx = sorted(consts, key=consts.get)
assert text.count("= self." + scale) == 1, text  # two reads of self.scale, one value
tensors, _ = export.read_safetensors(out + "/const.inputs.safetensors")
assert list(tensors)[:2] == ["p_w", "x"] and sorted(tensors)[:2] == sorted(consts), list(tensors)
assert torch.equal(tensors[scale], const.scale), tensors
assert tensors[idx].tolist() == [2, 0], tensors

class Names(nn.Module):  # a module name that is no Python name (torchvision RegNet's block1-0)
    def __init__(self):
        super().__init__()
        self.add_module("block1-0", nn.Linear(4, 4))
    def forward(self, x):
        return getattr(self, "block1-0")(x).sum()
text = export.export(Names(), {"x": x}, out + "/names")
assert 'p_block1_0_weight: "f32[4, 4]' in text, text.splitlines()[1]

class Repeat(nn.Module):  # repeat_interleave(x, n, dim): a static result, as PyTorch 2.x traces it
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(3, 4))
    def forward(self, x):
        return (self.w.repeat_interleave(2, dim=0) * x).sum()
text = export.export(Repeat(), {"x": torch.randn(6, 4)}, out + "/repeat")
# PyTorch 2.11 decomposes repeat_interleave(x, 2, dim=0) (unsqueeze, expand, clone, view); a
# repeat_interleave.Tensor left in a graph is written with its output_size.
calls = re.findall(r"repeat_interleave\.Tensor\(([^)]*)\)", text)
assert all(re.fullmatch(r"\w+, output_size = 6", c) for c in calls), text
assert calls or "aten.expand.default(unsqueeze, [3, 2, 4])" in text, text

class Recurrent(nn.Module):  # nn.RNN/GRU/LSTM read their weights from _flat_weights
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(4, 5, batch_first=True, bidirectional=True)
    def forward(self, x):
        return self.rnn(x)[0].pow(2).mean()
rnn = Recurrent()
flat_before = list(rnn.rnn._flat_weights)
text = export.export(rnn, {"x": torch.randn(2, 3, 4)}, out + "/rnn")
assert "_param_constant" not in text and "self." not in text.split("def forward")[1], text
assert all(a is b for a, b in zip(rnn.rnn._flat_weights, flat_before))  # put back
for n, _ in rnn.named_parameters():
    assert text.count("p_" + n.replace(".", "_")) >= 2, n  # a placeholder that is used
repeat = Repeat()
repeat.w.data.copy_(export.read_safetensors(out + "/repeat.inputs.safetensors")[0]["p_w"])
for name, model, inputs in (("const", const, {"x": x}), ("rnn", rnn, None), ("repeat", repeat, None)):
    if inputs is None:
        inputs = {"x": export.read_safetensors(out + "/%s.inputs.safetensors" % name)[0]["x"]}
    loss = model(**inputs)
    loss.backward()
    eager = {"out_0": loss.detach()}
    eager.update({"grad_" + export.placeholder_name(n): p.grad for n, p in model.named_parameters()})
    export.write_safetensors(out + "/%s.eager.safetensors" % name, eager)

class Words(nn.Module):
    def forward(self, x):
        return "loss"
raises(TypeError, ["returned a str"], lambda: export.export(Words(), {"x": x}, out + "/a"))
assert not any(f.startswith("a.") for f in os.listdir(out)), os.listdir(out)

# A rename that fails after the first file is complete: the earlier export stays as it was, and
# no temporary file is left behind.
before = {f: open(os.path.join(out, f), "rb").read() for f in os.listdir(out)}
real_replace, calls = os.replace, []
def failing_replace(src, dst):
    calls.append(dst)
    if len(calls) == 2:
        raise OSError(28, "No space left on device")
    real_replace(src, dst)
os.replace = failing_replace
try:
    raises(OSError, ["No space left"], lambda: export.export(Net(), {"x": x, "y": x}, out + "/b"))
finally:
    os.replace = real_replace
after = sorted(os.listdir(out))
assert after == sorted(list(before) + ["b.inputs.safetensors"]), after  # the first rename happened
assert all(open(os.path.join(out, f), "rb").read() == d for f, d in before.items())
assert not any(f.endswith(".tmp") for f in after), after
P

# The constants and the GRU train with aotgrad to eager's loss and grads (the constants are inputs
# that need no grad).
for m in const rnn repeat; do
  grad=$("$PY" -c "import sys; sys.path.insert(0, '$root/tools'); import export
_, m = export.read_safetensors('$tmp/lib/$m.inputs.safetensors'); print(m['parameters'])")
  "$bin" run "$tmp/lib/$m.fx" --inputs="$tmp/lib/$m.inputs.safetensors" --train --grad="$grad" \
    --outputs="$tmp/lib/$m.out.safetensors" 2>"$tmp/$m.err"
  check [ $? -eq 0 ] || cat "$tmp/$m.err"
done
check "$PY" - "$root" "$tmp/lib" <<'P'
import sys
import torch
sys.path.insert(0, sys.argv[1] + "/tools")
import export
out = sys.argv[2]
for m in ("const", "rnn", "repeat"):
    got, _ = export.read_safetensors(out + "/%s.out.safetensors" % m)
    eager, _ = export.read_safetensors(out + "/%s.eager.safetensors" % m)
    assert len(eager) > 1 and set(eager) <= set(got), (m, list(eager), list(got))
    for n, want in eager.items():
        assert torch.allclose(got[n], want, rtol=1e-4, atol=1e-6), (m, n, got[n], want)
P

# resnet18, mobilenet_v2 (ReLU6 as hardtanh_, depthwise convolutions) and the GPT: export with the
# command line (which prints the --grad spec), train one step with aotgrad, compare with eager.
# compile --explain works on the exported graph (README).
for m in resnet18 mobilenet_v2 gpt; do
  "$PY" "$exporter" "$m" "$tmp/$m" --print-grad >"$tmp/$m.grad" 2>"$tmp/$m.err"
  check [ $? -eq 0 ]
  grad="$(cat "$tmp/$m.grad")"
  [ -s "$tmp/$m.err" ] && cat "$tmp/$m.err"
  "$bin" check "$tmp/$m.fx" >/dev/null
  check [ $? -eq 0 ]
  "$bin" run "$tmp/$m.fx" --inputs "$tmp/$m.inputs.safetensors" --train --grad="$grad" \
    --outputs "$tmp/$m.out.safetensors" --stats=json >"$tmp/$m.stats.json"
  check [ $? -eq 0 ]
  check "$PY" -c "import json; j=json.load(open('$tmp/$m.stats.json')); assert j['bw_us'] > 0 and j['peak_bytes'] > 0, j"
  check "$PY" - "$root" "$m" "$tmp/$m.grad" "$tmp/$m.inputs.safetensors" "$tmp/$m.out.safetensors" <<'P'
import sys
import torch
root, name, grad_path, inputs_path, out_path = sys.argv[1:6]
grad = open(grad_path).read().strip()
sys.path.insert(0, root + "/tools")
import export

inputs, meta = export.read_safetensors(inputs_path)
got, _ = export.read_safetensors(out_path)
torch.manual_seed(0)
model, example = export.MODELS[name][1]()
model.train()
params = list(model.named_parameters())
buffers = list(model.named_buffers())
key = lambda n: "p_" + n.replace(".", "_")
# Placeholders: parameters, then buffers, then the inputs by their dict keys.
assert list(inputs) == [key(n) for n, _ in params + buffers] + list(example), list(inputs)
assert grad.split(",") == [key(n) for n, _ in params], grad
with torch.no_grad():
    for n, t in params + buffers:
        t.copy_(inputs[key(n)])
loss = model(**{k: inputs[k] for k in example})
loss.backward()
assert torch.allclose(got["out_0"], loss.detach(), rtol=1e-5, atol=1e-6), (got["out_0"], loss)
worst = 0.0
for n, p in params:
    g = got["grad_" + key(n)]
    assert g.shape == p.grad.shape, (n, g.shape, p.grad.shape)
    assert torch.allclose(g, p.grad, rtol=1e-4, atol=1e-5), (n, (g - p.grad).abs().max())
    worst = max(worst, (g - p.grad).abs().max().item())
written = 0
for n, b in buffers:
    if key(n) in got:  # written back: BatchNorm's running statistics and num_batches_tracked
        assert got[key(n)].dtype == b.dtype and torch.allclose(got[key(n)], b, rtol=1e-5, atol=1e-6), n
        written += 1
    else:
        assert torch.equal(inputs[key(n)], b), n  # not mutated by eager either
expected_written = sum(1 for n, _ in buffers if "running_" in n or "num_batches" in n)
assert written == expected_written, (written, expected_written)
print("%s: loss %.6f, %d parameter grads (max abs diff %.2e), %d buffers written back"
      % (name, loss.item(), len(params), worst, written))
P
done
"$bin" compile "$tmp/resnet18.fx" --grad="$(cat "$tmp/resnet18.grad")" --explain >"$tmp/explain.txt"
check [ $? -eq 0 ]
check grep -q "^saved: .* bytes of activations" "$tmp/explain.txt"
check grep -q "^  convolution aten::convolution: " "$tmp/explain.txt"

# The min-cut partition keeps no more activation bytes than PyTorch's own AOTAutograd's
# (min_cut_rematerialization_partition on the same models, tools/functorch_min_cut.py, as
# tests/cli/partition_test.sh does).
"$PY" "$root/tools/functorch_min_cut.py" resnet18 gpt >"$tmp/functorch.jsonl" 2>"$tmp/functorch.err"
check [ $? -eq 0 ] || tail -5 "$tmp/functorch.err"
for m in resnet18 gpt; do
  "$bin" compile "$tmp/$m.fx" --grad="$(cat "$tmp/$m.grad")" --stats=json >"$tmp/$m.compile.json"
  check [ $? -eq 0 ]
  mc=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['saved_activation_bytes'])" "$tmp/$m.compile.json")
  ft=$("$PY" -c "import json,sys
for l in open(sys.argv[1]):
    j = json.loads(l)
    if j['model'] == sys.argv[2]: print(j['saved_activation_bytes'])" "$tmp/functorch.jsonl" "$m")
  echo "$m: saved activation bytes: aotgrad min_cut $mc, PyTorch's AOTAutograd min_cut $ft"
  check [ -n "$mc" ] && check [ -n "$ft" ] && check [ "$mc" -le "$ft" ]
done

finish
