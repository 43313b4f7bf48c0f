// Tests for the functional collectives' derivative rules (src/ops/collective_ops.cc): all_reduce's
// backward is all_reduce of the grad, all_gather's reduce_scatter and reduce_scatter's all_gather,
// each waited; wait_tensor passes the grad through. And the min-cut partitioner never recomputes a
// collective, except a sharded parameter's gather, as its tag or the memory budget decides.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "../graph_text.h"
#include "aotgrad/ir/error.h"
#include "aotgrad/transforms/partition/cost_model.h"
#include "aotgrad/transforms/partition/min_cut.h"

namespace aotgrad {
namespace {

using testing::HasSubstr;

std::string joint(const std::string& text) {
  return "\n" + joint_body(*joint_graph(text).graph) + "\n";
}

TEST(CollectiveGrad, AllReduce) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[4]"):
    all_reduce = torch.ops._c10d_functional.all_reduce.default(x, 'avg', '0')
    wait_tensor = torch.ops._c10d_functional.wait_tensor.default(all_reduce)
    return (wait_tensor,)
)"),
            R"(
all_reduce = torch.ops._c10d_functional.all_reduce.default(primals_1, 'avg', '0')
wait_tensor = torch.ops._c10d_functional.wait_tensor.default(all_reduce)
all_reduce_1 = torch.ops._c10d_functional.all_reduce.default(tangents_1, 'avg', '0')
wait_tensor_1 = torch.ops._c10d_functional.wait_tensor.default(all_reduce_1)
return pytree.tree_unflatten([wait_tensor, wait_tensor_1], self._out_spec)
)");
}

TEST(CollectiveGrad, AllGatherAndReduceScatter) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[4, 3]"):
    all_gather_into_tensor = torch.ops._c10d_functional.all_gather_into_tensor.default(x, 2, 'dp')
    wait_tensor = torch.ops._c10d_functional.wait_tensor.default(all_gather_into_tensor)
    reduce_scatter_tensor = torch.ops._c10d_functional.reduce_scatter_tensor.default(wait_tensor, 'avg', 2, 'dp')
    wait_tensor_1 = torch.ops._c10d_functional.wait_tensor.default(reduce_scatter_tensor)
    return (wait_tensor_1,)
)"),
            R"(
all_gather_into_tensor = torch.ops._c10d_functional.all_gather_into_tensor.default(primals_1, 2, 'dp')
wait_tensor = torch.ops._c10d_functional.wait_tensor.default(all_gather_into_tensor)
reduce_scatter_tensor = torch.ops._c10d_functional.reduce_scatter_tensor.default(wait_tensor, 'avg', 2, 'dp')
wait_tensor_1 = torch.ops._c10d_functional.wait_tensor.default(reduce_scatter_tensor)
all_gather_into_tensor_1 = torch.ops._c10d_functional.all_gather_into_tensor.default(tangents_1, 2, 'dp')
wait_tensor_2 = torch.ops._c10d_functional.wait_tensor.default(all_gather_into_tensor_1)
div = torch.ops.aten.div.Scalar(wait_tensor_2, 2)
reduce_scatter_tensor_1 = torch.ops._c10d_functional.reduce_scatter_tensor.default(div, 'sum', 2, 'dp')
wait_tensor_3 = torch.ops._c10d_functional.wait_tensor.default(reduce_scatter_tensor_1)
return pytree.tree_unflatten([wait_tensor_1, wait_tensor_3], self._out_spec)
)");
}

TEST(CollectiveGrad, NotDifferentiable) {
  try {
    joint_graph(R"(
def forward(self, x: "f32[4]"):
    all_reduce = torch.ops._c10d_functional.all_reduce.default(x, 'max', '0')
    wait_tensor = torch.ops._c10d_functional.wait_tensor.default(all_reduce)
    return (wait_tensor,)
)");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.message(), HasSubstr("reduce_op 'max' is not differentiable"));
  }
  try {
    joint_graph(R"(
def forward(self, x: "f32[4]"):
    broadcast = torch.ops._c10d_functional.broadcast.default(x, 0, '0')
    wait_tensor = torch.ops._c10d_functional.wait_tensor.default(broadcast)
    return (wait_tensor,)
)");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.message(), HasSubstr("the derivative for 'broadcast' is not implemented"));
  }
}

