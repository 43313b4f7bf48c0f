// aotgrad: the derivative formula interpreter -- syntax errors, names every formula must resolve,
// and the graph a formula builds: overloads by schema type, Scalar-first operators, numbers
// folded, operands right to left, braced lists left to right, saved results read once and only
// when used, undefined gradients, helpers written as formulas.
#include "aotgrad/ops/formula.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ops/derivative.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

using testing::HasSubstr;

// Applies `text` as the derivative of the call `y = <call>` (its tensor inputs need a gradient, the
// incoming gradients are placeholders g0, g1, ...) and returns the calls it appends and the
// gradients it sets, as text.
std::string apply(const std::string& params, const std::string& call, const std::string& text,
                  size_t num_grads = 1) {
  std::string ps = params;
  for (size_t i = 0; i < num_grads; ++i) ps += ", g" + std::to_string(i) + ": \"f32[2, 3]\"";
  auto g = parse_graph("def forward(self, " + ps + "):\n    y = " + call + "\n    return y\n",
                       aten_ops());
  Node* y = g->find("y");
  std::vector<Node*> grads;
  for (size_t i = 0; i < num_grads; ++i) grads.push_back(g->find("g" + std::to_string(i)));
  std::vector<bool> needs;  // the tensor values, as the autograd transform marks them
  for (const Arg& a : y->args()) needs.push_back(a.is_node() && a.node->meta().is_tensor());
  GradBuilder b(*g, *y, grads, needs);
  try {
    formula(text)->apply(b);
  } catch (const Error& e) {
    return "error: " + e.message();
  }
  std::vector<Arg> set;
  for (Node* n : b.input_grads()) set.push_back(Arg(n));
  g->set_output(Arg::of_tuple(std::move(set)));
  PrintOptions p;
  p.class_header = false;
  p.annotations = false;
  p.release_statements = false;
  std::string out = print_graph(*g, p);
  return out.substr(out.find("    y = "));
}

const char* kXY = R"(x: "f32[2, 3]", z: "f32[2, 3]")";

TEST(Formula, SyntaxErrorsNameTheOffset) {
  EXPECT_THAT(apply(kXY, "torch.ops.aten.mul.Tensor(x, z)", "self grad"),
              HasSubstr("at offset 5: expected ':'"));
  EXPECT_THAT(apply(kXY, "torch.ops.aten.mul.Tensor(x, z)", "self: grad *"),
              HasSubstr("expected an expression, found the end"));
  EXPECT_THAT(apply(kXY, "torch.ops.aten.mul.Tensor(x, z)", "self: (grad"),
              HasSubstr("expected ')'"));
}

TEST(Formula, UnknownNamesAreReported) {
  const OpDef& mul = aten_ops().get("aten::mul.Tensor");
  auto r = formula("self: grad * nosuch; other: nosuch_helper(grad); weight: grad");
  std::vector<std::string> names = unresolved_names(*r, mul);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"nosuch (unknown name)",
                                             "nosuch_helper (no helper or aten op)",
                                             "weight (a key that is no argument)"}));
  EXPECT_TRUE(unresolved_names(*formula("self: grad * other; other: grad.neg()"), mul).empty());
}

// Entries by key name (other before self); Tensor * Tensor is mul.Tensor whatever the call
// passed, Tensor * Scalar mul.Scalar with the tensor first.
TEST(Formula, OverloadsFollowSchemaTypes) {
  EXPECT_EQ(
      apply(kXY, "torch.ops.aten.mul.Tensor(x, z)", "self: grad * other; other: 2 * grad * self"),
      "    y = torch.ops.aten.mul.Tensor(x, z)\n"
      "    mul = torch.ops.aten.mul.Scalar(g0, 2)\n"
      "    mul_1 = torch.ops.aten.mul.Tensor(mul, x)\n"
      "    mul_2 = torch.ops.aten.mul.Tensor(g0, z)\n"
      "    return (mul_2, mul_1)\n");
  // A Python number given for a Tensor argument stays a Tensor operand.
  EXPECT_EQ(apply(R"(x: "f32[2, 3]")", "torch.ops.aten.mul.Tensor(x, 3)", "self: grad * other"),
            "    y = torch.ops.aten.mul.Tensor(x, 3)\n"
            "    mul = torch.ops.aten.mul.Tensor(g0, 3)\n"
            "    return (mul, None)\n");
}

// Numbers fold; Scalar - Tensor is empty_like(t).fill_(s).sub_(t); operands right to left.
TEST(Formula, NumbersFoldAndScalarFirstOperators) {
  EXPECT_EQ(apply(R"(x: "f32[2, 3]")", "torch.ops.aten.exp.default(x)",
                  "self: (1 - 0.25 * 2) - grad * self.cos()"),
            "    y = torch.ops.aten.exp.default(x)\n"
            "    cos = torch.ops.aten.cos.default(x)\n"
            "    mul = torch.ops.aten.mul.Tensor(g0, cos)\n"
            "    empty_like = torch.ops.aten.empty_like.default(mul, memory_format = "
            "torch.preserve_format)\n"
            "    fill = torch.ops.aten.fill.Scalar(empty_like, 0.5)\n"
            "    sub = torch.ops.aten.sub.Tensor(fill, mul)\n"
            "    return (sub,)\n");
}

