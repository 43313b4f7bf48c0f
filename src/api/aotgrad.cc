// aotgrad: aot_function -- capture on first call per input signature, compile, cache.
#include "aotgrad/aotgrad.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <map>
#include <mutex>
#include <sstream>

#include "aotgrad/driver/stages.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/runtime/aten_call.h"
#include "aotgrad/runtime/compiled_function.h"
#include "aotgrad/runtime/compiled_graph.h"
#include "aotgrad/runtime/data_parallel.h"
#include "aotgrad/support/logging.h"
#include "aotgrad/transforms/input_mutations.h"
#include "aotgrad/transforms/requires_grad.h"
#include "config_options.h"

namespace aotgrad {
namespace {

bool is_training_call(const std::vector<at::Tensor>& args) {
  if (!at::GradMode::is_enabled()) return false;
  for (const at::Tensor& t : args)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

/// One compilation: the captured graph over the distinct arguments and its compiled form.
struct Compilation {
  std::vector<size_t> unique;  // argument positions passed to the graph (first occurrences)
  std::shared_ptr<const Graph> graph;
  std::vector<at::Tensor> constants;  // values of the graph's lifted tensor constants, after args
  std::unique_ptr<CompiledFunction> train;
  std::unique_ptr<CompiledGraph> infer;
  bool downgraded = false;  // a training call compiled for inference (§13.11): run under no_grad
};

// The lines of two input signatures (input_signature: the mode, then "I: ..." per argument) that
// differ: "mode: train -> inference", "argument 0: f32[4][1]cpu -> f32[8][1]cpu".
std::string signature_difference(const std::string& before, const std::string& now) {
  auto lines = [](const std::string& s) {
    std::vector<std::string> out;
    std::istringstream in(s);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
  };
  // "I: VALUE" -> {"I", "VALUE"}; the mode line has no key.
  auto split = [](const std::string& l, size_t line) -> std::pair<std::string, std::string> {
    size_t c = l.find(": ");
    if (line == 0 || c == std::string::npos) return {"", l};
    return {l.substr(0, c), l.substr(c + 2)};
  };
  std::vector<std::string> a = lines(before), b = lines(now);
  std::string diff;
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    auto [ka, va] =
        i < a.size() ? split(a[i], i) : std::pair<std::string, std::string>{"", "(none)"};
    auto [kb, vb] =
        i < b.size() ? split(b[i], i) : std::pair<std::string, std::string>{"", "(none)"};
    if (ka == kb && va == vb) continue;
    diff += i == 0 ? "\n    - mode: " : "\n    - argument " + (kb.empty() ? ka : kb) + ": ";
    diff += va + " -> " + vb;
  }
  return diff;
}

}  // namespace

struct AOTFunction::State {
  TensorFunction fn;
  AOTConfig config;
  mutable std::mutex mu;
  std::map<std::string, std::shared_ptr<Compilation>> cache;
  std::string last_key;  // the signature compiled last, for the recompiles log
  /// Data parallel: whether the first compilation broadcast the parameters from rank 0.
  mutable bool params_broadcast = false;

