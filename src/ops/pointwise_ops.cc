// aotgrad: pointwise ops -- unary, binary, comparison, ternary, their in-place variants and the
// pointwise backward kernels. Outputs are laid out as TensorIterator lays them out.
#include "aotgrad/ops/meta_util.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

using meta::one;
using meta::result_type;
using meta::tensor_iterator_output;

// --- checks shared by several ops ----------------------------------------------------------------

// c10::toString(ScalarType): "Float", "Long", "Bool", as ATen's messages name dtypes.
std::string c10_name(ScalarType t) {
  switch (t) {
    case ScalarType::UInt8: return "Byte";
    case ScalarType::Int8: return "Char";
    case ScalarType::Int16: return "Short";
    case ScalarType::Int32: return "Int";
    case ScalarType::Int64: return "Long";
    case ScalarType::Float16: return "Half";
    case ScalarType::Float32: return "Float";
    case ScalarType::Float64: return "Double";
    case ScalarType::Complex64: return "ComplexFloat";
    case ScalarType::Complex128: return "ComplexDouble";
    case ScalarType::Bool: return "Bool";
    case ScalarType::BFloat16: return "BFloat16";
  }
  return "?";
}

// ATen's "<kernel>" not implemented for '<dtype>' (the CPU kernel's dtype dispatch fails).
[[noreturn]] void not_implemented(const std::string& kernel, ScalarType t) {
  throw Error("\"" + kernel + "\" not implemented for '" + c10_name(t) + "'");
}

// c10::canCast: no complex -> real, no floating -> integral, no non-bool -> bool.
bool can_cast(ScalarType from, ScalarType to) {
  if (is_complex(from) && !is_complex(to)) return false;
  if (is_floating(from) && is_integral(to, /*include_bool=*/false)) return false;
  if (from != ScalarType::Bool && to == ScalarType::Bool) return false;
  return true;
}

// at::assert_no_internal_overlap: an in-place write into a tensor whose elements share memory
// (a stride-0 dimension of size > 1, as expand makes) is refused.
void check_no_internal_overlap(const TensorMeta& t) {
  if (meta::is_non_overlapping_and_dense(t)) return;
  for (int64_t i = 0; i < t.dim(); ++i)
    if (t.strides[i] == 0 && t.sizes[i].hint_or(2) > 1)
      throw Error(
          "unsupported operation: more than one element of the written-to tensor refers to a "
          "single memory location. Please clone() the tensor before performing the operation.");
}

// The alpha of add/sub/rsub (alpha_check in BinaryOps.cpp), given the result dtype.
void check_alpha(ScalarType dtype, const ScalarValue& alpha) {
  if (alpha.kind == ScalarValue::Kind::Bool && dtype != ScalarType::Bool)
    throw Error("Boolean alpha only supported for Boolean results.");
  if (alpha.kind == ScalarValue::Kind::Float && !is_floating(dtype) && !is_complex(dtype))
    throw Error("For integral input tensors, argument alpha must not be a floating point number.");
}

