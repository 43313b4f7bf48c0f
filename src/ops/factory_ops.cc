// aotgrad: factory ops (new tensors from sizes or from another tensor's metadata) and the random
// ops; dtype defaults and layouts follow ATen 1.13's TensorFactories.cpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "aotgrad/ops/derivative.h"
#include "aotgrad/ops/formula.h"
#include "aotgrad/ops/functionalization.h"
#include "aotgrad/ops/meta_util.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

using meta::one;

// Positions of the TensorOptions kwargs (dtype, layout, device, pin_memory) after `first`.
struct Options {
  std::optional<ScalarType> dtype;
  std::optional<Device> device;
};

Options options_at(const MetaArgs& a, size_t first) {
  if (auto layout = a.layout(first + 1); layout && *layout != Layout::Strided)
    throw Error("only the strided layout is supported, got " + std::string(torch_name(*layout)));
  return {a.dtype(first), a.device(first + 2)};
}

TensorMeta fresh(const SymIntVector& sizes, ScalarType dtype, std::optional<Device> device) {
  meta::check_non_negative_sizes(sizes);
  return meta::empty(sizes, dtype, device.value_or(Device{}));
}

// The error ATen's CPU kernels raise for a dtype they do not implement.
void check_floating(ScalarType t, const char* kernel) {
  if (!is_floating(t) && !is_complex(t)) {
    static const char* kC10Names[] = {"Byte",         "Char",          "Short", "Int",
                                      "Long",         "Half",          "Float", "Double",
                                      "ComplexFloat", "ComplexDouble", "Bool",  "BFloat16"};
    throw Error(std::string("\"") + kernel + "\" not implemented for '" +
                kC10Names[static_cast<int>(t)] + "'");
  }
}

// c10::checked_convert of a fill value to the destination dtype.
void check_fill_value(const ScalarValue& v, ScalarType t) {
  if (t == ScalarType::Bool || is_complex(t)) return;
  double d = v.to_double();
  if (std::isnan(d) || std::isinf(d)) {
    if (is_floating(t)) return;
  }
  double lo = 0, hi = 0;
  switch (t) {
    case ScalarType::UInt8: lo = 0, hi = 255; break;
    case ScalarType::Int8: lo = -128, hi = 127; break;
    case ScalarType::Int16: lo = -32768, hi = 32767; break;
    case ScalarType::Int32: lo = -2147483648.0, hi = 2147483647.0; break;
    case ScalarType::Int64: return;
    case ScalarType::Float16: lo = -65504, hi = 65504; break;
    case ScalarType::BFloat16:
    case ScalarType::Float32:
      lo = -static_cast<double>(std::numeric_limits<float>::max());
      hi = static_cast<double>(std::numeric_limits<float>::max());
      break;
    default: return;
  }
  if (!(d >= lo && d <= hi))
    throw Error("value cannot be converted to type " +
                std::string(is_floating(t) ? (t == ScalarType::Float16 ? "at::Half" : "float")
                                           : std::string(torch_name(t)) + "_t") +
                " without overflow");
}

// --- factories from sizes
// --------------------------------------------------------------------------

// empty.memory_format(size, *, dtype, layout, device, pin_memory, memory_format)
ValueMeta empty(const MetaArgs& a) {
  Options o = options_at(a, 1);
  SymIntVector sizes = a.int_list(0);
  TensorMeta out = fresh(sizes, o.dtype.value_or(kDefaultFloat), o.device);
  out.strides =
      meta::memory_format_strides(sizes, a.memory_format(5).value_or(MemoryFormat::Contiguous));
  return one(out);
}

// empty_strided(size, stride, *, dtype, layout, device, pin_memory)
ValueMeta empty_strided(const MetaArgs& a) {
  Options o = options_at(a, 2);
  SymIntVector sizes = a.int_list(0), strides = a.int_list(1);
  if (sizes.size() != strides.size())
    throw Error("dimensionality of sizes (" + std::to_string(sizes.size()) +
                ") must match dimensionality of strides (" + std::to_string(strides.size()) + ")");
  for (auto& s : strides)
    if (s.is_concrete() && s.value() < 0)
      throw Error("Storage size calculation overflowed with sizes=" + to_string(sizes) +
                  " and strides=" + to_string(strides));
  TensorMeta out = fresh(sizes, o.dtype.value_or(kDefaultFloat), o.device);
  out.strides = strides;
  return one(out);
}

