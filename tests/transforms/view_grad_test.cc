// Tests for the derivative rules of the view, copy/scatter, factory and misc op families: the joint
// graph each rule writes, checked against the ATen graphs PyTorch's AOTAutograd traces.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "../graph_text.h"
#include "aotgrad/ir/error.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/transforms/autograd.h"

namespace aotgrad {
namespace {

// Parses `def forward(<params>):` + `lines`, differentiates w.r.t. the inputs in `rg`.
std::string joint(const std::string& params, const std::string& lines, std::vector<bool> rg) {
  return joint_body(
      *joint_graph("def forward(self, " + params + "):\n" + lines, std::move(rg)).graph);
}

// §13.20: F.linear(x, w, b).relu() with x needing no grad. addmm's mat2 is t(w), column-major,
// so its gradient takes mm_mat2_backward's `grad.t().mm(mat1).t()` branch; the bias gradient is
// autograd's sum_to. relu's rule comes from the pointwise family.
TEST(ViewGrad, SeedLinearReluJointGraph) {
  auto fw = parse_graph(R"(
def forward(self, primals_1: "f32[4, 8]", primals_2: "f32[16, 8]", primals_3: "f32[16]"):
    t = torch.ops.aten.t.default(primals_2)
    addmm = torch.ops.aten.addmm.default(primals_3, primals_1, t)
    relu = torch.ops.aten.relu.default(addmm)
    return (relu,)
)",
                        aten_ops());
  JointGraph jg = build_joint(*fw, {false, true, true});
  EXPECT_EQ(
      joint_body(*jg.graph),
      "t = torch.ops.aten.t.default(primals_2)\n"
      "addmm = torch.ops.aten.addmm.default(primals_3, primals_1, t)\n"
      "relu = torch.ops.aten.relu.default(addmm)\n"
      "detach = torch.ops.aten.detach.default(relu)\n"
      "detach_1 = torch.ops.aten.detach.default(detach)\n"
      "threshold_backward = torch.ops.aten.threshold_backward.default(tangents_1, detach_1, 0)\n"
      "t_1 = torch.ops.aten.t.default(threshold_backward)\n"
      "mm = torch.ops.aten.mm.default(t_1, primals_1)\n"
      "t_2 = torch.ops.aten.t.default(mm)\n"
      "sum_1 = torch.ops.aten.sum.dim_IntList(threshold_backward, [0], True)\n"
      "view = torch.ops.aten.view.default(sum_1, [16])\n"
      "t_3 = torch.ops.aten.t.default(t_2)\n"
      "return pytree.tree_unflatten([relu, None, t_3, view], self._out_spec)");
  // And the whole text, annotations and FX release statements included, is the seed's.
  std::ifstream f(std::string(AOTGRAD_TEST_DATA) + "/text/seed_13_20_joint.fx");
  ASSERT_TRUE(f) << "missing seed_13_20_joint.fx";
  std::stringstream ss;
  ss << f.rdbuf();
  auto seed = parse_graph(ss.str(), aten_ops());
  EXPECT_EQ(print_graph(*jg.graph), print_graph(*seed));
}

// The same graph without relu: only this family's rules (t, addmm) and autograd's sum_to.
TEST(ViewGrad, LinearJointGraph) {
  EXPECT_EQ(joint(R"(x: "f32[4, 8]", w: "f32[16, 8]", b: "f32[16]")",
                  "    t = torch.ops.aten.t.default(w)\n"
                  "    addmm = torch.ops.aten.addmm.default(b, x, t)\n"
                  "    return (addmm,)\n",
                  {false, true, true}),
            "t = torch.ops.aten.t.default(primals_2)\n"
            "addmm = torch.ops.aten.addmm.default(primals_3, primals_1, t)\n"
            "t_1 = torch.ops.aten.t.default(tangents_1)\n"
            "mm = torch.ops.aten.mm.default(t_1, primals_1)\n"
            "t_2 = torch.ops.aten.t.default(mm)\n"
            "sum_1 = torch.ops.aten.sum.dim_IntList(tangents_1, [0], True)\n"
            "view = torch.ops.aten.view.default(sum_1, [16])\n"
            "t_3 = torch.ops.aten.t.default(t_2)\n"
            "return pytree.tree_unflatten([addmm, None, t_3, view], self._out_spec)");
}

TEST(ViewGrad, ViewReshapesTheGradient) {
  EXPECT_EQ(
      joint(R"(x: "f32[4, 6]")",
            "    view = torch.ops.aten.view.default(x, [6, 4])\n    return (view,)\n", {true}),
      "view = torch.ops.aten.view.default(primals_1, [6, 4])\n"
      "view_1 = torch.ops.aten.view.default(tangents_1, [4, 6])\n"
      "return pytree.tree_unflatten([view, view_1], self._out_spec)");
  // A gradient that cannot be viewed (t's output) is copied: clone + _unsafe_view, as reshape.
  EXPECT_EQ(joint(R"(x: "f32[4, 6]")",
                  "    view = torch.ops.aten.view.default(x, [2, 12])\n"
                  "    t = torch.ops.aten.t.default(view)\n"
                  "    return (t,)\n",
                  {true}),
            "view = torch.ops.aten.view.default(primals_1, [2, 12])\n"
            "t = torch.ops.aten.t.default(view)\n"
            "t_1 = torch.ops.aten.t.default(tangents_1)\n"
            "clone = torch.ops.aten.clone.default(t_1, memory_format = torch.contiguous_format)\n"
            "_unsafe_view = torch.ops.aten._unsafe_view.default(clone, [4, 6])\n"
            "return pytree.tree_unflatten([t, _unsafe_view], self._out_spec)");
}

TEST(ViewGrad, ExpandPermuteSqueezeUnsqueeze) {
  EXPECT_EQ(joint(R"(x: "f32[4, 1]")",
                  "    expand = torch.ops.aten.expand.default(x, [3, 4, 6])\n"
                  "    return (expand,)\n",
                  {true}),
            "expand = torch.ops.aten.expand.default(primals_1, [3, 4, 6])\n"
            "sum_1 = torch.ops.aten.sum.dim_IntList(tangents_1, [0, 2], True)\n"
            "view = torch.ops.aten.view.default(sum_1, [4, 1])\n"
            "return pytree.tree_unflatten([expand, view], self._out_spec)");
  EXPECT_EQ(joint(R"(x: "f32[]")",
                  "    expand = torch.ops.aten.expand.default(x, [3, 4])\n    return (expand,)\n",
                  {true}),
            "expand = torch.ops.aten.expand.default(primals_1, [3, 4])\n"
            "sum_1 = torch.ops.aten.sum.default(tangents_1)\n"
            "return pytree.tree_unflatten([expand, sum_1], self._out_spec)");
  EXPECT_EQ(joint(R"(x: "f32[2, 3, 4]")",
                  "    permute = torch.ops.aten.permute.default(x, [2, 0, -2])\n"
                  "    return (permute,)\n",
                  {true}),
            "permute = torch.ops.aten.permute.default(primals_1, [2, 0, -2])\n"
            "permute_1 = torch.ops.aten.permute.default(tangents_1, [1, 2, 0])\n"
            "return pytree.tree_unflatten([permute, permute_1], self._out_spec)");
  EXPECT_EQ(
      joint(R"(x: "f32[2, 1, 3, 1]")",
            "    squeeze = torch.ops.aten.squeeze.default(x)\n"
            "    squeeze_1 = torch.ops.aten.squeeze.dim(x, -1)\n"
            "    squeeze_2 = torch.ops.aten.squeeze.dim(x, 0)\n"
            "    unsqueeze = torch.ops.aten.unsqueeze.default(squeeze, -1)\n"
            "    return (unsqueeze, squeeze_1, squeeze_2)\n",
            {true}),
      "squeeze = torch.ops.aten.squeeze.default(primals_1)\n"
      "squeeze_1 = torch.ops.aten.squeeze.dim(primals_1, -1)\n"
      "squeeze_2 = torch.ops.aten.squeeze.dim(primals_1, 0)\n"
      "unsqueeze = torch.ops.aten.unsqueeze.default(squeeze, -1)\n"
      "squeeze_3 = torch.ops.aten.squeeze.dim(tangents_1, -1)\n"
      "unsqueeze_1 = torch.ops.aten.unsqueeze.default(tangents_2, 3)\n"
      "add = torch.ops.aten.add.Tensor(tangents_3, unsqueeze_1)\n"
      "unsqueeze_2 = torch.ops.aten.unsqueeze.default(squeeze_3, 1)\n"
      "unsqueeze_3 = torch.ops.aten.unsqueeze.default(unsqueeze_2, 3)\n"
      "add_1 = torch.ops.aten.add.Tensor(add, unsqueeze_3)\n"
      "return pytree.tree_unflatten([unsqueeze, squeeze_1, squeeze_2, add_1], self._out_spec)");
}

TEST(ViewGrad, SliceSelectDiagonalUseTheirBackwardOps) {
  EXPECT_EQ(
      joint(R"(x: "f32[3, 6]")",
            "    slice_1 = torch.ops.aten.slice.Tensor(x, 1, 1, 5, 2)\n"
            "    slice_2 = torch.ops.aten.slice.Tensor(x)\n"
            "    select = torch.ops.aten.select.int(x, 1, -1)\n"
            "    diagonal = torch.ops.aten.diagonal.default(x, 1)\n"
            "    return (slice_1, slice_2, select, diagonal)\n",
            {true}),
      "slice_1 = torch.ops.aten.slice.Tensor(primals_1, 1, 1, 5, 2)\n"
      "slice_2 = torch.ops.aten.slice.Tensor(primals_1)\n"
      "select = torch.ops.aten.select.int(primals_1, 1, -1)\n"
      "diagonal = torch.ops.aten.diagonal.default(primals_1, 1)\n"
      "diagonal_backward = torch.ops.aten.diagonal_backward.default(tangents_4, [3, 6], 1, 0, 1)\n"
      "select_backward = torch.ops.aten.select_backward.default(tangents_3, [3, 6], 1, -1)\n"
      "add = torch.ops.aten.add.Tensor(diagonal_backward, select_backward)\n"
      "slice_backward = torch.ops.aten.slice_backward.default(tangents_2, [3, 6], 0, 0, "
      "9223372036854775807, 1)\n"
      "add_1 = torch.ops.aten.add.Tensor(add, slice_backward)\n"
      "slice_backward_1 = torch.ops.aten.slice_backward.default(tangents_1, [3, 6], 1, 1, 5, 2)\n"
      "add_2 = torch.ops.aten.add.Tensor(add_1, slice_backward_1)\n"
      "return pytree.tree_unflatten([slice_1, slice_2, select, diagonal, add_2], self._out_spec)");
}

TEST(ViewGrad, SplitAndUnbindFillMissingGradients) {
  EXPECT_EQ(joint(R"(x: "f32[3, 5]")",
                  "    split = torch.ops.aten.split.Tensor(x, 2, -1)\n"
                  "    getitem = split[0]\n"
                  "    return (getitem,)\n",
                  {true}),
            "split = torch.ops.aten.split.Tensor(primals_1, 2, -1)\n"
            "getitem = split[0]\n"
            "zeros = torch.ops.aten.zeros.default([3, 2], dtype = torch.float32, layout = "
            "torch.strided, device = device(type='cpu'))\n"
            "zeros_1 = torch.ops.aten.zeros.default([3, 1], dtype = torch.float32, layout = "
            "torch.strided, device = device(type='cpu'))\n"
            "cat = torch.ops.aten.cat.default([tangents_1, zeros, zeros_1], 1)\n"
            "return pytree.tree_unflatten([getitem, cat], self._out_spec)");
  EXPECT_EQ(joint(R"(x: "f32[3, 5]")",
                  "    split_with_sizes = torch.ops.aten.split_with_sizes.default(x, [1, 4], 1)\n"
                  "    getitem = split_with_sizes[0]\n"
                  "    getitem_1 = split_with_sizes[1]\n"
                  "    return (getitem, getitem_1)\n",
                  {true}),
            "split_with_sizes = torch.ops.aten.split_with_sizes.default(primals_1, [1, 4], 1)\n"
            "getitem = split_with_sizes[0]\n"
            "getitem_1 = split_with_sizes[1]\n"
            "cat = torch.ops.aten.cat.default([tangents_1, tangents_2], 1)\n"
            "return pytree.tree_unflatten([getitem, getitem_1, cat], self._out_spec)");
  EXPECT_EQ(joint(R"(x: "f32[3, 3]")",
                  "    unbind = torch.ops.aten.unbind.int(x, 1)\n"
                  "    getitem_1 = unbind[1]\n"
                  "    return (getitem_1,)\n",
                  {true}),
            "unbind = torch.ops.aten.unbind.int(primals_1, 1)\n"
            "getitem_1 = unbind[1]\n"
            "zeros = torch.ops.aten.zeros.default([], dtype = torch.float32, layout = "
            "torch.strided, device = device(type='cpu'))\n"
            "expand = torch.ops.aten.expand.default(zeros, [3])\n"
            "zeros_1 = torch.ops.aten.zeros.default([], dtype = torch.float32, layout = "
            "torch.strided, device = device(type='cpu'))\n"
            "expand_1 = torch.ops.aten.expand.default(zeros_1, [3])\n"
            "stack = torch.ops.aten.stack.default([expand, tangents_1, expand_1], 1)\n"
            "return pytree.tree_unflatten([getitem_1, stack], self._out_spec)");
}

TEST(ViewGrad, AsStridedScattersIntoAStorage) {
  // The dense case: zeros of the storage, the gradient scattered in, viewed with self's geometry.
  EXPECT_EQ(
      joint(R"(x: "f32[3, 4]")",
            "    as_strided = torch.ops.aten.as_strided.default(x, [2, 2], [1, 2], 1)\n"
            "    return (as_strided,)\n",
            {true}),
      "as_strided = torch.ops.aten.as_strided.default(primals_1, [2, 2], [1, 2], 1)\n"
      "new_zeros = torch.ops.aten.new_zeros.default(tangents_1, [12])\n"
      "as_strided_scatter = torch.ops.aten.as_strided_scatter.default(new_zeros, tangents_1, [2, "
      "2], [1, 2], 1)\n"
      "as_strided_1 = torch.ops.aten.as_strided.default(as_strided_scatter, [3, 4], [4, 1], 0)\n"
      "return pytree.tree_unflatten([as_strided, as_strided_1], self._out_spec)");
  // Size-1 output dims are squeezed, stride-0 ones summed; an overlapping output geometry goes
  // through index_add over arange indices.
  EXPECT_EQ(
      joint(R"(x: "f32[6]")",
            "    as_strided = torch.ops.aten.as_strided.default(x, [3, 1, 2, 3], "
            "[1, 1, 0, 1])\n"
            "    return (as_strided,)\n",
            {true}),
      "as_strided = torch.ops.aten.as_strided.default(primals_1, [3, 1, 2, 3], [1, 1, 0, 1])\n"
      "sum_1 = torch.ops.aten.sum.dim_IntList(tangents_1, [2])\n"
      "squeeze = torch.ops.aten.squeeze.dim(sum_1, 1)\n"
      "new_zeros = torch.ops.aten.new_zeros.default(squeeze, [6])\n"
      "arange = torch.ops.aten.arange.start(0, 6, dtype = torch.int64, layout = torch.strided, "
      "device = device(type='cpu'))\n"
      "as_strided_1 = torch.ops.aten.as_strided.default(arange, [3, 3], [1, 1], 0)\n"
      "view = torch.ops.aten.view.default(squeeze, [9])\n"
      "clone = torch.ops.aten.clone.default(as_strided_1, memory_format = "
      "torch.contiguous_format)\n"
      "_unsafe_view = torch.ops.aten._unsafe_view.default(clone, [9])\n"
      "index_add = torch.ops.aten.index_add.default(new_zeros, 0, _unsafe_view, view)\n"
      "as_strided_2 = torch.ops.aten.as_strided.default(index_add, [6], [1], 0)\n"
      "return pytree.tree_unflatten([as_strided, as_strided_2], self._out_spec)");
  // An overlapping input geometry (an expanded input) divides by each location's use count.
  EXPECT_EQ(
      joint(R"(x: "f32[4]")",
            "    expand = torch.ops.aten.expand.default(x, [3, 4])\n"
            "    as_strided = torch.ops.aten.as_strided.default(expand, [2, 2], [1, 1])\n"
            "    return (as_strided,)\n",
            {true}),
      "expand = torch.ops.aten.expand.default(primals_1, [3, 4])\n"
      "as_strided = torch.ops.aten.as_strided.default(expand, [2, 2], [1, 1])\n"
      "new_zeros = torch.ops.aten.new_zeros.default(tangents_1, [4])\n"
      "arange = torch.ops.aten.arange.start(0, 4, dtype = torch.int64, layout = torch.strided, "
      "device = device(type='cpu'))\n"
      "as_strided_1 = torch.ops.aten.as_strided.default(arange, [2, 2], [1, 1], 0)\n"
      "view = torch.ops.aten.view.default(tangents_1, [4])\n"
      "clone = torch.ops.aten.clone.default(as_strided_1, memory_format = "
      "torch.contiguous_format)\n"
      "_unsafe_view = torch.ops.aten._unsafe_view.default(clone, [4])\n"
      "index_add = torch.ops.aten.index_add.default(new_zeros, 0, _unsafe_view, view)\n"
      "zeros_like = torch.ops.aten.zeros_like.default(index_add, memory_format = "
      "torch.contiguous_format)\n"
      "as_strided_2 = torch.ops.aten.as_strided.default(arange, [3, 4], [0, 1], 0)\n"
      "clone_1 = torch.ops.aten.clone.default(as_strided_2, memory_format = "
      "torch.contiguous_format)\n"
      "_unsafe_view_1 = torch.ops.aten._unsafe_view.default(clone_1, [12])\n"
      "ones = torch.ops.aten.ones.default([1], dtype = torch.float32, layout = torch.strided, "
      "device = device(type='cpu'))\n"
      "expand_1 = torch.ops.aten.expand.default(ones, [12])\n"
      "index_add_1 = torch.ops.aten.index_add.default(zeros_like, 0, _unsafe_view_1, expand_1)\n"
      "div = torch.ops.aten.div.Tensor(index_add, index_add_1)\n"
      "as_strided_3 = torch.ops.aten.as_strided.default(div, [3, 4], [0, 1], 0)\n"
      "sum_1 = torch.ops.aten.sum.dim_IntList(as_strided_3, [0], True)\n"
      "view_1 = torch.ops.aten.view.default(sum_1, [4])\n"
      "return pytree.tree_unflatten([as_strided, view_1], self._out_spec)");
}

TEST(ViewGrad, DetachIsNotDifferentiableAliasIs) {
  EXPECT_EQ(joint(R"(x: "f32[3]")",
                  "    detach = torch.ops.aten.detach.default(x)\n"
                  "    alias = torch.ops.aten.alias.default(x)\n"
                  "    stack = torch.ops.aten.stack.default([detach, alias])\n"
                  "    return (stack,)\n",
                  {true}),
            "detach = torch.ops.aten.detach.default(primals_1)\n"
            "alias = torch.ops.aten.alias.default(primals_1)\n"
            "stack = torch.ops.aten.stack.default([detach, alias])\n"
            "select = torch.ops.aten.select.int(tangents_1, 0, 1)\n"
            "return pytree.tree_unflatten([stack, select], self._out_spec)");
  auto fw = parse_graph(R"(
def forward(self, x: "f32[3]"):
    detach = torch.ops.aten.detach.default(x)
    alias = torch.ops.aten.alias.default(x)
    return (detach, alias)
)",
                        aten_ops());
  JointGraph jg = build_joint(*fw, {true});
  EXPECT_EQ(jg.tangent_of_output, (std::vector<int>{-1, 0}));  // detach's output gets none
  EXPECT_EQ(joint_body(*jg.graph),
            "detach = torch.ops.aten.detach.default(primals_1)\n"
            "alias = torch.ops.aten.alias.default(primals_1)\n"
            "return pytree.tree_unflatten([detach, alias, tangents_1], self._out_spec)");
}

