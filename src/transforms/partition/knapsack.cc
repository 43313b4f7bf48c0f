// aotgrad: the 0/1 knapsack solvers of the activation memory budget.
#include "aotgrad/transforms/partition/knapsack.h"

#include <Cbc_C_Interface.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <type_traits>

#include "aotgrad/ir/error.h"

namespace aotgrad {
namespace {

void check_items(const std::vector<double>& memory, const std::vector<double>& runtime) {
  AOTGRAD_CHECK(memory.size() == runtime.size(), "knapsack: ", memory.size(), " memories but ",
                runtime.size(), " runtimes");
  for (size_t i = 0; i < memory.size(); ++i)
    AOTGRAD_CHECK(
        memory[i] >= 0 && runtime[i] >= 0 && std::isfinite(memory[i]) && std::isfinite(runtime[i]),
        "knapsack: item ", i, " has memory ", memory[i], " and runtime ", runtime[i]);
}

/// The result for a choice of saved items.
KnapsackResult result_of(const std::vector<bool>& take, const std::vector<double>& runtime) {
  KnapsackResult r;
  for (size_t i = 0; i < take.size(); ++i) {
    if (take[i]) {
      r.saved.push_back(static_cast<int>(i));
      r.runtime += runtime[i];
    } else {
      r.recomputable.push_back(static_cast<int>(i));
    }
  }
  return r;
}

}  // namespace

KnapsackSolver parse_knapsack_solver(std::string_view name) {
  if (name == "greedy") return KnapsackSolver::kGreedy;
  if (name == "dp") return KnapsackSolver::kDp;
  if (name == "ilp") return KnapsackSolver::kIlp;
  throw Error("unknown knapsack solver '" + std::string(name) + "' (known: greedy, dp, ilp)");
}

std::string_view knapsack_solver_name(KnapsackSolver s) {
  switch (s) {
    case KnapsackSolver::kGreedy: return "greedy";
    case KnapsackSolver::kDp: return "dp";
    case KnapsackSolver::kIlp: return "ilp";
  }
  return "?";
}

KnapsackResult solve_knapsack(KnapsackSolver solver, const std::vector<double>& memory,
                              const std::vector<double>& runtime, double max_memory) {
  switch (solver) {
    case KnapsackSolver::kGreedy: return greedy_knapsack(memory, runtime, max_memory);
    case KnapsackSolver::kDp: return dp_knapsack(memory, runtime, max_memory);
    case KnapsackSolver::kIlp: return ilp_knapsack(memory, runtime, max_memory);
  }
  return {};
}

KnapsackResult greedy_knapsack(const std::vector<double>& memory,
                               const std::vector<double>& runtime, double max_memory) {
  check_items(memory, runtime);
  const size_t n = memory.size();
  // Runtime per unit of memory, highest first (stable, as Python's sorted); free items first.
  auto ratio = [&](size_t i) {
    return memory[i] > 0 ? runtime[i] / memory[i] : std::numeric_limits<double>::infinity();
  };
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return ratio(a) > ratio(b); });
  std::vector<bool> take(n, false);
  double used = 0;
  for (size_t i : order) {
    if (used + memory[i] <= max_memory) {
      used += memory[i];
      take[i] = true;
    }
  }
  return result_of(take, runtime);
}

KnapsackResult dp_knapsack(const std::vector<double>& memory, const std::vector<double>& runtime,
                           double max_memory) {
  check_items(memory, runtime);
  // Memory quantized to 1/10000 of the budget's unit, as PyTorch's dp_knapsack (S = 10000).
  constexpr double kScale = 10000;
  const size_t n = memory.size();
  const int64_t capacity = std::max<int64_t>(0, std::llround(max_memory * kScale));
  std::vector<int64_t> weight(n);
  for (size_t i = 0; i < n; ++i) weight[i] = std::llround(memory[i] * kScale);
  // best[w]: the largest runtime within quantized memory w using the items so far; took[i][w]
  // whether item i is in that choice.
  const size_t width = static_cast<size_t>(capacity) + 1;
  std::vector<double> best(width, 0.0);
  std::vector<uint8_t> took(n * width, 0);
  for (size_t i = 0; i < n; ++i) {
    if (weight[i] > capacity) continue;
    uint8_t* row = took.data() + i * width;
    for (int64_t w = capacity; w >= weight[i]; --w) {
      double with = best[w - weight[i]] + runtime[i];
      if (with > best[w]) {
        best[w] = with;
        row[w] = 1;
      }
    }
  }
  std::vector<bool> take(n, false);
  int64_t w = capacity;
  for (size_t i = n; i-- > 0;) {
    if (took[i * width + w]) {
      take[i] = true;
      w -= weight[i];
    }
  }
  return result_of(take, runtime);
}

