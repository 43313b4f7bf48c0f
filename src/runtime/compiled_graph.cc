// aotgrad: inference compilation with the dedupe, synthetic-base and mutation/alias wrappers.
#include "aotgrad/runtime/compiled_graph.h"

#include <ATen/ATen.h>
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
#include "aotgrad/support/logging.h"
#include "aotgrad/transforms/decompose.h"
#include "aotgrad/transforms/input_mutations.h"

namespace aotgrad {
namespace {

// The byte range a tensor's elements can touch in its storage: [begin, end).
std::pair<int64_t, int64_t> byte_range(const at::Tensor& t) {
  if (t.numel() == 0) return {0, 0};
  int64_t last = t.storage_offset();
  for (int64_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
  int64_t es = static_cast<int64_t>(t.element_size());
  return {t.storage_offset() * es, (last + 1) * es};
}

// How the caller's arguments alias: duplicates to merge and groups to give a synthetic base.
struct AliasPlan {
  std::vector<int> duplicate_of;        // per arg: the earlier identical arg it merges into, or -1
  std::vector<std::vector<int>> bases;  // groups of distinct args sharing a synthetic base
  std::string key() const {
    std::string k;
    for (size_t i = 0; i < duplicate_of.size(); ++i)
      if (duplicate_of[i] >= 0)
        k += "d" + std::to_string(i) + "=" + std::to_string(duplicate_of[i]) + ";";
    for (auto& g : bases) {
      k += "b";
      for (int i : g) k += std::to_string(i) + ",";
      k += ";";
    }
    return k;
  }
};

AliasPlan plan_aliasing(const std::vector<c10::IValue>& args, const InputMutations& mut) {
  AliasPlan plan;
  size_t n = args.size();
  plan.duplicate_of.assign(n, -1);
  auto mutated = [&](size_t i) {
    return i < mut.data_mutated.size() && (mut.data_mutated[i] || mut.metadata_mutated[i]);
  };
  auto tensor = [&](size_t i) -> const at::Tensor* {
    return args[i].isTensor() && args[i].toTensor().defined() ? &args[i].toTensor() : nullptr;
  };
  // Identical tensors: merged only when one of them is mutated (§13.24).
  for (size_t j = 0; j < n; ++j) {
    const at::Tensor* tj = tensor(j);
    if (!tj) continue;
    for (size_t i = 0; i < j; ++i) {
      const at::Tensor* ti = tensor(i);
      if (ti && plan.duplicate_of[i] < 0 &&
          ti->unsafeGetTensorImpl() == tj->unsafeGetTensorImpl() && (mutated(i) || mutated(j))) {
        plan.duplicate_of[j] = static_cast<int>(i);
        break;
      }
    }
  }
  // Distinct views of one storage: a synthetic base when one is mutated and some overlap (§13.23).
  std::vector<bool> grouped(n);
  for (size_t i = 0; i < n; ++i) {
    const at::Tensor* ti = tensor(i);
    if (!ti || grouped[i] || plan.duplicate_of[i] >= 0 || !ti->has_storage()) continue;
    std::vector<int> group{static_cast<int>(i)};
    for (size_t j = i + 1; j < n; ++j) {
      const at::Tensor* tj = tensor(j);
      if (!tj || plan.duplicate_of[j] >= 0 || !tj->has_storage()) continue;
      if (tj->unsafeGetTensorImpl() == ti->unsafeGetTensorImpl())
        continue;  // unmutated duplicate: kept
      if (tj->storage().unsafeGetStorageImpl() == ti->storage().unsafeGetStorageImpl())
        group.push_back(static_cast<int>(j));
    }
    if (group.size() < 2) continue;
    // Only data mutations need a base: a metadata mutation changes one tensor, not the storage.
    bool any_mutated = false, any_overlap = false;
    for (int a : group) any_mutated = any_mutated || mut.data_mutated.at(a);
    for (size_t x = 0; x < group.size(); ++x)
      for (size_t y = x + 1; y < group.size(); ++y)
        any_overlap = any_overlap || overlapping_views(*tensor(group[x]), *tensor(group[y]));
    if (!any_mutated || !any_overlap) continue;
    for (int a : group) {
      grouped[a] = true;
      if (mut.metadata_mutated.at(a))
        throw Error("argument " + std::to_string(a) +
                    " overlaps another argument that the graph writes, and the "
                    "graph changes its metadata (t_, transpose_, ...): not supported with a "
                    "synthetic base (clone "
                    "one of them)");
      if (tensor(a)->scalar_type() != ti->scalar_type())
        throw Error("arguments " + std::to_string(i) + " and " + std::to_string(a) +
                    " are overlapping views of one storage with different dtypes; aotgrad cannot "
                    "give them a "
                    "synthetic base (clone one of them)");
    }
    plan.bases.push_back(group);
  }
  return plan;
}

// A tensor spanning the whole storage of `t`, 1-d and contiguous: the synthetic base.
at::Tensor storage_base(const at::Tensor& t) {
  int64_t numel = static_cast<int64_t>(t.storage().nbytes() / t.element_size());
  return at::empty({0}, t.options()).set_(t.storage(), 0, {numel}, {1});
}

Arg int_list(c10::IntArrayRef v) {
  std::vector<int64_t> x(v.begin(), v.end());
  return Arg::of_ints(x);
}

}  // namespace

bool overlapping_views(const at::Tensor& a, const at::Tensor& b) {
  if (!a.has_storage() || !b.has_storage() || !a.storage().is_alias_of(b.storage())) return false;
  auto [a0, a1] = byte_range(a);
  auto [b0, b1] = byte_range(b);
  return a0 < b1 && b0 < a1;
}

std::optional<WrittenOverlap> find_written_overlap(const std::vector<at::Tensor>& args,
                                                   const std::function<bool(size_t)>& written) {
  for (size_t a = 0; a < args.size(); ++a)
    for (size_t b = 0; b < a; ++b) {
      if (!overlapping_views(args[a], args[b])) continue;
      for (size_t w : {b, a})
        if (written(w)) return WrittenOverlap{b, a, w};
    }
  return std::nullopt;
}

CompiledGraph::CompiledGraph(std::shared_ptr<const Graph> graph, CompileOptions options,
                             std::shared_ptr<const Compiler> compiler)
    : graph_(std::move(graph)), options_(std::move(options)), compiler_(std::move(compiler)) {
  verify(*graph_);
  graph_ = decompose_composites(graph_);
  mutations_ = std::make_shared<InputMutations>(analyze_input_mutations(*graph_));
  output_is_arg_ = outputs_that_are_args(*graph_);
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
  AliasPlan plan = plan_aliasing(args, *mutations_);
  std::string key = plan.key();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = by_key_.find(key); it != by_key_.end()) return *it->second;
  }
  // Rewrite a copy of the graph: merge duplicates, make grouped views as_strided of a new base.
  std::shared_ptr<Graph> g = graph_->clone();
  std::vector<Node*> phs = g->placeholders();
  Node* first_body = phs.empty() ? g->output() : phs.back()->next();
  std::vector<int> sources;
  std::vector<bool> removed(phs.size());
  for (size_t j = 0; j < phs.size(); ++j) {
    if (plan.duplicate_of[j] < 0) continue;
    g->replace_all_uses_with(phs[j], phs[plan.duplicate_of[j]]);
    removed[j] = true;
  }
  std::vector<Node*> base_nodes;
  for (size_t b = 0; b < plan.bases.size(); ++b) {
    const at::Tensor& any = args[plan.bases[b][0]].toTensor();
    int64_t numel = static_cast<int64_t>(any.storage().nbytes() / any.element_size());
    TensorMeta bm =
        make_tensor_meta(from_c10(any.scalar_type()), {SymInt(numel)}, from_c10(any.device()));
    Node* base = g->add_placeholder(g->unique_name("base"), ValueMeta::of(bm));
    base_nodes.push_back(base);
    g->set_insertion_point(first_body);
    for (int a : plan.bases[b]) {
      const at::Tensor& t = args[a].toTensor();
      Node* view = g->add_call(
          aten_ops().get("aten::as_strided"),
          {Arg(base), int_list(t.sizes()), int_list(t.strides()), Arg::of_int(t.storage_offset())});
      g->replace_all_uses_with(phs[a], view);
      removed[a] = true;
    }
    g->set_insertion_point(nullptr);
  }
  for (size_t j = 0; j < phs.size(); ++j) {
    if (removed[j])
      g->erase(phs[j]);
    else
      sources.push_back(static_cast<int>(j));
  }
  for (size_t b = 0; b < plan.bases.size(); ++b) sources.push_back(-1 - static_cast<int>(b));
  auto spec = compile(g, key);
  spec->input_sources = std::move(sources);
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
  const Specialization& spec = args.size() > 1 ? specialization_for(args) : *plain_;
  // A graph captured under autocast holds its casts: libtorch's autocast must not cast again.
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
  // The compiled graph's inputs: caller arguments and synthetic bases.
  std::vector<at::Tensor> bases;
  for (auto& group : spec.synthetic_bases) bases.push_back(storage_base(args[group[0]].toTensor()));
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
    at::NoGradGuard no_grad;
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
      if (info.mutates_data) target.copy_(value);
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
