// Tests for the pointwise family's derivative rules: the joint graph each rule writes, checked
// against the ATen graphs PyTorch's AOTAutograd traces for the derivatives.yaml formulas.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../graph_text.h"
#include "aotgrad/ir/error.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/derivative.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/transforms/autograd.h"
#include "aotgrad/transforms/functionalize.h"

namespace aotgrad {
namespace {

// The joint graph of forward graph `text`, differentiated w.r.t. its floating-point inputs,
// framed by newlines to compare with raw strings.
std::string joint(const std::string& text) {
  return "\n" + joint_body(*joint_graph(text).graph) + "\n";
}

// exp: self: grad * result.conj() -- the saved result is read through detach(detach(...)).
TEST(PointwiseGrad, Exp) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4]"):
    exp = torch.ops.aten.exp.default(x)
    return (exp,)
)"),
            R"(
exp = torch.ops.aten.exp.default(primals_1)
detach = torch.ops.aten.detach.default(exp)
detach_1 = torch.ops.aten.detach.default(detach)
mul = torch.ops.aten.mul.Tensor(tangents_1, detach_1)
return pytree.tree_unflatten([exp, mul], self._out_spec)
)");
}

// erf: self: 2.0 / sqrt(M_PI) * exp(-(self.pow(2))) * grad -- the nested operands right to left.
TEST(PointwiseGrad, Erf) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4]"):
    erf = torch.ops.aten.erf.default(x)
    return (erf,)
)"),
            R"(
erf = torch.ops.aten.erf.default(primals_1)
pow_1 = torch.ops.aten.pow.Tensor_Scalar(primals_1, 2)
neg = torch.ops.aten.neg.default(pow_1)
exp = torch.ops.aten.exp.default(neg)
mul = torch.ops.aten.mul.Scalar(exp, 1.1283791670955126)
mul_1 = torch.ops.aten.mul.Tensor(mul, tangents_1)
return pytree.tree_unflatten([erf, mul_1], self._out_spec)
)");
}

// rsqrt: self: -0.5 * grad * result.pow(3).conj()
TEST(PointwiseGrad, Rsqrt) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4]"):
    rsqrt = torch.ops.aten.rsqrt.default(x)
    return (rsqrt,)
)"),
            R"(
rsqrt = torch.ops.aten.rsqrt.default(primals_1)
detach = torch.ops.aten.detach.default(rsqrt)
detach_1 = torch.ops.aten.detach.default(detach)
pow_1 = torch.ops.aten.pow.Tensor_Scalar(detach_1, 3)
mul = torch.ops.aten.mul.Scalar(tangents_1, -0.5)
mul_1 = torch.ops.aten.mul.Tensor(mul, pow_1)
return pytree.tree_unflatten([rsqrt, mul_1], self._out_spec)
)");
}

// add.Tensor: other: maybe_multiply(grad, alpha) (mul.Scalar), reduced to other's shape by
// autograd's sum_to; self: grad.
TEST(PointwiseGrad, Add) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4]", y: "f32[4]"):
    add = torch.ops.aten.add.Tensor(x, y, alpha = 2)
    return (add,)
)"),
            R"(
add = torch.ops.aten.add.Tensor(primals_1, primals_2, alpha = 2)
mul = torch.ops.aten.mul.Scalar(tangents_1, 2)
sum_1 = torch.ops.aten.sum.dim_IntList(mul, [0], True)
view = torch.ops.aten.view.default(sum_1, [4])
return pytree.tree_unflatten([add, tangents_1, view], self._out_spec)
)");
}

// sub.Tensor with alpha 1: other: -grad (maybe_multiply keeps it); self: grad.
TEST(PointwiseGrad, Sub) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4]", y: "f32[3, 4]"):
    sub = torch.ops.aten.sub.Tensor(x, y)
    return (sub,)
)"),
            R"(
sub = torch.ops.aten.sub.Tensor(primals_1, primals_2)
neg = torch.ops.aten.neg.default(tangents_1)
return pytree.tree_unflatten([sub, tangents_1, neg], self._out_spec)
)");
}

// div.Tensor: other before self (formula keys sorted by name), as PyTorch's DivBackward0 runs:
// other: -grad * ((self / other) / other); self: grad / other.
TEST(PointwiseGrad, Div) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4]", y: "f32[3, 4]"):
    div = torch.ops.aten.div.Tensor(x, y)
    return (div,)
)"),
            R"(
