// aotgrad: reduction ops (sum, mean, amax/amin, max/min.dim, argmax/argmin, var/std), as ATen 1.13
// computes them: outputs are fresh contiguous tensors (resize_reduction /
// allocate_reduction_result).
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
  check_zero_numel(x, dims, a.op().base_name == "amax" ? "amax()" : "amin()");
  return one(reduced(x, dims, a.bool_value(2), x.dtype));
}

// max.dim/min.dim(Tensor self, int dim, bool keepdim=False) -> (values, indices)
ValueMeta max_min_dim_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  int64_t dim = meta::wrap_dim(a.int_value(1), x.dim());
  check_zero_numel(x, {dim}, a.op().base_name == "max" ? "max()" : "min()");
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
ValueMeta var_std_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  const std::string& base = a.op().base_name;
  bool with_mean = base == "var_mean" || base == "std_mean";
  if (!is_floating(x.dtype) && !is_complex(x.dtype))
    throw Error(with_mean ? base + " only support floating point and complex dtypes"
                          : "std and var only support floating point and complex dtypes");
  auto dims = reduction_dims(a, 1, x.dim());
  bool keepdim = a.bool_value(3);
  TensorMeta var = reduced(x, dims, keepdim, to_real_value_type(x.dtype));
  if (!with_mean) return one(var);
  return meta::tuple_of({var, reduced(x, dims, keepdim, x.dtype)});
}

}  // namespace

void register_reduction_ops(OpTable& t) {
  t.def("sum(Tensor self, *, ScalarType? dtype=None) -> Tensor").tags(kReduction).meta(sum_meta);
  t.def(
       "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) "
       "-> Tensor")
      .tags(kReduction | kCore)
      .meta(sum_dim_meta);
  t.def("mean(Tensor self, *, ScalarType? dtype=None) -> Tensor")
      .tags(kReduction | kCore)
      .meta(mean_meta);
  t.def(
       "mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> "
       "Tensor")
      .tags(kReduction | kCore)
      .meta(mean_dim_meta);
  t.def("amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor")
      .tags(kReduction | kCore)
      .meta(amax_amin_meta);
  t.def("amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor")
      .tags(kReduction | kCore)
      .meta(amax_amin_meta);
  t.def("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)")
      .tags(kReduction | kCore)
      .meta(max_min_dim_meta);
  t.def("min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)")
      .tags(kReduction | kCore)
      .meta(max_min_dim_meta);
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
      .meta(var_std_meta);
  t.def(
       "var_mean.correction(Tensor self, int[1]? dim, *, int? correction, bool keepdim=False) -> "
       "(Tensor, Tensor)")
      .tags(kReduction)
      .meta(var_std_meta);
  t.def(
       "std.correction(Tensor self, int[1]? dim, *, int? correction, bool keepdim=False) -> Tensor")
      .tags(kReduction)
      .meta(var_std_meta);
}

}  // namespace aotgrad
