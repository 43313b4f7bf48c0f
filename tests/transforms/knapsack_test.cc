// Tests for the memory budget's knapsack solvers against a brute force over every subset.
#include "aotgrad/transforms/partition/knapsack.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "aotgrad/ir/error.h"

namespace aotgrad {
namespace {

struct Instance {
  std::vector<double> memory, runtime;
  double max_memory = 0;
};

/// The largest summed runtime of a subset within max_memory, memory taken through `quantize`.
template <typename Q>
double brute_force(const Instance& in, Q quantize) {
  const size_t n = in.memory.size();
  double best = 0;
  for (uint32_t mask = 0; mask < (1u << n); ++mask) {
    double mem = 0, run = 0;
    for (size_t i = 0; i < n; ++i)
      if (mask >> i & 1u) {
        mem += quantize(in.memory[i]);
        run += in.runtime[i];
      }
    if (mem <= quantize(in.max_memory) && run > best) best = run;
  }
  return best;
}

/// The saved and recomputable lists partition the items, and the saved ones fit.
void ExpectConsistent(const Instance& in, const KnapsackResult& r, double slack = 0) {
  std::vector<int> seen(in.memory.size(), 0);
  double mem = 0, run = 0;
  for (int i : r.saved) {
    ++seen[i];
    mem += in.memory[i];
    run += in.runtime[i];
  }
  for (int i : r.recomputable) ++seen[i];
  for (int s : seen) EXPECT_EQ(s, 1);
  EXPECT_LE(mem, in.max_memory + slack);
  EXPECT_NEAR(run, r.runtime, 1e-9 * (1 + run));
}

Instance random_instance(std::mt19937& rng) {
  std::uniform_int_distribution<int> count(0, 12);
  std::uniform_real_distribution<double> unit(0, 1);
  Instance in;
  int n = count(rng);
  for (int i = 0; i < n; ++i) {
    // Some items are free, some cost nothing to recompute.
    in.memory.push_back(unit(rng) < 0.1 ? 0 : unit(rng) * 0.5);
    in.runtime.push_back(unit(rng) < 0.1 ? 0 : std::round(unit(rng) * 1000));
  }
  in.max_memory = unit(rng);
  return in;
}

TEST(Knapsack, DpIsOptimalOnItsQuantizedMemory) {
  std::mt19937 rng(7);
  auto quantized = [](double m) { return static_cast<double>(std::llround(m * 10000)); };
  for (int iter = 0; iter < 300; ++iter) {
    Instance in = random_instance(rng);
    KnapsackResult r = dp_knapsack(in.memory, in.runtime, in.max_memory);
    // Feasible up to the quantization (half a step per item).
    ExpectConsistent(in, r, 0.5e-4 * (in.memory.size() + 1));
    EXPECT_DOUBLE_EQ(r.runtime, brute_force(in, quantized)) << "instance " << iter;
  }
}

TEST(Knapsack, IlpIsOptimal) {
  std::mt19937 rng(8);
  auto exact = [](double m) { return m; };
  for (int iter = 0; iter < 60; ++iter) {
    Instance in = random_instance(rng);
    KnapsackResult r = ilp_knapsack(in.memory, in.runtime, in.max_memory);
    ExpectConsistent(in, r, 1e-9);
    EXPECT_NEAR(r.runtime, brute_force(in, exact), 1e-6) << "instance " << iter;
  }
}

TEST(Knapsack, GreedyFitsAndTakesByRuntimePerByte) {
  std::mt19937 rng(9);
  auto exact = [](double m) { return m; };
  for (int iter = 0; iter < 300; ++iter) {
    Instance in = random_instance(rng);
    KnapsackResult r = greedy_knapsack(in.memory, in.runtime, in.max_memory);
    ExpectConsistent(in, r);
    EXPECT_LE(r.runtime, brute_force(in, exact) + 1e-9);
  }
  // The best runtime per byte first: 9/0.3, then 10/0.5 (as dense as 12/0.6, and first), and
  // 12/0.6 no longer fits.
  KnapsackResult r = greedy_knapsack({0.5, 0.3, 0.6}, {10, 9, 12}, 0.85);
  EXPECT_EQ(r.saved, (std::vector<int>{0, 1}));
  EXPECT_EQ(r.recomputable, (std::vector<int>{2}));
  // Where greedy is not optimal: one large item beats two dense small ones.
  Instance trap{{0.6, 0.5, 0.5}, {7, 5.5, 5.5}, 1.0};
  EXPECT_DOUBLE_EQ(greedy_knapsack(trap.memory, trap.runtime, trap.max_memory).runtime, 7);
  EXPECT_DOUBLE_EQ(dp_knapsack(trap.memory, trap.runtime, trap.max_memory).runtime, 11);
  EXPECT_DOUBLE_EQ(ilp_knapsack(trap.memory, trap.runtime, trap.max_memory).runtime, 11);
}

TEST(Knapsack, ZeroBudgetSavesOnlyFreeItems) {
  for (KnapsackSolver s : {KnapsackSolver::kGreedy, KnapsackSolver::kDp, KnapsackSolver::kIlp}) {
    KnapsackResult r = solve_knapsack(s, {0.2, 0, 0.7}, {5, 3, 9}, 0);
    EXPECT_EQ(r.saved, (std::vector<int>{1})) << knapsack_solver_name(s);
    EXPECT_EQ(r.recomputable, (std::vector<int>{0, 2})) << knapsack_solver_name(s);
  }
}

TEST(Knapsack, SolverNamesAndBadItems) {
  EXPECT_EQ(parse_knapsack_solver("greedy"), KnapsackSolver::kGreedy);
  EXPECT_EQ(parse_knapsack_solver("dp"), KnapsackSolver::kDp);
  EXPECT_EQ(parse_knapsack_solver("ilp"), KnapsackSolver::kIlp);
  try {
    parse_knapsack_solver("dp_knapsack_sliding_hirschberg");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("known: greedy, dp, ilp"), std::string::npos) << e.message();
  }
  EXPECT_THROW(dp_knapsack({0.1, 0.2}, {1}, 1), Error);
  EXPECT_THROW(greedy_knapsack({-0.1}, {1}, 1), Error);
}

}  // namespace
}  // namespace aotgrad