  std::shared_ptr<Compilation> compile(const std::vector<at::Tensor>& args, bool training) const;
  /// Data parallel: the stage that all-reduces the parameters' gradients, for the distinct
  /// arguments of `c` (and its constants, never reduced).
  DataParallelOptions data_parallel_options(const Compilation& c,
                                            const std::vector<at::Tensor>& args) const;
  /// Data parallel, once compiled: the cross-rank check, then (first compilation) the broadcast.
  void synchronize(const Compilation& c, const std::vector<at::Tensor>& args,
                   const DataParallelOptions& o) const;
};

DataParallelOptions AOTFunction::State::data_parallel_options(
    const Compilation& c, const std::vector<at::Tensor>& args) const {
  DataParallelOptions o;
  o.group_name = data_parallel_group(config);
  o.group_size = process_group_place(o.group_name).size;
  o.reduction = config.grad_reduction;
  o.bucket_cap_bytes = config.bucket_cap_bytes;
  o.first_bucket_cap_bytes = config.first_bucket_cap_bytes;
  const std::vector<bool>& params = config.data_parallel_params;
  AOTGRAD_CHECK(params.empty() || params.size() == args.size(), "aot_function: ", params.size(),
                " data_parallel_params flags for ", args.size(), " arguments");
  for (size_t i : c.unique)
    o.reduce.push_back(args[i].requires_grad() && (params.empty() || params[i]));
  for (const Node* p : c.graph->placeholders()) o.names.push_back(p->name());
  o.reduce.resize(o.names.size(), false);
  return o;
}

void AOTFunction::State::synchronize(const Compilation& c, const std::vector<at::Tensor>& args,
                                     const DataParallelOptions& o) const {
  const TrainingArtifacts& a = c.train->artifacts();
  std::string partition = std::to_string(a.num_forward_outputs) + " forward outputs; saved:";
  for (const std::string& n : a.saved) partition += " " + n;
  BucketPlan plan = read_bucket_plan(*a.bw, o.names);
  if (a.cache_hit && log_settings().collectives)
    log_text("collectives: gradient buckets (from the compile cache)\n" + plan.text());
  check_same_on_every_rank(o.group_name,
                           {{"forward graph", print_graph(*a.fw)},
                            {"backward graph", print_graph(*a.bw)},
                            {"partition", partition},
                            {"bucket plan", plan.text()}},
                           "data parallel: the compile check");
  if (params_broadcast) return;
  std::vector<at::Tensor> params;
  std::vector<std::string> names;
  for (size_t k = 0; k < c.unique.size(); ++k)
    if (o.reduce[k]) {
      params.push_back(args[c.unique[k]]);
      names.push_back(o.names[k]);
    }
  broadcast_from_rank0(o.group_name, params, names);
  params_broadcast = true;
}

std::string input_signature(const std::vector<at::Tensor>& args) {
  std::string key = is_training_call(args) ? "train" : "inference";
  // A capture under autocast records its casts (capture.h): the autocast state is part of the key.
  if (at::autocast::is_cpu_enabled())
    key += std::string("\nautocast: cpu ") + c10::toString(at::autocast::get_autocast_cpu_dtype());
  for (size_t i = 0; i < args.size(); ++i) {
    const at::Tensor& t = args[i];
    key += "\n" + std::to_string(i) + ": ";
    AOTGRAD_CHECK(t.defined(), "aot_function: argument ", i, " is an undefined tensor");
    key += tensor_meta_of(t).annotation();
    if (t.requires_grad()) key += " requires_grad";
    for (size_t j = 0; j < i; ++j) {
      const at::Tensor& u = args[j];
      if (u.unsafeGetTensorImpl() == t.unsafeGetTensorImpl()) {
        key += " is " + std::to_string(j);
        break;
      }
      if (u.has_storage() && t.has_storage() && u.storage().is_alias_of(t.storage())) {
        key += " shares storage with " + std::to_string(j) + " at offsets " +
               std::to_string(u.storage_offset()) + ", " + std::to_string(t.storage_offset());
        break;
      }
    }
  }
  return key;
}

std::shared_ptr<Compilation> AOTFunction::State::compile(const std::vector<at::Tensor>& args,
                                                         bool training) const {
  auto c = std::make_shared<Compilation>();
  std::vector<int> position(args.size());  // argument -> index among the distinct ones
  for (size_t i = 0; i < args.size(); ++i) {
    position[i] = static_cast<int>(c->unique.size());
    for (size_t k = 0; k < c->unique.size(); ++k)
      if (args[c->unique[k]].unsafeGetTensorImpl() == args[i].unsafeGetTensorImpl())
        position[i] = static_cast<int>(k);
    if (position[i] == static_cast<int>(c->unique.size())) c->unique.push_back(i);
  }
  std::vector<at::Tensor> distinct;
  for (size_t i : c->unique) distinct.push_back(args[i]);
  CaptureOptions capture_options;
  if (!config.input_names.empty()) {
    AOTGRAD_CHECK(config.input_names.size() == args.size(),
                  "aot_function: ", config.input_names.size(), " input names for ", args.size(),
                  " arguments");
    for (size_t i : c->unique) capture_options.input_names.push_back(config.input_names[i]);
  }
  // The function sees every argument, the same tensor where the caller passed one twice.
  TensorFunction on_distinct = [this, &position](const std::vector<at::Tensor>& d) {
    std::vector<at::Tensor> full;
    full.reserve(position.size());
    for (int p : position) full.push_back(d[p]);
    return fn(full);
  };
  capture_options.lifted_constants = &c->constants;
  c->graph = capture(on_distinct, distinct, capture_options);
  // Views of one storage train as independent inputs unless the function writes one that overlaps
  // another (PyTorch's merge_view_inputs then makes a synthetic base, §13.23, which training
  // compilation does not do yet).
  if (training) {
    InputMutations mut = analyze_input_mutations(*c->graph);
    auto o = find_written_overlap(
        distinct, [&](size_t i) { return mut.data_mutated[i] || mut.metadata_mutated[i]; });
    AOTGRAD_CHECK(!o, "aot_function: arguments ", c->unique[o->first], " and ",
                  c->unique[o->second],
                  " are overlapping views of one storage and the function writes argument ",
                  c->unique[o->written],
                  ", which training compilation does not support yet (a synthetic base); pass "
                  "the base instead, clone one of them, or call under no_grad");
  }
  // The captured graph holds autocast's casts; the compilation runs without autocast.
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);

