// aotgrad: reduction ops (sum, mean, amax/amin, max/min.dim, argmax/argmin, var/std), as ATen 1.13
// computes them: outputs are fresh contiguous tensors (resize_reduction /
// allocate_reduction_result).
#include <limits>

#include "aotgrad/ops/derivative.h"
#include "aotgrad/ops/formula.h"
#include "aotgrad/ops/meta_util.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

using meta::one;

// The dims a reduction reduces: a None or empty `int[1]? dim` means all of them.
std::vector<int64_t> reduction_dims(const MetaArgs& a, size_t i, int64_t ndim) {
  auto dims = a.optional_int_list(i);
  if (!dims || dims->empty()) return {};
  return meta::wrap_dims(*dims, ndim);
}

TensorMeta reduced(const TensorMeta& self, const std::vector<int64_t>& dims, bool keepdim,
                   ScalarType dtype) {
  return meta::empty(meta::reduced_shape(self.sizes, dims, keepdim), dtype, self.device);
}

bool known_zero(const SymInt& s) { return s.is_concrete() && s.value() == 0; }

// zero_numel_check_dims: reducing an empty tensor needs a named dim of non-zero size.
void check_zero_numel(const TensorMeta& self, const std::vector<int64_t>& dims, const char* fn) {
  if (!known_zero(self.numel())) return;
  if (dims.empty())
    throw Error(std::string(fn) +
                ": Expected reduction dim to be specified for input.numel() == 0. Specify the "
                "reduction dim with the 'dim' argument.");
  for (int64_t d : dims)
    if (self.dim() > 0 && known_zero(self.sizes[d]))
      throw Error(std::string(fn) + ": Expected reduction dim " + std::to_string(d) +
                  " to have non-zero size.");
}

// sum: integral and bool inputs accumulate in int64 unless a dtype is given.
ScalarType sum_dtype(const TensorMeta& self, std::optional<ScalarType> dtype) {
  if (dtype) return *dtype;
  return is_integral(self.dtype, /*include_bool=*/true) ? ScalarType::Int64 : self.dtype;
}

// mean: the result must be floating or complex (at::native::mean's dtype inference).
ScalarType mean_dtype(const TensorMeta& self, std::optional<ScalarType> dtype) {
  ScalarType t = dtype.value_or(self.dtype);
  if (!is_floating(t) && !is_complex(t))
    throw Error(std::string("mean(): could not infer output dtype. ") +
                (dtype ? "Optional" : "Input") +
                " dtype must be either a floating point or complex dtype. Got: " +
                std::string(meta::c10_type_name(t)));
  return t;
}

// --- meta functions ----------------------------------------------------------------------------

// sum(Tensor self, *, ScalarType? dtype=None)
ValueMeta sum_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  return one(reduced(x, {}, false, sum_dtype(x, a.dtype(1))));
}

// sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None)
ValueMeta sum_dim_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  auto dims = reduction_dims(a, 1, x.dim());
  return one(reduced(x, dims, a.bool_value(2), sum_dtype(x, a.dtype(3))));
}

ValueMeta mean_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  return one(reduced(x, {}, false, mean_dtype(x, a.dtype(1))));
}

ValueMeta mean_dim_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  auto dims = reduction_dims(a, 1, x.dim());
  return one(reduced(x, dims, a.bool_value(2), mean_dtype(x, a.dtype(3))));
}

// amax/amin(Tensor self, int[1] dim=[], bool keepdim=False)
ValueMeta amax_amin_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  auto dims = reduction_dims(a, 1, x.dim());
  check_zero_numel(x, dims, (a.op().base_name + "()").c_str());
  return one(reduced(x, dims, a.bool_value(2), x.dtype));
}

// max.dim/min.dim(Tensor self, int dim, bool keepdim=False) -> (values, indices)
ValueMeta max_min_dim_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  int64_t dim = meta::wrap_dim(a.int_value(1), x.dim());
  check_zero_numel(x, {dim}, (a.op().base_name + "()").c_str());
  bool keepdim = a.bool_value(2);
  return meta::tuple_of(
      {reduced(x, {dim}, keepdim, x.dtype), reduced(x, {dim}, keepdim, ScalarType::Int64)});
}

