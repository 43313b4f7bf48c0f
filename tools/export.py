#!/usr/bin/python3
"""aotgrad: exports a PyTorch model's forward as an ATen-level graph in aotgrad's text form.

The forward is traced with torch.fx.experimental.proxy_tensor.make_fx (parameters and buffers are
graph inputs, through torch.nn.utils.stateless.functional_call), and written as

  <prefix>.fx                  the graph, in PyTorch 2.x print_readable() form (aotgrad's text form)
  <prefix>.inputs.safetensors  the values of every placeholder (parameters, buffers, inputs)

Placeholders are the parameters, then the buffers, named `p_` + the dotted name with dots as
underscores (`p_fc1_weight`, `p_bn_running_mean`), then the inputs by their dict keys. Tensor
metadata (dtype, sizes, strides, device) comes from running the traced graph on copies of the real
inputs. Written for PyTorch 1.13 (Debian's python3-torch); run it with /usr/bin/python3.

As a library:   from export import export; export(model, {"x": x}, "out/mlp")
As a command:   /usr/bin/python3 tools/export.py mlp tests/data/models/mlp
"""

import argparse
import json
import math
import operator
import os
import struct
import sys

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx

try:  # PyTorch 2.x
    from torch.func import functional_call
except ImportError:  # PyTorch 1.13
    from torch.nn.utils.stateless import functional_call

__all__ = ["export", "graph_text", "write_safetensors", "MODELS"]

# --- value text ------------------------------------------------------------------------------------

_DTYPE_SHORT = {
    torch.float64: "f64", torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16",
    torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8",
    torch.uint8: "u8", torch.bool: "b8", torch.complex64: "c64", torch.complex128: "c128",
}
_DTYPE_SAFETENSORS = {
    torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
    torch.uint8: "U8", torch.bool: "BOOL",
}
_MEMORY_FORMATS = {
    torch.contiguous_format: "torch.contiguous_format",
    torch.preserve_format: "torch.preserve_format",
    torch.channels_last: "torch.channels_last",
    torch.channels_last_3d: "torch.channels_last_3d",
}
_LAYOUTS = {torch.strided: "torch.strided", torch.sparse_coo: "torch.sparse_coo"}


def _device_text(d):
    return d.type if d.index is None else "%s:%d" % (d.type, d.index)


def annotation(t):
    """PyTorch's annotation of a tensor: f32[4, 8][8, 1]cpu."""
    if t.dtype not in _DTYPE_SHORT:
        raise ValueError("dtype %s has no aotgrad name" % t.dtype)
    sizes = ", ".join(str(s) for s in t.shape)
    strides = ", ".join(str(s) for s in t.stride())
    return "%s[%s][%s]%s" % (_DTYPE_SHORT[t.dtype], sizes, strides, _device_text(t.device))


def _float_text(v):
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(float(v))


def _arg_text(a, names):
    """An argument as the text form writes it (Python syntax, FX's names)."""
    if isinstance(a, torch.fx.Node):
        return names[a]
    if a is None:
        return "None"
    if isinstance(a, bool):
        return "True" if a else "False"
    if isinstance(a, int):
        return str(a)
    if isinstance(a, float):
        return _float_text(a)
    if isinstance(a, str):
        return repr(a)
    if isinstance(a, torch.dtype):
        return str(a)  # torch.float32
    if isinstance(a, torch.device):
        if a.index is None:
            return "device(type='%s')" % a.type
        return "device(type='%s', index=%d)" % (a.type, a.index)
    if isinstance(a, torch.memory_format):
        return _MEMORY_FORMATS[a]
    if isinstance(a, torch.layout):
        return _LAYOUTS[a]
    if isinstance(a, (list, tuple)):  # int[], Tensor[], ...: always a list, as the text form has
        return "[" + ", ".join(_arg_text(e, names) for e in a) + "]"
    raise ValueError("cannot write argument %r of type %s" % (a, type(a).__name__))


def _op_text(target):
    """torch.ops.aten.add.Tensor for an OpOverload."""
    if not isinstance(target, torch._ops.OpOverload):
        raise ValueError("node target %r is not an ATen op overload" % (target,))
    packet = target.overloadpacket
    ns = packet._qualified_op_name.split("::")[0]
    return "torch.ops.%s.%s.%s" % (ns, packet.__name__, target._overloadname)