TEST(ViewGrad, AnOutputThatReachesOnlyANoGradViewIsALeafWithoutATangent) {
  // A view made under no_grad of an input that requires grad is eagerly a leaf of its own that
  // requires grad (NodeInfo::no_grad_view_requires_grad): as a user output it is a leaf output
  // and gets no tangent. What is computed from it keeps its tangent (its gradient reaches the
  // view and stops there), as does a mutated input's new value (the first output, marked by
  // no_tangent's entries).
  auto fw = parse_graph(R"(
def forward(self, a: "f64[4]", b: "f64[4]"):
    add = torch.ops.aten.add.Tensor(a, b)
    select = torch.ops.aten.select.int(b, 0, 1)
    detach = torch.ops.aten.detach.default(select)
    mul = torch.ops.aten.mul.Tensor(detach, 2)
    mul_1 = torch.ops.aten.mul.Tensor(detach, b)
    return (add, detach, mul, mul_1)
)",
                        aten_ops());
  fw->find("detach")->info().no_grad_view_requires_grad = true;
  // An output marked no_tangent is not a leaf output.
  EXPECT_EQ(build_joint(*fw, {false, true}, 0, {false, true}).leaf_output,
            (std::vector<bool>{false, false, false, false}));
  JointGraph jg = build_joint(*fw, {false, true}, 0, {false});
  EXPECT_EQ(jg.tangent_of_output, (std::vector<int>{0, -1, 1, 2}));
  EXPECT_EQ(jg.leaf_output, (std::vector<bool>{false, true, false, false}));
  EXPECT_EQ(jg.num_tangents, 3u);
  // Without the mark, the detach is an ordinary one: nothing requires grad through it.
  fw->find("detach")->info().no_grad_view_requires_grad = false;
  jg = build_joint(*fw, {false, true}, 0, {false});
  EXPECT_EQ(jg.tangent_of_output, (std::vector<int>{0, -1, -1, 1}));
  EXPECT_EQ(jg.leaf_output, (std::vector<bool>{false, false, false, false}));
}

