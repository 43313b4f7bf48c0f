// aotgrad: neural-network ops -- normalization, softmax, losses, embedding, dropout, pooling -- and
// the composite ops libtorch front ends call, with ATen 1.13's (CPU) output dtypes and layouts.
#include <string>

#include "aotgrad/ops/formula.h"
#include "aotgrad/ops/meta_util.h"
#include "aotgrad/ops/registry.h"
#include "composite_decomps.h"
#include "full_decomps.h"
#include "nn_grads.h"

namespace aotgrad {
namespace {

using meta::one;

std::string sizes_str(const SymIntVector& s) { return to_string(s); }

// True when two sizes are known to differ (concrete, or symbolic with differing hints).
bool differ(const SymInt& a, const SymInt& b) {
  if (a == b) return false;
  auto ha = a.hint(), hb = b.hint();
  return ha && hb && *ha != *hb;
}

bool known_zero(const SymInt& s) { return s.is_concrete() && s.value() == 0; }
std::string c10_name(ScalarType t) { return std::string(meta::c10_type_name(t)); }

// The error AT_DISPATCH raises in a CPU kernel that has no floating-point-only instance.
void check_floating(ScalarType t, const std::string& kernel) {
  if (!is_floating(t)) throw Error("\"" + kernel + "\" not implemented for '" + c10_name(t) + "'");
}

void check_dtype(const TensorMeta& expected, const TensorMeta& got) {
  if (expected.dtype != got.dtype)
    throw Error("expected scalar type " + c10_name(expected.dtype) + " but found " +
                c10_name(got.dtype));
}

// A fresh tensor in memory format `fmt` (contiguous, or channels-last for rank 4/5).
TensorMeta fresh(const SymIntVector& sizes, ScalarType dtype, Device device, MemoryFormat fmt) {
  TensorMeta out = meta::empty(sizes, dtype, device);
  if (fmt != MemoryFormat::Contiguous) out.strides = meta::memory_format_strides(sizes, fmt);
  return out;
}

// The same tensor again (ops that return their input when there is nothing to do).
TensorMeta same(const TensorMeta& x) { return meta::view_of(x, x.sizes, x.strides); }

// --- layer norm ----------------------------------------------------------------------------------

// _check_layer_norm_inputs of layer_norm.h.
void check_layer_norm(const TensorMeta& input, const SymIntVector& normalized_shape,
                      const TensorMeta* weight, const TensorMeta* bias) {
  if (normalized_shape.empty())
    throw Error(
        "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
        "one element, but got normalized_shape = []");
  auto same_shape = [&](const SymIntVector& s) {
    if (s.size() != normalized_shape.size()) return false;
    for (size_t i = 0; i < s.size(); ++i)
      if (differ(s[i], normalized_shape[i])) return false;
    return true;
  };
  if (weight && !same_shape(weight->sizes))
    throw Error(
        "Expected weight to be of same shape as normalized_shape, but got weight of shape " +
        sizes_str(weight->sizes) + " and normalized_shape = " + sizes_str(normalized_shape));
  if (bias && !same_shape(bias->sizes))
    throw Error("Expected bias to be of same shape as normalized_shape, but got bias of shape " +
                sizes_str(bias->sizes) + " and normalized_shape = " + sizes_str(normalized_shape));
  int64_t n = input.dim(), k = static_cast<int64_t>(normalized_shape.size());
  if (n < k || !same_shape(SymIntVector(input.sizes.end() - k, input.sizes.end()))) {
    std::string expected = "[*";
    for (auto& s : normalized_shape) expected += ", " + s.to_string();
    throw Error("Given normalized_shape=" + sizes_str(normalized_shape) +
                ", expected input with shape " + expected + "], but got input of size" +
                sizes_str(input.sizes));
  }
  check_floating(input.dtype, "LayerNormKernelImpl");
  if (weight) check_dtype(input, *weight);
  if (bias) check_dtype(input, *bias);
}

// native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias,
//                   float eps) -> (out, mean, rstd): out contiguous; mean/rstd keep the batch dims
// and have size 1 in the normalized ones.
ValueMeta native_layer_norm_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  SymIntVector shape = a.int_list(1);
  check_layer_norm(x, shape, a.optional_tensor(2), a.optional_tensor(3));
  SymIntVector stat = x.sizes;
  for (size_t i = x.sizes.size() - shape.size(); i < stat.size(); ++i) stat[i] = 1;
  return meta::tuple_of({meta::empty(x.sizes, x.dtype, x.device),
                         meta::empty(stat, x.dtype, x.device),
                         meta::empty(stat, x.dtype, x.device)});
}

// native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape, Tensor mean,
//   Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask)
ValueMeta native_layer_norm_backward_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(1);
  const TensorMeta* weight = a.optional_tensor(5);
  const TensorMeta* bias = a.optional_tensor(6);
  check_layer_norm(x, a.int_list(2), weight, bias);
  std::vector<bool> mask = a.bool_list(7);
  if (mask.size() != 3) throw Error("output_mask must have 3 elements");
  std::vector<ValueMeta> out(3);
  if (mask[0]) out[0] = one(meta::empty(x.sizes, x.dtype, x.device));
  if (mask[1]) {
    if (!weight) throw Error("output_mask[1] (grad_weight) is set but weight is None");
    out[1] = one(meta::empty(weight->sizes, weight->dtype, weight->device));
  }
  if (mask[2]) {
    if (!bias) throw Error("output_mask[2] (grad_bias) is set but bias is None");
    out[2] = one(meta::empty(bias->sizes, bias->dtype, bias->device));
  }
  return ValueMeta::tuple(std::move(out));
}

// layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None,
//            float eps=1e-05, bool cudnn_enable=True): native_layer_norm's first result.
ValueMeta layer_norm_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  check_layer_norm(x, a.int_list(1), a.optional_tensor(2), a.optional_tensor(3));
  return one(meta::empty(x.sizes, x.dtype, x.device));
}

// --- batch norm ----------------------------------------------------------------------------------

// The dtype of batch norm's statistics: the input's, or float for a bfloat16 input with float
// parameters (1.13's CPU mixed-type batch norm), after its checks.
ScalarType batch_norm_param_dtype(const TensorMeta& input,
                                  const std::vector<const TensorMeta*>& params) {
  const TensorMeta* mixed = nullptr;
  for (auto* p : params)
    if (p && p->dtype != input.dtype) mixed = p;
  if (!mixed) return input.dtype;
  for (auto* p : params)
    if (p && p->dtype != mixed->dtype)
      throw Error("expected scalar type " + c10_name(p->dtype) + " but found " +
                  c10_name(mixed->dtype));
  if (mixed->dtype != ScalarType::Float32)
    throw Error("mixed dtype (CPU): expect parameter to have scalar type of Float");
  if (input.dtype != ScalarType::BFloat16)
    throw Error("mixed dtype (CPU): expect input to have scalar type of BFloat16");
  return ScalarType::Float32;
}

