"""`torch.compile(model, backend="aotgrad")`: aotgrad's whole pipeline from Dynamo's graph.

Dynamo's graph is traced to ATen ops on Dynamo's own fake tensors (make_fx: in-place ops and views
as the program wrote them, Dynamo's symbolic sizes where it made them dynamic, read from the tensor
inputs that carry them), crosses into aotgrad's IR node
by node (aotgrad.fx), and aotgrad compiles it: functionalization, the joint graph, decompositions,
the partition and memory planning. The forward and backward then run on aotgrad's runtime inside
libtorch's autograd, so `loss.backward()` reaches them as any other autograd node. Registered as a
Dynamo backend by the package's entry point (pyproject.toml, group `torch_dynamo_backends`).
Options (`torch.compile(m, backend="aotgrad", options={...})`) are AOTConfig's fields by their
names -- partition_fn (min_cut_rematerialization_partition, default_partition or
aotgrad.min_cut_partition), decompositions (a table of ATen ops: aotgrad's own decomposition of
each), keep_inference_input_mutations, num_params_buffers and static_input_indices (inputs free to
save), dynamic_shapes, enable_log and the internal fields at their defaults -- and aotgrad's own
compile options (`aotgrad compile --help`): `{"memory_budget": 0.5}` sets `--memory-budget=0.5`.
AOTConfig's compilers are not taken: aotgrad's runtime runs the graphs (for compilers of your own,
`aot_autograd(..., partition_fn=aotgrad.min_cut_partition)`).
A graph aotgrad cannot take compiles with PyTorch's own AOTAutograd (aot_eager) instead, with one
warning naming the node and the reason, or raises under `aotgrad.config.strict`.
"""
import warnings

import torch
from torch._guards import detect_fake_mode
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx

from . import _C, config
from . import fx as afx

# AOTConfig's fields that describe how PyTorch's AOTAutograd was entered, not what it compiles:
# taken at their defaults only (torch._functorch._aot_autograd.schemas.AOTConfig).
_AOT_AT_DEFAULT = {"is_export": False, "no_tangents": False, "pre_dispatch": False,
                   "export_trace_joint": False, "disable_functionalization": False,
                   "ignore_shape_env": False, "force_non_lazy_backward_lowering": False,
                   "_disable_torch_fn_metadata_mode": False}
# Bookkeeping (ids, cache information, sources): any value.
_AOT_BOOKKEEPING = ("aot_id", "cache_info", "precompile_backend_id",
                    "aot_autograd_arg_pos_to_source")
_AOT_COMPILERS = ("fw_compiler", "bw_compiler", "inference_compiler")


def _option_text(v):
    if isinstance(v, bool):
        return "on" if v else "off"
    return str(v)


def _tensor_inputs(gm, fakes):
    """A function of Dynamo's tensor inputs only, and their positions: a size Dynamo passes as an
    input of its own (dynamic shapes) is read from the tensor input that has it, as aotgrad's
    graphs take sizes from their tensors (sym_size)."""
    tensors = [i for i, x in enumerate(fakes) if isinstance(x, torch.Tensor)]
    sources = {}
    for i, x in enumerate(fakes):
        if not isinstance(x, torch.SymInt):
            continue
        sources[i] = next(((j, d) for j in tensors for d, s in enumerate(fakes[j].shape)
                           if isinstance(s, torch.SymInt) and s.node.expr == x.node.expr), None)
        if sources[i] is None:
            raise _C.AotgradError("input %d of the graph is a size (%s) that no tensor input has"
                                  % (i, x))

    def f(*args):
        by_position = dict(zip(tensors, args))
        full = []
        for i, x in enumerate(fakes):
            if i in by_position:
                full.append(by_position[i])
            elif i in sources:
                j, d = sources[i]
                full.append(by_position[j].shape[d])
            else:
                full.append(x)
        return gm(*full)

    return f, tensors


def _partition_kind(fn):
    from torch._functorch import partitioners
    from . import partition
    if fn in ("min_cut", partitioners.min_cut_rematerialization_partition,
              partition.min_cut_partition):
        return "min_cut"
    if fn in ("default", partitioners.default_partition):
        return "default"
    raise ValueError(
        "partition_fn=%r: aotgrad partitions with its min-cut (min_cut_rematerialization_partition"
        ", aotgrad.min_cut_partition) or default_partition; a partition_fn of your own runs with "
        "PyTorch's aot_autograd" % (fn,))