// argmax/argmin(Tensor self, int? dim=None, bool keepdim=False): int64 indices. With dim None
// the index is into the flattened tensor; keepdim then keeps every dim as size 1.
ValueMeta arg_max_min_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  const std::string fn = a.op().base_name + "()";
  if (x.dtype == ScalarType::Bool || is_complex(x.dtype))
    throw Error("\"" + a.op().base_name + "_cpu\" not implemented for '" +
                std::string(meta::c10_type_name(x.dtype)) + "'");
  bool keepdim = a.bool_value(2);
  if (a.is_none(1)) {
    check_zero_numel(x, {}, fn.c_str());
    return one(reduced(x, {}, keepdim, ScalarType::Int64));
  }
  int64_t dim = meta::wrap_dim(a.int_value(1), x.dim());
  check_zero_numel(x, {dim}, fn.c_str());
  return one(reduced(x, {dim}, keepdim, ScalarType::Int64));
}

// var/std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool
// keepdim=False); var_mean and std_mean also return the mean. Complex inputs give a real variance.
template <bool kWithMean>
ValueMeta var_std_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  if (!is_floating(x.dtype) && !is_complex(x.dtype))
    throw Error(kWithMean ? a.op().base_name + " only support floating point and complex dtypes"
                          : "std and var only support floating point and complex dtypes");
  auto dims = reduction_dims(a, 1, x.dim());
  bool keepdim = a.bool_value(3);
  TensorMeta var = reduced(x, dims, keepdim, to_real_value_type(x.dtype));
  if constexpr (!kWithMean) return one(var);
  return meta::tuple_of({var, reduced(x, dims, keepdim, x.dtype)});
}

// value_selecting_reduction_backward(Tensor grad, int dim, Tensor indices, int[] sizes, bool
// keepdim): zeros(sizes, grad.options()).scatter_(dim, keepdim ? indices : indices.unsqueeze(dim),
// keepdim ? grad : grad.unsqueeze(dim)) -- 1.13's kernel; the result is a fresh contiguous tensor.
ValueMeta value_selecting_reduction_backward_meta(const MetaArgs& a) {
  const TensorMeta &grad = a.tensor(0), &indices = a.tensor(2);
  SymIntVector sizes = a.int_list(3);
  int64_t ndim = static_cast<int64_t>(sizes.size());
  meta::wrap_dim(a.int_value(1), ndim);  // refuses a dim out of range
  if (indices.dtype != ScalarType::Int64 && indices.dtype != ScalarType::Int32)
    throw Error("scatter(): Expected dtype int32/int64 for index");
  bool unsqueezed = !a.bool_value(4) && ndim > 0;
  int64_t index_dim = indices.dim() + (unsqueezed ? 1 : 0);
  int64_t grad_dim = grad.dim() + (unsqueezed ? 1 : 0);
  if (std::max<int64_t>(index_dim, 1) != std::max<int64_t>(ndim, 1))
    throw Error("Index tensor must have the same number of dimensions as self tensor");
  if (std::max<int64_t>(grad_dim, 1) != std::max<int64_t>(index_dim, 1))
    throw Error("Index tensor must have the same number of dimensions as src tensor");
  return one(meta::empty(sizes, grad.dtype, grad.device));
}

// --- derivative helpers (FunctionsManual.cpp)
// ------------------------------------------------------ The formulas are at the declarations (see
// Note [Derivative formulas]); these are the named functions they call, emitting what PyTorch's
// AOTAutograd traces for them: operands of a nested C++ expression right to left (as GCC evaluates
// them), `Tensor op Scalar` as the `.Scalar` overload.

using V = FormulaValue;
using Vs = std::vector<FormulaValue>;

// An `int[1]? dim` argument as plain ints, as the formula sees it (negative dims kept).
std::optional<std::vector<int64_t>> dims_of(const V& v) {
  if (v.is_none()) return std::nullopt;
  std::vector<int64_t> out;
  if (v.kind == V::Kind::kScalar) return std::vector<int64_t>{v.to_int()};
  for (const SymInt& d : v.sym_ints()) out.push_back(d.value());
  return out;
}

