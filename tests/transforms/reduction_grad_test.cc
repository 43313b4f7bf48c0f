// Tests for the reduction family's derivative rules: the joint graph each rule writes, checked
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

namespace aotgrad {
namespace {

// The joint graph of forward graph `text`, differentiated w.r.t. its floating-point inputs,
// framed by newlines to compare with raw strings.
std::string joint(const std::string& text) {
  return "\n" + joint_body(*joint_graph(text).graph) + "\n";
}

// sum: self: grad.expand_symint(self.sym_sizes())
TEST(ReductionGrad, Sum) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4]"):
    sum_1 = torch.ops.aten.sum.default(x)
    return (sum_1,)
)"),
            R"(
sum_1 = torch.ops.aten.sum.default(primals_1)
expand = torch.ops.aten.expand.default(tangents_1, [3, 4])
return pytree.tree_unflatten([sum_1, expand], self._out_spec)
)");
}

// sum with a dtype: the same expand; autograd casts the gradient back to self's dtype.
TEST(ReductionGrad, SumDtype) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4]"):
    sum_1 = torch.ops.aten.sum.default(x, dtype = torch.float64)
    return (sum_1,)
)"),
            R"(
sum_1 = torch.ops.aten.sum.default(primals_1, dtype = torch.float64)
expand = torch.ops.aten.expand.default(tangents_1, [3, 4])
_to_copy = torch.ops.aten._to_copy.default(expand, dtype = torch.float32)
return pytree.tree_unflatten([sum_1, _to_copy], self._out_spec)
)");
}

// sum.dim_IntList: sum_backward unsqueezes grad at the reduced dims (several: wrapped, ascending)
// and expands it back.
TEST(ReductionGrad, SumDims) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4, 5]"):
    sum_1 = torch.ops.aten.sum.dim_IntList(x, [0, -1])
    return (sum_1,)
)"),
            R"(
sum_1 = torch.ops.aten.sum.dim_IntList(primals_1, [0, -1])
unsqueeze = torch.ops.aten.unsqueeze.default(tangents_1, 0)
unsqueeze_1 = torch.ops.aten.unsqueeze.default(unsqueeze, 2)
expand = torch.ops.aten.expand.default(unsqueeze_1, [3, 4, 5])
return pytree.tree_unflatten([sum_1, expand], self._out_spec)
)");
}

// With keepdim the gradient is only expanded.
TEST(ReductionGrad, SumKeepdim) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4, 5]"):
    sum_1 = torch.ops.aten.sum.dim_IntList(x, [1], True)
    return (sum_1,)
)"),
            R"(
sum_1 = torch.ops.aten.sum.dim_IntList(primals_1, [1], True)
expand = torch.ops.aten.expand.default(tangents_1, [3, 4, 5])
return pytree.tree_unflatten([sum_1, expand], self._out_spec)
)");
}

// mean: self: grad.expand(self.sizes()) / self.numel()
TEST(ReductionGrad, Mean) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4]"):
    mean = torch.ops.aten.mean.default(x)
    return (mean,)
)"),
            R"(
mean = torch.ops.aten.mean.default(primals_1)
expand = torch.ops.aten.expand.default(tangents_1, [3, 4])
div = torch.ops.aten.div.Scalar(expand, 12)
return pytree.tree_unflatten([mean, div], self._out_spec)
)");
}

// mean.dim: mean_backward = sum_backward(...) / _safe_size(sizes, dim); one dim is unsqueezed as
// given (negative).
TEST(ReductionGrad, MeanDim) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4, 5]"):
    mean = torch.ops.aten.mean.dim(x, [-2])
    return (mean,)
)"),
            R"(
mean = torch.ops.aten.mean.dim(primals_1, [-2])
unsqueeze = torch.ops.aten.unsqueeze.default(tangents_1, -2)
expand = torch.ops.aten.expand.default(unsqueeze, [3, 4, 5])
div = torch.ops.aten.div.Scalar(expand, 4)
return pytree.tree_unflatten([mean, div], self._out_spec)
)");
}

// A symbolic size: expand reads it with sym_size, and the count is a sym_size node.
TEST(ReductionGrad, MeanSymbolic) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[s0, 4]"):
    mean = torch.ops.aten.mean.dim(x, [0])
    return (mean,)
)"),
            R"(