// Shared by native_batch_norm, _native_batch_norm_legit_functional and batch_norm: checks and the
// three results (output in the input's suggested memory format; save_mean/save_invstd [C] when
// training, [0] in evaluation).
std::vector<TensorMeta> batch_norm_results(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  const TensorMeta* weight = a.optional_tensor(1);
  const TensorMeta* bias = a.optional_tensor(2);
  const TensorMeta* running_mean = a.optional_tensor(3);
  const TensorMeta* running_var = a.optional_tensor(4);
  bool training = a.bool_value(5);
  meta::wrap_dim(1, x.dim());  // "Dimension out of range" for inputs below 2-d
  if (x.dim() < 2) throw Error("batch_norm expects an input of at least 2 dimensions");
  check_floating(x.dtype, "batch_norm");
  SymInt c = x.sizes[1];
  const TensorMeta* params[] = {weight, bias, running_mean, running_var};
  const char* names[] = {"weight", "bias", "running_mean", "running_var"};
  for (int i = 0; i < 4; ++i)
    if (params[i] && (params[i]->dim() != 1 || differ(params[i]->sizes[0], c)))
      throw Error(std::string("expected ") + names[i] + " of size [" + c.to_string() +
                  "], but got " + sizes_str(params[i]->sizes));
  if (!training && (!running_mean || !running_var))
    throw Error("running_mean and running_var must be defined in evaluation mode");
  ScalarType pdt = batch_norm_param_dtype(x, {weight, bias, running_mean, running_var});
  SymIntVector stat_shape = {training ? c : SymInt(0)};
  // batch_norm_cpu_transform_input_template: inputs and parameters all contiguous (the input in
  // any memory format) take the kernel path, whose output is contiguous unless the input is
  // channels-last contiguous; otherwise the TensorIterator path allocates in the suggested format.
  bool all_contiguous =
      !known_zero(x.numel()) && (x.is_contiguous() || meta::is_channels_last_contiguous(x));
  for (auto* p : {weight, bias, running_mean, running_var})
    all_contiguous = all_contiguous && (!p || p->is_contiguous());
  MemoryFormat fmt = meta::suggest_memory_format(x);
  if (all_contiguous)
    fmt = x.is_contiguous() ? MemoryFormat::Contiguous
          : x.dim() == 5    ? MemoryFormat::ChannelsLast3d
                            : MemoryFormat::ChannelsLast;
  return {fresh(x.sizes, x.dtype, x.device, fmt), meta::empty(stat_shape, pdt, x.device),
          meta::empty(stat_shape, pdt, x.device)};
}

// native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean,
//   Tensor? running_var, bool training, float momentum, float eps) -> (out, save_mean, save_invstd)
ValueMeta native_batch_norm_meta(const MetaArgs& a) {
  return meta::tuple_of(batch_norm_results(a));
}

// _native_batch_norm_legit_functional (PyTorch 2.x): native_batch_norm's results, then the updated
// running statistics as fresh tensors shaped like the old ones.
ValueMeta native_batch_norm_legit_functional_meta(const MetaArgs& a) {
  std::vector<TensorMeta> r = batch_norm_results(a);
  const TensorMeta &rm = a.tensor(3), &rv = a.tensor(4);
  r.push_back(meta::empty(rm.sizes, rm.dtype, rm.device));
  r.push_back(meta::empty(rv.sizes, rv.dtype, rv.device));
  return meta::tuple_of(std::move(r));
}

// batch_norm(..., bool cudnn_enabled): native_batch_norm's output on CPU.
ValueMeta batch_norm_meta(const MetaArgs& a) { return one(batch_norm_results(a)[0]); }

// native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, Tensor? running_mean,
//   Tensor? running_var, Tensor? save_mean, Tensor? save_invstd, bool train, float eps,
//   bool[3] output_mask)
ValueMeta native_batch_norm_backward_meta(const MetaArgs& a) {
  const TensorMeta& go = a.tensor(0);
  const TensorMeta& x = a.tensor(1);
  const TensorMeta* weight = a.optional_tensor(2);
  const TensorMeta* running_mean = a.optional_tensor(3);
  const TensorMeta* running_var = a.optional_tensor(4);
  const TensorMeta* save_mean = a.optional_tensor(5);
  const TensorMeta* save_invstd = a.optional_tensor(6);
  bool train = a.bool_value(7);
  std::vector<bool> mask = a.bool_list(9);
  if (mask.size() != 3) throw Error("output_mask must have 3 elements");
  meta::wrap_dim(1, x.dim());
  check_floating(x.dtype, "batch_norm_backward_cpu");
  if (go.sizes != x.sizes)
    throw Error("Expected grad_out of size " + sizes_str(x.sizes) + " but got " +
                sizes_str(go.sizes));
  check_dtype(x, go);
  if (train && (!save_mean || !save_invstd))
    throw Error("save_mean and save_invstd must be defined in training mode");
  if (!train && (!running_mean || !running_var))
    throw Error("running_mean and running_var must be defined in evaluation mode");
  ScalarType pdt =
      batch_norm_param_dtype(x, {weight, running_mean, running_var, save_mean, save_invstd});
  SymInt c = x.sizes[1];
  std::vector<ValueMeta> out(3);
  if (mask[0]) out[0] = one(fresh(x.sizes, x.dtype, x.device, meta::suggest_memory_format(x)));
  if (mask[1]) out[1] = one(meta::empty({c}, pdt, x.device));
  if (mask[2]) out[2] = one(meta::empty({c}, pdt, x.device));
  return ValueMeta::tuple(std::move(out));
}

// --- softmax -------------------------------------------------------------------------------------

TensorMeta softmax_out(const TensorMeta& x, int64_t dim, bool half_to_float, bool log) {
  meta::wrap_dim(dim, x.dim());
  ScalarType dt = x.dtype;
  if (half_to_float) {
    if (x.device.type == DeviceType::CPU)
      throw Error("softmax with half to float conversion is not supported on CPU");
    if (x.dtype != ScalarType::Float16) throw Error("conversion is supported for Half type only");
    dt = ScalarType::Float32;
  }
  check_floating(x.dtype, log ? "log_softmax_kernel_impl" : "softmax_kernel_impl");
  return meta::empty(x.sizes, dt, x.device);
}

// _softmax / _log_softmax (kLog)(Tensor self, int dim, bool half_to_float): contiguous.
template <bool kLog>
ValueMeta softmax_meta(const MetaArgs& a) {
  return one(softmax_out(a.tensor(0), a.int_value(1), a.bool_value(2), kLog));
}

// softmax.int / log_softmax.int(Tensor self, int dim, ScalarType? dtype=None): the input is
// converted to dtype first.
template <bool kLog>
ValueMeta softmax_int_meta(const MetaArgs& a) {
  TensorMeta x = a.tensor(0);
  if (auto dt = a.dtype(2)) x.dtype = *dt;
  return one(softmax_out(x, a.int_value(1), false, kLog));
}

