// aotgrad: reduction ops (sum, mean, amax/amin, max/min.dim, argmax/argmin, var/std), as ATen 1.13
// computes them: outputs are fresh contiguous tensors (resize_reduction /
// allocate_reduction_result).
#include <limits>

#include "aotgrad/ops/derivative.h"
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

// var/std.correction(Tensor self, int[1]? dim, *, int? correction, bool keepdim=False); var_mean
// and std_mean also return the mean. Complex inputs give a real variance.
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
  if (indices.dtype != ScalarType::Int64) throw Error("scatter(): Expected dtype int64 for index");
  bool unsqueezed = !a.bool_value(4) && ndim > 0;
  int64_t index_dim = indices.dim() + (unsqueezed ? 1 : 0);
  int64_t grad_dim = grad.dim() + (unsqueezed ? 1 : 0);
  if (std::max<int64_t>(index_dim, 1) != std::max<int64_t>(ndim, 1))
    throw Error("Index tensor must have the same number of dimensions as self tensor");
  if (std::max<int64_t>(grad_dim, 1) != std::max<int64_t>(index_dim, 1))
    throw Error("Index tensor must have the same number of dimensions as src tensor");
  return one(meta::empty(sizes, grad.dtype, grad.device));
}

// --- derivative rules (tools/autograd/derivatives.yaml, FunctionsManual.cpp) ------------------
// The graphs are the ones PyTorch's AOTAutograd traces for these formulas: operands of a nested
// C++ expression are emitted right to left (as GCC evaluates them), and `Tensor op Scalar` is the
// `.Scalar` overload.

MetaArgs args_of(const GradBuilder& b) { return MetaArgs(b.op(), b.node().args()); }

