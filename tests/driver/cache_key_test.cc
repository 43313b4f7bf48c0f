// Tests for compile cache keys: every input, flag and option that changes the result changes the
// key; what does not (the verifier, the explanation) does not; the build and registry are in it.
#include "aotgrad/driver/cache_key.h"

#include <gtest/gtest.h>

#include <set>

#include "aotgrad/driver/stages.h"
#include "cache_test_util.h"

namespace aotgrad {
namespace {

using namespace cache_test;

TEST(CacheKey, CoversGraphFlagsOptionsAndVersion) {
  auto g = graph();
  std::vector<std::string> keys;
  keys.push_back(training_cache_key(*g, kGrad, {}, kVersion));
  EXPECT_EQ(training_cache_key(*graph(), kGrad, {}, kVersion), keys[0]);  // deterministic
  keys.push_back(training_cache_key(*g, {true, true, true, false}, {}, kVersion));
  keys.push_back(training_cache_key(*g, kGrad, {}, "other-version"));
  CompileOptions o;
  o.partition = PartitionKind::kDefault;
  keys.push_back(training_cache_key(*g, kGrad, o, kVersion));
  o = {};
  o.decompositions = DecompositionTable::full();
  keys.push_back(training_cache_key(*g, kGrad, o, kVersion));
  o = {};
  o.min_cut.activation_memory_budget = 0.5;
  keys.push_back(training_cache_key(*g, kGrad, o, kVersion));
  o.min_cut.activation_memory_budget = 0.5000001;
  keys.push_back(training_cache_key(*g, kGrad, o, kVersion));
  o.min_cut.memory_budget_solver = KnapsackSolver::kGreedy;
  keys.push_back(training_cache_key(*g, kGrad, o, kVersion));
  o = {};
  o.min_cut.cse = false;
  keys.push_back(training_cache_key(*g, kGrad, o, kVersion));
  o = {};
  o.min_cut.static_lifetime_inputs = {false, true, true, false};
  keys.push_back(training_cache_key(*g, kGrad, o, kVersion));
  o = {};
  o.min_cut.recompute_pointwise_from_saved = false;
  keys.push_back(training_cache_key(*g, kGrad, o, kVersion));
  o = {};
  o.min_cut.recompute_norms_from_saved = true;
  keys.push_back(training_cache_key(*g, kGrad, o, kVersion));
  o = {};
  o.schedule = ScheduleKind::kNone;
  keys.push_back(training_cache_key(*g, kGrad, o, kVersion));
  o = {};
  o.min_cut.gradients_kept = true;
  keys.push_back(training_cache_key(*g, kGrad, o, kVersion));
  o.partition = PartitionKind::kDefault;  // the schedule's key has it too
  keys.push_back(training_cache_key(*g, kGrad, o, kVersion));
  // Another graph, and the same graph with a recompute tag.
  auto g2 = graph();
  g2->find("relu")->info().recompute = RecomputePolicy::MustSave;
  keys.push_back(training_cache_key(*g2, kGrad, {}, kVersion));
  // The capture's marks, which the text does not show (reads and writes under torch.no_grad).
  for (int mark = 0; mark < 3; ++mark) {
    auto gm = graph();
    NodeInfo& info = gm->find("relu")->info();
    (mark == 0   ? info.no_grad_read
     : mark == 1 ? info.hidden_write
                 : info.no_grad_view_requires_grad) = true;
    keys.push_back(training_cache_key(*gm, kGrad, {}, kVersion));
  }
  auto g3 = parse_graph(R"(
def forward(self, x: "f32[4, 8]", w: "f32[16, 8]", b: "f32[16]", counter: "i64[]"):
    add_ = torch.ops.aten.add_.Tensor(counter, 1)
    t = torch.ops.aten.t.default(w)
    addmm = torch.ops.aten.addmm.default(b, x, t)
    relu = torch.ops.aten.sigmoid.default(addmm)
    sum_1 = torch.ops.aten.sum.default(relu)
    return (sum_1, relu)
)",
                        aten_ops());
  keys.push_back(training_cache_key(*g3, kGrad, {}, kVersion));
  keys.push_back(inference_cache_key(*g, {}, kVersion));
  o = {};
  o.keep_inference_input_mutations = true;
  keys.push_back(inference_cache_key(*g, o, kVersion));
  o = {};
  o.decompositions = DecompositionTable::none();
  keys.push_back(inference_cache_key(*g, o, kVersion));
  std::set<std::string> distinct(keys.begin(), keys.end());
  EXPECT_EQ(distinct.size(), keys.size());
  for (const std::string& k : keys) EXPECT_EQ(k.size(), 64u);
  // The verifier and the explanation do not change the result, so they are not in the key.
  o = {};
  o.verify = false;
  o.explain = false;
  EXPECT_EQ(training_cache_key(*g, kGrad, o, kVersion), keys[0]);
  // Options that only training reads are not in an inference key.
  o = {};
  o.partition = PartitionKind::kDefault;
  EXPECT_EQ(inference_cache_key(*g, o, kVersion), inference_cache_key(*g, {}, kVersion));
}

// The key is taken after decompose_composites: a graph and its decomposed form share an entry.
TEST(CacheKey, TakenAfterCompositeOpsDecompose) {
  const char* text = R"(
def forward(self, x: "f32[4, 8]", w: "f32[16, 8]", b: "f32[16]"):
    linear = torch.ops.aten.linear.default(x, w, b)
    return (linear,)
)";
  auto g = parse_graph(text, aten_ops());
  auto decomposed = parse_graph(text, aten_ops());
  ASSERT_GT(decompose(*decomposed, DecompositionTable::composite_implicit()), 0);
  EXPECT_EQ(inference_cache_key(*g, {}, kVersion), inference_cache_key(*decomposed, {}, kVersion));
  EXPECT_EQ(training_cache_key(*g, {false, true, true}, {}, kVersion),
            training_cache_key(*decomposed, {false, true, true}, {}, kVersion));
}

// An inserted stage is part of the key, by its name and fingerprint.
TEST(CacheKey, InsertedStagesChangeTheKey) {
  auto g = graph();
  CompileState s = begin_compilation(CompileKind::kTraining, *g, kGrad);
  PassPipeline p = training_pipeline({});
  std::string before = compile_cache_key(s, p, 1, kVersion);
  p.insert_after("partition", pass_stage(make_pass("cse"), GraphSlot::kBackward, "bw_cse"));
  EXPECT_NE(compile_cache_key(s, p, 1, kVersion), before);
}

TEST(CacheKey, BuildIdAndRegistryFingerprint) {
  // The running build: the executable's size and modification time.
  EXPECT_NE(compile_cache_build_id().find('@'), std::string::npos) << compile_cache_build_id();
  EXPECT_EQ(&compile_cache_build_id(), &compile_cache_build_id());
  EXPECT_EQ(op_registry_fingerprint().size(), 64u);
}

}  // namespace
}  // namespace aotgrad
