"""torch.fx GraphModules into aotgrad's IR and back, node by node.

`from_fx(gm)` walks the graph in C++ (`aotgrad._C.from_fx`, src/python/from_fx.cc): each node
enters aotgrad's IR with its fake value's metadata and its arguments (Note [FX graphs cross node by
node] in src/python/module.cc). `to_fx(graph, like=gm)` builds a GraphModule from an aotgrad graph
in C++ too (src/python/to_fx.cc), with each node's `meta["val"]` taken from the node of the same
name in `like` where it has one.
"""
import functools
import operator

import torch
import torch.fx
from torch.fx._lazy_graph_module import _make_graph_module
from torch.fx.graph import dtype_abbrs

from . import _C

# SymInt arithmetic as FX records it, and aotgrad's operator ops.
_SYM_OPS = {operator.add: "operator::add", operator.sub: "operator::sub",
            operator.mul: "operator::mul", operator.floordiv: "operator::floordiv",
            operator.mod: "operator::mod", operator.neg: "operator::neg"}
_SYM_TARGETS = {v: k for k, v in _SYM_OPS.items()}


# A node aotgrad's IR cannot hold (a target that is not an ATen op, a subgraph): an AotgradError.
UnsupportedNode = _C.UnsupportedNode


def _sym_text(s):
    return str(s.node.expr) if isinstance(s, torch.SymInt) else str(int(s))


def annotation(val):
    """What FX prints for a fake value: "f32[2, s0][s0, 1]cpu", "Sym(s0)"; None for a tuple. The
    C++ walk reads strided tensors and SymInts itself and asks this for the rest."""
    if isinstance(val, torch.Tensor):
        sizes = ", ".join(_sym_text(s) for s in val.shape)
        strides = ", ".join(_sym_text(s) for s in val.stride())
        return "%s[%s][%s]%s" % (dtype_abbrs[val.dtype], sizes, strides, val.device)
    if isinstance(val, (torch.SymInt, int)) and not isinstance(val, bool):
        return "Sym(%s)" % _sym_text(val)
    if isinstance(val, (torch.SymFloat, torch.SymBool)):
        return "Sym(%s)" % val.node.expr
    return None


def _hints(gm):
    """Each size symbol's hint (s0 -> 8) from the fake values' ShapeEnv."""
    for n in gm.graph.nodes:
        val = n.meta.get("val")
        env = getattr(getattr(val, "fake_mode", None), "shape_env", None)
        if env is None and isinstance(val, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            env = val.node.shape_env
        if env is not None:
            table = env.backed_var_to_val if hasattr(env, "backed_var_to_val") else env.var_to_val
            return {str(k): int(v) for k, v in table.items()}
    return {}


def _is_joint(gm):
    names = [n.name for n in gm.graph.find_nodes(op="placeholder")]
    return any(name.startswith("tangents") for name in names)


def from_fx(gm):
    """The aotgrad graph of GraphModule `gm` (every node needs `meta["val"]`, as AOTAutograd's
    graphs have it), verified: aotgrad's inferred metadata of each node is compared with its fake
    value's, and a difference, an op aotgrad does not know or a target that is not an ATen op is
    an AotgradError naming the node."""
    return _C.from_fx(gm.graph, _hints(gm), _is_joint(gm), _KINDS)


# What the C++ walk compares nodes with, and the annotation of the values it does not read.
_KINDS = (torch.fx.Node, torch._ops.OpOverload, operator.getitem, _SYM_OPS, annotation)


@functools.lru_cache(maxsize=None)
def _target(qualified):
    if qualified in _SYM_TARGETS:
        return _SYM_TARGETS[qualified]
    ns, _, rest = qualified.partition("::")
    name, _, overload = rest.partition(".")
    if ns == "higher_order":  # run_and_save_rng_state, run_with_rng_state: no overloads
        return getattr(torch.ops.higher_order, name)
    return getattr(getattr(getattr(torch.ops, ns), name), overload or "default")


# What the C++ build of an FX graph makes nodes with.
_BACK = (torch.fx.Graph, operator.getitem, _target)


def fake_values(gm):
    """`meta["val"]` of GraphModule `gm`'s nodes that have one, by name."""
    return {n.name: n.meta["val"] for n in gm.graph.nodes if "val" in n.meta}


def to_fx(graph, like=None, syms_first=False, fake_mode=None, saved=None, vals=None):
    """A GraphModule of aotgrad graph `graph`: flat placeholders, calls of torch.ops overloads,
    getitems and SymInt arithmetic, and its output. `meta["val"]` of a node comes from the node of
    the same name in GraphModule `like` where it has one (`vals`: fake_values(like), when the
    caller has it). A backward's leading placeholders left without one take theirs from `saved`,
    (the saved values' names, the forward GraphModule), by position: the partition may rename a
    saved value (rng_state_output_0). With `fake_mode`, the nodes left without one get theirs from
    FakeTensorProp. `syms_first`: the SymInt placeholders come first (a backward graph's, as
    PyTorch's runtime passes the saved SymInts before the saved tensors)."""
    if vals is None:
        vals = fake_values(like) if like is not None else {}
    g = _C.to_fx(graph, vals, syms_first, _BACK)
    bare = {n.name: n for n in g.find_nodes(op="placeholder") if "val" not in n.meta}
    if bare and saved is not None:
        names, fw = saved
        fw_vals = fake_values(fw)
        inputs = [n[1] for n in graph.nodes() if n[0] == "placeholder"]
        for name, value in zip(inputs, names):
            if name in bare and value in fw_vals:
                bare.pop(name).meta["val"] = fw_vals[value]
    # As PyTorch's partitioner builds its graphs: the module's Python code is generated on first
    # use, not here (torch.fx's lazy graph module).
    gm = _make_graph_module(like if like is not None else torch.nn.Module(), g)
    if fake_mode is not None and any(n.op != "output" and "val" not in n.meta for n in g.nodes):
        if bare:
            raise _C.AotgradError("placeholders %s have no fake value in the joint graph or the "
                                  "forward" % ", ".join(bare))
        inputs = [n.meta["val"] for n in g.find_nodes(op="placeholder")]
        from torch.fx.passes.fake_tensor_prop import FakeTensorProp
        FakeTensorProp(gm, fake_mode).propagate_dont_convert_inputs(*inputs)
    return gm
