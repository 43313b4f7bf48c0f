// aotgrad: writing mutated inputs' new values back into the caller's tensors.
#include "aotgrad/runtime/wrappers/input_write_back.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <string>

#include "aotgrad/ir/error.h"

namespace aotgrad {

void write_back(at::Tensor& target, const at::Tensor& value, size_t input) {
  try {
    target.copy_(value);
  } catch (const c10::Error& e) {
    // Writes autograd does not see (under torch.no_grad, through a detach) are written back
    // under no_grad: a leaf that requires grad (or a view of one) gets here only written with
    // grad mode on, which eagerly raises too.
    const bool of_leaf = c10::GradMode::is_enabled() && target.requires_grad() &&
                         (target.is_leaf() || (target.is_view() && target._base().is_leaf()));
    throw Error("input " + std::to_string(input) +
                " of the compiled graph is written by it, and writing it back failed: " +
                e.what_without_backtrace() +
                (of_leaf ? " (a leaf that requires grad, or a view of one, written with grad "
                           "mode on: write it under torch.no_grad)"
                         : ""));
  }
}

InputsBefore inputs_before(const CompiledFn& input_views, const std::vector<c10::IValue>& inputs) {
  InputsBefore before;
  if (input_views) before.views = input_views(inputs);
  before.offsets.reserve(inputs.size());
  for (const c10::IValue& v : inputs)
    before.offsets.push_back(v.isTensor() && v.toTensor().defined() ? v.toTensor().storage_offset()
                                                                    : 0);
  return before;
}

void write_back_mutations(
    const ViewAndMutationMeta& meta, const std::vector<at::Tensor>& targets,
    const std::vector<at::Tensor>& values, const InputsBefore& before,
    const std::function<bool(const InputInfo&, const at::Tensor&, const at::Tensor&)>& with_grad) {
  const size_t n_mut = meta.mutated_inputs_returned.size();
  AOTGRAD_CHECK(values.size() >= n_mut, "compiled graph returned ", values.size(),
                " values, fewer than its ", n_mut, " mutated inputs");
  c10::NoGradGuard no_grad;
  for (size_t k = 0; k < n_mut; ++k) {
    const int p = meta.mutated_inputs_returned[k];
    at::Tensor target = targets[p];
    const at::Tensor& value = values[k];
    const InputInfo& info = meta.inputs[p];
    // The new geometry is that of eager's view of the input. Failing that: with its data
    // mutated, the input's new value is a view of a fresh tensor laid out as the input (if it is
    // dense), its offset relative to the input's; else it is a view of the input.
    if (info.mutates_metadata && info.view >= 0) {
      const at::Tensor& g = before.views[info.view].toTensor();
      target.as_strided_(g.sizes(), g.strides(), g.storage_offset());
    } else if (info.mutates_metadata) {
      target.as_strided_(value.sizes(), value.strides(),
                         value.storage_offset() + (info.mutates_data ? before.offsets[p] : 0));
    }
    if (!info.mutates_data) continue;
    c10::AutoGradMode grad(with_grad(info, target, value));
    write_back(target, value, static_cast<size_t>(p));
  }
}

}  // namespace aotgrad