// A forward all_reduce whose result the backward needs is saved, never recomputed, even when it is
// tagged MUST_RECOMPUTE or the memory budget is 0; the min-cut's ban reason is "collective".
TEST(CollectiveGrad, MinCutNeverRecomputesCollectives) {
  const char* fw = R"(
def forward(self, x: "f32[64]"):
    relu = torch.ops.aten.relu.default(x)
    all_reduce = torch.ops._c10d_functional.all_reduce.default(relu, 'sum', '0')
    wait_tensor = torch.ops._c10d_functional.wait_tensor.default(all_reduce)
    sin = torch.ops.aten.sin.default(wait_tensor)
    return (sin,)
)";
  for (double budget : {1.0, 0.6, 0.0}) {
    SCOPED_TRACE(budget);
    JointGraph j = joint_graph(fw);
    for (const char* name : {"all_reduce", "wait_tensor"})
      j.graph->find(name)->info().recompute = RecomputePolicy::MustRecompute;
    MinCutOptions o;
    o.activation_memory_budget = budget;
    MinCutExplain e;
    Partition p = min_cut_partition(j, o, &e);
    std::string bw = graph_text(*p.bw);
    EXPECT_THAT(bw, testing::Not(HasSubstr("all_reduce.default(relu")));
    EXPECT_THAT(bw, testing::Not(HasSubstr("wait_tensor.default(all_reduce)"))) << bw;
    bool saved_wait = false;
    for (const std::string& s : p.saved) saved_wait = saved_wait || s == "wait_tensor";
    EXPECT_TRUE(saved_wait) << bw;
    bool banned = false;
    for (const auto& b : e.banned)
      if (b.name == "wait_tensor") {
        banned = true;
        EXPECT_EQ(b.reason, "collective");
      }
    // A budget of 0 saves the inputs and the collectives without solving a cut.
    EXPECT_EQ(banned, budget == 1.0);
  }
}

// A sharded parameter's gather (an all_gather_into_tensor of a primal and its wait; Note [Sharded
// parameters]) tagged MUST_RECOMPUTE is gathered again in the backward instead of being saved
// (FSDP's reshard_after_forward), tagged MUST_SAVE it is saved, at budgets 1 and 0 alike.
TEST(CollectiveGrad, MinCutRegathersShardedParameters) {
  const char* fw = R"(
def forward(self, w: "f32[4, 8]", x: "f32[3, 8]"):
    all_gather_into_tensor = torch.ops._c10d_functional.all_gather_into_tensor.default(w, 2, '0')
    wait_tensor = torch.ops._c10d_functional.wait_tensor.default(all_gather_into_tensor)
    t = torch.ops.aten.t.default(wait_tensor)
    mm = torch.ops.aten.mm.default(x, t)
    relu = torch.ops.aten.relu.default(mm)
    return (relu,)
)";
  for (RecomputePolicy tag : {RecomputePolicy::MustRecompute, RecomputePolicy::MustSave})
    for (double budget : {1.0, 0.6, 0.0}) {
      const bool regather = tag == RecomputePolicy::MustRecompute;
      SCOPED_TRACE(std::to_string(regather) + " " + std::to_string(budget));
      JointGraph j = joint_graph(fw);
      for (const char* name : {"all_gather_into_tensor", "wait_tensor", "t"})
        j.graph->find(name)->info().recompute = tag;
      MinCutOptions o;
      o.activation_memory_budget = budget;
      Partition p = min_cut_partition(j, o);
      std::string bw = graph_text(*p.bw);
      // Kept, the gathered parameter is saved (as itself or its transpose).
      bool saved_wait = false;
      for (const std::string& s : p.saved) saved_wait = saved_wait || s == "wait_tensor";
      if (regather) EXPECT_FALSE(saved_wait) << bw;
      EXPECT_EQ(bw.find("all_gather_into_tensor.default(primals_1, 2, '0')") != std::string::npos,
                regather)
          << bw;
      // The gradient of the shard is the reduce_scatter of the gathered parameter's.
      EXPECT_THAT(bw, HasSubstr("reduce_scatter_tensor.default("));
    }
}

// A collective is priced by the bytes it brings to this rank (Note [Re-gather or keep]), where it
// is issued; its wait costs nothing more.
TEST(CollectiveGrad, CommunicationCost) {
  std::shared_ptr<Graph> g = parse_text(R"(
def forward(self, w: "f32[4, 8]", y: "f32[6, 8]"):
    all_gather_into_tensor = torch.ops._c10d_functional.all_gather_into_tensor.default(w, 2, '0')
    wait_tensor = torch.ops._c10d_functional.wait_tensor.default(all_gather_into_tensor)
    reduce_scatter_tensor = torch.ops._c10d_functional.reduce_scatter_tensor.default(y, 'sum', 2, '0')
    wait_tensor_1 = torch.ops._c10d_functional.wait_tensor.default(reduce_scatter_tensor)
    all_reduce = torch.ops._c10d_functional.all_reduce.default(y, 'sum', '0')
    wait_tensor_2 = torch.ops._c10d_functional.wait_tensor.default(all_reduce)
    relu = torch.ops.aten.relu.default(y)
    return (wait_tensor, wait_tensor_1, wait_tensor_2, relu)
)");
  auto bytes = [&](const char* name) { return communication_bytes(*g->find(name)); };
  EXPECT_EQ(bytes("all_gather_into_tensor"), 8 * 8 * 4);
  EXPECT_EQ(bytes("reduce_scatter_tensor"), 6 * 8 * 4);
  EXPECT_EQ(bytes("all_reduce"), 2 * 6 * 8 * 4);
  EXPECT_EQ(bytes("wait_tensor"), 0);
  EXPECT_EQ(bytes("relu"), 0);
  EXPECT_EQ(estimate_runtime(*g->find("all_gather_into_tensor")),
            8 * 8 * 4 * kFlopsPerCommunicatedByte);
  EXPECT_EQ(estimate_runtime(*g->find("wait_tensor")), 1);
  CostModel measured;
  measured.kind = CostModelKind::kMeasured;  // no profile needed for a collective
  EXPECT_DOUBLE_EQ(estimate_runtime(*g->find("all_gather_into_tensor"), measured),
                   8 * 8 * 4 / kCommunicatedBytesPerSecond);
}