TEST(CopyGrad, CatStackSliceOrSelectTheGradientPerInput) {
  // Only the inputs that need a gradient get one; 1-d empty inputs get zeros({0}); a lower
  // dtype input gets the autograd cast.
  EXPECT_EQ(
      joint(R"(x: "f32[3, 2]", e: "f32[0]", y: "f32[3, 0]", z: "f64[3, 4]")",
            "    cat = torch.ops.aten.cat.default([x, e, y, z], -1)\n    return (cat,)\n",
            {true, true, false, true}),
      "cat = torch.ops.aten.cat.default([primals_1, primals_2, primals_3, primals_4], -1)\n"
      "slice_1 = torch.ops.aten.slice.Tensor(tangents_1, 1, 0, 2)\n"
      "zeros = torch.ops.aten.zeros.default([0], dtype = torch.float64, layout = torch.strided, "
      "device = device(type='cpu'))\n"
      "slice_2 = torch.ops.aten.slice.Tensor(tangents_1, 1, 2, 6)\n"
      "_to_copy = torch.ops.aten._to_copy.default(slice_1, dtype = torch.float32)\n"
      "_to_copy_1 = torch.ops.aten._to_copy.default(zeros, dtype = torch.float32)\n"
      "return pytree.tree_unflatten([cat, _to_copy, _to_copy_1, None, slice_2], self._out_spec)");
  EXPECT_EQ(joint(R"(x: "f32[3, 2]", y: "f32[3, 2]")",
                  "    stack = torch.ops.aten.stack.default([x, y, x], -1)\n    return (stack,)\n",
                  {false, true}),
            "stack = torch.ops.aten.stack.default([primals_1, primals_2, primals_1], -1)\n"
            "select = torch.ops.aten.select.int(tangents_1, -1, 1)\n"
            "return pytree.tree_unflatten([stack, None, select], self._out_spec)");
  // The same input twice: its gradients accumulate.
  EXPECT_EQ(joint(R"(x: "f32[2]")",
                  "    cat = torch.ops.aten.cat.default([x, x])\n    return (cat,)\n", {true}),
            "cat = torch.ops.aten.cat.default([primals_1, primals_1])\n"
            "slice_1 = torch.ops.aten.slice.Tensor(tangents_1, 0, 0, 2)\n"
            "slice_2 = torch.ops.aten.slice.Tensor(tangents_1, 0, 2, 4)\n"
            "add = torch.ops.aten.add.Tensor(slice_1, slice_2)\n"
            "return pytree.tree_unflatten([cat, add], self._out_spec)");
}