// _softmax_backward_data / _log_softmax_backward_data(Tensor grad_output, Tensor output, int dim,
//   ScalarType input_dtype): grad_output's shape and dtype (half for a float grad of a half input).
template <bool kLog>
ValueMeta softmax_backward_meta(const MetaArgs& a) {
  const TensorMeta& g = a.tensor(0);
  const TensorMeta& y = a.tensor(1);
  if (!kLog && g.sizes != y.sizes)
    throw Error(
        "Expected tensor for argument #1 'grad' to have same size as tensor for argument #2 "
        "'output'; but " +
        sizes_str(g.sizes) + " does not equal " + sizes_str(y.sizes) +
        " (while checking arguments for softmax_backward)");
  int64_t dim = meta::wrap_dim(a.int_value(2), g.dim());
  (void)dim;
  ScalarType input_dtype = *a.dtype(3);
  ScalarType dt = g.dtype;
  if (g.dtype == ScalarType::Float32 && input_dtype == ScalarType::Float16) {
    if (g.device.type == DeviceType::CPU) throw Error("expected scalar type Float but found Half");
    dt = ScalarType::Float16;
  }
  check_dtype(g, y);
  check_floating(g.dtype,
                 kLog ? "log_softmax_backward_kernel_impl" : "softmax_backward_kernel_impl");
  return one(meta::empty(g.sizes, dt, g.device));
}

// --- losses --------------------------------------------------------------------------------------

enum Reduction : int64_t { kNone = 0, kMean = 1, kSum = 2 };

// The checks nll_loss_forward and nll_loss_backward share (LossNLL.cpp's meta functions).
void check_nll(const TensorMeta& self, const TensorMeta& target, const TensorMeta* weight) {
  if (self.dim() < 1 || self.dim() > 2) throw Error("input tensor should be 1D or 2D");
  if (target.dim() > 1) throw Error("0D or 1D target tensor expected, multi-target not supported");
  bool no_batch_dim = self.dim() == 1 && target.dim() == 0;
  if (!no_batch_dim && (target.dim() == 0 || differ(self.sizes[0], target.sizes[0])))
    throw Error("size mismatch (got input: " + sizes_str(self.sizes) +
                ", target: " + sizes_str(target.sizes) + ")");
  const SymInt& n_classes = self.sizes.back();
  if (weight && (weight->dim() != 1 || differ(weight->numel(), n_classes)))
    throw Error(
        "weight tensor should be defined either for all " + n_classes.to_string() +
        " classes or no classes but got weight tensor of shape: " + sizes_str(weight->sizes));
  if (target.dtype != ScalarType::Int64 && target.dtype != ScalarType::UInt8)
    throw Error("expected scalar type Long but found " + c10_name(target.dtype));
  check_floating(self.dtype, "nll_loss_out_frame");
  if (weight) check_dtype(self, *weight);
}

// nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int reduction, int ignore_index)
//   -> (output, total_weight)
ValueMeta nll_loss_forward_meta(const MetaArgs& a) {
  const TensorMeta& self = a.tensor(0);
  check_nll(self, a.tensor(1), a.optional_tensor(2));
  int64_t reduction = a.int_value(3);
  SymIntVector shape;
  if (reduction == kNone && self.dim() == 2) shape = {self.sizes[0]};
  return meta::tuple_of(
      {meta::empty(shape, self.dtype, self.device), meta::empty({}, self.dtype, self.device)});
}

// nll_loss_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight, int reduction,
//   int ignore_index, Tensor total_weight)
ValueMeta nll_loss_backward_meta(const MetaArgs& a) {
  const TensorMeta& go = a.tensor(0);
  const TensorMeta& self = a.tensor(1);
  check_nll(self, a.tensor(2), a.optional_tensor(3));
  const TensorMeta& total_weight = a.tensor(6);
  if (differ(total_weight.numel(), 1))
    throw Error("expected total_weight to be a  single element tensor, got: " +
                sizes_str(total_weight.sizes) + " (" + total_weight.numel().to_string() +
                " elements)");
  if (a.int_value(4) == kNone && self.dim() == 2) {
    if (go.dim() != 1 || differ(go.sizes[0], self.sizes[0]))
      throw Error("Expected a tensor of dimension 1 and tensor.size[0] == " +
                  self.sizes[0].to_string() + " but got: dimension " + std::to_string(go.dim()) +
                  (go.dim() >= 1 ? " and tensor.size[0] = " + go.sizes[0].to_string() : ""));
  } else if (go.dim() > 1 || differ(go.numel(), 1)) {
    throw Error("Expected a single element grad_output tensor, but got: " + sizes_str(go.sizes));
  }
  check_dtype(self, go);
  return one(meta::empty(self.sizes, self.dtype, self.device));
}

// cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean,
//   int ignore_index=-100, float label_smoothing=0.0): log_softmax over the class dim (1, or 0 for
// an unbatched input) then nll_loss_nd, or a soft-label sum when target holds probabilities.
ValueMeta cross_entropy_loss_meta(const MetaArgs& a) {
  const TensorMeta& self = a.tensor(0);
  const TensorMeta& target = a.tensor(1);
  const TensorMeta* weight = a.optional_tensor(2);
  int64_t reduction = a.int_value(3);
  if (self.dim() < 1) throw Error("Expected 1 or more dimensions (got 0)");
  int64_t class_dim = self.dim() == 1 ? 0 : 1;
  check_floating(self.dtype, "log_softmax_lastdim_kernel_impl");
  SymIntVector per_sample = self.sizes;
  per_sample.erase(per_sample.begin() + class_dim);
  if (weight && (weight->dim() != 1 || differ(weight->numel(), self.sizes[class_dim])))
    throw Error("weight tensor should be defined either for all " +
                self.sizes[class_dim].to_string() +
                " classes or no classes but got weight "
                "tensor of shape: " +
                sizes_str(weight->sizes));
  if (weight) check_dtype(self, *weight);
  if (target.sizes == self.sizes) {  // class probabilities
    if (!is_floating(target.dtype))
      throw Error("Expected floating point type for target with class probabilities, got " +
                  c10_name(target.dtype));
    check_dtype(self, target);
  } else {
    if (target.dtype != ScalarType::Int64)
      throw Error("expected scalar type Long but found " + c10_name(target.dtype));
    bool ok = target.dim() == static_cast<int64_t>(per_sample.size());
    for (size_t i = 0; ok && i < per_sample.size(); ++i)
      ok = !differ(target.sizes[i], per_sample[i]);
    if (!ok)
      throw Error("Expected target size " + sizes_str(per_sample) + ", got " +
                  sizes_str(target.sizes));
  }
  SymIntVector shape;
  if (reduction == kNone) shape = per_sample;
  return one(meta::empty(shape, self.dtype, self.device));
}

// --- embedding -----------------------------------------------------------------------------------