# --- graph text ------------------------------------------------------------------------------------


def _record_values(gm, example_inputs):
    """Runs the graph on `example_inputs` and returns {node: value}."""
    values = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            v = super().run_node(n)
            values[n] = v
            return v

    with torch.no_grad():
        Recorder(gm).run(*example_inputs)
    return values


def _is_mutating(target):
    schema = getattr(target, "_schema", None)
    if schema is None:
        return True
    return any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments)


def _remove_dead_pure_nodes(graph):
    """Drops unused results of non-mutating ops (the `detach` nodes autograd adds while tracing)."""
    changed = True
    while changed:
        changed = False
        for n in reversed(list(graph.nodes)):
            if n.op == "call_function" and not n.users and not _is_mutating(n.target):
                graph.erase_node(n)
                changed = True


def graph_text(gm, placeholder_names, values):
    """The aotgrad text form of `gm`: placeholders renamed to `placeholder_names`, annotations from
    `values` (node -> the value it had when the graph ran), release statements as FX writes them."""
    nodes = list(gm.graph.nodes)
    placeholders = [n for n in nodes if n.op == "placeholder"]
    if len(placeholders) != len(placeholder_names):
        raise ValueError("%d placeholders, %d names" % (len(placeholders), len(placeholder_names)))
    names = {}
    taken = set(placeholder_names)
    for n, name in zip(placeholders, placeholder_names):
        names[n] = name
    for n in nodes:
        if n.op == "placeholder":
            continue
        base, name, k = n.name, n.name, 0
        while name in taken:
            k += 1
            name = "%s_%d" % (base, k)
        taken.add(name)
        names[n] = name

    # FX's release statements: each value is released after its last use; unused results at once.
    last_use = {}
    releases = {}
    for user in reversed(nodes):
        def register(v, user=user):
            if v not in last_use:
                last_use[v] = user
                releases.setdefault(user, []).append(v)
            return v
        torch.fx.node.map_arg(user.args, register)
        torch.fx.node.map_arg(user.kwargs, register)

    def ann(n):
        v = values.get(n)
        return ': "%s"' % annotation(v) if isinstance(v, torch.Tensor) else ""

    params = ", ".join("%s%s" % (names[n], ann(n)) for n in placeholders)
    lines = ["class GraphModule(torch.nn.Module):", "    def forward(self, %s):" % params]
    for n in nodes:
        if n.op == "placeholder":
            continue
        if n.op == "output":
            (result,) = n.args
            if isinstance(result, (list, tuple)):
                items = [_arg_text(r, names) for r in result]
                text = "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
            else:
                text = _arg_text(result, names)
            lines.append("        return " + text)
            continue
        if n.op != "call_function":
            raise ValueError("node %s: unsupported FX op %r" % (n.name, n.op))
        if n.target is operator.getitem:
            src, index = n.args
            rhs = "%s[%d]" % (names[src], index)
        else:
            args = [_arg_text(a, names) for a in n.args]
            args += ["%s = %s" % (k, _arg_text(v, names)) for k, v in n.kwargs.items()]
            rhs = "%s(%s)" % (_op_text(n.target), ", ".join(args))
        stmt = "        %s%s = %s" % (names[n], ann(n), rhs)
        dead = list(releases.get(n, []))
        if not n.users:
            dead.append(n)
        if dead:
            stmt += ";  " + " = ".join(names[d] for d in dead) + " = None"
        lines.append(stmt)
    return "\n".join(lines) + "\n"


# --- safetensors ------------------------------------------------------------------------------------


