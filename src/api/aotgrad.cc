// aotgrad: aot_function -- capture on first call per input signature, compile, cache.
#include "aotgrad/aotgrad.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <c10/core/GradMode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "aotgrad/driver/driver.h"
#include "aotgrad/driver/stages.h"
#include "aotgrad/frontend/dynamic_capture.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/providers/aten_call.h"
#include "aotgrad/runtime/compiled_function.h"
#include "aotgrad/runtime/compiled_graph.h"
#include "aotgrad/runtime/distributed/data_parallel.h"
#include "aotgrad/runtime/wrappers/stack.h"
#include "aotgrad/support/logging.h"
#include "aotgrad/transforms/input_mutations.h"
#include "config_options.h"

namespace aotgrad {
namespace {

bool is_training_call(const std::vector<at::Tensor>& args) {
  if (!c10::GradMode::is_enabled()) return false;
  for (const at::Tensor& t : args)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

/// One compilation: the captured graph over the distinct arguments and its compiled form.
struct Compilation {
  /// R1-R2 (runtime/wrappers/stack.h): the distinct arguments, and with overlapping views that the
  /// function writes in training (§13.23, AOTSyntheticBaseWrapper) the groups of them regenerated
  /// from one base each.
  ArgumentWrappers wrappers;
  std::shared_ptr<const Graph> graph;
  std::vector<at::Tensor> constants;  // values of the graph's lifted tensor constants, after args
  std::unique_ptr<CompiledFunction> train;
  std::unique_ptr<CompiledGraph> infer;
  bool downgraded = false;  // a training call compiled for inference (§13.11): run under no_grad
  std::string family;       // input_family of the call it was compiled for
  std::vector<std::vector<int64_t>> sizes;  // the distinct arguments' sizes then
  std::shared_ptr<DynamicCapture> dynamic;  // a dynamic compilation: its symbols and guards
  /// The compiled graph's tensor inputs for a call: the distinct arguments (synthetic bases in the
  /// place of the views they regenerate), then the lifted constants.
  std::vector<at::Tensor> graph_inputs(const std::vector<at::Tensor>& args) const {
    return wrappers.inputs(args, constants);
  }
  const std::vector<size_t>& unique() const { return wrappers.dedupe.unique; }
};

std::string dims_text(const DynamicCapture& d, const Graph& g) {
  std::string s;
  std::vector<Node*> ph = g.placeholders();
  for (size_t i = 0; i < d.points.sources.size(); ++i) {
    const SymbolSource& src = d.points.sources[i];
    s += (i ? ", " : "") + symbol_name(i) + " = " + ph[src.input]->name() + ".size()[" +
         std::to_string(src.dim) + "]" +
         (src.divisor == 1 ? "" : " // " + std::to_string(src.divisor)) + " (hint " +
         std::to_string(d.points.points[0][i]) + ")";
  }
  s += "; guards:";
  for (const std::string& guard : d.guards) s += " " + guard + ";";
  s.pop_back();
  // How (Note [One symbolic trace] in frontend/dynamic_capture.cc).
  if (d.symbolic_trace) return s + "\n    traced once with symbolic sizes";
  std::string why = d.unified_because.substr(0, d.unified_because.find('\n'));
  if (why.size() > 240) why = why.substr(0, 240) + "...";
  return s + "\n    traced at three sizes and unified" + (why.empty() ? "" : ": " + why);
}

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
  std::map<std::string, std::shared_ptr<Compilation>> cache;  // static, by input signature
  std::vector<std::shared_ptr<Compilation>> dynamic;          // dynamic, oldest first
  /// Input signatures a dynamic compilation served, so that a size seen before is one lookup,
  /// not a guard evaluation.
  std::map<std::string, std::shared_ptr<Compilation>> served;
  std::string last_key;  // the signature compiled last, for the recompiles log
  /// Data parallel: whether the first compilation broadcast the parameters from rank 0.
  mutable bool params_broadcast = false;
  /// Families (input_family) whose dynamic capture failed without marked dimensions: later new
  /// sizes compile static sizes at once rather than tracing at other sizes again.
  mutable std::set<std::string> static_only;
  /// None arguments: per pattern of undefined arguments (true: absent), the function of the
  /// defined ones it compiles as (without_absent).
  std::map<std::vector<bool>, AOTFunction> absent;

  /// An undefined tensor argument is None, as in PyTorch: calls with undefined arguments go to a
  /// function of the defined ones only, one per pattern of absent arguments, which compiles its
  /// own specializations (a later defined tensor there is another signature: it recompiles); the
  /// absent arguments get no gradient. nullptr when every argument is defined.
  const AOTFunction* without_absent(const std::vector<at::Tensor>& args);
  std::shared_ptr<Compilation> compile(const std::vector<at::Tensor>& args, bool training,
                                       const std::string& family, std::string* note) const;
  /// The compilation that serves `args` (under `mu`): the static one of its signature, else the
  /// newest dynamic one of its family whose guards hold -- a size guard that fails (a size 0 or
  /// 1) is checked by capturing at that size, and passes when the graph is the same. nullptr,
  /// with the failed guard of the newest dynamic one in `failed`, when none serves.
  std::shared_ptr<Compilation> find(const std::vector<at::Tensor>& args, const std::string& key,
                                    const std::string& family, std::string* failed = nullptr);
  /// The dimensions (by distinct argument) a new compilation of `args` makes symbols, and
  /// whether they are the ones the user marked.
  std::vector<DynamicDim> dynamic_dims(const std::vector<at::Tensor>& args,
                                       const Compilation& c) const;
  CaptureOptions capture_options(Compilation& c) const;
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
  for (size_t i : c.unique())
    o.reduce.push_back(args[i].requires_grad() && (params.empty() || params[i]));
  for (const Node* p : c.graph->placeholders()) o.names.push_back(p->name());
  o.reduce.resize(o.names.size(), false);
  // Sharded parameters' gradients are reduce-scattered by the graph itself, then averaged.
  if (config.data_parallel == DataParallelMode::kSharded) {
    o.sharded.swap(o.reduce);
    o.reduce.assign(o.names.size(), false);
  }
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
  // Sharded parameters are each rank's own blocks (aot_module cut them from rank 0's values).
  if (params_broadcast || config.data_parallel == DataParallelMode::kSharded) return;
  std::vector<at::Tensor> params;
  std::vector<std::string> names;
  for (size_t k = 0; k < c.unique().size(); ++k)
    if (o.reduce[k]) {
      params.push_back(args[c.unique()[k]]);
      names.push_back(o.names[k]);
    }
  broadcast_from_rank0(o.group_name, params, names);
  params_broadcast = true;
}

namespace {
// The input signature; without sizes (each argument's dtype, rank and device, requires_grad and
// aliasing), the family whose calls a dynamic compilation may serve.
std::string signature_of(const std::vector<at::Tensor>& args, bool with_sizes) {
  std::string key = is_training_call(args) ? "train" : "inference";
  // A capture under autocast records its casts (capture.h): the autocast state is part of the key.
  if (std::optional<c10::ScalarType> autocast = cpu_autocast_dtype())
    key += std::string("\nautocast: cpu ") + c10::toString(*autocast);
  for (size_t i = 0; i < args.size(); ++i) {
    const at::Tensor& t = args[i];
    key += "\n" + std::to_string(i) + ": ";
    if (!t.defined()) {  // None (AOTFunction::State::without_absent)
      key += "None";
      continue;
    }
    TensorMeta m = tensor_meta_of(t);
    if (!with_sizes) {
      m.sizes.assign(m.sizes.size(), -1);
      m.strides.assign(m.strides.size(), -1);
      m.storage_offset = -1;
    }
    key += m.annotation();
    if (t.requires_grad()) key += " requires_grad";
    // Written, its synthetic base is its autograd base (strided_past_its_view): of that geometry.
    if (strided_past_its_view(t))
      key += " strided past its view of base " + tensor_meta_of(at::Tensor(t._base())).annotation();
    for (size_t j = 0; j < i; ++j) {
      const at::Tensor& u = args[j];
      if (u.unsafeGetTensorImpl() == t.unsafeGetTensorImpl()) {
        key += " is " + std::to_string(j);
        break;
      }
      if (u.has_storage() && t.has_storage() && u.storage().is_alias_of(t.storage())) {
        key += " shares storage with " + std::to_string(j) + " at offsets " +
               std::to_string(u.storage_offset()) + ", " + std::to_string(t.storage_offset());
        // The geometry a synthetic base would have (the autograd base, else the storage).
        key += t.is_view() ? " of base " + tensor_meta_of(at::Tensor(t._base())).annotation() +
                                 (t._base().requires_grad() ? " requires_grad" : "")
                           : " of a storage of " + std::to_string(t.storage().nbytes()) + " bytes";
        break;
      }
    }
  }
  return key;
}
}  // namespace

std::string input_signature(const std::vector<at::Tensor>& args) {
  return signature_of(args, true);
}

CaptureOptions AOTFunction::State::capture_options(Compilation& c) const {
  CaptureOptions o;
  if (!config.input_names.empty()) {
    AOTGRAD_CHECK(config.input_names.size() == c.wrappers.dedupe.position.size(),
                  "aot_function: ", config.input_names.size(), " input names for ",
                  c.wrappers.dedupe.position.size(), " arguments");
    for (size_t i : c.unique()) o.input_names.push_back(config.input_names[i]);
  }
  o.lifted_constants = &c.constants;
  return o;
}

std::vector<DynamicDim> AOTFunction::State::dynamic_dims(const std::vector<at::Tensor>& args,
                                                         const Compilation& c) const {
  std::vector<DynamicDim> dims;
  if (config.dynamic == DynamicMode::kOff) return dims;
  for (const auto& [i, marked] : config.dynamic_dims) {
    AOTGRAD_CHECK(i < args.size(), "aot_function: dynamic_dims marks argument ", i, " of ",
                  args.size());
    for (int64_t d : marked) {
      const int64_t n = args[i].dim();
      AOTGRAD_CHECK(d >= -n && d < n, "aot_function: dynamic_dims marks dimension ", d,
                    " of argument ", i, ", which has ", n);
      dims.push_back({static_cast<size_t>(c.wrappers.dedupe.position[i]), d < 0 ? d + n : d});
    }
  }
  auto unmarked = [&](size_t k) { return c.unique()[k] >= config.num_params_buffers; };
  if (config.dynamic == DynamicMode::kOn) {
    for (size_t k = 0; k < c.unique().size(); ++k)
      for (int64_t d = 0; unmarked(k) && d < args[c.unique()[k]].dim(); ++d)
        if (args[c.unique()[k]].size(d) >= 2) dims.push_back({k, d});
    return dims;
  }
  // kAuto: the dimensions whose sizes differ from a compilation of this family, and those an
  // earlier dynamic one made symbols.
  auto seen = [&](const std::shared_ptr<Compilation>& o) {
    if (o->family != c.family) return;
    for (size_t k = 0; k < c.unique().size(); ++k)
      for (int64_t d = 0; unmarked(k) && d < args[c.unique()[k]].dim(); ++d)
        if (o->sizes[k][d] != args[c.unique()[k]].size(d)) dims.push_back({k, d});
    if (o->dynamic)
      for (const auto& [dim, sym] : o->dynamic->dims) dims.push_back(dim);
  };
  for (const auto& [key, o] : cache) seen(o);
  for (const auto& o : dynamic) seen(o);
  return dims;
}

std::shared_ptr<Compilation> AOTFunction::State::find(const std::vector<at::Tensor>& args,
                                                      const std::string& key,
                                                      const std::string& family,
                                                      std::string* failed) {
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  if (auto it = served.find(key); it != served.end()) return it->second;
  std::string first_failure;
  for (auto it = dynamic.rbegin(); it != dynamic.rend(); ++it) {
    Compilation& c = **it;
    if (c.family != family) continue;
    std::vector<at::Tensor> distinct = c.wrappers.dedupe.distinct(args);
    std::string why;
    if (bind_dynamic(*c.dynamic, distinct, &why)) return served[key] = *it;
    if (auto values = bind_dynamic(*c.dynamic, distinct, nullptr, false)) {
      if (same_graph_at(*c.dynamic, c.wrappers.dedupe.on_distinct(fn), distinct, *values,
                        capture_options(c))) {
        for (size_t i = 0; i < values->size(); ++i)
          if ((*values)[i] < 2) c.dynamic->verified_small[i].push_back((*values)[i]);
        if (log_settings().recompiles)
          log_text("Guard " + why +
                   " failed; the function traced at that size is the same "
                   "graph: the dynamic compilation serves it");
        return served[key] = *it;
      }
      why += ", and the function traced at that size is another graph";
    }
    if (first_failure.empty()) first_failure = why;
  }
  if (failed) *failed = first_failure;
  return nullptr;
}

std::shared_ptr<Compilation> AOTFunction::State::compile(const std::vector<at::Tensor>& args,
                                                         bool training, const std::string& family,
                                                         std::string* note) const {
  auto c = std::make_shared<Compilation>();
  c->family = family;
  c->wrappers.dedupe = DedupedArgs::of(args);  // R1
  std::vector<at::Tensor> distinct = c->wrappers.dedupe.distinct(args);
  for (const at::Tensor& t : distinct) c->sizes.push_back(t.sizes().vec());
  const CaptureOptions options = capture_options(*c);
  const TensorFunction traced = c->wrappers.dedupe.on_distinct(fn);
  std::vector<DynamicDim> dims = dynamic_dims(args, *c);
  if (config.dynamic_dims.empty() && static_only.count(family)) dims.clear();
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  if (!dims.empty()) {
    std::string error;
    auto attempt = [&](const std::vector<DynamicDim>& d) -> bool {
      try {
        c->dynamic =
            std::make_shared<DynamicCapture>(capture_dynamic(traced, distinct, d, options));
        return true;
      } catch (const Error& e) {
        if (error.empty()) error = e.what();
        return false;
      }
    };
    if (!attempt(dims)) {
      AOTGRAD_CHECK(config.dynamic_dims.empty(),
                    "aot_function: the dimensions marked dynamic "
                    "cannot all be symbols: ",
                    error);
      // dynamic=True: the dimensions that can be symbols on their own, together (the others
      // are specialized, as PyTorch's guards specialize what the function needs static).
      std::vector<DynamicDim> able;
      if (config.dynamic == DynamicMode::kOn && dims.size() > 1)
        for (const DynamicDim& d : dims)
          if (attempt({d})) able.push_back(d);
      if (able.empty() || !attempt(able)) {
        c->dynamic.reset();
        static_only.insert(family);
        if (note) *note = "\n    dynamic sizes failed (" + error + "): compiled with static sizes";
      }
    }
  }
  if (c->dynamic) {
    c->graph = c->dynamic->graph;
    if (note) *note = "\n    compiled with dynamic sizes: " + dims_text(*c->dynamic, *c->graph);
  } else {
    c->graph = capture(traced, distinct, options);
  }
  // R2: views of one storage train as independent inputs unless the function writes one that
  // overlaps another: then PyTorch's merge_view_inputs gives them one base (§13.23), their
  // autograd base, and the graph regenerates them from it with as_strided.
  if (training) {
    // The placeholders' tensors: constants last.
    std::vector<at::Tensor> inputs = c->wrappers.distinct(args, c->constants);
    std::vector<const at::Tensor*> tensors;
    for (const at::Tensor& t : inputs) tensors.push_back(&t);
    AliasPlan plan = plan_aliasing(tensors, analyze_input_mutations(*c->graph), true);
    if (!plan.bases.empty()) {
      AOTGRAD_CHECK(config.data_parallel == DataParallelMode::kNone,
                    "aot_function: arguments that are overlapping views written by the function "
                    "(a synthetic base) are not supported with data parallel training");
      if (c->dynamic) {  // the views' geometry is part of the graph: static sizes
        c->dynamic.reset();
        c->graph = capture(traced, distinct, options);
        if (note) *note = "\n    compiled with static sizes: synthetic bases of written views";
      }
      MergedInputs merged = merge_view_inputs(*c->graph, plan, tensors, /*differentiable=*/true,
                                              c->wrappers.positions(inputs.size()));
      c->graph = std::move(merged.graph);
      c->wrappers.synthetic_bases = std::move(merged.inputs);
    }
  }
  // The captured graph holds autocast's casts; the compilation runs without autocast.
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);