mean = torch.ops.aten.mean.dim(primals_1, [0])
unsqueeze = torch.ops.aten.unsqueeze.default(tangents_1, 0)
sym_size = torch.ops.aten.sym_size.int(primals_1, 0)
expand = torch.ops.aten.expand.default(unsqueeze, [sym_size, 4])
sym_size_1 = torch.ops.aten.sym_size.int(primals_1, 0)
div = torch.ops.aten.div.Scalar(expand, sym_size_1)
return pytree.tree_unflatten([mean, div], self._out_spec)
)");
}

// amax: scale_grad_by_count(restore_reduced_dims(grad), restore_reduced_dims(result) == self, dim):
// the result (saved, detached twice) and grad are viewed with the reduced dims put back.
TEST(ReductionGrad, Amax) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4, 5]"):
    amax = torch.ops.aten.amax.default(x, [1])
    return (amax,)
)"),
            R"(
amax = torch.ops.aten.amax.default(primals_1, [1])
detach = torch.ops.aten.detach.default(amax)
detach_1 = torch.ops.aten.detach.default(detach)
view = torch.ops.aten.view.default(detach_1, [3, 1, 5])
eq = torch.ops.aten.eq.Tensor(view, primals_1)
view_1 = torch.ops.aten.view.default(tangents_1, [3, 1, 5])
sum_1 = torch.ops.aten.sum.dim_IntList(eq, [1], True)
div = torch.ops.aten.div.Tensor(view_1, sum_1)
mul = torch.ops.aten.mul.Tensor(div, eq)
return pytree.tree_unflatten([amax, mul], self._out_spec)
)");
}

// amin with keepdim: nothing to restore.
TEST(ReductionGrad, AminKeepdim) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4, 5]"):
    amin = torch.ops.aten.amin.default(x, [0, 2], True)
    return (amin,)
)"),
            R"(
amin = torch.ops.aten.amin.default(primals_1, [0, 2], True)
detach = torch.ops.aten.detach.default(amin)
detach_1 = torch.ops.aten.detach.default(detach)
eq = torch.ops.aten.eq.Tensor(detach_1, primals_1)
sum_1 = torch.ops.aten.sum.dim_IntList(eq, [0, 2], True)
div = torch.ops.aten.div.Tensor(tangents_1, sum_1)
mul = torch.ops.aten.mul.Tensor(div, eq)
return pytree.tree_unflatten([amin, mul], self._out_spec)
)");
}

// max.dim: value_selecting_reduction_backward with the forward's indices (an integer output, read
// without detach).
TEST(ReductionGrad, MaxDim) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4, 5]"):
    max_1 = torch.ops.aten.max.dim(x, 1)
    getitem = max_1[0]
    getitem_1 = max_1[1]
    return (getitem, getitem_1)
)"),
            R"(
max_1 = torch.ops.aten.max.dim(primals_1, 1)
getitem = max_1[0]
getitem_1 = max_1[1]
value_selecting_reduction_backward = torch.ops.aten.value_selecting_reduction_backward.default(tangents_1, 1, getitem_1, [3, 4, 5], False)
return pytree.tree_unflatten([getitem, getitem_1, value_selecting_reduction_backward], self._out_spec)
)");
}

// When the forward graph does not project the indices, the rule adds the getitem.
TEST(ReductionGrad, MinValuesOnly) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4]"):
    min_1 = torch.ops.aten.min.dim(x, -1, True)
    getitem = min_1[0]
    return (getitem,)
)"),
            R"(
min_1 = torch.ops.aten.min.dim(primals_1, -1, True)
getitem = min_1[0]
getitem_1 = min_1[1]
value_selecting_reduction_backward = torch.ops.aten.value_selecting_reduction_backward.default(tangents_1, -1, getitem_1, [3, 4], True)
return pytree.tree_unflatten([getitem, value_selecting_reduction_backward], self._out_spec)
)");
}

// value_selecting_reduction_backward: grad: gather_with_keepdimed_indices(grad, dim, indices,
// keepdim); indices get no gradient.
TEST(ReductionGrad, ValueSelectingReductionBackward) {
  EXPECT_EQ(joint(R"(
def forward(self, g: "f32[4]", i: "i64[4]"):
    vsrb = torch.ops.aten.value_selecting_reduction_backward.default(g, 1, i, [4, 5], False)
    return (vsrb,)
)"),
            R"(
vsrb = torch.ops.aten.value_selecting_reduction_backward.default(primals_1, 1, primals_2, [4, 5], False)
unsqueeze = torch.ops.aten.unsqueeze.default(primals_2, 1)
gather = torch.ops.aten.gather.default(tangents_1, 1, unsqueeze)
squeeze = torch.ops.aten.squeeze.dim(gather, 1)
return pytree.tree_unflatten([vsrb, squeeze, None], self._out_spec)
)");
}

