// aotgrad: SymInt-clean kernels for the composite ops whose libtorch kernels read concrete sizes,
// so that a symbolic trace (Note [One symbolic trace]) can run them.
#pragma once

namespace aotgrad {

/// Registers, once, aotgrad's kernels at the fake device's autograd key (AutogradVE) for the
/// CompositeImplicitAutograd ops whose libtorch kernels read sizes as integers: `aten::matmul`.
/// On a fake with symbolic sizes the kernel computes what libtorch's does -- the same ops in the
/// same order -- over c10::SymInts; on any other fake it is libtorch's own kernel. This is what
/// PyTorch does in Python for symbolic tracing (torch._decomp's CompositeImplicitAutograd
/// overrides of matmul).
void register_symbolic_kernels();

}  // namespace aotgrad
