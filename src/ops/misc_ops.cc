// aotgrad: ops that read a tensor's metadata as SymInts (sym_size, ...) and lift_fresh.
#include "aotgrad/ops/derivative.h"
#include "aotgrad/ops/formula.h"
#include "aotgrad/ops/functionalization.h"
#include "aotgrad/ops/meta_util.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

// TensorImpl::size(d) / stride(d): maybe_wrap_dim without wrapping scalars.
int64_t dim_of(const TensorMeta& x, int64_t dim) {
  if (x.dim() == 0)
    throw Error("dimension specified as " + std::to_string(dim) + " but tensor has no dimensions");
  return meta::wrap_dim(dim, x.dim());
}

ValueMeta sym_size(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  return ValueMeta::of_sym(x.sizes[dim_of(x, a.int_value(1))]);
}

ValueMeta sym_stride(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  return ValueMeta::of_sym(x.strides[dim_of(x, a.int_value(1))]);
}

ValueMeta sym_numel(const MetaArgs& a) { return ValueMeta::of_sym(a.tensor(0).numel()); }

ValueMeta sym_storage_offset(const MetaArgs& a) {
  return ValueMeta::of_sym(a.tensor(0).storage_offset);
}

// lift_fresh(self) returns self (an alias) in eager mode.
ValueMeta lift_fresh(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  return meta::one(meta::view_of(x, x.sizes, x.strides));
}

}  // namespace

void register_misc_ops(OpTable& t) {
  t.def("sym_size.int(Tensor self, int dim) -> SymInt").meta(sym_size).non_differentiable();
  t.def("sym_stride.int(Tensor self, int dim) -> SymInt").meta(sym_stride).non_differentiable();
  t.def("sym_numel(Tensor self) -> SymInt").meta(sym_numel).non_differentiable();
  t.def("sym_storage_offset(Tensor self) -> SymInt").meta(sym_storage_offset).non_differentiable();
  t.def("lift_fresh(Tensor(a) self) -> Tensor(a)")
      .meta(lift_fresh)
      .view_inverse(identity_view_inverse)
      .derivative(formula("self: grad"));
}

}  // namespace aotgrad