TEST(CopyGrad, CopiesAndCasts) {
  EXPECT_EQ(
      joint(R"(x: "f32[3, 4]", y: "f64[4]")",
            "    copy = torch.ops.aten.copy.default(x, y)\n    return (copy,)\n", {true, true}),
      "copy = torch.ops.aten.copy.default(primals_1, primals_2)\n"
      "zeros_like = torch.ops.aten.zeros_like.default(tangents_1)\n"
      "sum_1 = torch.ops.aten.sum.dim_IntList(tangents_1, [0], True)\n"
      "view = torch.ops.aten.view.default(sum_1, [4])\n"
      "_to_copy = torch.ops.aten._to_copy.default(view, dtype = torch.float64)\n"
      "return pytree.tree_unflatten([copy, zeros_like, _to_copy], self._out_spec)");
  EXPECT_EQ(joint(R"(x: "f32[3, 4]")",
                  "    _to_copy = torch.ops.aten._to_copy.default(x, dtype=torch.float64)\n"
                  "    clone = torch.ops.aten.clone.default(_to_copy)\n"
                  "    return (clone,)\n",
                  {true}),
            "_to_copy = torch.ops.aten._to_copy.default(primals_1, dtype = torch.float64)\n"
            "clone = torch.ops.aten.clone.default(_to_copy)\n"
            "_to_copy_1 = torch.ops.aten._to_copy.default(tangents_1, dtype = torch.float32, "
            "layout = torch.strided, device = device(type='cpu'))\n"
            "return pytree.tree_unflatten([clone, _to_copy_1], self._out_spec)");
  // A cast to an integer dtype ends the gradient (output_differentiability of _to_copy).
  auto fw = parse_graph(R"(
def forward(self, x: "f32[3]"):
    _to_copy = torch.ops.aten._to_copy.default(x, dtype=torch.int64)
    return (_to_copy,)
)",
                        aten_ops());
  EXPECT_EQ(build_joint(*fw, {true}).tangent_of_output, (std::vector<int>{-1}));
}

