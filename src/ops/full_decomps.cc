// aotgrad: the `full` decomposition table's functions (see full_decomps.h for the conventions).
// Each follows the torch/_decomp or torch/_refs function it names, op for op, so that the graph
// is the one make_fx records for it in PyTorch 2.x.
#include "full_decomps.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "aotgrad/ir/error.h"
#include "aotgrad/ops/meta_util.h"

namespace aotgrad {
namespace {

constexpr double kSqrt2 = 1.41421356237309504880;      // M_SQRT2
constexpr double kSqrt1_2 = 0.70710678118654752440;    // M_SQRT1_2
constexpr double kTwoSqrtPi = 1.12837916709551257390;  // M_2_SQRTPI

Arg f(double v) { return Arg::of_float(v); }
Arg i(int64_t v) { return Arg::of_int(v); }

// utils.get_computation_dtype: half-precision floats compute in f32.
ScalarType opmath(ScalarType t) {
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
std::pair<ScalarType, ScalarType> elementwise_dtypes(const std::vector<const Node*>& tensors) {
  std::vector<const TensorMeta*> metas;
  for (const Node* t : tensors) metas.push_back(&t->tensor_meta());
  ScalarType result = meta::result_type(metas);
  return {opmath(result), result};
}

// The string argument i ("none", "tanh").
std::string str_arg(const DecompBuilder& b, size_t i) {
  return MetaArgs(b.op(), b.node().args()).str(i);
}

// The Tensor argument i, or nullptr when it is None.
Node* optional_input(const DecompBuilder& b, size_t i) {
  return b.is_none(i) ? nullptr : b.input(i);
}

}  // namespace

// torch/_refs native_layer_norm (and _normalize): contiguous input, weight and bias; var_mean in
// the computation dtype over the normalized dims (correction 0, keepdim); rstd = rsqrt(var + eps);
// out = (x - mean) * rstd, times weight, plus bias; out converted back to the input's dtype, and
// on CPU mean and rstd too.
Arg native_layer_norm_full_decomp(DecompBuilder& b) {
  Ops o(b);
  Node* x = o.contiguous(b.input(0));
  Node* weight = optional_input(b, 2);
  Node* bias = optional_input(b, 3);
  if (weight) weight = o.contiguous(weight);
  if (bias) bias = o.contiguous(bias);
  double eps = b.float_arg(4);
  const TensorMeta& xm = x->tensor_meta();
  int64_t ndim = xm.dim();
  int64_t axis = ndim - static_cast<int64_t>(MetaArgs(b.op(), b.node().args()).int_list(1).size());
  std::vector<int64_t> dims;
  for (int64_t d = axis; d < ndim; ++d) dims.push_back(d);
  ScalarType dtype = xm.dtype;
  Node* x_acc = o.to(x, opmath(dtype));
  Node* var_mean = b.call("var_mean.correction", {Arg(x_acc), Arg::of_ints(dims)},
                          {{"correction", i(0)}, {"keepdim", Arg::of_bool(true)}});
  Node* var = b.getitem(var_mean, 0);
  Node* mean = b.getitem(var_mean, 1);
  Node* rstd = o.unary("rsqrt.default", o.add(Arg(var), f(eps)));
  Node* out = o.mul(Arg(o.sub(Arg(x_acc), Arg(mean))), Arg(rstd));
  if (weight) out = o.mul(Arg(out), Arg(weight));
  if (bias) out = o.add(Arg(out), Arg(bias));
  out = o.to(out, dtype);
  if (xm.device.type == DeviceType::CPU) {
    mean = o.to(mean, dtype);
    rstd = o.to(rstd, dtype);
  }
  return Arg::of_tuple({Arg(out), Arg(mean), Arg(rstd)});
}

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

namespace {

// torch/_decomp _softmax / _log_softmax: contiguous input in the computation dtype; the max over
// dim subtracted (not for an empty input, whose amax is an error), then exp / sum or
// shifted - log(sum(exp)); back to the input dtype unless half_to_float.
Arg softmax_like(DecompBuilder& b, bool log) {
  Ops o(b);
  Node* x = o.contiguous(b.input(0));
  int64_t dim = b.int_arg(1);
  bool half_to_float = b.bool_arg(2);
  AOTGRAD_CHECK(!half_to_float || x->tensor_meta().dtype == ScalarType::Float16,
                b.node().describe(), ": half_to_float needs a half input");
  auto [compute, result] = elementwise_dtypes({x});
  x = o.to(x, compute);
  bool empty = x->tensor_meta().numel() == SymInt(0);
  Node* out;
  if (log) {
    Node* shifted = empty ? x : o.sub(Arg(x), Arg(o.amax(x, dim, true)));
    Node* lse = o.unary("log.default", o.sum(o.unary("exp.default", shifted), {dim}, true));
    out = o.sub(Arg(shifted), Arg(lse));
  } else {
    Node* unnormalized =
        o.unary("exp.default", empty ? x : o.sub(Arg(x), Arg(o.amax(x, dim, true))));
    out = o.div(Arg(unnormalized), Arg(o.sum(unnormalized, {dim}, true)));
  }
  if (!half_to_float) out = o.to(out, result);
  return Arg(out);
}

}  // namespace

Arg softmax_full_decomp(DecompBuilder& b) { return softmax_like(b, /*log=*/false); }
Arg log_softmax_full_decomp(DecompBuilder& b) { return softmax_like(b, /*log=*/true); }

// torch/_decomp addmm (pw_cast_for_opmath): out = alpha * mm(mat1, mat2); out itself when beta is
// 0 (self is not read, so its NaNs do not propagate), else out + beta * self -- out first, so that
// TensorIterator lays the result out like mm's contiguous one, as ATen's addmm does.
Arg addmm_full_decomp(DecompBuilder& b) {
  Ops o(b);
  Node* self = b.input(0);
  Node* mat1 = b.input(1);
  Node* mat2 = b.input(2);
  auto [compute, result] = elementwise_dtypes({self, mat1, mat2});
  Arg beta = b.arg(3), alpha = b.arg(4);
  if (!is_floating(compute) && !is_complex(compute)) {  // beta = int(beta), alpha = int(alpha)
    if (beta.kind == Arg::Kind::Float) beta = i(static_cast<int64_t>(beta.f));
    if (alpha.kind == Arg::Kind::Float) alpha = i(static_cast<int64_t>(alpha.f));
  }
  Node* mm = b.call("mm.default", {Arg(o.to(mat1, compute)), Arg(o.to(mat2, compute))});
  Node* out = o.mul(Arg(mm), alpha);
  bool beta_zero = beta.kind == Arg::Kind::Float ? beta.f == 0 : beta.i == 0;
  if (!beta_zero) out = o.add(Arg(out), Arg(o.mul(Arg(o.to(self, compute)), beta)));
  return Arg(o.to(out, result));
}

// native_dropout as ATen's CPU kernel computes it (native_dropout_cpu), so that the random stream
// is consumed identically and the results are bit for bit eager's:
//   train (true or None): mask = empty_like(input, dtype=bool).bernoulli_(1 - p);
//                         output = input.mul(mask).mul_(1 / (1 - p), or 0 when p == 1)
//   eval:                 (input.clone(), ones_like(input, dtype=bool))
// torch/_decomp's native_dropout draws `rand_like(input) > p` instead: one 32-bit draw per f32
// element where bernoulli_ takes a 64-bit double draw per element, so its masks differ from
// eager's. bernoulli_ fills the mask in memory order and bernoulli.p returns a contiguous result:
// the mask is drawn contiguous in the stride order of empty_like(input) and permuted back. The
// functional form of bernoulli_ on a fresh tensor is bernoulli.p. Eval mode clones the input
// rather than returning it (as torch/_decomp does), so the result does not alias an argument the
// schema says it does not alias.
Arg native_dropout_full_decomp(DecompBuilder& b) {
  Ops o(b);
  Node* x = b.input(0);
  const TensorMeta& xm = x->tensor_meta();
  double p = b.float_arg(1);
  bool train = b.is_none(2) || b.bool_arg(2);
  auto bool_like = [&](const char* op) {
    return b.call(op, {Arg(x)}, {{"dtype", Arg::of_dtype(ScalarType::Bool)}});
  };
  if (!train)
    return Arg::of_tuple(
        {Arg(b.call("clone.default", {Arg(x)})), Arg(bool_like("ones_like.default"))});
  // An empty input draws nothing (1.13's kernel returns the input and a mask of its dtype; the
  // registry's meta, as PyTorch 2.x, says bool).
  if (xm.numel() == SymInt(0))
    return Arg::of_tuple(
        {Arg(b.call("clone.default", {Arg(x)})), Arg(bool_like("empty_like.default"))});
  double p1m = 1. - p;
  double scale = p1m == 0 ? 0. : 1. / p1m;
  TensorMeta mask_layout = meta::empty_like(xm, ScalarType::Bool);
  int64_t ndim = xm.dim();
  std::vector<int64_t> perm(static_cast<size_t>(ndim));
  std::iota(perm.begin(), perm.end(), 0);
  std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t c) {
    return mask_layout.strides[static_cast<size_t>(a)].value() >
           mask_layout.strides[static_cast<size_t>(c)].value();
  });
  bool identity = std::is_sorted(perm.begin(), perm.end());
  Node* mask;
  if (identity) {
    mask = b.call("bernoulli.p", {Arg(bool_like("empty_like.default")), f(p1m)});
  } else {
    std::vector<int64_t> inverse(perm.size());
    for (size_t k = 0; k < perm.size(); ++k)
      inverse[static_cast<size_t>(perm[k])] = static_cast<int64_t>(k);
    Node* xp = b.call("permute.default", {Arg(x), Arg::of_ints(perm)});
    Node* e = b.call("empty_like.default", {Arg(xp)}, {{"dtype", Arg::of_dtype(ScalarType::Bool)}});
    Node* drawn = b.call("bernoulli.p", {Arg(e), f(p1m)});
    mask = b.call("permute.default", {Arg(drawn), Arg::of_ints(inverse)});
  }
  Node* out = o.mul(Arg(o.mul(Arg(x), Arg(mask))), f(scale));
  return Arg::of_tuple({Arg(out), Arg(mask)});
}