def write_safetensors(path, tensors, metadata=None):
    """Writes {name: tensor} in the safetensors format: an 8-byte little-endian header length, a
    JSON header {name: {dtype, shape, data_offsets}} padded with spaces to 8 bytes, then the raw
    little-endian row-major data of each tensor in order."""
    header = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    chunks = []
    offset = 0
    for name, t in tensors.items():
        if t.dtype not in _DTYPE_SAFETENSORS:
            raise ValueError("%s: dtype %s cannot be stored in safetensors" % (name, t.dtype))
        t = t.detach().to("cpu").contiguous()
        flat = t.reshape(-1)
        data = flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""
        if sys.byteorder != "little":
            raise RuntimeError("write_safetensors assumes a little-endian machine")
        header[name] = {"dtype": _DTYPE_SAFETENSORS[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for c in chunks:
            f.write(c)
    os.replace(tmp, path)


# --- export ------------------------------------------------------------------------------------------


def _flatten_outputs(out):
    if isinstance(out, torch.Tensor):
        return (out,)
    if isinstance(out, (list, tuple)):
        flat = []
        for o in out:
            flat.extend(_flatten_outputs(o))
        return tuple(flat)
    if isinstance(out, dict):
        return _flatten_outputs(list(out.values()))
    raise ValueError("model output of type %s is not a tensor, tuple, list or dict" % type(out).__name__)


def export(model, inputs, prefix, tracing_mode="real", metadata=None):
    """Traces `model(**inputs)` at the ATen level and writes `<prefix>.fx` and
    `<prefix>.inputs.safetensors`. Returns the graph text.

    Parameters and buffers become the first placeholders (`p_<dotted_name_with_underscores>`),
    the inputs follow by their dict keys. The model and the given tensors are not modified: the
    trace and the metadata run work on copies (batch norm updates its running statistics)."""
    if not isinstance(inputs, dict) or not all(isinstance(v, torch.Tensor) for v in inputs.values()):
        raise TypeError("inputs must be a dict of name -> tensor")
    params = list(model.named_parameters())
    buffers = list(model.named_buffers())
    state_names = [n for n, _ in params] + [n for n, _ in buffers]
    state_values = [t.detach() for _, t in params] + [t.detach() for _, t in buffers]
    input_names = list(inputs)
    placeholder_names = ["p_" + n.replace(".", "_") for n in state_names] + input_names
    if len(set(placeholder_names)) != len(placeholder_names):
        raise ValueError("placeholder names collide: %s" % placeholder_names)
    originals = state_values + [inputs[k].detach() for k in input_names]
    requires_grad = [p.requires_grad for _, p in params] + [False] * (len(buffers) + len(inputs))

    def forward(*flat):
        state = dict(zip(state_names, flat[: len(state_names)]))
        kwargs = dict(zip(input_names, flat[len(state_names):]))
        return _flatten_outputs(functional_call(model, state, (), kwargs))

    def fresh_copies():
        return [t.clone().requires_grad_(rg) for t, rg in zip(originals, requires_grad)]

    gm = make_fx(forward, tracing_mode=tracing_mode)(*fresh_copies())
    _remove_dead_pure_nodes(gm.graph)
    gm.recompile()
    values = _record_values(gm, [t.clone() for t in originals])
    text = graph_text(gm, placeholder_names, values)
    output_node = next(n for n in gm.graph.nodes if n.op == "output")
    outputs = [values[n].tolist() if isinstance(n, torch.fx.Node) else None
               for n in output_node.args[0]]

    out_dir = os.path.dirname(prefix)
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
    tmp = prefix + ".fx.tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, prefix + ".fx")
    # The graph's outputs on these inputs (nested lists of numbers), for end-to-end checks.
    meta = {"exporter": "tools/export.py", "torch": torch.__version__,
            "outputs": json.dumps(outputs)}
    meta.update(metadata or {})
    write_safetensors(prefix + ".inputs.safetensors", dict(zip(placeholder_names, originals)), meta)
    return text


# --- built-in example models ----------------------------------------------------------------------


class MLP(nn.Module):
    """Linear-ReLU-Linear-ReLU-Linear with an MSE loss."""

    def __init__(self, d_in=8, width=32, d_out=4):
        super().__init__()
        self.fc1 = nn.Linear(d_in, width)
        self.fc2 = nn.Linear(width, width)
        self.fc3 = nn.Linear(width, d_out)

    def forward(self, x, y):
        h = F.relu(self.fc1(x))
        h = F.relu(self.fc2(h))
        return F.mse_loss(self.fc3(h), y)


class CausalSelfAttention(nn.Module):
    def __init__(self, d, heads, seq):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.register_buffer("causal_mask", torch.ones(seq, seq, dtype=torch.bool).tril())

    def forward(self, x):
        b, t, d = x.shape
        h, hd = self.heads, d // self.heads
        q, k, v = self.qkv(x).split(d, dim=2)
        # (b, t, d) -> (b * h, t, hd)
        q = q.view(b, t, h, hd).transpose(1, 2).reshape(b * h, t, hd)
        k = k.view(b, t, h, hd).transpose(1, 2).reshape(b * h, t, hd)
        v = v.view(b, t, h, hd).transpose(1, 2).reshape(b * h, t, hd)
        att = torch.bmm(q, k.transpose(1, 2)) * (1.0 / math.sqrt(hd))
        att = att.masked_fill(~self.causal_mask[:t, :t], float("-inf"))
        att = F.softmax(att, dim=-1)
        y = torch.bmm(att, v)  # (b * h, t, hd)
        y = y.view(b, h, t, hd).transpose(1, 2).reshape(b, t, d)
        return self.proj(y)


class GPTBlock(nn.Module):
    """Token + position embedding, one pre-norm transformer block, a final norm and the LM head,
    with a cross-entropy loss against integer targets."""

    def __init__(self, vocab=64, d=32, heads=2, seq=8):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, d)
        self.pos_emb = nn.Embedding(seq, d)
        self.ln1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads, seq)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.fc_proj = nn.Linear(4 * d, d)
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, idx, targets):
        b, t = idx.shape
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.tok_emb(idx) + self.pos_emb(pos)
        x = x + self.attn(self.ln1(x))
        x = x + self.fc_proj(F.gelu(self.fc(self.ln2(x))))
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.view(b * t, -1), targets.view(b * t))