div = torch.ops.aten.div.Tensor(primals_1, primals_2)
div_1 = torch.ops.aten.div.Tensor(primals_1, primals_2)
div_2 = torch.ops.aten.div.Tensor(div_1, primals_2)
neg = torch.ops.aten.neg.default(tangents_1)
mul = torch.ops.aten.mul.Tensor(neg, div_2)
div_3 = torch.ops.aten.div.Tensor(tangents_1, primals_2)
return pytree.tree_unflatten([div, div_3, mul], self._out_spec)
)");
}

// div.Tensor_mode with a rounding mode: zeros in each input's dtype.
TEST(PointwiseGrad, DivFloor) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4]", y: "f64[3, 4]"):
    div = torch.ops.aten.div.Tensor_mode(x, y, rounding_mode = 'floor')
    return (div,)
)"),
            R"(
div = torch.ops.aten.div.Tensor_mode(primals_1, primals_2, rounding_mode = 'floor')
zeros_like = torch.ops.aten.zeros_like.default(tangents_1, dtype = torch.float64, layout = torch.strided, device = device(type='cpu'))
zeros_like_1 = torch.ops.aten.zeros_like.default(tangents_1, dtype = torch.float32, layout = torch.strided, device = device(type='cpu'))
return pytree.tree_unflatten([div, zeros_like_1, zeros_like], self._out_spec)
)");
}

// pow.Tensor_Scalar: grad * (exponent * self.pow(exponent - 1)), the exponent as a double.
TEST(PointwiseGrad, PowScalar) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4]"):
    pow_1 = torch.ops.aten.pow.Tensor_Scalar(x, 3)
    return (pow_1,)
)"),
            R"(
pow_1 = torch.ops.aten.pow.Tensor_Scalar(primals_1, 3)
pow_2 = torch.ops.aten.pow.Tensor_Scalar(primals_1, 2.0)
mul = torch.ops.aten.mul.Scalar(pow_2, 3.0)
mul_1 = torch.ops.aten.mul.Tensor(tangents_1, mul)
return pytree.tree_unflatten([pow_1, mul_1], self._out_spec)
)");
}

// pow.Tensor_Scalar with exponent 0: zeros_like(self, LEGACY_CONTIGUOUS_MEMORY_FORMAT).
TEST(PointwiseGrad, PowZero) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4]"):
    pow_1 = torch.ops.aten.pow.Tensor_Scalar(x, 0)
    return (pow_1,)
)"),
            R"(
pow_1 = torch.ops.aten.pow.Tensor_Scalar(primals_1, 0)
zeros_like = torch.ops.aten.zeros_like.default(primals_1, memory_format = torch.contiguous_format)
return pytree.tree_unflatten([pow_1, zeros_like], self._out_spec)
)");
}

// pow.Tensor_Tensor: exponent (pow_backward_exponent, with the saved result) before self
// (pow_backward_self); where's and logical_and's arguments are evaluated right to left.
TEST(PointwiseGrad, PowTensor) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4]", y: "f32[3, 4]"):
    pow_1 = torch.ops.aten.pow.Tensor_Tensor(x, y)
    return (pow_1,)
)"),
            R"(
pow_1 = torch.ops.aten.pow.Tensor_Tensor(primals_1, primals_2)
detach = torch.ops.aten.detach.default(pow_1)
detach_1 = torch.ops.aten.detach.default(detach)
ge = torch.ops.aten.ge.Scalar(primals_2, 0)
eq = torch.ops.aten.eq.Scalar(primals_1, 0)
logical_and = torch.ops.aten.logical_and.default(eq, ge)
log = torch.ops.aten.log.default(primals_1)
mul = torch.ops.aten.mul.Tensor(detach_1, log)
scalar_tensor = torch.ops.aten.scalar_tensor.default(0.0, dtype = torch.float32, layout = torch.strided, device = device(type='cpu'))
where = torch.ops.aten.where.self(logical_and, scalar_tensor, mul)
mul_1 = torch.ops.aten.mul.Tensor(tangents_1, where)
sub = torch.ops.aten.sub.Scalar(primals_2, 1)
pow_2 = torch.ops.aten.pow.Tensor_Tensor(primals_1, sub)
mul_2 = torch.ops.aten.mul.Tensor(primals_2, pow_2)
mul_3 = torch.ops.aten.mul.Tensor(tangents_1, mul_2)
scalar_tensor_1 = torch.ops.aten.scalar_tensor.default(0.0, dtype = torch.float32, layout = torch.strided, device = device(type='cpu'))
eq_1 = torch.ops.aten.eq.Scalar(primals_2, 0.0)
where_1 = torch.ops.aten.where.self(eq_1, scalar_tensor_1, mul_3)
return pytree.tree_unflatten([pow_1, where_1, mul_1], self._out_spec)
)");
}

