// aotgrad: helpers shared by the decompositions of the op families (the conventions of
// torch/_decomp and torch/_refs, and of the CompositeImplicitAutograd kernels of ATen 1.13).
//
// Shared conventions (PyTorch's wrappers):
//  - pw_cast_for_opmath: the tensor arguments are converted to the computation dtype (f32 for
//    bf16/f16) and the result back to the promoted result dtype; `x.to(dtype)` is `_to_copy`, and
//    nothing when x already has the dtype.
//  - Python numbers stay scalar arguments of the .Tensor overloads (`0.5 * a` is
//    mul.Tensor(a, 0.5)), as make_fx records them; `1 - t` is rsub.Scalar(t, 1) and `1 / t` is
//    reciprocal(t) * 1.
//  - Where the ATen CPU kernel returns a contiguous result and the decomposition's last op would
//    not (a non-contiguous input), a contiguous clone keeps the kernel's strides.
// Each decomposition is declared with its op: `decomposition(decomp(fn, tables, "source"))`.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "aotgrad/ir/error.h"
#include "aotgrad/ops/decomposition.h"
#include "aotgrad/ops/meta_util.h"

namespace aotgrad::decomps {

inline constexpr double kSqrt2 = 1.41421356237309504880;      // M_SQRT2
inline constexpr double kSqrt1_2 = 0.70710678118654752440;    // M_SQRT1_2
inline constexpr double kTwoSqrtPi = 1.12837916709551257390;  // M_2_SQRTPI

inline Arg f(double v) { return Arg::of_float(v); }
inline Arg i(int64_t v) { return Arg::of_int(v); }

// utils.get_computation_dtype: half-precision floats compute in f32.
inline ScalarType opmath(ScalarType t) {
  return t == ScalarType::BFloat16 || t == ScalarType::Float16 ? ScalarType::Float32 : t;
}

// The calls the decompositions make, named after the Python they come from.
class Ops {
 public:
  explicit Ops(DecompBuilder& b) : b_(b) {}

  Node* mul(const Arg& a, const Arg& c) { return b_.call("mul.Tensor", {a, c}); }
  Node* add(const Arg& a, const Arg& c) { return b_.call("add.Tensor", {a, c}); }
  Node* sub(const Arg& a, const Arg& c) { return b_.call("sub.Tensor", {a, c}); }
  Node* div(const Arg& a, const Arg& c) { return b_.call("div.Tensor", {a, c}); }
  // `s - t` for a Python number s (Tensor.__rsub__).
  Node* rsub(Node* t, const Arg& s) { return b_.call("rsub.Scalar", {Arg(t), s}); }
  Node* unary(const char* op, Node* x) { return b_.call(op, {Arg(x)}); }
  Node* sum(Node* x, const std::vector<int64_t>& dims, bool keepdim) {
    return b_.call("sum.dim_IntList", {Arg(x), Arg::of_ints(dims), Arg::of_bool(keepdim)});
  }
  Node* amax(Node* x, int64_t dim, bool keepdim) {
    return b_.call("amax.default", {Arg(x), Arg::of_ints({dim}), Arg::of_bool(keepdim)});
  }
  // x.to(dtype): x itself when it has the dtype.
  Node* to(Node* x, ScalarType dtype) {
    if (x->tensor_meta().dtype == dtype) return x;
    return b_.call("_to_copy.default", {Arg(x)}, {{"dtype", Arg::of_dtype(dtype)}});
  }
  // x.to(dtype, memory_format=torch.contiguous_format): x itself when nothing changes.
  Node* to_contiguous(Node* x, ScalarType dtype) {
    const TensorMeta& m = x->tensor_meta();
    if (m.is_contiguous()) return to(x, dtype);
    return b_.call("_to_copy.default", {Arg(x)},
                   {{"dtype", Arg::of_dtype(dtype)},
                    {"memory_format", Arg::of_memory_format(MemoryFormat::Contiguous)}});
  }
  // x.contiguous(): x itself when it is contiguous, else a contiguous clone.
  Node* contiguous(Node* x) {
    if (x->tensor_meta().is_contiguous()) return x;
    return b_.call("clone.default", {Arg(x)},
                   {{"memory_format", Arg::of_memory_format(MemoryFormat::Contiguous)}});
  }
  Node* scalar_tensor(double v, ScalarType dtype, const Device& device) {
    return b_.call("scalar_tensor.default", {f(v)},
                   {{"dtype", Arg::of_dtype(dtype)}, {"device", Arg::of_device(device)}});
  }

 private:
  DecompBuilder& b_;
};

// utils.elementwise_dtypes(..., DEFAULT): (computation dtype, result dtype) of tensor arguments.
inline std::pair<ScalarType, ScalarType> elementwise_dtypes(
    const std::vector<const Node*>& tensors) {
  std::vector<const TensorMeta*> metas;
  for (const Node* t : tensors) metas.push_back(&t->tensor_meta());
  ScalarType result = meta::result_type(metas);
  return {opmath(result), result};
}

// The string argument i ("none", "tanh").
inline std::string str_arg(const DecompBuilder& b, size_t i) {
  return MetaArgs(b.op(), b.node().args()).str(i);
}

// The Tensor argument i, or nullptr when it is None.
inline Node* optional_input(const DecompBuilder& b, size_t i) {
  return b.is_none(i) ? nullptr : b.input(i);
}

inline SymIntVector sizes_of(const Node* x) { return x->tensor_meta().sizes; }
inline int64_t dim_of(const Node* x) { return x->tensor_meta().dim(); }

inline Arg int_arg(int64_t v) { return Arg::of_int(v); }

inline SymInt product(const SymIntVector& v, size_t begin, size_t end) {
  SymInt p(1);
  for (size_t i = begin; i < end; ++i) p = p * v[i];
  return p;
}

inline Node* transpose(DecompBuilder& b, Node* x, int64_t d0, int64_t d1) {
  return b.call("transpose.int", {Arg(x), int_arg(d0), int_arg(d1)});
}

inline Node* contiguous_clone(DecompBuilder& b, Node* x) {
  return b.call("clone.default", {Arg(x)},
                {{"memory_format", Arg::of_memory_format(MemoryFormat::Contiguous)}});
}

// An int[2] argument as written (an int, a one-element list or a list) -> a two-element list.
inline Arg pair_arg(const Arg& a) {
  if (a.kind == Arg::Kind::Int) return Arg::of_list({a, a});
  if (a.is_list() && a.list.size() == 1) return Arg::of_list({a.list[0], a.list[0]});
  return a;
}

}  // namespace aotgrad::decomps
