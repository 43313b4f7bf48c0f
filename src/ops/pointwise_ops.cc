// aotgrad: pointwise ops -- unary, binary, comparison, ternary, their in-place variants and the
// pointwise backward kernels. Outputs are laid out as TensorIterator lays them out.
#include "aotgrad/ops/meta_util.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

using meta::one;
using meta::result_type;
using meta::tensor_iterator_output;

// --- meta functions -------------------------------------------------------------------------------

// Unary ops that keep the dtype (abs, neg, relu, sign).
ValueMeta unary_same(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  return one(tensor_iterator_output({&x}, x.dtype));
}

// Unary float ops: integer and bool inputs compute in the default float dtype.
ValueMeta unary_float(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  ScalarType dt = is_integral(x.dtype, /*include_bool=*/true) ? kDefaultFloat : x.dtype;
  return one(tensor_iterator_output({&x}, dt));
}

// Ops whose output is bool (logical_not, isnan, ...).
ValueMeta unary_bool(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  return one(tensor_iterator_output({&x}, ScalarType::Bool));
}

// self (op) other, both tensors (or wrapped numbers), promoted.
ValueMeta binary(const MetaArgs& a) {
  const TensorMeta &x = a.tensor(0), &y = a.tensor(1);
  return one(tensor_iterator_output({&x, &y}, result_type({&x, &y})));
}

// Binary ops on floats: integer results become the default float (div, true division).
ValueMeta binary_float(const MetaArgs& a) {
  const TensorMeta &x = a.tensor(0), &y = a.tensor(1);
  ScalarType dt = result_type({&x, &y});
  if (is_integral(dt, true)) dt = kDefaultFloat;
  return one(tensor_iterator_output({&x, &y}, dt));
}

// self (op) Scalar other (add.Scalar, mul.Scalar, pow.Tensor_Scalar, ...).
ValueMeta binary_scalar(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  return one(tensor_iterator_output({&x}, result_type({&x}, {a.scalar(1)})));
}

ValueMeta div_scalar(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  ScalarType dt = result_type({&x}, {a.scalar(1)});
  if (is_integral(dt, true)) dt = kDefaultFloat;
  return one(tensor_iterator_output({&x}, dt));
}

// div.Tensor_mode: true division when rounding_mode is None, else the promoted type.
ValueMeta div_mode(const MetaArgs& a) {
  if (a.is_none(2)) return binary_float(a);
  std::string mode = a.str(2);
  if (mode != "trunc" && mode != "floor")
    throw Error("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '" + mode + "'");
  return binary(a);
}

// Comparisons: bool output over the broadcast inputs.
ValueMeta compare(const MetaArgs& a) {
  const TensorMeta &x = a.tensor(0), &y = a.tensor(1);
  return one(tensor_iterator_output({&x, &y}, ScalarType::Bool));
}
ValueMeta compare_scalar(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  return one(tensor_iterator_output({&x}, ScalarType::Bool));
}

// pow.Tensor_Scalar: an integer tensor to a float power is float.
ValueMeta pow_tensor_scalar(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  return one(tensor_iterator_output({&x}, result_type({&x}, {a.scalar(1)})));
}

// clamp(self, Scalar? min, Scalar? max) / clamp_min: result_type(self, min, max).
ValueMeta clamp(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  std::vector<ScalarValue> scalars;
  for (size_t i = 1; i < a.size(); ++i)
    if (auto s = a.optional_scalar(i)) scalars.push_back(*s);
  if (a.size() == 3 && a.is_none(1) && a.is_none(2))
    throw Error("at least one of 'min' or 'max' must not be None");
  return one(tensor_iterator_output({&x}, result_type({&x}, scalars)));
}

// where.self(condition, self, other)
ValueMeta where(const MetaArgs& a) {
  const TensorMeta &c = a.tensor(0), &x = a.tensor(1), &y = a.tensor(2);
  if (c.dtype != ScalarType::Bool && c.dtype != ScalarType::UInt8)
    throw Error("where expected condition to be a boolean tensor, but got a tensor with dtype " +
                std::string(torch_name(c.dtype)));
  return one(tensor_iterator_output({&c, &x, &y}, result_type({&x, &y})));
}

// masked_fill: self expanded with mask, cloned contiguous.
ValueMeta masked_fill(const MetaArgs& a) {
  const TensorMeta &x = a.tensor(0), &m = a.tensor(1);
  if (m.dtype != ScalarType::Bool) throw Error("masked_fill only supports boolean masks");
  SymIntVector shape = meta::broadcast_shapes(m.sizes, x.sizes);
  TensorMeta out = meta::empty(shape, x.dtype, x.device);
  return one(out);
}

// fill.Scalar / fill.Tensor: empty_like(self) filled.
ValueMeta like_self(const MetaArgs& a) { return one(meta::empty_like(a.tensor(0))); }

