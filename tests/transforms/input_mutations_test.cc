// Tests for input mutation and alias-root analysis, text in.
#include "aotgrad/transforms/input_mutations.h"

#include <gtest/gtest.h>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

InputMutations analyze(const std::string& text) {
  auto g = parse_graph(text, aten_ops());
  return analyze_input_mutations(*g);
}

TEST(InputMutations, DirectInPlaceMutation) {
  auto m = analyze(R"(
def forward(self, p: "f32[4]", g: "f32[4]"):
    add_ = torch.ops.aten.add_.Tensor(p, g, alpha = -0.1)
    mul = torch.ops.aten.mul.Tensor(add_, 2)
    return (mul,)
)");
  EXPECT_EQ(m.data_mutated, (std::vector<bool>{true, false}));
  EXPECT_EQ(m.metadata_mutated, (std::vector<bool>{false, false}));
  EXPECT_TRUE(m.any());
}

TEST(InputMutations, MutationThroughAViewReachesTheInput) {
  auto m = analyze(R"(
def forward(self, x: "f32[4, 4]", y: "f32[4]"):
    select = torch.ops.aten.select.int(x, 0, 1)
    mul_ = torch.ops.aten.mul_.Tensor(select, y)
    return (y,)
)");
  EXPECT_EQ(m.data_mutated, (std::vector<bool>{true, false}));
}

TEST(InputMutations, IntermediatesAreNotInputs) {
  auto m = analyze(R"(
def forward(self, x: "f32[4]"):
    clone = torch.ops.aten.clone.default(x)
    relu_ = torch.ops.aten.relu_.default(clone)
    return (relu_,)
)");
  EXPECT_FALSE(m.any());
}

TEST(InputMutations, MetadataMutation) {
  auto m = analyze(R"(
def forward(self, x: "f32[2, 3]"):
    t_ = torch.ops.aten.t_.default(x)
    return (t_,)
)");
  EXPECT_EQ(m.metadata_mutated, (std::vector<bool>{true}));
  EXPECT_EQ(m.data_mutated, (std::vector<bool>{false}));
}

TEST(InputMutations, BatchNormTrainingMutatesRunningStats) {
  const char* text = R"(
def forward(self, x: "f32[2, 3, 4, 4]", w: "f32[3]", b: "f32[3]", rm: "f32[3]", rv: "f32[3]"):
    native_batch_norm = torch.ops.aten.native_batch_norm.default(x, w, b, rm, rv, TRAINING, 0.1, 1e-05)
    getitem = native_batch_norm[0]
    return (getitem,)
)";
  std::string train = text, eval = text;
  train.replace(train.find("TRAINING"), 8, "True");
  eval.replace(eval.find("TRAINING"), 8, "False");
  EXPECT_EQ(analyze(train).data_mutated, (std::vector<bool>{false, false, false, true, true}));
  EXPECT_FALSE(analyze(eval).any());
}

TEST(InputMutations, AliasRootsFollowViewsAndSplits) {
  auto g = parse_graph(R"(
def forward(self, x: "f32[4, 6]"):
    t = torch.ops.aten.t.default(x)
    split = torch.ops.aten.split.Tensor(t, 3)
    getitem = split[0]
    relu = torch.ops.aten.relu.default(getitem)
    return (relu,)
)",
                       aten_ops());
  EXPECT_EQ(input_alias_roots(*g), (std::vector<int>{0, 0, 0, 0, -1, -1}));
}

}  // namespace
}  // namespace aotgrad
