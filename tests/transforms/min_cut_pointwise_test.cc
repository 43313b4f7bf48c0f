// Tests for MinCutOptions::recompute_pointwise_from_saved: a cheap op (a pointwise activation, a
// squeeze-excitation's mean) whose output a norm's or convolution's backward reads is recomputed in
// the backward from values the backward keeps anyway, through at most three calls, instead of
// being saved beside them (functorch 1.13's choice); off, PyTorch 2.x's materialized-backward ban
// saves both. Graphs in (tests/data/text), saved values out.
#include <gtest/gtest.h>

#include <algorithm>

#include "../graph_text.h"
#include "aotgrad/driver/driver.h"
#include "aotgrad/transforms/partition/min_cut.h"

namespace aotgrad {
namespace {

std::shared_ptr<Graph> text_graph(const std::string& name) {
  return parse_text(read_text(std::string(AOTGRAD_TEST_DATA) + "/text/" + name + ".fx"));
}

TrainingArtifacts train(const Graph& g, bool recompute_pointwise, bool recompute_norms = false) {
  CompileOptions o;
  o.explain = true;
  o.min_cut.recompute_pointwise_from_saved = recompute_pointwise;
  o.min_cut.recompute_norms_from_saved = recompute_norms;
  std::vector<bool> rg(g.placeholders().size(), true);
  rg[0] = false;  // the input x
  TrainingArtifacts a = compile_for_training(g, rg, o);
  EXPECT_NE(a.explain, nullptr);
  return a;
}

std::vector<std::string> recomputed(const MinCutExplain& e) {
  std::vector<std::string> out;
  for (const auto& r : e.recomputed) out.push_back(r.name);
  return out;
}

std::string reason(const MinCutExplain& e, const std::string& name) {
  for (const auto& b : e.banned)
    if (b.name == name) return b.reason;
  return "";
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Linear-GELU-LayerNorm-Linear: gelu_backward reads addmm, native_layer_norm_backward reads gelu.
TEST(MinCutPointwise, GeluBeforeLayerNormIsRecomputedFromItsInput) {
  auto g = text_graph("gelu_layer_norm_mlp");
  TrainingArtifacts off = train(*g, false);
  EXPECT_EQ(reason(*off.explain, "gelu"), "materialized in backward");
  EXPECT_EQ(off.saved,
            (std::vector<std::string>{"primals_1", "primals_4", "primals_5", "addmm", "gelu",
                                      "getitem", "getitem_1", "getitem_2", "t_2"}));
  EXPECT_TRUE(recomputed(*off.explain).empty());

  TrainingArtifacts on = train(*g, true);
  EXPECT_EQ(reason(*on.explain, "gelu"), "");
  EXPECT_EQ(on.saved, (std::vector<std::string>{"primals_1", "primals_4", "primals_5", "addmm",
                                                "getitem", "getitem_1", "getitem_2", "t_2"}));
  EXPECT_EQ(recomputed(*on.explain), (std::vector<std::string>{"gelu"}));
  // One [8, 32] f32 activation fewer.
  EXPECT_EQ(off.explain->saved_activation_bytes - on.explain->saved_activation_bytes, 8 * 32 * 4);
  // The backward computes gelu from the saved addmm before LayerNorm's backward reads it.
  std::string bw = graph_text(*on.bw);
  size_t gelu = bw.find("gelu = torch.ops.aten.gelu.default(addmm)");
  ASSERT_NE(gelu, std::string::npos) << bw;
  EXPECT_LT(gelu, bw.find("native_layer_norm_backward")) << bw;
}

// Conv-BN-SiLU-Conv-SiLU-BN: one SiLU feeds a convolution, the other a BatchNorm; the backward of
// each reads the SiLU's output, silu_backward its input.
TEST(MinCutPointwise, SiluBeforeConvolutionAndBatchNormIsRecomputed) {
  auto g = text_graph("silu_batch_norm_cnn");
  TrainingArtifacts off = train(*g, false);
  EXPECT_EQ(reason(*off.explain, "silu"), "materialized in backward");
  EXPECT_EQ(reason(*off.explain, "silu_1"), "materialized in backward");
  EXPECT_EQ(off.saved, (std::vector<std::string>{"primals_1", "primals_2", "primals_3", "primals_5",
                                                 "primals_6", "convolution", "getitem", "getitem_9",
                                                 "getitem_10", "silu", "convolution_1", "silu_1",
                                                 "getitem_1", "getitem_2"}));

  TrainingArtifacts on = train(*g, true);
  EXPECT_EQ(on.saved,
            (std::vector<std::string>{"primals_1", "primals_2", "primals_3", "primals_5",
                                      "primals_6", "convolution", "getitem", "getitem_9",
                                      "getitem_10", "convolution_1", "getitem_1", "getitem_2"}));
  std::vector<std::string> r = recomputed(*on.explain);
  EXPECT_TRUE(has(r, "silu")) << testing::PrintToString(r);
  EXPECT_TRUE(has(r, "silu_1")) << testing::PrintToString(r);
  // Two activations fewer: [2, 8, 8, 8] f32 each.
  EXPECT_EQ(off.explain->saved_activation_bytes - on.explain->saved_activation_bytes,
            2 * (2 * 8 * 8 * 8 * 4));
}

// A pointwise op whose input the backward does not otherwise read stays banned: recomputing it
// would need that input saved instead (§13.20's relu after addmm: the backward reads only relu's
// output, through threshold_backward and the weight gradient).
TEST(MinCutPointwise, InputTheBackwardDoesNotReadKeepsTheBan) {
  auto g = parse_graph(R"(
def forward(self, x: "f32[4, 8]", w: "f32[16, 8]", b: "f32[16]"):
    t = torch.ops.aten.t.default(w)
    addmm = torch.ops.aten.addmm.default(b, x, t)
    relu = torch.ops.aten.relu.default(addmm)
    return (relu,)
)",
                       aten_ops());
  TrainingArtifacts a = train(*g, true);
  EXPECT_EQ(reason(*a.explain, "relu"), "materialized in backward");
  EXPECT_EQ(a.saved, (std::vector<std::string>{"primals_1", "detach_1"}));
}

// EfficientNetV2's residual of two SiLUs feeding a convolution: the sum is two calls above the
// values the backward reads (convolution_1, and silu, which convolution_1's backward reads).
TEST(MinCutPointwise, SumOfTwoSilusIsRecomputedThroughAChain) {
  auto g = text_graph("silu_residual_cnn");
  TrainingArtifacts off = train(*g, false);
  EXPECT_EQ(reason(*off.explain, "add"), "materialized in backward");
  EXPECT_TRUE(has(off.saved, "add")) << testing::PrintToString(off.saved);

  TrainingArtifacts on = train(*g, true);
  EXPECT_EQ(reason(*on.explain, "add"), "");
  EXPECT_FALSE(has(on.saved, "add")) << testing::PrintToString(on.saved);
  std::vector<std::string> r = recomputed(*on.explain);
  EXPECT_TRUE(has(r, "silu_1")) << testing::PrintToString(r);
  EXPECT_TRUE(has(r, "add")) << testing::PrintToString(r);
  // Off, silu (read by convolution_1's backward) is saved too; on, both are recomputed: two
  // [2, 8, 6, 6] f32 activations fewer.
  EXPECT_TRUE(has(off.saved, "silu")) << testing::PrintToString(off.saved);
  EXPECT_FALSE(has(on.saved, "silu")) << testing::PrintToString(on.saved);
  EXPECT_EQ(off.explain->saved_activation_bytes - on.explain->saved_activation_bytes,
            2 * (2 * 8 * 6 * 6 * 4));
}

// A squeeze-excitation's mean over a 2x2 map (4x smaller than its input: not a reduction op) is
// recomputed from the SiLU, which the backward of the excitation's product reads anyway.
TEST(MinCutPointwise, SqueezeExcitationMeanIsRecomputedFromItsInput) {
  auto g = text_graph("squeeze_excitation");
  TrainingArtifacts off = train(*g, false);
  EXPECT_EQ(reason(*off.explain, "mean"), "materialized in backward");
  EXPECT_TRUE(has(off.saved, "mean")) << testing::PrintToString(off.saved);

  TrainingArtifacts on = train(*g, true);
  EXPECT_EQ(reason(*on.explain, "mean"), "");
  EXPECT_FALSE(has(on.saved, "mean")) << testing::PrintToString(on.saved);
  EXPECT_TRUE(has(recomputed(*on.explain), "mean"));
  // And the excitation's SiLU (read by the second convolution's backward) from the first
  // convolution's output: [2, 8, 1, 1] and [2, 4, 1, 1] f32 fewer.
  EXPECT_EQ(off.explain->saved_activation_bytes - on.explain->saved_activation_bytes,
            2 * 8 * 4 + 2 * 4 * 4);
}

// The chain is bounded: a value three calls above what the backward has may be recomputed, one
// four calls above stays banned (the backward reads neither neg's input nor its output).
TEST(MinCutPointwise, ChainsLongerThanThreeCallsKeepTheBan) {
  auto chain = [](int negs) {
    std::string text =
        "def forward(self, x: \"f32[4, 8]\", w: \"f32[8, 8]\", b: \"f32[8]\"):\n"
        "    add = torch.ops.aten.add.Tensor(x, b)\n";
    std::string last = "add";
    for (int k = 0; k < negs; ++k) {
      std::string name = k == 0 ? "neg" : "neg_" + std::to_string(k);
      text += "    " + name + " = torch.ops.aten.neg.default(" + last + ")\n";
      last = name;
    }
    text += "    mm = torch.ops.aten.mm.default(" + last + ", w)\n    return (mm,)\n";
    return parse_graph(text, aten_ops());
  };
  TrainingArtifacts three = train(*chain(2), true);  // add, neg, neg_1
  EXPECT_EQ(reason(*three.explain, "neg_1"), "");
  TrainingArtifacts four = train(*chain(3), true);  // add, neg, neg_1, neg_2
  EXPECT_EQ(reason(*four.explain, "neg_2"), "materialized in backward");
  EXPECT_EQ(reason(*four.explain, "neg_1"), "");
  TrainingArtifacts off = train(*chain(2), false);
  EXPECT_EQ(reason(*off.explain, "neg_1"), "materialized in backward");
}

// recompute_norms_from_saved (the memory budget's "recompute norms" plan): Conv-BN-ReLU-Conv keeps
// the first convolution's output for BatchNorm's backward and runs BatchNorm and the ReLU again
// for the second convolution's backward instead of saving the ReLU's output too.
TEST(MinCutPointwise, NormsAreRecomputedFromTheirSavedInput) {
  auto g = parse_graph(R"(
def forward(self, x: "f32[2, 3, 6, 6]", w1: "f32[8, 3, 3, 3]", bn_w: "f32[8]", bn_b: "f32[8]", w2: "f32[8, 8, 3, 3]"):
    convolution = torch.ops.aten.convolution.default(x, w1, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    native_batch_norm = torch.ops.aten.native_batch_norm.default(convolution, bn_w, bn_b, None, None, True, 0.1, 1e-05)
    getitem = native_batch_norm[0]
    relu = torch.ops.aten.relu.default(getitem)
    convolution_1 = torch.ops.aten.convolution.default(relu, w2, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    mean = torch.ops.aten.mean.dim(convolution_1, [-1, -2])
    return (mean,)
)",
                       aten_ops());
  TrainingArtifacts plain = train(*g, true);
  EXPECT_EQ(reason(*plain.explain, "native_batch_norm"), "not in recomputable allowlist");
  EXPECT_EQ(reason(*plain.explain, "relu"), "materialized in backward");
  EXPECT_TRUE(has(plain.saved, "relu")) << testing::PrintToString(plain.saved);

  TrainingArtifacts norms = train(*g, true, /*recompute_norms=*/true);
  EXPECT_EQ(reason(*norms.explain, "native_batch_norm"), "");
  EXPECT_EQ(reason(*norms.explain, "relu"), "");
  EXPECT_TRUE(has(norms.saved, "convolution")) << testing::PrintToString(norms.saved);
  EXPECT_FALSE(has(norms.saved, "relu")) << testing::PrintToString(norms.saved);
  std::vector<std::string> r = recomputed(*norms.explain);
  EXPECT_TRUE(has(r, "relu")) << testing::PrintToString(r);
  // One [2, 8, 6, 6] f32 activation fewer, and BatchNorm's saved mean and invstd ([8] f32 each),
  // which the recomputed BatchNorm gives again.
  EXPECT_EQ(plain.explain->saved_activation_bytes - norms.explain->saved_activation_bytes,
            2 * 8 * 6 * 6 * 4 + 2 * 8 * 4);
  // Without recompute_pointwise_from_saved the option does nothing.
  TrainingArtifacts off = train(*g, false, /*recompute_norms=*/true);
  EXPECT_TRUE(has(off.saved, "relu")) << testing::PrintToString(off.saved);
}

}  // namespace
}  // namespace aotgrad