// zeros / ones / rand / randn (size, *, dtype, layout, device, pin_memory)
ValueMeta sized(const MetaArgs& a) {
  Options o = options_at(a, 1);
  return one(fresh(a.int_list(0), o.dtype.value_or(kDefaultFloat), o.device));
}

ValueMeta rand(const MetaArgs& a) {
  ValueMeta r = sized(a);
  check_floating(r.tensor.dtype, "check_uniform_bounds");
  return r;
}

ValueMeta randn(const MetaArgs& a) {
  ValueMeta r = sized(a);
  check_floating(r.tensor.dtype, "normal_kernel_cpu");
  return r;
}

// full(size, fill_value, *, dtype, ...): without a dtype, bool fills give bool, integer fills
// int64, float fills the default float.
ValueMeta full(const MetaArgs& a) {
  Options o = options_at(a, 2);
  ScalarValue v = a.scalar(1);
  ScalarType dt = o.dtype.value_or(v.natural_type());
  check_fill_value(v, dt);
  return one(fresh(a.int_list(0), dt, o.device));
}

// scalar_tensor(s, *, dtype, ...): 0-dim, the default float unless a dtype is given.
ValueMeta scalar_tensor(const MetaArgs& a) {
  Options o = options_at(a, 1);
  return one(fresh({}, o.dtype.value_or(kDefaultFloat), o.device));
}

// arange(end) / arange.start(start, end) / arange.start_step(start, end, step), as arange_out:
// int64 when every bound is integral and no dtype is given; the length is computed in the
// accumulate type of the result dtype.
TensorMeta arange_impl(ScalarValue start, ScalarValue end, ScalarValue step,
                       std::optional<ScalarType> dtype, std::optional<Device> device) {
  auto integral = [](const ScalarValue& s) { return s.kind != ScalarValue::Kind::Float; };
  ScalarType dt = dtype                                                ? *dtype
                  : integral(start) && integral(end) && integral(step) ? ScalarType::Int64
                                                                       : kDefaultFloat;
  if (dt == ScalarType::Bool) throw Error("\"arange_cpu\" not implemented for 'Bool'");
  double size_d = 0;
  if (is_integral(dt, false)) {
    // accscalar_t is int64: the bounds are truncated first.
    auto as_int = [](const ScalarValue& s) {
      return s.kind == ScalarValue::Kind::Float ? static_cast<int64_t>(s.f) : s.i;
    };
    int64_t xs = as_int(start), xe = as_int(end), xst = as_int(step);
    if (xst == 0) throw Error("step must be nonzero");
    if (!((xst > 0 && xe >= xs) || (xst < 0 && xe <= xs)))
      throw Error("upper bound and larger bound inconsistent with step sign");
    size_d = dt == ScalarType::Int64
                 ? std::ceil(static_cast<double>(xe - xs) / static_cast<double>(xst))
                 : std::ceil((end.to_double() - start.to_double()) / step.to_double());
  } else {
    double xs = start.to_double(), xe = end.to_double(), xst = step.to_double();
    if (dt == ScalarType::Float16 || dt == ScalarType::BFloat16 || dt == ScalarType::Float32) {
      // f16/bf16 accumulate in float; the checks see float-rounded bounds.
      if (dt != ScalarType::Float32) {
        xs = static_cast<float>(xs), xe = static_cast<float>(xe), xst = static_cast<float>(xst);
      }
    }
    if (!(xst > 0 || xst < 0)) throw Error("step must be nonzero");
    if (!std::isfinite(xs) || !std::isfinite(xe)) {
      auto text = [](double v) {
        return std::isnan(v) ? std::string("nan")
               : v > 0       ? std::string("inf")
                             : std::string("-inf");
      };
      throw Error("unsupported range: " + (std::isfinite(xs) ? std::to_string(xs) : text(xs)) +
                  " -> " + (std::isfinite(xe) ? std::to_string(xe) : text(xe)));
    }
    if (!((xst > 0 && xe >= xs) || (xst < 0 && xe <= xs)))
      throw Error("upper bound and larger bound inconsistent with step sign");
    size_d = std::ceil((end.to_double() - start.to_double()) / step.to_double());
  }
  if (!(size_d >= 0 && size_d <= static_cast<double>(std::numeric_limits<int64_t>::max())))
    throw Error("invalid size, possible overflow?");
  return fresh({SymInt(static_cast<int64_t>(size_d))}, dt, device);
}