namespace {

// CBC's C interface, loaded on first use: the library (and the OpenBLAS and LAPACK it links) costs
// every process some milliseconds of start-up, which only an ILP solve should pay.
struct Cbc {
  decltype(&Cbc_newModel) newModel;
  decltype(&Cbc_deleteModel) deleteModel;
  decltype(&Cbc_setLogLevel) setLogLevel;
  decltype(&Cbc_loadProblem) loadProblem;
  decltype(&Cbc_setInteger) setInteger;
  decltype(&Cbc_setObjSense) setObjSense;
  decltype(&Cbc_solve) solve;
  decltype(&Cbc_isProvenOptimal) isProvenOptimal;
  decltype(&Cbc_status) status;
  decltype(&Cbc_secondaryStatus) secondaryStatus;
  decltype(&Cbc_getColSolution) getColSolution;
};

const Cbc& cbc() {
  static const Cbc loaded = [] {
    void* lib = ::dlopen(AOTGRAD_CBC_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* why = ::dlerror();
      throw Error(std::string("the ilp knapsack solver needs CBC (") + AOTGRAD_CBC_LIBRARY +
                  ", Debian's coinor-libcbc3), which could not be loaded: " +
                  (why ? why : "unknown error") + "; use --solver=dp or greedy");
    }
    Cbc c;
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(lib, name));
      if (!fn) throw Error(std::string("CBC (") + AOTGRAD_CBC_LIBRARY + ") has no " + name);
    };
    get(c.newModel, "Cbc_newModel");
    get(c.deleteModel, "Cbc_deleteModel");
    get(c.setLogLevel, "Cbc_setLogLevel");
    get(c.loadProblem, "Cbc_loadProblem");
    get(c.setInteger, "Cbc_setInteger");
    get(c.setObjSense, "Cbc_setObjSense");
    get(c.solve, "Cbc_solve");
    get(c.isProvenOptimal, "Cbc_isProvenOptimal");
    get(c.status, "Cbc_status");
    get(c.secondaryStatus, "Cbc_secondaryStatus");
    get(c.getColSolution, "Cbc_getColSolution");
    return c;
  }();
  return loaded;
}

}  // namespace

KnapsackResult ilp_knapsack(const std::vector<double>& memory, const std::vector<double>& runtime,
                            double max_memory) {
  check_items(memory, runtime);
  const int n = static_cast<int>(memory.size());
  if (n == 0) return {};
  const Cbc& c = cbc();
  std::unique_ptr<Cbc_Model, void (*)(Cbc_Model*)> model(c.newModel(), c.deleteModel);
  AOTGRAD_CHECK(model != nullptr, "ilp knapsack: CBC could not create a model");
  c.setLogLevel(model.get(), 0);
  // One binary column per item, one row: sum(memory * x) <= max_memory; maximize sum(runtime * x).
  std::vector<CoinBigIndex> start(n + 1);
  std::vector<int> index(n, 0);
  for (int i = 0; i <= n; ++i) start[i] = i;
  std::vector<double> lower(n, 0.0), upper(n, 1.0);
  double row_upper = std::max(0.0, max_memory);
  c.loadProblem(model.get(), n, 1, start.data(), index.data(), memory.data(), lower.data(),
                upper.data(), runtime.data(), /*rowlb=-inf*/ nullptr, &row_upper);
  for (int i = 0; i < n; ++i) c.setInteger(model.get(), i);
  c.setObjSense(model.get(), -1);
  c.solve(model.get());
  if (!c.isProvenOptimal(model.get()))
    throw Error("ilp knapsack: CBC did not prove an optimum (status " +
                std::to_string(c.status(model.get())) + ", secondary status " +
                std::to_string(c.secondaryStatus(model.get())) + ")");
  const double* x = c.getColSolution(model.get());
  std::vector<bool> take(n, false);
  double used = 0;
  for (int i = 0; i < n; ++i) {
    take[i] = x[i] > 0.5;
    if (take[i]) used += memory[i];
  }
  AOTGRAD_CHECK(used <= max_memory * (1 + 1e-9) + 1e-12, "ilp knapsack: CBC's solution uses ", used,
                " of ", max_memory);
  return result_of(take, runtime);
}

}  // namespace aotgrad