  // Per placeholder; the lifted constants (the last ones) never require grad.
  std::vector<bool> requires_grad;
  for (const at::Tensor& t : c->graph_inputs(args))
    requires_grad.push_back(training && t.requires_grad());
  std::fill(requires_grad.end() - static_cast<int64_t>(c->constants.size()), requires_grad.end(),
            false);
  // §13.11 (the driver's choice): no output requires grad and no input that requires grad is
  // mutated: an inference graph, run under no_grad.
  if (training && choose_compile_kind(*c->graph, requires_grad) == CompileKind::kInference) {
    training = false;
    c->downgraded = true;
  }
  if (training) {
    TrainOptions options{config.fw_compiler, config.bw_compiler, config, config.debug_assert};
    // The primals that are parameters or buffers (free to save), by distinct argument.
    std::vector<bool>& lifetime = options.pipeline.min_cut.static_lifetime_inputs;
    lifetime.clear();
    const std::vector<int>& sources = c->wrappers.synthetic_bases.sources;
    for (size_t k = 0; k < c->unique().size() && sources.empty(); ++k)
      lifetime.push_back(c->unique()[k] < config.num_params_buffers);
    for (int s : sources)  // a synthetic base is not free to save
      lifetime.push_back(s >= 0 && s < static_cast<int>(c->unique().size()) &&
                         c->unique()[s] < config.num_params_buffers);
    const bool data_parallel = config.data_parallel != DataParallelMode::kNone;
    DataParallelOptions dp;
    if (data_parallel) {
      dp = data_parallel_options(*c, args);
      options.pipeline.extra_stages.push_back(
          {PipelineKind::kTraining, "partition", false, [dp] { return data_parallel_stage(dp); }});
      // Note [Sharded gradients' reduce-scatters]: gathers where the forward uses them.
      if (config.data_parallel == DataParallelMode::kSharded)
        options.pipeline.extra_stages.push_back(
            {PipelineKind::kTraining, "joint", true, [] { return gather_at_first_use_stage(); }});
    }
    c->train =
        std::make_unique<CompiledFunction>(c->graph, std::move(requires_grad), std::move(options));
    if (data_parallel) synchronize(*c, args, dp);
  } else {
    c->infer = std::make_unique<CompiledGraph>(c->graph, config, config.inference_compiler);
  }
  return c;
}

namespace {
std::vector<at::Tensor> defined_only(const std::vector<at::Tensor>& args) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& t : args)
    if (t.defined()) out.push_back(t);
  return out;
}
}  // namespace