// Ternary ops over (self, t1, t2) promoted: addcmul, lerp.Tensor.
ValueMeta ternary(const MetaArgs& a) {
  const TensorMeta &x = a.tensor(0), &y = a.tensor(1), &z = a.tensor(2);
  return one(tensor_iterator_output({&x, &y, &z}, result_type({&x, &y, &z})));
}

// lerp.Scalar(self, end, weight): self and end must share a dtype.
ValueMeta lerp_scalar(const MetaArgs& a) {
  const TensorMeta &x = a.tensor(0), &y = a.tensor(1);
  if (x.dtype != y.dtype)
    throw Error("expected dtype " + std::string(torch_name(x.dtype)) + " for `end` but got dtype " +
                std::string(torch_name(y.dtype)));
  return one(tensor_iterator_output({&x, &y}, x.dtype));
}

// In-place ops return `self`; other tensor arguments must broadcast to self's shape, and the
// computed dtype must be castable to self's.
ValueMeta inplace(const MetaArgs& a) {
  const TensorMeta& self = a.tensor(0);
  for (size_t i = 1; i < a.size(); ++i) {
    const auto& t = a.op().schema.args[i].type;
    if (t.base != BaseType::Tensor || t.list || a.is_none(i)) continue;
    const TensorMeta& o = a.tensor(i);
    SymIntVector b = meta::broadcast_shapes(self.sizes, o.sizes);
    if (b != self.sizes)
      throw Error("output with shape " + to_string(self.sizes) +
                  " doesn't match the broadcast shape " + to_string(b));
  }
  return one(self);
}

// In-place binary arithmetic additionally refuses to write a float result into an integer self.
ValueMeta inplace_binary(const MetaArgs& a) {
  const TensorMeta& self = a.tensor(0);
  ScalarType computed = a.op().schema.args[1].type.base == BaseType::Scalar
                            ? result_type({&self}, {a.scalar(1)})
                            : result_type({&self, &a.tensor(1)});
  if (is_floating(computed) && is_integral(self.dtype, true))
    throw Error("result type " + std::string(torch_name(computed)) +
                " can't be cast to the desired output type " + std::string(torch_name(self.dtype)));
  return inplace(a);
}

// Pointwise backward kernels: (grad_output, self/output, ...) -> like a binary op.
ValueMeta backward_binary(const MetaArgs& a) {
  const TensorMeta &g = a.tensor(0), &x = a.tensor(1);
  return one(tensor_iterator_output({&g, &x}, result_type({&g, &x})));
}

// --- registration helpers -------------------------------------------------------------------------

// Declares `name(Tensor self) -> Tensor` and `name_(Tensor(a!) self) -> Tensor(a!)`, linked.
void unary(OpTable& t, const std::string& name, MetaFn fn, uint32_t tags = kCore) {
  t.def(name + "(Tensor self) -> Tensor").tags(kPointwise | tags).meta(fn).inplace(name + "_");
  t.def(name + "_(Tensor(a!) self) -> Tensor(a!)").tags(kPointwise | kInplace).meta(inplace);
}

}  // namespace

