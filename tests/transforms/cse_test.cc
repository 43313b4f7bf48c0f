// Tests for common subexpression elimination: graph text in, graph text out.
#include "aotgrad/transforms/cse.h"

#include <gtest/gtest.h>

#include "pass_text.h"

namespace aotgrad {
namespace {

TEST(Cse, MergesRepeatedExpressionsTransitively) {
  PassRun r = run_pass("cse", R"(
def forward(self, x: "f32[4]", y: "f32[4]"):
    add = torch.ops.aten.add.Tensor(x, y)
    add_1 = torch.ops.aten.add.Tensor(x, y, alpha = 1)
    relu = torch.ops.aten.relu.default(add)
    relu_1 = torch.ops.aten.relu.default(add_1)
    mul = torch.ops.aten.mul.Tensor(relu, relu_1)
    return (mul,)
)");
  EXPECT_EQ(r.text, normalized(R"(
def forward(self, x, y):
    add = torch.ops.aten.add.Tensor(x, y)
    relu = torch.ops.aten.relu.default(add)
    mul = torch.ops.aten.mul.Tensor(relu, relu)
    return (mul,)
)"));
  EXPECT_EQ(r.changes, 2);
}

// Constants are compared exactly: 1 and 1.0 give different dtypes for an int tensor, and 0.0 and
// -0.0 different results; argument order matters.
TEST(Cse, DistinguishesConstantsExactly) {
  PassRun r = run_pass("cse", R"(
def forward(self, x: "i64[4]", y: "f32[4]"):
    mul = torch.ops.aten.mul.Tensor(x, 1)
    mul_1 = torch.ops.aten.mul.Tensor(x, 1.0)
    mul_2 = torch.ops.aten.mul.Tensor(y, 0.0)
    mul_3 = torch.ops.aten.mul.Tensor(y, -0.0)
    sub = torch.ops.aten.sub.Tensor(y, mul_2)
    sub_1 = torch.ops.aten.sub.Tensor(mul_2, y)
    return (mul, mul_1, mul_3, sub, sub_1)
)");
  EXPECT_FALSE(r.changed);
}

TEST(Cse, NeverMergesRandomOps) {
  PassRun r = run_pass("cse", R"(
def forward(self, x: "f32[4]"):
    bernoulli = torch.ops.aten.bernoulli.p(x, 0.5)
    bernoulli_1 = torch.ops.aten.bernoulli.p(x, 0.5)
    add = torch.ops.aten.add.Tensor(bernoulli, bernoulli_1)
    return (add,)
)");
  EXPECT_FALSE(r.changed);
}

// A write starts a new region: the same expression after it reads a different value.
TEST(Cse, DoesNotMergeAcrossMutations) {
  PassRun r = run_pass("cse", R"(
def forward(self, x: "f32[4]", y: "f32[4]"):
    mul = torch.ops.aten.mul.Tensor(x, y)
    mul_1 = torch.ops.aten.mul.Tensor(x, y)
    add_ = torch.ops.aten.add_.Tensor(x, 1)
    mul_2 = torch.ops.aten.mul.Tensor(x, y)
    cat = torch.ops.aten.cat.default([mul, mul_1, mul_2])
    return (cat,)
)");
  EXPECT_EQ(r.text, normalized(R"(
def forward(self, x, y):
    mul = torch.ops.aten.mul.Tensor(x, y)
    add_ = torch.ops.aten.add_.Tensor(x, 1)
    mul_2 = torch.ops.aten.mul.Tensor(x, y)
    cat = torch.ops.aten.cat.default([mul, mul, mul_2])
    return (cat,)
)"));
}

// Two clones are equal until one is written: a value whose storage a call writes is not merged.
TEST(Cse, DoesNotMergeWrittenValues) {
  PassRun r = run_pass("cse", R"(
def forward(self, x: "f32[4]"):
    clone = torch.ops.aten.clone.default(x)
    clone_1 = torch.ops.aten.clone.default(x)
    view = torch.ops.aten.view.default(clone, [2, 2])
    add_ = torch.ops.aten.add_.Tensor(view, 1)
    add = torch.ops.aten.add.Tensor(clone, clone_1)
    return (add,)
)");
  EXPECT_FALSE(r.changed);
}

// Nor multi-output calls one of whose results is written: merged, the write would reach both.
TEST(Cse, DoesNotMergeTuplesWithWrittenElements) {
  PassRun r = run_pass("cse", R"(
def forward(self, x: "f32[4, 3]"):
    max_1 = torch.ops.aten.max.dim(x, 1)
    getitem = max_1[0]
    max_2 = torch.ops.aten.max.dim(x, 1)
    getitem_1 = max_2[0]
    add_ = torch.ops.aten.add_.Tensor(getitem_1, 1)
    neg = torch.ops.aten.neg.default(getitem)
    return (neg, getitem_1)
)");
  EXPECT_FALSE(r.changed);
}

// Two outputs computed alike are two tensors to the caller: merging them would make one.
TEST(Cse, KeepsOutputsDistinct) {
  PassRun r = run_pass("cse", R"(
def forward(self, x: "f32[4]"):
    exp = torch.ops.aten.exp.default(x)
    view = torch.ops.aten.view.default(x, [2, 2])
    view_1 = torch.ops.aten.view.default(x, [2, 2])
    exp_2 = torch.ops.aten.exp.default(x)
    t = torch.ops.aten.t.default(exp_2)
    return (exp, t, view, view_1)
)");
  EXPECT_FALSE(r.changed);
  // An output and an intermediate: the output's node stays.
  r = run_pass("cse", R"(
def forward(self, x: "f32[4]"):
    exp = torch.ops.aten.exp.default(x)
    exp_1 = torch.ops.aten.exp.default(x)
    neg = torch.ops.aten.neg.default(exp_1)
    return (exp, neg)
)");
  EXPECT_EQ(r.text, normalized(R"(
def forward(self, x):
    exp = torch.ops.aten.exp.default(x)
    neg = torch.ops.aten.neg.default(exp)
    return (exp, neg)
)"));
}

TEST(Cse, MergesMultiOutputOpsAndTheirGetitems) {
  PassRun r = run_pass("cse", R"(
def forward(self, x: "f32[4, 3]"):
    max_1 = torch.ops.aten.max.dim(x, 1)
    getitem = max_1[0]
    max_2 = torch.ops.aten.max.dim(x, 1)
    getitem_1 = max_2[0]
    getitem_2 = max_2[1]
    add = torch.ops.aten.add.Tensor(getitem, getitem_1)
    return (add, getitem_2)
)");
  EXPECT_EQ(r.text, normalized(R"(
def forward(self, x):
    max_1 = torch.ops.aten.max.dim(x, 1)
    getitem = max_1[0]
    getitem_2 = max_1[1]
    add = torch.ops.aten.add.Tensor(getitem, getitem)
    return (add, getitem_2)
)"));
  EXPECT_EQ(r.changes, 2);
}

}  // namespace
}  // namespace aotgrad
