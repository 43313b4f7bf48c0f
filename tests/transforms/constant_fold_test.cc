// Tests for constant folding: graph text in, graph text out.
#include "aotgrad/transforms/constant_fold.h"

#include <gtest/gtest.h>

#include "pass_text.h"

namespace aotgrad {
namespace {

TEST(ConstantFold, StaticSymSizesBecomeInts) {
  PassRun r = run_pass("constant_fold", R"(
def forward(self, x: "f32[4, 3]", y: "f32[12]"):
    sym_size_int = torch.ops.aten.sym_size.int(x, 0)
    view = torch.ops.aten.view.default(y, [sym_size_int, -1])
    sym_numel_default = torch.ops.aten.sym_numel.default(x)
    div = torch.ops.aten.div.Scalar(view, sym_numel_default)
    sym_size_int_1 = torch.ops.aten.sym_size.int(x, 1)
    return (div, sym_size_int_1)
)");
  EXPECT_EQ(r.text, normalized(R"(
def forward(self, x, y):
    view = torch.ops.aten.view.default(y, [4, -1])
    div = torch.ops.aten.div.Scalar(view, 12)
    sym_size_int_1 = torch.ops.aten.sym_size.int(x, 1)
    return (div, sym_size_int_1)
)"));
  EXPECT_EQ(r.changes, 2);
}

TEST(ConstantFold, SymbolicSizesStay) {
  PassRun r = run_pass("constant_fold", R"(
def forward(self, x: "f32[s0, 3]", y: "f32[3*s0]"):
    sym_size_int = torch.ops.aten.sym_size.int(x, 0)
    view = torch.ops.aten.view.default(y, [sym_size_int, 3])
    return (view,)
)");
  EXPECT_FALSE(r.changed);
}

// x * ones, ones * x, x / ones, x + (-0.0), (-0.0) + x, x - zeros: the factories of 0 and 1 in
// all their spellings, broadcast where the result keeps x's shape.
TEST(ConstantFold, UniformFactoriesFeedingPointwiseOps) {
  PassRun r = run_pass("constant_fold", R"(
def forward(self, x: "f32[2, 4]"):
    ones = torch.ops.aten.ones.default([4], device = device(type='cpu'), pin_memory = False)
    mul = torch.ops.aten.mul.Tensor(x, ones)
    ones_like = torch.ops.aten.ones_like.default(x)
    mul_1 = torch.ops.aten.mul.Tensor(ones_like, mul)
    full = torch.ops.aten.full.default([], 1.0, dtype = torch.float32)
    div = torch.ops.aten.div.Tensor(mul_1, full)
    full_1 = torch.ops.aten.full.default([2, 1], -0.0)
    add = torch.ops.aten.add.Tensor(div, full_1, alpha = 3)
    full_like = torch.ops.aten.full_like.default(x, -0.0)
    add_1 = torch.ops.aten.add.Tensor(full_like, add)
    scalar_tensor = torch.ops.aten.scalar_tensor.default(0.0)
    expand = torch.ops.aten.expand.default(scalar_tensor, [2, 4])
    sub = torch.ops.aten.sub.Tensor(add_1, expand, alpha = 2)
    relu = torch.ops.aten.relu.default(sub)
    return (relu,)
)");
  EXPECT_EQ(r.changes, 6);
  EXPECT_NE(r.text.find("relu = torch.ops.aten.relu.default(x)"), std::string::npos) << r.text;
  for (const char* gone : {"mul =", "mul_1 =", "div =", "add =", "add_1 =", "sub ="})
    EXPECT_EQ(r.text.find(gone), std::string::npos) << gone << " stayed:\n" << r.text;
}

// Not folded: a value other than 0/1, a broadcast that grows x, a dtype the result promotes to,
// zeros + x with alpha != 1, a factory some call writes, x + 0 on floats (-0.0 + 0 is +0.0),
// including a -0.0 that went through an integer dtype.
TEST(ConstantFold, KeepsWhatChangesTheResult) {
  PassRun r = run_pass("constant_fold", R"(
def forward(self, x: "f32[4]", i: "i64[4]"):
    full = torch.ops.aten.full.default([4], 2.0)
    mul = torch.ops.aten.mul.Tensor(x, full)
    ones = torch.ops.aten.ones.default([3, 4])
    mul_1 = torch.ops.aten.mul.Tensor(mul, ones)
    ones_1 = torch.ops.aten.ones.default([4])
    mul_2 = torch.ops.aten.mul.Tensor(i, ones_1)
    ones_2 = torch.ops.aten.ones.default([4], dtype = torch.float64)
    mul_3 = torch.ops.aten.mul.Tensor(x, ones_2)
    zeros = torch.ops.aten.zeros.default([4])
    add = torch.ops.aten.add.Tensor(zeros, x, alpha = 2)
    ones_3 = torch.ops.aten.ones.default([4])
    add_ = torch.ops.aten.add_.Tensor(ones_3, 1)
    mul_4 = torch.ops.aten.mul.Tensor(x, ones_3)
    zeros_1 = torch.ops.aten.zeros.default([4])
    add_1 = torch.ops.aten.add.Tensor(x, zeros_1)
    full_1 = torch.ops.aten.full.default([4], -0.0, dtype = torch.int64)
    to_copy = torch.ops.aten._to_copy.default(full_1, dtype = torch.float32)
    add_2 = torch.ops.aten.add.Tensor(x, to_copy)
    return (mul_1, mul_2, mul_3, add, mul_4, add_1, add_2)
)");
  EXPECT_FALSE(r.changed);
}

// The folded value would be the caller's input itself, or alias it or another output, where eager
// returns a new tensor.
TEST(ConstantFold, AddsNoAliasingBetweenInputsAndOutputs) {
  const char* text = R"(
def forward(self, x: "f32[4]"):
    ones = torch.ops.aten.ones.default([4])
    mul = torch.ops.aten.mul.Tensor(x, ones)
    exp = torch.ops.aten.exp.default(x)
    mul_1 = torch.ops.aten.mul.Tensor(exp, ones)
    mul_2 = torch.ops.aten.mul.Tensor(x, ones)
    view = torch.ops.aten.view.default(mul_2, [2, 2])
    return (mul, exp, mul_1, view)
)";
  EXPECT_FALSE(run_pass("constant_fold", text).changed);
}

}  // namespace
}  // namespace aotgrad