const AOTFunction* AOTFunction::State::without_absent(const std::vector<at::Tensor>& args) {
  // Every call asks: no allocation when every argument is defined.
  if (std::all_of(args.begin(), args.end(), [](const at::Tensor& t) { return t.defined(); }))
    return nullptr;
  std::vector<bool> pattern(args.size());
  for (size_t i = 0; i < args.size(); ++i) pattern[i] = !args[i].defined();
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = absent.find(pattern); it != absent.end()) return &it->second;
  // The defined arguments' config: their names, parameter count, marks and dynamic dimensions.
  std::vector<int64_t> index(args.size(), -1);  // argument -> its position among the defined
  int64_t next = 0;
  for (size_t i = 0; i < args.size(); ++i)
    if (!pattern[i]) index[i] = next++;
  AOTConfig sub = config;
  auto keep = [&](auto& per_argument, const char* what) {
    if (per_argument.empty()) return;
    AOTGRAD_CHECK(per_argument.size() == args.size(), "aot_function: ", per_argument.size(), " ",
                  what, " for ", args.size(), " arguments");
    std::decay_t<decltype(per_argument)> kept;
    for (size_t i = 0; i < args.size(); ++i)
      if (!pattern[i]) kept.push_back(per_argument[i]);
    per_argument = std::move(kept);
  };
  keep(sub.input_names, "input names");
  keep(sub.data_parallel_params, "data_parallel_params flags");
  sub.num_params_buffers = 0;
  for (size_t i = 0; i < std::min(config.num_params_buffers, args.size()); ++i)
    sub.num_params_buffers += pattern[i] ? 0 : 1;
  sub.dynamic_dims.clear();
  for (const auto& [i, dims] : config.dynamic_dims)
    if (i < args.size() && !pattern[i]) sub.dynamic_dims[static_cast<size_t>(index[i])] = dims;
  TensorFunction full = fn;
  TensorFunction of_defined = [full, pattern](const std::vector<at::Tensor>& defined) {
    std::vector<at::Tensor> all(pattern.size());
    size_t k = 0;
    for (size_t i = 0; i < pattern.size(); ++i)
      if (!pattern[i]) all[i] = defined.at(k++);
    return full(all);
  };
  if (log_settings().recompiles && (!cache.empty() || !dynamic.empty() || !absent.empty())) {
    std::string which;
    for (size_t i = 0; i < args.size(); ++i)
      if (pattern[i]) which += (which.empty() ? "" : ", ") + std::to_string(i);
    log_text("Recompiling function: argument(s) " + which +
             " None (undefined): a specialization without them");
  }
  return &absent.emplace(pattern, AOTFunction(std::move(of_defined), std::move(sub))).first->second;
}