// arange with a symbolic bound (a SymInt node, as `arange(0, sym_size_int)` in a dynamic graph):
// integral bounds, length ceil((end - start) / step) over SymInt; nullopt when every bound is
// concrete. `start`/`step` are -1 when the overload has none (0 and 1).
std::optional<TensorMeta> symbolic_arange(const MetaArgs& a, int start, int end, int step,
                                          const Options& o) {
  auto is_sym = [&](int i) {
    if (i < 0) return false;
    const Arg& x = a.arg(static_cast<size_t>(i));
    return x.is_node() && x.node->meta().kind == ValueMeta::Kind::SymInt &&
           !x.node->meta().sym.is_concrete();
  };
  if (!is_sym(start) && !is_sym(end) && !is_sym(step)) return std::nullopt;
  auto bound = [&](int i, int64_t dflt) {
    if (i < 0) return SymInt(dflt);
    if (a.scalar(static_cast<size_t>(i)).kind == ScalarValue::Kind::Float)
      throw Error("arange with a symbolic bound takes integral bounds");
    return a.sym_int(static_cast<size_t>(i));
  };
  SymInt xs = bound(start, 0), xe = bound(end, 0), xst = bound(step, 1);
  if (xst == 0) throw Error("step must be nonzero");
  if (!xst.is_concrete()) throw Error("arange with a symbolic step is not supported");
  SymInt n = xst == 1 ? xe - xs : floordiv(xe - xs + xst - (xst.value() > 0 ? 1 : -1), xst);
  ScalarType dt = o.dtype.value_or(ScalarType::Int64);
  if (dt == ScalarType::Bool) throw Error("\"arange_cpu\" not implemented for 'Bool'");
  return fresh({n}, dt, o.device);
}

ValueMeta arange(const MetaArgs& a) {
  Options o = options_at(a, 1);
  if (auto t = symbolic_arange(a, -1, 0, -1, o)) return one(*t);
  ScalarValue zero, one_v;
  one_v.i = 1;
  return one(arange_impl(zero, a.scalar(0), one_v, o.dtype, o.device));
}

ValueMeta arange_start(const MetaArgs& a) {
  Options o = options_at(a, 2);
  if (auto t = symbolic_arange(a, 0, 1, -1, o)) return one(*t);
  ScalarValue one_v;
  one_v.i = 1;
  return one(arange_impl(a.scalar(0), a.scalar(1), one_v, o.dtype, o.device));
}

ValueMeta arange_start_step(const MetaArgs& a) {
  Options o = options_at(a, 3);
  if (auto t = symbolic_arange(a, 0, 1, 2, o)) return one(*t);
  return one(arange_impl(a.scalar(0), a.scalar(1), a.scalar(2), o.dtype, o.device));
}

// --- factories from a tensor
// -----------------------------------------------------------------------

// *_like(self, *, dtype, layout, device, pin_memory, memory_format): empty_like's layout.
ValueMeta like(const MetaArgs& a) {
  Options o = options_at(a, 1);
  return one(meta::empty_like_op(a.tensor(0), o.dtype, a.memory_format(5), o.device));
}

// full_like(self, fill_value, *, dtype, layout, device, pin_memory, memory_format)
ValueMeta full_like(const MetaArgs& a) {
  Options o = options_at(a, 2);
  const TensorMeta& self = a.tensor(0);
  TensorMeta out = meta::empty_like_op(self, o.dtype, a.memory_format(6), o.device);
  check_fill_value(a.scalar(1), out.dtype);
  return one(out);
}

ValueMeta rand_like(const MetaArgs& a) {
  ValueMeta r = like(a);
  check_floating(r.tensor.dtype, "check_uniform_bounds");
  return r;
}

ValueMeta randn_like(const MetaArgs& a) {
  ValueMeta r = like(a);
  check_floating(r.tensor.dtype, "normal_kernel_cpu");
  return r;
}

// new_zeros / new_ones / new_empty (self, size, *, dtype, ...): contiguous, self's dtype/device.
ValueMeta new_sized(const MetaArgs& a) {
  const TensorMeta& self = a.tensor(0);
  Options o = options_at(a, 2);
  return one(fresh(a.int_list(1), o.dtype.value_or(self.dtype), o.device.value_or(self.device)));
}

// new_full(self, size, fill_value, *, dtype, ...)
ValueMeta new_full(const MetaArgs& a) {
  const TensorMeta& self = a.tensor(0);
  Options o = options_at(a, 3);
  ScalarType dt = o.dtype.value_or(self.dtype);
  check_fill_value(a.scalar(2), dt);
  return one(fresh(a.int_list(1), dt, o.device.value_or(self.device)));
}

