// aotgrad: captures a libtorch C++ function as an aotgrad Graph of ATen ops (the front end of
// aot_function), through libtorch's JIT tracer.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "aotgrad/ir/graph.h"

namespace aotgrad {

/// A C++ function of tensors, as aot_function takes it.
using TensorFunction = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>&)>;

struct CaptureOptions {
  /// Placeholder names, one per input; empty: PyTorch's aot_function names (arg0_1, arg1_1, ...).
  std::vector<std::string> input_names;
};

/// Runs `fn` once on `example_inputs` under libtorch's JIT tracer (torch::jit::tracer::trace) and
/// converts the traced graph: one placeholder per input (its dtype, sizes, strides and
/// requires_grad), one call per ATen op as written -- composite ops (linear, batch_norm), in-place
/// ops and views stay as they are; functionalization and decomposition come later -- getitems for
/// multi-result ops and Tensor[] results, and the function's results as the output tuple. Each
/// node's metadata is inferred by the registry's meta function and checked against the traced
/// tensor's dtype and sizes.
///
/// `fn` runs eagerly (under no_grad), so in-place writes land on `example_inputs`; pass
/// copy_example_inputs() to keep them. Throws Error naming the op for an op the registry lacks, a
/// tensor the function uses that is not an input, or a traced construct aotgrad cannot represent.
std::unique_ptr<Graph> capture(const TensorFunction& fn,
                               const std::vector<at::Tensor>& example_inputs,
                               const CaptureOptions& options = {});

/// torch.func.functional_call for libtorch: `fn` with the tensors of `state` (a module's parameters
/// and buffers) replaced by the leading arguments. The returned function, called with
/// (one replacement per state tensor..., inputs...), points each state tensor at its replacement's
/// data -- and, under capture, at the replacement's traced value, so the module's tensors become
/// graph inputs -- calls `fn(inputs)`, and points the state tensors back, also when `fn` throws.
/// Writes `fn` makes to a state tensor land on its replacement. Replacements must match the state
/// tensors' dtype and device.
TensorFunction functional_call(std::vector<at::Tensor> state, TensorFunction fn);

/// Copies of `inputs` with the same dtype, sizes, strides, storage offsets and requires_grad, that
/// alias each other as `inputs` do: the same tensor twice is one copy, and inputs sharing a storage
/// become views of one copied storage. The copies are leaves, detached from autograd.
std::vector<at::Tensor> copy_example_inputs(const std::vector<at::Tensor>& inputs);

}  // namespace aotgrad
