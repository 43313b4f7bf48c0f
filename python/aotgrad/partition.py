"""`aotgrad.min_cut_partition`: a drop-in for PyTorch's `min_cut_rematerialization_partition`.

The joint graph crosses into aotgrad's IR node by node (aotgrad.fx), aotgrad's min-cut partitions
it (with its memory budget priced by the predicted peak), and the forward and backward graphs come
back as GraphModules in the layout PyTorch's AOTAutograd runtime slices by position
(docs/python/pytorch_partition_fn.md): the forward returns its outputs, then the saved tensors,
then the saved SymInts; the backward takes the saved SymInts, the saved tensors, then the
tangents, and returns one gradient or None per primal. A joint graph aotgrad cannot take goes to
PyTorch's own partitioner with one warning naming the node and the reason, or raises under
`aotgrad.config.strict`.
"""
import os
import warnings

import torch._functorch.config
from torch._functorch.partitioners import min_cut_rematerialization_partition
from torch._guards import detect_fake_mode
from torch._inductor.custom_graph_pass import CustomPartitionerFn, get_hash_for_files

from . import _C, config, explanation
from . import fx as afx


def min_cut_partition(joint_module, _joint_inputs, compiler="inductor", *, num_fwd_outputs,
                      static_lifetime_input_indices=None, memory_budget=None, solver=None,
                      schedule="memory"):
    """`(fw_module, bw_module)` of `joint_module`, as `min_cut_rematerialization_partition` gives
    them. `memory_budget`: PyTorch's activation_memory_budget in [0, 1] (None: PyTorch's
    `torch._functorch.config.activation_memory_budget`, 1 by default), or "auto": the lowest
    predicted peak within a 10% slowdown. `solver`: the budget's knapsack solver, "dp", "greedy"
    or "ilp" (None: PyTorch's `activation_memory_budget_solver`). `schedule`: "memory" reorders
    the two graphs, within their dependences, so that the step's predicted peak falls (never
    rises); "none" keeps the partitioner's order (the backward as the autograd engine runs it)."""
    if memory_budget is None:
        memory_budget = torch._functorch.config.activation_memory_budget
    if solver is None:
        solver = torch._functorch.config.activation_memory_budget_solver
    try:
        joint = afx.from_fx(joint_module)
    except _C.AotgradError as e:
        if config.strict:
            raise
        warnings.warn("aotgrad: PyTorch's min_cut_rematerialization_partition partitions this "
                      "graph: %s" % e, stacklevel=2)
        return min_cut_rematerialization_partition(
            joint_module, _joint_inputs, compiler, num_fwd_outputs=num_fwd_outputs,
            static_lifetime_input_indices=static_lifetime_input_indices)
    e = explanation.partition(joint, num_fwd_outputs, static_lifetime_input_indices or (),
                              memory_budget, solver, schedule)
    return graph_modules(e, joint_module, _joint_inputs)


def graph_modules(e, joint_module, joint_inputs):
    """`(fw_module, bw_module)`: Explanation `e`'s forward and backward built back as FX
    GraphModules in the layout PyTorch's runtime slices (the module's docstring), each node's fake
    value from `joint_module`'s node of the same name."""
    mode = detect_fake_mode(joint_inputs) if joint_inputs else None
    vals = afx.fake_values(joint_module)
    fw_module = afx.to_fx(e.fw, like=joint_module, fake_mode=mode, vals=vals)
    bw_module = afx.to_fx(e.bw, like=joint_module, syms_first=True, fake_mode=mode,
                          saved=(e.saved, fw_module), vals=vals)
    return fw_module, bw_module


class _InductorPartitioner(CustomPartitionerFn):
    """min_cut_partition as Inductor's `custom_partitioner_fn`, with aotgrad's options. Its uuid
    goes into Inductor's and AOTAutograd's cache keys: it hashes aotgrad's Python files, its
    extension and the options, so a cached graph partitioned otherwise is not reused."""

    def __init__(self, **options):
        self.options = options

    def __call__(self, gm, joint_inputs, **kwargs):
        return min_cut_partition(gm, joint_inputs, **kwargs, **self.options)

    def uuid(self):
        here = os.path.dirname(os.path.abspath(__file__))
        files = tuple(os.path.join(here, f) for f in ("fx.py", "partition.py", "explanation.py"))
        files += (_C.__file__,)
        return get_hash_for_files(files) + repr(sorted(self.options.items())).encode()


def inductor(**options):
    """A torch.compile backend: Inductor compiles, aotgrad partitions (min_cut_partition's
    keyword arguments: memory_budget, solver, schedule), with Inductor's own decompositions and
    joint-graph passes. `torch.compile(model, backend=aotgrad.inductor(memory_budget=0.5))`."""
    partitioner = _InductorPartitioner(**options)

    def backend(gm, example_inputs):
        from torch._inductor.compile_fx import compile_fx
        return compile_fx(gm, example_inputs,
                          config_patches={"custom_partitioner_fn": partitioner})

    return backend