  std::vector<bool> requires_grad;
  for (const at::Tensor& t : distinct) requires_grad.push_back(training && t.requires_grad());
  requires_grad.resize(requires_grad.size() + c->constants.size(), false);
  // §13.11: no output requires grad and no input that requires grad is mutated: an inference
  // graph, run under no_grad.
  if (training && !needs_autograd(*c->graph, requires_grad)) {
    training = false;
    c->downgraded = true;
  }
  if (training) {
    TrainOptions options{config.fw_compiler, config.bw_compiler, compile_options(config),
                         config.debug_assert};
    // The primals that are parameters or buffers (free to save), by distinct argument.
    std::vector<bool>& lifetime = options.pipeline.min_cut.static_lifetime_inputs;
    lifetime.clear();
    for (size_t i : c->unique) lifetime.push_back(i < config.num_params_buffers);
    const bool data_parallel = config.data_parallel != DataParallelMode::kNone;
    DataParallelOptions dp;
    if (data_parallel) {
      dp = data_parallel_options(*c, args);
      options.pipeline.extra_stages.push_back(
          {PipelineKind::kTraining, "partition", false, [dp] { return data_parallel_stage(dp); }});
    }
    c->train =
        std::make_unique<CompiledFunction>(c->graph, std::move(requires_grad), std::move(options));
    if (data_parallel) synchronize(*c, args, dp);
  } else {
    c->infer = std::make_unique<CompiledGraph>(c->graph, compile_options(config),
                                               config.inference_compiler);
  }
  return c;
}

AOTFunction::AOTFunction(TensorFunction fn, AOTConfig config) : state_(std::make_shared<State>()) {
  AOTGRAD_CHECK(fn, "aot_function: the function is empty");
  check_config(config, "aot_function");
  state_->fn = std::move(fn);
  state_->config = std::move(config);
}

std::vector<at::Tensor> AOTFunction::operator()(const std::vector<at::Tensor>& args) const {
  const std::string key = input_signature(args);
  const bool training = is_training_call(args);
  std::shared_ptr<Compilation> c;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    auto it = state_->cache.find(key);
    if (it == state_->cache.end()) {
      if (!state_->cache.empty() && log_settings().recompiles)
        log_text("Recompiling function (compilation " + std::to_string(state_->cache.size() + 1) +
                 "): its input signature differs from every compiled one; from the last:" +
                 signature_difference(state_->last_key, key));
      it = state_->cache.emplace(key, state_->compile(args, training)).first;
      state_->last_key = key;
    }
    c = it->second;
  }
  std::vector<at::Tensor> distinct;
  for (size_t i : c->unique) distinct.push_back(args[i]);
  distinct.insert(distinct.end(), c->constants.begin(), c->constants.end());
  if (c->train) return (*c->train)(distinct);
  std::optional<at::NoGradGuard> no_grad;
  if (c->downgraded) no_grad.emplace();
  std::vector<c10::IValue> outs =
      (*c->infer)(std::vector<c10::IValue>(distinct.begin(), distinct.end()));
  std::vector<at::Tensor> result;
  result.reserve(outs.size());
  for (const c10::IValue& v : outs) result.push_back(v.isTensor() ? v.toTensor() : at::Tensor());
  return result;
}

std::optional<bool> AOTFunction::trains(const std::vector<at::Tensor>& args) const {
  const std::string key = input_signature(args);
  std::lock_guard<std::mutex> lock(state_->mu);
  auto it = state_->cache.find(key);
  if (it == state_->cache.end()) return std::nullopt;
  return it->second->train != nullptr;
}

size_t AOTFunction::num_compilations() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->cache.size();
}

std::shared_ptr<const Graph> AOTFunction::captured_graph(
    const std::vector<at::Tensor>& args) const {
  const std::string key = input_signature(args);
  std::lock_guard<std::mutex> lock(state_->mu);
  auto it = state_->cache.find(key);
  return it == state_->cache.end() ? nullptr : it->second->graph;
}

AOTFunction aot_function(TensorFunction fn, AOTConfig config) {
  return AOTFunction(std::move(fn), std::move(config));
}

}  // namespace aotgrad
