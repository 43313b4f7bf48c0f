// aotgrad: the compile options' table -- each option declared once -- and what is generated from
// it: parsing, defaults, the compile cache's key.
#include "aotgrad/driver/compile_options.h"

#include <cmath>
#include <cstdio>

#include "aotgrad/ir/error.h"
#include "aotgrad/transforms/partition/cost_model.h"
#include "aotgrad/transforms/partition/knapsack.h"

namespace aotgrad {

namespace {

std::string exact_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// A double written whole, or nullopt.
std::optional<double> number(const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (...) {
    return std::nullopt;
  }
  if (used != text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

bool on_off(const std::string& text) {
  if (text != "on" && text != "off") throw Error("takes on or off, got '" + text + "'");
  return text == "on";
}

std::string on_off_text(bool b) { return b ? "on" : "off"; }

// The cost profile at `path`; its errors (missing file, not a profile) as the file's.
std::shared_ptr<const CostProfile> load_profile(const std::string& path) {
  try {
    return std::make_shared<const CostProfile>(read_cost_profile(path));
  } catch (const CompileOptionFileError&) {
    throw;
  } catch (const Error& e) {
    throw CompileOptionFileError(e.message());
  }
}

// The decomposition table as the key holds it: its ops (sorted), composites and exclusions.
std::string table_key(const DecompositionTable& t) {
  std::string out = std::to_string(t.ops.size());
  for (const std::string& op : t.ops) out += " " + op;  // std::set: sorted
  if (t.provided_composites) out += " +provided_composites";
  for (const std::string& op : t.excluded) out += " -" + op;
  return out;
}

// A declaration of one of MinCutOptions' on/off switches (applies to the min_cut partition).
CompileOptionDecl min_cut_switch(std::string_view name, bool MinCutOptions::*field,
                                 std::string_view default_text, std::string_view help) {
  return {name,
          "on|off",
          help,
          default_text,
          [field](CompileOptions& o, const std::string& t) { o.min_cut.*field = on_off(t); },
          [field](const CompileOptions& o) { return on_off_text(o.min_cut.*field); },
          "partition=min_cut",
          PipelineKind::kTraining};
}

std::vector<CompileOptionDecl> make_table() {
  std::vector<CompileOptionDecl> t;
  t.push_back({"decomp", "SPEC",
               "decomposition table: none, core, full, op names, -op to leave one out (e.g. "
               "full,-aten::native_layer_norm)",
               "core",
               [](CompileOptions& o, const std::string& s) {
                 o.decompositions = parse_decomposition_spec(s);
               },
               [](const CompileOptions& o) { return table_key(o.decompositions); }});
  t.push_back(
      {"partition",
       "default|min_cut",
       "how the joint graph is split: min_cut (save what is cheapest, recompute cheap "
       "forward ops in the backward) or default (save every forward value the backward "
       "uses)",
       "min_cut",
       [](CompileOptions& o, const std::string& s) {
         if (s == "default")
           o.partition = PartitionKind::kDefault;
         else if (s == "min_cut")
           o.partition = PartitionKind::kMinCut;
         else
           throw Error("unknown partition '" + s + "' (known: default, min_cut)");
       },
       [](const CompileOptions& o) { return std::string(partition_kind_name(o.partition)); },
       {},
       PipelineKind::kTraining});
  t.push_back({"memory-budget", "F|auto",
               "activation memory budget of the min_cut partition in [0, 1]: 1 saves what is "
               "fastest; below 1, of the plans PyTorch's budget weighs (the min cut without its "
               "heuristics, knapsacks, only the inputs) the fastest whose predicted "
               "training-step peak is at most that fraction of the way from the lowest plan's "
               "peak (0) to the fastest plan's (1); auto: the lowest predicted peak within "
               "--max-slowdown",
               "1",
               [](CompileOptions& o, const std::string& s) {
                 if (s == "auto") {
                   o.min_cut.max_slowdown = kDefaultMaxSlowdown;
                   return;
                 }
                 std::optional<double> v = number(s);
                 if (!v || !(*v >= 0 && *v <= 1))
                   throw Error("takes a number in [0, 1] or auto, got '" + s + "'");
                 o.min_cut.activation_memory_budget = *v;
                 o.min_cut.max_slowdown = -1;
               },
               [](const CompileOptions& o) {
                 return o.min_cut.max_slowdown >= 0
                            ? "auto"
                            : exact_double(o.min_cut.activation_memory_budget);
               },
               "partition=min_cut", PipelineKind::kTraining});
  t.push_back({"max-slowdown", "F",
               "with --memory-budget=auto: the estimated extra step time allowed, as a fraction "
               "of the fastest plan's (0.1 unless given: kDefaultMaxSlowdown)",
               "",
               [](CompileOptions& o, const std::string& s) {
                 std::optional<double> v = number(s);
                 if (!v || !(*v >= 0))
                   throw Error("takes a fraction of at least 0, got '" + s + "'");
                 o.min_cut.max_slowdown = *v;
               },
               [](const CompileOptions& o) { return exact_double(o.min_cut.max_slowdown); },
               "memory-budget=auto", PipelineKind::kTraining});
  // Before cost-model, which reads the default profile only when none was given.
  t.push_back({"cost-profile", "FILE",
               "with --cost-model=measured: the profile `aotgrad calibrate` wrote (default: "
               "AOTGRAD_COST_PROFILE, else cost_profile.json in the user's cache directory)",
               "",
               [](CompileOptions& o, const std::string& s) {
                 o.min_cut.cost_model.profile = load_profile(s);
               },
               nullptr,  // the profile's contents enter the key through cost-model
               "cost-model=measured", PipelineKind::kTraining});
  t.push_back({"cost-model", "flops|measured",
               "what the memory budget thinks a recomputed op costs: flops (PyTorch's estimate) or "
               "measured (seconds from this machine's kernels, `aotgrad calibrate`)",
               "flops",
               [](CompileOptions& o, const std::string& s) {
                 CostModel& m = o.min_cut.cost_model;
                 m.kind = parse_cost_model(s);
                 if (m.kind != CostModelKind::kMeasured) {
                   m.profile = nullptr;
                   return;
                 }
                 if (m.profile) return;
                 std::string path = default_cost_profile_path();
                 if (path.empty())
                   throw Error(
                       "=measured: no --cost-profile and no cache directory (set "
                       "AOTGRAD_COST_PROFILE, XDG_CACHE_HOME or HOME)");
                 m.profile = load_profile(path);
               },
               [](const CompileOptions& o) { return o.min_cut.cost_model.fingerprint(); },
               "partition=min_cut", PipelineKind::kTraining});
  t.push_back(
      {"budget-pricing", "peak|sum",
       "how --memory-budget prices a plan: peak (the training step's predicted peak) or "
       "sum (PyTorch's summed saved bytes; 0 saves only the inputs)",
       "peak",
       [](CompileOptions& o, const std::string& s) {
         if (s != "peak" && s != "sum") throw Error("takes peak or sum, got '" + s + "'");
         o.min_cut.budget_pricing = s == "peak" ? BudgetPricing::kPeak : BudgetPricing::kSum;
       },
       [](const CompileOptions& o) {
         return std::string(o.min_cut.budget_pricing == BudgetPricing::kPeak ? "peak" : "sum");
       },
       "partition=min_cut", PipelineKind::kTraining});
  t.push_back({"solver", "greedy|dp|ilp",
               "the memory budget's knapsack solver: dp, greedy or ilp (CBC)", "dp",
               [](CompileOptions& o, const std::string& s) {
                 o.min_cut.memory_budget_solver = parse_knapsack_solver(s);
               },
               [](const CompileOptions& o) {
                 return std::string(knapsack_solver_name(o.min_cut.memory_budget_solver));
               },
               "partition=min_cut", PipelineKind::kTraining});
  t.push_back(min_cut_switch(
      "recompute-pointwise-from-saved", &MinCutOptions::recompute_pointwise_from_saved, "on",
      "on: the min_cut partition may recompute a cheap op (silu, gelu, mul, a small mean) in the "
      "backward from values the backward has anyway, through at most three calls, instead of "
      "saving its output for a norm's or convolution's backward, as functorch 1.13 did; off: "
      "PyTorch 2.x's materialized-backward ban saves it"));
  t.push_back(min_cut_switch(
      "recompute-norms-from-saved", &MinCutOptions::recompute_norms_from_saved, "off",
      "with --recompute-pointwise-from-saved=on: a normalization whose inputs the backward has "
      "anyway counts as one cheap call, so the cut may run it again in the backward"));
  t.push_back(min_cut_switch(
      "recompute-again", &MinCutOptions::recompute_again, "on",
      "on: below --memory-budget=1, the budget also weighs the lowest-peak plan (and auto's "
      "choice) with values of its backward computed a second time just before their uses after "
      "the step's peak, so that they are not live there (one more plan per value, priced with the "
      "copied calls); off: each forward value is computed at most once, as PyTorch's partitioner"));
  t.push_back(min_cut_switch(
      "ban-if-used-far-apart", &MinCutOptions::ban_if_used_far_apart, "on",
      "PyTorch's ban_recompute_used_far_apart: a value a fusible op uses after a use that cannot "
      "fuse is not recomputed"));
  t.push_back(min_cut_switch(
      "ban-if-long-fusible-chains", &MinCutOptions::ban_if_long_fusible_chains, "on",
      "PyTorch's ban_recompute_long_fusible_chains: a chain of more than 100 fusible forward ops "
      "is cut where it runs alone"));
  t.push_back(min_cut_switch(
      "ban-if-materialized-backward", &MinCutOptions::ban_if_materialized_backward, "on",
      "PyTorch's ban_recompute_materialized_backward: a value the backward reads through a use "
      "that cannot fuse is saved"));
  t.push_back(min_cut_switch(
      "ban-if-not-in-allowlist", &MinCutOptions::ban_if_not_in_allowlist, "on",
      "PyTorch's ban_recompute_not_in_allowlist: only ops of the recomputable allowlist are "
      "recomputed; off: everything but random and compute-intensive ops may be"));
  t.push_back(min_cut_switch(
      "ban-if-reduction", &MinCutOptions::ban_if_reduction, "on",
      "PyTorch's ban_recompute_reductions: an op whose output is more than 4x smaller than its "
      "tensor inputs is saved"));
  t.push_back({"max-dist-from-bw", "N",
               "PyTorch's max_dist_from_bw: forward values more than N uses away from the "
               "backward (and fewer than 1000) are not recomputed; 1000 leaves the heuristic off",
               "1000",
               [](CompileOptions& o, const std::string& s) {
                 std::optional<double> v = number(s);
                 if (!v || *v < 0 || *v != std::floor(*v) || *v > 1e9)
                   throw Error("takes a whole number of uses, got '" + s + "'");
                 o.min_cut.max_dist_from_bw = static_cast<int64_t>(*v);
               },
               [](const CompileOptions& o) { return std::to_string(o.min_cut.max_dist_from_bw); },
               "partition=min_cut", PipelineKind::kTraining});
  t.push_back(min_cut_switch("recompute-views", &MinCutOptions::recompute_views, "off",
                             "PyTorch's recompute_views: never save a view, recompute it "
                             "from its base"));
  t.push_back(min_cut_switch(
      "treat-parameters-as-free-to-save", &MinCutOptions::treat_parameters_as_free_to_save, "on",
      "PyTorch's treat_parameters_as_free_to_save: inputs that outlive the step (a module's "
      "parameters and buffers) cost nothing to save"));
  t.push_back(min_cut_switch("cse", &MinCutOptions::cse, "on",
                             "PyTorch's config.cse: common subexpression elimination on "
                             "the joint graph before the cut"));
  t.push_back(min_cut_switch(
      "recompute-random-ops", &MinCutOptions::recompute_random_ops, "on",
      "honour MUST_RECOMPUTE and PREFER_RECOMPUTE on random ops, which replay the forward's "
      "generator state; off: tagged random ops are saved"));
  t.push_back({"schedule",
               "memory|none",
               "training: memory reorders the forward and backward graphs, within data "
               "dependences and effect order, so that the step's predicted peak falls; none keeps "
               "the partitioner's order",
               "memory",
               [](CompileOptions& o, const std::string& s) { o.schedule = parse_schedule_kind(s); },
               [](const CompileOptions& o) { return std::string(schedule_kind_name(o.schedule)); },
               {},
               PipelineKind::kTraining});
  t.push_back({"zero-grad",
               "set-to-none|in-place",
               "training: how the caller resets the gradients between steps -- set-to-none "
               "(PyTorch 2.x's zero_grad) or in-place (zero_grad(set_to_none=False): each .grad is "
               "kept and zeroed, and the step adds each gradient into it as soon as it is made); "
               "the predicted peak, the memory budget and the schedule follow",
               "set-to-none",
               [](CompileOptions& o, const std::string& s) {
                 if (s != "set-to-none" && s != "in-place")
                   throw Error("takes set-to-none or in-place, got '" + s + "'");
                 o.min_cut.gradients_kept = s == "in-place";
               },
               [](const CompileOptions& o) {
                 return std::string(o.min_cut.gradients_kept ? "in-place" : "set-to-none");
               },
               {},
               PipelineKind::kTraining});
  t.push_back(
      {"keep-inference-input-mutations",
       "",
       "inference: data mutations of inputs stay in the graph as a trailing copy_ instead "
       "of being returned (a flag)",
       "",
       [](CompileOptions& o, const std::string& s) {
         if (!s.empty()) throw Error("is a flag and takes no value, got '" + s + "'");
         o.keep_inference_input_mutations = true;
       },
       [](const CompileOptions& o) { return on_off_text(o.keep_inference_input_mutations); },
       {},
       PipelineKind::kInference});
  t.push_back({"cache-dir", "DIR",
               "the on-disk compile cache's directory, or off: a hit loads the stored graphs "
               "instead of compiling (default: AOTGRAD_CACHE_DIR, else the user's cache "
               "directory; the command line: off)",
               "", [](CompileOptions& o, const std::string& s) {
                 if (s.empty()) throw Error("takes a directory (or off)");
                 o.cache_dir = s;
               }});
  return t;
}

}  // namespace

const std::vector<CompileOptionDecl>& compile_option_table() {
  static const std::vector<CompileOptionDecl> table = make_table();
  return table;
}

CompileOptions parse_compile_options(const GivenCompileOptions& given) {
  const auto& table = compile_option_table();
  auto text_of = [&](std::string_view name) -> const std::string* {
    const std::string* found = nullptr;
    for (const auto& [n, v] : given)
      if (n == name) found = &v;  // the last one given wins
    return found;
  };
  auto decl_of = [&](std::string_view name) -> const CompileOptionDecl* {
    for (const CompileOptionDecl& d : table)
      if (d.name == name) return &d;
    return nullptr;
  };
  for (const auto& [name, text] : given)
    if (!decl_of(name)) throw Error("--" + name + ": not a compile option");
  CompileOptions o;
  for (const CompileOptionDecl& d : table) {
    const std::string* text = text_of(d.name);
    if (!text) continue;
    if (!d.applies_with.empty()) {
      size_t eq = d.applies_with.find('=');
      std::string_view other = d.applies_with.substr(0, eq), want = d.applies_with.substr(eq + 1);
      const std::string* has = text_of(other);
      std::string_view value = has ? std::string_view(*has) : decl_of(other)->default_text;
      if (value != want)
        throw Error("--" + std::string(d.name) + " applies to --" + std::string(d.applies_with));
    }
    try {
      d.parse(o, *text);
    } catch (const CompileOptionFileError&) {
      throw;
    } catch (const Error& e) {
      // "--solver takes ...", "--cost-model=measured: ...", else "--decomp: <the cause>".
      const std::string& m = e.message();
      const bool phrase = m.rfind("takes ", 0) == 0 || m.rfind("is ", 0) == 0;
      throw Error("--" + std::string(d.name) +
                  (phrase                 ? " "
                   : m.rfind("=", 0) == 0 ? ""
                                          : ": ") +
                  m);
    }
  }
  return o;
}

std::string compile_options_key(const CompileOptions& o, PipelineKind pipeline) {
  std::string out;
  for (const CompileOptionDecl& d : compile_option_table())
    if (d.key && (!d.read_by || *d.read_by == pipeline))
      out += std::string(d.name) + "=" + d.key(o) + "\n";
  return out;
}

}  // namespace aotgrad