// An `int[1]? dim` argument as plain ints, as the formula sees it (negative dims kept).
std::optional<std::vector<int64_t>> dims_arg(const GradBuilder& b, size_t i) {
  auto dims = args_of(b).optional_int_list(i);
  if (!dims) return std::nullopt;
  std::vector<int64_t> out;
  for (const SymInt& d : *dims) out.push_back(d.value());
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

// sum_backward(grad, sizes, dims, keepdim): grad (unsqueezed at the reduced dims) expanded back.
Node* sum_backward(GradBuilder& b, Node* grad, Node* self,
                   const std::optional<std::vector<int64_t>>& dims, bool keepdim) {
  const SymIntVector& sizes = self->tensor_meta().sizes;
  if (!keepdim && !sizes.empty() && dims && !dims->empty())
    grad = unsqueeze_multiple(b, grad, *dims, static_cast<int64_t>(sizes.size()));
  return b.call("expand.default", {Arg(grad), b.sizes_arg(sizes, self)});
}

// _safe_size(sizes, dims): the number of elements reduced over `dims` (1 for a 0-dim tensor).
SymInt safe_size(const SymIntVector& sizes, const std::vector<int64_t>& dims) {
  SymInt n = 1;
  if (sizes.empty()) return n;
  for (int64_t d : dims) n = n * sizes[meta::wrap_dim(d, static_cast<int64_t>(sizes.size()))];
  return n;
}

// The count a mean divides by, as a Scalar argument: self.sym_numel() when every dim is reduced,
// else _safe_size(self.sym_sizes(), dims); a symbolic count is a sym_numel / sym_size node (one
// symbolic dim at most: there is no SymInt product op).
Arg reduced_count(GradBuilder& b, Node* self, const std::optional<std::vector<int64_t>>& dims) {
  const TensorMeta& m = self->tensor_meta();
  bool all = !dims || dims->empty();
  SymInt n = all ? m.numel() : safe_size(m.sizes, *dims);
  if (n.is_concrete()) return Arg::of_int(n.value());
  if (all) return Arg(b.call("sym_numel.default", {Arg(self)}));
  if (dims->size() == 1) {
    int64_t d = meta::wrap_dim((*dims)[0], m.dim());
    return Arg(b.call("sym_size.int", {Arg(self), Arg::of_int(d)}));
  }
  throw Error("mean backward over several dims needs concrete sizes at the reduced dims");
}

// mean_backward(grad, sizes, dims, numel, keepdim): sum_backward(...) / n, n the reduced count.
Node* mean_backward(GradBuilder& b, Node* grad, Node* self,
                    const std::optional<std::vector<int64_t>>& dims, bool keepdim) {
  Node* s = sum_backward(b, grad, self, dims, keepdim);
  return b.call("div.Scalar", {Arg(s), reduced_count(b, self, dims)});
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
Node* var_backward(GradBuilder& b, Node* grad, const std::optional<std::vector<int64_t>>& dims,
                   bool keepdim) {
  Node* self = b.input(0);
  const TensorMeta& m = self->tensor_meta();
  std::optional<int64_t> corr;
  if (!b.arg(2).is_none()) corr = args_of(b).int_value(2);
  double correction = static_cast<double>(corr.value_or(1));
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

// The forward node's output i as the graph holds it (no detach: an integer output is saved as
// itself, not as a differentiable result).
Node* forward_output(GradBuilder& b, int64_t i) {
  Node* fwd = const_cast<Node*>(&b.node());
  for (Node* u : fwd->users())
    if (u->kind() == NodeKind::GetItem && u->getitem_index() == i) return u;
  return b.getitem(fwd, i);
}

// restore_reduced_dims(output, dims, keepdim): output reshaped with size-1 dims put back.
Node* restore_reduced_dims(GradBuilder& b, Node* output, const std::vector<int64_t>& dims,
                           bool keepdim) {
  if (keepdim) return output;
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
    return b.call("view.default", {Arg(output), b.sizes_arg(target, b.input(0))});
  Node* c = b.call("clone.default", {Arg(output)},
                   {{"memory_format", Arg::of_memory_format(MemoryFormat::Contiguous)}});
  return b.call("_unsafe_view.default", {Arg(c), b.sizes_arg(target, b.input(0))});
}

// sum: self: grad.expand_symint(self.sym_sizes())  (a dtype cast follows in autograd)
void sum_grad(GradBuilder& b) {
  b.set(0,
        b.call("expand.default", {Arg(b.grad()), b.sizes_arg(b.input_meta(0).sizes, b.input(0))}));
}

// sum.dim_IntList: self: sum_backward(grad, self.sym_sizes(), dim, keepdim)
void sum_dim_grad(GradBuilder& b) {
  b.set(0, sum_backward(b, b.grad(), b.input(0), dims_arg(b, 1), args_of(b).bool_value(2)));
}

// mean: self: grad.expand_symint(self.sym_sizes()) / self.sym_numel()
void mean_grad(GradBuilder& b) {
  Node* e =
      b.call("expand.default", {Arg(b.grad()), b.sizes_arg(b.input_meta(0).sizes, b.input(0))});
  b.set(0, b.call("div.Scalar", {Arg(e), reduced_count(b, b.input(0), std::nullopt)}));
}

// mean.dim: self: mean_backward(grad, self.sym_sizes(), dim, self.sym_numel(), keepdim)
void mean_dim_grad(GradBuilder& b) {
  b.set(0, mean_backward(b, b.grad(), b.input(0), dims_arg(b, 1), args_of(b).bool_value(2)));
}

// amax/amin: self: scale_grad_by_count(restore_reduced_dims(grad, dim, keepdim),
//                                      restore_reduced_dims(result, dim, keepdim) == self, dim)
//   scale_grad_by_count(grad, mask, dims) = (grad / mask.sum(dims, true)) * mask
void amax_amin_grad(GradBuilder& b) {
  std::vector<int64_t> dims = dims_arg(b, 1).value_or(std::vector<int64_t>{});
  bool keepdim = args_of(b).bool_value(2);
  Node* r = restore_reduced_dims(b, b.result(), dims, keepdim);
  Node* mask = b.call("eq.Tensor", {Arg(r), Arg(b.input(0))});
  Node* g = restore_reduced_dims(b, b.grad(), dims, keepdim);
  Node* count = b.call("sum.dim_IntList", {Arg(mask), ints(dims), Arg::of_bool(true)});
  Node* d = b.call("div.Tensor", {Arg(g), Arg(count)});
  b.set(0, b.call("mul.Tensor", {Arg(d), Arg(mask)}));
}

// max.dim/min.dim: self: value_selecting_reduction_backward_symint(grad, dim, indices,
//                                                                  self.sym_sizes(), keepdim)
void max_min_dim_grad(GradBuilder& b) {
  Node* indices = forward_output(b, 1);
  b.set(0, b.call("value_selecting_reduction_backward.default",
                  {Arg(b.grad()), b.arg(1), Arg(indices),
                   b.sizes_arg(b.input_meta(0).sizes, b.input(0)), b.arg(2)}));
}

// value_selecting_reduction_backward: grad: gather_with_keepdimed_indices(grad, dim, indices,
//   keepdim) = grad.gather(dim, keepdim ? indices : indices.unsqueeze(dim)), squeezed back at dim
//   unless keepdim. (1.13 decomposes the op into zeros + scatter_, whose derivative is this.)
void value_selecting_reduction_backward_grad(GradBuilder& b) {
  bool keepdim = args_of(b).bool_value(4);
  Arg index = b.arg(2);
  if (!keepdim) index = Arg(b.call("unsqueeze.default", {index, b.arg(1)}));
  Node* g = b.call("gather.default", {Arg(b.grad()), b.arg(1), index});
  if (!keepdim) g = b.call("squeeze.dim", {Arg(g), b.arg(1)});
  b.set(0, g);
}

// var.correction: self: var_backward(grad, self, dim, correction, keepdim)
void var_grad(GradBuilder& b) {
  b.set(0, var_backward(b, b.grad(), dims_arg(b, 1), args_of(b).bool_value(3)));
}

// std.correction: self: std_backward(result, grad, self, dim, correction, keepdim)
//   = var_backward((grad / (result * 2)).masked_fill_(result == 0, 0), self, ...)
void std_grad(GradBuilder& b) {
  Node* result = b.result();
  Node* twice = b.call("mul.Scalar", {Arg(result), Arg::of_int(2)});
  Node* d = b.call("div.Tensor", {Arg(b.grad()), Arg(twice)});
  Node* zero = b.call("eq.Scalar", {Arg(result), Arg::of_int(0)});
  Node* gvar = b.call("masked_fill.Scalar", {Arg(d), Arg(zero), Arg::of_int(0)});
  b.set(0, var_backward(b, gvar, dims_arg(b, 1), args_of(b).bool_value(3)));
}

// var_mean.correction: self: var_mean_backward(grads[0], grads[1], self, dim, correction, keepdim)
//   = var_backward(grads[0], ...) + mean_backward(grads[1], ...), for the grads that are defined.
void var_mean_grad(GradBuilder& b) {
  auto dims = dims_arg(b, 1);
  bool keepdim = args_of(b).bool_value(3);
  Node* g = nullptr;
  if (b.grad(0)) g = var_backward(b, b.grad(0), dims, keepdim);
  if (b.grad(1)) {
    Node* aux =
        mean_backward(b, b.grad(1), b.input(0), dims.value_or(std::vector<int64_t>{}), keepdim);
    g = g ? b.call("add.Tensor", {Arg(g), Arg(aux)}) : aux;
  }
  b.set(0, g);
}

}  // namespace

void register_reduction_ops(OpTable& t) {
  t.def("sum(Tensor self, *, ScalarType? dtype=None) -> Tensor")
      .tags(kReduction)
      .meta(sum_meta)
      .derivative(rule(sum_grad, "self: grad.expand_symint(self.sym_sizes())"));
  t.def(
       "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) "
       "-> Tensor")
      .tags(kReduction | kCore)
      .meta(sum_dim_meta)
      .derivative(rule(sum_dim_grad, "self: sum_backward(grad, self.sym_sizes(), dim, keepdim)"));
  t.def("mean(Tensor self, *, ScalarType? dtype=None) -> Tensor")
      .tags(kReduction | kCore)
      .meta(mean_meta)
      .derivative(rule(mean_grad, "self: grad.expand_symint(self.sym_sizes()) / self.sym_numel()"));
  t.def(
       "mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> "
       "Tensor")
      .tags(kReduction | kCore)
      .meta(mean_dim_meta)
      .derivative(
          rule(mean_dim_grad,
               "self: mean_backward(grad, self.sym_sizes(), dim, self.sym_numel(), keepdim)"));
  const char* amax_amin_formula =
      "self: scale_grad_by_count(restore_reduced_dims(grad, dim, keepdim), "
      "restore_reduced_dims(result, dim, keepdim) == self, dim)";
  t.def("amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor")
      .tags(kReduction | kCore)
      .meta(amax_amin_meta)
      .derivative(rule(amax_amin_grad, amax_amin_formula));
  t.def("amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor")
      .tags(kReduction | kCore)
      .meta(amax_amin_meta)
      .derivative(rule(amax_amin_grad, amax_amin_formula));
  const char* max_min_formula =
      "self: value_selecting_reduction_backward_symint(grad, dim, indices, self.sym_sizes(), "
      "keepdim)";
  t.def("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)")
      .tags(kReduction | kCore)
      .meta(max_min_dim_meta)
      .derivative(rule(max_min_dim_grad, max_min_formula));
  t.def("min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)")
      .tags(kReduction | kCore)
      .meta(max_min_dim_meta)
      .derivative(rule(max_min_dim_grad, max_min_formula));
  t.def(
       "value_selecting_reduction_backward(Tensor grad, int dim, Tensor indices, int[] sizes, "
       "bool keepdim) -> Tensor")
      .tags(kBackward)
      .meta(value_selecting_reduction_backward_meta)
      .derivative(rule(value_selecting_reduction_backward_grad,
                       "grad: gather_with_keepdimed_indices(grad, dim, indices, keepdim); "
                       "indices: non_differentiable"));
  t.def("argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor")
      .tags(kReduction | kCore)
      .meta(arg_max_min_meta)
      .non_differentiable();
  t.def("argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor")
      .tags(kReduction | kCore)
      .meta(arg_max_min_meta)
      .non_differentiable();
  t.def(
       "var.correction(Tensor self, int[1]? dim, *, int? correction, bool keepdim=False) -> Tensor")
      .tags(kReduction | kCore)
      .meta(var_std_meta<false>)
      .derivative(rule(var_grad, "self: var_backward(grad, self, dim, correction, keepdim)"));
  t.def(
       "var_mean.correction(Tensor self, int[1]? dim, *, int? correction, bool keepdim=False) -> "
       "(Tensor, Tensor)")
      .tags(kReduction)
      .meta(var_std_meta<true>)
      .derivative(
          rule(var_mean_grad,
               "self: var_mean_backward(grads[0], grads[1], self, dim, correction, keepdim)"));
  t.def(
       "std.correction(Tensor self, int[1]? dim, *, int? correction, bool keepdim=False) -> Tensor")
      .tags(kReduction)
      .meta(var_std_meta<false>)
      .derivative(
          rule(std_grad, "self: std_backward(result, grad, self, dim, correction, keepdim)"));
}

}  // namespace aotgrad
