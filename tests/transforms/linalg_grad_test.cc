// Tests for the linear-algebra derivative rules: the joint graphs of mm, addmm, bmm, baddbmm,
// addmv, mv, dot and convolution, as PyTorch's AOTAutograd traces them (formulas per input in
// sorted input-name order, mm_mat1/mm_mat2_backward's column-major branches, maybe_multiply).
#include <gtest/gtest.h>

#include <string>

#include "../graph_text.h"
#include "aotgrad/ir/error.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/transforms/autograd.h"

namespace aotgrad {
namespace {

std::string joint(const std::string& params, const std::string& lines, std::vector<bool> rg) {
  return joint_body(
      *joint_graph("def forward(self, " + params + "):\n" + lines, std::move(rg)).graph);
}

TEST(LinalgGrad, MmComputesMat2BeforeSelf) {
  EXPECT_EQ(joint(R"(a: "f32[3, 4]", b: "f32[4, 5]")",
                  "    mm = torch.ops.aten.mm.default(a, b)\n    return (mm,)\n", {true, true}),
            "mm = torch.ops.aten.mm.default(primals_1, primals_2)\n"
            "t = torch.ops.aten.t.default(primals_1)\n"
            "mm_1 = torch.ops.aten.mm.default(t, tangents_1)\n"
            "t_1 = torch.ops.aten.t.default(primals_2)\n"
            "mm_2 = torch.ops.aten.mm.default(tangents_1, t_1)\n"
            "return pytree.tree_unflatten([mm, mm_2, mm_1], self._out_spec)");
}

// Column-major operands get column-major gradients: mm_mat1_backward's mat2.mm(grad.t()).t() and
// mm_mat2_backward's grad.t().mm(mat1).t().
TEST(LinalgGrad, MmColumnMajorBranches) {
  EXPECT_EQ(joint(R"(a: "f32[4, 3]", b: "f32[5, 4]")",
                  "    t = torch.ops.aten.t.default(a)\n"
                  "    t_1 = torch.ops.aten.t.default(b)\n"
                  "    mm = torch.ops.aten.mm.default(t, t_1)\n"
                  "    return (mm,)\n",
                  {true, true}),
            "t = torch.ops.aten.t.default(primals_1)\n"
            "t_1 = torch.ops.aten.t.default(primals_2)\n"
            "mm = torch.ops.aten.mm.default(t, t_1)\n"
            "t_2 = torch.ops.aten.t.default(tangents_1)\n"
            "mm_1 = torch.ops.aten.mm.default(t_2, t)\n"
            "t_3 = torch.ops.aten.t.default(mm_1)\n"
            "t_4 = torch.ops.aten.t.default(tangents_1)\n"
            "mm_2 = torch.ops.aten.mm.default(t_1, t_4)\n"
            "t_5 = torch.ops.aten.t.default(mm_2)\n"
            "t_6 = torch.ops.aten.t.default(t_3)\n"
            "t_7 = torch.ops.aten.t.default(t_5)\n"
            "return pytree.tree_unflatten([mm, t_7, t_6], self._out_spec)");
}

TEST(LinalgGrad, AddmmScalesByAlphaAndBeta) {
  EXPECT_EQ(joint(R"(s: "f32[5]", a: "f32[3, 4]", b: "f32[4, 5]")",
                  "    addmm = torch.ops.aten.addmm.default(s, a, b, beta=2, alpha=0.5)\n"
                  "    return (addmm,)\n",
                  {true, true, true}),
            "addmm = torch.ops.aten.addmm.default(primals_1, primals_2, primals_3, beta = 2, alpha "
            "= 0.5)\n"
            "t = torch.ops.aten.t.default(primals_3)\n"
            "mm = torch.ops.aten.mm.default(tangents_1, t)\n"
            "mul = torch.ops.aten.mul.Scalar(mm, 0.5)\n"
            "t_1 = torch.ops.aten.t.default(primals_2)\n"
            "mm_1 = torch.ops.aten.mm.default(t_1, tangents_1)\n"
            "mul_1 = torch.ops.aten.mul.Scalar(mm_1, 0.5)\n"
            "mul_2 = torch.ops.aten.mul.Scalar(tangents_1, 2)\n"
            "sum_1 = torch.ops.aten.sum.dim_IntList(mul_2, [0], True)\n"
            "view = torch.ops.aten.view.default(sum_1, [5])\n"
            "return pytree.tree_unflatten([addmm, view, mul, mul_1], self._out_spec)");
}

TEST(LinalgGrad, BatchedProducts) {
  EXPECT_EQ(joint(R"(a: "f32[2, 3, 4]", b: "f32[2, 4, 5]")",
                  "    bmm = torch.ops.aten.bmm.default(a, b)\n    return (bmm,)\n", {true, true}),
            "bmm = torch.ops.aten.bmm.default(primals_1, primals_2)\n"
            "transpose = torch.ops.aten.transpose.int(primals_1, 1, 2)\n"
            "bmm_1 = torch.ops.aten.bmm.default(transpose, tangents_1)\n"
            "transpose_1 = torch.ops.aten.transpose.int(primals_2, 1, 2)\n"
            "bmm_2 = torch.ops.aten.bmm.default(tangents_1, transpose_1)\n"
            "return pytree.tree_unflatten([bmm, bmm_2, bmm_1], self._out_spec)");
  EXPECT_EQ(joint(R"(s: "f32[3, 5]", a: "f32[2, 3, 4]", b: "f32[2, 4, 5]")",
                  "    baddbmm = torch.ops.aten.baddbmm.default(s, a, b, beta=0.5, alpha=2)\n"
                  "    return (baddbmm,)\n",
                  {true, true, true}),
            "baddbmm = torch.ops.aten.baddbmm.default(primals_1, primals_2, primals_3, beta = 0.5, "
            "alpha = 2)\n"
            "transpose = torch.ops.aten.transpose.int(primals_3, 1, 2)\n"
            "bmm = torch.ops.aten.bmm.default(tangents_1, transpose)\n"
            "mul = torch.ops.aten.mul.Scalar(bmm, 2)\n"
            "transpose_1 = torch.ops.aten.transpose.int(primals_2, 1, 2)\n"
            "bmm_1 = torch.ops.aten.bmm.default(transpose_1, tangents_1)\n"
            "mul_1 = torch.ops.aten.mul.Scalar(bmm_1, 2)\n"
            "mul_2 = torch.ops.aten.mul.Scalar(tangents_1, 0.5)\n"
            "sum_1 = torch.ops.aten.sum.dim_IntList(mul_2, [0], True)\n"
            "view = torch.ops.aten.view.default(sum_1, [3, 5])\n"
            "return pytree.tree_unflatten([baddbmm, view, mul, mul_1], self._out_spec)");
}

TEST(LinalgGrad, MatrixVectorAndDot) {
  EXPECT_EQ(joint(R"(s: "f32[3]", m: "f32[3, 4]", v: "f32[4]")",
                  "    addmv = torch.ops.aten.addmv.default(s, m, v, alpha=3)\n"
                  "    return (addmv,)\n",
                  {true, true, true}),
            "addmv = torch.ops.aten.addmv.default(primals_1, primals_2, primals_3, alpha = 3)\n"
            "view = torch.ops.aten.view.default(tangents_1, [3, 1])\n"
            "mul = torch.ops.aten.mul.Tensor(view, primals_3)\n"
            "mul_1 = torch.ops.aten.mul.Scalar(mul, 3)\n"
            "t = torch.ops.aten.t.default(primals_2)\n"
            "mv = torch.ops.aten.mv.default(t, tangents_1)\n"
            "mul_2 = torch.ops.aten.mul.Scalar(mv, 3)\n"
            "return pytree.tree_unflatten([addmv, tangents_1, mul_1, mul_2], self._out_spec)");
  EXPECT_EQ(joint(R"(m: "f32[3, 4]", v: "f32[4]")",
                  "    mv = torch.ops.aten.mv.default(m, v)\n    return (mv,)\n", {true, true}),
            "mv = torch.ops.aten.mv.default(primals_1, primals_2)\n"
            "view = torch.ops.aten.view.default(tangents_1, [3, 1])\n"
            "mul = torch.ops.aten.mul.Tensor(view, primals_2)\n"
            "t = torch.ops.aten.t.default(primals_1)\n"
            "mv_1 = torch.ops.aten.mv.default(t, tangents_1)\n"
            "return pytree.tree_unflatten([mv, mul, mv_1], self._out_spec)");
  EXPECT_EQ(joint(R"(a: "f32[4]", b: "f32[4]")",
                  "    dot = torch.ops.aten.dot.default(a, b)\n    return (dot,)\n", {true, true}),
            "dot = torch.ops.aten.dot.default(primals_1, primals_2)\n"
            "mul = torch.ops.aten.mul.Tensor(tangents_1, primals_2)\n"
            "mul_1 = torch.ops.aten.mul.Tensor(tangents_1, primals_1)\n"
            "return pytree.tree_unflatten([dot, mul, mul_1], self._out_spec)");
}

TEST(LinalgGrad, ConvolutionBackwardWithOutputMask) {
  EXPECT_EQ(
      joint(R"(x: "f32[2, 3, 5, 5]", w: "f32[4, 3, 3, 3]", b: "f32[4]")",
            "    convolution = torch.ops.aten.convolution.default(x, w, b, [1, 1], [1, 1], "
            "[1, 1], False, [0, 0], 1)\n"
            "    return (convolution,)\n",
            {false, true, true}),
      "convolution = torch.ops.aten.convolution.default(primals_1, primals_2, primals_3, [1, 1], "
      "[1, 1], [1, 1], False, [0, 0], 1)\n"
      "convolution_backward = torch.ops.aten.convolution_backward.default(tangents_1, primals_1, "
      "primals_2, [4], [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [False, True, True])\n"
      "getitem = convolution_backward[1]\n"
      "getitem_1 = convolution_backward[2]\n"
      "return pytree.tree_unflatten([convolution, None, getitem, getitem_1], self._out_spec)");
  EXPECT_EQ(joint(R"(x: "f32[2, 3, 9]", w: "f32[4, 3, 3]")",
                  "    convolution = torch.ops.aten.convolution.default(x, w, None, [2], [0], [1], "
                  "False, [0], 1)\n"
                  "    return (convolution,)\n",
                  {true, true}),
            "convolution = torch.ops.aten.convolution.default(primals_1, primals_2, None, [2], "
            "[0], [1], False, [0], 1)\n"
            "convolution_backward = torch.ops.aten.convolution_backward.default(tangents_1, "
            "primals_1, primals_2, None, [2], [0], [1], False, [0], 1, [True, True, False])\n"
            "getitem = convolution_backward[0]\n"
            "getitem_1 = convolution_backward[1]\n"
            "return pytree.tree_unflatten([convolution, getitem, getitem_1], self._out_spec)");
}

// convolution_backward's own derivative: _convolution_double_backward's body (ggO, gW, gI).
std::string conv_double_backward(const std::string& params, const std::string& conv_args) {
  return joint(params,
               "    convolution_backward = torch.ops.aten.convolution_backward.default(go, x, w, " +
                   conv_args +
                   ", [True, True, True])\n"
                   "    getitem = convolution_backward[0]\n"
                   "    getitem_1 = convolution_backward[1]\n"
                   "    getitem_2 = convolution_backward[2]\n"
                   "    return (getitem, getitem_1, getitem_2)\n",
               {true, true, true});
}

TEST(LinalgGrad, ConvolutionDoubleBackward) {
  const std::string head =
      "getitem = convolution_backward[0]\n"
      "getitem_1 = convolution_backward[1]\n"
      "getitem_2 = convolution_backward[2]\n";
  EXPECT_EQ(
      conv_double_backward(R"(go: "f32[2, 6, 6, 6]", x: "f32[2, 4, 8, 8]", w: "f32[6, 4, 3, 3]")",
                           "[6], [1, 1], [0, 0], [1, 1], False, [0, 0], 1"),
      "convolution_backward = torch.ops.aten.convolution_backward.default(primals_1, primals_2, "
      "primals_3, [6], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, True, True])\n" +
          head +
          "convolution = torch.ops.aten.convolution.default(tangents_1, primals_3, None, [1, 1], "
          "[0, 0], [1, 1], False, [0, 0], 1)\n"
          "convolution_1 = torch.ops.aten.convolution.default(primals_2, tangents_2, None, [1, 1], "
          "[0, 0], [1, 1], False, [0, 0], 1)\n"
          "add = torch.ops.aten.add.Tensor(convolution, convolution_1)\n"
          "view = torch.ops.aten.view.default(tangents_3, [1, 6, 1, 1])\n"
          "expand = torch.ops.aten.expand.default(view, [2, 6, 6, 6])\n"
          "add_1 = torch.ops.aten.add.Tensor(add, expand)\n"
          "transpose = torch.ops.aten.transpose.int(primals_1, 0, 1)\n"
          "transpose_1 = torch.ops.aten.transpose.int(tangents_1, 0, 1)\n"
          "convolution_2 = torch.ops.aten.convolution.default(transpose_1, transpose, None, [1, "
          "1], [0, 0], [1, 1], False, [0, 0], 1)\n"
          "transpose_2 = torch.ops.aten.transpose.int(convolution_2, 0, 1)\n"
          "convolution_3 = torch.ops.aten.convolution.default(primals_1, tangents_2, None, [1, 1], "
          "[0, 0], [1, 1], True, [0, 0], 1)\n"
          "return pytree.tree_unflatten([getitem, getitem_1, getitem_2, add_1, convolution_3, "
          "transpose_2], self._out_spec)");
  // Groups: gW per group over slices, concatenated, narrowed to the kernel; gI's output_padding
  // makes up the strided input size.
  std::string grouped =
      conv_double_backward(R"(go: "f32[2, 6, 3, 3]", x: "f32[2, 4, 8, 8]", w: "f32[6, 2, 3, 3]")",
                           "[6], [2, 2], [0, 0], [1, 1], False, [0, 0], 2");
  EXPECT_NE(grouped.find("transpose = torch.ops.aten.transpose.int(primals_1, 0, 1)\n"
                         "transpose_1 = torch.ops.aten.transpose.int(tangents_1, 0, 1)\n"
                         "slice_1 = torch.ops.aten.slice.Tensor(transpose_1, 0, 0, 2)\n"
                         "slice_2 = torch.ops.aten.slice.Tensor(transpose, 0, 0, 3)\n"
                         "convolution_2 = torch.ops.aten.convolution.default(slice_1, slice_2, "
                         "None, [1, 1], [0, 0], [2, 2], False, [0, 0], 1)\n"
                         "slice_3 = torch.ops.aten.slice.Tensor(transpose_1, 0, 2, 4)\n"
                         "slice_4 = torch.ops.aten.slice.Tensor(transpose, 0, 3, 6)\n"
                         "convolution_3 = torch.ops.aten.convolution.default(slice_3, slice_4, "
                         "None, [1, 1], [0, 0], [2, 2], False, [0, 0], 1)\n"
                         "cat = torch.ops.aten.cat.default([convolution_2, convolution_3], 1)\n"
                         "transpose_2 = torch.ops.aten.transpose.int(cat, 0, 1)\n"
                         "slice_5 = torch.ops.aten.slice.Tensor(transpose_2, 2, 0, 3)\n"
                         "slice_6 = torch.ops.aten.slice.Tensor(slice_5, 3, 0, 3)\n"
                         "convolution_4 = torch.ops.aten.convolution.default(primals_1, "
                         "tangents_2, None, [2, 2], [0, 0], [1, 1], True, [1, 1], 2)\n"
                         "return pytree.tree_unflatten([getitem, getitem_1, getitem_2, add_1, "
                         "convolution_4, slice_6], self._out_spec)"),
            std::string::npos)
      << grouped;
  // Transposed: gW convolves gO^T with ggI^T; gI is a plain convolution.
  std::string transposed =
      conv_double_backward(R"(go: "f32[2, 6, 16, 16]", x: "f32[2, 4, 8, 8]", w: "f32[4, 6, 3, 3]")",
                           "[6], [2, 2], [1, 1], [1, 1], True, [1, 1], 1");
  EXPECT_NE(transposed.find("convolution_2 = torch.ops.aten.convolution.default(transpose, "
                            "transpose_1, None, [1, 1], [1, 1], [2, 2], False, [1, 1], 1)\n"
                            "transpose_2 = torch.ops.aten.transpose.int(convolution_2, 0, 1)\n"
                            "slice_1 = torch.ops.aten.slice.Tensor(transpose_2, 2, 0, 3)\n"
                            "slice_2 = torch.ops.aten.slice.Tensor(slice_1, 3, 0, 3)\n"
                            "convolution_3 = torch.ops.aten.convolution.default(primals_1, "
                            "tangents_2, None, [2, 2], [1, 1], [1, 1], False, [1, 1], 1)\n"),
            std::string::npos)
      << transposed;
}

TEST(LinalgGrad, RulesOfTheFamily) {
  for (const char* name : {"mm", "addmm", "bmm", "baddbmm", "addmv", "mv", "dot", "convolution",
                           "convolution_backward"})
    EXPECT_TRUE(aten_ops().get(name).derivative != nullptr) << name;
  // The CompositeImplicitAutograd ops are decomposed before AD; they carry no rule.
  for (const char* name : {"matmul", "linear", "conv2d"})
    EXPECT_TRUE(aten_ops().get(name).derivative == nullptr) << name;
}

}  // namespace
}  // namespace aotgrad
