// aotgrad: the min-cut rematerialization partitioner.
#include "aotgrad/transforms/partition/min_cut.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <sstream>
#include <tuple>

#include "aotgrad/ir/error.h"
#include "aotgrad/ops/known_ops.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/transforms/input_mutations.h"
#include "aotgrad/transforms/partition/memory_budget.h"
#include "aotgrad/transforms/partition/rng_functionalize.h"
#include "aotgrad/transforms/passes/cse.h"
#include "aotgrad/transforms/passes/dce.h"

namespace aotgrad {
namespace {

constexpr int64_t kDistInf = JointNodeClasses::kDistNever;
void flatten(const Arg& a, std::vector<Arg>& out) {
  if (a.is_list()) {
    for (auto& e : a.list) flatten(e, out);
  } else {
    out.push_back(a);
  }
}

/// _size_of: bytes of a value from size hints (4096 elements where a size has none); a symbolic
/// scalar counts 1; a tuple the sum of its tensors.
int64_t size_of(const ValueMeta& m) {
  switch (m.kind) {
    case ValueMeta::Kind::Tensor: return m.tensor.nbytes_hint();
    case ValueMeta::Kind::SymInt:
    case ValueMeta::Kind::SymFloat:
    case ValueMeta::Kind::SymBool: return 1;
    case ValueMeta::Kind::Tuple: {
      int64_t s = 0;
      for (const ValueMeta& e : m.elems)
        if (e.is_tensor()) s += e.tensor.nbytes_hint();
      return s;
    }
    case ValueMeta::Kind::None: return 0;
  }
  return 0;
}

}  // namespace

int64_t value_nbytes(const ValueMeta& m) { return size_of(m); }

// --- classify_nodes ------------------------------------------------------------------------------

JointNodeClasses classify_joint_nodes(const Graph& joint, const JointGraph& info,
                                      const MinCutOptions& options) {
  JointNodeClasses c;
  c.index.reserve(joint.size());
  c.nodes.reserve(joint.size());
  c.arg_begin.reserve(joint.size() + 1);
  c.arg_begin.push_back(0);
  // One walk over the nodes: positions, kinds, and the edges by position, arguments first (one
  // map lookup per use; arguments come before their users), users as their reverse.
  std::vector<NodeKind> kind;
  kind.reserve(joint.size());
  for (Node* n : joint.nodes()) {
    c.index.emplace(n, c.nodes.size());
    c.nodes.push_back(n);
    kind.push_back(n->kind());
    for (const Arg& a : n->args())
      a.for_each_node([&](Node* m) { c.arg_index.push_back(static_cast<uint32_t>(c.at(m))); });
    c.arg_begin.push_back(static_cast<uint32_t>(c.arg_index.size()));
  }
  const size_t n_nodes = c.nodes.size();
  c.user_begin.assign(n_nodes + 1, 0);
  for (uint32_t a : c.arg_index) ++c.user_begin[a + 1];
  for (size_t i = 0; i < n_nodes; ++i) c.user_begin[i + 1] += c.user_begin[i];
  c.user_index.resize(c.arg_index.size());
  {
    std::vector<uint32_t> fill(c.user_begin.begin(), c.user_begin.end() - 1);
    for (size_t i = 0; i < n_nodes; ++i)
      for (uint32_t a : c.args_of(i)) c.user_index[fill[a]++] = static_cast<uint32_t>(i);
  }

  std::vector<Node*> phs = joint.placeholders();
  AOTGRAD_CHECK(phs.size() == info.num_primals + info.num_tangents,
                "min-cut partition: the joint graph has ", phs.size(), " placeholders, expected ",
                info.num_primals, " primals and ", info.num_tangents, " tangents");
  AOTGRAD_CHECK(joint.output() != nullptr, "min-cut partition: the joint graph has no output");
  c.primals.assign(phs.begin(), phs.begin() + info.num_primals);
  c.tangents.assign(phs.begin() + info.num_primals, phs.end());
  c.num_forward_outputs = info.num_forward_outputs;
  std::vector<Arg> outs;
  flatten(joint.output()->args()[0], outs);
  AOTGRAD_CHECK(outs.size() >= info.num_forward_outputs,
                "min-cut partition: the joint graph returns ", outs.size(),
                " values, fewer than its ", info.num_forward_outputs, " forward outputs");
  auto is_output = [&](size_t i) { return kind[i] == NodeKind::Output; };

  c.tangents_closure.assign(n_nodes, false);
  c.required_bw.assign(n_nodes, false);
  c.required_fw.assign(n_nodes, false);
  c.unclaimed.assign(n_nodes, false);
  c.static_lifetime.assign(n_nodes, false);
  c.dist_from_bw.assign(n_nodes, 0);
  c.fw_order.assign(n_nodes, -1);

  for (const Node* t : c.tangents) c.tangents_closure[c.at(t)] = true;
  for (size_t i = 0; i < n_nodes; ++i) {
    if (!c.tangents_closure[i]) continue;
    for (uint32_t u : c.users_of(i))
      if (!is_output(u)) c.tangents_closure[u] = true;
  }
  c.required_bw = c.tangents_closure;
  for (size_t k = info.num_forward_outputs; k < outs.size(); ++k)
    outs[k].for_each_node([&](Node* m) { c.required_bw[c.at(m)] = true; });

  // The forward-only graph: what the forward outputs need from the primals (and, as fx's dead code
  // elimination keeps impure nodes, random ops computable from the primals).
  std::vector<bool> from_primals(n_nodes, false);
  for (const Node* p : c.primals) from_primals[c.at(p)] = true;
  for (size_t i = 0; i < n_nodes; ++i) {
    NodeKind k = kind[i];
    if (k != NodeKind::Call && k != NodeKind::GetItem) continue;
    bool ok = true;
    for (uint32_t a : c.args_of(i)) ok = ok && from_primals[a];
    from_primals[i] = ok;
  }
  for (size_t k = 0; k < info.num_forward_outputs; ++k)
    outs[k].for_each_node([&](Node* m) {
      AOTGRAD_CHECK(from_primals[c.at(m)], "min-cut partition: forward output ", m->describe(),
                    " depends on a tangent");
      c.required_fw[c.at(m)] = true;
    });
  for (size_t i = 0; i < n_nodes; ++i)
    if (from_primals[i] && kind[i] == NodeKind::Call && is_impure(*c.nodes[i]))
      c.required_fw[i] = true;
  for (size_t i = n_nodes; i-- > 0;) {
    if (!c.required_fw[i]) continue;
    for (uint32_t a : c.args_of(i)) c.required_fw[a] = true;
  }
  for (const Node* p : c.primals) c.required_fw[c.at(p)] = true;

  for (size_t i = 0; i < n_nodes; ++i)
    c.unclaimed[i] = !c.required_fw[i] && !c.required_bw[i] && !is_output(i);
  for (size_t k = 0; k < c.primals.size() && k < options.static_lifetime_inputs.size(); ++k)
    c.static_lifetime[c.at(c.primals[k])] = options.static_lifetime_inputs[k];

  int64_t order = 0;
  for (size_t i = 0; i < n_nodes; ++i)
    if (c.required_fw[i]) c.fw_order[i] = order++;
  for (size_t i = n_nodes; i-- > 0;) {
    if (is_output(i)) {
      c.dist_from_bw[i] = kDistInf;
    } else if (!c.required_fw[i]) {
      c.dist_from_bw[i] = 0;
    } else {
      int64_t d = kDistInf;
      for (uint32_t u : c.users_of(i)) d = std::min(d, c.dist_from_bw[u] + 1);
      c.dist_from_bw[i] = d;
    }
  }
  return c;
}

// --- extraction ----------------------------------------------------------------------------------

Partition partition_with_saved_values(const Graph& joint, const JointNodeClasses& c,
                                      const std::vector<const Node*>& saved_in) {
  const size_t n_nodes = c.nodes.size();
  std::vector<Arg> outs;
  flatten(joint.output()->args()[0], outs);
  std::vector<Arg> fw_outs(outs.begin(), outs.begin() + c.num_forward_outputs);
  std::vector<Arg> grads(outs.begin() + c.num_forward_outputs, outs.end());

  // Tensors first, then symbolic scalars (save_for_backward takes tensors; PyTorch stashes the
  // SymInts after them).
  std::vector<const Node*> saved;
  for (const Node* s : saved_in)
    if (!s->meta().is_sym_scalar()) saved.push_back(s);
  for (const Node* s : saved_in)
    if (s->meta().is_sym_scalar()) saved.push_back(s);

  // The backward: what the gradients need, computed from the saved values and the tangents.
  std::vector<bool> bw_input(n_nodes, false), needed_bw(n_nodes, false);
  for (const Node* s : saved) bw_input[c.at(s)] = true;
  for (const Node* t : c.tangents) bw_input[c.at(t)] = true;
  std::vector<bool> used_saved(n_nodes, false);
  for (const Arg& g : grads)
    g.for_each_node([&](Node* m) { needed_bw[c.at(m)] = used_saved[c.at(m)] = true; });
  for (size_t i = n_nodes; i-- > 0;) {
    if (!needed_bw[i] || bw_input[i]) continue;
    const Node* n = c.nodes[i];
    AOTGRAD_CHECK(n->kind() != NodeKind::Placeholder, "min-cut partition: the backward needs ",
                  n->describe(), ", which is neither saved nor a tangent");
    for (uint32_t a : c.args_of(i)) needed_bw[a] = used_saved[a] = true;
  }
  std::vector<const Node*> kept;
  for (const Node* s : saved)
    if (used_saved[c.at(s)]) kept.push_back(s);

  // The forward: the forward outputs and the kept saved values from the primals.
  std::vector<bool> needed_fw(n_nodes, false);
  for (const Arg& o : fw_outs) o.for_each_node([&](Node* m) { needed_fw[c.at(m)] = true; });
  for (const Node* s : kept) needed_fw[c.at(s)] = true;
  // A random op (or another impure one) of the forward runs there even when nothing uses it:
  // dropping it would shift the numbers every later random op draws (fx's is_impure).
  for (size_t i = 0; i < n_nodes; ++i)
    if (c.required_fw[i] && c.nodes[i]->kind() == NodeKind::Call && is_impure(*c.nodes[i]))
      needed_fw[i] = true;
  for (size_t i = n_nodes; i-- > 0;) {
    if (!needed_fw[i]) continue;
    const Node* n = c.nodes[i];
    AOTGRAD_CHECK(n->kind() != NodeKind::Placeholder || i < c.primals.size(),
                  "min-cut partition: the forward needs ", n->describe(),
                  ", which is not a primal");
    for (uint32_t a : c.args_of(i)) needed_fw[a] = true;
  }
  std::vector<const Node*> fw_nodes;
  for (size_t i = 0; i < n_nodes; ++i)
    if (needed_fw[i] && c.nodes[i]->kind() != NodeKind::Placeholder) fw_nodes.push_back(c.nodes[i]);

  // reordering_to_mimic_autograd_engine: from the first op that uses a tangent on, each backward op
  // in turn, preceded by the not-yet-computed ops it needs in graph order; recomputed forward ops
  // thus run just before their first use instead of all at the start.
  std::vector<size_t> bw_nodes;
  for (size_t i = 0; i < n_nodes; ++i)
    if (needed_bw[i] && !bw_input[i]) bw_nodes.push_back(i);
  std::vector<bool> is_tangent(n_nodes, false);
  for (const Node* t : c.tangents) is_tangent[c.at(t)] = true;
  size_t first = bw_nodes.size();
  for (size_t k = 0; k < bw_nodes.size() && first == bw_nodes.size(); ++k)
    for (uint32_t a : c.args_of(bw_nodes[k]))
      if (is_tangent[a]) first = std::min(first, k);
  std::vector<const Node*> bw_order;
  if (first == bw_nodes.size()) {
    for (size_t i : bw_nodes) bw_order.push_back(c.nodes[i]);
  } else {
    std::vector<bool> placed(bw_input);
    auto insert = [&](size_t root) {
      if (placed[root]) return;
      std::vector<size_t> stack{root}, group;
      placed[root] = true;
      while (!stack.empty()) {
        size_t i = stack.back();
        stack.pop_back();
        group.push_back(i);
        for (uint32_t a : c.args_of(i))
          if (!placed[a]) {
            placed[a] = true;
            stack.push_back(a);
          }
      }
      std::sort(group.begin(), group.end());
      for (size_t i : group) bw_order.push_back(c.nodes[i]);
    };
    for (size_t k = first; k < bw_nodes.size(); ++k) insert(bw_nodes[k]);
    for (const Arg& g : grads) g.for_each_node([&](Node* m) { insert(c.at(m)); });
  }

  Partition p;
  p.num_forward_outputs = c.num_forward_outputs;
  std::vector<Arg> fw_result = fw_outs;
  for (const Node* s : kept) {
    fw_result.push_back(Arg(const_cast<Node*>(s)));
    p.saved.push_back(s->name());
  }
  p.fw = extract_subgraph(joint, fw_nodes, c.primals, fw_result, /*list_output=*/false);
  std::vector<const Node*> bw_inputs = kept;
  bw_inputs.insert(bw_inputs.end(), c.tangents.begin(), c.tangents.end());
  p.bw = extract_subgraph(joint, bw_order, bw_inputs, grads, /*list_output=*/true);
  return p;
}

// --- the partitioner -----------------------------------------------------------------------------

namespace {

// Why each value was saved and what the backward recomputes; the bytes come with the saved list
// of the final partition (explain_saved).
void fill_explain(const Graph& joint, const JointNodeClasses& c, const MinCutSolution& sol,
                  const Partition& p, MinCutExplain& e) {
  std::unordered_map<const Node*, std::string> banned;
  for (auto& [n, reason] : sol.banned) {
    banned.emplace(n, reason);
    e.banned.push_back(
        {n->name(),
         n->kind() == NodeKind::Call ? n->op()->name : std::string(OpClasses::packet(*n)), reason});
  }
  for (const std::string& name : p.saved) {
    const Node* n = joint.find(name);
    MinCutExplain::Saved s;
    s.name = name;
    s.annotation = n->meta().annotation();
    const int64_t* w = sol.weight.find(n);
    s.weight = w ? *w : 0;
    auto b = banned.find(n);
    if (b != banned.end())
      s.why = b->second == "primal input" ? "primal input" : "cannot recompute: " + b->second;
    else
      s.why = "min cut";
    e.saved.push_back(std::move(s));
  }
  std::unordered_set<std::string> fw_calls;
  for (const Node* n : p.fw->nodes())
    if (n->kind() == NodeKind::Call) fw_calls.insert(n->name());
  for (const Node* n : p.bw->nodes())
    if (n->kind() == NodeKind::Call && fw_calls.count(n->name()))
      e.recomputed.push_back({n->name(), n->op()->name});
}

// The saved values of the final partition, in its order: the generator states
// functionalize_rng_ops added in their place, and each value's bytes from summarize_saved.
void explain_saved(const std::vector<RngStateSave>& rng, const Partition& p, MinCutExplain& e) {
  std::unordered_map<std::string, MinCutExplain::Saved> by_name;
  for (MinCutExplain::Saved& s : e.saved) by_name.emplace(s.name, std::move(s));
  std::unordered_map<std::string, const RngStateSave*> states;
  for (const RngStateSave& r : rng) states.emplace(r.fw_state, &r);
  SavedSummary summary = summarize_saved(*p.fw, p.saved);
  e.saved.clear();
  for (const SavedValue& v : summary.values) {
    MinCutExplain::Saved s;
    if (auto st = states.find(v.name); st != states.end()) {
      s.name = v.name;
      s.annotation = cpu_rng_state_meta().annotation();
      s.why = "rng state for recomputed " + st->second->name;
    } else {
      s = std::move(by_name.at(v.name));
    }
    s.bytes = v.bytes;
    s.is_input = v.is_input;
    e.saved.push_back(std::move(s));
  }
  e.saved_bytes = summary.bytes;
  e.saved_activation_bytes = summary.activation_bytes;
}

}  // namespace

Partition min_cut_partition(const JointGraph& joint, const MinCutOptions& options,
                            MinCutExplain* explain, ScheduleKind then) {
  // The joint graph without dead code and with common subexpressions merged (fx_graph_cse): a
  // copy when either changes something, else the joint graph itself.
  std::unique_ptr<Graph> cleaned;
  const Graph* g = joint.graph.get();
  int merged = 0;
  if (has_dead_code(*g) || (options.cse && has_common_subexpressions(*g))) {
    cleaned = joint.graph->clone();
    eliminate_dead_code(*cleaned);
    if (options.cse) {
      CommonSubexpressionElimination cse;
      cse.run(*cleaned);
      merged = static_cast<int>(cse.changes());
    }
    g = cleaned.get();
  }
  JointNodeClasses c = classify_joint_nodes(*g, joint, options);
  bool any_bw = std::find(c.required_bw.begin(), c.required_bw.end(), true) != c.required_bw.end();
  if (!any_bw) return default_partition(joint);
  BudgetChoice choice = choose_saved_values(c, options, OpClasses::defaults(), then);
  const MinCutSolution& sol = choice.solution;
  Partition p = partition_with_saved_values(*g, c, sol.saved);
  RecomputeAgain again;
  if (choice.again_rounds > 0) {
    // As the budget priced the plan: the same rounds on the same graphs.
    again = recompute_plan_again(p, options, choice.again_rounds, then);
    AOTGRAD_CHECK(static_cast<int>(again.rounds.size()) == choice.again_rounds,
                  "min-cut partition: the budget's plan computes ", choice.again_rounds,
                  " values again, its partition ", again.rounds.size());
  }
  if (explain) {
    *explain = MinCutExplain{};
    explain->cse_merged = merged;
    explain->cut_value = sol.cut_value;
    explain->memory_budget = options.activation_memory_budget;
    explain->max_slowdown = options.max_slowdown;
    explain->budget_stage = choice.stage;
    explain->memory_ratio = choice.memory_ratio;
    explain->budget_plans = choice.plans;
    explain->budget_chosen = choice.chosen;
    for (const Node* n : choice.knapsack_recomputable)
      explain->knapsack_recomputable.push_back(n->name());
    fill_explain(*g, c, sol, p, *explain);
    explain->computed_again = recompute_again_text(again);
    if (choice.stage.rfind("inputs", 0) == 0)
      for (auto& s : explain->saved) s.why = "memory budget: only inputs are saved";
  }
  // Random ops the backward recomputes replay the forward's generator state (§13.25).
  std::vector<RngStateSave> rng = functionalize_rng_ops(p);
  if (explain) explain_saved(rng, p, *explain);
  return p;
}

std::string explain_text(const MinCutExplain& e) {
  std::ostringstream os;
  os << "saved: " << e.saved.size() << " values, " << e.saved_bytes << " bytes ("
     << e.saved_activation_bytes << " bytes of activations), cut " << e.cut_value << "\n";
  for (const auto& s : e.saved)
    os << "  " << s.name << " " << s.annotation << " " << s.bytes << " bytes"
       << (s.is_input ? " (input)" : "") << ": " << s.why << "\n";
  if (!e.budget_plans.empty() || e.memory_budget < 1) {
    if (e.max_slowdown >= 0)
      os << "memory budget: auto, max slowdown " << e.max_slowdown;
    else
      os << "memory budget: " << e.memory_budget;
    os << " (" << e.budget_stage << ", memory ratio " << e.memory_ratio << ")\n";
    for (const auto& n : e.knapsack_recomputable) os << "  knapsack recomputes " << n << "\n";
    os << "budget plans: " << e.budget_plans.size() << "\n";
    for (size_t i = 0; i < e.budget_plans.size(); ++i) {
      const BudgetPlan& p = e.budget_plans[i];
      os << (i == e.budget_chosen ? "  * " : "    ") << p.stage << ": peak " << p.peak_bytes
         << " bytes (peak ratio " << p.peak_ratio << "), memory ratio " << p.memory_ratio
         << ", recompute cost " << p.recompute_cost << " of step " << p.step_cost << "\n";
    }
  }
  if (!e.computed_again.empty()) {
    os << "computed again:\n";
    std::istringstream lines(e.computed_again);
    for (std::string line; std::getline(lines, line);) os << "  " << line << "\n";
  }
  os << "recomputed: " << e.recomputed.size() << " ops\n";
  for (const auto& r : e.recomputed) os << "  " << r.name << " " << r.op << "\n";
  os << "banned: " << e.banned.size() << " nodes\n";
  for (const auto& b : e.banned) os << "  " << b.name << " " << b.op << ": " << b.reason << "\n";
  return os.str();
}

}  // namespace aotgrad
