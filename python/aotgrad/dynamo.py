"""`torch.compile(model, backend="aotgrad")`: aotgrad's whole pipeline from Dynamo's graph.

Dynamo's graph is traced to ATen ops on Dynamo's own fake tensors (make_fx: in-place ops and views
as the program wrote them, Dynamo's symbolic sizes where it made them dynamic, read from the tensor
inputs that carry them), crosses into aotgrad's IR node
by node (aotgrad.fx), and aotgrad compiles it: functionalization, the joint graph, decompositions,
the partition and memory planning. The forward and backward then run on aotgrad's runtime inside
libtorch's autograd, so `loss.backward()` reaches them as any other autograd node. Registered as a
Dynamo backend by the package's entry point (pyproject.toml, group `torch_dynamo_backends`).
Options are AOTConfig's, as aotgrad's compile options (`aotgrad compile --help`):
`torch.compile(m, backend="aotgrad", options={"memory_budget": 0.5})` sets `--memory-budget=0.5`.
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
    given = {k.replace("_", "-"): _option_text(v) for k, v in options.items()}
    compiled = _C.CompiledFunction(graph, requires_grad, given)
    single = not isinstance(gm.graph.output_node().args[0], (tuple, list))

    def run(*args):
        out = compiled([args[i] for i in tensors])
        return out[0] if single else out

    run.aotgrad_graph = graph
    run.aotgrad_compiled = compiled
    return run


def aotgrad(gm, example_inputs, **options):
    """The Dynamo backend "aotgrad"."""
    try:
        return compile_graph(gm, example_inputs, **options)
    except _C.AotgradError as e:
        if config.strict:
            raise
        warnings.warn("aotgrad: PyTorch's AOTAutograd (aot_eager) compiles this graph: %s" % e,
                      stacklevel=2)
        from torch._dynamo.backends.debugging import aot_eager
        return aot_eager(gm, example_inputs)
