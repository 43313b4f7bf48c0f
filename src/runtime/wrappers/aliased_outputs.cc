// aotgrad: outputs that alias inputs, regenerated from the caller's tensors.
#include "aotgrad/runtime/wrappers/aliased_outputs.h"

#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <string>

#include "aotgrad/ir/error.h"

namespace aotgrad {

std::vector<c10::IValue> inference_outputs(const OutputAliasing& a,
                                           const std::vector<c10::IValue>& args,
                                           const std::vector<c10::IValue>& inputs,
                                           std::vector<c10::IValue> outs,
                                           const InputsBefore& before) {
  const ViewAndMutationMeta& meta = a.meta;
  const size_t n_mut = meta.mutated_inputs_returned.size();
  std::vector<c10::IValue> result;
  result.reserve(meta.outputs.size());
  for (size_t j = 0; j < meta.outputs.size(); ++j) {
    const OutputInfo& info = meta.outputs[j];
    c10::IValue& v = outs[n_mut + j];
    if (j < a.output_is_arg.size() && a.output_is_arg[j] >= 0) {
      result.push_back(args[a.output_is_arg[j]]);  // the argument itself (mutations written back)
    } else if (info.kind == OutputKind::kIsInput) {
      result.push_back(inputs[info.input]);
    } else if (info.kind == OutputKind::kAliasOfInput && info.view >= 0) {
      // Eager's view of the caller's tensor, which now holds the new data.
      result.push_back(before.views[info.view]);
    } else if (info.kind == OutputKind::kAliasOfInput && meta.inputs[info.input].mutates_data) {
      // The graph computed the view from the new value; regenerate it from the caller's tensor.
      const at::Tensor& target = inputs[info.input].toTensor();
      const at::Tensor& out = v.toTensor();
      result.push_back(target.as_strided(out.sizes(), out.strides(),
                                         before.offsets[info.input] + out.storage_offset()));
    } else {
      result.push_back(std::move(v));
    }
  }
  return result;
}

namespace {

// The caller's view `view` (replayed under grad mode) of an output whose graph value is `value`:
// with value's history. A view through a detach has none of its own, so it is given value's the
// way eager gives it the history of a write: written in place with value, whose values it already
// holds. A view that cannot be written so (an expand's, a split's) is an Error: the graph's value
// would not alias the caller's tensor, as the eager output does.
at::Tensor view_with_history(const at::Tensor& view, const at::Tensor& value, size_t output) {
  if (!value.requires_grad()) return view.detach();
  if (view.requires_grad()) return view;
  auto refuse = [&](const std::string& why) {
    throw Error("output " + std::to_string(output) +
                " is a view of an input through a detach() the function writes, which aotgrad "
                "gives the write's history by writing it, and " +
                why + ": not supported");
  };
  if (at::has_internal_overlap(view) == at::MemOverlap::Yes)
    refuse("it has elements that share memory (an expand)");
  c10::AutoGradMode grad(true);
  at::Tensor v = view;
  try {
    v.copy_(value);
  } catch (const c10::Error& e) {
    refuse(std::string("libtorch refuses the write: ") + e.what_without_backtrace());
  }
  return v;
}

}  // namespace

std::vector<at::Tensor> training_outputs(const OutputAliasing& a,
                                         const std::vector<at::Tensor>& args,
                                         const std::vector<at::Tensor>& outs,
                                         const InputsBefore& before, bool grad_mode) {
  const ViewAndMutationMeta& meta = a.meta;
  const size_t n_mut = meta.mutated_inputs_returned.size();
  const std::vector<c10::IValue>& views = before.views;
  const std::vector<int64_t>& offsets = before.offsets;
  auto run_views = [&] {
    return a.input_views(std::vector<c10::IValue>(args.begin(), args.end()));
  };
  // Outputs that are inputs, or views of inputs, are the caller's tensors (or eager's views of
  // them) when no gradient flows through them; else the graph's value, which carries the grad_fn.
  std::vector<at::Tensor> result(outs.begin() + static_cast<int64_t>(n_mut), outs.end());
  std::vector<size_t> replayed;         // outputs that are views replayed under grad mode
  std::vector<c10::IValue> leaf_views;  // eager's views for leaf outputs, taken after the writes
  for (size_t j = 0; j < meta.outputs.size() && j < result.size(); ++j) {
    const OutputInfo& info = meta.outputs[j];
    int arg = j < a.output_is_arg.size() ? a.output_is_arg[j] : -1;
    // The argument itself (mutations written back): when no gradient flows through it, or when
    // it was written back under autograd, which gave it the write's history.
    if (arg >= 0 && (!args[arg].requires_grad() ||
                     (grad_mode && static_cast<size_t>(arg) < meta.inputs.size() &&
                      meta.inputs[arg].mutates_data))) {
      result[j] = args[arg];
      continue;
    }
    // Eagerly a leaf of its own that requires grad (JointGraph::leaf_output), whose backward
    // reaches nothing: a view of an input taken under no_grad after the writes, as eagerly (a
    // view of a tensor that requires grad does too), or else a detached leaf.
    if (n_mut + j < a.leaf_output.size() && a.leaf_output[n_mut + j] &&
        info.kind != OutputKind::kIsInput) {
      c10::NoGradGuard no_grad;
      const at::Tensor& out = result[j];
      if (info.kind == OutputKind::kAliasOfInput && info.view >= 0 && a.input_views) {
        if (leaf_views.empty()) leaf_views = run_views();
        result[j] = leaf_views[info.view].toTensor();
      } else if (info.kind == OutputKind::kAliasOfInput &&
                 !meta.inputs[info.input].mutates_metadata &&
                 (meta.inputs[info.input].mutates_data || out.is_alias_of(args[info.input]))) {
        // The graph's value of a written input is a new tensor: its offset is from the input's.
        const int64_t base = meta.inputs[info.input].mutates_data ? offsets[info.input] : 0;
        result[j] =
            args[info.input].as_strided(out.sizes(), out.strides(), base + out.storage_offset());
      } else if (grad_mode && std::any_of(args.begin(), args.end(),
                                          [](const at::Tensor& t) { return t.requires_grad(); })) {
        result[j] = out.detach().requires_grad_(true);
      }
      // The views graph replays the capture's detach: the leaf requires grad as its base does.
      if (info.input >= 0 && result[j].is_alias_of(args[info.input]) &&
          args[info.input].requires_grad() && !result[j].requires_grad() && result[j].is_leaf())
        result[j].requires_grad_(true);
      continue;
    }
    if (info.input < 0) continue;
    // The input itself, as eagerly and as PyTorch's runtime returns it: with its own history
    // (a returned graph value would be a view the function made, which a later write of the
    // input's base, by the write-back of another input, breaks for the backward).
    if (info.kind == OutputKind::kIsInput) {
      result[j] = args[info.input];
      continue;
    }
    const InputInfo& in = meta.inputs[info.input];
    // A view replayed under grad mode: of an input written back under autograd, the view of the
    // written input, as eagerly (autograd's view of the write's history); of an input that does
    // not require grad, a view through a detach the function wrote (Note [Writes through detach]
    // in src/transforms/functionalize.cc). The caller's view gets the graph value's history.
    const bool replay_with_grad = args[info.input].requires_grad() || result[j].requires_grad();
    if (replay_with_grad && grad_mode && info.kind == OutputKind::kAliasOfInput && info.view >= 0 &&
        in.mutates_data && !in.mutates_metadata && a.input_views) {
      replayed.push_back(j);
      continue;
    }
    if (args[info.input].requires_grad()) continue;
    if (info.kind == OutputKind::kAliasOfInput && info.view >= 0) {
      result[j] = views[info.view].toTensor();
    } else if (info.kind == OutputKind::kAliasOfInput && meta.inputs[info.input].mutates_data) {
      const at::Tensor& out = result[j];
      result[j] = args[info.input].as_strided(out.sizes(), out.strides(),
                                              offsets[info.input] + out.storage_offset());
    }
  }
  if (replayed.empty()) return result;
  // First the views given their history by a write (view_with_history), then the others, viewed
  // again after those writes: eagerly every view the function returns is taken after its writes
  // (a view taken before a write is, for a split's, an error in the backward).
  std::vector<c10::IValue> grad_views = run_views();
  std::vector<size_t> rest;
  for (size_t j : replayed) {
    const at::Tensor view = grad_views[meta.outputs[j].view].toTensor();
    if (result[j].requires_grad() && !view.requires_grad())
      result[j] = view_with_history(view, result[j], j);
    else
      rest.push_back(j);
  }
  if (rest.size() != replayed.size() && !rest.empty()) grad_views = run_views();
  for (size_t j : rest) {
    at::Tensor view = grad_views[meta.outputs[j].view].toTensor();
    // Eagerly taken before a later write of its storage: autograd regenerates its grad_fn as an
    // as_strided of its base (OutputInfo::grad_fn_from_base).
    if (meta.outputs[j].grad_fn_from_base && view.requires_grad() && view.is_view())
      view =
          at::Tensor(view._base()).as_strided(view.sizes(), view.strides(), view.storage_offset());
    result[j] = view_with_history(view, result[j], j);
  }
  return result;
}

}  // namespace aotgrad
