// aotgrad: inference compilation with the dedupe, synthetic-base and mutation/alias wrappers.
#include "aotgrad/runtime/compiled_graph.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <algorithm>
#include <functional>
#include <unordered_map>

#include "aotgrad/driver/driver.h"
#include "aotgrad/ir/error.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/runtime/aten_call.h"
#include "aotgrad/runtime/effects.h"
#include "aotgrad/runtime/interpreter.h"
#include "aotgrad/runtime/synthetic_base.h"
#include "aotgrad/runtime/write_back.h"
#include "aotgrad/support/logging.h"
#include "aotgrad/transforms/input_mutations.h"
#include "aotgrad/transforms/passes/decompose.h"

namespace aotgrad {
namespace {

// The caller's tensors (nullptr for a non-tensor argument), as the alias planner takes them.
std::vector<const at::Tensor*> tensors_of(const std::vector<c10::IValue>& args) {
  std::vector<const at::Tensor*> out;
  out.reserve(args.size());
  for (const c10::IValue& a : args) out.push_back(a.isTensor() ? &a.toTensor() : nullptr);
  return out;
}

// The synthetic base of each group for this call: a 1-d tensor over the group's storage.
std::vector<at::Tensor> storage_bases(const std::vector<std::vector<int>>& groups,
                                      const std::vector<const at::Tensor*>& tensors) {
  std::vector<at::Tensor> bases;
  for (const std::vector<int>& group : groups)
    bases.push_back(synthetic_base({*tensors[group[0]]}, group, false));
  return bases;
}

}  // namespace

CompiledGraph::CompiledGraph(std::shared_ptr<const Graph> graph, CompileOptions options,
                             std::shared_ptr<const Compiler> compiler)
    : graph_(std::move(graph)), options_(std::move(options)), compiler_(std::move(compiler)) {
  verify(*graph_);
  graph_ = decompose_composites(graph_);
  mutations_ = std::make_shared<InputMutations>(analyze_input_mutations(*graph_));
  output_is_arg_ = outputs_that_are_args(*graph_);
  for (size_t i = 0; i < mutations_->absolute_views.size(); ++i)
    absolute_written_ = absolute_written_ ||
                        (mutations_->data_mutated[i] && !mutations_->absolute_views[i].empty());
  if (!compiler_) compiler_ = default_compiler();
  plain_ = compile(graph_, "");
  for (size_t i = 0; i < graph_->placeholders().size(); ++i)
    plain_->input_sources.push_back(static_cast<int>(i));
  by_key_[""] = plain_;
}

int CompiledGraph::num_specializations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(by_key_.size());
}

std::shared_ptr<Specialization> CompiledGraph::compile(std::shared_ptr<const Graph> source,
                                                       std::string key) const {
  auto spec = std::make_shared<Specialization>();
  spec->key = std::move(key);
  spec->source = source;
  InferenceArtifacts r = compile_for_inference(*source, options_);
  spec->fw = std::move(r.fw);
  spec->meta = std::move(r.meta);
  // EffectTokensWrapper, innermost: the wrappers below see neither tokens in nor tokens out.
  spec->fn = with_effect_tokens(compiler_->compile(spec->fw), spec->meta.num_tokens);
  if (!r.input_views->output()->args()[0].list.empty()) {
    auto views = std::make_shared<Interpreter>(std::move(r.input_views));
    spec->input_views = [views](std::vector<c10::IValue> args) {
      return views->run(std::move(args));
    };
  }
  return spec;
}

const Specialization& CompiledGraph::specialization_for(const std::vector<c10::IValue>& args) {
  const std::vector<const at::Tensor*> tensors = tensors_of(args);
  AliasPlan plan = plan_aliasing(tensors, *mutations_);
  std::string key = plan.key();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = by_key_.find(key); it != by_key_.end()) return *it->second;
  }
  // A copy of the graph with duplicates merged and grouped views as_strided of a new base.
  MergedInputs merged =
      merge_view_inputs(*graph_, plan, tensors, storage_bases(plan.bases, tensors));
  auto spec = compile(merged.graph, key);
  spec->input_sources = std::move(merged.input_sources);
  spec->synthetic_bases = plan.bases;
  spec->deduped =
      std::any_of(plan.duplicate_of.begin(), plan.duplicate_of.end(), [](int d) { return d >= 0; });
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, fresh] = by_key_.emplace(key, spec);
  return *it->second;
}

