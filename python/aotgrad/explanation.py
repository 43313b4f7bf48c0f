"""What aotgrad's partitioner decided, and its pictures.

Every partition `aotgrad.min_cut_partition` makes is kept (the last 16) in `aotgrad.explanations`;
`aotgrad.explain(joint_module, num_fwd_outputs=...)` partitions a joint graph and returns the
same. An Explanation has the partitioner's reasons (`text`: each saved value, its bytes and why;
the memory budget's plans), the saved values' names, and the two pictures of `aotgrad compile`:
`dot()`, Graphviz of the joint graph with each node filled by its role, and `timeline_svg()`, the
training step's live bytes against default_partition. AOTGRAD_LOGS=partitioner logs the text as
the partitioner runs (aot_joint_graph and aot_graphs the graphs), as TORCH_LOGS does PyTorch's.
"""
import collections

from . import _C
from . import fx as afx


class Explanation:
    def __init__(self, joint, num_fwd_outputs, fw, bw, saved, text):
        self.joint, self.fw, self.bw = joint, fw, bw
        self.num_fwd_outputs = num_fwd_outputs
        self.saved = list(saved)
        self.text = text

    def dot(self):
        """Graphviz source of the joint graph, each node filled by its role in the partition."""
        return _C.partition_dot(self.joint, self.fw, self.bw, self.saved)

    def timeline_svg(self, label="aotgrad"):
        """An SVG of the training step's live bytes, this partition against default_partition."""
        return _C.partition_timeline_svg(self.joint, self.num_fwd_outputs, self.fw, self.bw,
                                         self.saved, label)

    def __str__(self):
        return self.text


explanations = collections.deque(maxlen=16)


def options(memory_budget=None, solver=None, schedule=None):
    """The partition's options by the command line's names, those given (not None)."""
    given = {"memory-budget": memory_budget, "solver": solver, "schedule": schedule}
    return {k: str(v) for k, v in given.items() if v is not None}


def partition(joint, num_fwd_outputs, static_lifetime_input_indices=(), memory_budget=None,
              solver=None, schedule=None):
    """aotgrad's min-cut of aotgrad graph `joint`, ordered by its schedule ("memory", the default,
    or "none"), kept in `explanations` and returned."""
    fw, bw, saved, text = _C.min_cut_partition(joint, num_fwd_outputs,
                                               list(static_lifetime_input_indices),
                                               options(memory_budget, solver, schedule))
    e = Explanation(joint, num_fwd_outputs, fw, bw, saved, text)
    explanations.append(e)
    return e


def explain(joint_module, num_fwd_outputs, static_lifetime_input_indices=None, memory_budget=None,
            solver=None, schedule=None):
    """The Explanation of aotgrad's partition of the joint GraphModule `joint_module` (what a
    partition_fn receives)."""
    return partition(afx.from_fx(joint_module), num_fwd_outputs,
                     static_lifetime_input_indices or (), memory_budget, solver, schedule)