// sub_check in BinaryOps.cpp: subtraction refuses bool operands (wrapped Python bools included).
void check_sub(const TensorMeta& x, const TensorMeta& y) {
  if (x.dtype == ScalarType::Bool && y.dtype == ScalarType::Bool)
    throw Error("Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
                "`^` or `logical_xor()` operator instead.");
  if (x.dtype == ScalarType::Bool || y.dtype == ScalarType::Bool)
    throw Error("Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
}

// A Scalar argument seen as the wrapped-number tensor ATen makes of it.
TensorMeta wrapped_scalar(const ScalarValue& s) {
  TensorMeta t;
  t.wrapped_number = true;
  t.dtype = s.kind == ScalarValue::Kind::Float  ? ScalarType::Float64
            : s.kind == ScalarValue::Kind::Bool ? ScalarType::Bool
                                                : ScalarType::Int64;
  return t;
}

// --- meta functions -------------------------------------------------------------------------------

// Unary ops that keep the dtype (abs, neg, relu, sign); abs, neg and relu refuse bool.
ValueMeta unary_same(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  if (x.dtype == ScalarType::Bool) {
    const std::string& op = a.op().base_name;
    if (op == "neg" || op == "neg_")
      throw Error("Negation, the `-` operator, on a bool tensor is not supported. If you are "
                  "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
    if (op == "relu" || op == "relu_") throw Error("Boolean inputs not supported for relu");
    if (op == "abs" || op == "abs_") not_implemented("abs_cpu", x.dtype);
  }
  return one(tensor_iterator_output({&x}, x.dtype));
}

// Unary ops whose CPU kernels exist for floating types only and keep the dtype (silu, gelu).
ValueMeta unary_floating_only(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  const std::string& op = a.op().base_name;
  if (op == "gelu" || op == "gelu_") {
    std::string approximate = a.str(1);
    if (approximate != "none" && approximate != "tanh")
      throw Error("approximate argument must be either none or tanh.");
  }
  if (!is_floating(x.dtype) && !is_complex(x.dtype))
    not_implemented(op == "gelu" || op == "gelu_" ? "GeluKernelImpl" : "silu", x.dtype);
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

// bitwise_not: integral and bool only, dtype kept.
ValueMeta unary_bitwise(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  if (!is_integral(x.dtype, /*include_bool=*/true)) not_implemented("bitwise_not_cpu", x.dtype);
  return one(tensor_iterator_output({&x}, x.dtype));
}

// self (op) other, both tensors (or wrapped numbers), promoted: maximum, minimum, mul.
ValueMeta binary(const MetaArgs& a) {
  const TensorMeta &x = a.tensor(0), &y = a.tensor(1);
  return one(tensor_iterator_output({&x, &y}, result_type({&x, &y})));
}

// add.Tensor / sub.Tensor with alpha.
ValueMeta add_sub(const MetaArgs& a) {
  const TensorMeta &x = a.tensor(0), &y = a.tensor(1);
  if (a.op().base_name == "sub") check_sub(x, y);
  ScalarType dt = result_type({&x, &y});
  check_alpha(dt, a.scalar(2));
  return one(tensor_iterator_output({&x, &y}, dt));
}

// add.Scalar / sub.Scalar / rsub.Scalar: ATen wraps `other` into a 0-dim tensor operand.
ValueMeta add_sub_scalar(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  TensorMeta y = wrapped_scalar(a.scalar(1));
  if (a.op().base_name != "add") check_sub(x, y);
  ScalarType dt = result_type({&x, &y});
  check_alpha(dt, a.scalar(2));
  return one(tensor_iterator_output({&x, &y}, dt));
}

// pow.Tensor_Tensor: no kernel for bool.
ValueMeta pow_tensor_tensor(const MetaArgs& a) {
  const TensorMeta &x = a.tensor(0), &y = a.tensor(1);
  ScalarType dt = result_type({&x, &y});
  if (dt == ScalarType::Bool) not_implemented("pow", dt);
  return one(tensor_iterator_output({&x, &y}, dt));
}

// bitwise_and: integral and bool only.
ValueMeta bitwise(const MetaArgs& a) {
  const TensorMeta &x = a.tensor(0), &y = a.tensor(1);
  ScalarType dt = result_type({&x, &y});
  if (!is_integral(dt, /*include_bool=*/true)) not_implemented("bitwise_and_cpu", dt);
  return one(tensor_iterator_output({&x, &y}, dt));
}

// Binary ops on floats: integer results become the default float (div, true division).
ValueMeta binary_float(const MetaArgs& a) {
  const TensorMeta &x = a.tensor(0), &y = a.tensor(1);
  ScalarType dt = result_type({&x, &y});
  if (is_integral(dt, true)) dt = kDefaultFloat;
  return one(tensor_iterator_output({&x, &y}, dt));
}

// self (op) Scalar other (mul.Scalar): ATen wraps `other` into a 0-dim tensor operand, which
// takes part in TensorIterator's layout decision (no fast setup unless self is 0-dim).
ValueMeta binary_scalar(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  TensorMeta y = wrapped_scalar(a.scalar(1));
  return one(tensor_iterator_output({&x, &y}, result_type({&x, &y})));
}

ValueMeta div_scalar(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  TensorMeta y = wrapped_scalar(a.scalar(1));
  ScalarType dt = result_type({&x, &y});
  if (is_integral(dt, true)) dt = kDefaultFloat;
  return one(tensor_iterator_output({&x, &y}, dt));
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
  TensorMeta y = wrapped_scalar(a.scalar(1));
  return one(tensor_iterator_output({&x, &y}, ScalarType::Bool));
}

// pow.Tensor_Scalar: an integer tensor to a float power is float; integers to negative integer
// powers are refused.
ValueMeta pow_tensor_scalar(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  ScalarValue e = a.scalar(1);
  if (is_integral(x.dtype, /*include_bool=*/true) && e.kind != ScalarValue::Kind::Float && e.i < 0)
    throw Error("Integers to negative integer powers are not allowed.");
  ScalarType dt = result_type({&x}, {e});
  if (dt == ScalarType::Bool) not_implemented("pow", dt);
  return one(tensor_iterator_output({&x}, dt));
}

// clamp(self, Scalar? min, Scalar? max) / clamp_min: a floating self keeps its dtype, else
// result_type(self, min, max); no kernel for bool.
ValueMeta clamp(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  std::vector<ScalarValue> scalars;
  for (size_t i = 1; i < a.size(); ++i)
    if (auto s = a.optional_scalar(i)) scalars.push_back(*s);
  if (a.size() == 3 && a.is_none(1) && a.is_none(2))
    throw Error("torch.clamp: At least one of 'min' or 'max' must not be None");
  ScalarType dt = is_floating(x.dtype) ? x.dtype : result_type({&x}, scalars);
  if (dt == ScalarType::Bool)
    not_implemented(a.size() == 3 ? "clamp_scalar_cpu" : "clamp_min_scalar_cpu", dt);
  return one(tensor_iterator_output({&x}, dt));
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
  if (m.dtype != ScalarType::Bool)
    throw Error("masked_fill_ only supports boolean masks, but got mask with dtype " +
                c10_name(m.dtype));
  if (a.op().schema.args[2].type.base == BaseType::Tensor && a.tensor(2).dim() != 0)
    throw Error("masked_fill_ only supports a 0-dimensional value tensor, but got tensor with " +
                std::to_string(a.tensor(2).dim()) + " dimension(s).");
  SymIntVector shape = meta::broadcast_shapes(m.sizes, x.sizes);
  TensorMeta out = meta::empty(shape, x.dtype, x.device);
  return one(out);
}

// fill.Scalar / fill.Tensor: empty_like(self) filled; a value tensor must be 0-dim.
ValueMeta like_self(const MetaArgs& a) {
  if (a.op().schema.args[1].type.base == BaseType::Tensor && a.tensor(1).dim() != 0)
    throw Error("fill_ only supports 0-dimension value tensor but got tensor with " +
                std::to_string(a.tensor(1).dim()) + " dimensions.");
  return one(meta::empty_like(a.tensor(0)));
}

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
  if (!is_floating(x.dtype) && !is_complex(x.dtype)) not_implemented("lerp_kernel_scalar", x.dtype);
  return one(tensor_iterator_output({&x, &y}, x.dtype));
}

// The metadata the functional variant of in-place op `a.op()` infers for the same arguments (so
// the in-place op raises what the functional one raises), or nullopt if it has none.
std::optional<TensorMeta> functional_result(const MetaArgs& a) {
  if (a.op().functional_variant.empty()) return std::nullopt;
  const OpDef* fn = aten_ops().find(a.op().functional_variant);
  if (!fn || !fn->meta || fn->schema.args.size() != a.size()) return std::nullopt;
  std::vector<Arg> args;
  for (size_t i = 0; i < a.size(); ++i) args.push_back(a.arg(i));
  ValueMeta r = fn->meta(MetaArgs(*fn, args));
  if (!r.is_tensor()) return std::nullopt;
  return r.tensor;
}

// In-place ops return `self`. As TensorIterator with `self` as the output: the functional result
// must have self's shape (the other operands broadcast to it) and its dtype must be castable to
// self's (c10::canCast); TensorIterator also refuses a self with internally overlapping elements.
ValueMeta inplace_impl(const MetaArgs& a, bool check_overlap) {
  const TensorMeta& self = a.tensor(0);
  if (auto r = functional_result(a)) {
    if (r->sizes != self.sizes)
      throw Error("output with shape " + to_string(self.sizes) +
                  " doesn't match the broadcast shape " + to_string(r->sizes));
    if (!can_cast(r->dtype, self.dtype))
      throw Error("result type " + c10_name(r->dtype) +
                  " can't be cast to the desired output type " + c10_name(self.dtype));
  } else {
    for (size_t i = 1; i < a.size(); ++i) {
      const auto& t = a.op().schema.args[i].type;
      if (t.base != BaseType::Tensor || t.list || a.is_none(i)) continue;
      SymIntVector b = meta::broadcast_shapes(self.sizes, a.tensor(i).sizes);
      if (b != self.sizes)
        throw Error("output with shape " + to_string(self.sizes) +
                    " doesn't match the broadcast shape " + to_string(b));
    }
  }
  if (check_overlap) check_no_internal_overlap(self);
  return one(self);
}
ValueMeta inplace(const MetaArgs& a) { return inplace_impl(a, /*check_overlap=*/true); }

// fill_, zero_ and masked_fill_ do not refuse internally overlapping elements (masked_fill_ warns).
ValueMeta inplace_fill(const MetaArgs& a) { return inplace_impl(a, /*check_overlap=*/false); }

// Pointwise backward kernels: (grad_output, self/output, ...) -> like a binary op.
ValueMeta backward_binary(const MetaArgs& a) {
  const TensorMeta &g = a.tensor(0), &x = a.tensor(1);
  return one(tensor_iterator_output({&g, &x}, result_type({&g, &x})));
}

// threshold_backward's TensorIterator takes `self` before `grad_output`, so self's layout leads.
ValueMeta threshold_backward(const MetaArgs& a) {
  const TensorMeta &g = a.tensor(0), &x = a.tensor(1);
  return one(tensor_iterator_output({&x, &g}, result_type({&x, &g})));
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
  unary(t, "silu", unary_floating_only, /*tags=*/0);
  unary(t, "logical_not", unary_bool);
  unary(t, "bitwise_not", unary_bitwise);
  t.def("gelu(Tensor self, *, str approximate=\"none\") -> Tensor").tags(kPointwise | kCore)
      .meta(unary_floating_only).inplace("gelu_");
  t.def("gelu_(Tensor(a!) self, *, str approximate=\"none\") -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace);

  // Binary arithmetic.
  t.def("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
      .tags(kPointwise | kCore).meta(add_sub).inplace("add_.Tensor");
  t.def("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace);
  t.def("add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor")
      .tags(kPointwise | kCore).meta(add_sub_scalar).inplace("add_.Scalar");
  t.def("add_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace);
  t.def("sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
      .tags(kPointwise | kCore).meta(add_sub).inplace("sub_.Tensor");
  t.def("sub_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace);
  t.def("sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor")
      .tags(kPointwise | kCore).meta(add_sub_scalar).inplace("sub_.Scalar");
  t.def("sub_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace);
  t.def("rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor")
      .tags(kPointwise).meta(add_sub_scalar);
  t.def("mul.Tensor(Tensor self, Tensor other) -> Tensor")
      .tags(kPointwise | kCore).meta(binary).inplace("mul_.Tensor");
  t.def("mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace);
  t.def("mul.Scalar(Tensor self, Scalar other) -> Tensor")
      .tags(kPointwise | kCore).meta(binary_scalar).inplace("mul_.Scalar");
  t.def("mul_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace);
  t.def("div.Tensor(Tensor self, Tensor other) -> Tensor")
      .tags(kPointwise | kCore).meta(binary_float).inplace("div_.Tensor");
  t.def("div_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace);
  t.def("div.Scalar(Tensor self, Scalar other) -> Tensor")
      .tags(kPointwise | kCore).meta(div_scalar).inplace("div_.Scalar");
  t.def("div_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace);
  t.def("div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor")
      .tags(kPointwise | kCore).meta(div_mode).inplace("div_.Tensor_mode");
  t.def("div_.Tensor_mode(Tensor(a!) self, Tensor other, *, str? rounding_mode) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace);
  t.def("pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor")
      .tags(kPointwise | kCore).meta(pow_tensor_scalar).inplace("pow_.Scalar");
  t.def("pow_.Scalar(Tensor(a!) self, Scalar exponent) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace);
  t.def("pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor")
      .tags(kPointwise | kCore).meta(pow_tensor_tensor).inplace("pow_.Tensor");
  t.def("pow_.Tensor(Tensor(a!) self, Tensor exponent) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace);
  t.def("maximum(Tensor self, Tensor other) -> Tensor").tags(kPointwise | kCore).meta(binary);
  t.def("minimum(Tensor self, Tensor other) -> Tensor").tags(kPointwise | kCore).meta(binary);
  t.def("bitwise_and.Tensor(Tensor self, Tensor other) -> Tensor")
      .tags(kPointwise | kCore).meta(bitwise).inplace("bitwise_and_.Tensor");
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
      .tags(kPointwise | kInplace).meta(inplace_fill);
  t.def("masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor")
      .tags(kPointwise | kCore).meta(masked_fill).inplace("masked_fill_.Tensor");
  t.def("masked_fill_.Tensor(Tensor(a!) self, Tensor mask, Tensor value) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace_fill);
  t.def("fill.Scalar(Tensor self, Scalar value) -> Tensor")
      .tags(kPointwise | kCore).meta(like_self).inplace("fill_.Scalar");
  t.def("fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace_fill);
  t.def("fill.Tensor(Tensor self, Tensor value) -> Tensor")
      .tags(kPointwise | kCore).meta(like_self).inplace("fill_.Tensor");
  t.def("fill_.Tensor(Tensor(a!) self, Tensor value) -> Tensor(a!)")
      .tags(kPointwise | kInplace).meta(inplace_fill);
  t.def("zero_(Tensor(a!) self) -> Tensor(a!)").tags(kPointwise | kInplace).meta(inplace_fill);
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
      .tags(kPointwise | kCore | kBackward).meta(threshold_backward);
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
