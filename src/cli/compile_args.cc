// aotgrad: graph loading and --grad parsing for the commands.
#include "compile_args.h"

#include <cmath>
#include <memory>
#include <sstream>

#include "aotgrad/driver/cache_store.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/symbol_binding.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"
#include "cli.h"

namespace aotgrad::cli {

std::shared_ptr<Graph> load_graph(const std::string& path, const SymbolHints& hints) {
  std::string text = read_input(path);
  try {
    std::shared_ptr<Graph> g = parse_graph(text, aten_ops(), hints);
    verify(*g);
    return g;
  } catch (const Error& e) {
    if (e.loc().line > 0)
      throw Error(path + ":" + std::to_string(e.loc().line) + ":" + std::to_string(e.loc().col) +
                  ": error: " + e.message());
    throw Error(path + ": error: " + e.message());
  }
}

SymbolHints hint_option(const Args& args) {
  SymbolHints hints;
  if (auto spec = args.get("hint")) {
    std::string error;
    if (!parse_symbol_hints(*spec, hints, &error))
      throw UsageError{"--hint: " + error + " (expected SYMBOL=SIZE,..., e.g. s0=8,s1=16)"};
  }
  return hints;
}

void add_symbols_json(nlohmann::ordered_json& j, const Graph& g) {
  SymbolBindings b = bind_symbols(g);  // throws for a symbol no input binds
  std::vector<Node*> phs = g.placeholders();
  // `idx.size()[0]` (source) and `L['idx'].size()[0]` (guard) of an input size.
  auto where = [&](const InputSize& at, bool guard) {
    std::string name = phs[at.input]->name();
    std::string s = guard ? "L['" + name + "']" : name;
    return at.dim < 0 ? s : s + ".size()[" + std::to_string(at.dim) + "]";
  };
  nlohmann::ordered_json symbols = nlohmann::ordered_json::array();
  nlohmann::ordered_json guards = nlohmann::ordered_json::array();
  for (const SymbolSource& s : b.symbols) {
    const int64_t c = s.divisor;
    nlohmann::ordered_json sym;
    sym["name"] = s.symbol;
    if (auto h = s.at.size.hint())
      sym["hint"] = *h / c;
    else
      sym["hint"] = nullptr;
    sym["source"] = where(s.at, false) + (c == 1 ? "" : " // " + std::to_string(c));
    symbols.push_back(sym);
    guards.push_back("2 <= " + s.symbol);
  }
  for (const SymbolSource& s : b.symbols)
    if (s.divisor != 1)
      guards.push_back("Eq(Mod(" + where(s.at, true) + ", " + std::to_string(s.divisor) + "), 0)");
  for (const InputSize& c : b.checks)
    guards.push_back(where(c, true) + " == " + c.size.to_string());
  j["symbols"] = symbols;
  j["guards"] = guards;
}

std::vector<bool> parse_grad_spec(const Graph& g, const std::string& spec) {
  std::vector<Node*> phs = g.placeholders();
  std::vector<bool> rg(phs.size());
  auto floating = [](const Node* n) {
    return n->meta().is_tensor() &&
           (is_floating(n->meta().tensor.dtype) || is_complex(n->meta().tensor.dtype));
  };
  if (spec == "none") return rg;
  if (spec == "all") {
    for (size_t i = 0; i < phs.size(); ++i) rg[i] = floating(phs[i]);
    return rg;
  }
  std::stringstream ss(spec);
  std::string name;
  while (std::getline(ss, name, ',')) {
    if (name.empty()) continue;
    bool found = false;
    for (size_t i = 0; i < phs.size(); ++i) {
      if (phs[i]->name() != name) continue;
      if (!floating(phs[i]))
        throw UsageError{"--grad: input '" + name + "' is " + phs[i]->meta().describe() +
                         ", not floating point: it cannot require grad"};
      rg[i] = true;
      found = true;
    }
    if (!found) throw UsageError{"--grad: the graph has no input named '" + name + "'"};
  }
  return rg;
}

CompileOptions compile_options(const Args& args) {
  CompileOptions o;
  try {
    o.decompositions = parse_decomposition_spec(args.get("decomp").value_or("core"));
  } catch (const Error& e) {
    throw UsageError{"--decomp: " + e.message()};
  }
  std::string partition = args.get("partition").value_or("min_cut");
  if (partition == "default") {
    o.partition = PartitionKind::kDefault;
  } else if (partition == "min_cut") {
    o.partition = PartitionKind::kMinCut;
  } else {
    throw UsageError{"--partition: unknown partition '" + partition +
                     "' (known: default, min_cut)"};
  }
  if (auto b = args.get("memory-budget"); b && *b == "auto") {
    o.min_cut.max_slowdown = kDefaultMaxSlowdown;
    if (auto m = args.get("max-slowdown")) {
      size_t used = 0;
      double v = -1;
      try {
        v = std::stod(*m, &used);
      } catch (...) {
        used = 0;
      }
      if (used != m->size() || !(v >= 0) || !std::isfinite(v))
        throw UsageError{"--max-slowdown takes a fraction of at least 0, got '" + *m + "'"};
      o.min_cut.max_slowdown = v;
    }
  } else if (args.has("max-slowdown")) {
    throw UsageError{"--max-slowdown applies to --memory-budget=auto"};
  } else if (auto b = args.get("memory-budget")) {
    size_t used = 0;
    double v = -1;
    try {
      v = std::stod(*b, &used);
    } catch (...) {
      used = 0;
    }
    if (used != b->size() || !(v >= 0 && v <= 1))
      throw UsageError{"--memory-budget takes a number in [0, 1] or auto, got '" + *b + "'"};
    o.min_cut.activation_memory_budget = v;
  }
  if (auto s = args.get("solver")) {
    try {
      o.min_cut.memory_budget_solver = parse_knapsack_solver(*s);
    } catch (const Error& e) {
      throw UsageError{"--solver: " + e.message()};
    }
  }
  if (auto m = args.get("cost-model")) {
    try {
      o.min_cut.cost_model.kind = parse_cost_model(*m);
    } catch (const Error& e) {
      throw UsageError{"--cost-model: " + e.message()};
    }
  }
  if (args.has("cost-profile") && o.min_cut.cost_model.kind != CostModelKind::kMeasured)
    throw UsageError{"--cost-profile applies to --cost-model=measured"};
  if (o.min_cut.cost_model.kind == CostModelKind::kMeasured) {
    std::string path = args.get("cost-profile").value_or(default_cost_profile_path());
    if (path.empty())
      throw UsageError{
          "--cost-model=measured: no --cost-profile and no cache directory (set "
          "AOTGRAD_COST_PROFILE, XDG_CACHE_HOME or HOME)"};
    o.min_cut.cost_model.profile = std::make_shared<const CostProfile>(read_cost_profile(path));
  }
  if (auto p = args.get("budget-pricing")) {
    if (*p != "peak" && *p != "sum")
      throw UsageError{"--budget-pricing takes peak or sum, got '" + *p + "'"};
    o.min_cut.budget_pricing = *p == "peak" ? BudgetPricing::kPeak : BudgetPricing::kSum;
  }
  if (auto r = args.get("recompute-pointwise-from-saved")) {
    if (*r != "on" && *r != "off")
      throw UsageError{"--recompute-pointwise-from-saved takes on or off, got '" + *r + "'"};
    o.min_cut.recompute_pointwise_from_saved = *r == "on";
  }
  if (auto r = args.get("recompute-again")) {
    if (*r != "on" && *r != "off")
      throw UsageError{"--recompute-again takes on or off, got '" + *r + "'"};
    o.min_cut.recompute_again = *r == "on";
  }
  if (o.partition != PartitionKind::kMinCut &&
      (args.has("memory-budget") || args.has("solver") || args.has("budget-pricing") ||
       args.has("cost-model") || args.has("recompute-pointwise-from-saved") ||
       args.has("recompute-again")))
    throw UsageError{
        "--memory-budget, --solver, --budget-pricing, --cost-model, "
        "--recompute-pointwise-from-saved and --recompute-again apply to the min_cut "
        "partition; drop --partition=default"};
  if (auto k = args.get("schedule")) {
    try {
      o.schedule = parse_schedule_kind(*k);
    } catch (const Error& e) {
      throw UsageError{"--schedule: " + e.message()};
    }
  }
  if (auto z = args.get("zero-grad")) {
    if (*z != "set-to-none" && *z != "in-place")
      throw UsageError{"--zero-grad takes set-to-none or in-place, got '" + *z + "'"};
    o.min_cut.gradients_kept = *z == "in-place";
  }
  o.keep_inference_input_mutations = args.has("keep-inference-input-mutations");
  std::string dir = args.get("cache-dir").value_or("off");
  if (args.has("cache-dir") && dir.empty())
    throw UsageError{"--cache-dir takes a directory (or off)"};
  o.cache_dir = dir;
  return o;
}

void apply_recompute_option(const Args& args, Graph& g) {
  std::optional<std::string> spec = args.get("recompute");
  if (!spec) return;
  struct Rule {
    std::string key;
    RecomputePolicy policy;
    bool used = false;
  };
  std::vector<Rule> rules;
  size_t pos = 0;
  while (pos <= spec->size()) {
    size_t comma = spec->find(',', pos);
    if (comma == std::string::npos) comma = spec->size();
    std::string item = spec->substr(pos, comma - pos);
    pos = comma + 1;
    if (item.empty()) continue;
    size_t eq = item.rfind('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError{"--recompute: '" + item + "' is not KEY=POLICY"};
    std::optional<RecomputePolicy> p = parse_recompute_policy(item.substr(eq + 1));
    if (!p)
      throw UsageError{"--recompute: unknown policy '" + item.substr(eq + 1) +
                       "' (known: MUST_SAVE, PREFER_SAVE, MUST_RECOMPUTE, PREFER_RECOMPUTE)"};
    rules.push_back({item.substr(0, eq), *p});
  }
  if (rules.empty()) throw UsageError{"--recompute takes KEY=POLICY,..."};
  for (Node* n : g.nodes()) {
    if (n->kind() != NodeKind::Call) continue;
    const std::string& op = n->op()->name;
    std::string packet = op.substr(0, op.find('.'));
    Rule* best = nullptr;
    int rank = 0;  // 3: node name, 2: op, 1: '*'
    for (Rule& r : rules) {
      int k = r.key == n->name() ? 3 : (r.key == op || r.key == packet) ? 2 : r.key == "*" ? 1 : 0;
      if (k > rank) {
        rank = k;
        best = &r;
      }
    }
    if (!best) continue;
    best->used = true;
    n->info().recompute = best->policy;
  }
  for (const Rule& r : rules)
    if (!r.used) throw UsageError{"--recompute: '" + r.key + "' matches no call of the graph"};
}

std::vector<OptionSpec> with_compile_options(std::vector<OptionSpec> own) {
  own.push_back({"decomp", true,
                 "decomposition table: none, core (default), full, op names, -op to leave one out "
                 "(e.g. full,-aten::native_layer_norm)",
                 "SPEC"});
  own.push_back({"partition", true,
                 "how the joint graph is split: min_cut (default: save what is cheapest, recompute "
                 "cheap forward ops in the backward) or default (save every forward value the "
                 "backward uses)",
                 "default|min_cut"});
  own.push_back({"memory-budget", true,
                 "activation memory budget of the min_cut partition in [0, 1]: 1 (default) saves "
                 "what is fastest; below 1, of the plans PyTorch's budget weighs (the min cut "
                 "without its heuristics, knapsacks, only the inputs) the fastest whose predicted "
                 "training-step peak is at most that fraction of the way from the lowest plan's "
                 "peak (0) to the fastest plan's (1); auto: the lowest predicted peak within "
                 "--max-slowdown",
                 "F|auto"});
  own.push_back({"max-slowdown", true,
                 "with --memory-budget=auto: the estimated extra step time allowed, as a fraction "
                 "of the fastest plan's (default 0.1)",
                 "F"});
  own.push_back({"cost-model", true,
                 "what the memory budget thinks a recomputed op costs: flops (default, PyTorch's "
                 "estimate) or measured (seconds from this machine's kernels, `aotgrad calibrate`)",
                 "flops|measured"});
  own.push_back({"cost-profile", true,
                 "with --cost-model=measured: the profile `aotgrad calibrate` wrote (default: "
                 "AOTGRAD_COST_PROFILE, else cost_profile.json in the user's cache directory)",
                 "FILE"});
  own.push_back({"budget-pricing", true,
                 "how --memory-budget prices a plan: peak (default: the training step's "
                 "predicted peak) or sum (PyTorch's summed saved bytes; 0 saves only the inputs)",
                 "peak|sum"});
  own.push_back({"solver", true,
                 "the memory budget's knapsack solver: dp (default), greedy or ilp (CBC)",
                 "greedy|dp|ilp"});
  own.push_back({"recompute-pointwise-from-saved", true,
                 "on (default): the min_cut partition may recompute a cheap op (silu, gelu, mul, "
                 "a small mean) in the backward from values the backward has anyway, through at "
                 "most three calls, instead of saving its output for a norm's or convolution's "
                 "backward, as functorch 1.13 did; off: PyTorch 2.x's materialized-backward ban "
                 "saves it",
                 "on|off"});
  own.push_back({"recompute-again", true,
                 "on (default): below --memory-budget=1, the budget also weighs the lowest-peak "
                 "plan (and auto's choice) with values of its backward computed a second time "
                 "just before their uses after the step's peak, so that they are not live there "
                 "(one more plan per value, priced with the copied calls); off: each forward "
                 "value is computed at most once, as PyTorch's partitioner",
                 "on|off"});
  own.push_back({"schedule", true,
                 "training: memory (default) reorders the forward and backward graphs, within "
                 "data dependences and effect order, so that the step's predicted peak falls; "
                 "none keeps the partitioner's order",
                 "memory|none"});
  own.push_back({"zero-grad", true,
                 "training: how the caller resets the gradients between steps -- set-to-none "
                 "(default, PyTorch 2.x's zero_grad) or in-place (zero_grad(set_to_none=False): "
                 "each .grad is "
                 "kept and zeroed, and the step adds each gradient into it as soon as it is "
                 "made); the predicted peak, the memory budget and the schedule follow",
                 "set-to-none|in-place"});
  own.push_back({"reinplace", true,
                 "on (default): the interpreter runs a call whose first argument dies there in "
                 "place (add as add_), so the functional graphs allocate no more than eager; off "
                 "runs every call as written (the predicted peak follows)",
                 "on|off"});
  own.push_back(
      {"recompute", true,
       "checkpoint policies for the min_cut partition, as torch.utils.checkpoint's "
       "(also written in the graph as `# recompute=POLICY` comments): KEY=POLICY,... with "
       "KEY an op (aten::mm), a node name or *, POLICY MUST_SAVE, PREFER_SAVE, "
       "MUST_RECOMPUTE or PREFER_RECOMPUTE",
       "SPEC"});
  own.push_back({"hint", true,
                 "hints of the graph's size symbols, over its `# hints:` comment: the sizes byte "
                 "counts and --random-inputs use",
                 "s0=N,..."});
  own.push_back({"cache-dir", true,
                 "use the on-disk compile cache in DIR (off by default on the command line): a hit "
                 "loads the stored forward/backward graphs instead of compiling; --stats=json "
                 "reports hits and misses",
                 "DIR"});
  return own;
}

bool reinplace_option(const Args& args) {
  std::string r = args.get("reinplace").value_or("on");
  if (r != "on" && r != "off") throw UsageError{"--reinplace takes on or off, got '" + r + "'"};
  return r == "on";
}

nlohmann::ordered_json predicted_peak_json(const MemoryTimeline& t) {
  nlohmann::ordered_json j;
  j["bytes"] = t.peak_bytes;
  if (t.steps.empty()) return j;
  const TimelineStep& s = t.steps[t.peak_step];
  j["node"] = s.node;
  j["phase"] = s.backward ? "backward" : "forward";
  j["step"] = s.backward ? t.peak_step - t.num_forward_steps : t.peak_step;
  nlohmann::ordered_json live = nlohmann::ordered_json::array();
  for (const LiveValue& v : t.peak_live) live.push_back({{"value", v.value}, {"bytes", v.bytes}});
  j["live"] = live;
  return j;
}

nlohmann::ordered_json cache_stats_json(const CompileOptions& options) {
  std::string dir = resolve_compile_cache_dir(options.cache_dir);
  CompileCacheStats s = compile_cache_stats();
  nlohmann::ordered_json j;
  j["dir"] = dir.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(dir);
  j["hits"] = s.hits;
  j["misses"] = s.misses;
  j["corrupt"] = s.corrupt;
  j["saved"] = s.saved;
  j["bypasses"] = s.bypasses;
  return j;
}

void add_phases_json(nlohmann::ordered_json& j, const StageTimer& timer) {
  nlohmann::ordered_json wall = nlohmann::ordered_json::object();
  nlohmann::ordered_json cpu = nlohmann::ordered_json::object();
  for (const StageTime& t : timer.stages()) {
    wall[t.name] = t.wall_us;
    if (t.cpu_us >= 0) cpu[t.name] = t.cpu_us;
  }
  j["phases_us"] = wall;
  j["total_us"] = timer.total_wall_us();
  j["phases_cpu_us"] = cpu;
  j["total_cpu_us"] = timer.total_cpu_us();
}

}  // namespace aotgrad::cli
