#!/usr/bin/env python3
"""aotgrad: exports a PyTorch model's forward as an ATen-level graph in aotgrad's text form.

The forward is traced with torch.fx.experimental.proxy_tensor.make_fx (parameters and buffers are
graph inputs, through torch.nn.utils.stateless.functional_call), and written as

  <prefix>.fx                  the graph, in PyTorch 2.x print_readable() form (aotgrad's text form)
  <prefix>.inputs.safetensors  the values of every placeholder (parameters, buffers, inputs)

Placeholders are the parameters, then the buffers, named `p_` + the dotted name with dots as
underscores (`p_fc1_weight`, `p_bn_running_mean`), then the inputs by their dict keys. Tensor
metadata (dtype, sizes, strides, device) comes from running the traced graph on copies of the real
inputs. A tied parameter (nanoGPT's LM head and token embedding) is one placeholder. Both files go
to temporary files renamed into place: a failed export leaves no half-written file. Run it with
the project's venv's Python (scripts/setup.sh), whose PyTorch 2.11 matches the build's libtorch.

As a library:   from export import export; export(model, {"x": x, "target": t}, "out/model")
As a command:   .venv/bin/python tools/export.py resnet18 out/resnet18   (--help lists the models)
"""

import argparse
import json
import keyword
import math
import operator
import os
import re
import struct
import sys
import tempfile

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx
from torch.func import functional_call

__all__ = ["export", "graph_text", "placeholder_name", "read_safetensors", "safetensors_bytes",
           "write_safetensors", "MODELS"]

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
    """Runs the graph on `example_inputs` and returns {node: value}. A tensor is recorded as a view
    of itself with its sizes and strides of that moment, so that a later in-place metadata change
    (x.transpose_(0, 1)) does not rewrite the annotation of x or of the nodes before it."""
    values = {}

    def snapshot(v):
        if isinstance(v, torch.Tensor) and v.layout == torch.strided:
            return v.as_strided(v.size(), v.stride(), v.storage_offset())
        return v

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            v = super().run_node(n)
            values[n] = tuple(map(snapshot, v)) if isinstance(v, (tuple, list)) else snapshot(v)
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


def graph_text(gm, placeholder_names, values, annotations=None):
    """The aotgrad text form of `gm`: placeholders renamed to `placeholder_names`, annotations from
    `values` (node -> the value it had when the graph ran) or, where given, `annotations` (node ->
    annotation text), release statements as FX writes them."""
    annotations = annotations or {}
    nodes = list(gm.graph.nodes)
    placeholders = [n for n in nodes if n.op == "placeholder"]
    if len(placeholders) != len(placeholder_names):
        raise ValueError("%d placeholders, %d names" % (len(placeholders), len(placeholder_names)))
    names = {}
    taken = set(placeholder_names)
    for n, name in zip(placeholders, placeholder_names):
        names[n] = name
    # A tensor constant (get_attr) keeps its attribute's name, as FX prints it; make_fx may read
    # one attribute in several get_attr nodes, which are one value of the text form.
    first_read = {}
    for n in nodes:
        if n.op == "get_attr":
            if n.target not in first_read and n.target in taken:
                raise ValueError("tensor constant %s has the name of a placeholder" % n.target)
            first_read.setdefault(n.target, n)
            names[n] = n.target
            taken.add(n.target)
    for n in nodes:
        if n.op in ("placeholder", "get_attr"):
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
            if v.op == "get_attr":  # the reads of one constant are one value
                v = first_read[v.target]
            if v not in last_use:
                last_use[v] = user
                releases.setdefault(user, []).append(v)
            return v
        torch.fx.node.map_arg(user.args, register)
        torch.fx.node.map_arg(user.kwargs, register)

    def ann(n):
        if n in annotations:
            return ': "%s"' % annotations[n]
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
        if n.op == "get_attr":  # make_fx's tensor constant, a lifted input of aotgrad's graph
            if not isinstance(values.get(n), torch.Tensor):
                raise ValueError("node %s: get_attr %s is not a tensor" % (n.name, n.target))
            if first_read[n.target] is not n:
                continue
            lines.append("        %s%s = self.%s" % (names[n], ann(n), n.target))
            continue
        if n.op != "call_function":
            raise ValueError("node %s: unsupported FX op %r" % (n.name, n.op))
        if n.target is operator.getitem:
            src, index = n.args
            rhs = "%s[%d]" % (names[src], index)
        elif n.target in _SYM_INFIX:  # FX prints operator.mul & co. on SymInts inline
            a, b = (_arg_text(x, names) for x in n.args)
            rhs = "%s %s %s" % (a, _SYM_INFIX[n.target], b)
        elif n.target is sym_size_int:
            rhs = "torch.ops.aten.sym_size.int(%s, %d)" % (names[n.args[0]], n.args[1])
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


# --- dynamic sizes -----------------------------------------------------------------------------------
#
# PyTorch 1.13's make_fx(tracing_mode="symbolic") makes every size of every input a symbol and
# fails on common code (Tensor.split with a SymInt size), so a dynamic export traces in real mode
# three times, at the example sizes and at two others, and unifies what varies: a size that
# changes with the dynamic dimensions is written as an expression over their symbols, and an int
# argument that changes is computed in the graph from sym_size.int of the input that binds the
# symbol, with SymInt arithmetic, as PyTorch 2.x prints a dynamic graph:
#
#     sym_size_int: "Sym(s0)" = torch.ops.aten.sym_size.int(idx, 0)
#     mul: "Sym(s0*s1)" = sym_size_int * sym_size_int_1
#     view: "f32[s0*s1, 32][32, 1]cpu" = torch.ops.aten.view.default(getitem, [mul, 32])
#
# Dimensions of equal example sizes share a symbol (Dynamo's duck sizing). An expression is
# c * (a product of symbols, each at most squared) + k; a varying size or int argument outside
# that family, or a varying float argument, is an error.