// Note [Re-gather or keep]: untagged gathers of three sharded weights of an MLP are the memory
// budget's decision. Budget 1 keeps every gathered weight from the forward (the cut never
// recomputes a collective on its own); budget 0.6 allows a plan that gathers the last two layers'
// weights again in the backward (58376 bytes against 66560, ratio 0.52); budget 0 takes the lowest
// predicted peak (49672 bytes), which gathers the first one's again too: the backward needs it
// last, for x's gradient. Each re-gather is priced by its communication (64x64 f32, 16 KiB, at
// kFlopsPerCommunicatedByte) rather than as free.
TEST(CollectiveGrad, MemoryBudgetDecidesUntaggedRegathers) {
  const char* fw = R"(
def forward(self, w1: "f32[32, 64]", w2: "f32[32, 64]", w3: "f32[32, 64]", x: "f32[2, 64]"):
    all_gather_into_tensor = torch.ops._c10d_functional.all_gather_into_tensor.default(w1, 2, '0')
    wait_tensor = torch.ops._c10d_functional.wait_tensor.default(all_gather_into_tensor)
    t = torch.ops.aten.t.default(wait_tensor)
    mm = torch.ops.aten.mm.default(x, t)
    relu = torch.ops.aten.relu.default(mm)
    all_gather_into_tensor_1 = torch.ops._c10d_functional.all_gather_into_tensor.default(w2, 2, '0')
    wait_tensor_1 = torch.ops._c10d_functional.wait_tensor.default(all_gather_into_tensor_1)
    t_1 = torch.ops.aten.t.default(wait_tensor_1)
    mm_1 = torch.ops.aten.mm.default(relu, t_1)
    relu_1 = torch.ops.aten.relu.default(mm_1)
    all_gather_into_tensor_2 = torch.ops._c10d_functional.all_gather_into_tensor.default(w3, 2, '0')
    wait_tensor_2 = torch.ops._c10d_functional.wait_tensor.default(all_gather_into_tensor_2)
    t_2 = torch.ops.aten.t.default(wait_tensor_2)
    mm_2 = torch.ops.aten.mm.default(relu_1, t_2)
    sum_1 = torch.ops.aten.sum.default(mm_2)
    return (sum_1,)
)";
  auto gathers_in = [](const std::string& bw) {
    int n = 0;
    for (size_t at = bw.find("all_gather_into_tensor.default(primals_"); at != std::string::npos;
         at = bw.find("all_gather_into_tensor.default(primals_", at + 1))
      ++n;
    return n;
  };
  for (double budget : {1.0, 0.6, 0.0}) {
    SCOPED_TRACE(budget);
    JointGraph j = joint_graph(fw);
    MinCutOptions o;
    o.activation_memory_budget = budget;
    o.static_lifetime_inputs = {true, true, true, false};
    MinCutExplain e;
    Partition p = min_cut_partition(j, o, &e);
    std::string bw = graph_text(*p.bw);
    const int gathers = gathers_in(bw);
    EXPECT_EQ(gathers, budget == 1.0 ? 0 : budget == 0.6 ? 2 : 3) << bw;
    EXPECT_THAT(bw, HasSubstr("reduce_scatter_tensor.default("));
    if (budget == 1.0) continue;
    EXPECT_THAT(bw, HasSubstr("all_gather_into_tensor.default(primals_2, 2, '0')"));
    EXPECT_THAT(bw, HasSubstr("all_gather_into_tensor.default(primals_3, 2, '0')"));
    ASSERT_LT(e.budget_chosen, e.budget_plans.size());
    const BudgetPlan& chosen = e.budget_plans[e.budget_chosen];
    const BudgetPlan& kept = e.budget_plans.front();  // the runtime-optimized cut
    EXPECT_LT(chosen.peak_bytes, kept.peak_bytes);
    if (budget == 0.0)
      for (const BudgetPlan& q : e.budget_plans) EXPECT_LE(chosen.peak_bytes, q.peak_bytes);
    EXPECT_GE(chosen.recompute_cost - kept.recompute_cost,
              gathers * 64 * 64 * 4 * kFlopsPerCommunicatedByte);
  }
}

}  // namespace
}  // namespace aotgrad
