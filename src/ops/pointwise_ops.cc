// aotgrad: pointwise ops -- unary, binary, comparison, ternary, their in-place variants and the
// pointwise backward kernels. Outputs are laid out as TensorIterator lays them out.
#include <cmath>

#include "aotgrad/ops/decomp_util.h"
#include "aotgrad/ops/derivative.h"
#include "aotgrad/ops/formula.h"
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
    throw Error(
        "Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
        "`^` or `logical_xor()` operator instead.");
  if (x.dtype == ScalarType::Bool || y.dtype == ScalarType::Bool)
    throw Error(
        "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
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

// --- meta functions ------------------------------------------------------------------------------

// What a unary op that keeps the dtype does with a bool input.
enum class BoolInput { kAllowed, kNeg, kRelu, kAbs };

// Unary ops that keep the dtype (abs, neg, relu, sign); abs, neg and relu refuse bool.
template <BoolInput kBool>
ValueMeta unary_same(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  if (x.dtype == ScalarType::Bool) {
    if constexpr (kBool == BoolInput::kNeg)
      throw Error(
          "Negation, the `-` operator, on a bool tensor is not supported. If you are "
          "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
    if constexpr (kBool == BoolInput::kRelu) throw Error("Boolean inputs not supported for relu");
    if constexpr (kBool == BoolInput::kAbs) not_implemented("abs_cpu", x.dtype);
  }
  return one(tensor_iterator_output({&x}, x.dtype));
}

// A unary op's result: self's dtype, TensorIterator's layout.
ValueMeta unary_same(const MetaArgs& a) {
  return one(tensor_iterator_output({&a.tensor(0)}, a.tensor(0).dtype));
}

// Unary ops whose CPU kernel (named in the error) exists for floating types only and keeps the
// dtype (silu, gelu).
ValueMeta unary_floating_only(const MetaArgs& a, const char* kernel) {
  const TensorMeta& x = a.tensor(0);
  if (!is_floating(x.dtype) && !is_complex(x.dtype)) not_implemented(kernel, x.dtype);
  return unary_same(a);
}
ValueMeta silu_meta(const MetaArgs& a) { return unary_floating_only(a, "silu"); }
ValueMeta gelu_meta(const MetaArgs& a) {
  std::string approximate = a.str(1);
  if (approximate != "none" && approximate != "tanh")
    throw Error("approximate argument must be either none or tanh.");
  return unary_floating_only(a, "GeluKernelImpl");
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

// add.Tensor / sub.Tensor (kSub) with alpha.
template <bool kSub>
ValueMeta add_sub(const MetaArgs& a) {
  const TensorMeta &x = a.tensor(0), &y = a.tensor(1);
  if constexpr (kSub) check_sub(x, y);
  ScalarType dt = result_type({&x, &y});
  check_alpha(dt, a.scalar(2));
  return one(tensor_iterator_output({&x, &y}, dt));
}

// add.Scalar / sub.Scalar / rsub.Scalar (kSub): ATen wraps `other` into a 0-dim tensor operand.
template <bool kSub>
ValueMeta add_sub_scalar(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  TensorMeta y = wrapped_scalar(a.scalar(1));
  if constexpr (kSub) check_sub(x, y);
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

// bitwise_and / bitwise_or: integral and bool only (the CPU kernel is <op>_cpu).
ValueMeta bitwise(const MetaArgs& a) {
  const TensorMeta &x = a.tensor(0), &y = a.tensor(1);
  ScalarType dt = result_type({&x, &y});
  if (!is_integral(dt, /*include_bool=*/true)) not_implemented(a.op().base_name + "_cpu", dt);
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
    throw Error("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '" +
                mode + "'");
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

// fill.Scalar / fill.Tensor / zero: empty_like(self) filled; a value tensor must be 0-dim.
ValueMeta like_self(const MetaArgs& a) {
  if (a.size() > 1 && a.op().schema.args[1].type.base == BaseType::Tensor && a.tensor(1).dim() != 0)
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

// hardswish, hardsigmoid and their backwards: CPU kernels for the floating types only.
ValueMeta floating_kernel(ValueMeta m, const char* kernel) {
  if (!is_floating(m.tensor.dtype)) not_implemented(kernel, m.tensor.dtype);
  return m;
}
ValueMeta hardswish_meta(const MetaArgs& a) {
  return floating_kernel(unary_same(a), "hardswish_cpu");
}
ValueMeta hardsigmoid_meta(const MetaArgs& a) {
  return floating_kernel(unary_same(a), "hardsigmoid_cpu");
}
ValueMeta hardswish_backward_meta(const MetaArgs& a) {
  return floating_kernel(backward_binary(a), "hardswish_backward_cpu");
}
ValueMeta hardsigmoid_backward_meta(const MetaArgs& a) {
  return floating_kernel(backward_binary(a), "hardsigmoid_backward");
}

// hardtanh(self, min_val, max_val): at::native::hardtanh -- clamp_out into empty_like(self), the
// limits cast to integers for an integral self (no type promotion).
ValueMeta hardtanh(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  if (x.dtype == ScalarType::Bool) throw Error("Bool inputs not supported for hardtanh");
  if (x.dtype == ScalarType::UInt8) {
    ScalarValue lo = a.scalar(1), hi = a.scalar(2);
    auto as_long = [](const ScalarValue& v) {
      return v.kind == ScalarValue::Kind::Float ? static_cast<int64_t>(v.f) : v.i;
    };
    if (as_long(lo) < 0 || as_long(hi) < 0)
      throw Error("cannot do hardtanh on an unsigned type with negative limits");
  }
  return one(meta::empty_like(x));
}

// hardtanh_backward(grad_output, self, min_val, max_val): a binary TensorIterator whose CPU kernel
// (shared with hardshrink_backward) has the floating types only.
ValueMeta hardtanh_backward(const MetaArgs& a) {
  const TensorMeta &g = a.tensor(0), &x = a.tensor(1);
  ScalarType dt = result_type({&g, &x});
  if (!is_floating(dt)) not_implemented("hardshrink_backward_cpu", dt);
  return one(tensor_iterator_output({&g, &x}, dt));
}

// threshold_backward's TensorIterator takes `self` before `grad_output`, so self's layout leads.
ValueMeta threshold_backward(const MetaArgs& a) {
  const TensorMeta &g = a.tensor(0), &x = a.tensor(1);
  return one(tensor_iterator_output({&x, &g}, result_type({&x, &g})));
}

// --- derivative helpers (FunctionsManual.cpp)
// ------------------------------------------------------ The formulas are at the declarations (see
// Note [Derivative formulas]); these are the named functions they call, emitting what PyTorch's
// AOTAutograd traces for them.

using V = FormulaValue;
using Vs = std::vector<FormulaValue>;

Node* call(GradBuilder& b, std::string_view op, std::vector<Arg> args) {
  return b.call(op, std::move(args));
}
Node* mul(GradBuilder& b, const Arg& x, const Arg& y) { return call(b, "mul.Tensor", {x, y}); }
Node* mul_s(GradBuilder& b, Node* x, const Arg& s) { return call(b, "mul.Scalar", {Arg(x), s}); }
Node* neg(GradBuilder& b, Node* x) { return call(b, "neg.default", {Arg(x)}); }

// at::scalar_tensor(s, t.options()) and at::zeros_like(t, t.options().dtype(dt)): options as a C++
// formula passes them (dtype, layout and device set).
std::vector<std::pair<std::string, Arg>> options(ScalarType dtype, Device device) {
  return {{"dtype", Arg::of_dtype(dtype)},
          {"layout", Arg::of_layout(Layout::Strided)},
          {"device", Arg::of_device(device)}};
}
Node* scalar_tensor(GradBuilder& b, const Arg& s, const TensorMeta& like) {
  return b.call("scalar_tensor.default", {s}, options(like.dtype, like.device));
}

// `s - t` and `s / t` for a Scalar s: at::empty_like(t).fill_(s).sub_(t) / .div_(t).
Node* filled_like(GradBuilder& b, Node* t, const Arg& s) {
  Node* e = b.call("empty_like.default", {Arg(t)},
                   {{"memory_format", Arg::of_memory_format(MemoryFormat::Preserve)}});
  return call(b, "fill.Scalar", {Arg(e), s});
}
Node* rsub_s(GradBuilder& b, const Arg& s, Node* t) {
  return call(b, "sub.Tensor", {Arg(filled_like(b, t, s)), Arg(t)});
}
Node* rdiv_s(GradBuilder& b, const Arg& s, Node* t) {
  return call(b, "div.Tensor", {Arg(filled_like(b, t, s)), Arg(t)});
}

// A comparison `x op y`: the .Tensor overload, or .Scalar when y is a number.
Node* cmp(GradBuilder& b, const char* op, const Arg& x, const Arg& y) {
  return call(b, std::string(op) + (y.is_node() ? ".Tensor" : ".Scalar"), {x, y});
}

// sgn_backward(self, grad, result): for a real self, at::_efficientzerotensor(sgn.sizes(),
// sgn.options()); a ZeroTensor is a dispatch wrapper the interpreter does not keep, so the zeros
// are materialized with at::zeros (the result's sizes and options only: it is not saved).
V sgn_backward(GradBuilder& b, Vs& a) {
  const TensorMeta& r = a[2].meta();
  return V::tensor(b.call("zeros.default", {b.sizes_arg(r.sizes, const_cast<Node*>(&b.node()))},
                          options(r.dtype, r.device)));
}

// log1p_backward(grad, self) = grad / (self + 1).conj()
V log1p_backward(GradBuilder& b, Vs& a) {
  Node* p = call(b, "add.Scalar", {a[1].arg, Arg::of_int(1)});
  return V::tensor(call(b, "div.Tensor", {Arg(a[0].node()), Arg(p)}));
}

// maybe_multiply(t, s): t itself when the Scalar s is 1, else t * s.
V maybe_multiply(GradBuilder& b, Vs& a) {
  const Arg& s = a[1].arg;
  bool one = (s.kind == Arg::Kind::Int || s.kind == Arg::Kind::Bool) ? s.i == 1
             : s.kind == Arg::Kind::Float                            ? s.f == 1.0
                                                                     : false;
  return one ? a[0] : V::tensor(mul_s(b, a[0].node(), s));
}

bool has_rounding_mode(const Vs& a, size_t i) { return a.size() > i && !a[i].is_none(); }

// div_tensor_self_backward(grad, other, self_st, rounding_mode) = grad / other.conj(); with a
// rounding mode, zeros in self's dtype.
V div_tensor_self_backward(GradBuilder& b, Vs& a) {
  Node* grad = a[0].node();
  if (has_rounding_mode(a, 3)) {
    const TensorMeta& g = grad->tensor_meta();
    return V::tensor(b.call("zeros_like.default", {Arg(grad)},
                            options(static_cast<ScalarType>(a[2].arg.i), g.device)));
  }
  const char* op = a[1].kind == V::Kind::kScalar ? "div.Scalar" : "div.Tensor";
  return V::tensor(call(b, op, {Arg(grad), a[1].arg}));
}

// div_tensor_other_backward(grad, self, other, rounding_mode) = -grad * ((self / other) / other)
// .conj(); with a rounding mode, zeros in other's dtype.
V div_tensor_other_backward(GradBuilder& b, Vs& a) {
  Node* grad = a[0].node();
  if (has_rounding_mode(a, 3)) {
    const TensorMeta& other = a[2].meta();
    return V::tensor(b.call("zeros_like.default", {Arg(grad)}, options(other.dtype, other.device)));
  }
  Node* q = call(b, "div.Tensor", {a[1].arg, a[2].arg});
  Node* q2 = call(b, "div.Tensor", {Arg(q), a[2].arg});
  return V::tensor(mul(b, Arg(neg(b, grad)), Arg(q2)));
}

// pow_backward(grad, self, exponent) = zeros_like(self) for exponent 0, else
// grad * (exponent * self.pow(exponent - 1)).conj() (exponent as a double)
V pow_backward(GradBuilder& b, Vs& a) {
  double e = a[2].to_double();
  if (e == 0.0)
    return V::tensor(b.call("zeros_like.default", {a[1].arg},
                            {{"memory_format", Arg::of_memory_format(MemoryFormat::Contiguous)}}));
  Node* p = call(b, "pow.Tensor_Scalar", {a[1].arg, Arg::of_float(e - 1)});
  Node* k = mul_s(b, p, Arg::of_float(e));
  return V::tensor(mul(b, Arg(a[0].node()), Arg(k)));
}

// pow_backward_self(grad, self, exponent)
//   = where(exponent == 0.0, scalar_tensor(0.0), grad * (exponent * self.pow(exponent - 1)))
V pow_backward_self(GradBuilder& b, Vs& a) {
  Node* grad = a[0].node();
  const Arg &self = a[1].arg, &exponent = a[2].arg;
  Node* em1 = call(b, "sub.Scalar", {exponent, Arg::of_int(1)});
  Node* p = call(b, "pow.Tensor_Tensor", {self, Arg(em1)});
  Node* k = mul(b, exponent, Arg(p));
  Node* g = mul(b, Arg(grad), Arg(k));
  Node* zero = scalar_tensor(b, Arg::of_float(0.0), grad->tensor_meta());
  Node* eq = cmp(b, "eq", exponent, Arg::of_float(0.0));
  return V::tensor(call(b, "where.self", {Arg(eq), Arg(zero), Arg(g)}));
}

// pow_backward_exponent(grad, self, exponent, result)
//   = grad * where(self == 0 & exponent >= 0, scalar_tensor(0.0), result * self.to(dt).log())
V pow_backward_exponent(GradBuilder& b, Vs& a) {
  Node* result = a[3].node();
  Node* grad = a[0].node();
  const Arg& exponent = a[2].arg;
  Arg self = a[1].arg;
  Node* ge = cmp(b, "ge", exponent, Arg::of_int(0));
  Node* eq = cmp(b, "eq", self, Arg::of_int(0));
  Node* cond = call(b, "logical_and.default", {Arg(eq), Arg(ge)});
  ScalarType dt = result->tensor_meta().dtype;  // result_type(self, exponent)
  if (self.is_node() && self.node->tensor_meta().dtype != dt)
    self = Arg(b.call("_to_copy.default", {self}, {{"dtype", Arg::of_dtype(dt)}}));
  Node* log = call(b, "log.default", {self});
  Node* rl = mul(b, Arg(result), Arg(log));
  Node* zero = scalar_tensor(b, Arg::of_float(0.0), grad->tensor_meta());
  Node* w = call(b, "where.self", {Arg(cond), Arg(zero), Arg(rl)});
  return V::tensor(mul(b, Arg(grad), Arg(w)));
}

// clamp_backward(grad, self, min, max)
//   = where((self >= min).logical_and_(self <= max), grad, scalar_tensor(0.)) (one bound: that one)
V clamp_backward(GradBuilder& b, Vs& a) {
  Node* grad = a[0].node();
  bool has_min = !a[2].is_none();
  bool has_max = !a[3].is_none();
  if (!has_min && !has_max) return a[0];
  Node* zero = scalar_tensor(b, Arg::of_float(0.0), grad->tensor_meta());
  Node* cond = nullptr;
  if (has_min) cond = call(b, "ge.Scalar", {a[1].arg, a[2].arg});
  if (has_max) {
    Node* le = call(b, "le.Scalar", {a[1].arg, a[3].arg});
    cond = cond ? call(b, "logical_and.default", {Arg(cond), Arg(le)}) : le;
  }
  return V::tensor(call(b, "where.self", {Arg(cond), Arg(grad), Arg(zero)}));
}

// masked_fill_backward(grad, mask) = at::where(mask, grad, 0).sum()
V masked_fill_backward(GradBuilder& b, Vs& a) {
  Node* grad = a[0].node();
  Node* zero = scalar_tensor(b, Arg::of_int(0), grad->tensor_meta());
  Node* w = call(b, "where.self", {a[1].arg, Arg(grad), Arg(zero)});
  return V::tensor(call(b, "sum.default", {Arg(w)}));
}

// gelu_double_backward(ggI, gO, self, approximate) = ggI * gO * gelu''(self)
V gelu_double_backward(GradBuilder& b, Vs& a) {
  Node* x = a[2].node();
  Node* d2;  // gelu''(x)
  if (a[3].arg.kind == Arg::Kind::Str && a[3].arg.str == "tanh") {
    constexpr double kBeta = M_SQRT2 * M_2_SQRTPI * 0.5;
    constexpr double kKappa = 0.044715;
    Node* cube = call(b, "pow.Tensor_Scalar", {Arg(x), Arg::of_int(3)});
    Node* inner = call(b, "add.Tensor", {Arg(x), Arg(mul_s(b, cube, Arg::of_float(kKappa)))});
    inner = mul_s(b, inner, Arg::of_float(kBeta));
    Node* tanh_inner = call(b, "tanh.default", {Arg(inner)});
    Node* sech = rdiv_s(b, Arg::of_int(1), call(b, "cosh.default", {Arg(inner)}));
    Node* left = mul_s(b, x, Arg::of_float(0.5));
    Node* right_derivative = rsub_s(b, Arg::of_int(1), mul(b, Arg(tanh_inner), Arg(tanh_inner)));
    Node* x3k = mul(b, Arg(mul_s(b, x, Arg::of_float(3 * kKappa))), Arg(x));
    Node* inner_derivative =
        mul_s(b, call(b, "add.Scalar", {Arg(x3k), Arg::of_int(1)}), Arg::of_float(kBeta));
    Node* left_derivative =
        mul(b, Arg(mul_s(b, right_derivative, Arg::of_float(0.5))), Arg(inner_derivative));
    Node* sech_tanh = mul(b, Arg(neg(b, sech)), Arg(tanh_inner));
    Node* dright = mul(b, Arg(mul(b, Arg(mul_s(b, sech, Arg::of_int(2))), Arg(sech_tanh))),
                       Arg(inner_derivative));
    Node* term2 = mul(b, Arg(mul(b, Arg(left), Arg(inner_derivative))), Arg(dright));
    Node* dinner = mul_s(b, mul_s(b, x, Arg::of_float(6 * kKappa)), Arg::of_float(kBeta));
    Node* term3 = mul(b, Arg(mul(b, Arg(left), Arg(right_derivative))), Arg(dinner));
    Node* term1 = mul_s(b, left_derivative, Arg::of_int(2));
    d2 = call(b, "add.Tensor", {Arg(call(b, "add.Tensor", {Arg(term1), Arg(term2)})), Arg(term3)});
  } else {
    constexpr double kBeta = M_2_SQRTPI * M_SQRT1_2 * 0.5;
    Node* sq = mul(b, Arg(x), Arg(x));
    Node* pdf = mul_s(b, call(b, "exp.default", {Arg(mul_s(b, sq, Arg::of_float(-0.5)))}),
                      Arg::of_float(kBeta));
    Node* sq_pdf = mul(b, Arg(sq), Arg(pdf));
    d2 = call(b, "sub.Tensor", {Arg(mul_s(b, pdf, Arg::of_int(2))), Arg(sq_pdf)});
  }
  return V::tensor(mul(b, Arg(mul(b, Arg(a[0].node()), a[1].arg)), Arg(d2)));
}

void add_pointwise_grad_helpers() {
  add_grad_helper("sgn_backward", sgn_backward);
  add_grad_helper("log1p_backward", log1p_backward);
  add_grad_helper("maybe_multiply", maybe_multiply);
  add_grad_helper("div_tensor_self_backward", div_tensor_self_backward);
  add_grad_helper("div_tensor_other_backward", div_tensor_other_backward);
  add_grad_helper("pow_backward", pow_backward);
  add_grad_helper("pow_backward_self", pow_backward_self);
  add_grad_helper("pow_backward_exponent", pow_backward_exponent);
  add_grad_helper("clamp_backward", clamp_backward);
  add_grad_helper("masked_fill_backward", masked_fill_backward);
  add_grad_helper("gelu_double_backward", gelu_double_backward);
}

// --- registration helpers
// -------------------------------------------------------------------------

// Declares `name(Tensor self) -> Tensor` and `name_(Tensor(a!) self) -> Tensor(a!)`, linked;
// returns the functional op's builder (for its derivative).
OpDefBuilder unary(OpTable& t, const std::string& name, MetaFn fn, uint32_t tags = kCore) {
  OpDefBuilder f =
      t.def(name + "(Tensor self) -> Tensor").tags(kPointwise | tags).meta(fn).inplace(name + "_");
  t.def(name + "_(Tensor(a!) self) -> Tensor(a!)").tags(kPointwise | kInplace).meta(inplace);
  return f;
}

}  // namespace

// --- decompositions (torch/_decomp, torch/_refs, CompositeImplicitAutograd kernels) ----------

namespace decomps {
namespace {

// torch/_refs gelu (elementwise type promotion DEFAULT: computed in opmath):
//   none: a * 0.5 * (1 + erf(a * M_SQRT1_2))
//   tanh: 0.5 * a * (1 + tanh(kBeta * (a + kKappa * a * a * a))), kBeta = sqrt(2 / pi)
Arg gelu_full_decomp(DecompBuilder& b) {
  Ops o(b);
  Node* x = b.input(0);
  std::string approximate = str_arg(b, 1);
  AOTGRAD_CHECK(approximate == "none" || approximate == "tanh", b.node().describe(),
                ": approximate argument must be either none or tanh.");
  auto [compute, result] = elementwise_dtypes({x});
  Node* a = o.to(x, compute);
  Node* out;
  if (approximate == "tanh") {
    const double beta = kSqrt2 * kTwoSqrtPi * 0.5, kappa = 0.044715;
    Node* cube = o.mul(Arg(o.mul(Arg(a), Arg(a))), Arg(a));
    Node* inner = o.mul(Arg(o.add(Arg(a), Arg(o.mul(Arg(cube), f(kappa))))), f(beta));
    Node* half = o.mul(Arg(a), f(0.5));
    out = o.mul(Arg(half), Arg(o.add(Arg(o.unary("tanh.default", inner)), i(1))));
  } else {
    Node* half = o.mul(Arg(a), f(0.5));
    Node* erf = o.unary("erf.default", o.mul(Arg(a), f(kSqrt1_2)));
    out = o.mul(Arg(half), Arg(o.add(Arg(erf), i(1))));
  }
  return Arg(o.to(out, result));
}

// torch/_decomp silu (pw_cast_for_opmath): self * sigmoid(self).
Arg silu_full_decomp(DecompBuilder& b) {
  Ops o(b);
  Node* x = b.input(0);
  auto [compute, result] = elementwise_dtypes({x});
  Node* a = o.to(x, compute);
  return Arg(o.to(o.mul(Arg(a), Arg(o.unary("sigmoid.default", a))), result));
}

// torch/_decomp gelu_backward (pw_cast_for_opmath):
//   none: grad * (cdf + self * pdf), cdf = 0.5 * (1 + erf(self * M_SQRT1_2)),
//         pdf = kBeta * exp(self * self * -0.5), kBeta = M_2_SQRTPI * M_SQRT1_2 * 0.5
//   tanh: grad * (0.5 * (1 + tanh(inner)) + 0.5 * self * (1 - tanh(inner)^2) * kBeta *
//         (1 + 3 * kKappa * self^2)), inner = kBeta * (self + kKappa * self^3)
Arg gelu_backward_full_decomp(DecompBuilder& b) {
  Ops o(b);
  Node* grad = b.input(0);
  Node* x = b.input(1);
  std::string approximate = str_arg(b, 2);
  auto [compute, result] = elementwise_dtypes({grad, x});
  grad = o.to(grad, compute);
  Node* self = o.to(x, compute);
  Node* out;
  if (approximate == "tanh") {
    const double beta = kSqrt2 * kTwoSqrtPi * 0.5, kappa = 0.044715;
    Node* x_sq = o.mul(Arg(self), Arg(self));
    Node* x_cube = o.mul(Arg(x_sq), Arg(self));
    Node* inner = o.mul(Arg(o.add(Arg(self), Arg(o.mul(Arg(x_cube), f(kappa))))), f(beta));
    Node* tanh_inner = o.unary("tanh.default", inner);
    Node* left = o.mul(Arg(self), f(0.5));
    Node* right = o.add(Arg(tanh_inner), i(1));
    Node* left_derivative = o.mul(Arg(right), f(0.5));
    Node* tanh_derivative = o.rsub(o.mul(Arg(tanh_inner), Arg(tanh_inner)), i(1));
    Node* inner_derivative = o.mul(Arg(o.add(Arg(o.mul(Arg(x_sq), f(3 * kappa))), i(1))), f(beta));
    Node* right_derivative =
        o.mul(Arg(o.mul(Arg(left), Arg(tanh_derivative))), Arg(inner_derivative));
    out = o.mul(Arg(grad), Arg(o.add(Arg(left_derivative), Arg(right_derivative))));
  } else {
    const double beta = kTwoSqrtPi * kSqrt1_2 * 0.5;
    Node* cdf =
        o.mul(Arg(o.add(Arg(o.unary("erf.default", o.mul(Arg(self), f(kSqrt1_2)))), i(1))), f(0.5));
    Node* pdf = o.mul(Arg(o.unary("exp.default", o.mul(Arg(o.mul(Arg(self), Arg(self))), f(-0.5)))),
                      f(beta));
    out = o.mul(Arg(grad), Arg(o.add(Arg(cdf), Arg(o.mul(Arg(self), Arg(pdf))))));
  }
  return Arg(o.to(out, result));
}

// torch/_decomp threshold_backward (pw_cast_for_opmath): where(self <= threshold, 0, grad_output).
// The 0 is a 0-dim tensor of the computation dtype (scalar_tensor), as where.self takes tensors.
Arg threshold_backward_full_decomp(DecompBuilder& b) {
  Ops o(b);
  auto [compute, result] = elementwise_dtypes({b.input(0), b.input(1)});
  Node* grad_output = o.to(b.input(0), compute);
  Node* self = o.to(b.input(1), compute);
  Node* le = b.call("le.Scalar", {Arg(self), b.arg(2)});
  Node* zero = o.scalar_tensor(0.0, compute, grad_output->tensor_meta().device);
  return Arg(o.to(b.call("where.self", {Arg(le), Arg(zero), Arg(grad_output)}), result));
}

// torch/_decomp hardtanh_backward (pw_cast_for_opmath):
//   where((self <= min_val) | (self >= max_val), 0.0, grad_output)
Arg hardtanh_backward_full_decomp(DecompBuilder& b) {
  Ops o(b);
  auto [compute, result] = elementwise_dtypes({b.input(0), b.input(1)});
  Node* grad_output = o.to(b.input(0), compute);
  Node* self = o.to(b.input(1), compute);
  Node* le = b.call("le.Scalar", {Arg(self), b.arg(2)});
  Node* ge = b.call("ge.Scalar", {Arg(self), b.arg(3)});
  Node* out_of_range = b.call("bitwise_or.Tensor", {Arg(le), Arg(ge)});
  Node* zero = o.scalar_tensor(0.0, compute, grad_output->tensor_meta().device);
  return Arg(o.to(b.call("where.self", {Arg(out_of_range), Arg(zero), Arg(grad_output)}), result));
}

// torch/_decomp silu_backward (pw_cast_for_opmath):
//   sigmoid = 1 / (1 + exp(-self)); grad_output * sigmoid * (1 + self * (1 - sigmoid))
Arg silu_backward_full_decomp(DecompBuilder& b) {
  Ops o(b);
  auto [compute, result] = elementwise_dtypes({b.input(0), b.input(1)});
  Node* grad_output = o.to(b.input(0), compute);
  Node* self = o.to(b.input(1), compute);
  Node* denom = o.add(Arg(o.unary("exp.default", o.unary("neg.default", self))), i(1));
  Node* sigmoid = o.mul(Arg(o.unary("reciprocal.default", denom)), i(1));
  Node* lhs = o.mul(Arg(grad_output), Arg(sigmoid));
  Node* rhs = o.add(Arg(o.mul(Arg(self), Arg(o.rsub(sigmoid, i(1))))), i(1));
  return Arg(o.to(o.mul(Arg(lhs), Arg(rhs)), result));
}

// torch/_decomp tanh_backward (pw_cast_for_opmath): out_grad * (1 - y * y) (conj_physical of a
// real tensor is itself).
Arg tanh_backward_full_decomp(DecompBuilder& b) {
  Ops o(b);
  auto [compute, result] = elementwise_dtypes({b.input(0), b.input(1)});
  Node* out_grad = o.to(b.input(0), compute);
  Node* y = o.to(b.input(1), compute);
  return Arg(o.to(o.mul(Arg(out_grad), Arg(o.rsub(o.mul(Arg(y), Arg(y)), i(1)))), result));
}

// torch/_decomp sigmoid_backward (pw_cast_for_opmath): out_grad * (y * (1 - y)).
Arg sigmoid_backward_full_decomp(DecompBuilder& b) {
  Ops o(b);
  auto [compute, result] = elementwise_dtypes({b.input(0), b.input(1)});
  Node* out_grad = o.to(b.input(0), compute);
  Node* y = o.to(b.input(1), compute);
  return Arg(o.to(o.mul(Arg(out_grad), Arg(o.mul(Arg(y), Arg(o.rsub(y, i(1)))))), result));
}

}  // namespace
}  // namespace decomps

void register_pointwise_ops(OpTable& t) {
  add_pointwise_grad_helpers();
  // Unary.
  unary(t, "abs", unary_same<BoolInput::kAbs>).derivative(formula("self: grad * self.sgn()"));
  unary(t, "sgn", unary_same<BoolInput::kAllowed>, /*tags=*/0)
      .derivative(formula("self: sgn_backward(self, grad, result)"));
  unary(t, "neg", unary_same<BoolInput::kNeg>).derivative(formula("self: grad.neg()"));
  unary(t, "sign", unary_same<BoolInput::kAllowed>).derivative(formula("self: zeros_like(grad)"));
  unary(t, "relu", unary_same<BoolInput::kRelu>)
      .derivative(formula("self: threshold_backward(grad, result, 0)"));
  unary(t, "exp", unary_float).derivative(formula("self: grad * result.conj()"));
  unary(t, "log", unary_float).derivative(formula("self: grad.div(self.conj())"));
  unary(t, "log1p", unary_float).derivative(formula("self: log1p_backward(grad, self)"));
  unary(t, "expm1", unary_float).derivative(formula("self: grad * (result.conj() + 1)"));
  // derivatives.yaml: grad * result.conj() * M_LN2.
  unary(t, "exp2", unary_float, /*tags=*/0)
      .derivative(formula("self: grad * result.conj() * 0.6931471805599453"));
  unary(t, "sqrt", unary_float).derivative(formula("self: grad / (2 * result.conj())"));
  unary(t, "rsqrt", unary_float).derivative(formula("self: -0.5 * grad * result.pow(3).conj()"));
  unary(t, "reciprocal", unary_float).derivative(formula("self: -grad * (result * result).conj()"));
  unary(t, "sin", unary_float).derivative(formula("self: grad * self.cos().conj()"));
  unary(t, "cos", unary_float).derivative(formula("self: grad * -self.sin().conj()"));
  unary(t, "sinh", unary_float).derivative(formula("self: grad * self.cosh().conj()"));
  unary(t, "cosh", unary_float).derivative(formula("self: grad * self.sinh().conj()"));
  unary(t, "asin", unary_float)
      .derivative(formula("self: grad * (-self * self + 1).rsqrt().conj()"));
  unary(t, "acos", unary_float)
      .derivative(formula("self: grad * -((-self * self + 1).rsqrt()).conj()"));
  unary(t, "atan", unary_float).derivative(formula("self: grad / (self * self + 1).conj()"));
  unary(t, "tanh", unary_float).derivative(formula("self: tanh_backward(grad, result)"));
  unary(t, "sigmoid", unary_float).derivative(formula("self: sigmoid_backward(grad, result)"));
  unary(t, "erf", unary_float)
      .derivative(formula("self: 2.0 / sqrt(M_PI) * exp(-(self.pow(2))) * grad"));
  unary(t, "silu", silu_meta, /*tags=*/0)
      .derivative(formula("self: silu_backward(grad, self)"))
      .decomposition(decomp(decomps::silu_full_decomp, kFullTable, "torch/_decomp: silu"));
  unary(t, "hardswish", hardswish_meta, /*tags=*/0)
      .derivative(formula("self: hardswish_backward(grad, self)"));
  unary(t, "hardsigmoid", hardsigmoid_meta, /*tags=*/0)
      .derivative(formula("self: hardsigmoid_backward(grad, self)"));
  unary(t, "logical_not", unary_bool).non_differentiable();
  unary(t, "bitwise_not", unary_bitwise).non_differentiable();
  t.def("gelu(Tensor self, *, str approximate=\"none\") -> Tensor")
      .tags(kPointwise | kCore)
      .meta(gelu_meta)
      .inplace("gelu_")
      .derivative(formula("self: gelu_backward(grad, self, approximate)"))
      .decomposition(decomp(decomps::gelu_full_decomp, kFullTable, "torch/_refs: gelu"));
  t.def("gelu_(Tensor(a!) self, *, str approximate=\"none\") -> Tensor(a!)")
      .tags(kPointwise | kInplace)
      .meta(inplace);

  // Binary arithmetic.
  t.def("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
      .identity({/*value=*/0, /*commutes=*/true, /*alpha_arg=*/2})
      .tags(kPointwise | kCore)
      .meta(add_sub<false>)
      .inplace("add_.Tensor")
      .derivative(formula("self: grad; other: maybe_multiply(grad, alpha.conj())"));
  t.def("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)")
      .tags(kPointwise | kInplace)
      .meta(inplace);
  t.def("add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor")
      .identity({/*value=*/0, /*commutes=*/true, /*alpha_arg=*/2})
      .tags(kPointwise | kCore)
      .meta(add_sub_scalar<false>)
      .inplace("add_.Scalar")
      .derivative(formula("self: grad"));
  t.def("add_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)")
      .tags(kPointwise | kInplace)
      .meta(inplace);
  t.def("sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
      .identity({/*value=*/0, /*commutes=*/false, /*alpha_arg=*/2, /*negates=*/true})
      .tags(kPointwise | kCore)
      .meta(add_sub<true>)
      .inplace("sub_.Tensor")
      .derivative(formula("self: grad; other: maybe_multiply(-grad, alpha.conj())"));
  t.def("sub_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)")
      .tags(kPointwise | kInplace)
      .meta(inplace);
  t.def("sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor")
      .identity({/*value=*/0, /*commutes=*/false, /*alpha_arg=*/2, /*negates=*/true})
      .tags(kPointwise | kCore)
      .meta(add_sub_scalar<true>)
      .inplace("sub_.Scalar")
      .derivative(formula("self: grad"));
  t.def("sub_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)")
      .tags(kPointwise | kInplace)
      .meta(inplace);
  t.def("rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor")
      .tags(kPointwise)
      .meta(add_sub_scalar<true>)
      .derivative(formula("self: maybe_multiply(-grad, alpha.conj())"));
  t.def("mul.Tensor(Tensor self, Tensor other) -> Tensor")
      .identity({/*value=*/1, /*commutes=*/true})
      .tags(kPointwise | kCore)
      .meta(binary)
      .inplace("mul_.Tensor")
      .derivative(formula("self: grad * other.conj(); other: grad * self.conj()"));
  t.def("mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)")
      .tags(kPointwise | kInplace)
      .meta(inplace);
  t.def("mul.Scalar(Tensor self, Scalar other) -> Tensor")
      .identity({/*value=*/1, /*commutes=*/true})
      .tags(kPointwise | kCore)
      .meta(binary_scalar)
      .inplace("mul_.Scalar")
      .derivative(formula("self: grad * other.conj()"));
  t.def("mul_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)")
      .tags(kPointwise | kInplace)
      .meta(inplace);
  t.def("div.Tensor(Tensor self, Tensor other) -> Tensor")
      .identity({/*value=*/1})
      .tags(kPointwise | kCore)
      .meta(binary_float)
      .inplace("div_.Tensor")
      .derivative(formula("self: div_tensor_self_backward(grad, other, self.scalar_type()); "
                          "other: div_tensor_other_backward(grad, self, other)"));
  t.def("div_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)")
      .tags(kPointwise | kInplace)
      .meta(inplace);
  t.def("div.Scalar(Tensor self, Scalar other) -> Tensor")
      .identity({/*value=*/1})
      .tags(kPointwise | kCore)
      .meta(div_scalar)
      .inplace("div_.Scalar")
      .derivative(formula("self: div_tensor_self_backward(grad, other, self.scalar_type())"));
  t.def("div_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)")
      .tags(kPointwise | kInplace)
      .meta(inplace);
  t.def("div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor")
      .tags(kPointwise | kCore)
      .meta(div_mode)
      .inplace("div_.Tensor_mode")
      .derivative(formula("self: div_tensor_self_backward(grad, other, self.scalar_type(), "
                          "rounding_mode); "
                          "other: div_tensor_other_backward(grad, self, other, rounding_mode)"));
  t.def("div_.Tensor_mode(Tensor(a!) self, Tensor other, *, str? rounding_mode) -> Tensor(a!)")
      .tags(kPointwise | kInplace)
      .meta(inplace);
  t.def("pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor")
      .tags(kPointwise | kCore)
      .meta(pow_tensor_scalar)
      .inplace("pow_.Scalar")
      .derivative(formula("self: pow_backward(grad, self, exponent)"));
  t.def("pow_.Scalar(Tensor(a!) self, Scalar exponent) -> Tensor(a!)")
      .tags(kPointwise | kInplace)
      .meta(inplace);
  t.def("pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor")
      .tags(kPointwise | kCore)
      .meta(pow_tensor_tensor)
      .inplace("pow_.Tensor")
      .derivative(formula("self: pow_backward_self(grad, self, exponent); "
                          "exponent: pow_backward_exponent(grad, self, exponent, result)"));
  t.def("pow_.Tensor(Tensor(a!) self, Tensor exponent) -> Tensor(a!)")
      .tags(kPointwise | kInplace)
      .meta(inplace);
  t.def("maximum(Tensor self, Tensor other) -> Tensor")
      .tags(kPointwise | kCore)
      .meta(binary)
      .derivative(formula("self: at::where(self == other, grad / 2, grad)"
                          ".masked_fill_(self < other, 0); "
                          "other: at::where(self == other, grad / 2, grad)"
                          ".masked_fill_(self > other, 0)"));
  t.def("minimum(Tensor self, Tensor other) -> Tensor")
      .tags(kPointwise | kCore)
      .meta(binary)
      .derivative(formula("self: at::where(self == other, grad / 2, grad)"
                          ".masked_fill_(self > other, 0); "
                          "other: at::where(self == other, grad / 2, grad)"
                          ".masked_fill_(self < other, 0)"));
  t.def("bitwise_and.Tensor(Tensor self, Tensor other) -> Tensor")
      .tags(kPointwise | kCore)
      .meta(bitwise)
      .inplace("bitwise_and_.Tensor")
      .non_differentiable();
  t.def("bitwise_and_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)")
      .tags(kPointwise | kInplace)
      .meta(inplace);
  t.def("bitwise_or.Tensor(Tensor self, Tensor other) -> Tensor")
      .tags(kPointwise | kCore)
      .meta(bitwise)
      .inplace("bitwise_or_.Tensor")
      .non_differentiable();
  t.def("bitwise_or_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)")
      .tags(kPointwise | kInplace)
      .meta(inplace);
  t.def("clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor")
      .tags(kPointwise | kCore)
      .meta(clamp)
      .inplace("clamp_")
      .derivative(formula("self: clamp_backward(grad, self, min, max)"));
  t.def("clamp_(Tensor(a!) self, Scalar? min=None, Scalar? max=None) -> Tensor(a!)")
      .tags(kPointwise | kInplace)
      .meta(inplace);
  t.def("hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor")
      .tags(kPointwise | kCore)
      .meta(hardtanh)
      .inplace("hardtanh_")
      .derivative(formula("self: hardtanh_backward(grad, self, min_val, max_val)"));
  // The in-place variant's own rule reads the result (derivatives.yaml): a functionalized
  // hardtanh_ is differentiated by it (NodeInfo::inplace_derivative), so the backward keeps the
  // ReLU6 output the next convolution's backward reads anyway, not also its input.
  t.def("hardtanh_(Tensor(a!) self, Scalar min_val=-1, Scalar max_val=1) -> Tensor(a!)")
      .tags(kPointwise | kInplace)
      .meta(inplace)
      .derivative(formula("self: hardtanh_backward(grad, result, min_val, max_val)"));
  t.def("clamp_min(Tensor self, Scalar min) -> Tensor")
      .tags(kPointwise)
      .meta(clamp)
      .inplace("clamp_min_")
      .derivative(formula("self: where(self >= min, grad, at::scalar_tensor(0., grad.options()))"));
  t.def("clamp_min_(Tensor(a!) self, Scalar min) -> Tensor(a!)")
      .tags(kPointwise | kInplace)
      .meta(inplace);

  // Comparisons.
  for (const char* n : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    std::string s = n;
    t.def(s + ".Tensor(Tensor self, Tensor other) -> Tensor")
        .tags(kPointwise | kCore)
        .meta(compare)
        .inplace(s + "_.Tensor")
        .non_differentiable();
    t.def(s + "_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)")
        .tags(kPointwise | kInplace)
        .meta(inplace);
    t.def(s + ".Scalar(Tensor self, Scalar other) -> Tensor")
        .tags(kPointwise | kCore)
        .meta(compare_scalar)
        .inplace(s + "_.Scalar")
        .non_differentiable();
    t.def(s + "_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)")
        .tags(kPointwise | kInplace)
        .meta(inplace);
  }

  t.def("logical_and(Tensor self, Tensor other) -> Tensor")
      .tags(kPointwise | kCore)
      .meta(compare)
      .non_differentiable();

  // Selection and filling.
  t.def("where.self(Tensor condition, Tensor self, Tensor other) -> Tensor")
      .tags(kPointwise | kCore)
      .meta(where)
      // derivatives.yaml's where(condition, grad, 0) is where.ScalarOther, which makes the 0 a
      // scalar_tensor of grad's options.
      .derivative(formula("condition: non_differentiable; "
                          "self: where(condition, grad, at::scalar_tensor(0, grad.options())); "
                          "other: where(condition, at::scalar_tensor(0, grad.options()), grad)"));
  t.def("masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor")
      .tags(kPointwise | kCore)
      .meta(masked_fill)
      .inplace("masked_fill_.Scalar")
      .derivative(formula("self: grad.masked_fill(mask, 0); mask: non_differentiable"));
  t.def("masked_fill_.Scalar(Tensor(a!) self, Tensor mask, Scalar value) -> Tensor(a!)")
      .tags(kPointwise | kInplace)
      .meta(inplace_fill);
  t.def("masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor")
      .tags(kPointwise | kCore)
      .meta(masked_fill)
      .inplace("masked_fill_.Tensor")
      .derivative(formula("self: grad.masked_fill(mask, 0); "
                          "value: masked_fill_backward(grad, mask); mask: non_differentiable"));
  t.def("masked_fill_.Tensor(Tensor(a!) self, Tensor mask, Tensor value) -> Tensor(a!)")
      .tags(kPointwise | kInplace)
      .meta(inplace_fill);
  t.def("fill.Scalar(Tensor self, Scalar value) -> Tensor")
      .fill_from_arg(1)
      .tags(kPointwise | kCore)
      .meta(like_self)
      .inplace("fill_.Scalar")
      .derivative(formula("self: zeros_like(grad)"));
  t.def("fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)")
      .tags(kPointwise | kInplace)
      .meta(inplace_fill);
  t.def("fill.Tensor(Tensor self, Tensor value) -> Tensor")
      .tags(kPointwise | kCore)
      .meta(like_self)
      .inplace("fill_.Tensor")
      .derivative(formula("self: zeros_like(grad); value: grad.sum()"));
  t.def("fill_.Tensor(Tensor(a!) self, Tensor value) -> Tensor(a!)")
      .tags(kPointwise | kInplace)
      .meta(inplace_fill);
  t.def("zero(Tensor self) -> Tensor")
      .tags(kPointwise)
      .meta(like_self)
      .inplace("zero_")
      .derivative(formula("self: zeros_like(grad)"));
  t.def("zero_(Tensor(a!) self) -> Tensor(a!)").tags(kPointwise | kInplace).meta(inplace_fill);
  t.def("lerp.Scalar(Tensor self, Tensor end, Scalar weight) -> Tensor")
      .tags(kPointwise)
      .meta(lerp_scalar)
      .inplace("lerp_.Scalar")
      .derivative(formula("self: grad * (1 - weight.toDouble()); end: grad * weight.conj()"));
  t.def("lerp_.Scalar(Tensor(a!) self, Tensor end, Scalar weight) -> Tensor(a!)")
      .tags(kPointwise | kInplace)
      .meta(inplace);
  t.def("addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor")
      .tags(kPointwise)
      .meta(ternary)
      .inplace("addcmul_")
      .derivative(formula("self: grad; tensor1: grad * (tensor2 * value).conj(); "
                          "tensor2: grad * (tensor1 * value).conj()"));
  t.def(
       "addcmul_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor(a!)")
      .tags(kPointwise | kInplace)
      .meta(inplace);

  // Pointwise backward kernels.
  t.def("threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor")
      .tags(kPointwise | kCore | kBackward)
      .meta(threshold_backward)
      .derivative(formula("grad_output: threshold_backward(grad, self, threshold); "
                          "self: zeros_like(grad)"))
      .decomposition(decomp(decomps::threshold_backward_full_decomp, kFullTable,
                            "torch/_decomp: threshold_backward"));
  // Full table only, as threshold_backward: it is no composite op, and the interpreter runs its
  // one CPU kernel where the decomposition would run four (le, ge, bitwise_or, where).
  t.def(
       "hardtanh_backward(Tensor grad_output, Tensor self, Scalar min_val, Scalar max_val) -> "
       "Tensor")
      .tags(kPointwise | kBackward)
      .meta(hardtanh_backward)
      .derivative(formula("grad_output: hardtanh_backward(grad, self, min_val, max_val); "
                          "self: zeros_like(grad)"))
      .decomposition(decomp(decomps::hardtanh_backward_full_decomp, kFullTable,
                            "torch/_decomp: hardtanh_backward"));
  t.def("gelu_backward(Tensor grad_output, Tensor self, *, str approximate=\"none\") -> Tensor")
      .tags(kPointwise | kCore | kBackward)
      .meta(backward_binary)
      .derivative(formula("grad_output: gelu_backward(grad, self, approximate); "
                          "self: gelu_double_backward(grad, grad_output, self, approximate)"))
      .decomposition(
          decomp(decomps::gelu_backward_full_decomp, kFullTable, "torch/_decomp: gelu_backward"));
  t.def("sigmoid_backward(Tensor grad_output, Tensor output) -> Tensor")
      .tags(kPointwise | kCore | kBackward)
      .meta(backward_binary)
      .derivative(formula("grad_output: sigmoid_backward(grad, output.conj()); "
                          "output: grad.conj() * grad_output * (-2 * output.conj() + 1)"))
      .decomposition(decomp(decomps::sigmoid_backward_full_decomp, kFullTable,
                            "torch/_decomp: sigmoid_backward"));
  t.def("tanh_backward(Tensor grad_output, Tensor output) -> Tensor")
      .tags(kPointwise | kCore | kBackward)
      .meta(backward_binary)
      .derivative(formula("grad_output: tanh_backward(grad, output.conj()); "
                          "output: grad.conj() * (-2 * output.conj() * grad_output)"))
      .decomposition(
          decomp(decomps::tanh_backward_full_decomp, kFullTable, "torch/_decomp: tanh_backward"));
  t.def("hardswish_backward(Tensor grad_output, Tensor self) -> Tensor")
      .tags(kPointwise | kBackward)
      .meta(hardswish_backward_meta)
      .derivative(formula(
          "grad_output: hardswish_backward(grad, self); "
          "self: at::where(at::logical_and(-3.0 < self, self < 3.0), grad * grad_output / 3.0, "
          "at::scalar_tensor(0., self.options()))"));
  t.def("hardsigmoid_backward(Tensor grad_output, Tensor self) -> Tensor")
      .tags(kPointwise | kBackward)
      .meta(hardsigmoid_backward_meta)
      // As libtorch 1.13: "derivative for aten::hardsigmoid_backward is not implemented".
      .derivative(formula("grad_output, self: derivative_not_implemented()"));
  t.def("silu_backward(Tensor grad_output, Tensor self) -> Tensor")
      .tags(kPointwise | kBackward)
      .meta(backward_binary)
      // PyTorch has no derivative for it (autograd raises "derivative for aten::silu_backward is
      // not implemented"; silu's own rule switches to a differentiable formula when grad mode is
      // on), so differentiating it is an error here too.
      .derivative(formula("grad_output, self: derivative_not_implemented()"))
      .decomposition(
          decomp(decomps::silu_backward_full_decomp, kFullTable, "torch/_decomp: silu_backward"));
}

}  // namespace aotgrad