void register_pointwise_ops(OpTable& t) {
  // Unary.
  unary(t, "abs", unary_same);
  unary(t, "neg", unary_same);
  unary(t, "sign", unary_same);
  unary(t, "relu", unary_same);
  for (const char* n : {"exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "reciprocal", "sin", "cos",
                        "tanh", "sigmoid", "erf"})
    unary(t, n, unary_float);
  unary(t, "silu", unary_float, /*tags=*/0);
  unary(t, "logical_not", unary_bool);
  t.def("gelu(Tensor self, *, str approximate=\"none\") -> Tensor").tags(kPointwise | kCore)
      .meta(unary_float).inplace("gelu_");
  t.def("gelu_(Tensor(a!) self, *, str approximate=\"none\") -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace);

  // Binary arithmetic.
  t.def("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
      .tags(kPointwise | kCore).meta(binary).inplace("add_.Tensor");
  t.def("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace_binary);
  t.def("add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor")
      .tags(kPointwise | kCore).meta(binary_scalar).inplace("add_.Scalar");
  t.def("add_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace_binary);
  t.def("sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
      .tags(kPointwise | kCore).meta(binary).inplace("sub_.Tensor");
  t.def("sub_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace_binary);
  t.def("sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor")
      .tags(kPointwise | kCore).meta(binary_scalar).inplace("sub_.Scalar");
  t.def("sub_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace_binary);
  t.def("rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor")
      .tags(kPointwise).meta(binary_scalar);
  t.def("mul.Tensor(Tensor self, Tensor other) -> Tensor")
      .tags(kPointwise | kCore).meta(binary).inplace("mul_.Tensor");
  t.def("mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace_binary);
  t.def("mul.Scalar(Tensor self, Scalar other) -> Tensor")
      .tags(kPointwise | kCore).meta(binary_scalar).inplace("mul_.Scalar");
  t.def("mul_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace_binary);
  t.def("div.Tensor(Tensor self, Tensor other) -> Tensor")
      .tags(kPointwise | kCore).meta(binary_float).inplace("div_.Tensor");
  t.def("div_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace_binary);
  t.def("div.Scalar(Tensor self, Scalar other) -> Tensor")
      .tags(kPointwise | kCore).meta(div_scalar).inplace("div_.Scalar");
  t.def("div_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace_binary);
  t.def("div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor")
      .tags(kPointwise | kCore).meta(div_mode).inplace("div_.Tensor_mode");
  t.def("div_.Tensor_mode(Tensor(a!) self, Tensor other, *, str? rounding_mode) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace_binary);
  t.def("pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor")
      .tags(kPointwise | kCore).meta(pow_tensor_scalar).inplace("pow_.Scalar");
  t.def("pow_.Scalar(Tensor(a!) self, Scalar exponent) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace_binary);
  t.def("pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor")
      .tags(kPointwise | kCore).meta(binary).inplace("pow_.Tensor");
  t.def("pow_.Tensor(Tensor(a!) self, Tensor exponent) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace_binary);
  t.def("maximum(Tensor self, Tensor other) -> Tensor").tags(kPointwise | kCore).meta(binary);
  t.def("minimum(Tensor self, Tensor other) -> Tensor").tags(kPointwise | kCore).meta(binary);
  t.def("bitwise_and.Tensor(Tensor self, Tensor other) -> Tensor")
      .tags(kPointwise | kCore).meta(binary).inplace("bitwise_and_.Tensor");
  t.def("bitwise_and_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace);
  t.def("clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor")
      .tags(kPointwise | kCore).meta(clamp).inplace("clamp_");
  t.def("clamp_(Tensor(a!) self, Scalar? min=None, Scalar? max=None) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace);
  t.def("clamp_min(Tensor self, Scalar min) -> Tensor")
      .tags(kPointwise).meta(clamp).inplace("clamp_min_");
  t.def("clamp_min_(Tensor(a!) self, Scalar min) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace);

  // Comparisons.
  for (const char* n : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    std::string s = n;
    t.def(s + ".Tensor(Tensor self, Tensor other) -> Tensor").tags(kPointwise | kCore).meta(compare)
        .inplace(s + "_.Tensor");
    t.def(s + "_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)")
        .tags(kPointwise | kInplace).meta(inplace);
    t.def(s + ".Scalar(Tensor self, Scalar other) -> Tensor").tags(kPointwise | kCore)
        .meta(compare_scalar).inplace(s + "_.Scalar");
    t.def(s + "_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)")
        .tags(kPointwise | kInplace).meta(inplace);
  }

  // Selection and filling.
  t.def("where.self(Tensor condition, Tensor self, Tensor other) -> Tensor")
      .tags(kPointwise | kCore).meta(where);
  t.def("masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor")
      .tags(kPointwise | kCore).meta(masked_fill).inplace("masked_fill_.Scalar");
  t.def("masked_fill_.Scalar(Tensor(a!) self, Tensor mask, Scalar value) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace);
  t.def("masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor")
      .tags(kPointwise | kCore).meta(masked_fill).inplace("masked_fill_.Tensor");
  t.def("masked_fill_.Tensor(Tensor(a!) self, Tensor mask, Tensor value) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace);
  t.def("fill.Scalar(Tensor self, Scalar value) -> Tensor")
      .tags(kPointwise | kCore).meta(like_self).inplace("fill_.Scalar");
  t.def("fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace);
  t.def("fill.Tensor(Tensor self, Tensor value) -> Tensor")
      .tags(kPointwise | kCore).meta(like_self).inplace("fill_.Tensor");
  t.def("fill_.Tensor(Tensor(a!) self, Tensor value) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace);
  t.def("zero_(Tensor(a!) self) -> Tensor(a!)").tags(kPointwise | kInplace).meta(inplace);
  t.def("lerp.Scalar(Tensor self, Tensor end, Scalar weight) -> Tensor")
      .tags(kPointwise).meta(lerp_scalar).inplace("lerp_.Scalar");
  t.def("lerp_.Scalar(Tensor(a!) self, Tensor end, Scalar weight) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace);
  t.def("addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor")
      .tags(kPointwise).meta(ternary).inplace("addcmul_");
  t.def("addcmul_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace);

  // Pointwise backward kernels.
  t.def("threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor")
      .tags(kPointwise | kCore | kBackward).meta(backward_binary);
  t.def("gelu_backward(Tensor grad_output, Tensor self, *, str approximate=\"none\") -> Tensor")
      .tags(kPointwise | kCore | kBackward).meta(backward_binary);
  t.def("sigmoid_backward(Tensor grad_output, Tensor output) -> Tensor")
      .tags(kPointwise | kCore | kBackward).meta(backward_binary);
  t.def("tanh_backward(Tensor grad_output, Tensor output) -> Tensor")
      .tags(kPointwise | kCore | kBackward).meta(backward_binary);
  t.def("silu_backward(Tensor grad_output, Tensor self) -> Tensor")
      .tags(kPointwise | kBackward).meta(backward_binary);
}

}  // namespace aotgrad