// maximum: ties split the gradient; other: ...masked_fill_(self > other, 0) first, then self.
TEST(PointwiseGrad, Maximum) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4]", y: "f32[3, 4]"):
    maximum = torch.ops.aten.maximum.default(x, y)
    return (maximum,)
)"),
            R"(
maximum = torch.ops.aten.maximum.default(primals_1, primals_2)
div = torch.ops.aten.div.Scalar(tangents_1, 2)
eq = torch.ops.aten.eq.Tensor(primals_1, primals_2)
where = torch.ops.aten.where.self(eq, div, tangents_1)
gt = torch.ops.aten.gt.Tensor(primals_1, primals_2)
masked_fill = torch.ops.aten.masked_fill.Scalar(where, gt, 0)
div_1 = torch.ops.aten.div.Scalar(tangents_1, 2)
eq_1 = torch.ops.aten.eq.Tensor(primals_1, primals_2)
where_1 = torch.ops.aten.where.self(eq_1, div_1, tangents_1)
lt = torch.ops.aten.lt.Tensor(primals_1, primals_2)
masked_fill_1 = torch.ops.aten.masked_fill.Scalar(where_1, lt, 0)
return pytree.tree_unflatten([maximum, masked_fill_1, masked_fill], self._out_spec)
)");
}

// clamp: where((self >= min).logical_and_(self <= max), grad, scalar_tensor(0.)).
TEST(PointwiseGrad, Clamp) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4]"):
    clamp = torch.ops.aten.clamp.default(x, -0.5, 0.5)
    return (clamp,)
)"),
            R"(
clamp = torch.ops.aten.clamp.default(primals_1, -0.5, 0.5)
scalar_tensor = torch.ops.aten.scalar_tensor.default(0.0, dtype = torch.float32, layout = torch.strided, device = device(type='cpu'))
ge = torch.ops.aten.ge.Scalar(primals_1, -0.5)
le = torch.ops.aten.le.Scalar(primals_1, 0.5)
logical_and = torch.ops.aten.logical_and.default(ge, le)
where = torch.ops.aten.where.self(logical_and, tangents_1, scalar_tensor)
return pytree.tree_unflatten([clamp, where], self._out_spec)
)");
}

// clamp with only a max.
TEST(PointwiseGrad, ClampMax) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4]"):
    clamp = torch.ops.aten.clamp.default(x, None, 0.5)
    return (clamp,)
)"),
            R"(
clamp = torch.ops.aten.clamp.default(primals_1, None, 0.5)
scalar_tensor = torch.ops.aten.scalar_tensor.default(0.0, dtype = torch.float32, layout = torch.strided, device = device(type='cpu'))
le = torch.ops.aten.le.Scalar(primals_1, 0.5)
where = torch.ops.aten.where.self(le, tangents_1, scalar_tensor)
return pytree.tree_unflatten([clamp, where], self._out_spec)
)");
}

// masked_fill.Tensor: self: grad.masked_fill(mask, 0); value: where(mask, grad, 0).sum()
// (masked_fill_backward for traced tensors); the mask gets no gradient.
TEST(PointwiseGrad, MaskedFill) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4]", m: "b8[3, 4]", v: "f32[]"):
    masked_fill = torch.ops.aten.masked_fill.Tensor(x, m, v)
    return (masked_fill,)
)"),
            R"(
masked_fill = torch.ops.aten.masked_fill.Tensor(primals_1, primals_2, primals_3)
masked_fill_1 = torch.ops.aten.masked_fill.Scalar(tangents_1, primals_2, 0)
scalar_tensor = torch.ops.aten.scalar_tensor.default(0, dtype = torch.float32, layout = torch.strided, device = device(type='cpu'))
where = torch.ops.aten.where.self(primals_2, tangents_1, scalar_tensor)
sum_1 = torch.ops.aten.sum.default(where)
return pytree.tree_unflatten([masked_fill, masked_fill_1, None, sum_1], self._out_spec)
)");
}

// lerp.Scalar: end: grad * weight; self: grad * (1 - weight).
TEST(PointwiseGrad, Lerp) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4]", y: "f32[3, 4]"):
    lerp = torch.ops.aten.lerp.Scalar(x, y, 0.25)
    return (lerp,)
)"),
            R"(
