// aotgrad: tests of the nn op family: declarations (tags, the native_batch_norm mutation quirk),
// result layouts, _native_batch_norm_legit_functional (which libtorch 1.13 cannot check), errors.
#include <gtest/gtest.h>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/registry.h"
#include "meta_call.h"

namespace aotgrad {
namespace {

TEST(NnOps, Declarations) {
  const OpTable& t = aten_ops();
  const OpDef& bn = t.get("native_batch_norm");
  EXPECT_EQ(bn.schema.args[3].name, "running_mean");
  EXPECT_EQ(bn.schema.args[4].name, "running_var");
  EXPECT_EQ(bn.schema.args[5].name, "training");
  EXPECT_EQ(bn.undeclared_mutations, (std::vector<int>{3, 4}));
  EXPECT_EQ(bn.undeclared_mutation_if, 5);
  EXPECT_TRUE(bn.mutated_args().empty());  // the schema itself says nothing
  EXPECT_EQ(t.get("batch_norm").undeclared_mutations, (std::vector<int>{3, 4}));
  EXPECT_TRUE(t.get("native_dropout").has_tag(kRandom));
  EXPECT_TRUE(t.get("dropout").has_tag(kRandom));
  EXPECT_TRUE(t.get("native_layer_norm_backward").has_tag(kBackward));
  const OpDef& legit = t.get("_native_batch_norm_legit_functional");
  EXPECT_TRUE(legit.has_tag(kOutOfPlaceMutation));
  EXPECT_EQ(legit.schema.returns.size(), 5u);
  EXPECT_EQ(legit.schema.returns[3].name, "running_mean_out");
  for (const char* n :
       {"linear", "layer_norm", "softmax.int", "cross_entropy_loss", "batch_norm", "max_pool2d",
        "adaptive_avg_pool2d", "reshape", "contiguous", "flatten.using_ints"})
    EXPECT_FALSE(t.get(n).has_tag(kCore)) << n;
  EXPECT_EQ(t.get("reshape").return_alias_of(0), 0);
}

TEST(NnOps, LayerNorm) {
  EXPECT_EQ(ann("native_layer_norm(t0, [4, 5], None, None, 1e-05)", {"f32[2, 3, 4, 5]"}),
            "f32[2, 3, 4, 5][60, 20, 5, 1]cpu | f32[2, 3, 1, 1][3, 1, 1, 1]cpu | "
            "f32[2, 3, 1, 1][3, 1, 1, 1]cpu");
  EXPECT_EQ(ann("native_layer_norm_backward(t0, t1, [16], t2, t2, None, None, "
                "[True, False, False])",
                {"f32[4, 16][1, 4]", "f32[4, 16][1, 4]", "f32[4, 1]"}),
            "f32[4, 16][16, 1]cpu | None | None");
  EXPECT_NE(error_of("native_layer_norm(t0, [8], None, None, 1e-05)", {"f32[4, 16]"})
                .find("Given normalized_shape=[8], expected input with shape [*, 8], but got "
                      "input of size[4, 16]"),
            std::string::npos);
}

TEST(NnOps, BatchNormStatsAndLayout) {
  const char* bn = "native_batch_norm(t0, t1, t1, t1, t1, %s, 0.1, 1e-05)";
  auto call = [&](const char* training) {
    char buf[128];
    snprintf(buf, sizeof(buf), bn, training);
    return std::string(buf);
  };
  EXPECT_EQ(ann(call("True"), {"f32[2, 3, 4, 5][60, 1, 15, 3]", "f32[3]"}),
            "f32[2, 3, 4, 5][60, 1, 15, 3]cpu | f32[3][1]cpu | f32[3][1]cpu");
  // CPU evaluation returns empty statistics.
  EXPECT_EQ(ann(call("False"), {"f32[2, 3, 4, 5]", "f32[3]"}),
            "f32[2, 3, 4, 5][60, 20, 5, 1]cpu | f32[0][1]cpu | f32[0][1]cpu");
  // bfloat16 input with float parameters keeps float statistics.
  EXPECT_EQ(ann(call("True"), {"bf16[2, 3, 4]", "f32[3]"}),
            "bf16[2, 3, 4][12, 4, 1]cpu | f32[3][1]cpu | f32[3][1]cpu");
  EXPECT_NE(error_of(call("True"), {"f64[2, 3, 4]", "f32[3]"}).find("mixed dtype (CPU)"),
            std::string::npos);
  EXPECT_NE(
      error_of("native_batch_norm(t0, None, None, None, None, False, 0.1, 1e-05)", {"f32[2, 3]"})
          .find("running_mean and running_var must be defined in evaluation mode"),
      std::string::npos);
  EXPECT_NE(error_of(call("True"), {"f32[2, 4]", "f32[3]"}).find("expected weight of size [4]"),
            std::string::npos);
}

TEST(NnOps, NativeBatchNormLegitFunctional) {
  const std::string call =
      "_native_batch_norm_legit_functional(t0, t1, t1, t2, t2, %s, 0.1, 1e-05)";
  auto with = [&](const char* training) {
    std::string c = call;
    c.replace(c.find("%s"), 2, training);
    return c;
  };
  EXPECT_EQ(ann(with("True"), {"f32[2, 3, 4, 5]", "f32[3]", "f32[3]"}),
            "f32[2, 3, 4, 5][60, 20, 5, 1]cpu | f32[3][1]cpu | f32[3][1]cpu | f32[3][1]cpu | "
            "f32[3][1]cpu");
  EXPECT_EQ(ann(with("False"), {"f32[2, 3, 4, 5][60, 1, 15, 3]", "f32[3]", "f32[3]"}),
            "f32[2, 3, 4, 5][60, 1, 15, 3]cpu | f32[0][1]cpu | f32[0][1]cpu | f32[3][1]cpu | "
            "f32[3][1]cpu");
  EXPECT_EQ(ann(with("True"), {"bf16[8, 3]", "f32[3]", "f32[3][2]"}),
            "bf16[8, 3][3, 1]cpu | f32[3][1]cpu | f32[3][1]cpu | f32[3][1]cpu | f32[3][1]cpu");
  EXPECT_EQ(ann(with("True"), {"f32[s0, 3, s1]", "f32[3]", "f32[3]"}),
            "f32[s0, 3, s1][3*s1, s1, 1]cpu | f32[3][1]cpu | f32[3][1]cpu | f32[3][1]cpu | "
            "f32[3][1]cpu");
  EXPECT_NE(error_of(with("True"), {"f32[2, 3]", "f32[3]", "f32[4]"}).find("running_mean"),
            std::string::npos);
  EXPECT_NE(error_of(with("True"), {"i64[2, 3]", "i64[3]", "i64[3]"}).find("not implemented"),
            std::string::npos);
}

TEST(NnOps, PoolingAndSoftmaxLayouts) {
  EXPECT_EQ(ann("max_pool2d_with_indices(t0, [2, 2])", {"f32[2, 3, 8, 8][192, 1, 24, 3]"}),
            "f32[2, 3, 4, 4][48, 1, 12, 3]cpu | i64[2, 3, 4, 4][48, 1, 12, 3]cpu");
  EXPECT_EQ(ann("avg_pool2d(t0, [2, 2], [2, 2], [1, 1], True)", {"f32[2, 3, 5, 5]"}),
            "f32[2, 3, 3, 3][27, 9, 3, 1]cpu");
  EXPECT_EQ(ann("adaptive_avg_pool2d(t0, [1, 1])", {"f32[2, 3, 8, 8][192, 1, 24, 3]"}),
            "f32[2, 3, 1, 1][3, 1, 3, 3]cpu");
  EXPECT_EQ(ann("_softmax(t0, 1, False)", {"f32[2, 3, 4, 5][60, 1, 15, 3]"}),
            "f32[2, 3, 4, 5][60, 20, 5, 1]cpu");
  EXPECT_EQ(ann("native_dropout(t0, 0.5, True)", {"f32[4, 5][1, 4]"}),
            "f32[4, 5][1, 4]cpu | b8[4, 5][1, 4]cpu");
  EXPECT_NE(error_of("max_pool2d_with_indices(t0, [2, 2])", {"f32[2, 3, 1, 1]"})
                .find("Output size is too small"),
            std::string::npos);
}

TEST(NnOps, LossesAndEmbedding) {
  EXPECT_EQ(ann("nll_loss_forward(t0, t1, None, 0, -100)", {"f32[4, 5]", "i64[4]"}),
            "f32[4][1]cpu | f32[][]cpu");
  EXPECT_EQ(ann("nll_loss_forward(t0, t1, None, 1, -100)", {"f32[4, 5]", "i64[4]"}),
            "f32[][]cpu | f32[][]cpu");
  EXPECT_EQ(ann("cross_entropy_loss(t0, t1, None, 0)", {"f32[2, 5, 3, 3]", "i64[2, 3, 3]"}),
            "f32[2, 3, 3][9, 3, 1]cpu");
  EXPECT_EQ(ann("embedding(t0, t1)", {"f32[10, 3][1, 10]", "i64[2, 4]"}),
            "f32[2, 4, 3][12, 3, 1]cpu");
  EXPECT_EQ(ann("embedding_dense_backward(t0, t1, 10, -1, False)", {"f32[2, 4, 3]", "i64[2, 4]"}),
            "f32[10, 3][3, 1]cpu");
}

TEST(NnOps, CompositeShapeOps) {
  EXPECT_EQ(ann("reshape(t0, [2, 12])", {"f32[2, 3, 4][12, 1, 3]"}), "f32[2, 12][12, 1]cpu");
  EXPECT_EQ(ann("reshape(t0, [4, 3, 2])", {"f32[4, 6][1, 4]"}), "f32[4, 3, 2][1, 8, 4]cpu");
  EXPECT_EQ(ann("contiguous(t0)", {"f32[4, 6][1, 4]"}), "f32[4, 6][6, 1]cpu");
  EXPECT_EQ(ann("contiguous(t0, memory_format=torch.channels_last)", {"f32[2, 3, 4, 5]"}),
            "f32[2, 3, 4, 5][60, 1, 15, 3]cpu");
  EXPECT_EQ(ann("flatten.using_ints(t0, 1)", {"f32[2, 3, 4][12, 1, 3]"}), "f32[2, 12][12, 1]cpu");
  EXPECT_NE(error_of("flatten.using_ints(t0, 2, 1)", {"f32[2, 3, 4]"})
                .find("start_dim cannot come after end_dim"),
            std::string::npos);
}

}  // namespace
}  // namespace aotgrad