// new_empty_strided(self, size, stride, *, dtype, ...)
ValueMeta new_empty_strided(const MetaArgs& a) {
  const TensorMeta& self = a.tensor(0);
  Options o = options_at(a, 3);
  SymIntVector sizes = a.int_list(1), strides = a.int_list(2);
  if (sizes.size() != strides.size())
    throw Error("dimensionality of sizes (" + std::to_string(sizes.size()) +
                ") must match dimensionality of strides (" + std::to_string(strides.size()) + ")");
  TensorMeta out = fresh(sizes, o.dtype.value_or(self.dtype), o.device.value_or(self.device));
  out.strides = strides;
  return one(out);
}

// --- random ops on a tensor
// ------------------------------------------------------------------------

void check_probability(double p) {
  if (!(p >= 0 && p <= 1)) {
    std::string text = std::to_string(p);
    text.erase(text.find_last_not_of('0') + 1);
    if (!text.empty() && text.back() == '.') text.pop_back();
    throw Error("bernoulli_ expects p to be in [0, 1], but got p=" + text);
  }
}

// bernoulli.p(self, p): a contiguous tensor of self's dtype (LEGACY_CONTIGUOUS_MEMORY_FORMAT).
ValueMeta bernoulli_p(const MetaArgs& a) {
  const TensorMeta& self = a.tensor(0);
  check_probability(a.float_value(1));
  return one(meta::empty(self.sizes, self.dtype, self.device));
}

// bernoulli(self): probabilities in self; the result is laid out like self's contiguous copy.
ValueMeta bernoulli(const MetaArgs& a) {
  const TensorMeta& self = a.tensor(0);
  check_floating(self.dtype, "bernoulli_tensor_cpu_self_");
  return one(meta::empty(self.sizes, self.dtype, self.device));
}

ValueMeta bernoulli_inplace(const MetaArgs& a) {
  check_probability(a.float_value(1));
  return one(a.tensor(0));
}

// bernoulli_(self, p) functionalized: libtorch's kernel fills self in its memory order, but
// bernoulli.p draws into a contiguous result. For a dense self whose memory order is not its
// logical order (the noise of a dropout of a transposed tensor: empty_like(x).bernoulli_()), the
// draw is made on the permute of self whose logical order is its memory order and permuted back,
// so the values land where eagerly they do. nullptr (bernoulli.p) otherwise.
Node* bernoulli_inplace_value(InplaceValueBuilder& b) {
  Arg self_arg = b.arg(0);
  if (!self_arg.is_node() || !b.arg(2).is_none()) return nullptr;
  const TensorMeta& m = self_arg.node->tensor_meta();
  for (size_t d = 0; d < static_cast<size_t>(m.dim()); ++d)
    if (!m.sizes[d].is_concrete() || !m.strides[d].is_concrete()) return nullptr;
  std::vector<int64_t> perm = meta::memory_order(m);
  if (std::is_sorted(perm.begin(), perm.end()) || !meta::is_non_overlapping_and_dense(m))
    return nullptr;
  Node* permuted = b.call("aten::permute", {self_arg, Arg::of_ints(perm)});
  Node* drawn = b.call("aten::bernoulli.p", {Arg(permuted), b.arg(1)});
  return b.call("aten::permute", {Arg(drawn), Arg::of_ints(meta::inverse_permutation(perm))});
}

}  // namespace