void check_indices(const TensorMeta& indices, const char* fn) {
  if (indices.dtype != ScalarType::Int64 && indices.dtype != ScalarType::Int32)
    throw Error(
        std::string("Expected tensor for argument #1 'indices' to have one of the following "
                    "scalar types: Long, Int; but got torch.") +
        c10_name(indices.dtype) + "Tensor instead (while checking arguments for " + fn + ")");
}

// embedding(Tensor weight, Tensor indices, int padding_idx=-1, bool scale_grad_by_freq=False,
//           bool sparse=False): index_select rows, viewed as indices.shape + [embedding_dim].
ValueMeta embedding_meta(const MetaArgs& a) {
  const TensorMeta& weight = a.tensor(0);
  const TensorMeta& indices = a.tensor(1);
  if (weight.dim() != 2) throw Error("'weight' must be 2-D");
  check_indices(indices, "embedding");
  SymIntVector shape = indices.sizes;
  shape.push_back(weight.sizes[1]);
  return one(meta::empty(shape, weight.dtype, weight.device));
}

// embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, int padding_idx,
//                          bool scale_grad_by_freq) -> [num_weights, embedding_dim]
ValueMeta embedding_dense_backward_meta(const MetaArgs& a) {
  const TensorMeta& g = a.tensor(0);
  const TensorMeta& indices = a.tensor(1);
  check_indices(indices, "embedding_backward");
  if (g.dim() == 0) throw Error("embedding_dense_backward expects grad_output with at least 1 dim");
  SymInt dim = g.sizes.back();
  if (differ(g.numel(), indices.numel() * dim))
    throw Error("shape '[" + indices.numel().to_string() + ", " + dim.to_string() +
                "]' is invalid for input of size " + g.numel().to_string());
  return one(meta::empty({a.sym_int(2), dim}, g.dtype, g.device));
}

// --- dropout -------------------------------------------------------------------------------------

// native_dropout(Tensor input, float p, bool? train) -> (output, mask): training multiplies by a
// bool mask laid out like the input (empty_like); evaluation clones and returns an all-true mask.
ValueMeta native_dropout_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  double p = a.float_value(1);
  bool train = a.optional_bool(2).value_or(true);
  TensorMeta mask = meta::empty_like(x, ScalarType::Bool);
  if (!train) return meta::tuple_of({meta::empty_like(x), mask});
  if (!(1 - p >= 0 && 1 - p <= 1))
    throw Error("bernoulli_ expects p to be in [0, 1], but got p=" + std::to_string(1 - p));
  if (!is_floating(x.dtype) && !is_complex(x.dtype))
    throw Error("result type Float can't be cast to the desired output type " + c10_name(x.dtype));
  return meta::tuple_of({meta::tensor_iterator_output({&x, &mask}, x.dtype), mask});
}

// native_dropout_backward(Tensor grad_output, Tensor mask, float scale): grad_output * mask *
// scale.
ValueMeta native_dropout_backward_meta(const MetaArgs& a) {
  const TensorMeta &g = a.tensor(0), &m = a.tensor(1);
  TensorMeta prod = meta::tensor_iterator_output({&g, &m}, meta::result_type({&g, &m}));
  ScalarValue scale;
  scale.kind = ScalarValue::Kind::Float;
  scale.f = a.float_value(2);
  return one(meta::tensor_iterator_output({&prod}, meta::result_type({&prod}, {scale})));
}

// dropout(Tensor input, float p, bool train): on CPU the input itself when there is nothing to
// drop, else input * noise (a contiguous noise tensor) / (1 - p).
ValueMeta dropout_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  double p = a.float_value(1);
  if (p < 0 || p > 1)
    throw Error("dropout probability has to be between 0 and 1, but got " + std::to_string(p));
  if (p == 0 || !a.bool_value(2) || known_zero(x.numel())) return one(same(x));
  TensorMeta noise = meta::empty(p == 1 ? SymIntVector{} : x.sizes, x.dtype, x.device);
  if (!is_floating(x.dtype) && !is_complex(x.dtype))
    throw Error("result type Float can't be cast to the desired output type " + c10_name(x.dtype));
  return one(meta::tensor_iterator_output({&x, &noise}, x.dtype));
}

// --- pooling -------------------------------------------------------------------------------------

struct Pool2d {
  int64_t kh, kw, dh, dw, padh, padw, dilh = 1, dilw = 1;
};

// The int[2] parameters of the 2-d pooling ops: one value or two (stride: also none, meaning the
// kernel size), with ATen's messages.
Pool2d pool2d_params(const MetaArgs& a, const std::string& fn, size_t kernel_i, bool has_dilation) {
  auto ints = [&](size_t i) {
    std::vector<int64_t> v;
    for (auto& s : a.int_list(i)) v.push_back(s.value());
    return v;
  };
  std::vector<int64_t> k = ints(kernel_i), s = ints(kernel_i + 1), pad = ints(kernel_i + 2);
  if (k.size() != 1 && k.size() != 2)
    throw Error(fn + ": kernel_size must either be a single int, or a tuple of two ints");
  if (s.size() > 2)
    throw Error(fn + ": stride must either be omitted, a single int, or a tuple of two ints");
  if (pad.size() != 1 && pad.size() != 2)
    throw Error(fn + ": padding must either be a single int, or a tuple of two ints");
  Pool2d p;
  p.kh = k[0];
  p.kw = k.size() == 1 ? p.kh : k[1];
  p.dh = s.empty() ? p.kh : s[0];
  p.dw = s.empty() ? p.kw : s.size() == 1 ? p.dh : s[1];
  p.padh = pad[0];
  p.padw = pad.size() == 1 ? p.padh : pad[1];
  if (has_dilation) {
    std::vector<int64_t> d = ints(kernel_i + 3);
    if (d.size() != 1 && d.size() != 2)
      throw Error(fn + ": dilation must be either a single int, or a tuple of two ints");
    p.dilh = d[0];
    p.dilw = d.size() == 1 ? p.dilh : d[1];
  }
  return p;
}

// pooling_output_shape of Pool.h (floor or ceil mode, the last window starting inside the input).
SymInt pooling_output_shape(const SymInt& in, int64_t k, int64_t pad, int64_t stride, int64_t dil,
                            bool ceil_mode) {
  if (stride == 0) throw Error("stride should not be zero");
  if (pad < 0) throw Error("pad must be non-negative, but got pad: " + std::to_string(pad));
  if (pad > k / 2)
    throw Error("pad should be at most half of kernel size, but got pad=" + std::to_string(pad) +
                " and kernel_size=" + std::to_string(k));
  SymInt out =
      floordiv(in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0), SymInt(stride)) + 1;
  if (ceil_mode && in.is_concrete() && (out.value() - 1) * stride >= in.value() + pad)
    out = out - 1;
  return out;
}

