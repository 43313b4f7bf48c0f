// aotgrad: PyTorch's FakifiedOutWrapper (§13.7, R5) -- a custom compiler's outputs keep the strides
// traced for them.
#pragma once

#include <cstddef>
#include <vector>

#include "aotgrad/ir/tensor_meta.h"
#include "aotgrad/runtime/compiler.h"

namespace aotgrad {

/// The user outputs of a compiled forward, as traced: they are its outputs `first`,
/// `first + 1`, ... (after the mutated inputs' new values), with the metadata traced for each and
/// whether each is (a view of) an input.
struct TracedOutputs {
  size_t first = 0;
  std::vector<TensorMeta> metas;
  std::vector<bool> aliases_input;
};

/// `fn` with its user outputs given the traced strides: a fresh output with other strides (and
/// the traced sizes) is copied to a tensor of the traced strides. An output of other sizes, or
/// one that is a view of an input with other strides (which cannot be moved), is an Error naming
/// the output. Outputs with symbolic traced sizes are left as they are.
CompiledFn with_traced_strides(CompiledFn fn, TracedOutputs traced);

}  // namespace aotgrad