lerp = torch.ops.aten.lerp.Scalar(primals_1, primals_2, 0.25)
mul = torch.ops.aten.mul.Scalar(tangents_1, 0.25)
mul_1 = torch.ops.aten.mul.Scalar(tangents_1, 0.75)
return pytree.tree_unflatten([lerp, mul_1, mul], self._out_spec)
)");
}

// addcmul: self: grad; tensor1: grad * (tensor2 * value); tensor2: grad * (tensor1 * value).
TEST(PointwiseGrad, Addcmul) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4]", y: "f32[3, 4]", z: "f32[3, 4]"):
    addcmul = torch.ops.aten.addcmul.default(x, y, z, value = 0.5)
    return (addcmul,)
)"),
            R"(
addcmul = torch.ops.aten.addcmul.default(primals_1, primals_2, primals_3, value = 0.5)
mul = torch.ops.aten.mul.Scalar(primals_3, 0.5)
mul_1 = torch.ops.aten.mul.Tensor(tangents_1, mul)
mul_2 = torch.ops.aten.mul.Scalar(primals_2, 0.5)
mul_3 = torch.ops.aten.mul.Tensor(tangents_1, mul_2)
return pytree.tree_unflatten([addcmul, tangents_1, mul_1, mul_3], self._out_spec)
)");
}

// gelu_backward's own derivative (double backward): grad_output: gelu_backward(grad, self);
// self: gelu_double_backward = grad * grad_output * (2 * pdf - x^2 * pdf).
TEST(PointwiseGrad, GeluBackward) {
  EXPECT_EQ(joint(R"(
def forward(self, g: "f32[3, 4]", x: "f32[3, 4]"):
    gelu_backward = torch.ops.aten.gelu_backward.default(g, x)
    return (gelu_backward,)
)"),
            R"(
gelu_backward = torch.ops.aten.gelu_backward.default(primals_1, primals_2)
gelu_backward_1 = torch.ops.aten.gelu_backward.default(tangents_1, primals_2)
mul = torch.ops.aten.mul.Tensor(primals_2, primals_2)
mul_1 = torch.ops.aten.mul.Scalar(mul, -0.5)
exp = torch.ops.aten.exp.default(mul_1)
mul_2 = torch.ops.aten.mul.Scalar(exp, 0.3989422804014327)
mul_3 = torch.ops.aten.mul.Tensor(mul, mul_2)
mul_4 = torch.ops.aten.mul.Scalar(mul_2, 2)
sub = torch.ops.aten.sub.Tensor(mul_4, mul_3)
mul_5 = torch.ops.aten.mul.Tensor(tangents_1, primals_1)
mul_6 = torch.ops.aten.mul.Tensor(mul_5, sub)
return pytree.tree_unflatten([gelu_backward, gelu_backward_1, mul_6], self._out_spec)
)");
}

// sigmoid_backward: grad_output: sigmoid_backward(grad, output);
// output: grad * grad_output * (-2 * output + 1).
TEST(PointwiseGrad, SigmoidBackward) {
  EXPECT_EQ(joint(R"(
def forward(self, g: "f32[3, 4]", y: "f32[3, 4]"):
    sigmoid_backward = torch.ops.aten.sigmoid_backward.default(g, y)
    return (sigmoid_backward,)
)"),
            R"(
sigmoid_backward = torch.ops.aten.sigmoid_backward.default(primals_1, primals_2)
sigmoid_backward_1 = torch.ops.aten.sigmoid_backward.default(tangents_1, primals_2)
mul = torch.ops.aten.mul.Scalar(primals_2, -2)
add = torch.ops.aten.add.Scalar(mul, 1)
mul_1 = torch.ops.aten.mul.Tensor(tangents_1, primals_1)
mul_2 = torch.ops.aten.mul.Tensor(mul_1, add)
return pytree.tree_unflatten([sigmoid_backward, sigmoid_backward_1, mul_2], self._out_spec)
)");
}

// threshold_backward: grad_output: threshold_backward(grad, self, threshold);
// self: zeros_like(grad).
TEST(PointwiseGrad, ThresholdBackward) {
  EXPECT_EQ(joint(R"(
def forward(self, g: "f32[3, 4]", x: "f32[3, 4]"):
    threshold_backward = torch.ops.aten.threshold_backward.default(g, x, 0.5)
    return (threshold_backward,)
)"),
            R"(
threshold_backward = torch.ops.aten.threshold_backward.default(primals_1, primals_2, 0.5)
threshold_backward_1 = torch.ops.aten.threshold_backward.default(tangents_1, primals_2, 0.5)
zeros_like = torch.ops.aten.zeros_like.default(tangents_1)
return pytree.tree_unflatten([threshold_backward, threshold_backward_1, zeros_like], self._out_spec)
)");
}