// pool2d_shape_check of Pool.h.
void pool2d_shape_check(const TensorMeta& input, const Pool2d& p, const SymInt& oh,
                        const SymInt& ow, MemoryFormat fmt) {
  if (p.kw <= 0 || p.kh <= 0)
    throw Error("kernel size should be greater than zero, but got kH: " + std::to_string(p.kh) +
                " kW: " + std::to_string(p.kw));
  if (p.dw <= 0 || p.dh <= 0)
    throw Error("stride should be greater than zero, but got dH: " + std::to_string(p.dh) +
                " dW: " + std::to_string(p.dw));
  if (p.dilw <= 0 || p.dilh <= 0)
    throw Error("dilation should be greater than zero, but got dilationH: " +
                std::to_string(p.dilh) + " dilationW: " + std::to_string(p.dilw));
  int64_t ndim = input.dim();
  bool valid = (ndim == 3 || ndim == 4) && !known_zero(input.sizes[ndim - 3]) &&
               !known_zero(input.sizes[ndim - 2]) && !known_zero(input.sizes[ndim - 1]);
  if (fmt == MemoryFormat::ChannelsLast ? !(valid && ndim == 4) : !valid)
    throw Error(
        "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, "
        "but got:" +
        sizes_str(input.sizes));
  if (oh.hint().value_or(1) < 1 || ow.hint().value_or(1) < 1)
    throw Error("Given input size: (" + input.sizes[ndim - 3].to_string() + "x" +
                input.sizes[ndim - 2].to_string() + "x" + input.sizes[ndim - 1].to_string() +
                "). Calculated output size: (" + input.sizes[ndim - 3].to_string() + "x" +
                oh.to_string() + "x" + ow.to_string() + "). Output size is too small");
}

// The output of a 2-d pooling of `input` to (oh, ow): 3-d inputs give contiguous [C, oh, ow],
// 4-d ones [N, C, oh, ow] in the input's suggested memory format.
TensorMeta pool2d_result(const TensorMeta& input, const SymInt& oh, const SymInt& ow,
                         ScalarType dtype, MemoryFormat fmt) {
  SymIntVector sizes(input.sizes.begin(), input.sizes.end() - 2);
  sizes.push_back(oh);
  sizes.push_back(ow);
  return fresh(sizes, dtype, input.device, input.dim() == 4 ? fmt : MemoryFormat::Contiguous);
}

// Pool input checks before the shape arithmetic (3-d or 4-d input).
void check_pool_input(const TensorMeta& input, const char* what) {
  if (input.dim() != 3 && input.dim() != 4)
    throw Error(std::string("non-empty 3D or 4D (batch mode) tensor expected for ") + what);
}

struct Pooled {
  Pool2d p;
  SymInt oh, ow;
  MemoryFormat fmt;
};

// max_pool2d's parameters (kernel_size at argument 1 or 2), output size and checks.
Pooled max_pool2d_geometry(const MetaArgs& a, const TensorMeta& input, size_t kernel_i,
                           bool ceil_mode) {
  Pooled r;
  r.p = pool2d_params(a, "max_pool2d", kernel_i, /*has_dilation=*/true);
  check_pool_input(input, "input");
  r.fmt = meta::suggest_memory_format(input);
  const Pool2d& p = r.p;
  r.oh = pooling_output_shape(input.sizes[input.dim() - 2], p.kh, p.padh, p.dh, p.dilh, ceil_mode);
  r.ow = pooling_output_shape(input.sizes[input.dim() - 1], p.kw, p.padw, p.dw, p.dilw, ceil_mode);
  pool2d_shape_check(input, p, r.oh, r.ow, r.fmt);
  check_floating(input.dtype, "max_pool2d");
  return r;
}

// max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0,
//   int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)
ValueMeta max_pool2d_with_indices_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  Pooled g = max_pool2d_geometry(a, x, 1, a.bool_value(5));
  return meta::tuple_of({pool2d_result(x, g.oh, g.ow, x.dtype, g.fmt),
                         pool2d_result(x, g.oh, g.ow, ScalarType::Int64, g.fmt)});
}

// max_pool2d (composite): max_pool2d_with_indices' first result.
ValueMeta max_pool2d_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  Pooled g = max_pool2d_geometry(a, x, 1, a.bool_value(5));
  return one(pool2d_result(x, g.oh, g.ow, x.dtype, g.fmt));
}

// check_dim_size: a grad_output / indices of the pooled shape.
void check_pooled_shape(const TensorMeta& t, const TensorMeta& input, const SymInt& oh,
                        const SymInt& ow) {
  int64_t ndim = input.dim();
  SymIntVector expected(input.sizes.begin(), input.sizes.end() - 2);
  expected.push_back(oh);
  expected.push_back(ow);
  for (int64_t d = ndim - 3; d < ndim; ++d) {
    if (t.dim() != ndim || differ(t.sizes[d], expected[d]))
      throw Error("Expected a tensor of dimension " + std::to_string(ndim) + " and tensor.size[" +
                  std::to_string(d) + "] == " + expected[d].to_string() + " but got: dimension " +
                  std::to_string(t.dim()) +
                  (t.dim() > d
                       ? " and tensor.size[" + std::to_string(d) + "] = " + t.sizes[d].to_string()
                       : ""));
  }
}

void check_grad_dtype(const TensorMeta& input, const TensorMeta& grad, const char* name) {
  if (input.dtype != grad.dtype)
    throw Error("expected dtype " + std::string(torch_name(input.dtype)) + " for `" + name +
                "` but got dtype " + std::string(torch_name(grad.dtype)));
}

// max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, int[2] kernel_size,
//   int[2] stride, int[2] padding, int[2] dilation, bool ceil_mode, Tensor indices)
ValueMeta max_pool2d_with_indices_backward_meta(const MetaArgs& a) {
  const TensorMeta& go = a.tensor(0);
  const TensorMeta& x = a.tensor(1);
  check_grad_dtype(x, go, "gradOutput");
  Pooled g = max_pool2d_geometry(a, x, 2, a.bool_value(6));
  check_pooled_shape(go, x, g.oh, g.ow);
  check_pooled_shape(a.tensor(7), x, g.oh, g.ow);
  return one(fresh(x.sizes, x.dtype, x.device, g.fmt));
}

Pooled avg_pool2d_geometry(const MetaArgs& a, const TensorMeta& input, size_t kernel_i,
                           bool ceil_mode, std::optional<int64_t> divisor_override) {
  Pooled r;
  r.p = pool2d_params(a, "avg_pool2d", kernel_i, /*has_dilation=*/false);
  if (divisor_override && *divisor_override == 0) throw Error("divisor must be not zero");
  check_pool_input(input, "input");
  r.fmt = meta::suggest_memory_format(input);
  const Pool2d& p = r.p;
  r.oh = pooling_output_shape(input.sizes[input.dim() - 2], p.kh, p.padh, p.dh, 1, ceil_mode);
  r.ow = pooling_output_shape(input.sizes[input.dim() - 1], p.kw, p.padw, p.dw, 1, ceil_mode);
  pool2d_shape_check(input, p, r.oh, r.ow, r.fmt);
  if (input.dtype == ScalarType::Bool || input.dtype == ScalarType::Float16)
    throw Error("\"avg_pool2d_out_frame\" not implemented for '" + c10_name(input.dtype) + "'");
  return r;
}