void register_factory_ops(OpTable& t) {
  constexpr uint32_t kF = kFactory;
  constexpr uint32_t kR = kRandom | kNondeterministicSeeded;
  t.def(
       "empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
       "Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor")
      .tags(kRecomputable | kF | kCore)
      .meta(empty)
      .non_differentiable();
  t.def(
       "empty_strided(SymInt[] size, SymInt[] stride, *, ScalarType? dtype=None, "
       "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor")
      .tags(kF | kCore)
      .meta(empty_strided)
      .non_differentiable();
  t.def(
       "zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
       "bool? pin_memory=None) -> Tensor")
      .fill(0)
      .tags(kRecomputable | kF)
      .meta(sized)
      .non_differentiable();
  t.def(
       "ones(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
       "bool? pin_memory=None) -> Tensor")
      .fill(1)
      .tags(kRecomputable | kF)
      .meta(sized)
      .non_differentiable();
  t.def(
       "full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, "
       "Device? device=None, bool? pin_memory=None) -> Tensor")
      .fill_from_arg(1)
      .tags(kRecomputable | kF | kCore)
      .meta(full)
      .non_differentiable();
  t.def(
       "scalar_tensor(Scalar s, *, ScalarType? dtype=None, Layout? layout=None, "
       "Device? device=None, bool? pin_memory=None) -> Tensor")
      .fill_from_arg(0)
      .tags(kRecomputable | kF | kCore)
      .meta(scalar_tensor)
      .non_differentiable();
  t.def(
       "arange(Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
       "bool? pin_memory=None) -> Tensor")
      .tags(kRecomputable | kF)
      .meta(arange)
      .non_differentiable();
  t.def(
       "arange.start(Scalar start, Scalar end, *, ScalarType? dtype=None, Layout? layout=None, "
       "Device? device=None, bool? pin_memory=None) -> Tensor")
      .tags(kRecomputable | kF)
      .meta(arange_start)
      .non_differentiable();
  t.def(
       "arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, "
       "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor")
      .tags(kRecomputable | kF | kCore)
      .meta(arange_start_step)
      .non_differentiable();

  t.def(
       "empty_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, "
       "Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor")
      .tags(kRecomputable | kF)
      .meta(like)
      .non_differentiable();
  t.def(
       "zeros_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, "
       "Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor")
      .fill(0)
      .tags(kRecomputable | kF)
      .meta(like)
      .non_differentiable();
  t.def(
       "ones_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, "
       "Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor")
      .fill(1)
      .tags(kF)
      .meta(like)
      .non_differentiable();
  t.def(
       "full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None, "
       "Layout? layout=None, Device? device=None, bool? pin_memory=None, "
       "MemoryFormat? memory_format=None) -> Tensor")
      .fill_from_arg(1)
      .tags(kRecomputable | kF)
      .meta(full_like)
      .non_differentiable();
  t.def(
       "new_zeros(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
       "Device? device=None, bool? pin_memory=None) -> Tensor")
      .fill(0)
      .tags(kRecomputable | kF)
      .meta(new_sized)
      .non_differentiable();
  t.def(
       "new_ones(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
       "Device? device=None, bool? pin_memory=None) -> Tensor")
      .fill(1)
      .tags(kF)
      .meta(new_sized)
      .non_differentiable();
  t.def(
       "new_empty(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
       "Device? device=None, bool? pin_memory=None) -> Tensor")
      .tags(kF)
      .meta(new_sized)
      .non_differentiable();
  t.def(
       "new_full(Tensor self, SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, "
       "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor")
      .fill_from_arg(2)
      .tags(kF)
      .meta(new_full)
      .non_differentiable();
  t.def(
       "new_empty_strided(Tensor self, SymInt[] size, SymInt[] stride, *, "
       "ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
       "bool? pin_memory=None) -> Tensor")
      .tags(kF)
      .meta(new_empty_strided)
      .non_differentiable();

  // Random.
  t.def(
       "rand(int[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
       "bool? pin_memory=None) -> Tensor")
      .tags(kF | kR)
      .meta(rand)
      .non_differentiable();
  t.def(
       "randn(int[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
       "bool? pin_memory=None) -> Tensor")
      .tags(kF | kR)
      .meta(randn)
      .non_differentiable();
  t.def(
       "rand_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, "
       "Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor")
      .tags(kF | kR)
      .meta(rand_like)
      .non_differentiable();
  t.def(
       "randn_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, "
       "Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor")
      .tags(kF | kR)
      .meta(randn_like)
      .non_differentiable();
  t.def("bernoulli(Tensor self, *, Generator? generator=None) -> Tensor")
      .tags(kR)
      .meta(bernoulli)
      .derivative(formula("self: zeros_like(grad)"));  // bernoulli.p's output needs no grad
  t.def("bernoulli.p(Tensor self, float p, *, Generator? generator=None) -> Tensor")
      .tags(kR)
      .meta(bernoulli_p)
      .non_differentiable()
      .inplace("bernoulli_.float");
  t.def(
       "bernoulli_.float(Tensor(a!) self, float p=0.5, *, Generator? generator=None) -> Tensor(a!)")
      .tags(kR | kInplace)
      .meta(bernoulli_inplace)
      .inplace_value(bernoulli_inplace_value)
      .non_differentiable();
}

}  // namespace aotgrad