Arg ints(const std::vector<int64_t>& v) { return Arg::of_ints(v); }

// unsqueeze_multiple(t, dims, n_dims): one dim is unsqueezed as given, several in ascending
// (wrapped) order.
Node* unsqueeze_multiple(GradBuilder& b, Node* t, const std::vector<int64_t>& dims, int64_t n) {
  if (dims.empty()) return t;
  if (dims.size() == 1) return b.call("unsqueeze.default", {Arg(t), Arg::of_int(dims[0])});
  std::vector<bool> mask(static_cast<size_t>(n), false);
  for (int64_t d : dims) mask[static_cast<size_t>(meta::wrap_dim(d, n))] = true;
  for (int64_t i = 0; i < n; ++i)
    if (mask[static_cast<size_t>(i)]) t = b.call("unsqueeze.default", {Arg(t), Arg::of_int(i)});
  return t;
}

// sum_backward(grad, sizes, dims, keepdim): grad (unsqueezed at the reduced dims) expanded back;
// `like` holds the sizes (symbolic ones are read from it).
Node* sum_backward(GradBuilder& b, Node* grad, const SymIntVector& sizes, Node* like,
                   const std::optional<std::vector<int64_t>>& dims, bool keepdim) {
  if (!keepdim && !sizes.empty() && dims && !dims->empty())
    grad = unsqueeze_multiple(b, grad, *dims, static_cast<int64_t>(sizes.size()));
  return b.call("expand.default", {Arg(grad), b.sizes_arg(sizes, like)});
}
V sum_backward(GradBuilder& b, Vs& a) {
  return V::tensor(sum_backward(b, a[0].node(), a[1].sym_ints(), a[1].sizes_of, dims_of(a[2]),
                                a[3].to_int() != 0));
}

// _safe_size(sizes, dims): the number of elements reduced over `dims` (1 for a 0-dim tensor).
SymInt safe_size(const SymIntVector& sizes, const std::vector<int64_t>& dims) {
  SymInt n = 1;
  if (sizes.empty()) return n;
  for (int64_t d : dims) n = n * sizes[meta::wrap_dim(d, static_cast<int64_t>(sizes.size()))];
  return n;
}

// The count a mean divides by, as a Scalar argument: numel when every dim is reduced, else
// _safe_size(sizes, dims); a symbolic count is a sym_numel / sym_size node of `like` (one
// symbolic dim at most: there is no SymInt product op).
Arg reduced_count(GradBuilder& b, const SymIntVector& sizes, Node* like,
                  const std::optional<std::vector<int64_t>>& dims) {
  bool all = !dims || dims->empty();
  SymInt numel = 1;
  for (const SymInt& s : sizes) numel = numel * s;
  SymInt n = all ? numel : safe_size(sizes, *dims);
  if (n.is_concrete()) return Arg::of_int(n.value());
  if (all) return Arg(b.call("sym_numel.default", {Arg(like)}));
  if (dims->size() == 1) {
    int64_t d = meta::wrap_dim((*dims)[0], static_cast<int64_t>(sizes.size()));
    return Arg(b.call("sym_size.int", {Arg(like), Arg::of_int(d)}));
  }
  throw Error("mean backward over several dims needs concrete sizes at the reduced dims");
}

// mean_backward(grad, sizes, dims, numel, keepdim): sum_backward(...) / n, n the reduced count.
Node* mean_backward(GradBuilder& b, Node* grad, const SymIntVector& sizes, Node* like,
                    const std::optional<std::vector<int64_t>>& dims, bool keepdim) {
  Node* s = sum_backward(b, grad, sizes, like, dims, keepdim);
  return b.call("div.Scalar", {Arg(s), reduced_count(b, sizes, like, dims)});
}
V mean_backward(GradBuilder& b, Vs& a) {
  return V::tensor(mean_backward(b, a[0].node(), a[1].sym_ints(), a[1].sizes_of, dims_of(a[2]),
                                 a[4].to_int() != 0));
}