_SYM_INFIX = {operator.mul: "*", operator.add: "+", operator.sub: "-", operator.floordiv: "//"}


def sym_size_int(x, dim):  # the FX target standing for torch.ops.aten.sym_size.int
    return x.size(dim)


def _expr_text(expr):
    """expr = (coeff, ((symbol index, power), ...), constant) -> "32*s0*s1 + 1"."""
    c, mono, k = expr
    factors = []
    for i, power in mono:
        factors.append("s%d" % i if power == 1 else "s%d**%d" % (i, power))
    if not factors:
        return str(k)
    text = "*".join(([str(c)] if c != 1 else []) + factors)
    if c == -1:
        text = "-" + "*".join(factors)
    if k > 0:
        text += " + %d" % k
    elif k < 0:
        text += " - %d" % -k
    return text


def _fit(samples, points):
    """The expression c * monomial + k taking value samples[t] at symbol values points[t], or None.
    The first point is the example sizes, checked after fitting the other two."""
    n = len(points[0])
    monomials = [()]
    for i in range(n):
        monomials = [m + ((i, p),) for m in monomials for p in (0, 1, 2)]
    monomials.sort(key=lambda m: (sum(p for _, p in m), m))
    def value(m, pt):
        v = 1
        for i, p in m:
            v *= pt[i] ** p
        return v
    for m in monomials:
        m = tuple((i, p) for i, p in m if p)
        if not m:
            continue
        x1, x2 = value(m, points[1]), value(m, points[2])
        if x1 == x2:
            continue
        dc = samples[1] - samples[2]
        if dc % (x1 - x2):
            continue
        c = dc // (x1 - x2)
        k = samples[1] - c * x1
        if c != 0 and all(c * value(m, pt) + k == v for pt, v in zip(points, samples)):
            return (c, m, k)
    return None


def _alt_sizes(base):
    """Two other sizes for each symbol, none 0 or 1 (PyTorch specializes those), chosen so that no
    two symbols are affinely related over the three points (symbol i moves by 1 + i, then by
    3 + 3i + i*i), which would make a size ambiguous between them."""
    alts = [[], []]
    for i, v in enumerate(base):
        alts[0].append(v + 1 + i)
        alts[1].append(v + 3 + 3 * i + i * i)
    return alts


def _resized(t, shape):
    if t.dtype.is_floating_point:
        return torch.randn(shape, dtype=t.dtype)
    if t.dtype == torch.bool:
        return torch.rand(shape) < 0.5
    lo, hi = int(t.min()), int(t.max())
    return torch.randint(lo, hi + 1, shape, dtype=t.dtype)


def _dynamic_symbols(inputs, dynamic):
    """[(input name, dim, symbol index)] and the symbols' example sizes, from "name.dim" specs."""
    dims, sizes = [], []
    for spec in dynamic:
        name, _, dim = spec.rpartition(".")
        if name not in inputs or not dim.lstrip("-").isdigit():
            raise ValueError("--dynamic %r: expected INPUT.DIM with an input among %s"
                             % (spec, ", ".join(inputs)))
        t = inputs[name]
        d = int(dim) % max(t.dim(), 1)
        if not 0 <= int(dim) + (t.dim() if int(dim) < 0 else 0) < t.dim():
            raise ValueError("--dynamic %r: %s has %d dimensions" % (spec, name, t.dim()))
        v = t.shape[d]
        if v < 2:
            raise ValueError("--dynamic %r: size %d is specialized (0 and 1 are never dynamic)"
                             % (spec, v))
        if v not in sizes:
            sizes.append(v)
        dims.append((name, d, sizes.index(v)))
    return dims, sizes


def _same_structure(a, b):
    if isinstance(a, torch.fx.Node) or isinstance(b, torch.fx.Node):
        return isinstance(a, torch.fx.Node) and isinstance(b, torch.fx.Node) and a.name == b.name
    if isinstance(a, (list, tuple)):
        return (isinstance(b, (list, tuple)) and len(a) == len(b)
                and all(_same_structure(x, y) for x, y in zip(a, b)))
    if isinstance(a, bool) or isinstance(a, int):
        return type(a) is type(b)
    return True


