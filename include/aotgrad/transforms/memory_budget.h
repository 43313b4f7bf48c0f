// aotgrad: the activation memory budget (§13.40), as choose_saved_values_set in
// torch/_functorch/partitioners.py: between the runtime-optimized min cut (budget 1) and saving
// only the primals (budget 0; and the forward collectives the backward reads, which are never
// recomputed), a 0/1 knapsack over the nodes the cut may not recompute decides
// which of them the backward recomputes.
#pragma once

#include <string>
#include <vector>

#include "aotgrad/ir/graph.h"
#include "aotgrad/transforms/min_cut.h"

namespace aotgrad {

/// estimate_runtime with the "flops" estimator: the floating-point operations of a call from its
/// metadata (size hints, 4096 elements where a size has none). mm/addmm 2*M*K*N, bmm/baddbmm
/// 2*B*M*K*N, convolution 2 * output elements * (input channels per group * kernel elements),
/// convolution_backward that for each of grad_input and grad_weight it computes; every other op
/// (pointwise ops, reductions, copies) its element count: the most elements among its tensor
/// arguments and results. At least 1, as PyTorch's max(flops, 1).
double estimate_runtime(const Node& n);

/// What the budget chose.
struct BudgetChoice {
  /// The saved set (graph order) and the banned nodes of the solve that produced it.
  MinCutSolution solution;
  /// "runtime optimized", "more aggressive", "aggressive", "knapsack" or "inputs".
  std::string stage;
  /// Summed bytes of the saved values on the scale of the primals (0) to the runtime-optimized
  /// cut (1).
  double memory_ratio = 1;
  /// The banned nodes the knapsack allowed the backward to recompute (stage "knapsack").
  std::vector<const Node*> knapsack_recomputable;
};

/// choose_saved_values_set for options.activation_memory_budget (in [0, 1], else Error):
/// 1 gives the runtime-optimized cut. 0 saves only the primals. In between, the first of the
/// runtime-optimized cut, the cut without the fusion heuristics ("more aggressive") and the cut
/// that also recomputes ops outside the allowlist ("aggressive") whose memory ratio is below the
/// budget; failing that, the knapsack (options.memory_budget_solver) over the aggressive cut's
/// banned nodes that the backward needs and that are not views of inputs -- memory normalized to
/// that scale, runtime from estimate_runtime, capacity the budget -- saves what it picks and lets
/// the min cut recompute the rest (solve_min_cut's dont_ban).
BudgetChoice choose_saved_values(const JointNodeClasses& classes, const MinCutOptions& options,
                                 const OpClasses& ops = OpClasses::defaults());

}  // namespace aotgrad
