// aotgrad: ops that read a tensor's metadata as SymInts (sym_size, ...), SymInt arithmetic
// (operator.mul, ...), lift_fresh and _print.
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

// SymInt arithmetic: the Python operators FX records on SymInts (`mul = sym_size_int * 2`).
template <SymInt (*F)(const SymInt&, const SymInt&)>
ValueMeta sym_binary(const MetaArgs& a) {
  return ValueMeta::of_sym(F(a.sym_int(0), a.sym_int(1)));
}
SymInt sym_add(const SymInt& x, const SymInt& y) { return x + y; }
SymInt sym_sub(const SymInt& x, const SymInt& y) { return x - y; }
SymInt sym_mul(const SymInt& x, const SymInt& y) { return x * y; }
SymInt sym_floordiv(const SymInt& x, const SymInt& y) {
  if (y == 0) throw Error("integer division by zero");
  return floordiv(x, y);
}
SymInt sym_mod(const SymInt& x, const SymInt& y) {
  if (y == 0) throw Error("integer modulo by zero");
  return mod(x, y);
}
ValueMeta sym_neg(const MetaArgs& a) { return ValueMeta::of_sym(-a.sym_int(0)); }

// lift_fresh(self) returns self (an alias) in eager mode.
ValueMeta lift_fresh(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  return meta::one(meta::view_of(x, x.sizes, x.strides));
}

// _print(s) -> (): no result; its effect is the print (Note [Effect tokens]).
ValueMeta no_result(const MetaArgs&) { return ValueMeta::none(); }

}  // namespace

void register_misc_ops(OpTable& t) {
  // torch.ops.aten._print: libtorch's op (the runtime adds its BackendSelect kernel).
  t.def("_print(str s) -> ()").tags(kEffectful).meta(no_result).non_differentiable();
  t.def("sym_size.int(Tensor self, int dim) -> SymInt").meta(sym_size).non_differentiable();
  t.def("sym_stride.int(Tensor self, int dim) -> SymInt").meta(sym_stride).non_differentiable();
  t.def("sym_numel(Tensor self) -> SymInt").meta(sym_numel).non_differentiable();
  t.def("sym_storage_offset(Tensor self) -> SymInt").meta(sym_storage_offset).non_differentiable();
  t.def("operator::add(SymInt a, SymInt b) -> SymInt")
      .meta(sym_binary<sym_add>)
      .non_differentiable();
  t.def("operator::sub(SymInt a, SymInt b) -> SymInt")
      .meta(sym_binary<sym_sub>)
      .non_differentiable();
  t.def("operator::mul(SymInt a, SymInt b) -> SymInt")
      .meta(sym_binary<sym_mul>)
      .non_differentiable();
  t.def("operator::floordiv(SymInt a, SymInt b) -> SymInt")
      .meta(sym_binary<sym_floordiv>)
      .non_differentiable();
  t.def("operator::mod(SymInt a, SymInt b) -> SymInt")
      .meta(sym_binary<sym_mod>)
      .non_differentiable();
  t.def("operator::neg(SymInt a) -> SymInt").meta(sym_neg).non_differentiable();
  t.def("lift_fresh(Tensor(a) self) -> Tensor(a)")
      .meta(lift_fresh)
      .view_inverse(identity_view_inverse)
      .derivative(formula("self: grad"));
}

}  // namespace aotgrad