// at::scalar_tensor(v, options): options as a C++ formula passes them (dtype, layout, device).
Node* scalar_tensor(GradBuilder& b, double v, ScalarType dtype, Device device) {
  return b.call("scalar_tensor.default", {Arg::of_float(v)},
                {{"dtype", Arg::of_dtype(dtype)},
                 {"layout", Arg::of_layout(Layout::Strided)},
                 {"device", Arg::of_device(device)}});
}

// var_backward(grad, self, dims, correction, keepdim) =
//   (2 / (n - correction)) * grad * (self - self.mean(dims, true)), n the reduced count; grad is
//   unsqueezed at the reduced dims first. With every dim reduced and n <= correction:
//   grad * where(self == self.mean(), nan, inf). PyTorch takes `dim=[]` (which reduces every dim)
//   as "no dim reduced" here and returns a wrong gradient (gradcheck fails in 1.13); this rule
//   treats it as the full reduction it is.
Node* var_backward(GradBuilder& b, Node* grad, Node* self,
                   const std::optional<std::vector<int64_t>>& dims, const V& correction_arg,
                   bool keepdim) {
  const TensorMeta& m = self->tensor_meta();
  double correction = correction_arg.is_none() ? 1.0 : correction_arg.to_double();
  if (m.dim() == 0 || !dims || dims->empty()) {
    if (!m.numel().is_concrete()) throw Error("var backward needs a concrete numel");
    double dof = static_cast<double>(m.numel().value()) - correction;
    Node* mean = b.call("mean.default", {Arg(self)});
    if (dof <= 0) {
      Node* eq = b.call("eq.Tensor", {Arg(self), Arg(mean)});
      ScalarType f32 = kDefaultFloat;  // result_type(double, double)
      Node* inf = scalar_tensor(b, std::numeric_limits<double>::infinity(), f32, m.device);
      Node* nan = scalar_tensor(b, std::numeric_limits<double>::quiet_NaN(), f32, m.device);
      Node* w = b.call("where.self", {Arg(eq), Arg(nan), Arg(inf)});
      return b.call("mul.Tensor", {Arg(grad), Arg(w)});
    }
    Node* centered = b.call("sub.Tensor", {Arg(self), Arg(mean)});
    Node* scaled = b.call("mul.Scalar", {Arg(grad), Arg::of_float(2.0 / dof)});
    return b.call("mul.Tensor", {Arg(scaled), Arg(centered)});
  }
  if (!keepdim && m.dim() > 1) grad = unsqueeze_multiple(b, grad, *dims, m.dim());
  SymInt n = safe_size(m.sizes, *dims);
  if (!n.is_concrete()) throw Error("var backward needs concrete sizes at the reduced dims");
  Node* mean = b.call("mean.dim", {Arg(self), ints(*dims), Arg::of_bool(true)});
  Node* centered = b.call("sub.Tensor", {Arg(self), Arg(mean)});
  Node* scaled =
      b.call("mul.Scalar",
             {Arg(grad), Arg::of_float(2.0 / (static_cast<double>(n.value()) - correction))});
  return b.call("mul.Tensor", {Arg(scaled), Arg(centered)});
}
// var_backward(grad, self, dim, correction, keepdim)
V var_backward(GradBuilder& b, Vs& a) {
  return V::tensor(
      var_backward(b, a[0].node(), a[1].node(), dims_of(a[2]), a[3], a[4].to_int() != 0));
}

// std_backward(result, grad, self, dim, correction, keepdim)
//   = var_backward((grad / (result * 2)).masked_fill_(result == 0, 0), self, ...)
V std_backward(GradBuilder& b, Vs& a) {
  Node* result = a[0].node();
  Node* twice = b.call("mul.Scalar", {Arg(result), Arg::of_int(2)});
  Node* d = b.call("div.Tensor", {Arg(a[1].node()), Arg(twice)});
  Node* zero = b.call("eq.Scalar", {Arg(result), Arg::of_int(0)});
  Node* gvar = b.call("masked_fill.Scalar", {Arg(d), Arg(zero), Arg::of_int(0)});
  return V::tensor(var_backward(b, gvar, a[2].node(), dims_of(a[3]), a[4], a[5].to_int() != 0));
}