// var.correction: var_backward = (2 / (n - correction)) * grad * (self - self.mean(dim, true)),
// grad unsqueezed at the reduced dims first; the operands of `a * b` right to left.
TEST(ReductionGrad, Var) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4, 5]"):
    var = torch.ops.aten.var.correction(x, [1], correction = 1)
    return (var,)
)"),
            R"(
var = torch.ops.aten.var.correction(primals_1, [1], correction = 1)
unsqueeze = torch.ops.aten.unsqueeze.default(tangents_1, 1)
mean = torch.ops.aten.mean.dim(primals_1, [1], True)
sub = torch.ops.aten.sub.Tensor(primals_1, mean)
mul = torch.ops.aten.mul.Scalar(unsqueeze, 0.6666666666666666)
mul_1 = torch.ops.aten.mul.Tensor(mul, sub)
return pytree.tree_unflatten([var, mul_1], self._out_spec)
)");
}

// var over every dim: self.mean() and n = numel; correction None is 1.
TEST(ReductionGrad, VarAll) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4, 5]"):
    var = torch.ops.aten.var.correction(x, None, correction = None)
    return (var,)
)"),
            R"(
var = torch.ops.aten.var.correction(primals_1, None, correction = None)
mean = torch.ops.aten.mean.default(primals_1)
sub = torch.ops.aten.sub.Tensor(primals_1, mean)
mul = torch.ops.aten.mul.Scalar(tangents_1, 0.03389830508474576)
mul_1 = torch.ops.aten.mul.Tensor(mul, sub)
return pytree.tree_unflatten([var, mul_1], self._out_spec)
)");
}

// `dim=[]` reduces every dim. PyTorch's var_backward takes it as "no dim reduced" (n = 1, a wrong
// gradient that fails gradcheck in 1.13); this rule uses the full reduction's n = 24: 2 / (24 - 2).
TEST(ReductionGrad, VarEmptyDimList) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[4, 3, 2]"):
    var = torch.ops.aten.var.correction(x, [], correction = 2)
    return (var,)
)"),
            R"(
var = torch.ops.aten.var.correction(primals_1, [], correction = 2)
mean = torch.ops.aten.mean.default(primals_1)
sub = torch.ops.aten.sub.Tensor(primals_1, mean)
mul = torch.ops.aten.mul.Scalar(tangents_1, 0.09090909090909091)
mul_1 = torch.ops.aten.mul.Tensor(mul, sub)
return pytree.tree_unflatten([var, mul_1], self._out_spec)
)");
}

// n <= correction over every dim: grad * where(self == self.mean(), nan, inf), as PyTorch 2.x.
TEST(ReductionGrad, VarNoDegreesOfFreedom) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f64[]"):
    var = torch.ops.aten.var.correction(x, None, correction = None)
    return (var,)
)"),
            R"(
var = torch.ops.aten.var.correction(primals_1, None, correction = None)
mean = torch.ops.aten.mean.default(primals_1)
eq = torch.ops.aten.eq.Tensor(primals_1, mean)
scalar_tensor = torch.ops.aten.scalar_tensor.default(inf, dtype = torch.float32, layout = torch.strided, device = device(type='cpu'))
scalar_tensor_1 = torch.ops.aten.scalar_tensor.default(nan, dtype = torch.float32, layout = torch.strided, device = device(type='cpu'))
where = torch.ops.aten.where.self(eq, scalar_tensor_1, scalar_tensor)
mul = torch.ops.aten.mul.Tensor(tangents_1, where)
return pytree.tree_unflatten([var, mul], self._out_spec)
)");
}

// std.correction: std_backward = var_backward((grad / (result * 2)).masked_fill_(result == 0, 0),
// ...)
TEST(ReductionGrad, Std) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4, 5]"):
    std = torch.ops.aten.std.correction(x, [1], correction = 1)
    return (std,)
)"),
            R"(