TEST(CopyGrad, ScattersZeroTheRegionForSelfAndViewItForSrc) {
  EXPECT_EQ(
      joint(R"(x: "f32[3, 5]", y: "f32[3, 2]")",
            "    slice_scatter = torch.ops.aten.slice_scatter.default(x, y, 1, 0, 4, 2)\n"
            "    return (slice_scatter,)\n",
            {true, true}),
      "slice_scatter = torch.ops.aten.slice_scatter.default(primals_1, primals_2, 1, 0, 4, 2)\n"
      "zeros_like = torch.ops.aten.zeros_like.default(primals_2)\n"
      "slice_scatter_1 = torch.ops.aten.slice_scatter.default(tangents_1, zeros_like, 1, 0, 4, 2)\n"
      "slice_1 = torch.ops.aten.slice.Tensor(tangents_1, 1, 0, 4, 2)\n"
      "return pytree.tree_unflatten([slice_scatter, slice_scatter_1, slice_1], self._out_spec)");
  EXPECT_EQ(joint(R"(x: "f32[3, 5]", y: "f32[3]")",
                  "    select_scatter = torch.ops.aten.select_scatter.default(x, y, 1, 2)\n"
                  "    diagonal_scatter = torch.ops.aten.diagonal_scatter.default(x, y, 1)\n"
                  "    return (select_scatter, diagonal_scatter)\n",
                  {false, true}),
            "select_scatter = torch.ops.aten.select_scatter.default(primals_1, primals_2, 1, 2)\n"
            "diagonal_scatter = torch.ops.aten.diagonal_scatter.default(primals_1, primals_2, 1)\n"
            "diagonal = torch.ops.aten.diagonal.default(tangents_2, 1)\n"
            "select = torch.ops.aten.select.int(tangents_1, 1, 2)\n"
            "add = torch.ops.aten.add.Tensor(diagonal, select)\n"
            "return pytree.tree_unflatten([select_scatter, diagonal_scatter, None, add], "
            "self._out_spec)");
  EXPECT_EQ(
      joint(R"(x: "f32[3, 4]", y: "f32[2, 2]")",
            "    as_strided_scatter = torch.ops.aten.as_strided_scatter.default(x, y, [2, 2], "
            "[1, 2], 1)\n"
            "    return (as_strided_scatter,)\n",
            {true, true}),
      "as_strided_scatter = torch.ops.aten.as_strided_scatter.default(primals_1, primals_2, [2, "
      "2], [1, 2], 1)\n"
      "zeros_like = torch.ops.aten.zeros_like.default(primals_2)\n"
      "as_strided_scatter_1 = torch.ops.aten.as_strided_scatter.default(tangents_1, zeros_like, "
      "[2, 2], [1, 2], 1)\n"
      "as_strided = torch.ops.aten.as_strided.default(tangents_1, [2, 2], [1, 2], 1)\n"
      "return pytree.tree_unflatten([as_strided_scatter, as_strided_scatter_1, as_strided], "
      "self._out_spec)");
}