std::optional<int64_t> optional_int(const MetaArgs& a, size_t i) {
  if (a.is_none(i)) return std::nullopt;
  return a.int_value(i);
}

// avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0,
//   bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None)
ValueMeta avg_pool2d_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  Pooled g = avg_pool2d_geometry(a, x, 1, a.bool_value(4), optional_int(a, 6));
  return one(pool2d_result(x, g.oh, g.ow, x.dtype, g.fmt));
}

// avg_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride,
//   int[2] padding, bool ceil_mode, bool count_include_pad, int? divisor_override)
ValueMeta avg_pool2d_backward_meta(const MetaArgs& a) {
  const TensorMeta& go = a.tensor(0);
  const TensorMeta& x = a.tensor(1);
  Pooled g = avg_pool2d_geometry(a, x, 2, a.bool_value(5), optional_int(a, 7));
  check_pooled_shape(go, x, g.oh, g.ow);
  check_grad_dtype(x, go, "gradOutput");
  return one(fresh(x.sizes, x.dtype, x.device, g.fmt));
}

// _adaptive_avg_pool2d(Tensor self, SymInt[2] output_size)
ValueMeta adaptive_avg_pool2d_impl(const TensorMeta& x, const SymIntVector& output_size) {
  if (output_size.size() != 2) throw Error("adaptive_avg_pool2d: output_size must be 2");
  if (x.dim() != 3 && x.dim() != 4)
    throw Error("adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got " + sizes_str(x.sizes));
  for (int64_t d = x.dim() - 2; d < x.dim(); ++d)
    if (known_zero(x.sizes[d]))
      throw Error(
          "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch "
          "dimensions, but input has sizes " +
          sizes_str(x.sizes) + " with dimension " + std::to_string(d) + " being empty");
  check_floating(x.dtype, "adaptive_avg_pool2d");
  return one(
      pool2d_result(x, output_size[0], output_size[1], x.dtype, meta::suggest_memory_format(x)));
}

ValueMeta adaptive_avg_pool2d_meta_(const MetaArgs& a) {
  return adaptive_avg_pool2d_impl(a.tensor(0), a.int_list(1));
}

// adaptive_avg_pool2d (composite): a 1x1 output is a mean over H and W (restrided channels-last
// when the input suggests it), else _adaptive_avg_pool2d.
ValueMeta adaptive_avg_pool2d_composite_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  SymIntVector out = a.int_list(1);
  if (out.size() != 2) throw Error("adaptive_avg_pool2d: output_size must be 2");
  if (out[0] == 1 && out[1] == 1) {
    if (x.dim() < 2)
      throw Error("Dimension out of range (expected to be in range of [-1, 0], but got -2)");
    if (!is_floating(x.dtype) && !is_complex(x.dtype))
      throw Error(
          "mean(): could not infer output dtype. Input dtype must be either a floating "
          "point or complex dtype. Got: " +
          c10_name(x.dtype));
    SymIntVector sizes = x.sizes;
    sizes[sizes.size() - 1] = 1;
    sizes[sizes.size() - 2] = 1;
    MemoryFormat fmt = meta::suggest_memory_format(x);
    return one(fresh(sizes, x.dtype, x.device,
                     fmt == MemoryFormat::ChannelsLast ? fmt : MemoryFormat::Contiguous));
  }
  return adaptive_avg_pool2d_impl(x, out);
}

// _adaptive_avg_pool2d_backward(Tensor grad_output, Tensor self): like self, in its suggested
// memory format.
ValueMeta adaptive_avg_pool2d_backward_meta(const MetaArgs& a) {
  const TensorMeta& go = a.tensor(0);
  const TensorMeta& x = a.tensor(1);
  int64_t ndim = go.dim();
  for (int64_t d = 1; d < ndim; ++d)
    if (known_zero(go.sizes[d]))
      throw Error(
          "adaptive_avg_pool2d_backward(): Expected grad_output to have non-zero size for "
          "non-batch dimensions, but grad_output has sizes " +
          sizes_str(go.sizes) + " with dimension " + std::to_string(d) + " being empty");
  if (ndim != 3 && ndim != 4)
    throw Error("adaptive_avg_pool2d_backward(): Expected 3D or 4D tensor, but got " +
                sizes_str(x.sizes));
  check_grad_dtype(x, go, "grad_output");
  check_floating(x.dtype, "adaptive_avg_pool2d_backward_cpu");
  MemoryFormat fmt = meta::suggest_memory_format(x);
  return one(fresh(x.sizes, x.dtype, x.device, x.dim() == 4 ? fmt : MemoryFormat::Contiguous));
}

// --- composite shape ops -------------------------------------------------------------------------

// reshape(Tensor(a) self, SymInt[] shape): a view (_reshape_alias) when the strides allow one,
// else a contiguous copy.
TensorMeta reshape_out(const TensorMeta& x, const SymIntVector& proposed) {
  SymIntVector shape = meta::infer_view_size(proposed, x.numel());
  if (auto strides = meta::compute_view_strides(x, shape)) return meta::view_of(x, shape, *strides);
  return meta::empty(shape, x.dtype, x.device);
}

ValueMeta reshape_meta(const MetaArgs& a) { return one(reshape_out(a.tensor(0), a.int_list(1))); }

// contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format): self when already
// contiguous in that format, else a copy in it.
ValueMeta contiguous_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  MemoryFormat fmt = a.memory_format(1).value_or(MemoryFormat::Contiguous);
  bool already = fmt == MemoryFormat::Contiguous ? x.is_contiguous()
                 : fmt == MemoryFormat::Preserve ? false
                 : fmt == MemoryFormat::ChannelsLast
                     ? x.dim() == 4 && meta::is_channels_last_contiguous(x)
                     : x.dim() == 5 && meta::is_channels_last_contiguous(x);
  if (already) return one(same(x));
  if (fmt == MemoryFormat::Preserve)
    throw Error("preserve memory format is unsupported by the contiguous operator");
  return one(fresh(x.sizes, x.dtype, x.device, fmt));
}

// flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1)
ValueMeta flatten_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  int64_t start = meta::wrap_dim(a.int_value(1), x.dim());
  int64_t end = meta::wrap_dim(a.int_value(2), x.dim());
  if (start > end) throw Error("flatten() has invalid args: start_dim cannot come after end_dim");
  if (x.dim() == 0) return one(reshape_out(x, {1}));
  if (start == end) return one(same(x));
  SymIntVector shape(x.sizes.begin(), x.sizes.begin() + start);
  shape.push_back(product(SymIntVector(x.sizes.begin() + start, x.sizes.begin() + end + 1)));
  shape.insert(shape.end(), x.sizes.begin() + end + 1, x.sizes.end());
  return one(reshape_out(x, shape));
}

}  // namespace

