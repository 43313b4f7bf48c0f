// Tests for checkpointed regions: the recompute policies a region gives the ops it records, as
// text, and what the min-cut partitioner then saves and recomputes, with eager's grads.
#include "aotgrad/frontend/checkpoint.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/runtime/compiled_function.h"

namespace aotgrad {
namespace {

// sum(mm(tanh(mm(x, w1)), w2)), the first layer in a region with `policy` (no region: nullopt).
TensorFunction two_layers(std::optional<CheckpointPolicyFn> policy) {
  return [policy](const std::vector<at::Tensor>& a) -> std::vector<at::Tensor> {
    TensorFunction layer1 = [](const std::vector<at::Tensor>& b) -> std::vector<at::Tensor> {
      return {at::tanh(at::mm(b[0], b[1]))};
    };
    at::Tensor h = policy ? checkpoint(layer1, {a[0], a[1]}, *policy)[0] : layer1({a[0], a[1]})[0];
    return {at::mm(h, a[2]).sum()};
  };
}

std::vector<at::Tensor> inputs() {
  return {at::randn({4, 8}), at::randn({8, 8}).requires_grad_(),
          at::randn({8, 3}).requires_grad_()};
}

RecomputePolicy policy_of(const Graph& g, const std::string& name) {
  const Node* n = g.find(name);
  return n ? n->info().recompute : RecomputePolicy::None;
}

TEST(Checkpoint, RegionTagsTheOpsItRecordsAndPrintsThem) {
  auto g = capture(two_layers(CheckpointPolicyFn{}), inputs());
  EXPECT_EQ(policy_of(*g, "mm"), RecomputePolicy::PreferRecompute);
  EXPECT_EQ(policy_of(*g, "tanh"), RecomputePolicy::PreferRecompute);
  EXPECT_EQ(policy_of(*g, "mm_1"), RecomputePolicy::None);
  std::string text = print_graph(*g);
  EXPECT_NE(text.find("torch.ops.aten.tanh.default(mm);  mm = None  # recompute=PREFER_RECOMPUTE"),
            std::string::npos)
      << text;
  auto back = parse_graph(text, aten_ops());
  EXPECT_EQ(policy_of(*back, "tanh"), RecomputePolicy::PreferRecompute);
  EXPECT_EQ(print_graph(*back), text);

  auto selective = capture(two_layers(save_only({"aten::mm"})), inputs());
  EXPECT_EQ(policy_of(*selective, "mm"), RecomputePolicy::MustSave);
  EXPECT_EQ(policy_of(*selective, "tanh"), RecomputePolicy::PreferRecompute);
}

TEST(Checkpoint, OutsideACaptureItRunsTheFunction) {
  std::vector<at::Tensor> in = inputs();
  at::Tensor got = two_layers(save_only({"aten::mm"}))(in)[0];
  EXPECT_TRUE(at::allclose(got, two_layers(std::nullopt)(in)[0]));
}

// What the partition saves (activations: not the inputs or their views) and recomputes, and the
// grads against eager's.
struct Trained {
  std::vector<std::string> saved, recomputed;
};
Trained train(std::optional<CheckpointPolicyFn> policy) {
  std::vector<at::Tensor> in = inputs();
  TensorFunction fn = two_layers(policy);
  std::shared_ptr<const Graph> g = capture(fn, in);
  CompileOptions o;
  o.cache_dir = "off";
  CompiledFunction f(g, {false, true, true}, TrainOptions{nullptr, nullptr, o});
  at::Tensor loss = f(in)[0];
  loss.backward();
  std::vector<at::Tensor> eager = {in[0], in[1].detach().clone().requires_grad_(),
                                   in[2].detach().clone().requires_grad_()};
  fn(eager)[0].backward();
  EXPECT_TRUE(at::allclose(in[1].grad(), eager[1].grad(), 1e-5, 1e-5));
  EXPECT_TRUE(at::allclose(in[2].grad(), eager[2].grad(), 1e-5, 1e-5));
  Trained t;
  for (const auto& s : f.artifacts().explain->saved)
    if (!s.is_input) t.saved.push_back(s.name);  // not the inputs or views of them (t of w)
  for (const auto& r : f.artifacts().explain->recomputed) t.recomputed.push_back(r.op);
  return t;
}

TEST(Checkpoint, PartitionerHonoursThePolicies) {
  // No region: the forward's tanh is saved (the backward needs it twice), nothing recomputed.
  Trained plain = train(std::nullopt);
  EXPECT_EQ(plain.saved, (std::vector<std::string>{"tanh"}));
  EXPECT_TRUE(plain.recomputed.empty());
  // Everything recomputed from the inputs: the matmul too, which the min-cut never recomputes
  // on its own.
  Trained all =
      train(CheckpointPolicyFn([](const std::string&) { return RecomputePolicy::MustRecompute; }));
  EXPECT_TRUE(all.saved.empty()) << all.saved.size();
  EXPECT_NE(std::find(all.recomputed.begin(), all.recomputed.end(), "aten::mm"),
            all.recomputed.end());
  // Save the matmul, recompute the rest: mm is saved and tanh recomputed from it.
  Trained selective = train(save_only({"aten::mm"}));
  EXPECT_EQ(selective.saved, (std::vector<std::string>{"mm"}));
  EXPECT_EQ(selective.recomputed, (std::vector<std::string>{"aten::tanh"}));
}

}  // namespace
}  // namespace aotgrad