def _symbolize(gms, values, points, dims, placeholder_names):
    """Rewrites gms[0] (traced at points[0]) into the dynamic graph and returns its annotations:
    {node: annotation text or tensor}. gms[1], gms[2] are the traces at the other points."""
    graphs = [list(gm.graph.nodes) for gm in gms]
    if len({len(g) for g in graphs}) != 1 or any(
            a.op != b.op or a.target != b.target or not _same_structure(a.args, b.args)
            for g in graphs[1:] for a, b in zip(graphs[0], g)):
        raise ValueError("the traced graph changes with the dynamic sizes (control flow on a "
                         "size?): it cannot be exported with these dimensions dynamic")
    base = graphs[0]
    placeholders = [n for n in base if n.op == "placeholder"]
    by_name = dict(zip(placeholder_names, placeholders))
    binder = {}
    for name, d, sym in dims:
        binder.setdefault(sym, (by_name[name], d))

    def fit(samples, what):
        if len(set(samples)) == 1:
            return samples[0]
        e = _fit(samples, points)
        if e is None:
            raise ValueError("%s takes the values %s at the sizes %s: not an expression aotgrad's "
                             "dynamic export can write" % (what, samples, points))
        return e

    def sym_text(v):
        return str(v) if isinstance(v, int) else _expr_text(v)

    annotations = {}
    for k, n in enumerate(base):
        vs = [values[t][g[k]] for t, g in enumerate(graphs)]
        v = vs[0]
        if isinstance(v, torch.Tensor):
            sizes = [sym_text(fit([x.shape[d] for x in vs], "%s's size %d" % (n.name, d)))
                     for d in range(v.dim())]
            strides = [sym_text(fit([x.stride(d) for x in vs], "%s's stride %d" % (n.name, d)))
                       for d in range(v.dim())]
            annotations[n] = "%s[%s][%s]%s" % (_DTYPE_SHORT[v.dtype], ", ".join(sizes),
                                                ", ".join(strides), _device_text(v.device))
    # Int arguments that vary become SymInt nodes, made just before their first user.
    graph = gms[0].graph
    made = {}

    def node_for(expr, before):
        if expr in made:
            return made[expr]
        c, mono, k = expr
        with graph.inserting_before(before):
            acc = None
            for i, p in mono:
                if ("sym", i) not in made:
                    x, d = binder[i]
                    s = graph.call_function(sym_size_int, (x, d))
                    annotations[s] = "Sym(s%d)" % i
                    made[("sym", i)] = s
                for _ in range(p):
                    f = made[("sym", i)]
                    acc = f if acc is None else graph.call_function(operator.mul, (acc, f))
                    annotations[acc] = "Sym(%s)" % _expr_text((1, _prefix(mono, acc, made), 0))
            partial = (1, mono, 0)
            if c != 1:
                acc = graph.call_function(operator.mul, (acc, c))
                annotations[acc] = "Sym(%s)" % _expr_text((c, mono, 0))
            if k:
                acc = graph.call_function(operator.add if k > 0 else operator.sub, (acc, abs(k)))
                annotations[acc] = "Sym(%s)" % _expr_text(expr)
        made[expr] = acc
        return acc

    def rewrite(args, others, n, where):
        if isinstance(args, (list, tuple)):
            out = [rewrite(a, [o[i] for o in others], n, "%s[%d]" % (where, i))
                   for i, a in enumerate(args)]
            return type(args)(out) if isinstance(args, tuple) else out
        if isinstance(args, bool) or not isinstance(args, (int, float)):
            return args
        samples = [args] + list(others)
        if len(set(samples)) == 1:
            return args
        if isinstance(args, float):
            raise ValueError("node %s: float argument %s takes the values %s at the sizes %s"
                             % (n.name, where, samples, points))
        return node_for(fit(samples, "node %s's argument %s" % (n.name, where)), n)

    for k, n in enumerate(list(base)):
        if n.op != "call_function":
            continue
        others = [g[k] for g in graphs[1:]]
        n.args = tuple(rewrite(list(n.args), [list(o.args) for o in others], n, "args"))
        if isinstance(n.args, list):
            n.args = tuple(n.args)
        n.kwargs = {key: rewrite(v, [o.kwargs[key] for o in others], n, key)
                    for key, v in n.kwargs.items()}
    return annotations


# make_fx(tracing_mode="symbolic") makes every dimension of every input a symbol and writes sizes
# over its ShapeEnv's symbols, numbered by a hash of where they come from ("s75", "3*s75",
# "s61*s75"). A symbolic export writes them over aotgrad's symbols s0, s1, ... (numbered in order
# of first appearance over the placeholders, the example sizes their hints), as PyTorch prints a
# dynamic graph.
_ATOM = re.compile(r"\bs\d+\b")


def _symbolic_annotations(gm, values):
    """{node: annotation} and {symbol: hint} of a make_fx symbolic trace `gm` whose nodes ran on
    the example inputs to `values`."""
    symbols, hints = {}, {}
    for n in gm.graph.nodes:
        if n.op != "placeholder":
            continue
        v = n.meta.get("val")
        if not isinstance(v, torch.Tensor):
            raise ValueError("placeholder %s has no symbolic tensor value" % n.name)
        for d, size in enumerate(v.shape):
            text = str(size)
            if _ATOM.fullmatch(text) and text not in symbols:
                symbols[text] = "s%d" % len(symbols)
                hints[symbols[text]] = values[n].shape[d]

    def convert(x):
        def sub(m):
            if m.group(0) not in symbols:
                raise ValueError("size %s is no input's dimension" % m.group(0))
            return symbols[m.group(0)]
        return _ATOM.sub(sub, str(x))

    annotations = {}
    for n in gm.graph.nodes:
        v = n.meta.get("val")
        if isinstance(v, torch.Tensor):
            annotations[n] = "%s[%s][%s]%s" % (
                _DTYPE_SHORT[v.dtype], ", ".join(convert(x) for x in v.shape),
                ", ".join(convert(x) for x in v.stride()), _device_text(v.device))
        elif v is not None and "SymInt" in type(v).__name__:
            annotations[n] = "Sym(%s)" % convert(v)
    return annotations, hints