def _decomposition_spec(table):
    """aotgrad's --decomp of a decomposition table (OpOverloads or packets): each op aotgrad has a
    decomposition of; one warning names the others, which stay as they are."""
    names, missing = [], []
    for op in table:
        # "aten::gelu.default" of an OpOverload, "aten::gelu" of a packet.
        name = op.name() if isinstance(op, torch._ops.OpOverload) else op._qualified_op_name
        try:
            _C.check_compile_options({"decomp": name})
            names.append(name)
        except _C.AotgradError:
            missing.append(name)
    if missing:
        warnings.warn("aotgrad: decompositions: aotgrad has no decomposition of %d of the table's "
                      "ops, which stay as they are: %s" % (len(missing), ", ".join(missing)),
                      stacklevel=4)
    return ",".join(["none"] + names)


def _options(options, fakes, tensors):
    """aotgrad's compile options by name, the static inputs (one flag per tensor input) and whether
    to log, from AOTConfig's fields and aotgrad's own options (the module's docstring). A bad option
    is a ValueError naming it: the user's to fix, never a reason to fall back."""
    given, static, logs = {}, set(), True
    for k, v in options.items():
        if k in _AOT_COMPILERS:
            raise ValueError(
                "%s: aotgrad's runtime runs the graphs; to compile them with compilers of your "
                "own use aot_autograd(fw_compiler=..., bw_compiler=..., "
                "partition_fn=aotgrad.min_cut_partition)" % k)
        if k in _AOT_AT_DEFAULT:
            if v != _AOT_AT_DEFAULT[k]:
                raise ValueError("%s=%r: aotgrad's backend takes it only as %r"
                                 % (k, v, _AOT_AT_DEFAULT[k]))
        elif k in _AOT_BOOKKEEPING:
            pass
        elif k == "partition_fn":
            given["partition"] = _partition_kind(v)
        elif k == "decompositions":
            given["decomp"] = _decomposition_spec(v)
        elif k == "keep_inference_input_mutations":
            if v:
                given["keep-inference-input-mutations"] = ""
        elif k == "num_params_buffers":
            static.update(range(int(v)))
        elif k == "static_input_indices":
            static.update(int(i) for i in (v or ()))
        elif k == "dynamic_shapes":
            symbolic = any(isinstance(x, torch.SymInt) or (
                isinstance(x, torch.Tensor) and any(isinstance(d, torch.SymInt) for d in x.shape))
                for x in fakes)
            if not v and symbolic:
                raise ValueError("dynamic_shapes=False, but Dynamo's graph has symbolic sizes "
                                 "(compile with dynamic=False)")
        elif k == "enable_log":
            logs = bool(v)
        else:
            given[k.replace("_", "-")] = _option_text(v)
    try:
        _C.check_compile_options(given)
    except _C.AotgradError as e:
        raise ValueError("aotgrad's options: %s" % e) from None
    return given, [i in static for i in tensors], logs


def compile_graph(gm, example_inputs, **options):
    """aotgrad's compiled callable of Dynamo's graph `gm` (its inputs: `example_inputs`)."""
    mode = detect_fake_mode(example_inputs)
    if mode is None:
        mode = FakeTensorMode()
    fakes = [mode.from_tensor(x) if isinstance(x, torch.Tensor) else x for x in example_inputs]
    fn, tensors = _tensor_inputs(gm, fakes)
    with mode:
        aten = make_fx(fn, tracing_mode="real")(*[fakes[i] for i in tensors])
    graph = afx.from_fx(aten)
    grad = torch.is_grad_enabled()
    requires_grad = [grad and fakes[i].requires_grad for i in tensors]
    given, static, logs = _options(options, fakes, tensors)
    compiled = _C.CompiledFunction(graph, requires_grad, given, static, enable_log=logs)
    single = not isinstance(gm.graph.output_node().args[0], (tuple, list))

    def run(*args):
        out = compiled([args[i] for i in tensors])
        return out[0] if single else out

    run.aotgrad_graph = graph
    run.aotgrad_compiled = compiled
    return run


def aotgrad(gm, example_inputs, options=None, **kwargs):
    """The Dynamo backend "aotgrad". `options`: torch.compile's (AOTConfig's fields and aotgrad's
    compile options by name, the module's docstring); keyword arguments add to them."""
    options = dict(options or {}, **kwargs)
    try:
        return compile_graph(gm, example_inputs, **options)
    except _C.AotgradError as e:
        if config.strict:
            raise
        warnings.warn("aotgrad: PyTorch's AOTAutograd (aot_eager) compiles this graph: %s" % e,
                      stacklevel=2)
        from torch._dynamo.backends.debugging import aot_eager
        return aot_eager(gm, example_inputs)
