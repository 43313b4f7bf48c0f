// Tests for the activation memory budget: the FLOP estimate, budget 1 and 0, the knapsack stage;
// priced by the training step's peak, a predicted peak that never rises as the budget falls and
// the cheapest allowed plan; priced by summed bytes (PyTorch's), saved activation bytes that never
// grow as the budget falls (synthetic and exported models).
#include "aotgrad/transforms/partition/memory_budget.h"

#include <gtest/gtest.h>

#include "../graph_text.h"
#include "aotgrad/driver/driver.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/transforms/partition/memory_timeline.h"

namespace aotgrad {
namespace {

std::shared_ptr<Graph> parse(const std::string& text) {
  std::shared_ptr<Graph> g = parse_graph(text, aten_ops());
  verify(*g);
  return g;
}

const Node& node(const Graph& g, const std::string& name) {
  const Node* n = g.find(name);
  EXPECT_NE(n, nullptr) << name;
  return *n;
}

TEST(MemoryBudget, EstimateRuntimeCountsFlops) {
  auto g = parse(R"(
def forward(self, a: "f32[4, 8]", b: "f32[8, 16]", c: "f32[16]", x: "f32[2, 4, 8]", y: "f32[2, 8, 16]", img: "f32[2, 3, 8, 8]", w: "f32[4, 3, 3, 3]", wg: "f32[6, 1, 3, 3]", img6: "f32[2, 6, 8, 8]"):
    mm = torch.ops.aten.mm.default(a, b)
    addmm = torch.ops.aten.addmm.default(c, a, b)
    bmm = torch.ops.aten.bmm.default(x, y)
    conv = torch.ops.aten.convolution.default(img, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    grouped = torch.ops.aten.convolution.default(img6, wg, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 6)
    conv_bw = torch.ops.aten.convolution_backward.default(conv, img, w, [4], [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [False, True, True])
    getitem = conv_bw[1]
    relu = torch.ops.aten.relu.default(mm)
    total = torch.ops.aten.sum.default(relu)
    return (addmm, bmm, grouped, getitem, total)
)");
  EXPECT_DOUBLE_EQ(estimate_runtime(node(*g, "mm")), 2 * 4 * 8 * 16);
  EXPECT_DOUBLE_EQ(estimate_runtime(node(*g, "addmm")), 2 * 4 * 8 * 16);
  EXPECT_DOUBLE_EQ(estimate_runtime(node(*g, "bmm")), 2 * 2 * 4 * 8 * 16);
  // [2, 4, 8, 8] outputs, 3 * 3 * 3 multiply-adds each.
  EXPECT_DOUBLE_EQ(estimate_runtime(node(*g, "conv")), 2.0 * (2 * 4 * 8 * 8) * 27);
  // Depthwise, stride 2: [2, 6, 4, 4] outputs, 1 * 3 * 3 each.
  EXPECT_DOUBLE_EQ(estimate_runtime(node(*g, "grouped")), 2.0 * (2 * 6 * 4 * 4) * 9);
  // Only grad_weight (grad_input is masked off): one convolution's worth.
  EXPECT_DOUBLE_EQ(estimate_runtime(node(*g, "conv_bw")), 2.0 * (2 * 4 * 8 * 8) * 27);
  // Pointwise ops and reductions: their element count.
  EXPECT_DOUBLE_EQ(estimate_runtime(node(*g, "relu")), 4 * 16);
  EXPECT_DOUBLE_EQ(estimate_runtime(node(*g, "total")), 4 * 16);
}

// A stack of MLP layers: mm, bias, a pointwise chain (tanh, sigmoid, mul), a row reduction.
const char* kMlp = R"(
def forward(self, x: "f32[32, 64]", w1: "f32[64, 64]", w2: "f32[64, 64]", w3: "f32[64, 64]", b: "f32[64]"):
    mm = torch.ops.aten.mm.default(x, w1)
    add = torch.ops.aten.add.Tensor(mm, b)
    tanh = torch.ops.aten.tanh.default(add)
    sigmoid = torch.ops.aten.sigmoid.default(tanh)
    mul = torch.ops.aten.mul.Tensor(tanh, sigmoid)
    mm_1 = torch.ops.aten.mm.default(mul, w2)
    tanh_1 = torch.ops.aten.tanh.default(mm_1)
    exp = torch.ops.aten.exp.default(tanh_1)
    mul_1 = torch.ops.aten.mul.Tensor(exp, tanh_1)
    mm_2 = torch.ops.aten.mm.default(mul_1, w3)
    sin = torch.ops.aten.sin.default(mm_2)
    amax = torch.ops.aten.amax.default(sin, [1], True)
    sub = torch.ops.aten.sub.Tensor(sin, amax)
    sum_1 = torch.ops.aten.sum.default(sub)
    return (sum_1,)
)";

TrainingArtifacts compile(const Graph& g, const std::vector<bool>& rg, double budget,
                          KnapsackSolver solver = KnapsackSolver::kDp,
                          BudgetPricing pricing = BudgetPricing::kSum,
                          bool gradients_kept = false) {
  CompileOptions o;
  o.min_cut.gradients_kept = gradients_kept;
  o.min_cut.activation_memory_budget = budget;
  o.min_cut.memory_budget_solver = solver;
  o.min_cut.budget_pricing = pricing;
  TrainingArtifacts a = compile_for_training(g, rg, o);
  EXPECT_NE(a.explain, nullptr);
  return a;
}

TEST(MemoryBudget, OneIsTheRuntimeOptimizedCut) {
  auto g = parse(kMlp);
  std::vector<bool> rg{false, true, true, true, true};
  TrainingArtifacts plain = compile_for_training(*g, rg);
  TrainingArtifacts one = compile(*g, rg, 1.0);
  EXPECT_EQ(one.saved, plain.saved);
  EXPECT_EQ(one.explain->budget_stage, "runtime optimized");
  // The runtime-optimized cut recomputes no matmul.
  for (const auto& r : one.explain->recomputed) EXPECT_NE(r.op, "aten::mm") << r.name;
  EXPECT_GT(one.explain->saved_activation_bytes, 0);
}

int64_t peak(const TrainingArtifacts& a, bool gradients_kept = false) {
  return training_step_timeline(*a.fw, *a.bw, a.saved, /*reinplace=*/true, gradients_kept)
      .peak_bytes;
}

// Priced by summed bytes, as PyTorch: budget 0 saves only the inputs.
TEST(MemoryBudget, ZeroSavesOnlyInputsAndRecomputesMatmuls) {
  auto g = parse(kMlp);
  std::vector<bool> rg{false, true, true, true, true};
  TrainingArtifacts a = compile(*g, rg, 0.0);
  EXPECT_EQ(a.explain->budget_stage, "inputs");
  EXPECT_EQ(a.explain->saved_activation_bytes, 0);
  ASSERT_FALSE(a.saved.empty());
  for (const auto& s : a.explain->saved) {
    EXPECT_TRUE(s.is_input) << s.name;
    EXPECT_EQ(s.why, "memory budget: only inputs are saved");
  }
  // Every saved value is a placeholder of the forward graph.
  for (const std::string& name : a.saved)
    EXPECT_EQ(a.fw->find(name)->kind(), NodeKind::Placeholder) << name;
  // The forward matmuls run again in the backward.
  int mms = 0;
  for (const auto& r : a.explain->recomputed) mms += r.op == "aten::mm";
  EXPECT_EQ(mms, 3);
}

TEST(MemoryBudget, RejectsBudgetsOutsideZeroToOne) {
  auto g = parse(kMlp);
  std::vector<bool> rg{false, true, true, true, true};
  for (double b : {-0.1, 1.5}) {
    CompileOptions o;
    o.min_cut.activation_memory_budget = b;
    try {
      compile_for_training(*g, rg, o);
      FAIL() << "budget " << b;
    } catch (const Error& e) {
      EXPECT_NE(e.message().find("must be in [0, 1]"), std::string::npos) << e.message();
    }
  }
}

/// Priced by summed bytes: saved activation bytes for budgets 1, 0.95, ..., 0 never grow as the
/// budget falls, end at 0, and somewhere strictly between the ends the knapsack decides. Returns
/// the bytes per budget.
std::vector<int64_t> ExpectMonotone(const Graph& g, const std::vector<bool>& rg,
                                    KnapsackSolver solver, bool expect_knapsack) {
  std::vector<int64_t> bytes;
  int64_t prev = -1;
  bool knapsack = false;
  for (int k = 20; k >= 0; --k) {
    double budget = k / 20.0;
    TrainingArtifacts a = compile(g, rg, budget, solver);
    int64_t b = a.explain->saved_activation_bytes;
    if (prev >= 0) {
      EXPECT_LE(b, prev) << "budget " << budget << " (" << a.explain->budget_stage << ")";
    }
    knapsack = knapsack || a.explain->budget_stage == "knapsack";
    prev = b;
    bytes.push_back(b);
  }
  EXPECT_EQ(bytes.back(), 0);
  if (expect_knapsack) EXPECT_TRUE(knapsack);
  return bytes;
}

TEST(MemoryBudget, SavedBytesNeverGrowAsTheBudgetFalls) {
  auto g = parse(kMlp);
  std::vector<bool> rg{false, true, true, true, true};
  for (KnapsackSolver s : {KnapsackSolver::kGreedy, KnapsackSolver::kDp, KnapsackSolver::kIlp}) {
    SCOPED_TRACE(std::string(knapsack_solver_name(s)));
    std::vector<int64_t> bytes = ExpectMonotone(*g, rg, s, /*expect_knapsack=*/true);
    // Strictly between: some budget saves less than budget 1 and more than budget 0.
    bool between = false;
    for (int64_t b : bytes) between = between || (b > 0 && b < bytes.front());
    EXPECT_TRUE(between);
  }
}

class MemoryBudgetModel : public testing::TestWithParam<const char*> {};

// The exported models' parameters require grad; buffers and data do not.
std::vector<bool> parameters_require_grad(const Graph& g) {
  std::vector<bool> rg;
  for (const Node* p : g.placeholders()) {
    const std::string& n = p->name();
    bool buffer = n.find("running_") != std::string::npos ||
                  n.find("num_batches_tracked") != std::string::npos;
    rg.push_back(n.rfind("p_", 0) == 0 && !buffer && p->meta().is_tensor() &&
                 is_floating(p->tensor_meta().dtype));
  }
  return rg;
}

// The exported models (parameters require grad; buffers and data do not), every solver.
TEST_P(MemoryBudgetModel, SavedBytesNeverGrowAsTheBudgetFalls) {
  auto g = parse(read_text(std::string(AOTGRAD_TEST_DATA) + "/models/" + GetParam() + ".fx"));
  std::vector<bool> rg = parameters_require_grad(*g);
  for (KnapsackSolver s : {KnapsackSolver::kGreedy, KnapsackSolver::kDp, KnapsackSolver::kIlp}) {
    SCOPED_TRACE(std::string(knapsack_solver_name(s)));
    ExpectMonotone(*g, rg, s, /*expect_knapsack=*/false);
  }
}

/// Priced by peak: for budgets 1, 0.95, ..., 0 the predicted peak of the compiled step never rises;
/// each budget's choice is the least recompute cost among the plans whose peak ratio it allows,
/// and its plan's priced peak is the compiled graphs' peak. Returns the peak per budget.
std::vector<int64_t> ExpectPeakMonotone(const Graph& g, const std::vector<bool>& rg,
                                        KnapsackSolver solver, bool gradients_kept = false) {
  std::vector<int64_t> peaks;
  for (int k = 20; k >= 0; --k) {
    double budget = k / 20.0;
    SCOPED_TRACE("budget " + std::to_string(budget));
    TrainingArtifacts a = compile(g, rg, budget, solver, BudgetPricing::kPeak, gradients_kept);
    int64_t p = peak(a, gradients_kept);
    if (!peaks.empty()) EXPECT_LE(p, peaks.back()) << a.explain->budget_stage;
    peaks.push_back(p);
    if (k == 20) {
      EXPECT_TRUE(a.explain->budget_plans.empty());
      continue;
    }
    const std::vector<BudgetPlan>& plans = a.explain->budget_plans;
    EXPECT_GE(plans.size(), 3u);
    EXPECT_EQ(plans.front().stage, "runtime optimized");
    // The plans with values computed again (Note [Computed again]) follow the inputs' plan.
    size_t inputs = 0;
    while (inputs < plans.size() && plans[inputs].stage != "inputs") ++inputs;
    EXPECT_LT(inputs, plans.size());
    for (size_t i = 0; i < plans.size(); ++i) {
      EXPECT_EQ(plans[i].again_rounds > 0, i > inputs) << plans[i].stage;
      EXPECT_EQ(plans[i].stage.find(" + again ") != std::string::npos, i > inputs);
    }
    const BudgetPlan& chosen = plans.at(a.explain->budget_chosen);
    EXPECT_LE(chosen.peak_ratio, budget + 1e-12);
    EXPECT_EQ(chosen.peak_bytes, p);
    for (const BudgetPlan& q : plans)
      if (q.peak_ratio <= budget + 1e-12)
        EXPECT_LE(chosen.recompute_cost, q.recompute_cost) << q.stage;
  }
  return peaks;
}

TEST(MemoryBudget, PeakNeverRisesAsTheBudgetFalls) {
  auto g = parse(kMlp);
  std::vector<bool> rg{false, true, true, true, true};
  for (KnapsackSolver s : {KnapsackSolver::kGreedy, KnapsackSolver::kDp}) {
    SCOPED_TRACE(std::string(knapsack_solver_name(s)));
    ExpectPeakMonotone(*g, rg, s);
  }
}

// Recomputing this MLP's matmuls in the backward raises the step's peak (they run while the
// gradients are live), so priced by peak no budget recomputes them: budget 0 keeps a plan that
// peaks no higher than saving only the inputs, and recomputes no matmul.
TEST(MemoryBudget, PeakPricingRecomputesNothingThatRaisesThePeak) {
  auto g = parse(kMlp);
  std::vector<bool> rg{false, true, true, true, true};
  TrainingArtifacts by_sum = compile(*g, rg, 0.0, KnapsackSolver::kDp, BudgetPricing::kSum);
  TrainingArtifacts by_peak = compile(*g, rg, 0.0, KnapsackSolver::kDp, BudgetPricing::kPeak);
  EXPECT_EQ(by_sum.explain->budget_stage, "inputs");
  EXPECT_NE(by_peak.explain->budget_stage, "inputs");
  EXPECT_LT(peak(by_peak), peak(by_sum));
  for (const auto& r : by_peak.explain->recomputed) EXPECT_NE(r.op, "aten::mm") << r.name;
}

TEST_P(MemoryBudgetModel, PeakNeverRisesAsTheBudgetFalls) {
  auto g = parse(read_text(std::string(AOTGRAD_TEST_DATA) + "/models/" + GetParam() + ".fx"));
  std::vector<int64_t> peaks =
      ExpectPeakMonotone(*g, parameters_require_grad(*g), KnapsackSolver::kDp);
  // Where recomputation lowers the peak, budget 0 peaks lower than budget 1.
  if (std::string(GetParam()) == "gpt_block_wide") EXPECT_LT(peaks.back(), peaks.front());
}

// With the gradients kept between steps (MinCutOptions::gradients_kept), the budget prices the
// peak the runtime then makes: still never rising as the budget falls. gpt_block's gradients
// (93% of its dropped-gradient peak) then no longer bound it, and recomputation lowers it.
TEST_P(MemoryBudgetModel, KeptGradientsPeakNeverRisesAsTheBudgetFalls) {
  auto g = parse(read_text(std::string(AOTGRAD_TEST_DATA) + "/models/" + GetParam() + ".fx"));
  std::vector<bool> rg = parameters_require_grad(*g);
  std::vector<int64_t> kept = ExpectPeakMonotone(*g, rg, KnapsackSolver::kDp, true);
  TrainingArtifacts dropped = compile(*g, rg, 1.0, KnapsackSolver::kDp, BudgetPricing::kPeak);
  EXPECT_LT(kept.front(), peak(dropped));
  if (std::string(GetParam()) == "gpt_block") EXPECT_LT(kept.back(), kept.front());
}

// gpt_block with kept gradients: the lowest plan's backward peaks at the MLP output projection's
// weight gradient, with the fc pre-activation live beside the GELU it made, for the GELU's
// backward after the peak. Budget 0 computes the pre-activation (addmm_2 and its view) again
// there: 41096 -> 32904 bytes, 0.54x the 60808 bytes eager's step peaks at (train_step_bench);
// without recompute_again, the peak stays.
TEST(MemoryBudget, KeptGradientsGptBlockComputesThePreActivationAgain) {
  auto g = parse(read_text(std::string(AOTGRAD_TEST_DATA) + "/models/gpt_block.fx"));
  std::vector<bool> rg = parameters_require_grad(*g);
  CompileOptions o;
  o.min_cut.activation_memory_budget = 0;
  o.min_cut.gradients_kept = true;
  TrainingArtifacts a = compile_for_training(*g, rg, o);
  EXPECT_EQ(peak(a, true), 32904);
  EXPECT_EQ(a.explain->budget_stage, "knapsack + again 1");
  EXPECT_EQ(a.explain->computed_again,
            "addmm_2 again as addmm_2_again, view_9_again for gelu_backward (peak 32904 bytes)\n");
  EXPECT_NE(explain_text(*a.explain).find("computed again:\n  addmm_2 again as"),
            std::string::npos);
  ASSERT_NE(a.bw->find("addmm_2_again"), nullptr);
  o.min_cut.recompute_again = false;
  TrainingArtifacts once = compile_for_training(*g, rg, o);
  EXPECT_EQ(peak(once, true), 41096);
  EXPECT_TRUE(once.explain->computed_again.empty());
  for (const BudgetPlan& q : once.explain->budget_plans) EXPECT_EQ(q.again_rounds, 0);
}

// --memory-budget=auto: the lowest predicted peak among the plans within the allowed slowdown;
// allowing more never peaks higher, and allowing nothing keeps the runtime-optimized cost.
TEST(MemoryBudget, AutoTakesTheLowestPeakWithinTheSlowdown) {
  auto g = parse(read_text(std::string(AOTGRAD_TEST_DATA) + "/models/gpt_block_wide.fx"));
  std::vector<bool> rg = parameters_require_grad(*g);
  int64_t prev = -1;
  for (double slowdown : {0.0, 0.01, 0.03, 0.1, 1.0}) {
    SCOPED_TRACE("max slowdown " + std::to_string(slowdown));
    CompileOptions o;
    o.min_cut.max_slowdown = slowdown;
    TrainingArtifacts a = compile_for_training(*g, rg, o);
    const std::vector<BudgetPlan>& plans = a.explain->budget_plans;
    ASSERT_FALSE(plans.empty());
    const BudgetPlan& fastest = plans.front();
    const BudgetPlan& chosen = plans.at(a.explain->budget_chosen);
    EXPECT_LE(chosen.recompute_cost - fastest.recompute_cost,
              slowdown * fastest.step_cost * (1 + 1e-9));
    for (const BudgetPlan& q : plans)
      if (q.recompute_cost - fastest.recompute_cost <= slowdown * fastest.step_cost)
        EXPECT_LE(chosen.peak_bytes, q.peak_bytes) << q.stage;
    EXPECT_EQ(chosen.peak_bytes, peak(a));
    if (prev >= 0) EXPECT_LE(peak(a), prev);
    prev = peak(a);
    EXPECT_NE(explain_text(*a.explain).find("memory budget: auto"), std::string::npos);
  }
  // With everything allowed, auto peaks as low as budget 0.
  TrainingArtifacts zero = compile(*g, rg, 0.0, KnapsackSolver::kDp, BudgetPricing::kPeak);
  EXPECT_EQ(prev, peak(zero));
}

INSTANTIATE_TEST_SUITE_P(Models, MemoryBudgetModel,
                         testing::Values("mlp", "gpt_block", "cnn_bn", "gpt_block_wide"),
                         [](const testing::TestParamInfo<const char*>& i) {
                           return std::string(i.param);
                         });

}  // namespace
}  // namespace aotgrad