// hardtanh: self: hardtanh_backward(grad, self, min_val, max_val); hardtanh_ (derivatives.yaml's
// own entry): hardtanh_backward(grad, result, min_val, max_val). A functionalized hardtanh_ (as
// torchvision's ReLU6(inplace=True) exports) is differentiated by the in-place rule, as PyTorch's
// autograd, above functionalization, sees the in-place call: the backward reads the result.
TEST(PointwiseGrad, HardtanhInPlaceReadsTheResult) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4]"):
    hardtanh = torch.ops.aten.hardtanh.default(x, 0.0, 6.0)
    return (hardtanh,)
)"),
            R"(
hardtanh = torch.ops.aten.hardtanh.default(primals_1, 0.0, 6.0)
hardtanh_backward = torch.ops.aten.hardtanh_backward.default(tangents_1, primals_1, 0.0, 6.0)
return pytree.tree_unflatten([hardtanh, hardtanh_backward], self._out_spec)
)");
  FunctionalizeResult f = functionalize(*parse_text(R"(
def forward(self, x: "f32[3, 4]"):
    mul = torch.ops.aten.mul.Tensor(x, 2)
    hardtanh_ = torch.ops.aten.hardtanh_.default(mul, 0.0, 6.0)
    return (hardtanh_,)
)"));
  EXPECT_EQ("\n" + joint_body(*build_joint(*f.graph, {true}).graph) + "\n", R"(
mul = torch.ops.aten.mul.Tensor(primals_1, 2)
hardtanh = torch.ops.aten.hardtanh.default(mul, 0.0, 6.0)
detach = torch.ops.aten.detach.default(hardtanh)
detach_1 = torch.ops.aten.detach.default(detach)
hardtanh_backward = torch.ops.aten.hardtanh_backward.default(tangents_1, detach_1, 0.0, 6.0)
mul_1 = torch.ops.aten.mul.Tensor(hardtanh_backward, 2)
return pytree.tree_unflatten([hardtanh, mul_1], self._out_spec)
)");
}

// A Python number in a Tensor slot stays a number in the gradient.
TEST(PointwiseGrad, MulNumber) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4]"):
    mul = torch.ops.aten.mul.Tensor(x, 2)
    return (mul,)
)"),
            R"(
mul = torch.ops.aten.mul.Tensor(primals_1, 2)
mul_1 = torch.ops.aten.mul.Tensor(tangents_1, 2)
return pytree.tree_unflatten([mul, mul_1], self._out_spec)
)");
}

// mul.Tensor: other (grad * self) before self (grad * other); autograd casts self's f64
// gradient to f32 and sums other's over the broadcast dim.
TEST(PointwiseGrad, MulMixedDtypes) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4]", y: "f64[4]"):
    mul = torch.ops.aten.mul.Tensor(x, y)
    return (mul,)
)"),
            R"(
mul = torch.ops.aten.mul.Tensor(primals_1, primals_2)
mul_1 = torch.ops.aten.mul.Tensor(tangents_1, primals_1)
mul_2 = torch.ops.aten.mul.Tensor(tangents_1, primals_2)
_to_copy = torch.ops.aten._to_copy.default(mul_2, dtype = torch.float32)
sum_1 = torch.ops.aten.sum.dim_IntList(mul_1, [0], True)
view = torch.ops.aten.view.default(sum_1, [4])
return pytree.tree_unflatten([mul, _to_copy, view], self._out_spec)
)");
}

// Comparisons are non-differentiable; where.self: other: where(condition, 0, grad) first, then
// self: where(condition, grad, 0), the 0 a scalar_tensor of grad's dtype (where.ScalarOther).
TEST(PointwiseGrad, ComparisonsAndWhere) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4]", y: "f32[4]"):
    gt = torch.ops.aten.gt.Scalar(x, 0)
    where = torch.ops.aten.where.self(gt, x, y)
    return (where,)
)"),
            R"(