AOTFunction::AOTFunction(TensorFunction fn, AOTConfig config) : state_(std::make_shared<State>()) {
  AOTGRAD_CHECK(fn, "aot_function: the function is empty");
  check_config(config, "aot_function");
  state_->fn = std::move(fn);
  state_->config = std::move(config);
}

std::vector<at::Tensor> AOTFunction::operator()(const std::vector<at::Tensor>& args) const {
  if (const AOTFunction* f = state_->without_absent(args)) return (*f)(defined_only(args));
  const std::string key = input_signature(args);
  const std::string family = signature_of(args, false);
  const bool training = is_training_call(args);
  std::shared_ptr<Compilation> c;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    std::string failed;
    c = state_->find(args, key, family, &failed);
    if (!c) {
      const size_t n = state_->cache.size() + state_->dynamic.size();
      std::string note;
      c = state_->compile(args, training, family, &note);
      if (c->dynamic)
        state_->dynamic.push_back(c);
      else
        state_->cache.emplace(key, c);
      if (n > 0 && log_settings().recompiles)
        log_text("Recompiling function (compilation " + std::to_string(n + 1) + "): " +
                 (failed.empty() ? "its input signature differs from every compiled one; from "
                                   "the last:" +
                                       signature_difference(state_->last_key, key)
                                 : "guard failed in the dynamic compilation: " + failed) +
                 note);
      state_->last_key = key;
    }
  }
  const std::vector<at::Tensor> distinct = c->graph_inputs(args);
  if (c->train) return (*c->train)(distinct);
  std::optional<c10::NoGradGuard> no_grad;
  if (c->downgraded) no_grad.emplace();
  std::vector<c10::IValue> outs =
      (*c->infer)(std::vector<c10::IValue>(distinct.begin(), distinct.end()));
  std::vector<at::Tensor> result;
  result.reserve(outs.size());
  for (const c10::IValue& v : outs) result.push_back(v.isTensor() ? v.toTensor() : at::Tensor());
  return result;
}