// Beyond PyTorch: where its formulas fail or are wrong, aotgrad's are right (finite differences
// confirm them in GradSweep.Copies).
TEST(CopyGrad, ScatterAddIntoALargerSrcAndAsStridedScatterOnAStridedLayout) {
  // PyTorch's backward raises (the gather has index's shape); the gradient is padded with zeros.
  EXPECT_EQ(joint(R"(s: "f32[3, 5]", i: "i64[2, 5]", src: "f32[4, 6]")",
                  "    scatter_add = torch.ops.aten.scatter_add.default(s, 0, i, src)\n"
                  "    return (scatter_add,)\n",
                  {false, false, true}),
            "scatter_add = torch.ops.aten.scatter_add.default(primals_1, 0, primals_2, primals_3)\n"
            "gather = torch.ops.aten.gather.default(tangents_1, 0, primals_2)\n"
            "new_zeros = torch.ops.aten.new_zeros.default(gather, [4, 6])\n"
            "as_strided_scatter = torch.ops.aten.as_strided_scatter.default(new_zeros, gather, [2, "
            "5], [6, 1], 0)\n"
            "return pytree.tree_unflatten([scatter_add, None, None, as_strided_scatter], "
            "self._out_spec)");
  // A column-major self: the scattered region lives in the result's column-major storage.
  EXPECT_EQ(
      joint(R"(x: "f32[4, 6][1, 4]", y: "f32[2, 2]")",
            "    as_strided_scatter = torch.ops.aten.as_strided_scatter.default(x, y, [2, 2], "
            "[1, 4], 3)\n"
            "    return (as_strided_scatter,)\n",
            {true, true}),
      "as_strided_scatter = torch.ops.aten.as_strided_scatter.default(primals_1, primals_2, [2, "
      "2], [1, 4], 3)\n"
      "new_empty_strided = torch.ops.aten.new_empty_strided.default(tangents_1, [4, 6], [1, 4])\n"
      "as_strided_scatter_1 = torch.ops.aten.as_strided_scatter.default(new_empty_strided, "
      "tangents_1, [4, 6], [1, 4], 0)\n"
      "zeros_like = torch.ops.aten.zeros_like.default(primals_2)\n"
      "as_strided_scatter_2 = torch.ops.aten.as_strided_scatter.default(as_strided_scatter_1, "
      "zeros_like, [2, 2], [1, 4], 3)\n"
      "as_strided = torch.ops.aten.as_strided.default(as_strided_scatter_1, [2, 2], [1, 4], 3)\n"
      "return pytree.tree_unflatten([as_strided_scatter, as_strided_scatter_2, as_strided], "
      "self._out_spec)");
}

