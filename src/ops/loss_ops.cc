// aotgrad: loss ops that are not part of the nn family's native kernels (mse_loss).
#include "aotgrad/ops/derivative.h"
#include "aotgrad/ops/formula.h"
#include "aotgrad/ops/meta_util.h"
#include "aotgrad/ops/registry.h"
#include "full_decomps.h"

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
      .decomposition(
          decomp(mse_loss_backward_full_decomp, kFullTable, "torch/_decomp: mse_loss_backward"));
}

}  // namespace aotgrad
