// aotgrad: loss ops that are not part of the nn family's native kernels (mse_loss).
#include "aotgrad/ops/decomp_util.h"
#include "aotgrad/ops/derivative.h"
#include "aotgrad/ops/formula.h"
#include "aotgrad/ops/meta_util.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

using meta::one;

// at::mse_loss: a TensorIterator binary op over (self, target), then the reduction (0 none,
// 1 mean, 2 sum) to a 0-dim tensor.
ValueMeta mse_loss_meta(const MetaArgs& a) {
  const TensorMeta &self = a.tensor(0), &target = a.tensor(1);
  int64_t reduction = a.int_value(2);
  if (reduction < 0 || reduction > 2)
    throw Error("reduction must be 0 (none), 1 (mean) or 2 (sum)");
  ScalarType dt = meta::result_type({&self, &target});
  if (!is_floating(dt) && !is_complex(dt))
    throw Error("mse_loss expects floating point inputs, got " + std::string(torch_name(dt)));
  TensorMeta loss = meta::tensor_iterator_output({&self, &target}, dt);
  if (reduction == 0) return one(loss);
  return one(meta::empty({}, dt, self.device));
}

// at::mse_loss_backward: zeros_like(self, contiguous) filled by a TensorIterator.
ValueMeta mse_loss_backward_meta(const MetaArgs& a) {
  const TensorMeta &grad = a.tensor(0), &self = a.tensor(1), &target = a.tensor(2);
  meta::broadcast_shapes(meta::broadcast_shapes(grad.sizes, self.sizes), target.sizes);
  return one(meta::empty(self.sizes, self.dtype, self.device));
}

}  // namespace

// --- decompositions (torch/_decomp, torch/_refs, CompositeImplicitAutograd kernels) ----------

namespace decomps {
namespace {

// torch/_decomp mse_loss_backward (pw_cast_for_opmath):
//   norm * (input - target) * grad_output, norm = 2 / input.numel() for reduction mean, else 2.
// ATen's CPU kernel returns a contiguous result; PyTorch's decomposition does not ask for one, this
// one does (a clone only for non-contiguous operands).
Arg mse_loss_backward_full_decomp(DecompBuilder& b) {
  Ops o(b);
  auto [compute, result] = elementwise_dtypes({b.input(0), b.input(1), b.input(2)});
  Node* grad_output = o.to(b.input(0), compute);
  Node* input = o.to(b.input(1), compute);
  Node* target = o.to(b.input(2), compute);
  SymInt numel = input->tensor_meta().numel();
  AOTGRAD_CHECK(numel.is_concrete(), b.node().describe(), ": a symbolic numel is not supported");
  double norm = b.int_arg(3) == 1 ? 2.0 / static_cast<double>(numel.value()) : 2.0;
  Node* scaled = o.mul(Arg(o.sub(Arg(input), Arg(target))), f(norm));
  return Arg(o.contiguous(o.to(o.mul(Arg(scaled), Arg(grad_output)), result)));
}

}  // namespace
}  // namespace decomps

void register_loss_ops(OpTable& t) {
  t.def("mse_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor")
      .meta(mse_loss_meta)
      .derivative(formula("self: mse_loss_backward(grad, self, target, reduction); "
                          "target: mse_loss_backward(grad, target, self, reduction)"));
  // PyTorch has a double-backward formula (mse_loss_double_backward); aotgrad does not yet.
  t.def(
       "mse_loss_backward(Tensor grad_output, Tensor self, Tensor target, int reduction) -> Tensor")
      .tags(kBackward)
      .meta(mse_loss_backward_meta)
      .non_differentiable()
      .decomposition(decomp(decomps::mse_loss_backward_full_decomp, kFullTable,
                            "torch/_decomp: mse_loss_backward"));
}

}  // namespace aotgrad