void register_nn_ops(OpTable& t) {
  nn_grads::add_nn_grad_helpers();
  // The formulas are derivatives.yaml's (1.13), except: where it writes `zeros_like(self)` for an
  // input of a backward kernel, autograd's codegen saves only the input's TypeAndSize and calls
  // its zeros(), written at::zeros_symint(self.sym_sizes(), self.options()) here; nll_loss(...)
  // is nll_loss_forward(...)[0]; `grad.defined() ? f(grad, ...) : std::tuple<...>()` is
  // f(grad, ...), an undefined grad giving no gradients.
  // Normalization.
  t.def(
       "native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, "
       "float eps) -> (Tensor, Tensor, Tensor)")
      .tags(kCore)
      .meta(native_layer_norm_meta)
      .derivative(formula(
          "input, weight, bias: native_layer_norm_backward_symint(grad, input, normalized_shape, "
          "result1, result2, weight, bias, grad_input_mask)"))
      .decomposition(
          decomp(native_layer_norm_full_decomp, kFullTable, "torch/_refs: native_layer_norm"));
  t.def(
       "native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape, "
       "Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask) -> "
       "(Tensor, Tensor, Tensor)")
      .tags(kCore | kBackward)
      .meta(native_layer_norm_backward_meta)
      .derivative(
          formula("input, weight, grad_out: layer_norm_double_backward(input, weight, "
                  "grads[0], grads[1], grads[2], grad_out, mean, rstd, normalized_shape, "
                  "grad_input_mask); bias: Tensor(); mean: not_implemented(\"native_layer_"
                  "norm_backward mean\"); rstd: not_implemented(\"native_layer_norm_backward "
                  "rstd\")"))
      .decomposition(decomp(native_layer_norm_backward_full_decomp, kFullTable,
                            "torch/_decomp: native_layer_norm_backward"));
  // 1.13 updates running_mean/running_var (args 3, 4) in training mode (arg 5) although the
  // schema does not say so.
  t.def(
       "native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
       "Tensor? running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)")
      .meta(native_batch_norm_meta)
      .undeclared_mutations({3, 4}, /*if_bool_arg=*/5)
      .derivative(formula(
          "input, weight, bias: native_batch_norm_backward(grad, input, weight, running_mean, "
          "running_var, result1, result2, training, eps, grad_input_mask)"));
  t.def(
       "native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, "
       "Tensor? running_mean, Tensor? running_var, Tensor? save_mean, Tensor? save_invstd, "
       "bool train, float eps, bool[3] output_mask) -> (Tensor, Tensor, Tensor)")
      .tags(kBackward)
      .meta(native_batch_norm_backward_meta)
      .derivative(
          formula("input, weight, grad_out: batchnorm_double_backward(input, weight, "
                  "grads[0], grads[1], grads[2], grad_out, running_mean, running_var, train, "
                  "eps, save_mean, save_invstd, grad_input_mask); save_mean: not_implemented("
                  "\"native_batch_norm_backward save_mean\"); save_invstd: not_implemented("
                  "\"native_batch_norm_backward save_invstd\")"));
  // PyTorch 2.x's functional batch norm (absent from 1.13): the updated running stats are results.
  t.def(
       "_native_batch_norm_legit_functional(Tensor input, Tensor? weight, Tensor? bias, "
       "Tensor running_mean, Tensor running_var, bool training, float momentum, float eps) -> "
       "(Tensor, Tensor, Tensor, Tensor running_mean_out, Tensor running_var_out)")
      .tags(kOutOfPlaceMutation)
      .meta(native_batch_norm_legit_functional_meta)
      // Functionalization's replacement for native_batch_norm in training (its undeclared writes).
      .inplace("native_batch_norm")
      // _native_batch_norm_legit's formula; the running-stat results are not differentiable.
      .output_differentiability({true, true, true, false, false})
      .derivative(formula(
          "input, weight, bias: native_batch_norm_backward(grad, input, weight, running_mean, "
          "running_var, result1, result2, training, eps, grad_input_mask)"));

  // Softmax.
  t.def("_softmax(Tensor self, int dim, bool half_to_float) -> Tensor")
      .tags(kCore)
      .meta(softmax_meta<false>)
      .derivative(formula("self: _softmax_backward_data(grad, result, dim, self.scalar_type())"))
      .decomposition(decomp(softmax_full_decomp, kFullTable, "torch/_decomp: _softmax"));
  t.def("_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor")
      .tags(kCore)
      .meta(softmax_meta<true>)
      .derivative(
          formula("self: _log_softmax_backward_data(grad, result, dim, self.scalar_type())"))
      .decomposition(decomp(log_softmax_full_decomp, kFullTable, "torch/_decomp: _log_softmax"));
  t.def(
       "_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) "
       "-> Tensor")
      .tags(kBackward)
      .meta(softmax_backward_meta<false>)
      .derivative(formula("grad_output: _softmax_backward_data(grad, output, dim, input_dtype); "
                          "output: softmax_double_backward(grad, grad_output, dim, output)"))
      .decomposition(decomp(softmax_backward_data_full_decomp, kFullTable,
                            "torch/_decomp: _softmax_backward_data"));
  t.def(
       "_log_softmax_backward_data(Tensor grad_output, Tensor output, int dim, "
       "ScalarType input_dtype) -> Tensor")
      .tags(kBackward)
      .meta(softmax_backward_meta<true>)
      .derivative(formula("grad_output: grad - (grad * output.exp()).sum(dim, true); "
                          "output: (-grad_output.sum(dim, true) * output.exp() * grad)"))
      .decomposition(decomp(log_softmax_backward_data_full_decomp, kFullTable,
                            "torch/_decomp: _log_softmax_backward_data"));

  // Losses.
  t.def(
       "nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int reduction, "
       "int ignore_index) -> (Tensor output, Tensor total_weight)")
      .meta(nll_loss_forward_meta)
      .output_differentiability({true, false})
      .derivative(formula("self: nll_loss_backward_symint(grad, self, target, weight, reduction, "
                          "ignore_index, total_weight); target: non_differentiable"));
  t.def(
       "nll_loss_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight, "
       "int reduction, int ignore_index, Tensor total_weight) -> Tensor")
      .tags(kBackward)
      .meta(nll_loss_backward_meta)
      .derivative(formula(
          "grad_output: nll_loss_forward(grad, target, weight, reduction, ignore_index)[0]; "
          "self: zeros_like(grad); target: non_differentiable"));

  // Embedding.
  t.def(
       "embedding(Tensor weight, Tensor indices, int padding_idx=-1, bool "
       "scale_grad_by_freq=False, "
       "bool sparse=False) -> Tensor")
      .tags(kCore)
      .meta(embedding_meta)
      .derivative(
          formula("indices: non_differentiable; weight: embedding_backward_symint(grad, indices, "
                  "weight.sym_size(0), padding_idx, scale_grad_by_freq, sparse)"));
  t.def(
       "embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, "
       "int padding_idx, bool scale_grad_by_freq) -> Tensor")
      .tags(kCore | kBackward)
      .meta(embedding_dense_backward_meta)
      .derivative(formula("grad_output: embedding_dense_double_backward_symint(grad, indices, "
                          "padding_idx); indices: non_differentiable"));

  // Dropout.
  t.def("native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)")
      .tags(kRandom | kNondeterministicSeeded | kCore)
      .meta(native_dropout_meta)
      .derivative(formula("input: native_dropout_backward(grad, result1, (!train.has_value() || "
                          "!train.value() ? 1 : (p == 1 ? 0.0 : 1.0 / (1.0 - p))))"))
      .decomposition(
          decomp(native_dropout_full_decomp, kFullTable, "ATen's CPU native_dropout kernel"));
  t.def("native_dropout_backward(Tensor grad_output, Tensor mask, float scale) -> Tensor")
      .tags(kBackward)
      .meta(native_dropout_backward_meta)
      .derivative(formula("grad_output: grad * (mask.type_as(grad) * scale); "
                          "mask: not_implemented(\"native_dropout_backward: mask\")"))
      .decomposition(decomp(native_dropout_backward_full_decomp, kFullTable,
                            "torch/_decomp: native_dropout_backward"));

  // Pooling.
  t.def(
       "max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], "
       "int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)")
      .tags(kCore)
      .meta(max_pool2d_with_indices_meta)
      .derivative(formula("self: max_pool2d_with_indices_backward(grad, self, kernel_size, stride, "
                          "padding, dilation, ceil_mode, result1)"));
  t.def(
       "max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, int[2] kernel_size, "
       "int[2] stride, int[2] padding, int[2] dilation, bool ceil_mode, Tensor indices) -> Tensor")
      .tags(kCore | kBackward)
      .meta(max_pool2d_with_indices_backward_meta)
      .derivative(formula(
          "grad_output: max_pool_double_backward(grad, indices, 2); "
          "self: at::zeros_symint(self.sym_sizes(), self.options()); indices: non_differentiable"));
  t.def(
       "avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
       "bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor")
      .tags(kCore)
      .meta(avg_pool2d_meta)
      .derivative(formula("self: avg_pool2d_backward(grad, self, kernel_size, stride, padding, "
                          "ceil_mode, count_include_pad, divisor_override)"));
  t.def(
       "avg_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, "
       "int[2] padding, bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor")
      .tags(kCore | kBackward)
      .meta(avg_pool2d_backward_meta)
      .derivative(formula("grad_output: avg_pool2d(grad, kernel_size, stride, padding, ceil_mode, "
                          "count_include_pad, divisor_override); self: "
                          "at::zeros_symint(self.sym_sizes(), self.options())"));
  t.def("_adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor")
      .tags(kCore)
      .meta(adaptive_avg_pool2d_meta_)
      .derivative(formula("self: _adaptive_avg_pool2d_backward(grad, self)"));
  t.def("_adaptive_avg_pool2d_backward(Tensor grad_output, Tensor self) -> Tensor")
      .tags(kCore | kBackward)
      .meta(adaptive_avg_pool2d_backward_meta)
      .derivative(formula(
          "grad_output: _adaptive_avg_pool2d_symint(grad, {grad_output.sym_size(-2), "
          "grad_output.sym_size(-1)}); self: at::zeros_symint(self.sym_sizes(), self.options())"));

  // CompositeImplicitAutograd ops that libtorch front ends call; not core: they decompose before
  // autograd sees them, as in PyTorch (composite_decomps.cc). The shape ops also have the rule
  // their decompositions come to.
  const uint32_t kCoreFull = kCoreTable | kFullTable;
  t.def(
       "layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None, "
       "float eps=1e-05, bool cudnn_enable=True) -> Tensor")
      .tags(kCompositeImplicit)
      .meta(layer_norm_meta)
      .decomposition(decomp(layer_norm_decomp, kCoreFull, "at::native::layer_norm"));
  t.def(
       "batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
       "Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) -> "
       "Tensor")
      .tags(kCompositeImplicit)
      .meta(batch_norm_meta)
      .undeclared_mutations({3, 4}, /*if_bool_arg=*/5)
      .decomposition(
          decomp(batch_norm_decomp, kCoreFull, "at::native::batch_norm (_batch_norm_impl_index)"));
  t.def("softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor")
      .tags(kCompositeImplicit)
      .meta(softmax_int_meta<false>)
      .decomposition(decomp(softmax_int_decomp, kCoreFull, "at::native::softmax"));
  t.def("log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor")
      .tags(kCompositeImplicit)
      .meta(softmax_int_meta<true>)
      .decomposition(decomp(log_softmax_int_decomp, kCoreFull, "at::native::log_softmax"));
  t.def(
       "cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, "
       "int ignore_index=-100, float label_smoothing=0.0) -> Tensor")
      .tags(kCompositeImplicit)
      .meta(cross_entropy_loss_meta)
      .decomposition(
          decomp(cross_entropy_loss_decomp, kCoreFull, "at::native::cross_entropy_loss"));
  t.def("dropout(Tensor input, float p, bool train) -> Tensor")
      .tags(kRandom | kCompositeImplicit)
      .meta(dropout_meta)
      .decomposition(decomp(dropout_decomp, kCoreFull, "at::native::dropout (_dropout_impl, CPU)"));
  t.def(
       "max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
       "int[2] dilation=1, bool ceil_mode=False) -> Tensor")
      .tags(kCompositeImplicit)
      .meta(max_pool2d_meta)
      .decomposition(decomp(max_pool2d_decomp, kCoreFull, "at::native::max_pool2d (CPU)"));
  t.def("adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor")
      .tags(kCompositeImplicit)
      .meta(adaptive_avg_pool2d_composite_meta)
      .decomposition(
          decomp(adaptive_avg_pool2d_decomp, kCoreFull, "at::native::adaptive_avg_pool2d"));
  t.def("reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)")
      .tags(kCompositeImplicit)
      .meta(reshape_meta)
      .derivative(formula("self: grad.reshape_symint(self.sym_sizes())"))
      .decomposition(decomp(reshape_decomp, kCoreFull, "at::native::reshape"));
  t.def("contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format) -> Tensor(a)")
      .tags(kCompositeImplicit)
      .meta(contiguous_meta)
      .derivative(formula("self: grad"))
      .decomposition(decomp(contiguous_decomp, kCoreFull, "at::native::contiguous"));
  t.def("flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)")
      .tags(kCompositeImplicit)
      .meta(flatten_meta)
      .derivative(formula("self: grad.reshape_symint(self.sym_sizes())"))
      .decomposition(decomp(flatten_decomp, kCoreFull, "at::native::flatten"));
}

}  // namespace aotgrad
