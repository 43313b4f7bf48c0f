// aotgrad: what the commands that compile share: graph loading, --grad, --hint, --recompute,
// --reinplace, and the compile options (driver/compile_options.h's table) of a command line.
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
  GivenCompileOptions given;
  for (const CompileOptionDecl& d : compile_option_table()) {
    std::string name(d.name);
    if (args.has(name)) given.emplace_back(name, args.get(name).value_or(""));
  }
  // The command line uses no cache unless asked: the user's cache is not a command's business.
  if (!args.has("cache-dir")) given.emplace_back("cache-dir", "off");
  try {
    return parse_compile_options(given);
  } catch (const CompileOptionFileError&) {
    throw;  // a missing or corrupt file: exit 1, with the file's error
  } catch (const Error& e) {
    throw UsageError{e.message()};
  }
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
  for (const CompileOptionDecl& d : compile_option_table()) {
    std::string help(d.help);
    if (!d.default_text.empty()) help += " (default: " + std::string(d.default_text) + ")";
    if (!d.applies_with.empty()) help += "; applies with --" + std::string(d.applies_with);
    own.push_back({std::string(d.name), !d.metavar.empty(), help,
                   d.metavar.empty() ? std::string("VALUE") : std::string(d.metavar)});
  }
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
