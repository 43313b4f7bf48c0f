// aotgrad: the activation memory budget (choose_saved_values_set).
#include "aotgrad/transforms/partition/memory_budget.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_set>

#include "aotgrad/ir/error.h"
#include "aotgrad/ops/known_ops.h"
#include "aotgrad/transforms/input_mutations.h"
#include "aotgrad/transforms/partition/memory_schedule.h"
#include "aotgrad/transforms/partition/memory_timeline.h"
#include "aotgrad/transforms/partition/partition.h"
#include "aotgrad/transforms/passes/dce.h"

namespace aotgrad {
namespace {

double sum_bytes(const std::vector<const Node*>& nodes) {
  double s = 0;
  for (const Node* n : nodes) s += static_cast<double>(value_nbytes(n->meta()));
  return s;
}

// The inputs, and the forward collectives the backward reads -- the last collective of each chain,
// a wait, which no other collective uses: a collective is never recomputed (Note [Functional
// collectives]), so even the smallest choice saves those.
std::vector<const Node*> inputs_and_collectives(const JointNodeClasses& c, const OpClasses& ops) {
  std::vector<const Node*> saved = c.primals;
  for (size_t i = 0; i < c.nodes.size(); ++i) {
    const Node& n = *c.nodes[i];
    if (!c.required_fw[i] || c.tangents_closure[i] || !ops.is_collective(n)) continue;
    // A sharded parameter's gather: the backward gathers it again, unless it is marked MUST_SAVE
    // (Note [Re-gather or keep]).
    if (OpClasses::is_regather(n) && n.info().recompute != RecomputePolicy::MustSave) continue;
    if (c.dist_from_bw[i] >= JointNodeClasses::kDistNever) continue;
    bool last = true;
    for (uint32_t u : c.users_of(i)) last = last && !ops.is_collective(*c.nodes[u]);
    if (last) saved.push_back(&n);
  }
  return saved;
}

// A sharded parameter's gather that the budget may issue again instead of saving (Note [Re-gather
// or keep]): the wait of a regather no tag decides.
bool regather_item(const Node& n) {
  return OpClasses::is_regather(n) && ops::is_call(&n, ops::wait_tensor()) &&
         n.info().recompute != RecomputePolicy::MustSave;
}

}  // namespace

namespace {

// A plan before pricing.
struct Plan {
  std::string stage;
  MinCutSolution solution;
  std::vector<const Node*> knapsack_recomputable;
  double memory_ratio = 1;
  int again_rounds = 0;
};

// The plan's partition priced: its predicted training-step peak (as the default backend runs it,
// re-inplaced, and reordered by the memory schedule when the pipeline will) and the estimated
// runtime of the forward calls its backward computes again.
BudgetPlan price(const Graph& joint, const JointNodeClasses& c, const Plan& plan,
                 const MinCutOptions& options, ScheduleKind then) {
  const bool scheduled = then == ScheduleKind::kMemory;
  Partition p = partition_with_saved_values(joint, c, plan.solution.saved);
  BudgetPlan r;
  r.stage = plan.stage;
  r.memory_ratio = plan.memory_ratio;
  r.peak_bytes = scheduled
                     ? schedule_for_memory(p.fw, p.bw, p.saved, options.gradients_kept).peak_after
                     : training_step_timeline(*p.fw, *p.bw, p.saved, /*reinplace=*/true,
                                              options.gradients_kept)
                           .peak_bytes;
  std::unordered_set<std::string_view> fw_calls;
  for (const Node* n : p.fw->nodes())
    if (n->kind() == NodeKind::Call) fw_calls.insert(n->name());
  for (const Node* n : p.bw->nodes())
    if (n->kind() == NodeKind::Call && fw_calls.count(n->name()))
      r.recompute_cost += estimate_runtime(*n, options.cost_model);
  for (const Graph* part : {p.fw.get(), p.bw.get()})
    for (const Node* n : part->nodes())
      if (n->kind() == NodeKind::Call) r.step_cost += estimate_runtime(*n, options.cost_model);
  return r;
}

// plans[base] with values of its backward computed again (recompute_again), one plan per round,
// appended to `plans` and, priced, to `priced`.
void add_again_plans(const Graph& joint, const JointNodeClasses& c, size_t base,
                     const MinCutOptions& options, ScheduleKind then, std::vector<Plan>& plans,
                     std::vector<BudgetPlan>& priced) {
  Partition p = partition_with_saved_values(joint, c, plans[base].solution.saved);
  RecomputeAgain again = recompute_plan_again(p, options, RecomputeAgainOptions{}.max_rounds, then);
  for (size_t k = 0; k < again.rounds.size(); ++k) {
    const RecomputeAgainRound& round = again.rounds[k];
    Plan plan = plans[base];
    plan.stage += " + again " + std::to_string(k + 1);
    plan.again_rounds = static_cast<int>(k + 1);
    BudgetPlan bp = priced[base];
    bp.stage = plan.stage;
    bp.again_rounds = plan.again_rounds;
    bp.peak_bytes = round.peak_bytes;
    bp.recompute_cost += round.extra_cost;
    bp.step_cost += round.extra_cost;
    plans.push_back(std::move(plan));
    priced.push_back(std::move(bp));
  }
}

// The result for `plan`: its solution, stage ("knapsack" for any capacity) and knapsack picks.
BudgetChoice take(BudgetChoice& r, Plan plan) {
  r.solution = std::move(plan.solution);
  const size_t again = plan.stage.find(" + again");
  const std::string base = plan.stage.substr(0, again);
  r.stage = (base.rfind("knapsack", 0) == 0 ? "knapsack" : base) +
            (again == std::string::npos ? "" : plan.stage.substr(again));
  r.memory_ratio = plan.memory_ratio;
  r.knapsack_recomputable = std::move(plan.knapsack_recomputable);
  r.again_rounds = plan.again_rounds;
  return std::move(r);
}

std::string capacity_stage(int k) {
  std::ostringstream os;
  os << "knapsack " << k / 20 << "." << (k % 20) * 5 / 10 << (k % 20) * 5 % 10;
  return os.str();
}

}  // namespace

RecomputeAgain recompute_plan_again(Partition& p, const MinCutOptions& options, int max_rounds,
                                    ScheduleKind then) {
  if (then == ScheduleKind::kMemory)
    schedule_for_memory(p.fw, p.bw, p.saved, options.gradients_kept);
  RecomputeAgainOptions o;
  o.scheduled = then == ScheduleKind::kMemory;
  o.gradients_kept = options.gradients_kept;
  o.cost_model = options.cost_model;
  o.max_rounds = max_rounds;
  return recompute_again(*p.fw, p.bw, p.saved, o);
}

BudgetChoice choose_saved_values(const JointNodeClasses& c, const MinCutOptions& options,
                                 const OpClasses& ops, ScheduleKind then) {
  const double budget = options.activation_memory_budget;
  if (!(budget >= 0 && budget <= 1)) {
    std::ostringstream os;
    os << "the activation memory budget must be in [0, 1]; got " << budget;
    throw Error(os.str());
  }
  const bool automatic = options.max_slowdown >= 0;
  const bool by_peak = options.budget_pricing == BudgetPricing::kPeak || automatic;
  BudgetChoice r;
  if (budget == 0 && !by_peak) {
    r.solution.saved = inputs_and_collectives(c, ops);
    r.stage = "inputs";
    r.memory_ratio = 0;
    return r;
  }
  r.solution = solve_min_cut(c, options, {}, ops);
  r.stage = "runtime optimized";
  if (budget == 1 && !automatic) return r;

  const double min_size = sum_bytes(c.primals);
  const double max_size = sum_bytes(r.solution.saved);
  // By summed bytes, a runtime-optimized cut that saves no more than the inputs is the answer.
  if (max_size <= min_size && !by_peak) return r;
  auto ratio = [&](const std::vector<const Node*>& saved) {
    return max_size > min_size ? (sum_bytes(saved) - min_size) / (max_size - min_size) : 1.0;
  };
  std::vector<Plan> plans;
  plans.push_back({"runtime optimized", r.solution, {}, 1.0});

  MinCutOptions more = options;
  more.ban_if_used_far_apart = false;
  more.ban_if_long_fusible_chains = false;
  more.ban_if_materialized_backward = false;
  MinCutSolution more_sol = solve_min_cut(c, more, {}, ops);
  double more_ratio = ratio(more_sol.saved);
  plans.push_back({"more aggressive", std::move(more_sol), {}, more_ratio});
  MinCutOptions aggressive = more;
  aggressive.ban_if_not_in_allowlist = false;
  MinCutSolution aggressive_sol = solve_min_cut(c, aggressive, {}, ops);
  double aggressive_ratio = ratio(aggressive_sol.saved);
  // PyTorch's order: the first of these below the budget.
  if (!by_peak)
    for (Plan& p : plans)
      if (p.stage != "runtime optimized" && p.memory_ratio < budget) return take(r, std::move(p));

  // The banned nodes the backward needs (dist_from_bw below "never") that do not live in an
  // input's storage, collectives left out: the knapsack's items, by name, then largest first.
  const Graph& g = *c.nodes.front()->graph();
  std::vector<const Node*> roots = storage_roots(g);
  std::vector<const Node*> items;
  for (const auto& [n, reason] : aggressive_sol.banned) {
    size_t i = c.at(n);
    const Node* root = roots[i];
    bool in_input = root->kind() == NodeKind::Placeholder;
    if (c.dist_from_bw[i] < JointNodeClasses::kDistNever && !in_input &&
        (!ops.is_collective(*n) || regather_item(*n)) && !is_effectful(*n->op()))
      items.push_back(n);
  }
  std::sort(items.begin(), items.end(),
            [](const Node* a, const Node* b) { return a->name() < b->name(); });
  std::stable_sort(items.begin(), items.end(), [](const Node* a, const Node* b) {
    return value_nbytes(a->meta()) > value_nbytes(b->meta());
  });
  Plan aggressive_plan{"aggressive", std::move(aggressive_sol), {}, aggressive_ratio};
  if (!by_peak && aggressive_ratio < budget) return take(r, std::move(aggressive_plan));
  plans.push_back(std::move(aggressive_plan));

  Plan inputs;
  inputs.stage = "inputs";
  inputs.solution.saved = inputs_and_collectives(c, ops);
  inputs.memory_ratio = 0;
  std::vector<double> memory, runtime;
  for (const Node* n : items) {
    memory.push_back(static_cast<double>(value_nbytes(n->meta())) / (max_size - min_size));
    double r = estimate_runtime(*n, options.cost_model);
    // A re-gather costs its all_gather's communication (Note [Re-gather or keep]).
    if (regather_item(*n)) r += estimate_runtime(*n->arg(0).node, options.cost_model);
    runtime.push_back(r);
  }
  // The knapsack at `capacity`: it saves what it picks, the min cut may recompute the rest.
  auto knapsack = [&](double capacity, std::string stage) {
    KnapsackResult kr = solve_knapsack(options.memory_budget_solver, memory, runtime, capacity);
    Plan plan;
    plan.stage = std::move(stage);
    std::unordered_set<const Node*> dont_ban;
    for (int idx : kr.recomputable) {
      dont_ban.insert(items[idx]);
      if (regather_item(*items[idx])) dont_ban.insert(items[idx]->arg(0).node);
      plan.knapsack_recomputable.push_back(items[idx]);
    }
    std::sort(plan.knapsack_recomputable.begin(), plan.knapsack_recomputable.end(),
              [&](const Node* a, const Node* b) { return c.at(a) < c.at(b); });
    plan.solution = solve_min_cut(c, aggressive, dont_ban, ops);
    plan.memory_ratio = ratio(plan.solution.saved);
    return plan;
  };
  if (!by_peak) return take(r, items.empty() ? std::move(inputs) : knapsack(budget, "knapsack"));

  // By peak: the runtime-optimized cut that may also run normalizations again in the backward
  // (MinCutOptions::recompute_norms_from_saved), the knapsacks at fixed capacities (each distinct
  // saved set once), then the primals.
  std::set<std::vector<const Node*>> seen;
  for (const Plan& p : plans) seen.insert(p.solution.saved);
  if (options.recompute_pointwise_from_saved) {
    MinCutOptions norms = options;
    norms.recompute_norms_from_saved = true;
    Plan plan{"recompute norms", solve_min_cut(c, norms, {}, ops), {}, 1.0};
    plan.memory_ratio = ratio(plan.solution.saved);
    if (seen.insert(plan.solution.saved).second) plans.push_back(std::move(plan));
  }
  if (!items.empty() && max_size > min_size) {
    for (int k = 19; k >= 1; --k) {
      Plan plan = knapsack(k / 20.0, capacity_stage(k));
      if (seen.insert(plan.solution.saved).second) plans.push_back(std::move(plan));
    }
  }
  plans.push_back(std::move(inputs));

  // Priced on the peak scale: the lowest plan's peak 0, the runtime-optimized cut 1. The lowest is
  // saving only the primals on most models; where recomputing everything keeps more alive at once
  // than a knapsack's plan does (nanoGPT, whose backward then holds every layer's recomputed
  // attention), anchoring at it would put the knapsacks below 0, every one allowed at every budget.
  for (const Plan& p : plans) r.plans.push_back(price(g, c, p, options, then));
  const BudgetPlan fastest = r.plans.front();
  // Automatic: within the allowance, the lowest peak, then the least recompute cost.
  auto within_allowance = [&](const BudgetPlan& p) {
    return p.recompute_cost - fastest.recompute_cost <=
           options.max_slowdown * fastest.step_cost * (1 + 1e-12);
  };
  auto lower_peak = [](const BudgetPlan& p, const BudgetPlan& b) {
    return p.peak_bytes < b.peak_bytes ||
           (p.peak_bytes == b.peak_bytes && p.recompute_cost < b.recompute_cost);
  };
  if (options.recompute_again) {
    // The lowest-peak plan, and auto's choice, with values computed again (Note [Computed
    // again]): one more plan per round, whatever the budget.
    const size_t n = r.plans.size();
    size_t lowest = 0, pick = n;
    for (size_t i = 1; i < n; ++i)
      if (r.plans[i].peak_bytes < r.plans[lowest].peak_bytes) lowest = i;
    if (automatic)
      for (size_t i = 0; i < n; ++i)
        if (within_allowance(r.plans[i]) && (pick == n || lower_peak(r.plans[i], r.plans[pick])))
          pick = i;
    add_again_plans(g, c, lowest, options, then, plans, r.plans);
    if (pick != n && pick != lowest) add_again_plans(g, c, pick, options, then, plans, r.plans);
  }
  const int64_t top = r.plans.front().peak_bytes;
  int64_t bottom = r.plans.back().peak_bytes;
  for (const BudgetPlan& p : r.plans) bottom = std::min(bottom, p.peak_bytes);
  for (BudgetPlan& p : r.plans)
    p.peak_ratio = top > bottom ? static_cast<double>(p.peak_bytes - bottom) /
                                      static_cast<double>(top - bottom)
                                : (p.peak_bytes <= top ? 0.0 : 1.0);
  // The least recompute cost among the plans the budget allows, then the lower peak, then the
  // earlier plan: a fixed order over a fixed set, so a lower budget never peaks higher. Some plan
  // is always allowed: the lowest peak's ratio is at most 0.
  // Automatic: the lowest peak among the plans that recompute at most max_slowdown of the
  // runtime-optimized step's cost more than it does, then the least recompute cost.
  auto allowed = [&](size_t i) {
    if (automatic) return within_allowance(r.plans[i]);
    return r.plans[i].peak_ratio <= budget + 1e-12;
  };
  auto first_better = [&](const BudgetPlan& p, const BudgetPlan& b) {
    if (automatic) return lower_peak(p, b);
    return p.recompute_cost < b.recompute_cost ||
           (p.recompute_cost == b.recompute_cost && p.peak_bytes < b.peak_bytes);
  };
  size_t best = r.plans.size();
  for (size_t i = 0; i < r.plans.size(); ++i) {
    if (!allowed(i)) continue;
    if (best == r.plans.size() || first_better(r.plans[i], r.plans[best])) best = i;
  }
  AOTGRAD_CHECK(best < r.plans.size(), "memory budget: no plan within budget ", budget);
  r.chosen = best;
  const BudgetPlan& priced = r.plans[best];
  r.peak_bytes = priced.peak_bytes;
  r.peak_ratio = priced.peak_ratio;
  r.recompute_cost = priced.recompute_cost;
  return take(r, std::move(plans[best]));
}

}  // namespace aotgrad
