// Tests for requires_grad propagation and the autograd/inference decision (§13.11).
#include "aotgrad/transforms/requires_grad.h"

#include <gtest/gtest.h>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

const char* kGraph = R"(
def forward(self, x: "f32[4, 8]", w: "f32[16, 8]", idx: "i64[4]"):
    t = torch.ops.aten.t.default(w)
    mm = torch.ops.aten.mm.default(x, t)
    argmax = torch.ops.aten.argmax.default(mm)
    gt = torch.ops.aten.gt.Scalar(mm, 0)
    relu = torch.ops.aten.relu.default(mm)
    return (relu, argmax, gt)
)";

TEST(RequiresGrad, FollowsDifferentiableFloatingOps) {
  auto g = parse_graph(kGraph, aten_ops());
  auto rg = propagate_requires_grad(*g, {false, true, false});
  // x w idx t mm argmax gt relu output
  EXPECT_EQ(rg, (std::vector<bool>{false, true, false, true, true, false, false, true, false}));
}

TEST(RequiresGrad, AutogradOnlyWhenAnOutputOrAMutatedInputNeedsIt) {
  auto g = parse_graph(kGraph, aten_ops());
  EXPECT_TRUE(needs_autograd(*g, {false, true, false}));
  EXPECT_FALSE(needs_autograd(*g, {false, false, false}));
  auto ints = parse_graph(R"(
def forward(self, x: "f32[4]"):
    gt = torch.ops.aten.gt.Scalar(x, 0)
    return (gt,)
)",
                          aten_ops());
  EXPECT_FALSE(needs_autograd(*ints, {true}));  // no output can carry a gradient
  auto mutated = parse_graph(R"(
def forward(self, x: "f32[4]", y: "f32[4]"):
    mul_ = torch.ops.aten.mul_.Tensor(x, 2)
    gt = torch.ops.aten.gt.Scalar(y, 0)
    return (gt,)
)",
                             aten_ops());
  EXPECT_TRUE(needs_autograd(*mutated, {true, false}));
  // An input that does not require grad, written (through a view) with a value that does: it
  // gains the write's history, though no output requires grad.
  auto gains = parse_graph(R"(
def forward(self, x: "f32[4]", w: "f32[2]"):
    slice_1 = torch.ops.aten.slice.Tensor(x, 0, 0, 2)
    mul_ = torch.ops.aten.mul_.Tensor(slice_1, w)
    gt = torch.ops.aten.gt.Scalar(x, 0)
    return (gt,)
)",
                           aten_ops());
  EXPECT_TRUE(needs_autograd(*gains, {false, true}));
  EXPECT_FALSE(needs_autograd(*gains, {false, false}));
  // A view of an intermediate that does not require grad, taken before the intermediate is
  // written with a value that does: eagerly the view follows its base and requires grad.
  auto view_before = parse_graph(R"(
def forward(self, x: "f32[2, 3]", w: "f32[2, 3]"):
    mul = torch.ops.aten.mul.Tensor(x, 2)
    view = torch.ops.aten.view.default(mul, [6])
    mul_ = torch.ops.aten.mul_.Tensor(mul, w)
    return (view,)
)",
                                 aten_ops());
  EXPECT_TRUE(needs_autograd(*view_before, {false, true}));
  EXPECT_FALSE(needs_autograd(*view_before, {false, false}));
  // Written with a value that does not require grad: the view does not either.
  auto written_plain = parse_graph(R"(
def forward(self, x: "f32[2, 3]", w: "f32[2, 3]"):
    mul = torch.ops.aten.mul.Tensor(x, 2)
    view = torch.ops.aten.view.default(mul, [6])
    mul_ = torch.ops.aten.mul_.Tensor(mul, 3)
    sum_1 = torch.ops.aten.sum.default(w)
    gt = torch.ops.aten.gt.Scalar(sum_1, 0)
    return (view, gt)
)",
                                   aten_ops());
  EXPECT_FALSE(needs_autograd(*written_plain, {false, true}));
}

// derivatives.yaml's output_differentiability: the running statistics BatchNorm returns carry no
// gradient (so the joint graph gives them no tangent), nor does nll_loss_forward's total_weight.
TEST(RequiresGrad, NonDifferentiableResultsOfMultiOutputOps) {
  auto g = parse_graph(R"(
def forward(self, x: "f32[4, 3]", w: "f32[3]", b: "f32[3]", rm: "f32[3]", rv: "f32[3]", t: "i64[4]"):
    bn = torch.ops.aten._native_batch_norm_legit_functional.default(x, w, b, rm, rv, True, 0.1, 1e-05)
    getitem = bn[0]
    getitem_3 = bn[3]
    getitem_4 = bn[4]
    nll = torch.ops.aten.nll_loss_forward.default(getitem, t, None, 1, -100)
    getitem_5 = nll[0]
    getitem_6 = nll[1]
    return (getitem_5, getitem_3, getitem_4, getitem_6)
)",
                       aten_ops());
  auto rg = propagate_requires_grad(*g, {true, true, true, false, false, false});
  std::vector<std::string> needs;
  size_t i = 0;
  for (const Node* n : g->nodes())
    if (rg[i++]) needs.push_back(n->name());
  EXPECT_EQ(needs, (std::vector<std::string>{"x", "w", "b", "bn", "getitem", "nll", "getitem_5"}));
}

// A declared in-place write makes the written value require grad; 1.13's native_batch_norm's
// undeclared write of its running statistics does not (eager: rm.requires_grad stays False, and
// so does rm + 1's), so propagation reads declared writes only, not OpDef::written_args.
TEST(RequiresGrad, DeclaredWritesOnlyNotBatchNormsRunningStatistics) {
  auto g = parse_graph(R"(
def forward(self, x: "f32[2, 3]", rm: "f32[3]", rv: "f32[3]", z: "f32[3]"):
    native_batch_norm = torch.ops.aten.native_batch_norm.default(x, None, None, rm, rv, True, 0.1, 1e-05)
    add = torch.ops.aten.add.Tensor(rm, 1)
    copy_ = torch.ops.aten.copy_.default(rv, z)
    add_1 = torch.ops.aten.add.Tensor(rv, 1)
    return (add, add_1)
)",
                       aten_ops());
  auto rg = propagate_requires_grad(*g, {true, false, false, true});
  std::vector<std::string> needs;
  size_t i = 0;
  for (const Node* n : g->nodes())
    if (rg[i++]) needs.push_back(n->name());
  EXPECT_EQ(needs, (std::vector<std::string>{"x", "z", "native_batch_norm", "copy_", "add_1"}));
}

}  // namespace
}  // namespace aotgrad
