// aotgrad: inference compilation inside the inference wrapper stack (runtime/wrappers/stack.h).
#include "aotgrad/runtime/compiled_graph.h"

#include <ATen/ATen.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <algorithm>

#include "aotgrad/driver/driver.h"
#include "aotgrad/ir/error.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/runtime/wrappers/stack.h"
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
  plain_ = compile(graph_, "", {});
  by_key_[""] = plain_;
}

int CompiledGraph::num_specializations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(by_key_.size());
}

std::shared_ptr<Specialization> CompiledGraph::compile(std::shared_ptr<const Graph> source,
                                                       std::string key,
                                                       SyntheticBaseInputs inputs) const {
  auto spec = std::make_shared<Specialization>();
  spec->key = std::move(key);
  spec->source = source;
  spec->inputs = std::move(inputs);
  InferenceArtifacts r = compile_for_inference(*source, options_);
  spec->fw = std::move(r.fw);
  spec->meta = std::move(r.meta);
  spec->fn = compile_forward(*compiler_, spec->fw, spec->meta);
  OutputAliasing aliasing;
  aliasing.meta = spec->meta;
  aliasing.output_is_arg = output_is_arg_;
  aliasing.input_views = compile_input_views(std::move(r.input_views));
  spec->runtime = RuntimeWrapper(std::move(aliasing));
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
  MergedInputs merged = merge_view_inputs(*graph_, plan, tensors, /*differentiable=*/false);
  auto spec = compile(merged.graph, key, std::move(merged.inputs));
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
  // R1-R2: the compiled graph's inputs, the caller's arguments or synthetic bases.
  std::vector<c10::IValue> inputs = spec.inputs.inputs(args, spec.inputs.bases(tensors_of(args)));
  return spec.runtime.inference(args, std::move(inputs), spec.fn);  // R3 around R5-R8
}

}  // namespace aotgrad