class CNNBN(nn.Module):
    """Conv-BN-ReLU_-MaxPool-Conv-BN-ReLU_-AdaptiveAvgPool-Flatten-Linear with a cross-entropy loss;
    batch norm in training mode (it updates its running statistics)."""

    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu1 = nn.ReLU(inplace=True)
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.relu2 = nn.ReLU(inplace=True)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, classes)

    def forward(self, x, target):
        x = self.pool(self.relu1(self.bn1(self.conv1(x))))
        x = self.relu2(self.bn2(self.conv2(x)))
        x = torch.flatten(self.avgpool(x), 1)
        return F.cross_entropy(self.fc(x), target)


def _mlp():
    m = MLP()
    return m, {"x": torch.randn(4, 8), "y": torch.randn(4, 4)}


def _gpt_block():
    m = GPTBlock()
    return m, {"idx": torch.randint(0, 64, (2, 8)), "targets": torch.randint(0, 64, (2, 8))}


def _cnn_bn():
    m = CNNBN()
    m.train()
    return m, {"x": torch.randn(4, 3, 16, 16), "target": torch.randint(0, 10, (4,))}


# name -> (description, factory returning (model, inputs))
MODELS = {
    "mlp": ("Linear-ReLU-Linear-ReLU-Linear, MSE loss; batch 4, 8 -> 32 -> 32 -> 4", _mlp),
    "gpt_block": ("GPT-style block + LM head, cross-entropy; vocab 64, d 32, 2 heads, seq 8, batch 2",
                  _gpt_block),
    "cnn_bn": ("Conv-BN(train)-ReLU_-MaxPool-Conv-BN-ReLU_-AvgPool-Linear, cross-entropy; "
               "batch 4, 3x16x16", _cnn_bn),
}


def main(argv=None):
    models = "\n".join("  %-10s %s" % (k, v[0]) for k, v in MODELS.items())
    p = argparse.ArgumentParser(
        description="Export a built-in example model's forward (with its loss) as an aotgrad "
                    "text-form graph <prefix>.fx plus its inputs <prefix>.inputs.safetensors.",
        epilog="models:\n" + models, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", choices=sorted(MODELS), help="which example model")
    p.add_argument("prefix", help="output path prefix, e.g. tests/data/models/mlp")
    p.add_argument("--seed", type=int, default=0, help="torch.manual_seed before building (default 0)")
    p.add_argument("--tracing-mode", choices=["real", "fake"], default="real",
                   help="make_fx tracing mode (default real)")
    args = p.parse_args(argv)
    torch.manual_seed(args.seed)
    model, inputs = MODELS[args.model][1]()
    try:
        text = export(model, inputs, args.prefix, tracing_mode=args.tracing_mode,
                      metadata={"model": args.model, "seed": args.seed})
    except (ValueError, TypeError, RuntimeError, OSError) as e:
        print("export.py: error: %s" % e, file=sys.stderr)
        return 1
    n_ops = sum(1 for line in text.splitlines() if " = torch.ops." in line)
    print("wrote %s.fx (%d ops) and %s.inputs.safetensors" % (args.prefix, n_ops, args.prefix))
    return 0


if __name__ == "__main__":
    sys.exit(main())