// result is read through detach(detach(...)) once, where the formula reads it, and not at all
// when only its metadata is used.
TEST(Formula, SavedResultsAreReadOnceWhenUsed) {
  EXPECT_EQ(
      apply(R"(x: "f32[2, 3]")", "torch.ops.aten.exp.default(x)", "self: grad * result * result"),
      "    y = torch.ops.aten.exp.default(x)\n"
      "    detach = torch.ops.aten.detach.default(y)\n"
      "    detach_1 = torch.ops.aten.detach.default(detach)\n"
      "    mul = torch.ops.aten.mul.Tensor(g0, detach_1)\n"
      "    mul_1 = torch.ops.aten.mul.Tensor(mul, detach_1)\n"
      "    return (mul_1,)\n");
  EXPECT_EQ(apply(R"(x: "f32[2, 3]")", "torch.ops.aten.exp.default(x)",
                  "self: at::zeros_symint(result.sym_sizes(), result.options())"),
            "    y = torch.ops.aten.exp.default(x)\n"
            "    zeros = torch.ops.aten.zeros.default([2, 3], dtype = torch.float32, layout = "
            "torch.strided, device = device(type='cpu'))\n"
            "    return (zeros,)\n");
}

// A braced list is built left to right; ?: evaluates one branch and takes C++'s type.
TEST(Formula, BracesTernaryAndLogic) {
  EXPECT_EQ(apply(R"(x: "f32[2, 3]")", "torch.ops.aten.exp.default(x)",
                  "self: grad.view({grad.size(-1), grad.size(0)})"),
            "    y = torch.ops.aten.exp.default(x)\n"
            "    view = torch.ops.aten.view.default(g0, [3, 2])\n"
            "    return (view,)\n");
  EXPECT_EQ(apply(R"(x: "f32[2, 3]")", "torch.ops.aten.native_dropout.default(x, 0.5, True)",
                  "input: native_dropout_backward(grad, result1, (!train.has_value() || "
                  "!train.value() ? 1 : (p == 1 ? 0.0 : 1.0 / (1.0 - p))))"),
            "    y = torch.ops.aten.native_dropout.default(x, 0.5, True)\n"
            "    getitem = y[1]\n"
            "    native_dropout_backward = torch.ops.aten.native_dropout_backward.default(g0, "
            "getitem, 2.0)\n"
            "    return (native_dropout_backward, None, None)\n");
  EXPECT_EQ(apply(R"(x: "f32[2, 3]")", "torch.ops.aten.native_dropout.default(x, 0.5, False)",
                  "input: native_dropout_backward(grad, result1, (!train.has_value() || "
                  "!train.value() ? 1 : (p == 1 ? 0.0 : 1.0 / (1.0 - p))))"),
            "    y = torch.ops.aten.native_dropout.default(x, 0.5, False)\n"
            "    getitem = y[1]\n"
            "    native_dropout_backward = torch.ops.aten.native_dropout_backward.default(g0, "
            "getitem, 1.0)\n"
            "    return (native_dropout_backward, None, None)\n");
}

// An op given an undefined gradient gives none; a tensor input without a formula cannot require
// grad.
TEST(Formula, UndefinedGradientsAndInputsWithoutFormulas) {
  EXPECT_EQ(apply(kXY, "torch.ops.aten.mul.Tensor(x, z)", "self: grads[1] * other; other: grad", 1),
            "error: derivative formula 'self: grads[1] * other; other: grad' (at offset 12): "
            "index out of range");
  EXPECT_THAT(apply(kXY, "torch.ops.aten.mul.Tensor(x, z)", "self: grad"),
              HasSubstr("The function 'mul' is not differentiable with respect to argument "
                        "'other'. This input cannot have requires_grad True."));
  EXPECT_THAT(apply(kXY, "torch.ops.aten.mul.Tensor(x, z)",
                    "self: not_implemented(\"mul self\"); other: grad"),
              HasSubstr("the derivative for 'mul self' is not implemented."));
}

// A helper written as a formula binds its parameters to the evaluated arguments.
TEST(Formula, HelpersWrittenAsFormulas) {
  add_grad_helper("formula_test_scaled(t, s)", "t * s * s");
  EXPECT_EQ(apply(R"(x: "f32[2, 3]")", "torch.ops.aten.exp.default(x)",
                  "self: formula_test_scaled(grad.neg(), 3)"),
            "    y = torch.ops.aten.exp.default(x)\n"
            "    neg = torch.ops.aten.neg.default(g0)\n"
            "    mul = torch.ops.aten.mul.Scalar(neg, 3)\n"
            "    mul_1 = torch.ops.aten.mul.Scalar(mul, 3)\n"
            "    return (mul_1,)\n");
  add_grad_helper("formula_test_scaled(t, s)", "t * s * s");  // the same again: no error
  EXPECT_THROW(add_grad_helper("formula_test_scaled(t, s)", "t * s"), Error);
}

}  // namespace
}  // namespace aotgrad
