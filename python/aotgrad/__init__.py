"""aotgrad: PyTorch's AOTAutograd in C++, for PyTorch users.

`aotgrad.min_cut_partition` is a drop-in for PyTorch's `min_cut_rematerialization_partition`;
`aotgrad.fx` moves torch.fx graphs into aotgrad's IR and back, node by node (Note [FX graphs
cross node by node] in src/python/module.cc).
"""
import torch  # noqa: F401  (loads libtorch before the extension, which links it)

from . import _C, config
from ._C import AotgradError, Graph
from .fx import from_fx, to_fx
from .explanation import Explanation, explain, explanations
from .partition import inductor, min_cut_partition

__all__ = ["AotgradError", "Explanation", "Graph", "config", "explain", "explanations", "from_fx",
           "inductor", "min_cut_partition", "to_fx", "_C"]