// var_mean_backward(gvar, gmean, self, dim, correction, keepdim) = var_backward(gvar, ...) +
//   mean_backward(gmean, ...), for the grads that are defined.
V var_mean_backward(GradBuilder& b, Vs& a) {
  auto dims = dims_of(a[3]);
  bool keepdim = a[5].to_int() != 0;
  Node* self = a[2].node();
  Node* g = nullptr;
  if (a[0].is_tensor()) g = var_backward(b, a[0].node(), self, dims, a[4], keepdim);
  if (a[1].is_tensor()) {
    Node* aux = mean_backward(b, a[1].node(), self->tensor_meta().sizes, self,
                              dims.value_or(std::vector<int64_t>{}), keepdim);
    g = g ? b.call("add.Tensor", {Arg(g), Arg(aux)}) : aux;
  }
  return V::tensor(g);
}

// restore_reduced_dims(output, dims, keepdim): output reshaped with size-1 dims put back.
V restore_reduced_dims(GradBuilder& b, Vs& a) {
  Node* output = a[0].node();
  std::vector<int64_t> dims = dims_of(a[1]).value_or(std::vector<int64_t>{});
  if (a[2].to_int() != 0) return V::tensor(output);
  const TensorMeta& m = output->tensor_meta();
  size_t total = static_cast<size_t>(m.dim()) + dims.size();
  std::vector<bool> reduced(total, false);
  for (int64_t d : dims)
    reduced[static_cast<size_t>(d < 0 ? d + static_cast<int64_t>(total) : d)] = true;
  SymIntVector target;
  size_t j = 0;
  for (size_t i = 0; i < total; ++i) target.push_back(reduced[i] ? SymInt(1) : m.sizes[j++]);
  // reshape: a view when the strides allow it, else a contiguous clone and _unsafe_view.
  if (meta::compute_view_strides(m, target))
    return V::tensor(b.call("view.default", {Arg(output), b.sizes_arg(target, b.input(0))}));
  Node* c = b.call("clone.default", {Arg(output)},
                   {{"memory_format", Arg::of_memory_format(MemoryFormat::Contiguous)}});
  return V::tensor(b.call("_unsafe_view.default", {Arg(c), b.sizes_arg(target, b.input(0))}));
}

// scale_grad_by_count(grad, mask, dims) = (grad / mask.sum(dims, true)) * mask
V scale_grad_by_count(GradBuilder& b, Vs& a) {
  Node* mask = a[1].node();
  std::vector<int64_t> dims = dims_of(a[2]).value_or(std::vector<int64_t>{});
  Node* count = b.call("sum.dim_IntList", {Arg(mask), ints(dims), Arg::of_bool(true)});
  Node* d = b.call("div.Tensor", {Arg(a[0].node()), Arg(count)});
  return V::tensor(b.call("mul.Tensor", {Arg(d), Arg(mask)}));
}

// gather_with_keepdimed_indices(grad, dim, indices, keepdim) =
//   grad.gather(dim, keepdim ? indices : indices.unsqueeze(dim)), squeezed back at dim unless
//   keepdim. (1.13 decomposes value_selecting_reduction_backward into zeros + scatter_, whose
//   derivative this is.)
V gather_with_keepdimed_indices(GradBuilder& b, Vs& a) {
  bool keepdim = a[3].to_int() != 0;
  Arg index = a[2].arg;
  if (!keepdim) index = Arg(b.call("unsqueeze.default", {index, a[1].arg}));
  Node* g = b.call("gather.default", {Arg(a[0].node()), a[1].arg, index});
  if (!keepdim) g = b.call("squeeze.dim", {Arg(g), a[1].arg});
  return V::tensor(g);
}