TEST(CopyGrad, IndexSelectGatherAndTheirScatters) {
  EXPECT_EQ(
      joint(R"(x: "f32[3, 5]", i: "i64[3]", j: "i64[2, 5]")",
            "    index_select = torch.ops.aten.index_select.default(x, 1, i)\n"
            "    gather = torch.ops.aten.gather.default(x, 0, j)\n"
            "    return (index_select, gather)\n",
            {true, false, false}),
      "index_select = torch.ops.aten.index_select.default(primals_1, 1, primals_2)\n"
      "gather = torch.ops.aten.gather.default(primals_1, 0, primals_3)\n"
      "new_zeros = torch.ops.aten.new_zeros.default(tangents_2, [3, 5])\n"
      "scatter_add = torch.ops.aten.scatter_add.default(new_zeros, 0, primals_3, tangents_2)\n"
      "new_zeros_1 = torch.ops.aten.new_zeros.default(tangents_1, [3, 5])\n"
      "index_add = torch.ops.aten.index_add.default(new_zeros_1, 1, primals_2, tangents_1)\n"
      "add = torch.ops.aten.add.Tensor(scatter_add, index_add)\n"
      "return pytree.tree_unflatten([index_select, gather, add, None, None], self._out_spec)");
  // The backward ops are differentiable in turn (double backward).
  EXPECT_EQ(joint(R"(g: "f32[3]", s: "f32[3, 5]", src: "f32[3, 2]", i: "i64[2]")",
                  "    select_backward = torch.ops.aten.select_backward.default(g, [3, 5], 1, 2)\n"
                  "    index_add = torch.ops.aten.index_add.default(s, 1, i, src, alpha=2)\n"
                  "    return (select_backward, index_add)\n",
                  {true, true, true, false}),
            "select_backward = torch.ops.aten.select_backward.default(primals_1, [3, 5], 1, 2)\n"
            "index_add = torch.ops.aten.index_add.default(primals_2, 1, primals_4, primals_3, "
            "alpha = 2)\n"
            "index_select = torch.ops.aten.index_select.default(tangents_2, 1, primals_4)\n"
            "expand = torch.ops.aten.expand.default(index_select, [3, 2])\n"
            "mul = torch.ops.aten.mul.Scalar(expand, 2)\n"
            "select = torch.ops.aten.select.int(tangents_1, 1, 2)\n"
            "return pytree.tree_unflatten([select_backward, index_add, select, tangents_2, mul, "
            "None], self._out_spec)");
}