// torch/_decomp native_layer_norm_backward: grad_out, input, weight and bias in the computation
// dtype and contiguous; x_hat = (input - mean) * rstd; with grad_x_hat = grad_out * weight,
//   d_input  = rstd / N * (N * grad_x_hat - sum(grad_x_hat) - x_hat * sum(grad_x_hat * x_hat))
//   d_weight = sum over the outer dims of grad_out * x_hat,  d_bias = sum of grad_out there
// (sums over the normalized dims keep them); each converted to its argument's dtype. An empty
// input gives zeros.
Arg native_layer_norm_backward_full_decomp(DecompBuilder& b) {
  Ops o(b);
  Node* grad_out = b.input(0);
  Node* input = b.input(1);
  Node* mean = b.input(3);
  Node* rstd = b.input(4);
  Node* weight = optional_input(b, 5);
  Node* bias = optional_input(b, 6);
  std::vector<bool> mask = MetaArgs(b.op(), b.node().args()).bool_list(7);
  const TensorMeta& im = input->tensor_meta();
  ScalarType compute = opmath(im.dtype);
  Node* grad_out_cast = o.to_contiguous(grad_out, compute);
  Node* input_cast = o.to_contiguous(input, compute);
  Node* weight_cast = weight ? o.to_contiguous(weight, compute) : nullptr;
  Node* bias_cast = bias ? o.to_contiguous(bias, compute) : nullptr;
  int64_t ndim = im.dim();
  int64_t axis = ndim - static_cast<int64_t>(MetaArgs(b.op(), b.node().args()).int_list(2).size());
  std::vector<int64_t> inner_dims, outer_dims;
  SymInt n(1), m(1);
  for (int64_t d = 0; d < ndim; ++d) {
    if (d >= axis) {
      inner_dims.push_back(d);
      n = n * im.sizes[static_cast<size_t>(d)];
    } else {
      outer_dims.push_back(d);
      m = m * im.sizes[static_cast<size_t>(d)];
    }
  }
  auto cast = [&](Node* v, Node* like) { return v ? o.to(v, like->tensor_meta().dtype) : nullptr; };
  if (n == SymInt(0) || m == SymInt(0)) {
    SymIntVector inner_shape(im.sizes.begin() + axis, im.sizes.end());
    auto zeros = [&](const SymIntVector& s) {
      return b.call("new_zeros.default", {Arg(input), Arg::of_symints(s)});
    };
    return Arg::of_tuple({mask[0] ? Arg(zeros(im.sizes)) : Arg(),
                          mask[1] && weight ? Arg(zeros(inner_shape)) : Arg(),
                          mask[2] && bias ? Arg(zeros(inner_shape)) : Arg()});
  }
  AOTGRAD_CHECK(n.is_concrete(), b.node().describe(),
                ": symbolic normalized sizes are not supported");
  // _unsqueeze_to_dim(mean / rstd, input.dim())
  for (int64_t d = mean->tensor_meta().dim(); d < ndim; ++d)
    mean = b.call("unsqueeze.default", {Arg(mean), i(-1)});
  for (int64_t d = rstd->tensor_meta().dim(); d < ndim; ++d)
    rstd = b.call("unsqueeze.default", {Arg(rstd), i(-1)});
  Node* x_hat = o.mul(Arg(o.sub(Arg(input_cast), Arg(mean))), Arg(rstd));
  Node* grad_x_hat = weight_cast ? o.mul(Arg(grad_out_cast), Arg(weight_cast)) : grad_out_cast;
  Node* a = o.mul(Arg(grad_x_hat), i(n.value()));
  Node* bsum = o.sum(grad_x_hat, inner_dims, true);
  Node* c1 = o.mul(Arg(grad_x_hat), Arg(x_hat));
  Node* c2 = o.sum(c1, inner_dims, true);
  Node* c3 = o.mul(Arg(x_hat), Arg(c2));
  Node* inner = o.sub(Arg(o.sub(Arg(a), Arg(bsum))), Arg(c3));
  Node* d_input = nullptr;
  Node* d_weight = nullptr;
  Node* d_bias = nullptr;
  if (mask[0]) d_input = o.mul(Arg(o.div(Arg(rstd), i(n.value()))), Arg(inner));
  if (mask[1] && weight_cast) {
    Node* prod = o.mul(Arg(grad_out_cast), Arg(x_hat));
    d_weight = outer_dims.empty() ? prod : o.sum(prod, outer_dims, false);
  }
  if (mask[2] && bias_cast) {
    d_bias = outer_dims.empty() ? b.call("clone.default", {Arg(grad_out_cast)})
                                : o.sum(grad_out_cast, outer_dims, false);
  }
  return Arg::of_tuple(
      {Arg(cast(d_input, input)), Arg(cast(d_weight, weight)), Arg(cast(d_bias, bias))});
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

namespace {

// The result dtype the op's meta gives (softmax backward on CPU keeps grad_output's dtype).
ScalarType result_dtype(const DecompBuilder& b) { return b.node().tensor_meta().dtype; }

}  // namespace

// torch/_decomp _softmax_backward_data (compute_only_pw_cast_for_opmath):
//   new_grad_output = grad_output * output
//   grad_input = new_grad_output - output * sum(new_grad_output, dim, keepdim=True)
// converted to the result dtype, contiguous.
Arg softmax_backward_data_full_decomp(DecompBuilder& b) {
  Ops o(b);
  auto [compute, result] = elementwise_dtypes({b.input(0), b.input(1)});
  (void)result;
  Node* grad_output = o.to(b.input(0), compute);
  Node* output = o.to(b.input(1), compute);
  int64_t dim = b.int_arg(2);
  Node* new_grad_output = o.mul(Arg(grad_output), Arg(output));
  Node* grad_input = o.sub(Arg(new_grad_output),
                           Arg(o.mul(Arg(output), Arg(o.sum(new_grad_output, {dim}, true)))));
  return Arg(o.contiguous(o.to(grad_input, result_dtype(b))));
}

// torch/_decomp _log_softmax_backward_data (compute_only_pw_cast_for_opmath):
//   grad_input = grad_output - exp(output) * sum(grad_output, dim, keepdim=True)
// converted to the result dtype. ATen's CPU kernel returns a contiguous result; PyTorch's
// decomposition does not ask for one, this one does (a clone only for non-contiguous operands).
Arg log_softmax_backward_data_full_decomp(DecompBuilder& b) {
  Ops o(b);
  auto [compute, result] = elementwise_dtypes({b.input(0), b.input(1)});
  (void)result;
  Node* grad_output = o.to(b.input(0), compute);
  Node* output = o.to(b.input(1), compute);
  int64_t dim = b.int_arg(2);
  Node* grad_input =
      o.sub(Arg(grad_output),
            Arg(o.mul(Arg(o.unary("exp.default", output)), Arg(o.sum(grad_output, {dim}, true)))));
  return Arg(o.contiguous(o.to(grad_input, result_dtype(b))));
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

// torch/_decomp mse_loss_backward (pw_cast_for_opmath):
//   norm * (input - target) * grad_output, norm = 2 / input.numel() for reduction mean, else 2.
// ATen's CPU kernel returns a contiguous result; PyTorch's decomposition does not ask for one, this
// one does (a clone only for non-contiguous operands).
Arg mse_loss_backward_full_decomp(DecompBuilder& b) {
  Ops o(b);
  auto [compute, result] = elementwise_dtypes({b.input(0), b.input(1), b.input(2)});
  Node* grad_output = o.to(b.input(0), compute);
  Node* input = o.to(b.input(1), compute);
  Node* target = o.to(b.input(2), compute);
  SymInt numel = input->tensor_meta().numel();
  AOTGRAD_CHECK(numel.is_concrete(), b.node().describe(), ": a symbolic numel is not supported");
  double norm = b.int_arg(3) == 1 ? 2.0 / static_cast<double>(numel.value()) : 2.0;
  Node* scaled = o.mul(Arg(o.sub(Arg(input), Arg(target))), f(norm));
  return Arg(o.contiguous(o.to(o.mul(Arg(scaled), Arg(grad_output)), result)));
}

// torch/_decomp native_dropout_backward (pw_cast_for_opmath):
//   grad_output * (mask.type_as(grad_output) * scale)
Arg native_dropout_backward_full_decomp(DecompBuilder& b) {
  Ops o(b);
  auto [compute, result] = elementwise_dtypes({b.input(0), b.input(1)});
  Node* grad_output = o.to(b.input(0), compute);
  Node* mask = o.to(o.to(b.input(1), compute), grad_output->tensor_meta().dtype);
  Node* scaled = o.mul(Arg(mask), b.arg(2));
  return Arg(o.to(o.mul(Arg(grad_output), Arg(scaled)), result));
}

}  // namespace aotgrad
