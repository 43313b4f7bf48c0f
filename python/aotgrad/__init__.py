"""aotgrad: PyTorch's AOTAutograd in C++, for PyTorch users.

`aotgrad.fx` moves torch.fx graphs into aotgrad's IR and back, node by node (Note [FX graphs
cross node by node] in src/python/module.cc).
"""
import torch  # noqa: F401  (loads libtorch before the extension, which links it)

from . import _C
from ._C import AotgradError, Graph
from .fx import from_fx, to_fx

__all__ = ["AotgradError", "Graph", "from_fx", "to_fx", "_C"]