std = torch.ops.aten.std.correction(primals_1, [1], correction = 1)
detach = torch.ops.aten.detach.default(std)
detach_1 = torch.ops.aten.detach.default(detach)
mul = torch.ops.aten.mul.Scalar(detach_1, 2)
div = torch.ops.aten.div.Tensor(tangents_1, mul)
eq = torch.ops.aten.eq.Scalar(detach_1, 0)
masked_fill = torch.ops.aten.masked_fill.Scalar(div, eq, 0)
unsqueeze = torch.ops.aten.unsqueeze.default(masked_fill, 1)
mean = torch.ops.aten.mean.dim(primals_1, [1], True)
sub = torch.ops.aten.sub.Tensor(primals_1, mean)
mul_1 = torch.ops.aten.mul.Scalar(unsqueeze, 0.6666666666666666)
mul_2 = torch.ops.aten.mul.Tensor(mul_1, sub)
return pytree.tree_unflatten([std, mul_2], self._out_spec)
)");
}

// var_mean.correction: var_backward(grads[0]) + mean_backward(grads[1]).
TEST(ReductionGrad, VarMean) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4, 5]"):
    var_mean = torch.ops.aten.var_mean.correction(x, [1], correction = 1)
    getitem = var_mean[0]
    getitem_1 = var_mean[1]
    return (getitem, getitem_1)
)"),
            R"(
var_mean = torch.ops.aten.var_mean.correction(primals_1, [1], correction = 1)
getitem = var_mean[0]
getitem_1 = var_mean[1]
unsqueeze = torch.ops.aten.unsqueeze.default(tangents_1, 1)
mean = torch.ops.aten.mean.dim(primals_1, [1], True)
sub = torch.ops.aten.sub.Tensor(primals_1, mean)
mul = torch.ops.aten.mul.Scalar(unsqueeze, 0.6666666666666666)
mul_1 = torch.ops.aten.mul.Tensor(mul, sub)
unsqueeze_1 = torch.ops.aten.unsqueeze.default(tangents_2, 1)
expand = torch.ops.aten.expand.default(unsqueeze_1, [3, 4, 5])
div = torch.ops.aten.div.Scalar(expand, 4)
add = torch.ops.aten.add.Tensor(mul_1, div)
return pytree.tree_unflatten([getitem, getitem_1, add], self._out_spec)
)");
}

// Only the mean gets a gradient: mean_backward alone.
TEST(ReductionGrad, VarMeanOnlyMean) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4, 5]"):
    var_mean = torch.ops.aten.var_mean.correction(x, [1], correction = 1, keepdim = True)
    getitem_1 = var_mean[1]
    return (getitem_1,)
)"),
            R"(
var_mean = torch.ops.aten.var_mean.correction(primals_1, [1], correction = 1, keepdim = True)
getitem_1 = var_mean[1]
expand = torch.ops.aten.expand.default(tangents_1, [3, 4, 5])
div = torch.ops.aten.div.Scalar(expand, 4)
return pytree.tree_unflatten([getitem_1, div], self._out_spec)
)");
}

// argmax is non-differentiable: the joint graph only differentiates sum.
TEST(ReductionGrad, ArgmaxNeedsNoRule) {
  EXPECT_EQ(joint(R"(
def forward(self, x: "f32[3, 4]"):
    argmax = torch.ops.aten.argmax.default(x, 1)
    sum_1 = torch.ops.aten.sum.default(x)
    return (sum_1, argmax)
)"),
            R"(
argmax = torch.ops.aten.argmax.default(primals_1, 1)
sum_1 = torch.ops.aten.sum.default(primals_1)
expand = torch.ops.aten.expand.default(tangents_1, [3, 4])
return pytree.tree_unflatten([sum_1, argmax, expand], self._out_spec)
)");
}

// Every functional op of the family has a rule or is marked non-differentiable.
TEST(ReductionGrad, EveryOpHasARuleOrIsMarked) {
  for (const char* name : {"sum", "sum.dim_IntList", "mean", "mean.dim", "amax", "amin", "max.dim",
                           "min.dim", "value_selecting_reduction_backward", "var.correction",
                           "var_mean.correction", "std.correction"}) {
    const OpDef& op = aten_ops().get(name);
    EXPECT_TRUE(op.derivative && !op.derivative->formula.empty()) << name;
    EXPECT_FALSE(op.non_differentiable) << name;
  }
  for (const char* name : {"argmax", "argmin"})
    EXPECT_TRUE(aten_ops().get(name).non_differentiable);
}

// A mean over several symbolic dims has no SymInt product to divide by: a clear error.
TEST(ReductionGrad, MeanOverSeveralSymbolicDimsIsAnError) {
  EXPECT_THROW(joint(R"(
def forward(self, x: "f32[s0, s1, 4]"):
    mean = torch.ops.aten.mean.dim(x, [0, 1])
    return (mean,)
)"),
               Error);
}

}  // namespace
}  // namespace aotgrad