void add_reduction_grad_helpers() {
  add_grad_helper("sum_backward", sum_backward);
  add_grad_helper("mean_backward", mean_backward);
  add_grad_helper("var_backward", var_backward);
  add_grad_helper("std_backward", std_backward);
  add_grad_helper("var_mean_backward", var_mean_backward);
  add_grad_helper("restore_reduced_dims", restore_reduced_dims);
  add_grad_helper("scale_grad_by_count", scale_grad_by_count);
  add_grad_helper("gather_with_keepdimed_indices", gather_with_keepdimed_indices);
}

}  // namespace

void register_reduction_ops(OpTable& t) {
  add_reduction_grad_helpers();
  t.def("sum(Tensor self, *, ScalarType? dtype=None) -> Tensor")
      .tags(kRecomputable | kReduction)
      .meta(sum_meta)
      .derivative(formula("self: grad.expand_symint(self.sym_sizes())"));
  t.def(
       "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) "
       "-> Tensor")
      .tags(kRecomputable | kReduction | kCore)
      .meta(sum_dim_meta)
      .derivative(formula("self: sum_backward(grad, self.sym_sizes(), dim, keepdim)"));
  t.def("mean(Tensor self, *, ScalarType? dtype=None) -> Tensor")
      .tags(kRecomputable | kReduction | kCore)
      .meta(mean_meta)
      .derivative(formula("self: grad.expand_symint(self.sym_sizes()) / self.sym_numel()"));
  t.def(
       "mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> "
       "Tensor")
      .tags(kRecomputable | kReduction | kCore)
      .meta(mean_dim_meta)
      .derivative(
          formula("self: mean_backward(grad, self.sym_sizes(), dim, self.sym_numel(), keepdim)"));
  const char* amax_amin_formula =
      "self: scale_grad_by_count(restore_reduced_dims(grad, dim, keepdim), "
      "restore_reduced_dims(result, dim, keepdim) == self, dim)";
  t.def("amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor")
      .tags(kRecomputable | kReduction | kCore)
      .meta(amax_amin_meta)
      .derivative(formula(amax_amin_formula));
  t.def("amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor")
      .tags(kReduction | kCore)
      .meta(amax_amin_meta)
      .derivative(formula(amax_amin_formula));
  const char* max_min_formula =
      "self: value_selecting_reduction_backward_symint(grad, dim, indices, self.sym_sizes(), "
      "keepdim)";
  t.def("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)")
      .tags(kRecomputable | kReduction | kCore)
      .meta(max_min_dim_meta)
      .derivative(formula(max_min_formula));
  t.def("min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)")
      .tags(kRecomputable | kReduction | kCore)
      .meta(max_min_dim_meta)
      .derivative(formula(max_min_formula));
  t.def(
       "value_selecting_reduction_backward(Tensor grad, int dim, Tensor indices, int[] sizes, "
       "bool keepdim) -> Tensor")
      .tags(kBackward)
      .meta(value_selecting_reduction_backward_meta)
      .derivative(formula("grad: gather_with_keepdimed_indices(grad, dim, indices, keepdim); "
                          "indices: non_differentiable"));
  t.def("argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor")
      .tags(kRecomputable | kReduction | kCore)
      .meta(arg_max_min_meta)
      .non_differentiable();
  t.def("argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor")
      .tags(kReduction | kCore)
      .meta(arg_max_min_meta)
      .non_differentiable();
  t.def(
       "var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool "
       "keepdim=False) -> "
       "Tensor")
      .tags(kRecomputable | kReduction | kCore)
      .meta(var_std_meta<false>)
      .derivative(formula("self: var_backward(grad, self, dim, correction, keepdim)"));
  t.def(
       "var_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool "
       "keepdim=False) -> "
       "(Tensor, Tensor)")
      .tags(kRecomputable | kReduction)
      .meta(var_std_meta<true>)
      .derivative(
          formula("self: var_mean_backward(grads[0], grads[1], self, dim, correction, keepdim)"));
  t.def(
       "std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool "
       "keepdim=False) -> "
       "Tensor")
      .tags(kRecomputable | kReduction)
      .meta(var_std_meta<false>)
      .derivative(formula("self: std_backward(result, grad, self, dim, correction, keepdim)"));
}

}  // namespace aotgrad