gt = torch.ops.aten.gt.Scalar(primals_1, 0)
where = torch.ops.aten.where.self(gt, primals_1, primals_2)
scalar_tensor = torch.ops.aten.scalar_tensor.default(0, dtype = torch.float32, layout = torch.strided, device = device(type='cpu'))
where_1 = torch.ops.aten.where.self(gt, scalar_tensor, tangents_1)
scalar_tensor_1 = torch.ops.aten.scalar_tensor.default(0, dtype = torch.float32, layout = torch.strided, device = device(type='cpu'))
where_2 = torch.ops.aten.where.self(gt, tangents_1, scalar_tensor_1)
sum_1 = torch.ops.aten.sum.dim_IntList(where_1, [0], True)
view = torch.ops.aten.view.default(sum_1, [4])
return pytree.tree_unflatten([where, where_2, view], self._out_spec)
)");
}

// abs's backward reads sgn(self); sgn's own gradient is zeros (PyTorch: a ZeroTensor).
TEST(PointwiseGrad, AbsTwiceDifferentiated) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3]", g: "f32[3]"):
    sgn = torch.ops.aten.sgn.default(x)
    mul = torch.ops.aten.mul.Tensor(g, sgn)
    return (mul,)
)"),
            R"(
sgn = torch.ops.aten.sgn.default(primals_1)
mul = torch.ops.aten.mul.Tensor(primals_2, sgn)
mul_1 = torch.ops.aten.mul.Tensor(tangents_1, primals_2)
mul_2 = torch.ops.aten.mul.Tensor(tangents_1, sgn)
zeros = torch.ops.aten.zeros.default([3], dtype = torch.float32, layout = torch.strided, device = device(type='cpu'))
return pytree.tree_unflatten([mul, zeros, mul_2], self._out_spec)
)");
}

// PyTorch has no derivative for silu_backward (silu's rule switches to a differentiable formula
// when grad mode is on): differentiating it is an error that names the op.
TEST(PointwiseGrad, SiluBackwardIsNotDifferentiable) {
  try {
    joint(R"(
def forward(self, g: "f32[3]", x: "f32[3]"):
    silu_backward = torch.ops.aten.silu_backward.default(g, x)
    return (silu_backward,)
)");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("derivative for aten::silu_backward is not implemented"),
              std::string::npos)
        << e.message();
    EXPECT_NE(e.message().find("silu_backward"), std::string::npos) << e.message();
  }
}

// Every functional op of the family has a rule or is marked non-differentiable; in-place ops are
// left to functionalization.
TEST(PointwiseGrad, EveryFunctionalOpHasARuleOrIsMarked) {
  const char* rules[] = {"abs",
                         "sgn",
                         "neg",
                         "sign",
                         "relu",
                         "exp",
                         "log",
                         "log1p",
                         "expm1",
                         "sqrt",
                         "rsqrt",
                         "reciprocal",
                         "sin",
                         "cos",
                         "sinh",
                         "cosh",
                         "tanh",
                         "sigmoid",
                         "erf",
                         "silu",
                         "gelu",
                         "add.Tensor",
                         "add.Scalar",
                         "sub.Tensor",
                         "sub.Scalar",
                         "rsub.Scalar",
                         "mul.Tensor",
                         "mul.Scalar",
                         "div.Tensor",
                         "div.Scalar",
                         "div.Tensor_mode",
                         "pow.Tensor_Scalar",
                         "pow.Tensor_Tensor",
                         "maximum",
                         "minimum",
                         "clamp",
                         "clamp_min",
                         "where.self",
                         "masked_fill.Scalar",
                         "masked_fill.Tensor",
                         "fill.Scalar",
                         "fill.Tensor",
                         "lerp.Scalar",
                         "addcmul",
                         "threshold_backward",
                         "gelu_backward",
                         "sigmoid_backward",
                         "tanh_backward",
                         "silu_backward"};
  for (const char* name : rules) {
    const OpDef& op = aten_ops().get(name);
    EXPECT_TRUE(op.derivative && !op.derivative->formula.empty()) << name;
    EXPECT_FALSE(op.non_differentiable) << name;
  }
  const char* marked[] = {"logical_not", "bitwise_not", "bitwise_and.Tensor", "logical_and",
                          "eq.Tensor",   "ne.Scalar",   "lt.Tensor",          "le.Scalar",
                          "gt.Tensor",   "ge.Scalar"};
  for (const char* name : marked) {
    const OpDef& op = aten_ops().get(name);
    EXPECT_TRUE(op.non_differentiable) << name;
    EXPECT_FALSE(op.derivative) << name;
  }
}

}  // namespace
}  // namespace aotgrad