std::vector<c10::IValue> CompiledGraph::operator()(std::vector<c10::IValue> args) {
  size_t expected = graph_->placeholders().size();
  if (args.size() != expected)
    throw Error("expected " + std::to_string(expected) + " arguments, got " +
                std::to_string(args.size()));
  // One argument needs no other plan than the plain one, unless absolute_written_ (plan_aliasing).
  const Specialization& spec =
      args.size() > 1 || absolute_written_ ? specialization_for(args) : *plain_;
  // A graph captured under autocast holds its casts: libtorch's autocast must not cast again.
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
  // The compiled graph's inputs: caller arguments and synthetic bases.
  const std::vector<at::Tensor> bases = storage_bases(spec.synthetic_bases, tensors_of(args));
  std::vector<c10::IValue> inputs;
  inputs.reserve(spec.input_sources.size());
  for (int s : spec.input_sources) inputs.push_back(s >= 0 ? args[s] : c10::IValue(bases[-1 - s]));
  std::vector<c10::IValue> targets = inputs;  // what mutations are written back into
  // Eager's views of the inputs (new metadata, outputs that are views of written inputs), taken
  // from the caller's tensors before any metadata write-back.
  std::vector<c10::IValue> views;
  if (spec.input_views) views = spec.input_views(targets);
  // The storage offsets before any write-back, for views the input_views graph could not replay.
  std::vector<int64_t> target_offsets;
  for (auto& t : targets)
    target_offsets.push_back(t.isTensor() && t.toTensor().defined() ? t.toTensor().storage_offset()
                                                                    : 0);
  std::vector<c10::IValue> outs = spec.fn(std::move(inputs));

  const ViewAndMutationMeta& meta = spec.meta;
  size_t n_mut = meta.mutated_inputs_returned.size();
  AOTGRAD_CHECK(outs.size() == n_mut + meta.outputs.size(), "compiled graph returned ", outs.size(),
                " values, expected ", n_mut + meta.outputs.size());
  {
    c10::NoGradGuard no_grad;
    for (size_t k = 0; k < n_mut; ++k) {
      int p = meta.mutated_inputs_returned[k];
      at::Tensor target = targets[p].toTensor();
      const at::Tensor& value = outs[k].toTensor();
      const InputInfo& info = meta.inputs[p];
      // The new geometry is that of eager's view of the input. Failing that: with its data mutated,
      // the input's new value is a view of a fresh tensor laid out as the input (if it is dense),
      // its offset relative to the input's; else it is a view of the input.
      if (info.mutates_metadata && info.view >= 0) {
        const at::Tensor& g = views[info.view].toTensor();
        target.as_strided_(g.sizes(), g.strides(), g.storage_offset());
      } else if (info.mutates_metadata) {
        target.as_strided_(value.sizes(), value.strides(),
                           value.storage_offset() + (info.mutates_data ? target_offsets[p] : 0));
      }
      if (info.mutates_data) write_back(target, value, static_cast<size_t>(p));
    }
  }
  std::vector<c10::IValue> result;
  result.reserve(meta.outputs.size());
  for (size_t j = 0; j < meta.outputs.size(); ++j) {
    const OutputInfo& info = meta.outputs[j];
    c10::IValue& v = outs[n_mut + j];
    if (j < output_is_arg_.size() && output_is_arg_[j] >= 0) {
      result.push_back(args[output_is_arg_[j]]);  // the argument itself (mutations written back)
    } else if (info.kind == OutputKind::kIsInput) {
      int s = spec.input_sources[info.input];
      result.push_back(s >= 0 ? args[s] : c10::IValue(bases[-1 - s]));
    } else if (info.kind == OutputKind::kAliasOfInput && info.view >= 0) {
      result.push_back(
          views[info.view]);  // eager's view of the caller's tensor, which now holds the new data
    } else if (info.kind == OutputKind::kAliasOfInput && meta.inputs[info.input].mutates_data) {
      // The graph computed the view from the new value; regenerate it from the caller's tensor.
      const at::Tensor& target = targets[info.input].toTensor();
      const at::Tensor& out = v.toTensor();
      result.push_back(target.as_strided(out.sizes(), out.strides(),
                                         target_offsets[info.input] + out.storage_offset()));
    } else {
      result.push_back(std::move(v));
    }
  }
  return result;
}

}  // namespace aotgrad
