// aotgrad: the RuntimeWrapper -- input views first, the call, the write-back, the aliased outputs.
#include "aotgrad/runtime/wrappers/runtime_wrapper.h"

#include <c10/core/GradMode.h>

#include "aotgrad/ir/error.h"

namespace aotgrad {

std::vector<c10::IValue> RuntimeWrapper::inference(const std::vector<c10::IValue>& args,
                                                   std::vector<c10::IValue> inputs,
                                                   const CompiledFn& compiled) const {
  const ViewAndMutationMeta& meta = a_.meta;
  // Eager's views of the inputs (new metadata, outputs that are views of written inputs), taken
  // from the caller's tensors before any metadata write-back, with their storage offsets.
  const InputsBefore before = inputs_before(a_.input_views, inputs);
  std::vector<c10::IValue> outs = compiled(inputs);
  const size_t n_mut = meta.mutated_inputs_returned.size();
  AOTGRAD_CHECK(outs.size() == n_mut + meta.outputs.size(), "compiled graph returned ", outs.size(),
                " values, expected ", n_mut + meta.outputs.size());
  std::vector<at::Tensor> targets(inputs.size()), values(n_mut);
  for (int p : meta.mutated_inputs_returned) targets[p] = inputs[p].toTensor();
  for (size_t k = 0; k < n_mut; ++k) values[k] = outs[k].toTensor();
  write_back_mutations(
      meta, targets, values, before,
      [](const InputInfo&, const at::Tensor&, const at::Tensor&) { return false; });
  return inference_outputs(a_, args, inputs, std::move(outs), before);
}

std::vector<at::Tensor> RuntimeWrapper::training(const std::vector<at::Tensor>& args,
                                                 const TensorCall& call) const {
  const bool grad_mode = c10::GradMode::is_enabled();
  InputsBefore before;
  {
    c10::NoGradGuard no_grad;
    before = inputs_before(a_.input_views, std::vector<c10::IValue>(args.begin(), args.end()));
  }
  std::vector<at::Tensor> outs = call(args);
  // A non-leaf that requires grad (a view of an activation the function writes) is written under
  // autograd, as PyTorch's runtime wrapper copies: the caller's graph then sees the write and its
  // gradient flows through the compiled function's new value. So is an input that does not
  // require grad written with a value that does: it gets the write's history, as eagerly. A write
  // autograd does not see (under torch.no_grad, through a detach) is written back under no_grad:
  // the input keeps its history, a leaf stays a leaf. A leaf that requires grad, written
  // otherwise, is refused (write_back says why).
  write_back_mutations(
      a_.meta, args, outs, before,
      [grad_mode](const InputInfo& info, const at::Tensor& target, const at::Tensor& value) {
        return grad_mode && !info.mutations_hidden_from_autograd &&
               (target.requires_grad() || value.requires_grad());
      });
  return training_outputs(a_, args, outs, before, grad_mode);
}

}  // namespace aotgrad
