// Tests for the neural-network derivative rules: the joint graphs of normalization, softmax, loss,
// embedding, dropout and pooling ops and of their backward kernels, as PyTorch 1.13's AOTAutograd
// traces them (saved results 1.. read as the forward's getitems, double-backward formulas with
// their operands evaluated right to left).
#include <gtest/gtest.h>

#include <string>

#include "../graph_text.h"
#include "aotgrad/ir/error.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/transforms/autograd.h"

namespace aotgrad {
namespace {

// Parses `def forward(<params>):` + `lines`, differentiates w.r.t. the inputs in `rg`.
std::string joint(const std::string& params, const std::string& lines, std::vector<bool> rg) {
  return joint_body(
      *joint_graph("def forward(self, " + params + "):\n" + lines, std::move(rg)).graph);
}

// The message build_joint fails with.
std::string joint_error(const std::string& params, const std::string& lines, std::vector<bool> rg) {
  try {
    joint(params, lines, std::move(rg));
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

const char* kF32Options =
    "dtype = torch.float32, layout = torch.strided, device = device(type='cpu')";

// --- normalization ------------------------------------------------------------------------------

// mean and rstd are read as the forward's getitems (no detach: they are not differentiable
// outputs); output_mask says which of input, weight, bias need a gradient.
TEST(NnGrad, NativeLayerNorm) {
  EXPECT_EQ(
      joint(
          R"(x: "f32[4, 16]", w: "f32[16]", b: "f32[16]")",
          "    native_layer_norm = torch.ops.aten.native_layer_norm.default(x, [16], w, b, 1e-05)\n"
          "    getitem = native_layer_norm[0]\n"
          "    getitem_1 = native_layer_norm[1]\n"
          "    getitem_2 = native_layer_norm[2]\n"
          "    return (getitem,)\n",
          {true, true, true}),
      "native_layer_norm = torch.ops.aten.native_layer_norm.default(primals_1, [16], primals_2, "
      "primals_3, 1e-05)\n"
      "getitem = native_layer_norm[0]\n"
      "getitem_1 = native_layer_norm[1]\n"
      "getitem_2 = native_layer_norm[2]\n"
      "native_layer_norm_backward = torch.ops.aten.native_layer_norm_backward.default(tangents_1, "
      "primals_1, [16], getitem_1, getitem_2, primals_2, primals_3, [True, True, True])\n"
      "getitem_3 = native_layer_norm_backward[0]\n"
      "getitem_4 = native_layer_norm_backward[1]\n"
      "getitem_5 = native_layer_norm_backward[2]\n"
      "return pytree.tree_unflatten([getitem, getitem_3, getitem_4, getitem_5], self._out_spec)");
  // A weight that needs no gradient is still passed; the mask leaves its gradient out.
  EXPECT_EQ(
      joint(R"(x: "f32[4, 16]", w: "f32[16]")",
            "    native_layer_norm = torch.ops.aten.native_layer_norm.default(x, [16], w, None, "
            "1e-05)\n"
            "    getitem = native_layer_norm[0]\n"
            "    getitem_1 = native_layer_norm[1]\n"
            "    getitem_2 = native_layer_norm[2]\n"
            "    return (getitem,)\n",
            {true, false}),
      "native_layer_norm = torch.ops.aten.native_layer_norm.default(primals_1, [16], primals_2, "
      "None, 1e-05)\n"
      "getitem = native_layer_norm[0]\n"
      "getitem_1 = native_layer_norm[1]\n"
      "getitem_2 = native_layer_norm[2]\n"
      "native_layer_norm_backward = torch.ops.aten.native_layer_norm_backward.default(tangents_1, "
      "primals_1, [16], getitem_1, getitem_2, primals_2, None, [True, False, False])\n"
      "getitem_3 = native_layer_norm_backward[0]\n"
      "return pytree.tree_unflatten([getitem, getitem_3, None], self._out_spec)");
}

// A forward graph without the getitems of mean and rstd gets them right after its own.
TEST(NnGrad, NativeLayerNormAddsMissingGetitemsToTheForward) {
  EXPECT_EQ(
      joint(R"(x: "f32[2, 3, 4]")",
            "    native_layer_norm = torch.ops.aten.native_layer_norm.default(x, [3, 4], None, "
            "None, 1e-05)\n"
            "    getitem = native_layer_norm[0]\n"
            "    view = torch.ops.aten.view.default(getitem, [24])\n"
            "    return (view,)\n",
            {true}),
      "native_layer_norm = torch.ops.aten.native_layer_norm.default(primals_1, [3, 4], None, None, "
      "1e-05)\n"
      "getitem = native_layer_norm[0]\n"
      "getitem_1 = native_layer_norm[1]\n"
      "getitem_2 = native_layer_norm[2]\n"
      "view = torch.ops.aten.view.default(getitem, [24])\n"
      "view_1 = torch.ops.aten.view.default(tangents_1, [2, 3, 4])\n"
      "native_layer_norm_backward = torch.ops.aten.native_layer_norm_backward.default(view_1, "
      "primals_1, [3, 4], getitem_1, getitem_2, None, None, [True, False, False])\n"
      "getitem_3 = native_layer_norm_backward[0]\n"
      "return pytree.tree_unflatten([view, getitem_3], self._out_spec)");
}

TEST(NnGrad, NativeBatchNorm) {
  const char* params =
      R"(x: "f32[2, 3, 4, 5]", w: "f32[3]", b: "f32[3]", rm: "f32[3]", rv: "f32[3]")";
  auto graph = [](const char* training) {
    return std::string(
               "    native_batch_norm = torch.ops.aten.native_batch_norm.default(x, w, b, rm, "
               "rv, ") +
           training +
           ", 0.1, 1e-05)\n"
           "    getitem = native_batch_norm[0]\n"
           "    getitem_1 = native_batch_norm[1]\n"
           "    getitem_2 = native_batch_norm[2]\n"
           "    return (getitem,)\n";
  };
  EXPECT_EQ(joint(params, graph("True"), {true, true, false, false, false}),
            "native_batch_norm = torch.ops.aten.native_batch_norm.default(primals_1, primals_2, "
            "primals_3, primals_4, primals_5, True, 0.1, 1e-05)\n"
            "getitem = native_batch_norm[0]\n"
            "getitem_1 = native_batch_norm[1]\n"
            "getitem_2 = native_batch_norm[2]\n"
            "native_batch_norm_backward = "
            "torch.ops.aten.native_batch_norm_backward.default(tangents_1, primals_1, primals_2, "
            "primals_4, primals_5, getitem_1, getitem_2, True, 1e-05, [True, True, False])\n"
            "getitem_3 = native_batch_norm_backward[0]\n"
            "getitem_4 = native_batch_norm_backward[1]\n"
            "return pytree.tree_unflatten([getitem, getitem_3, getitem_4, None, None, None], "
            "self._out_spec)");
  // Evaluation mode passes training=False; only the bias needs a gradient here.
  EXPECT_EQ(
      joint(params, graph("False"), {false, false, true, false, false}),
      "native_batch_norm = torch.ops.aten.native_batch_norm.default(primals_1, primals_2, "
      "primals_3, primals_4, primals_5, False, 0.1, 1e-05)\n"
      "getitem = native_batch_norm[0]\n"
      "getitem_1 = native_batch_norm[1]\n"
      "getitem_2 = native_batch_norm[2]\n"
      "native_batch_norm_backward = torch.ops.aten.native_batch_norm_backward.default(tangents_1, "
      "primals_1, primals_2, primals_4, primals_5, getitem_1, getitem_2, False, 1e-05, [False, "
      "False, True])\n"
      "getitem_3 = native_batch_norm_backward[2]\n"
      "return pytree.tree_unflatten([getitem, None, None, getitem_3, None, None], self._out_spec)");
  // Running statistics that require grad are refused, as PyTorch's check_no_requires_grad does.
  EXPECT_NE(joint_error(params, graph("False"), {true, false, false, true, false})
                .find("The function 'native_batch_norm' is not differentiable with respect to "
                      "argument 'running_mean'. This input cannot have requires_grad True."),
            std::string::npos);
}

// PyTorch 2.x's functional batch norm: the same backward; the running-stat results are not
// differentiable.
TEST(NnGrad, NativeBatchNormLegitFunctional) {
  EXPECT_EQ(
      joint(R"(x: "f32[2, 3, 4]", w: "f32[3]", b: "f32[3]", rm: "f32[3]", rv: "f32[3]")",
            "    bn = torch.ops.aten._native_batch_norm_legit_functional.default(x, w, b, rm, rv, "
            "True, 0.1, 1e-05)\n"
            "    getitem = bn[0]\n"
            "    getitem_3 = bn[3]\n"
            "    getitem_4 = bn[4]\n"
            "    return (getitem, getitem_3, getitem_4)\n",
            {true, true, true, false, false}),
      "bn = torch.ops.aten._native_batch_norm_legit_functional.default(primals_1, primals_2, "
      "primals_3, primals_4, primals_5, True, 0.1, 1e-05)\n"
      "getitem = bn[0]\n"
      "getitem_1 = bn[1]\n"
      "getitem_2 = bn[2]\n"
      "getitem_3 = bn[3]\n"
      "getitem_4 = bn[4]\n"
      "native_batch_norm_backward = torch.ops.aten.native_batch_norm_backward.default(tangents_1, "
      "primals_1, primals_2, primals_4, primals_5, getitem_1, getitem_2, True, 1e-05, [True, True, "
      "True])\n"
      "getitem_5 = native_batch_norm_backward[0]\n"
      "getitem_6 = native_batch_norm_backward[1]\n"
      "getitem_7 = native_batch_norm_backward[2]\n"
      "return pytree.tree_unflatten([getitem, getitem_3, getitem_4, getitem_5, getitem_6, "
      "getitem_7, None, None], self._out_spec)");
}

// layer_norm_double_backward without weight and bias, as 1.13 traces it after dead-code
// elimination: reshapes to [M, N], the gradient of the input, then of grad_out (the first
// backward's grad_input applied to ggI); C++ in-place steps appear as their functional ops.
TEST(NnGrad, NativeLayerNormBackwardDoubleBackward) {
  const char* params = R"(g: "f32[4, 6]", x: "f32[4, 6]", m: "f32[4, 1]", rs: "f32[4, 1]")";
  const char* fw =
      "    n = torch.ops.aten.native_layer_norm_backward.default(g, x, [6], m, rs, None, None, "
      "[True, False, False])\n"
      "    getitem = n[0]\n"
      "    return (getitem,)\n";
  EXPECT_EQ(joint(params, fw, {true, true, false, false}),
            "n = torch.ops.aten.native_layer_norm_backward.default(primals_1, primals_2, [6], "
            "primals_3, primals_4, None, None, [True, False, False])\n"
            "getitem = n[0]\n"
            "view = torch.ops.aten.view.default(primals_2, [4, 6])\n"
            "view_1 = torch.ops.aten.view.default(primals_1, [4, 6])\n"
            "view_2 = torch.ops.aten.view.default(primals_3, [4, 1])\n"
            "view_3 = torch.ops.aten.view.default(primals_4, [4, 1])\n"
            "ones = torch.ops.aten.ones.default([1], dtype = torch.float32, layout = "
            "torch.strided, device = device(type='cpu'))\n"
            "view_4 = torch.ops.aten.view.default(tangents_1, [4, 6])\n"
            "sub = torch.ops.aten.sub.Tensor(view, view_2)\n"
            "pow_1 = torch.ops.aten.pow.Tensor_Scalar(view_3, 2)\n"
            "pow_2 = torch.ops.aten.pow.Tensor_Scalar(view_3, 3)\n"
            "mul = torch.ops.aten.mul.Tensor(sub, pow_2)\n"
            "mul_1 = torch.ops.aten.mul.Tensor(view_1, ones)\n"
            "mul_2 = torch.ops.aten.mul.Tensor(mul_1, sub)\n"
            "sum_1 = torch.ops.aten.sum.dim_IntList(mul_2, [1], True)\n"
            "sum_2 = torch.ops.aten.sum.dim_IntList(mul_1, [1], True)\n"
            "sum_3 = torch.ops.aten.sum.dim_IntList(view_4, [1], True)\n"
            "mul_3 = torch.ops.aten.mul.Tensor(view_4, sub)\n"
            "sum_4 = torch.ops.aten.sum.dim_IntList(mul_3, [1], True)\n"
            "mul_4 = torch.ops.aten.mul.Tensor(sum_3, sum_2)\n"
            "div = torch.ops.aten.div.Scalar(mul_4, 6)\n"
            "mul_5 = torch.ops.aten.mul.Tensor(view_4, mul_1)\n"
            "sum_5 = torch.ops.aten.sum.dim_IntList(mul_5, [1], True)\n"
            "sub_1 = torch.ops.aten.sub.Tensor(div, sum_5)\n"
            "mul_6 = torch.ops.aten.mul.Tensor(pow_1, sum_1)\n"
            "mul_7 = torch.ops.aten.mul.Tensor(mul_6, sum_4)\n"
            "mul_8 = torch.ops.aten.mul.Scalar(mul_7, 0.5)\n"
            "add = torch.ops.aten.add.Tensor(sub_1, mul_8)\n"
            "mul_9 = torch.ops.aten.mul.Tensor(mul, add)\n"
            "div_1 = torch.ops.aten.div.Scalar(mul_9, 6)\n"
            "div_2 = torch.ops.aten.div.Scalar(sum_2, 6)\n"
            "sub_2 = torch.ops.aten.sub.Tensor(div_2, mul_1)\n"
            "mul_10 = torch.ops.aten.mul.Tensor(sum_4, pow_2)\n"
            "div_3 = torch.ops.aten.div.Scalar(mul_10, 6)\n"
            "mul_11 = torch.ops.aten.mul.Tensor(div_3, sub_2)\n"
            "div_4 = torch.ops.aten.div.Scalar(sum_3, 6)\n"
            "sub_3 = torch.ops.aten.sub.Tensor(div_4, view_4)\n"
            "mul_12 = torch.ops.aten.mul.Tensor(sum_1, pow_2)\n"
            "div_5 = torch.ops.aten.div.Scalar(mul_12, 6)\n"
            "mul_13 = torch.ops.aten.mul.Tensor(div_5, sub_3)\n"
            "add_1 = torch.ops.aten.add.Tensor(div_1, mul_11)\n"
            "add_2 = torch.ops.aten.add.Tensor(add_1, mul_13)\n"
            "view_5 = torch.ops.aten.view.default(add_2, [4, 6])\n"
            "mul_14 = torch.ops.aten.mul.Tensor(ones, view_3)\n"
            "div_6 = torch.ops.aten.div.Scalar(mul_14, 6)\n"
            "mul_15 = torch.ops.aten.mul.Scalar(view_4, 6)\n"
            "sum_6 = torch.ops.aten.sum.dim_IntList(view_4, [1], True)\n"
            "sub_4 = torch.ops.aten.sub.Tensor(mul_15, sum_6)\n"
            "mul_16 = torch.ops.aten.mul.Tensor(view_4, sub)\n"
            "sum_7 = torch.ops.aten.sum.dim_IntList(mul_16, [1], True)\n"
            "mul_17 = torch.ops.aten.mul.Tensor(sub, pow_1)\n"
            "mul_18 = torch.ops.aten.mul.Tensor(mul_17, sum_7)\n"
            "sub_5 = torch.ops.aten.sub.Tensor(sub_4, mul_18)\n"
            "mul_19 = torch.ops.aten.mul.Tensor(div_6, sub_5)\n"
            "expand = torch.ops.aten.expand.default(mul_19, [4, 6])\n"
            "view_6 = torch.ops.aten.view.default(expand, [4, 6])\n"
            "return pytree.tree_unflatten([getitem, view_6, view_5, None, None], self._out_spec)");
  // Only grad_out needs a gradient: the input's terms are dropped.
  EXPECT_EQ(
      joint(params, fw, {true, false, false, false}),
      "n = torch.ops.aten.native_layer_norm_backward.default(primals_1, primals_2, [6], primals_3, "
      "primals_4, None, None, [True, False, False])\n"
      "getitem = n[0]\n"
      "view = torch.ops.aten.view.default(primals_2, [4, 6])\n"
      "view_2 = torch.ops.aten.view.default(primals_3, [4, 1])\n"
      "view_3 = torch.ops.aten.view.default(primals_4, [4, 1])\n"
      "ones = torch.ops.aten.ones.default([1], " +
          std::string(kF32Options) +
          ")\n"
          "view_4 = torch.ops.aten.view.default(tangents_1, [4, 6])\n"
          "sub = torch.ops.aten.sub.Tensor(view, view_2)\n"
          "pow_1 = torch.ops.aten.pow.Tensor_Scalar(view_3, 2)\n"
          "mul_14 = torch.ops.aten.mul.Tensor(ones, view_3)\n"
          "div_6 = torch.ops.aten.div.Scalar(mul_14, 6)\n"
          "mul_15 = torch.ops.aten.mul.Scalar(view_4, 6)\n"
          "sum_6 = torch.ops.aten.sum.dim_IntList(view_4, [1], True)\n"
          "sub_4 = torch.ops.aten.sub.Tensor(mul_15, sum_6)\n"
          "mul_16 = torch.ops.aten.mul.Tensor(view_4, sub)\n"
          "sum_7 = torch.ops.aten.sum.dim_IntList(mul_16, [1], True)\n"
          "mul_17 = torch.ops.aten.mul.Tensor(sub, pow_1)\n"
          "mul_18 = torch.ops.aten.mul.Tensor(mul_17, sum_7)\n"
          "sub_5 = torch.ops.aten.sub.Tensor(sub_4, mul_18)\n"
          "mul_19 = torch.ops.aten.mul.Tensor(div_6, sub_5)\n"
          "expand = torch.ops.aten.expand.default(mul_19, [4, 6])\n"
          "view_6 = torch.ops.aten.view.default(expand, [4, 6])\n"
          "return pytree.tree_unflatten([getitem, view_6, None, None, None], self._out_spec)");
  EXPECT_NE(joint_error(params, fw, {true, true, true, false})
                .find("the derivative for 'native_layer_norm_backward mean' is not implemented."),
            std::string::npos);
}

// batchnorm_double_backward in evaluation mode (running statistics; train=False).
TEST(NnGrad, NativeBatchNormBackwardDoubleBackward) {
  EXPECT_EQ(
      joint(R"(g: "f32[2, 3, 4]", x: "f32[2, 3, 4]", w: "f32[3]", rm: "f32[3]", rv: "f32[3]", )"
            R"(sm: "f32[0]", si: "f32[0]")",
            "    n = torch.ops.aten.native_batch_norm_backward.default(g, x, w, rm, rv, sm, si, "
            "False, 1e-05, [True, True, True])\n"
            "    getitem = n[0]\n    getitem_1 = n[1]\n    getitem_2 = n[2]\n"
            "    return (getitem, getitem_1, getitem_2)\n",
            {true, true, true, false, false, false, false}),
      "n = torch.ops.aten.native_batch_norm_backward.default(primals_1, primals_2, primals_3, "
      "primals_4, primals_5, primals_6, primals_7, False, 1e-05, [True, True, True])\n"
      "getitem = n[0]\n"
      "getitem_1 = n[1]\n"
      "getitem_2 = n[2]\n"
      "unsqueeze = torch.ops.aten.unsqueeze.default(primals_3, 1)\n"
      "expand = torch.ops.aten.expand.default(unsqueeze, [2, 3, 4])\n"
      "unsqueeze_1 = torch.ops.aten.unsqueeze.default(tangents_2, 1)\n"
      "expand_1 = torch.ops.aten.expand.default(unsqueeze_1, [2, 3, 4])\n"
      "unsqueeze_2 = torch.ops.aten.unsqueeze.default(tangents_3, 1)\n"
      "expand_2 = torch.ops.aten.expand.default(unsqueeze_2, [2, 3, 4])\n"
      "unsqueeze_3 = torch.ops.aten.unsqueeze.default(primals_4, 1)\n"
      "unsqueeze_4 = torch.ops.aten.unsqueeze.default(unsqueeze_3, 0)\n"
      "sub = torch.ops.aten.sub.Tensor(primals_2, unsqueeze_4)\n"
      "add = torch.ops.aten.add.Scalar(primals_5, 1e-05)\n"
      "pow_1 = torch.ops.aten.pow.Tensor_Scalar(add, -0.5)\n"
      "unsqueeze_5 = torch.ops.aten.unsqueeze.default(pow_1, 1)\n"
      "unsqueeze_6 = torch.ops.aten.unsqueeze.default(unsqueeze_5, 0)\n"
      "mul_2 = torch.ops.aten.mul.Tensor(expand_1, unsqueeze_6)\n"
      "mul_3 = torch.ops.aten.mul.Tensor(mul_2, primals_1)\n"
      "mul_4 = torch.ops.aten.mul.Tensor(tangents_1, primals_1)\n"
      "mul_5 = torch.ops.aten.mul.Tensor(mul_4, unsqueeze_6)\n"
      "sum_5 = torch.ops.aten.sum.dim_IntList(mul_5, [0])\n"
      "sum_6 = torch.ops.aten.sum.dim_IntList(sum_5, [1])\n"
      "mul_6 = torch.ops.aten.mul.Tensor(tangents_1, unsqueeze_6)\n"
      "mul_7 = torch.ops.aten.mul.Tensor(mul_6, expand)\n"
      "mul_8 = torch.ops.aten.mul.Tensor(expand_1, sub)\n"
      "mul_9 = torch.ops.aten.mul.Tensor(mul_8, unsqueeze_6)\n"
      "add_1 = torch.ops.aten.add.Tensor(mul_7, mul_9)\n"
      "add_2 = torch.ops.aten.add.Tensor(add_1, expand_2)\n"
      "return pytree.tree_unflatten([getitem, getitem_1, getitem_2, add_2, mul_3, sum_6, None, "
      "None, None, None], self._out_spec)");
  // save_mean requiring grad: not implemented (PyTorch raises it in the backward).
  EXPECT_NE(
      joint_error(R"(g: "f32[2, 3, 4]", x: "f32[2, 3, 4]", sm: "f32[3]", si: "f32[3]")",
                  "    n = torch.ops.aten.native_batch_norm_backward.default(g, x, None, None, "
                  "None, sm, si, True, 1e-05, [True, False, False])\n"
                  "    getitem = n[0]\n"
                  "    return (getitem,)\n",
                  {true, true, true, false})
          .find("the derivative for 'native_batch_norm_backward save_mean' is not implemented."),
      std::string::npos);
}

// --- softmax ------------------------------------------------------------------------------------

// `result` is the saved differentiable output: read through detach(detach(...)).
TEST(NnGrad, SoftmaxAndLogSoftmax) {
  EXPECT_EQ(joint(R"(x: "f32[4, 5]")",
                  "    _softmax = torch.ops.aten._softmax.default(x, -1, False)\n"
                  "    return (_softmax,)\n",
                  {true}),
            "_softmax = torch.ops.aten._softmax.default(primals_1, -1, False)\n"
            "detach = torch.ops.aten.detach.default(_softmax)\n"
            "detach_1 = torch.ops.aten.detach.default(detach)\n"
            "_softmax_backward_data = torch.ops.aten._softmax_backward_data.default(tangents_1, "
            "detach_1, -1, torch.float32)\n"
            "return pytree.tree_unflatten([_softmax, _softmax_backward_data], self._out_spec)");
  EXPECT_EQ(
      joint(R"(x: "f64[4, 5]")",
            "    _log_softmax = torch.ops.aten._log_softmax.default(x, 1, False)\n"
            "    return (_log_softmax,)\n",
            {true}),
      "_log_softmax = torch.ops.aten._log_softmax.default(primals_1, 1, False)\n"
      "detach = torch.ops.aten.detach.default(_log_softmax)\n"
      "detach_1 = torch.ops.aten.detach.default(detach)\n"
      "_log_softmax_backward_data = torch.ops.aten._log_softmax_backward_data.default(tangents_1, "
      "detach_1, 1, torch.float64)\n"
      "return pytree.tree_unflatten([_log_softmax, _log_softmax_backward_data], self._out_spec)");
}

// grad_output's formula first, then output's softmax_double_backward, its operands evaluated
// right to left: exactly the graph 1.13 traces.
TEST(NnGrad, SoftmaxBackwardDataDoubleBackward) {
  EXPECT_EQ(
      joint(R"(g: "f32[4, 5]", y: "f32[4, 5]")",
            "    s = torch.ops.aten._softmax_backward_data.default(g, y, 1, torch.float32)\n"
            "    return (s,)\n",
            {true, true}),
      "s = torch.ops.aten._softmax_backward_data.default(primals_1, primals_2, 1, torch.float32)\n"
      "_softmax_backward_data = torch.ops.aten._softmax_backward_data.default(tangents_1, "
      "primals_2, 1, torch.float32)\n"
      "mul = torch.ops.aten.mul.Tensor(primals_2, tangents_1)\n"
      "sum_1 = torch.ops.aten.sum.dim_IntList(mul, [1], True)\n"
      "mul_1 = torch.ops.aten.mul.Tensor(primals_1, sum_1)\n"
      "mul_2 = torch.ops.aten.mul.Tensor(primals_2, primals_1)\n"
      "sum_2 = torch.ops.aten.sum.dim_IntList(mul_2, [1], True)\n"
      "mul_3 = torch.ops.aten.mul.Tensor(sum_2, tangents_1)\n"
      "mul_4 = torch.ops.aten.mul.Tensor(primals_1, tangents_1)\n"
      "sub = torch.ops.aten.sub.Tensor(mul_4, mul_3)\n"
      "sub_1 = torch.ops.aten.sub.Tensor(sub, mul_1)\n"
      "return pytree.tree_unflatten([s, _softmax_backward_data, sub_1], self._out_spec)");
}

TEST(NnGrad, LogSoftmaxBackwardDataDoubleBackward) {
  EXPECT_EQ(
      joint(R"(g: "f32[4, 5]", y: "f32[4, 5]")",
            "    s = torch.ops.aten._log_softmax_backward_data.default(g, y, -1, torch.float32)\n"
            "    return (s,)\n",
            {true, true}),
      "s = torch.ops.aten._log_softmax_backward_data.default(primals_1, primals_2, -1, "
      "torch.float32)\n"
      "exp = torch.ops.aten.exp.default(primals_2)\n"
      "mul = torch.ops.aten.mul.Tensor(tangents_1, exp)\n"
      "sum_1 = torch.ops.aten.sum.dim_IntList(mul, [-1], True)\n"
      "sub = torch.ops.aten.sub.Tensor(tangents_1, sum_1)\n"
      "exp_1 = torch.ops.aten.exp.default(primals_2)\n"
      "sum_2 = torch.ops.aten.sum.dim_IntList(primals_1, [-1], True)\n"
      "neg = torch.ops.aten.neg.default(sum_2)\n"
      "mul_1 = torch.ops.aten.mul.Tensor(neg, exp_1)\n"
      "mul_2 = torch.ops.aten.mul.Tensor(mul_1, tangents_1)\n"
      "return pytree.tree_unflatten([s, sub, mul_2], self._out_spec)");
}

// --- losses -------------------------------------------------------------------------------------

TEST(NnGrad, NllLoss) {
  const char* fw =
      "    nll_loss_forward = torch.ops.aten.nll_loss_forward.default(x, t, w, 1, -100)\n"
      "    getitem = nll_loss_forward[0]\n"
      "    getitem_1 = nll_loss_forward[1]\n"
      "    return (getitem,)\n";
  const char* params = R"(x: "f32[4, 5]", t: "i64[4]", w: "f32[5]")";
  EXPECT_EQ(
      joint(params, fw, {true, false, false}),
      "nll_loss_forward = torch.ops.aten.nll_loss_forward.default(primals_1, primals_2, primals_3, "
      "1, -100)\n"
      "getitem = nll_loss_forward[0]\n"
      "getitem_1 = nll_loss_forward[1]\n"
      "nll_loss_backward = torch.ops.aten.nll_loss_backward.default(tangents_1, primals_1, "
      "primals_2, primals_3, 1, -100, getitem_1)\n"
      "return pytree.tree_unflatten([getitem, nll_loss_backward, None, None], self._out_spec)");
  EXPECT_NE(joint_error(params, fw, {true, false, true})
                .find("The function 'nll_loss_forward' is not differentiable with respect to "
                      "argument 'weight'"),
            std::string::npos);
}

// grad_output: nll_loss(grad, ...) = nll_loss_forward(...)[0]; self: zeros_like(grad).
TEST(NnGrad, NllLossBackwardDoubleBackward) {
  const char* params = R"(go: "f32[4]", x: "f32[4, 5]", t: "i64[4]", tw: "f32[]")";
  const char* fw =
      "    n = torch.ops.aten.nll_loss_backward.default(go, x, t, None, 0, -100, tw)\n"
      "    return (n,)\n";
  EXPECT_EQ(joint(params, fw, {true, true, false, false}),
            "n = torch.ops.aten.nll_loss_backward.default(primals_1, primals_2, primals_3, None, "
            "0, -100, primals_4)\n"
            "nll_loss_forward = torch.ops.aten.nll_loss_forward.default(tangents_1, primals_3, "
            "None, 0, -100)\n"
            "getitem = nll_loss_forward[0]\n"
            "zeros_like = torch.ops.aten.zeros_like.default(tangents_1)\n"
            "return pytree.tree_unflatten([n, getitem, zeros_like, None, None], self._out_spec)");
  EXPECT_NE(joint_error(params, fw, {true, true, false, true})
                .find("not differentiable with respect to argument 'total_weight'"),
            std::string::npos);
}

// --- embedding ----------------------------------------------------------------------------------

TEST(NnGrad, Embedding) {
  EXPECT_EQ(
      joint(R"(w: "f32[4, 3]", i: "i64[1, 2]")",
            "    embedding = torch.ops.aten.embedding.default(w, i, 1, True)\n"
            "    return (embedding,)\n",
            {true, false}),
      "embedding = torch.ops.aten.embedding.default(primals_1, primals_2, 1, True)\n"
      "embedding_dense_backward = torch.ops.aten.embedding_dense_backward.default(tangents_1, "
      "primals_2, 4, 1, True)\n"
      "return pytree.tree_unflatten([embedding, embedding_dense_backward, None], self._out_spec)");
  EXPECT_NE(joint_error(R"(w: "f32[4, 3]", i: "i64[2]")",
                        "    e = torch.ops.aten.embedding.default(w, i, -1, False, True)\n"
                        "    return (e,)\n",
                        {true, false})
                .find("sparse=True"),
            std::string::npos);
}

// embedding_dense_double_backward: index_select of the flattened indices, padding rows zeroed.
TEST(NnGrad, EmbeddingDenseBackwardDoubleBackward) {
  const char* params = R"(g: "f32[2, 2, 3]", i: "i64[2, 2]")";
  EXPECT_EQ(
      joint(params,
            "    e = torch.ops.aten.embedding_dense_backward.default(g, i, 10, 2, False)\n"
            "    return (e,)\n",
            {true, false}),
      "e = torch.ops.aten.embedding_dense_backward.default(primals_1, primals_2, 10, 2, False)\n"
      "view = torch.ops.aten.view.default(primals_2, [4])\n"
      "index_select = torch.ops.aten.index_select.default(tangents_1, 0, view)\n"
      "eq = torch.ops.aten.eq.Scalar(primals_2, 2)\n"
      "view_1 = torch.ops.aten.view.default(eq, [4, 1])\n"
      "masked_fill = torch.ops.aten.masked_fill.Scalar(index_select, view_1, 0)\n"
      "view_2 = torch.ops.aten.view.default(masked_fill, [2, 2, -1])\n"
      "return pytree.tree_unflatten([e, view_2, None], self._out_spec)");
  // No padding_idx: no masking; non-contiguous indices are copied to flatten them.
  EXPECT_EQ(
      joint(R"(g: "f32[2, 2, 3]", i: "i64[2, 2][1, 2]")",
            "    e = torch.ops.aten.embedding_dense_backward.default(g, i, 10, -1, False)\n"
            "    return (e,)\n",
            {true, false}),
      "e = torch.ops.aten.embedding_dense_backward.default(primals_1, primals_2, 10, -1, False)\n"
      "clone = torch.ops.aten.clone.default(primals_2, memory_format = torch.contiguous_format)\n"
      "_unsafe_view = torch.ops.aten._unsafe_view.default(clone, [4])\n"
      "index_select = torch.ops.aten.index_select.default(tangents_1, 0, _unsafe_view)\n"
      "view = torch.ops.aten.view.default(index_select, [2, 2, -1])\n"
      "return pytree.tree_unflatten([e, view, None], self._out_spec)");
}

// Symbolic sizes are read with sym_size / sym_numel; a bare symbol from the first input dimension
// it is (s1 from primals_1, though the backward reshapes to i's sizes).
TEST(NnGrad, EmbeddingSymbolic) {
  EXPECT_EQ(
      joint(R"(w: "f32[s0, 3]", i: "i64[s1]")",
            "    e = torch.ops.aten.embedding.default(w, i)\n"
            "    return (e,)\n",
            {true, false}),
      "e = torch.ops.aten.embedding.default(primals_1, primals_2)\n"
      "sym_size = torch.ops.aten.sym_size.int(primals_1, 0)\n"
      "embedding_dense_backward = torch.ops.aten.embedding_dense_backward.default(tangents_1, "
      "primals_2, sym_size, -1, False)\n"
      "return pytree.tree_unflatten([e, embedding_dense_backward, None], self._out_spec)");
  EXPECT_EQ(
      joint(R"(g: "f32[s1, 3]", i: "i64[s1]")",
            "    e = torch.ops.aten.embedding_dense_backward.default(g, i, 10, 0, False)\n"
            "    return (e,)\n",
            {true, false}),
      "e = torch.ops.aten.embedding_dense_backward.default(primals_1, primals_2, 10, 0, False)\n"
      "sym_numel = torch.ops.aten.sym_numel.default(primals_2)\n"
      "view = torch.ops.aten.view.default(primals_2, [sym_numel])\n"
      "index_select = torch.ops.aten.index_select.default(tangents_1, 0, view)\n"
      "eq = torch.ops.aten.eq.Scalar(primals_2, 0)\n"
      "view_1 = torch.ops.aten.view.default(eq, [sym_numel, 1])\n"
      "masked_fill = torch.ops.aten.masked_fill.Scalar(index_select, view_1, 0)\n"
      "sym_size = torch.ops.aten.sym_size.int(primals_1, 0)\n"
      "view_2 = torch.ops.aten.view.default(masked_fill, [sym_size, 3])\n"
      "return pytree.tree_unflatten([e, view_2, None], self._out_spec)");
}

// --- dropout ------------------------------------------------------------------------------------

// scale = 1 / (1 - p) when training, 0 for p == 1, and 1 when train is False or None (1.13).
TEST(NnGrad, NativeDropout) {
  auto graph = [](const char* p, const char* train) {
    return std::string("    native_dropout = torch.ops.aten.native_dropout.default(x, ") + p +
           ", " + train +
           ")\n"
           "    getitem = native_dropout[0]\n"
           "    getitem_1 = native_dropout[1]\n"
           "    return (getitem,)\n";
  };
  auto expected = [](const char* p, const char* train, const char* scale) {
    return std::string("native_dropout = torch.ops.aten.native_dropout.default(primals_1, ") + p +
           ", " + train +
           ")\n"
           "getitem = native_dropout[0]\n"
           "getitem_1 = native_dropout[1]\n"
           "native_dropout_backward = torch.ops.aten.native_dropout_backward.default(tangents_1, "
           "getitem_1, " +
           scale +
           ")\n"
           "return pytree.tree_unflatten([getitem, native_dropout_backward], self._out_spec)";
  };
  const char* params = R"(x: "f32[4, 4]")";
  EXPECT_EQ(joint(params, graph("0.3", "True"), {true}),
            expected("0.3", "True", "1.4285714285714286"));
  EXPECT_EQ(joint(params, graph("0.3", "None"), {true}), expected("0.3", "None", "1.0"));
  EXPECT_EQ(joint(params, graph("0.3", "False"), {true}), expected("0.3", "False", "1.0"));
  EXPECT_EQ(joint(params, graph("1.0", "True"), {true}), expected("1.0", "True", "0.0"));
}

// grad_output: grad * (mask.type_as(grad) * scale); mask: not_implemented.
TEST(NnGrad, NativeDropoutBackwardDoubleBackward) {
  EXPECT_EQ(joint(R"(g: "f32[4, 5]", m: "b8[4, 5]")",
                  "    d = torch.ops.aten.native_dropout_backward.default(g, m, 2.0)\n"
                  "    return (d,)\n",
                  {true, false}),
            "d = torch.ops.aten.native_dropout_backward.default(primals_1, primals_2, 2.0)\n"
            "_to_copy = torch.ops.aten._to_copy.default(primals_2, " +
                std::string(kF32Options) +
                ")\n"
                "mul = torch.ops.aten.mul.Scalar(_to_copy, 2.0)\n"
                "mul_1 = torch.ops.aten.mul.Tensor(tangents_1, mul)\n"
                "return pytree.tree_unflatten([d, mul_1, None], self._out_spec)");
  EXPECT_NE(joint_error(R"(g: "f32[4, 5]", m: "f32[4, 5]")",
                        "    d = torch.ops.aten.native_dropout_backward.default(g, m, 2.0)\n"
                        "    return (d,)\n",
                        {true, true})
                .find("the derivative for 'native_dropout_backward: mask' is not implemented."),
            std::string::npos);
}

// --- pooling ------------------------------------------------------------------------------------

// int[2] arguments reach the backward as C++ IntArrayRefs: a single int repeated, lists as given.
TEST(NnGrad, MaxPool2dWithIndices) {
  EXPECT_EQ(
      joint(R"(x: "f32[1, 2, 5, 5]")",
            "    m = torch.ops.aten.max_pool2d_with_indices.default(x, [2], [], 1)\n"
            "    getitem = m[0]\n"
            "    getitem_1 = m[1]\n"
            "    return (getitem,)\n",
            {true}),
      "m = torch.ops.aten.max_pool2d_with_indices.default(primals_1, [2], [], 1)\n"
      "getitem = m[0]\n"
      "getitem_1 = m[1]\n"
      "max_pool2d_with_indices_backward = "
      "torch.ops.aten.max_pool2d_with_indices_backward.default(tangents_1, primals_1, [2], [], [1, "
      "1], [1, 1], False, getitem_1)\n"
      "return pytree.tree_unflatten([getitem, max_pool2d_with_indices_backward], self._out_spec)");
}

// max_pool_double_backward: gather from the flattened planes; self: zeros (TypeAndSize).
TEST(NnGrad, MaxPool2dWithIndicesBackwardDoubleBackward) {
  const char* fw =
      "    b = torch.ops.aten.max_pool2d_with_indices_backward.default(g, x, [2, 2], [2, 2], "
      "[0, 0], [1, 1], False, i)\n"
      "    return (b,)\n";
  EXPECT_EQ(joint(R"(g: "f32[1, 2, 2, 2]", x: "f32[1, 2, 4, 4]", i: "i64[1, 2, 2, 2]")", fw,
                  {true, true, false}),
            "b = torch.ops.aten.max_pool2d_with_indices_backward.default(primals_1, primals_2, [2, "
            "2], [2, 2], [0, 0], [1, 1], False, primals_3)\n"
            "view = torch.ops.aten.view.default(primals_3, [1, 2, -1])\n"
            "view_1 = torch.ops.aten.view.default(tangents_1, [1, 2, -1])\n"
            "gather = torch.ops.aten.gather.default(view_1, -1, view)\n"
            "view_2 = torch.ops.aten.view.default(gather, [1, 2, 2, 2])\n"
            "zeros = torch.ops.aten.zeros.default([1, 2, 4, 4], " +
                std::string(kF32Options) +
                ")\n"
                "return pytree.tree_unflatten([b, view_2, zeros, None], self._out_spec)");
  // Channels-last indices: grad.contiguous(channels_last) copies the contiguous tangent.
  EXPECT_EQ(
      joint(R"(g: "f32[1, 2, 2, 2]", x: "f32[1, 2, 4, 4]", i: "i64[1, 2, 2, 2][8, 1, 4, 2]")", fw,
            {true, false, false}),
      "b = torch.ops.aten.max_pool2d_with_indices_backward.default(primals_1, primals_2, [2, 2], "
      "[2, 2], [0, 0], [1, 1], False, primals_3)\n"
      "view = torch.ops.aten.view.default(primals_3, [1, 2, -1])\n"
      "clone = torch.ops.aten.clone.default(tangents_1, memory_format = torch.channels_last)\n"
      "view_1 = torch.ops.aten.view.default(clone, [1, 2, -1])\n"
      "gather = torch.ops.aten.gather.default(view_1, -1, view)\n"
      "view_2 = torch.ops.aten.view.default(gather, [1, 2, 2, 2])\n"
      "return pytree.tree_unflatten([b, view_2, None, None], self._out_spec)");
}

TEST(NnGrad, AvgPool2dAndItsBackward) {
  EXPECT_EQ(joint(R"(x: "f32[1, 2, 5, 5]")",
                  "    a = torch.ops.aten.avg_pool2d.default(x, 3, [], 1, False, True, 2)\n"
                  "    return (a,)\n",
                  {true}),
            "a = torch.ops.aten.avg_pool2d.default(primals_1, 3, [], 1, False, True, 2)\n"
            "avg_pool2d_backward = torch.ops.aten.avg_pool2d_backward.default(tangents_1, "
            "primals_1, [3, 3], [], [1, 1], False, True, 2)\n"
            "return pytree.tree_unflatten([a, avg_pool2d_backward], self._out_spec)");
  // grad_output: avg_pool2d(grad, ...) with its default arguments left out; self: zeros.
  EXPECT_EQ(
      joint(R"(g: "f32[1, 2, 2, 2]", x: "f32[1, 2, 4, 4]")",
            "    b = torch.ops.aten.avg_pool2d_backward.default(g, x, [2, 2], [2, 2], [0, 0], "
            "False, True, None)\n"
            "    return (b,)\n",
            {true, true}),
      "b = torch.ops.aten.avg_pool2d_backward.default(primals_1, primals_2, [2, 2], [2, 2], [0, "
      "0], False, True, None)\n"
      "avg_pool2d = torch.ops.aten.avg_pool2d.default(tangents_1, [2, 2], [2, 2])\n"
      "zeros = torch.ops.aten.zeros.default([1, 2, 4, 4], " +
          std::string(kF32Options) +
          ")\n"
          "return pytree.tree_unflatten([b, avg_pool2d, zeros], self._out_spec)");
}

TEST(NnGrad, AdaptiveAvgPool2dAndItsBackward) {
  EXPECT_EQ(joint(R"(x: "f32[1, 2, 4, 4]")",
                  "    a = torch.ops.aten._adaptive_avg_pool2d.default(x, [2, 2])\n"
                  "    return (a,)\n",
                  {true}),
            "a = torch.ops.aten._adaptive_avg_pool2d.default(primals_1, [2, 2])\n"
            "_adaptive_avg_pool2d_backward = "
            "torch.ops.aten._adaptive_avg_pool2d_backward.default(tangents_1, primals_1)\n"
            "return pytree.tree_unflatten([a, _adaptive_avg_pool2d_backward], self._out_spec)");
  EXPECT_EQ(
      joint(R"(g: "f32[2, 2, 3]", x: "f32[2, 8, 8]")",
            "    b = torch.ops.aten._adaptive_avg_pool2d_backward.default(g, x)\n"
            "    return (b,)\n",
            {true, true}),
      "b = torch.ops.aten._adaptive_avg_pool2d_backward.default(primals_1, primals_2)\n"
      "_adaptive_avg_pool2d = torch.ops.aten._adaptive_avg_pool2d.default(tangents_1, [2, 3])\n"
      "zeros = torch.ops.aten.zeros.default([2, 8, 8], " +
          std::string(kF32Options) +
          ")\n"
          "return pytree.tree_unflatten([b, _adaptive_avg_pool2d, zeros], self._out_spec)");
}

// --- composite shape ops ------------------------------------------------------------------------

TEST(NnGrad, ReshapeFlattenContiguous) {
  EXPECT_EQ(joint(R"(x: "f32[4, 6][1, 4]")",
                  "    reshape = torch.ops.aten.reshape.default(x, [2, -1])\n"
                  "    flatten = torch.ops.aten.flatten.using_ints(x)\n"
                  "    contiguous = torch.ops.aten.contiguous.default(x)\n"
                  "    return (reshape, flatten, contiguous)\n",
                  {true}),
            "reshape = torch.ops.aten.reshape.default(primals_1, [2, -1])\n"
            "flatten = torch.ops.aten.flatten.using_ints(primals_1)\n"
            "contiguous = torch.ops.aten.contiguous.default(primals_1)\n"
            "view = torch.ops.aten.view.default(tangents_2, [4, 6])\n"
            "add = torch.ops.aten.add.Tensor(tangents_3, view)\n"
            "view_1 = torch.ops.aten.view.default(tangents_1, [4, 6])\n"
            "add_1 = torch.ops.aten.add.Tensor(add, view_1)\n"
            "return pytree.tree_unflatten([reshape, flatten, contiguous, add_1], self._out_spec)");
  EXPECT_EQ(joint(R"(x: "f32[s0, 6]")",
                  "    flatten = torch.ops.aten.flatten.using_ints(x)\n"
                  "    return (flatten,)\n",
                  {true}),
            "flatten = torch.ops.aten.flatten.using_ints(primals_1)\n"
            "sym_size = torch.ops.aten.sym_size.int(primals_1, 0)\n"
            "view = torch.ops.aten.view.default(tangents_1, [sym_size, 6])\n"
            "return pytree.tree_unflatten([flatten, view], self._out_spec)");
}

}  // namespace
}  // namespace aotgrad