TEST(FactoryGrad, BernoulliPassesZerosRandomFactoriesNothing) {
  EXPECT_EQ(joint(R"(p: "f32[3]")",
                  "    bernoulli = torch.ops.aten.bernoulli.default(p)\n"
                  "    bernoulli_1 = torch.ops.aten.bernoulli.p(p, 0.5)\n"
                  "    rand_like = torch.ops.aten.rand_like.default(p)\n"
                  "    lift_fresh = torch.ops.aten.lift_fresh.default(p)\n"
                  "    return (bernoulli, bernoulli_1, rand_like, lift_fresh)\n",
                  {true}),
            "bernoulli = torch.ops.aten.bernoulli.default(primals_1)\n"
            "bernoulli_1 = torch.ops.aten.bernoulli.p(primals_1, 0.5)\n"
            "rand_like = torch.ops.aten.rand_like.default(primals_1)\n"
            "lift_fresh = torch.ops.aten.lift_fresh.default(primals_1)\n"
            "zeros_like = torch.ops.aten.zeros_like.default(tangents_1)\n"
            "add = torch.ops.aten.add.Tensor(tangents_2, zeros_like)\n"
            "return pytree.tree_unflatten([bernoulli, bernoulli_1, rand_like, lift_fresh, add], "
            "self._out_spec)");
}

TEST(ViewGrad, TheseFamiliesHaveRulesOrAreNotDifferentiable) {
  for (const char* name : {"view",
                           "_unsafe_view",
                           "_reshape_alias",
                           "view_as",
                           "alias",
                           "t",
                           "transpose.int",
                           "permute",
                           "expand",
                           "unsqueeze",
                           "squeeze.dim",
                           "squeeze",
                           "slice.Tensor",
                           "select.int",
                           "split.Tensor",
                           "split_with_sizes",
                           "unbind.int",
                           "as_strided",
                           "diagonal",
                           "clone",
                           "lift_fresh_copy",
                           "copy",
                           "_to_copy",
                           "slice_scatter",
                           "select_scatter",
                           "diagonal_scatter",
                           "as_strided_scatter",
                           "cat",
                           "stack",
                           "index_select",
                           "gather",
                           "slice_backward",
                           "select_backward",
                           "diagonal_backward",
                           "index_add",
                           "scatter_add",
                           "lift_fresh",
                           "bernoulli"}) {
    const OpDef& op = aten_ops().get(name);
    EXPECT_TRUE(op.derivative != nullptr) << name;
    EXPECT_FALSE(op.non_differentiable) << name;
  }
  EXPECT_TRUE(aten_ops().get("detach").non_differentiable);
  EXPECT_TRUE(aten_ops().get("bernoulli.p").non_differentiable);
}

TEST(ViewGrad, UnsupportedCasesSayWhy) {
  auto fw = parse_graph(R"(
def forward(self, x: "f32[3, 5]", i: "i64[3, 5]"):
    gather = torch.ops.aten.gather.default(x, 0, i, sparse_grad=True)
    return (gather,)
)",
                        aten_ops());
  try {
    build_joint(*fw, {true, false});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sparse_grad"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace aotgrad