def _prefix(mono, acc, made):
    """The monomial a partial product node stands for (for its annotation)."""
    for key, node in made.items():
        if node is acc and key[0] == "sym":
            return ((key[1], 1),)
    # A product built so far: count the factors along the chain.
    counts = {}
    stack = [acc]
    while stack:
        x = stack.pop()
        hit = next((key[1] for key, node in made.items() if node is x and key[0] == "sym"), None)
        if hit is not None:
            counts[hit] = counts.get(hit, 0) + 1
        elif x.target is operator.mul:
            stack.extend(a for a in x.args if isinstance(a, torch.fx.Node))
    return tuple(sorted(counts.items()))


# --- safetensors ------------------------------------------------------------------------------------


def safetensors_bytes(tensors, metadata=None):
    """{name: tensor} in the safetensors format: an 8-byte little-endian header length, a JSON
    header {name: {dtype, shape, data_offsets}} padded with spaces to 8 bytes, then the raw
    little-endian row-major data of each tensor in order."""
    if sys.byteorder != "little":
        raise RuntimeError("safetensors_bytes assumes a little-endian machine")
    header = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    chunks = []
    offset = 0
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor):
            raise TypeError("%s: a %s, not a tensor" % (name, type(t).__name__))
        if t.dtype not in _DTYPE_SAFETENSORS:
            raise ValueError("%s: dtype %s cannot be stored in safetensors" % (name, t.dtype))
        t = t.detach().to("cpu").contiguous()
        flat = t.reshape(-1)
        if flat.numel() and flat.stride(0) != 1:  # size-1 dimensions keep any stride: [1][6]
            flat = flat.clone(memory_format=torch.contiguous_format)
        data = flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""
        header[name] = {"dtype": _DTYPE_SAFETENSORS[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return b"".join([struct.pack("<Q", len(text)), text] + chunks)


def _write_files(contents):
    """Writes {path: bytes} so that no file is ever half-written: each goes to a temporary file in
    its own directory first, and only when all are complete are they renamed into place. On an
    error the temporary files are removed and the targets are left as they were."""
    temps = []
    mode = 0o666 & ~_umask()
    try:
        for path, data in contents.items():
            fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp",
                                       dir=os.path.dirname(path) or ".")
            temps.append((tmp, path))
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chmod(tmp, mode)
        for tmp, path in temps:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in temps:
            if os.path.exists(tmp):
                os.unlink(tmp)
        raise


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def read_safetensors(path):
    """Reads a safetensors file (such as `aotgrad run --outputs`) into ({name: tensor}, metadata)."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError("%s: not a safetensors file (%d bytes)" % (path, len(blob)))
    n = struct.unpack("<Q", blob[:8])[0]
    if 8 + n > len(blob):
        raise ValueError("%s: header of %d bytes runs past the end of the file" % (path, n))
    header = json.loads(blob[8:8 + n])
    metadata = header.pop("__metadata__", {})
    names = {v: k for k, v in _DTYPE_SAFETENSORS.items()}
    tensors = {}
    for name, entry in header.items():
        if entry["dtype"] not in names:
            raise ValueError("%s: tensor %s has dtype %s" % (path, name, entry["dtype"]))
        begin, end = entry["data_offsets"]
        if not 0 <= begin <= end <= len(blob) - 8 - n:
            raise ValueError("%s: tensor %s lies outside the file" % (path, name))
        raw = bytearray(blob[8 + n + begin:8 + n + end])
        dtype = names[entry["dtype"]]
        flat = torch.frombuffer(raw, dtype=dtype) if raw else torch.empty(0, dtype=dtype)
        tensors[name] = flat.reshape(entry["shape"]).clone()
    return tensors, metadata


def write_safetensors(path, tensors, metadata=None):
    """Writes {name: tensor} to `path` in the safetensors format (see safetensors_bytes), through a
    temporary file renamed into place."""
    _write_files({os.fspath(path): safetensors_bytes(tensors, metadata)})


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
    raise TypeError("the model returned a %s: its forward must return a tensor (the loss) or a "
                    "tuple, list or dict of tensors" % type(out).__name__)


def _check_inputs(inputs):
    if not isinstance(inputs, dict):
        raise TypeError("inputs must be a dict of name -> tensor, not a %s" % type(inputs).__name__)
    for k, v in inputs.items():
        if not isinstance(k, str) or not k.isidentifier() or keyword.iskeyword(k) or k == "self":
            raise ValueError("input name %r is not usable as a graph placeholder: it must be a "
                             "Python identifier (not a keyword, not 'self')" % (k,))
        if not isinstance(v, torch.Tensor):
            raise TypeError("input %r is a %s, not a tensor: export() takes tensors only (bake "
                            "other arguments into the model)" % (k, type(v).__name__))


def _output_paths(prefix):
    """<prefix>.fx and <prefix>.inputs.safetensors; creates the directory and checks that it is
    writable before anything is traced."""
    try:
        prefix = os.fspath(prefix)
    except TypeError:
        raise TypeError("prefix must be a path, not a %s" % type(prefix).__name__) from None
    if not isinstance(prefix, str) or not os.path.basename(prefix):
        raise ValueError("prefix %r must end in a file name (it names <prefix>.fx and "
                         "<prefix>.inputs.safetensors)" % (prefix,))
    out_dir = os.path.dirname(prefix) or "."
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise NotADirectoryError("cannot write %s.fx: %s is not a directory" % (prefix, out_dir))
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
        raise OSError("cannot create the output directory %s: %s" % (out_dir, e.strerror or e)) from None
    if not os.path.isdir(out_dir) or not os.access(out_dir, os.W_OK | os.X_OK):
        raise PermissionError("cannot write %s.fx: directory %s is not writable" % (prefix, out_dir))
    for p in (prefix + ".fx", prefix + ".inputs.safetensors"):
        if os.path.isdir(p):
            raise IsADirectoryError("cannot write %s: it is a directory" % p)
    return prefix + ".fx", prefix + ".inputs.safetensors"


def placeholder_name(dotted):
    """The placeholder of a parameter or buffer: `p_` + its dotted name with every character that
    cannot be in a Python name (dots, and the dashes of torchvision RegNet's `block1-0`) as `_`."""
    return "p_" + re.sub(r"[^0-9A-Za-z_]", "_", dotted)


class _FreshFlatWeights:
    """nn.RNN, LSTM and GRU read their weights from the list `_flat_weights`, filled when they were
    set, not from their attributes, which functional_call swaps: PyTorch 2.11's functional_call
    leaves the list holding the swapped-in tensors after the call, so that the model's next eager
    forward would use them (1.13's never refilled it, and traced the weights as constants). While
    active, each RNN module refills the list from its (swapped) attributes before its forward and
    gets its own list back after."""

    def __init__(self, model):
        self.rnns = [m for m in model.modules() if isinstance(m, nn.RNNBase)]
        self.handles = []

    def __enter__(self):
        for m in self.rnns:
            def before(mod, args):
                mod.__dict__.setdefault("_aotgrad_saved_flat", []).append(mod._flat_weights)
                mod.__dict__["_flat_weights"] = [getattr(mod, n) if hasattr(mod, n) else None
                                                 for n in mod._flat_weights_names]

            def after(mod, args, out):
                mod.__dict__["_flat_weights"] = mod.__dict__["_aotgrad_saved_flat"].pop()

            self.handles += [m.register_forward_pre_hook(before), m.register_forward_hook(after)]
        return self

    def __exit__(self, *exc):
        for h in self.handles:
            h.remove()
        for m in self.rnns:
            saved = m.__dict__.pop("_aotgrad_saved_flat", None)
            if saved:  # a forward that raised: its own list back
                m.__dict__["_flat_weights"] = saved[0]
        return False


def _give_output_sizes(gm, values):
    """A repeat_interleave.Tensor(repeats) node without output_size has a result whose length
    depends on the repeats' values; this records output_size (the length the run gave), which
    makes the shape static, as PyTorch does where it knows the length."""
    op = torch.ops.aten.repeat_interleave.Tensor
    for n in gm.graph.nodes:
        if (n.op == "call_function" and n.target is op and n.kwargs.get("output_size") is None
                and isinstance(values.get(n), torch.Tensor)):
            n.kwargs = dict(n.kwargs, output_size=int(values[n].shape[0]))


def _model_state(model):
    """The parameters, then the buffers, as (dotted names, tensors), each tensor once; and the
    other names a tied tensor is reachable by (alias -> index into the first list), which
    functional_call must be given too or the alias would be traced as a constant."""
    params = list(model.named_parameters())
    buffers = list(model.named_buffers())
    names = [n for n, _ in params] + [n for n, _ in buffers]
    tensors = [t for _, t in params] + [t for _, t in buffers]
    index = {id(t): i for i, t in enumerate(tensors)}
    aliases = {}
    for mod_name, mod in model.named_modules(remove_duplicate=False):
        for table in (mod._parameters, mod._buffers):
            for short, t in table.items():
                full = mod_name + "." + short if mod_name else short
                if t is not None and id(t) in index and full not in names:
                    aliases[full] = index[id(t)]
    return names, tensors, len(params), aliases


def export(model, inputs, prefix, tracing_mode="real", metadata=None, write_inputs=True,
           dynamic=None):
    """Traces `model(**inputs)` at the ATen level and writes `<prefix>.fx` and
    `<prefix>.inputs.safetensors` (only `<prefix>.fx` with `write_inputs=False`, for models whose
    parameters are too big to be worth a file when only the graph is wanted). Returns the graph
    text.

    Parameters and buffers become the first placeholders (`p_<dotted_name_with_underscores>`),
    the inputs follow by their dict keys. A tied tensor (one parameter under two names) is one
    placeholder, named after its first name. The model and the given tensors are not modified: the
    trace and the metadata run work on copies (batch norm updates its running statistics). Both
    files are written to temporary files and renamed into place, so a failed export leaves no
    half-written file. Raises TypeError / ValueError for bad arguments and for graphs the text form
    cannot hold, OSError when the prefix cannot be written, and whatever make_fx raises when the
    model cannot be traced.

    `dynamic` lists input dimensions ("idx.0") whose sizes are symbols in the graph (see
    "dynamic sizes" above): the graph is traced at the example sizes and two others, and what
    varies is written over s0, s1, ... (the example sizes are their hints, recorded in the
    metadata as "hints")."""
    if not isinstance(model, nn.Module):
        raise TypeError("model must be a torch.nn.Module, not a %s" % type(model).__name__)
    _check_inputs(inputs)
    fx_path, st_path = _output_paths(prefix)
    state_names, state_tensors, n_params, aliases = _model_state(model)
    input_names = list(inputs)
    placeholder_names = [placeholder_name(n) for n in state_names] + input_names
    def describe(i):
        return state_names[i] if i < len(state_names) else "input %r" % input_names[i - len(state_names)]

    seen = {}
    for i, name in enumerate(placeholder_names):
        if name in seen:
            raise ValueError("placeholder name %s is taken twice: by %s and by %s"
                             % (name, describe(seen[name]), describe(i)))
        seen[name] = i
    originals = [t.detach() for t in state_tensors] + [inputs[k].detach() for k in input_names]
    requires_grad = ([t.requires_grad for t in state_tensors[:n_params]]
                     + [False] * (len(originals) - n_params))

    def forward(*flat):
        state = dict(zip(state_names, flat[: len(state_names)]))
        state.update({alias: flat[i] for alias, i in aliases.items()})
        kwargs = dict(zip(input_names, flat[len(state_names):]))
        return _flatten_outputs(functional_call(model, state, (), kwargs))

    def fresh_copies():
        return [t.clone().requires_grad_(rg) for t, rg in zip(originals, requires_grad)]

    def trace(flat):
        # Real tracing reads what data-dependent Python control flow asks of the example values
        # (`int(lengths.max())`, `if torch.equal(...)`) and specializes the graph to them, as
        # PyTorch 1.13's make_fx did; 2.11's make_fx refuses by default. Symbolic tracing keeps
        # refusing: a graph of symbols cannot hold one example's values.
        with _FreshFlatWeights(model):
            g = make_fx(forward, tracing_mode=tracing_mode,
                        _error_on_data_dependent_ops=tracing_mode != "real")(*flat)
        _remove_dead_pure_nodes(g.graph)
        g.graph.lint()
        g.recompile()
        return g

    gm = trace(fresh_copies())
    # Tensors the forward makes or reads from outside (torch.tensor(...), a plain tensor
    # attribute) are make_fx's tensor constants, get_attrs `_tensor_constant0`, ...: aotgrad reads
    # them as lifted inputs, their values written with the others under their names.
    constants = {}
    for n in gm.graph.nodes:
        if n.op == "get_attr":
            value = getattr(gm, n.target)
            if not isinstance(value, torch.Tensor):
                raise ValueError("the trace has a constant %s of type %s, not a tensor"
                                 % (n.target, type(value).__name__))
            if value.dtype not in _DTYPE_SAFETENSORS:
                raise ValueError("tensor constant %s (used by %s) has dtype %s, which safetensors "
                                 "cannot store" % (n.target, ", ".join(u.name for u in n.users),
                                                   value.dtype))
            constants[n.target] = value.detach()
    values = _record_values(gm, [t.clone() for t in originals])
    _give_output_sizes(gm, values)
    annotations = None
    if tracing_mode == "symbolic":
        if dynamic:
            raise ValueError("--dynamic traces in real mode at several sizes; it does not go with "
                             "--tracing-mode=symbolic, where every dimension is a symbol")
        annotations, hints = _symbolic_annotations(gm, values)
        metadata = dict(metadata or {}, hints=",".join("%s=%d" % kv for kv in hints.items()))
    if dynamic:
        dims, sizes = _dynamic_symbols(inputs, dynamic)
        points = [sizes] + _alt_sizes(sizes)
        gms, all_values = [gm], [values]
        n_state = len(state_names)
        for pt in points[1:]:
            flat = [t.clone() for t in originals]
            for name, d, sym in dims:
                i = n_state + input_names.index(name)
                shape = list(flat[i].shape)
                shape[d] = pt[sym]
                flat[i] = _resized(originals[i], shape)
            flat = [t.requires_grad_(rg) for t, rg in zip(flat, requires_grad)]
            g = trace([t.clone().requires_grad_(rg) for t, rg in zip(flat, requires_grad)])
            v = _record_values(g, [t.detach().clone() for t in flat])
            _give_output_sizes(g, v)
            gms.append(g)
            all_values.append(v)
        annotations = _symbolize(gms, all_values, points, dims, placeholder_names)
        metadata = dict(metadata or {}, hints=",".join("s%d=%d" % (i, v)
                                                        for i, v in enumerate(sizes)))
    text = graph_text(gm, placeholder_names, values, annotations)
    if dynamic or tracing_mode == "symbolic":  # the symbols' hints, as aotgrad's parser reads them
        text = "# hints: %s\n%s" % (metadata["hints"].replace(",", ", "), text)
    output_node = next(n for n in gm.graph.nodes if n.op == "output")
    outputs = [values[n].tolist() if isinstance(n, torch.fx.Node) else None
               for n in output_node.args[0]]

    # The graph's outputs on these inputs (nested lists of numbers), for end-to-end checks, and the
    # placeholders that are trainable parameters (`aotgrad run --train --grad=...`).
    meta = {"exporter": "tools/export.py", "torch": torch.__version__,
            "outputs": json.dumps(outputs),
            "parameters": ",".join(n for n, rg in zip(placeholder_names, requires_grad) if rg)}
    meta.update(metadata or {})
    files = {}  # the inputs are renamed into place first, the graph last
    if write_inputs:
        tensors = dict(zip(placeholder_names, originals))
        tensors.update(constants)
        files[st_path] = safetensors_bytes(tensors, meta)
    files[fx_path] = text.encode("utf-8")
    _write_files(files)
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


class GPTAttention(nn.Module):
    """Causal self-attention as nanoGPT writes it: one qkv projection, (b, heads, t, hd) tensors,
    `@` (matmul) for the scores and the weighted sum, a float lower-triangular buffer as the mask."""

    def __init__(self, d, heads, seq):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.register_buffer("bias", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, d)
        return self.c_proj(y)


class GPTLayer(nn.Module):
    """Pre-norm transformer layer: x + attn(ln(x)), then x + mlp(ln(x)) with a tanh-GELU MLP."""

    def __init__(self, d, heads, seq):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = GPTAttention(d, heads, seq)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """A GPT-2-style language model (nanoGPT's layout): token and position embeddings, `layers`
    pre-norm transformer layers, a final layer norm and an LM head tied to the token embedding
    (one parameter under two names), with a cross-entropy loss against the next tokens."""

    def __init__(self, vocab=96, d=32, heads=4, seq=16, layers=2):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(seq, d)
        self.h = nn.ModuleList(GPTLayer(d, heads, seq) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight
        for m in self.modules():  # nanoGPT's initialization: N(0, 0.02) weights, zero biases
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, mean=0.0, std=0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward(self, idx, targets):
        b, t = idx.shape
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for layer in self.h:
            x = layer(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def _torchvision():
    try:
        import torchvision
    except ImportError as e:
        raise RuntimeError("this model needs torchvision (scripts/setup.sh installs it into the venv): %s"
                           % e) from None
    return torchvision


def resnet18_with_loss(num_classes=10):
    """torchvision's resnet18 (random init, no weights download) whose forward(x, target) returns
    the cross-entropy of its logits: a subclass, so the placeholders are named as resnet18's own
    state_dict (p_conv1_weight, p_bn1_running_mean, p_layer1_0_conv1_weight, ..., p_fc_bias)."""
    tv = _torchvision()

    class ResNet18WithLoss(tv.models.ResNet):
        def __init__(self):
            super().__init__(tv.models.resnet.BasicBlock, [2, 2, 2, 2], num_classes=num_classes)

        def forward(self, x, target):
            return F.cross_entropy(super().forward(x), target)

    return ResNet18WithLoss()


def mobilenet_v2_with_loss(num_classes=10):
    """torchvision's mobilenet_v2 (random init; ReLU6 is hardtanh_, depthwise convolutions, BN)
    whose forward(x, target) returns the cross-entropy of its logits, placeholders named as its
    own state_dict (p_features_0_0_weight, ..., p_classifier_1_bias)."""
    tv = _torchvision()

    class MobileNetV2WithLoss(tv.models.MobileNetV2):
        def __init__(self):
            # No dropout, so that eager autograd, drawing from Python's generator, is comparable.
            super().__init__(num_classes=num_classes, dropout=0.0)

        def forward(self, x, target):
            return F.cross_entropy(super().forward(x), target)

    return MobileNetV2WithLoss()


def efficientnet_b0_with_loss(num_classes=10):
    """torchvision's efficientnet_b0 (random init; SiLU as silu_, squeeze-excitation blocks,
    depthwise convolutions, BN) without dropout and stochastic depth, whose forward(x, target)
    returns the cross-entropy of its logits, placeholders named as its own state_dict
    (p_features_0_0_weight, ..., p_classifier_1_bias)."""
    tv = _torchvision()
    setting, last_channel = tv.models.efficientnet._efficientnet_conf(
        "efficientnet_b0", width_mult=1.0, depth_mult=1.0)

    class EfficientNetB0WithLoss(tv.models.EfficientNet):
        def __init__(self):
            # A deterministic step, comparable with eager: no dropout, no stochastic depth.
            super().__init__(setting, dropout=0.0, stochastic_depth_prob=0.0,
                             num_classes=num_classes, last_channel=last_channel)

        def forward(self, x, target):
            return F.cross_entropy(super().forward(x), target)

    return EfficientNetB0WithLoss()


def _mlp():
    m = MLP()
    return m, {"x": torch.randn(4, 8), "y": torch.randn(4, 4)}


def _gpt_block():
    m = GPTBlock()
    return m, {"idx": torch.randint(0, 64, (2, 8)), "targets": torch.randint(0, 64, (2, 8))}


def _gpt_block_long():
    m = GPTBlock(seq=64)
    return m, {"idx": torch.randint(0, 64, (2, 8)), "targets": torch.randint(0, 64, (2, 8))}


def _cnn_bn():
    m = CNNBN()
    m.train()
    return m, {"x": torch.randn(4, 3, 16, 16), "target": torch.randint(0, 10, (4,))}


def _gpt_block_wide():
    m = GPTBlock(vocab=64, d=64, heads=4, seq=64)
    return m, {"idx": torch.randint(0, 64, (8, 64)), "targets": torch.randint(0, 64, (8, 64))}


def _gpt():
    m = GPT()
    return m, {"idx": torch.randint(0, 96, (2, 16)), "targets": torch.randint(0, 96, (2, 16))}


def _resnet18():
    m = resnet18_with_loss()
    m.train()
    return m, {"x": torch.randn(4, 3, 32, 32), "target": torch.randint(0, 10, (4,))}


def _mobilenet_v2():
    m = mobilenet_v2_with_loss()
    m.train()
    return m, {"x": torch.randn(2, 3, 32, 32), "target": torch.randint(0, 10, (2,))}


def _train_step_size(factory):
    """The training-step benchmark's size of a torchvision model: batch 16, 3x64x64, so that its
    activations weigh as much as its parameters' gradients (resnet18) or more (mobilenet_v2)."""
    def make():
        m = factory()
        m.train()
        return m, {"x": torch.randn(16, 3, 64, 64), "target": torch.randint(0, 10, (16,))}
    return make


# name -> (description, factory returning (model, inputs))
MODELS = {
    "mlp": ("Linear-ReLU-Linear-ReLU-Linear, MSE loss; batch 4, 8 -> 32 -> 32 -> 4", _mlp),
    "gpt_block": ("GPT-style block + LM head, cross-entropy; vocab 64, d 32, 2 heads, seq 8, batch 2",
                  _gpt_block),
    "gpt_block_wide": ("the GPT-style block with activations well above its parameters (the "
                       "training-step memory benchmark); vocab 64, d 64, 4 heads, seq 64, batch 8",
                       _gpt_block_wide),
    "gpt_block_long": ("the GPT-style block with a context of 64 (position embedding and mask), "
                       "run at seq 8, for a dynamic sequence length; vocab 64, d 32, 2 heads, "
                       "batch 2", _gpt_block_long),
    "cnn_bn": ("Conv-BN(train)-ReLU_-MaxPool-Conv-BN-ReLU_-AvgPool-Linear, cross-entropy; "
               "batch 4, 3x16x16", _cnn_bn),
    "gpt": ("GPT-2-style LM (nanoGPT layout, tied LM head, tanh GELU), cross-entropy; vocab 96, "
            "d 32, 4 heads, 2 layers, seq 16, batch 2", _gpt),
    "resnet18": ("torchvision resnet18 (random init, BN in training mode, 10 classes), "
                 "cross-entropy; batch 4, 3x32x32; needs torchvision", _resnet18),
    "mobilenet_v2": ("torchvision mobilenet_v2 (random init, BN in training mode, ReLU6, no "
                     "dropout, 10 classes), cross-entropy; batch 2, 3x32x32; needs torchvision",
                     _mobilenet_v2),
    "resnet18_b16": ("resnet18 at the training-step benchmark's size: batch 16, 3x64x64",
                     _train_step_size(resnet18_with_loss)),
    "mobilenet_v2_b16": ("mobilenet_v2 at the training-step benchmark's size: batch 16, 3x64x64",
                         _train_step_size(mobilenet_v2_with_loss)),
    "efficientnet_b0_b16": ("torchvision efficientnet_b0 (random init, BN in training mode, SiLU, "
                            "squeeze-excitation, no dropout or stochastic depth, 10 classes), "
                            "cross-entropy, at the training-step benchmark's size: batch 16, "
                            "3x64x64; needs torchvision",
                            _train_step_size(efficientnet_b0_with_loss)),
}


def main(argv=None):
    models = "\n".join("  %-12s %s" % (k, v[0]) for k, v in MODELS.items())
    p = argparse.ArgumentParser(
        prog="export.py",
        description="Export a built-in example model's forward (with its loss) as an aotgrad "
                    "text-form graph <prefix>.fx plus its inputs <prefix>.inputs.safetensors. "
                    "To export your own model, import this file and call "
                    "export(model, {name: tensor, ...}, prefix).",
        epilog="models:\n" + models, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="which example model (see below)")
    p.add_argument("prefix", help="output path prefix, e.g. out/resnet18")
    p.add_argument("--seed", type=int, default=0, help="torch.manual_seed before building (default 0)")
    p.add_argument("--tracing-mode", choices=["real", "fake", "symbolic"], default="real",
                   help="make_fx tracing mode (default real); symbolic: every input dimension is "
                        "a size symbol s0, s1, ... (make_fx's symbolic tracing)")
    p.add_argument("--print-grad", action="store_true",
                   help="print only the trainable parameters' placeholder names, comma-separated "
                        "(the --grad= of `aotgrad run --train`)")
    p.add_argument("--dynamic", default="",
                   help="comma-separated input dimensions whose sizes are symbols in the graph "
                        "(INPUT.DIM, e.g. idx.0,idx.1,targets.0,targets.1; equal sizes share a "
                        "symbol, as Dynamo's duck sizing)")
    p.add_argument("--no-inputs", action="store_true",
                   help="write only <prefix>.fx, not <prefix>.inputs.safetensors")
    args = p.parse_args(argv)
    if args.model not in MODELS:
        p.error("unknown model %r (known: %s)" % (args.model, ", ".join(MODELS)))
    torch.manual_seed(args.seed)
    try:
        model, inputs = MODELS[args.model][1]()
        text = export(model, inputs, args.prefix, tracing_mode=args.tracing_mode,
                      metadata={"model": args.model, "seed": args.seed},
                      write_inputs=not args.no_inputs,
                      dynamic=[d for d in args.dynamic.split(",") if d])
    except Exception as e:  # noqa: BLE001 -- any failure is reported as one line, exit status 1
        print("export.py: error: %s" % e, file=sys.stderr)
        return 1
    if args.print_grad:
        print(",".join(placeholder_name(n) for n, p in model.named_parameters() if p.requires_grad))
        return 0
    n_ops = sum(1 for line in text.splitlines() if " = torch.ops." in line)
    if args.no_inputs:
        print("wrote %s.fx (%d ops)" % (args.prefix, n_ops))
    else:
        print("wrote %s.fx (%d ops) and %s.inputs.safetensors" % (args.prefix, n_ops, args.prefix))
    return 0


if __name__ == "__main__":
    sys.exit(main())
