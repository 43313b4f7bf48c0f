// aotgrad: the input-mutation epilogue of PyTorch's RuntimeWrapper (§13.7 R3): the new values of
// mutated inputs, returned by the compiled graph, written back into the caller's tensors. One
// write-back for the inference and the training stacks (runtime_wrapper.h).
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "aotgrad/runtime/compiler.h"
#include "aotgrad/transforms/functionalize.h"

namespace aotgrad {

/// Copies `value`, the compiled graph's new value of its input `input`, into `target` under the
/// current grad mode. libtorch's refusal (a leaf that requires grad, or a view of one, written
/// under grad mode; an input whose elements overlap) becomes an Error naming the input.
void write_back(at::Tensor& target, const at::Tensor& value, size_t input);

/// What the write-back and the aliased outputs need of the inputs as they were before the call
/// (before any metadata write-back changes them): eager's views of them (the functionalized
/// graph's input_views replayed on them) and their storage offsets.
struct InputsBefore {
  std::vector<c10::IValue> views;  // empty when there is no views graph
  std::vector<int64_t> offsets;    // per input (0 for one that is not a tensor)
};
/// `input_views` may be null. Runs under the caller's grad mode.
InputsBefore inputs_before(const CompiledFn& input_views, const std::vector<c10::IValue>& inputs);

/// Writes back each input of `meta.mutated_inputs_returned`: `targets[p]` takes `values[k]`, the
/// graph's k-th output. A metadata mutation takes the geometry of eager's view of the input, else
/// that of the value (offset from the input's old offset when its data changed too); a data
/// mutation copies the value in, under grad mode where `with_grad(info, target, value)` says so
/// and under no_grad otherwise.
void write_back_mutations(
    const ViewAndMutationMeta& meta, const std::vector<at::Tensor>& targets,
    const std::vector<at::Tensor>& values, const InputsBefore& before,
    const std::function<bool(const InputInfo&, const at::Tensor&, const at::Tensor&)>& with_grad);

}  // namespace aotgrad
