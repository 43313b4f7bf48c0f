// Tests for algebraic simplification: graph text in, graph text out.
#include "aotgrad/transforms/simplify.h"

#include <gtest/gtest.h>

#include "pass_text.h"

namespace aotgrad {
namespace {

TEST(Simplify, ArithmeticIdentities) {
  PassRun r = run_pass("simplify", R"(
def forward(self, x: "f32[4]"):
    mul = torch.ops.aten.mul.Tensor(x, 1)
    mul_1 = torch.ops.aten.mul.Scalar(mul, 1.0)
    div = torch.ops.aten.div.Tensor(mul_1, 1)
    div_1 = torch.ops.aten.div.Scalar(div, 1.0)
    add = torch.ops.aten.add.Tensor(div_1, -0.0, alpha = 5)
    add_1 = torch.ops.aten.add.Scalar(add, -0.0)
    sub = torch.ops.aten.sub.Tensor(add_1, 0)
    sub_1 = torch.ops.aten.sub.Scalar(sub, 0)
    mul_2 = torch.ops.aten.mul.Tensor(sub_1, True)
    relu = torch.ops.aten.relu.default(mul_2)
    return (relu,)
)");
  EXPECT_EQ(r.text, normalized(R"(
def forward(self, x):
    relu = torch.ops.aten.relu.default(x)
    return (relu,)
)"));
  EXPECT_EQ(r.changes, 9);
}

// -0.0 + 0 is +0.0: on floating tensors x + 0, 0 + x, x - (-0.0), x - 0 with a negative alpha
// and x - 0.0 with the int alpha 0 (ATen adds -alpha * other, and the int -0 is +0.0) are not x
// (1 / x tells). Integers have one zero.
TEST(Simplify, SignedZeros) {
  PassRun r = run_pass("simplify", R"(
def forward(self, x: "f32[4]", i: "i64[4]"):
    add = torch.ops.aten.add.Tensor(x, 0)
    add_1 = torch.ops.aten.add.Tensor(0.0, x)
    sub = torch.ops.aten.sub.Tensor(x, -0.0)
    sub_1 = torch.ops.aten.sub.Tensor(x, 0, alpha = -1)
    add_2 = torch.ops.aten.add.Tensor(x, -0.0, alpha = -2)
    sub_2 = torch.ops.aten.sub.Tensor(x, 0.0, alpha = 0)
    add_3 = torch.ops.aten.add.Tensor(i, 0)
    add_4 = torch.ops.aten.add.Tensor(0, i)
    cat = torch.ops.aten.cat.default([add, add_1, sub, sub_1, add_2, sub_2])
    cat_1 = torch.ops.aten.cat.default([add_3, add_4])
    return (cat, cat_1)
)");
  EXPECT_EQ(r.changes, 2);
  EXPECT_NE(r.text.find("cat_1 = torch.ops.aten.cat.default([i, i])"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("cat = torch.ops.aten.cat.default([add, add_1, sub, sub_1, add_2, sub_2])"),
            std::string::npos)
      << r.text;
}

// The users would see another dtype (x * 1.0 on an int tensor is a float tensor), or the value
// differs (x * 2, x + 1, 1 - x, div with a rounding mode on an int tensor).
TEST(Simplify, KeepsWhatChangesDtypeOrValue) {
  PassRun r = run_pass("simplify", R"(
def forward(self, i: "i64[4]", x: "f32[4]"):
    mul = torch.ops.aten.mul.Tensor(i, 1.0)
    div = torch.ops.aten.div.Tensor(i, 1)
    mul_1 = torch.ops.aten.mul.Tensor(x, 2)
    add = torch.ops.aten.add.Tensor(x, 1)
    rsub = torch.ops.aten.rsub.Scalar(x, 0)
    div_1 = torch.ops.aten.div.Tensor_mode(x, 1, rounding_mode = 'floor')
    cat = torch.ops.aten.cat.default([mul, div, mul_1, add, rsub, div_1])
    return (cat,)
)");
  EXPECT_FALSE(r.changed);
  // An int tensor times the int 1 is the same int tensor.
  r = run_pass("simplify", R"(
def forward(self, i: "i64[4]"):
    mul = torch.ops.aten.mul.Tensor(i, 1)
    neg = torch.ops.aten.neg.default(mul)
    return (neg,)
)");
  EXPECT_EQ(r.text, normalized(R"(
def forward(self, i):
    neg = torch.ops.aten.neg.default(i)
    return (neg,)
)"));
}

TEST(Simplify, ViewsToTheSameLayout) {
  PassRun r = run_pass("simplify", R"(
def forward(self, x: "f32[4, 3]"):
    view = torch.ops.aten.view.default(x, [4, 3])
    reshape = torch.ops.aten.reshape.default(view, [4, -1])
    _unsafe_view = torch.ops.aten._unsafe_view.default(reshape, [4, 3])
    expand = torch.ops.aten.expand.default(_unsafe_view, [4, 3])
    t = torch.ops.aten.t.default(expand)
    t_1 = torch.ops.aten.t.default(t)
    transpose = torch.ops.aten.transpose.int(t_1, 1, 1)
    view_1 = torch.ops.aten.view.default(transpose, [12])
    view_2 = torch.ops.aten.view.default(view_1, [4, 3])
    relu = torch.ops.aten.relu.default(view_2)
    return (relu,)
)");
  EXPECT_EQ(r.text, normalized(R"(
def forward(self, x):
    t = torch.ops.aten.t.default(x)
    view_1 = torch.ops.aten.view.default(x, [12])
    relu = torch.ops.aten.relu.default(x)
    return (relu,)
)"));
  EXPECT_EQ(r.changes, 7);
}

// Views that change the layout stay: a real transpose, an expand that broadcasts, a reshape.
TEST(Simplify, KeepsViewsThatChangeTheLayout) {
  PassRun r = run_pass("simplify", R"(
def forward(self, x: "f32[4, 3]", y: "f32[1, 3]"):
    t = torch.ops.aten.t.default(x)
    expand = torch.ops.aten.expand.default(y, [4, 3])
    view = torch.ops.aten.view.default(x, [3, 4])
    add = torch.ops.aten.add.Tensor(t, view)
    add_1 = torch.ops.aten.add.Tensor(x, expand)
    return (add, add_1)
)");
  EXPECT_FALSE(r.changed);
}

// detach(detach(x)) is detach(x); detach(x) itself stays (it cuts the gradient), and so does a
// detach in the middle of a chain whose ends have the same layout.
TEST(Simplify, DetachChains) {
  PassRun r = run_pass("simplify", R"(
def forward(self, x: "f32[4, 3]"):
    detach = torch.ops.aten.detach.default(x)
    detach_1 = torch.ops.aten.detach.default(detach)
    detach_2 = torch.ops.aten.detach.default(detach_1)
    t = torch.ops.aten.t.default(x)
    detach_3 = torch.ops.aten.detach.default(t)
    t_1 = torch.ops.aten.t.default(detach_3)
    add = torch.ops.aten.add.Tensor(detach_2, t_1)
    return (add,)
)");
  EXPECT_EQ(r.text, normalized(R"(
def forward(self, x):
    detach = torch.ops.aten.detach.default(x)
    t = torch.ops.aten.t.default(x)
    detach_3 = torch.ops.aten.detach.default(t)
    t_1 = torch.ops.aten.t.default(detach_3)
    add = torch.ops.aten.add.Tensor(detach, t_1)
    return (add,)
)"));
}

TEST(Simplify, ClonesOnlyInFunctionalGraphs) {
  PassRun r = run_pass("simplify", R"(
def forward(self, x: "f32[4]"):
    exp = torch.ops.aten.exp.default(x)
    clone = torch.ops.aten.clone.default(exp)
    clone_1 = torch.ops.aten.clone.default(x)
    add = torch.ops.aten.add.Tensor(clone, clone_1)
    return (add,)
)");
  EXPECT_EQ(r.text, normalized(R"(
def forward(self, x):
    exp = torch.ops.aten.exp.default(x)
    add = torch.ops.aten.add.Tensor(exp, x)
    return (add,)
)"));
  // With a mutation in the graph, a clone may be what keeps a value from a later write.
  r = run_pass("simplify", R"(
def forward(self, x: "f32[4]", y: "f32[4]"):
    exp = torch.ops.aten.exp.default(x)
    clone = torch.ops.aten.clone.default(exp)
    add_ = torch.ops.aten.add_.Tensor(y, 1)
    add = torch.ops.aten.add.Tensor(clone, y)
    return (add,)
)");
  EXPECT_FALSE(r.changed);
}

// Inductor's rules (fx_passes/README.md): no output becomes an input or another output.
TEST(Simplify, AddsNoAliasingBetweenInputsAndOutputs) {
  PassRun r = run_pass("simplify", R"(
def forward(self, x: "f32[4, 3]"):
    view = torch.ops.aten.view.default(x, [4, 3])
    mul = torch.ops.aten.mul.Tensor(x, 1)
    exp = torch.ops.aten.exp.default(x)
    clone = torch.ops.aten.clone.default(exp)
    t = torch.ops.aten.t.default(exp)
    t_1 = torch.ops.aten.t.default(t)
    div = torch.ops.aten.div.Tensor(x, 1)
    unsqueeze = torch.ops.aten.unsqueeze.default(div, 0)
    return (view, mul, exp, clone, t_1, unsqueeze)
)");
  EXPECT_FALSE(r.changed);
  // The same element of a tuple taken twice is one tensor: view(getitem) may not become it.
  r = run_pass("simplify", R"(
def forward(self, x: "f32[3, 4]"):
    max_1 = torch.ops.aten.max.dim(x, 0, True)
    getitem = max_1[0]
    getitem_1 = max_1[0]
    view = torch.ops.aten.view.default(getitem, [1, 4])
    return (view, getitem_1)
)");
  EXPECT_FALSE(r.changed);
  // A view that is an output may become another view of the same storage.
  r = run_pass("simplify", R"(
def forward(self, x: "f32[4, 3]"):
    slice_1 = torch.ops.aten.slice.Tensor(x, 0, 1, 3)
    view = torch.ops.aten.view.default(slice_1, [2, 3])
    return (view,)
)");
  EXPECT_EQ(r.text, normalized(R"(
def forward(self, x):
    slice_1 = torch.ops.aten.slice.Tensor(x, 0, 1, 3)
    return (slice_1,)
)"));
}

// Inputs may be one tensor at run time: x * 1 read after a write to y is not x.
TEST(Simplify, InputsMayAliasEachOther) {
  PassRun r = run_pass("simplify", R"(
def forward(self, x: "f32[4]", y: "f32[4]"):
    mul = torch.ops.aten.mul.Tensor(x, 1)
    add_ = torch.ops.aten.add_.Tensor(y, 1)
    add = torch.ops.aten.add.Tensor(mul, y)
    return (add,)
)");
  EXPECT_FALSE(r.changed);
  // Nor through a view of it.
  r = run_pass("simplify", R"(
def forward(self, x: "f32[2, 3]", y: "f32[2, 3]"):
    mul = torch.ops.aten.mul.Tensor(x, 1)
    t = torch.ops.aten.t.default(mul)
    add_ = torch.ops.aten.add_.Tensor(y, 1)
    clone = torch.ops.aten.clone.default(t)
    return (clone,)
)");
  EXPECT_FALSE(r.changed);
  // A write before the value is computed changes nothing.
  r = run_pass("simplify", R"(
def forward(self, x: "f32[4]", y: "f32[4]"):
    add_ = torch.ops.aten.add_.Tensor(y, 1)
    mul = torch.ops.aten.mul.Tensor(x, 1)
    add = torch.ops.aten.add.Tensor(mul, y)
    return (add,)
)");
  EXPECT_EQ(r.text, normalized(R"(
def forward(self, x, y):
    add_ = torch.ops.aten.add_.Tensor(y, 1)
    add = torch.ops.aten.add.Tensor(x, y)
    return (add,)
)"));
}

}  // namespace
}  // namespace aotgrad
