// aotgrad: writing a mutated input's new value back into the caller's tensor (the input-mutation
// epilogue of PyTorch's RuntimeWrapper, §13.7), shared by CompiledGraph and CompiledFunction.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>

namespace aotgrad {

/// Copies `value`, the compiled graph's new value of its input `input`, into `target` under the
/// current grad mode. libtorch's refusal (a leaf that requires grad, or a view of one, written
/// under grad mode; an input whose elements overlap) becomes an Error naming the input.
void write_back(at::Tensor& target, const at::Tensor& value, size_t input);

}  // namespace aotgrad