std::optional<bool> AOTFunction::trains(const std::vector<at::Tensor>& args) const {
  if (const AOTFunction* f = state_->without_absent(args)) return f->trains(defined_only(args));
  std::lock_guard<std::mutex> lock(state_->mu);
  auto c = state_->find(args, input_signature(args), signature_of(args, false));
  if (!c) return std::nullopt;
  return c->train != nullptr;
}

size_t AOTFunction::num_compilations() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  size_t n = state_->cache.size() + state_->dynamic.size();
  for (const auto& [pattern, f] : state_->absent) n += f.num_compilations();
  return n;
}

std::shared_ptr<const Graph> AOTFunction::captured_graph(
    const std::vector<at::Tensor>& args) const {
  if (const AOTFunction* f = state_->without_absent(args))
    return f->captured_graph(defined_only(args));
  std::lock_guard<std::mutex> lock(state_->mu);
  auto c = state_->find(args, input_signature(args), signature_of(args, false));
  return c ? c->graph : nullptr;
}

std::optional<std::vector<std::string>> AOTFunction::guards(
    const std::vector<at::Tensor>& args) const {
  if (const AOTFunction* f = state_->without_absent(args)) return f->guards(defined_only(args));
  std::lock_guard<std::mutex> lock(state_->mu);
  auto c = state_->find(args, input_signature(args), signature_of(args, false));
  if (!c) return std::nullopt;
  return c->dynamic ? c->dynamic->guards : std::vector<std::string>{};
}

AOTFunction aot_function(TensorFunction fn, AOTConfig config) {
  return AOTFunction(std::move(fn), std::move(config));
}

}  // namespace aotgrad
