// aotgrad: the activation memory budget (§13.40). PyTorch's choose_saved_values_set in
// torch/_functorch/partitioners.py gives the plans -- the runtime-optimized min cut, the cuts
// without its heuristics, 0/1 knapsacks over the nodes the cut may not recompute, saving only the
// primals -- and prices them by summed saved bytes; aotgrad prices each plan by the training
// step's predicted peak (memory_timeline.h) and takes the cheapest plan whose peak the budget
// allows, so the peak never rises as the budget falls.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "aotgrad/ir/graph.h"
#include "aotgrad/transforms/partition/cost_model.h"
#include "aotgrad/transforms/partition/memory_schedule.h"
#include "aotgrad/transforms/partition/min_cut.h"
#include "aotgrad/transforms/partition/partition.h"
#include "aotgrad/transforms/partition/recompute_again.h"

namespace aotgrad {

/// What the budget chose.
struct BudgetChoice {
  /// The saved set (graph order) and the banned nodes of the solve that produced it.
  MinCutSolution solution;
  /// "runtime optimized", "more aggressive", "aggressive", "recompute norms", "knapsack" or
  /// "inputs".
  std::string stage;
  /// Summed bytes of the saved values on the scale of the primals (0) to the runtime-optimized
  /// cut (1).
  double memory_ratio = 1;
  /// The banned nodes the knapsack allowed the backward to recompute (stage "knapsack").
  std::vector<const Node*> knapsack_recomputable;
  /// The rounds of recompute_again the chosen plan runs on its partition (BudgetPlan).
  int again_rounds = 0;
  /// The chosen plan's predicted peak and its place on the peak scale (BudgetPlan).
  int64_t peak_bytes = 0;
  double peak_ratio = 1;
  double recompute_cost = 0;
  /// Every plan weighed (none at budget 1), in the order they were built; the chosen one is
  /// plans[chosen].
  std::vector<BudgetPlan> plans;
  size_t chosen = 0;
};

/// The saved set for options.activation_memory_budget (in [0, 1], else Error). 1 gives the
/// runtime-optimized cut. Otherwise the plans, built the same way whatever the budget: the
/// runtime-optimized cut, the cut without the fusion heuristics ("more aggressive"), the cut that
/// also recomputes ops outside the allowlist ("aggressive"), the runtime-optimized cut that may
/// also run normalizations again in the backward ("recompute norms",
/// MinCutOptions::recompute_norms_from_saved; by peak only), the knapsacks
/// (options.memory_budget_solver) at capacities 0.05, 0.10, ..., 0.95 over the aggressive cut's
/// banned nodes that the backward needs and that are not views of inputs -- memory normalized to
/// the primals..runtime-optimized scale, runtime from estimate_runtime (options.cost_model); each
/// saves what it picks and lets the min cut recompute the rest (solve_min_cut's dont_ban) -- and
/// saving only the primals ("inputs"). Each is partitioned and priced by its predicted
/// training-step peak (the graphs reordered by schedule_for_memory first when `then`, the order the
/// pipeline will give them, is ScheduleKind::kMemory); the budget takes, among the plans whose peak
/// ratio is at most the budget, the one with the least recompute cost (then the lower peak, then
/// the earlier plan). The plans do not depend on the budget, so a lower budget only removes plans:
/// its choice never peaks higher (and never recomputes less). At 0 that is the lowest peak among
/// the plans (saving only the primals, unless a plan peaks no higher for less).
///
/// With options.max_slowdown at least 0 (--memory-budget=auto), the same plans, and the lowest
/// peak among those whose recompute cost exceeds the runtime-optimized cut's by at most
/// max_slowdown times that cut's whole step cost (estimate_runtime over its forward and backward).
///
/// With options.budget_pricing kSum, PyTorch's choose_saved_values_set: 0 saves only the primals;
/// otherwise the first of the more-aggressive and aggressive cuts whose summed memory ratio is
/// below the budget, else the knapsack at capacity the budget.
BudgetChoice choose_saved_values(const JointNodeClasses& classes, const MinCutOptions& options,
                                 const OpClasses& ops = OpClasses::defaults(),
                                 ScheduleKind then = ScheduleKind::kMemory);

/// At most `max_rounds` rounds of recompute_again on a plan's partition `p` (its backward
/// replaced), as the budget prices them: `p` ordered by schedule_for_memory first when `then` is
/// ScheduleKind::kMemory, the peak with options.gradients_kept, the copies' cost by
/// options.cost_model. The budget runs it to weigh the plans that compute values again; the
/// min-cut partition runs it again with the chosen plan's BudgetChoice::again_rounds.
RecomputeAgain recompute_plan_again(Partition& p, const MinCutOptions& options, int max_rounds,
                                    ScheduleKind then = ScheduleKind::kMemory);

}  // namespace aotgrad
