// aotgrad: the 0/1 knapsack solvers of the activation memory budget (§13.40), as
// torch/_functorch/_activation_checkpointing/knapsack.py.
#pragma once

#include <string_view>
#include <vector>

namespace aotgrad {

/// activation_memory_budget_solver: how the knapsack over the banned nodes is solved.
enum class KnapsackSolver {
  kGreedy,  // by runtime per byte, taking what still fits
  kDp,      // PyTorch's default: the pseudo-polynomial DP on memory quantized to 1/10000
  kIlp,     // a mixed-integer program solved exactly by CBC (COIN-OR)
};

/// "greedy", "dp", "ilp"; throws Error naming the known solvers otherwise.
KnapsackSolver parse_knapsack_solver(std::string_view name);
std::string_view knapsack_solver_name(KnapsackSolver s);

/// Which items to keep: the saved items maximize the summed runtime (the recomputation they spare)
/// with their summed memory at most `max_memory`; every other item may be recomputed.
struct KnapsackResult {
  double runtime = 0;                    // summed runtime of the saved items
  std::vector<int> saved, recomputable;  // item indices, each ascending
};

/// Solves the knapsack of items (memory[i], runtime[i]) (both non-negative, same length) under
/// `max_memory`. Throws Error if CBC fails (kIlp).
KnapsackResult solve_knapsack(KnapsackSolver solver, const std::vector<double>& memory,
                              const std::vector<double>& runtime, double max_memory);

KnapsackResult greedy_knapsack(const std::vector<double>& memory,
                               const std::vector<double>& runtime, double max_memory);
KnapsackResult dp_knapsack(const std::vector<double>& memory, const std::vector<double>& runtime,
                           double max_memory);
KnapsackResult ilp_knapsack(const std::vector<double>& memory, const std::vector<double>& runtime,
                            double max_memory);

}  // namespace aotgrad
