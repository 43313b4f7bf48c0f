// aotgrad: tests of the matrix-product and convolution op family: declarations, shapes, dtypes,
// channels-last convolution results, optional backward results, symbolic sizes and errors.
#include <gtest/gtest.h>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/registry.h"
#include "meta_call.h"

namespace aotgrad {
namespace {

const char* kConv = "[1, 1], [0, 0], [1, 1], False, [0, 0], 1";

TEST(LinalgOps, Declarations) {
  const OpTable& t = aten_ops();
  for (const char* n : {"mm", "addmm", "bmm", "baddbmm", "addmv", "mv", "dot", "convolution",
                        "convolution_backward", "matmul", "linear", "conv2d"}) {
    const OpDef* op = t.find(n);
    ASSERT_NE(op, nullptr) << n;
    EXPECT_TRUE(op->has_tag(kComputeIntensive)) << n;
    EXPECT_NE(op->meta, nullptr) << n;
  }
  EXPECT_TRUE(t.get("convolution").has_tag(kCore));
  EXPECT_FALSE(t.get("matmul").has_tag(kCore));  // composite: lowered by decomposition
  EXPECT_EQ(t.get("addmm").schema.text,
            "aten::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) "
            "-> Tensor");
}

TEST(LinalgOps, ProductsAreContiguous) {
  EXPECT_EQ(ann("mm(t0, t1)", {"f32[4, 8][1, 4]", "f32[8, 16][1, 8]"}), "f32[4, 16][16, 1]cpu");
  EXPECT_EQ(ann("addmm(t0, t1, t2, beta=0.5)", {"f32[16]", "f32[4, 8]", "f32[8, 16]"}),
            "f32[4, 16][16, 1]cpu");
  EXPECT_EQ(ann("bmm(t0, t1)", {"f32[2, 4, 8][32, 1, 4]", "f32[2, 8, 3]"}),
            "f32[2, 4, 3][12, 3, 1]cpu");
  // baddbmm: self is only expanded and copied (its dtype must be the batches').
  EXPECT_EQ(ann("baddbmm(t0, t1, t2)", {"f32[3]", "f32[2, 4, 8]", "f32[2, 8, 3]"}),
            "f32[2, 4, 3][12, 3, 1]cpu");
  EXPECT_EQ(ann("addmv(t0, t1, t2)", {"f64[]", "f32[4, 8]", "f32[8]"}), "f32[4][1]cpu");
  EXPECT_EQ(ann("dot(t0, t1)", {"i64[8]", "i64[8][2]"}), "i64[][]cpu");
}

TEST(LinalgOps, MatmulAndLinearShapes) {
  EXPECT_EQ(ann("matmul(t0, t1)", {"f32[8]", "f32[8]"}), "f32[][]cpu");
  EXPECT_EQ(ann("matmul(t0, t1)", {"f32[8]", "f32[8, 3]"}), "f32[3][1]cpu");
  EXPECT_EQ(ann("matmul(t0, t1)", {"f32[3, 1, 5, 4]", "f32[2, 4, 8]"}),
            "f32[3, 2, 5, 8][80, 40, 8, 1]cpu");
  EXPECT_EQ(ann("matmul(t0, t1)", {"f32[5]", "f32[3, 2, 5, 4]"}), "f32[3, 2, 4][8, 4, 1]cpu");
  EXPECT_EQ(ann("linear(t0, t1, t2)", {"f32[2, 4, 8][8, 16, 1]", "f32[16, 8]", "f32[16]"}),
            "f32[2, 4, 16][64, 16, 1]cpu");
  EXPECT_EQ(ann("linear(t0, t1)", {"f32[4, 8]", "f32[8]"}), "f32[4][1]cpu");
}

TEST(LinalgOps, ConvolutionLayouts) {
  std::string c = std::string("convolution(t0, t1, None, ") + kConv + ")";
  EXPECT_EQ(ann(c, {"f32[2, 4, 8, 8]", "f32[6, 4, 3, 3]"}), "f32[2, 6, 6, 6][216, 36, 6, 1]cpu");
  // Channels-last input or weight gives a channels-last result.
  EXPECT_EQ(ann(c, {"f32[2, 4, 8, 8][256, 1, 32, 4]", "f32[6, 4, 3, 3]"}),
            "f32[2, 6, 6, 6][216, 1, 36, 6]cpu");
  EXPECT_EQ(ann(c, {"f32[2, 4, 8, 8]", "f32[6, 4, 3, 3][36, 1, 12, 4]"}),
            "f32[2, 6, 6, 6][216, 1, 36, 6]cpu");
  // ... for a transposed convolution too.
  EXPECT_EQ(ann("convolution(t0, t1, None, [2, 2], [1, 1], [1, 1], True, [1, 1], 1)",
                {"f32[2, 4, 8, 8][256, 1, 32, 4]", "f32[4, 6, 3, 3]"}),
            "f32[2, 6, 16, 16][1536, 1, 96, 6]cpu");
  // A 3-d convolution is channels-last-3d when mkldnn runs it (not for double).
  EXPECT_EQ(ann("convolution(t0, t1, None, [1, 1, 1], [0, 0, 0], [1, 1, 1], False, [0, 0, 0], 1)",
                {"f32[2, 4, 5, 6, 7][840, 1, 168, 28, 4]", "f32[6, 4, 3, 3, 3]"}),
            "f32[2, 6, 3, 4, 5][360, 1, 120, 30, 6]cpu");
  EXPECT_EQ(ann("convolution(t0, t1, None, [1, 1, 1], [0, 0, 0], [1, 1, 1], False, [0, 0, 0], 1)",
                {"f64[2, 4, 5, 6, 7][840, 1, 168, 28, 4]", "f64[6, 4, 3, 3, 3]"}),
            "f64[2, 6, 3, 4, 5][360, 60, 20, 5, 1]cpu");
  // A 1-d convolution runs as 2-d: a weight with channels-last-like strides carries over.
  EXPECT_EQ(ann("convolution(t0, t1, None, [1], [0], [1], False, [0], 1)",
                {"f32[2, 4, 10]", "f32[6, 4, 1][4, 1, 4]"}),
            "f32[2, 6, 10][60, 1, 6]cpu");
  // conv2d also takes an unbatched input.
  EXPECT_EQ(ann("conv2d(t0, t1)", {"f32[4, 8, 8]", "f32[6, 4, 3, 3][36, 1, 12, 4]"}),
            "f32[6, 6, 6][1, 36, 6]cpu");
}

TEST(LinalgOps, ConvolutionBackwardMask) {
  std::string call = std::string("convolution_backward(t0, t1, t2, [6], ") + kConv;
  EXPECT_EQ(ann(call + ", [True, False, True])",
                {"f32[2, 6, 6, 6]", "f32[2, 4, 8, 8][256, 1, 32, 4]", "f32[6, 4, 3, 3]"}),
            "f32[2, 4, 8, 8][256, 1, 32, 4]cpu | None | f32[6][1]cpu");
  EXPECT_EQ(ann(call + ", [False, True, False])",
                {"f32[2, 6, 6, 6]", "f32[2, 4, 8, 8]", "f32[6, 4, 3, 3]"}),
            "None | f32[6, 4, 3, 3][36, 9, 3, 1]cpu | None");
}

TEST(LinalgOps, SymbolicSizes) {
  EXPECT_EQ(ann("mm(t0, t1)", {"f32[s0, 8]", "f32[8, s1]"}), "f32[s0, s1][s1, 1]cpu");
  TensorMeta out = meta_of("convolution(t0, t1, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 1)",
                           {"f32[s0, 4, s1, s1]", "f32[6, 4, 3, 3]"})
                       .tensor;
  SymInt s0 = SymInt::symbol("s0"), s1 = SymInt::symbol("s1");
  SymInt side = floordiv(s1 - 1, 2) + 1;  // (s1 + 2*1 - 1*(3 - 1) - 1) // 2 + 1
  EXPECT_EQ(out.sizes, (SymIntVector{s0, 6, side, side}));
  EXPECT_EQ(out.strides, (SymIntVector{6 * side * side, side * side, side, 1}));
}

TEST(LinalgOps, Errors) {
  EXPECT_NE(error_of("mm(t0, t1)", {"f32[4, 8]", "f32[7, 16]"})
                .find("mat1 and mat2 shapes cannot be multiplied (4x8 and 7x16)"),
            std::string::npos);
  EXPECT_NE(error_of("mm(t0, t1)", {"f32[4, 8]", "f32[8]"}).find("mat2 must be a matrix"),
            std::string::npos);
  EXPECT_NE(error_of("addmm(t0, t1, t2)", {"f32[3]", "f32[4, 8]", "f32[8, 16]"})
                .find("The expanded size of the tensor (16) must match the existing size (3)"),
            std::string::npos);
  EXPECT_NE(error_of("bmm(t0, t1)", {"f32[2, 4, 8]", "f32[2, 7, 3]"})
                .find("Expected size for first two dimensions of batch2 tensor to be: [2, 8]"),
            std::string::npos);
  EXPECT_NE(error_of(std::string("convolution(t0, t1, None, ") + kConv + ")",
                     {"f32[2, 4, 8, 8]", "f32[6, 3, 3, 3]"})
                .find("expected input[2, 4, 8, 8] to have 3 channels, but got 4 channels"),
            std::string::npos);
  EXPECT_NE(error_of(std::string("convolution(t0, t1, None, ") + kConv + ")",
                     {"f32[2, 4, 2, 2]", "f32[6, 4, 3, 3]"})
                .find("Kernel size can't be greater than actual input size"),
            std::string::npos);
  EXPECT_NE(error_of(std::string("convolution_backward(t0, t1, t2, None, ") + kConv +
                         ", [True, True, True])",
                     {"f32[2, 6, 5, 6]", "f32[2, 4, 8, 8]", "f32[6, 4, 3, 3]"})
                .find("Expected grad_output of size [2, 6, 6, 6]"),
            std::string::npos);
}

}  // namespace
}  // namespace aotgrad
