// aotgrad: neural-network ops -- softmax, losses, embedding, dropout, pooling -- and the composite
// ops libtorch front ends call, with ATen 1.13's (CPU) output dtypes and layouts (normalization:
// norm_ops.cc).
#include <algorithm>
#include <string>

#include "aotgrad/ops/decomp_util.h"
#include "aotgrad/ops/derivative.h"
#include "aotgrad/ops/formula.h"
#include "aotgrad/ops/meta_util.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

using meta::one;

std::string sizes_str(const SymIntVector& s) { return to_string(s); }

using meta::check_dtype;
using meta::check_floating;
using meta::known_differ;
using meta::known_zero;
std::string c10_name(ScalarType t) { return std::string(meta::c10_type_name(t)); }
// A fresh tensor in memory format `fmt` (contiguous, or channels-last for rank 4/5).
TensorMeta fresh(const SymIntVector& sizes, ScalarType dtype, Device device, MemoryFormat fmt) {
  return meta::empty_in_format(sizes, dtype, device, fmt);
}

// The same tensor again (ops that return their input when there is nothing to do).
TensorMeta same(const TensorMeta& x) { return meta::view_of(x, x.sizes, x.strides); }

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
  if (!no_batch_dim && (target.dim() == 0 || known_differ(self.sizes[0], target.sizes[0])))
    throw Error("size mismatch (got input: " + sizes_str(self.sizes) +
                ", target: " + sizes_str(target.sizes) + ")");
  const SymInt& n_classes = self.sizes.back();
  if (weight && (weight->dim() != 1 || known_differ(weight->numel(), n_classes)))
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
  if (known_differ(total_weight.numel(), 1))
    throw Error("expected total_weight to be a  single element tensor, got: " +
                sizes_str(total_weight.sizes) + " (" + total_weight.numel().to_string() +
                " elements)");
  if (a.int_value(4) == kNone && self.dim() == 2) {
    if (go.dim() != 1 || known_differ(go.sizes[0], self.sizes[0]))
      throw Error("Expected a tensor of dimension 1 and tensor.size[0] == " +
                  self.sizes[0].to_string() + " but got: dimension " + std::to_string(go.dim()) +
                  (go.dim() >= 1 ? " and tensor.size[0] = " + go.sizes[0].to_string() : ""));
  } else if (go.dim() > 1 || known_differ(go.numel(), 1)) {
    throw Error("Expected a single element grad_output tensor, but got: " + sizes_str(go.sizes));
  }
  check_dtype(self, go);
  return one(meta::empty(self.sizes, self.dtype, self.device));
}

// The checks nll_loss2d_forward and nll_loss2d_backward share (LossNLL2d.cpp's
// check_inputs_nll_loss2d): input [N, C, H, W], target [N, H, W], weight one per class.
void check_nll2d(const TensorMeta& self, const TensorMeta& target, const TensorMeta* weight) {
  if (target.dim() != 3)
    throw Error(
        "only batches of spatial targets supported (3D tensors) but got targets of "
        "dimension: " +
        std::to_string(target.dim()));
  if (self.dim() != 4)
    throw Error(
        "only batches of spatial inputs supported (4D tensors), but got input of "
        "dimension: " +
        std::to_string(self.dim()));
  if (weight && known_differ(weight->numel(), self.sizes[1]))
    throw Error("weight tensor should be defined either for all or no classes");
  if (known_differ(self.sizes[0], target.sizes[0]) ||
      known_differ(self.sizes[2], target.sizes[1]) || known_differ(self.sizes[3], target.sizes[2]))
    throw Error("size mismatch (got input: " + sizes_str(self.sizes) +
                " , target: " + sizes_str(target.sizes));
  if (target.dtype != ScalarType::Int64 && target.dtype != ScalarType::UInt8)
    throw Error("expected scalar type Long but found " + c10_name(target.dtype));
  check_floating(self.dtype, "nll_loss2d_forward_out_frame");
  if (weight) check_dtype(self, *weight);
}

// nll_loss2d_forward(Tensor self, Tensor target, Tensor? weight, int reduction, int ignore_index)
//   -> (output, total_weight): the loss per target element [N, H, W] (reduction none), else a
// scalar; total_weight a scalar.
ValueMeta nll_loss2d_forward_meta(const MetaArgs& a) {
  const TensorMeta& self = a.tensor(0);
  const TensorMeta& target = a.tensor(1);
  check_nll2d(self, target, a.optional_tensor(2));
  SymIntVector shape;
  if (a.int_value(3) == kNone) shape = target.sizes;
  return meta::tuple_of(
      {meta::empty(shape, self.dtype, self.device), meta::empty({}, self.dtype, self.device)});
}

// nll_loss2d_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight,
//   int reduction, int ignore_index, Tensor total_weight): grad_input of self's sizes, contiguous.
ValueMeta nll_loss2d_backward_meta(const MetaArgs& a) {
  const TensorMeta& go = a.tensor(0);
  const TensorMeta& self = a.tensor(1);
  const TensorMeta& target = a.tensor(2);
  check_nll2d(self, target, a.optional_tensor(3));
  const TensorMeta& total_weight = a.tensor(6);
  if (known_differ(total_weight.numel(), 1))
    throw Error("expected total_weight to be a single element tensor, got: " +
                sizes_str(total_weight.sizes) + " (" + total_weight.numel().to_string() +
                " elements)");
  if (a.int_value(4) == kNone) {
    if (go.dim() != 3)
      throw Error("grad_output must have same dimension as target (3) but got dimension: " +
                  std::to_string(go.dim()));
    if (known_differ(go.sizes[0], target.sizes[0]) || known_differ(go.sizes[1], target.sizes[1]) ||
        known_differ(go.sizes[2], target.sizes[2]))
      throw Error("grad_output sizes don't match target sizes: target " + sizes_str(target.sizes) +
                  ", grad_output " + sizes_str(go.sizes));
  } else if (go.dim() > 1 || known_differ(go.numel(), 1)) {
    throw Error("grad_output must have one element but got " + sizes_str(go.sizes));
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
  if (weight && (weight->dim() != 1 || known_differ(weight->numel(), self.sizes[class_dim])))
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
      ok = !known_differ(target.sizes[i], per_sample[i]);
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
  if (known_differ(g.numel(), indices.numel() * dim))
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
  if (!meta::holds_by_hints(oh, meta::SizeAssumption::AtLeast, 1) ||
      !meta::holds_by_hints(ow, meta::SizeAssumption::AtLeast, 1))
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
  if (input.dtype == ScalarType::Bool || is_complex(input.dtype))  // every other type has a kernel
    throw Error("\"max_pool2d\" not implemented for '" +
                std::string(meta::c10_type_name(input.dtype)) + "'");
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
    if (t.dim() != ndim || known_differ(t.sizes[d], expected[d]))
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

// --- derivative helpers (FunctionsManual.cpp)
// ------------------------------------------------------ The formulas are at the declarations (see
// Note [Derivative formulas]).

using V = FormulaValue;
using Vs = std::vector<FormulaValue>;

// Tensor options as a C++ formula passes them (t.options(): dtype, layout and device).
std::vector<std::pair<std::string, Arg>> options(ScalarType dtype, Device device) {
  return {{"dtype", Arg::of_dtype(dtype)},
          {"layout", Arg::of_layout(Layout::Strided)},
          {"device", Arg::of_device(device)}};
}

// x.size(dim) as a formula reads it: an int, or sym_size for a symbolic size.
Arg size_at(GradBuilder& b, Node* x, int64_t dim) {
  const SymInt& s = x->tensor_meta().sizes.at(static_cast<size_t>(dim));
  if (s.is_concrete()) return Arg::of_int(s.value());
  return Arg(b.call("sym_size.int", {Arg(x), Arg::of_int(dim)}));
}

// x.reshape(sizes) as at::reshape traces: a view when the strides allow one, else a contiguous
// clone and _unsafe_view. `size_arg` is the sizes as the call passes them.
Node* reshape(GradBuilder& b, Node* x, const SymIntVector& sizes, const Arg& size_arg) {
  if (meta::compute_view_strides(x->tensor_meta(), sizes))
    return b.call("view.default", {Arg(x), size_arg});
  Node* c = b.call("clone.default", {Arg(x)},
                   {{"memory_format", Arg::of_memory_format(MemoryFormat::Contiguous)}});
  return b.call("_unsafe_view.default", {Arg(c), size_arg});
}

// embedding_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq, sparse):
// embedding_dense_backward for a dense weight.
V embedding_backward(GradBuilder& b, Vs& a) {
  if (a[5].arg.kind == Arg::Kind::Bool && a[5].arg.i)
    throw Error(
        "embedding with sparse=True: its gradient is a sparse tensor "
        "(embedding_sparse_backward), which aotgrad does not support");
  return V::tensor(b.call("embedding_dense_backward.default",
                          {Arg(a[0].node()), a[1].arg, a[2].arg, a[3].arg, a[4].arg}));
}

// embedding_dense_double_backward(grad, indices, padding_idx) =
//   grad.index_select(0, indices.reshape(-1)), its padding_idx rows zeroed
//   (masked_fill_((indices == padding_idx).reshape({-1, 1}), 0)), viewed as indices.sizes() + [-1]
V embedding_dense_double_backward(GradBuilder& b, Vs& a) {
  Node* indices = a[1].node();
  const TensorMeta& im = indices->tensor_meta();
  SymInt n = im.numel();
  // indices.reshape(-1) and .reshape({-1, 1}) with the size inferred: numel.
  Arg numel =
      n.is_concrete() ? Arg::of_int(n.value()) : Arg(b.call("sym_numel.default", {Arg(indices)}));
  Node* flat = reshape(b, indices, {n}, Arg::of_list({numel}));
  Node* gg = b.call("index_select.default", {Arg(a[0].node()), Arg::of_int(0), Arg(flat)});
  const Arg& padding_idx = a[2].arg;
  if (padding_idx.kind == Arg::Kind::Int && padding_idx.i >= 0) {
    Node* eq = b.call("eq.Scalar", {Arg(indices), padding_idx});
    Node* m = reshape(b, eq, {n, SymInt(1)}, Arg::of_list({numel, Arg::of_int(1)}));
    gg = b.call("masked_fill.Scalar", {Arg(gg), Arg(m), Arg::of_int(0)});
  }
  Arg size = b.sizes_arg(im.sizes, indices);
  // indices.sizes() + [-1]; with symbolic sizes the last one is given (the view meta function
  // does not infer a -1 next to symbolic sizes).
  size.list.push_back(n.is_concrete() ? Arg::of_int(-1) : size_at(b, gg, 1));
  return V::tensor(b.call("view.default", {Arg(gg), size}));
}

// max_pool_double_backward(grad, indices, dim): grad gathered at the indices.
V max_pool_double_backward(GradBuilder& b, Vs& a) {
  Node* grad = a[0].node();
  Node* indices = a[1].node();
  const TensorMeta& im = indices->tensor_meta();
  const SymInt n = im.numel();
  if (n.is_concrete() && n.value() == 0) {
    const TensorMeta& gm = grad->tensor_meta();
    return V::tensor(b.call("empty_like.default", {Arg(indices)}, options(gm.dtype, gm.device)));
  }
  // size = indices.sizes()[:-2] + [-1]
  std::vector<Arg> size;
  for (int64_t d = 0; d < im.dim() - 2; ++d) size.push_back(size_at(b, indices, d));
  size.push_back(Arg::of_int(-1));
  Node* indices_view = b.call("view.default", {Arg(indices), Arg::of_list(size)});
  MemoryFormat fmt = meta::suggest_memory_format(im);
  const TensorMeta& gm = grad->tensor_meta();
  bool contiguous =
      fmt == MemoryFormat::Contiguous ? gm.is_contiguous() : meta::is_channels_last_contiguous(gm);
  Node* g = grad;
  if (!contiguous)
    g = b.call("clone.default", {Arg(grad)}, {{"memory_format", Arg::of_memory_format(fmt)}});
  Node* gv = b.call("view.default", {Arg(g), Arg::of_list(size)});
  Node* gathered = b.call("gather.default", {Arg(gv), Arg::of_int(-1), Arg(indices_view)});
  return V::tensor(b.call("view.default", {Arg(gathered), b.sizes_arg(im.sizes, indices)}));
}

void add_nn_grad_helpers() {
  add_grad_helper("embedding_backward", embedding_backward);
  add_grad_helper("embedding_dense_double_backward", embedding_dense_double_backward);
  add_grad_helper("max_pool_double_backward", max_pool_double_backward);
  // softmax_double_backward(grad, grad_output, dim, output)
  add_grad_helper("softmax_double_backward(grad, grad_output, dim, output)",
                  "grad_output * grad - (output * grad_output).sum(dim, true) * grad - "
                  "grad_output * (output * grad).sum(dim, true)");
}

}  // namespace

// --- decompositions (torch/_decomp, torch/_refs, CompositeImplicitAutograd kernels) ----------

namespace decomps {
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

Arg softmax_full_decomp(DecompBuilder& b) { return softmax_like(b, /*log=*/false); }

Arg log_softmax_full_decomp(DecompBuilder& b) { return softmax_like(b, /*log=*/true); }

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
  std::vector<int64_t> perm = meta::memory_order(meta::empty_like(xm, ScalarType::Bool));
  Node* mask;
  if (std::is_sorted(perm.begin(), perm.end())) {
    mask = b.call("bernoulli.p", {Arg(bool_like("empty_like.default")), f(p1m)});
  } else {
    Node* xp = b.call("permute.default", {Arg(x), Arg::of_ints(perm)});
    Node* e = b.call("empty_like.default", {Arg(xp)}, {{"dtype", Arg::of_dtype(ScalarType::Bool)}});
    Node* drawn = b.call("bernoulli.p", {Arg(e), f(p1m)});
    mask = b.call("permute.default", {Arg(drawn), Arg::of_ints(meta::inverse_permutation(perm))});
  }
  Node* out = o.mul(Arg(o.mul(Arg(x), Arg(mask))), f(scale));
  return Arg::of_tuple({Arg(out), Arg(mask)});
}

// The result dtype the op's meta gives (softmax backward on CPU keeps grad_output's dtype).
ScalarType result_dtype(const DecompBuilder& b) { return b.node().tensor_meta().dtype; }

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

Arg softmax_int_like(DecompBuilder& b, const char* op) {
  Node* x = b.input(0);
  if (!b.is_none(2)) x = b.call("_to_copy.default", {Arg(x)}, {{"dtype", b.arg(2)}});
  return Arg(b.call(op, {Arg(x), b.arg(1), Arg::of_bool(false)}));
}

// at::native::softmax / log_softmax: convert to dtype if given, then _softmax / _log_softmax.
Arg softmax_int_decomp(DecompBuilder& b) { return softmax_int_like(b, "_softmax.default"); }

Arg log_softmax_int_decomp(DecompBuilder& b) { return softmax_int_like(b, "_log_softmax.default"); }

// at::native::cross_entropy_loss: log_softmax over the class dim, then nll_loss for class-index
// targets (with label smoothing: (1 - s) * nll + s / C * the mean of -sum(log_softmax) over the
// targets not ignored), or -(log_softmax * target) summed for class-probability targets. Inputs
// with spatial dims ([N, C, d1, ...]) are moved to [N * d1 * ..., C] for nll_loss_forward where
// 1.13 calls nll_loss2d: the same sums and the same mean over the targets not ignored.
Arg cross_entropy_loss_decomp(DecompBuilder& b) {
  Node* x = b.input(0);
  Node* target = b.input(1);
  int64_t d = dim_of(x);
  int64_t class_dim = d == 1 ? 0 : 1;
  int64_t reduction = b.int_arg(3);
  double smoothing = b.float_arg(5);
  SymInt classes = sizes_of(x)[static_cast<size_t>(class_dim)];
  Node* lsm = b.call("_log_softmax.default", {Arg(x), int_arg(class_dim), Arg::of_bool(false)});
  if (is_floating(target->tensor_meta().dtype)) {  // class probabilities
    AOTGRAD_CHECK(b.is_none(2) && smoothing == 0.0, b.node().describe(),
                  ": cross_entropy with probability targets and a weight or label smoothing is not "
                  "supported");
    Node* prod = b.call("mul.Tensor", {Arg(lsm), Arg(target)});
    if (reduction == 0)
      return Arg(b.call(
          "neg.default",
          {Arg(b.call("sum.dim_IntList", {Arg(prod), Arg::of_list({int_arg(class_dim)})}))}));
    Node* neg = b.call("neg.default", {Arg(b.call("sum.default", {Arg(prod)}))});
    if (reduction == 1) {
      SymInt n = d == 1 ? SymInt(1) : sizes_of(x)[0];
      return Arg(b.call("div.Scalar", {Arg(neg), Arg::of_int(n.value())}));
    }
    return Arg(neg);
  }
  AOTGRAD_CHECK(smoothing == 0.0 || b.is_none(2), b.node().describe(),
                ": cross_entropy with label smoothing and a class weight is not supported");
  Node* scores = lsm;
  Node* t = target;
  if (d > 2) {  // [N, C, d1, ...] -> [N * d1 * ..., C]; targets [N, d1, ...] -> [N * d1 * ...]
    std::vector<Arg> perm{int_arg(0)};
    for (int64_t k = 2; k < d; ++k) perm.push_back(int_arg(k));
    perm.push_back(int_arg(1));
    Node* moved = b.call("permute.default", {Arg(lsm), Arg::of_list(perm)});
    SymIntVector ts = sizes_of(target);
    SymInt rows = product(ts, 0, ts.size());
    scores = b.reshape(moved, {rows, classes});
    t = b.reshape(target, {rows});
  }
  Node* nll = b.getitem(
      b.call("nll_loss_forward.default", {Arg(scores), Arg(t), b.arg(2), b.arg(3), b.arg(4)}), 0);
  auto unflatten = [&](Node* v) {  // reduction none: back to the targets' shape
    return d > 2 && reduction == 0 ? b.reshape(v, sizes_of(target)) : v;
  };
  if (smoothing == 0.0) return Arg(unflatten(nll));
  int64_t score_class_dim = d == 1 ? 0 : 1;
  Node* smooth = b.call(
      "neg.default",
      {Arg(b.call("sum.dim_IntList", {Arg(scores), Arg::of_list({int_arg(score_class_dim)})}))});
  Node* ignored = b.call("eq.Scalar", {Arg(t), b.arg(4)});
  smooth = b.call("masked_fill.Scalar", {Arg(smooth), Arg(ignored), Arg::of_float(0.0)});
  Node* ret = smooth;
  if (reduction == 1) {
    Node* kept = b.call("sum.default", {Arg(b.call("bitwise_not.default", {Arg(ignored)}))});
    ret = b.call("div.Tensor", {Arg(b.call("sum.default", {Arg(smooth)})), Arg(kept)});
  } else if (reduction == 2) {
    ret = b.call("sum.default", {Arg(smooth)});
  }
  Node* a = b.call("mul.Tensor", {Arg(nll), Arg::of_float(1 - smoothing)});
  Node* c = b.call("mul.Tensor",
                   {Arg(ret), Arg::of_float(smoothing / static_cast<double>(classes.value()))});
  return Arg(unflatten(b.call("add.Tensor", {Arg(a), Arg(c)})));
}

// at::native::dropout on CPU (_dropout_impl): the input itself when not training or p == 0;
// else input * (bernoulli(1 - p) / (1 - p)), drawing from the generator as eager does, in the
// input's layout. libtorch writes the noise with empty_like(input).bernoulli_() and div_; this is
// their functional form.
Arg dropout_decomp(DecompBuilder& b) {
  double p = b.float_arg(1);
  bool train = b.bool_arg(2);
  Node* x = b.input(0);
  if (!train || p == 0 || x->tensor_meta().numel() == SymInt(0)) return Arg(x);
  if (p == 1) return Arg(b.call("mul.Tensor", {Arg(x), Arg::of_float(0.0)}));
  Node* e = b.call("empty_like.default", {Arg(x)});
  // bernoulli_ fills empty_like(x) in its storage order; bernoulli.p draws into a contiguous
  // result. So the noise is drawn on the view of `e` whose logical order is e's storage order (a
  // permute of a dense tensor), then permuted back.
  std::vector<int64_t> perm = meta::memory_order(e->tensor_meta());
  Node* noise;
  if (std::is_sorted(perm.begin(), perm.end())) {
    noise = b.call("bernoulli.p", {Arg(e), Arg::of_float(1 - p)});
  } else {
    Node* drawn = b.call(
        "bernoulli.p",
        {Arg(b.call("permute.default", {Arg(e), Arg::of_ints(perm)})), Arg::of_float(1 - p)});
    noise = b.call("permute.default", {Arg(drawn), Arg::of_ints(meta::inverse_permutation(perm))});
  }
  Node* scaled = b.call("div.Scalar", {Arg(noise), Arg::of_float(1 - p)});
  return Arg(b.call("mul.Tensor", {Arg(x), Arg(scaled)}));
}

// at::native::max_pool2d on CPU: max_pool2d_with_indices' values.
Arg max_pool2d_decomp(DecompBuilder& b) {
  std::vector<Arg> args;
  for (size_t i = 0; i < b.node().args().size(); ++i) args.push_back(b.arg(i));
  return Arg(b.getitem(b.call("max_pool2d_with_indices.default", std::move(args)), 0));
}

// at::native::adaptive_avg_pool2d: a mean over the spatial dims for output size 1x1 (laid out
// channels-last for a channels-last input), else _adaptive_avg_pool2d.
Arg adaptive_avg_pool2d_decomp(DecompBuilder& b) {
  Arg size = pair_arg(b.arg(1));
  bool ones = size.is_list() && size.list.size() == 2 && size.list[0] == Arg::of_int(1) &&
              size.list[1] == Arg::of_int(1);
  if (ones) {
    Node* x = b.input(0);
    Node* out =
        b.call("mean.dim", {Arg(x), Arg::of_list({int_arg(-1), int_arg(-2)}), Arg::of_bool(true)});
    if (meta::suggest_memory_format(x->tensor_meta()) != MemoryFormat::ChannelsLast)
      return Arg(out);
    // 1.13 restrides the result channels-last with as_strided_ on the fresh mean.
    SymIntVector s = sizes_of(x);
    return Arg(
        b.call("as_strided.default", {Arg(out), Arg::of_symints({s[0], s[1], SymInt(1), SymInt(1)}),
                                      Arg::of_symints({s[1], SymInt(1), s[1], s[1]})}));
  }
  return Arg(b.call("_adaptive_avg_pool2d.default", {b.arg(0), size}));
}

// at::native::reshape: a view when the strides allow one, else a contiguous copy.
Arg reshape_decomp(DecompBuilder& b) {
  return Arg(b.reshape(b.input(0), b.node().tensor_meta().sizes));
}

// at::native::flatten: the input itself when there is nothing to merge, else reshape.
Arg flatten_decomp(DecompBuilder& b) {
  Node* x = b.input(0);
  const SymIntVector& out = b.node().tensor_meta().sizes;
  if (dim_of(x) > 0 && out == sizes_of(x)) return Arg(x);
  return Arg(b.reshape(x, out));
}

// at::native::contiguous: the input itself when it is contiguous in the format, else a clone.
Arg contiguous_decomp(DecompBuilder& b) {
  Node* x = b.input(0);
  MemoryFormat fmt = b.is_none(1) || b.arg(1).kind != Arg::Kind::MemoryFormat
                         ? MemoryFormat::Contiguous
                         : static_cast<MemoryFormat>(b.arg(1).i);
  const TensorMeta& m = x->tensor_meta();
  bool already =
      fmt == MemoryFormat::Contiguous ? m.is_contiguous() : meta::is_channels_last_contiguous(m);
  if (already) return Arg(x);
  return Arg(b.call("clone.default", {Arg(x)}, {{"memory_format", Arg::of_memory_format(fmt)}}));
}

}  // namespace
}  // namespace decomps

void register_nn_ops(OpTable& t) {
  add_nn_grad_helpers();
  // The formulas are derivatives.yaml's (1.13), except: where it writes `zeros_like(self)` for an
  // input of a backward kernel, autograd's codegen saves only the input's TypeAndSize and calls
  // its zeros(), written at::zeros_symint(self.sym_sizes(), self.options()) here; nll_loss(...)
  // is nll_loss_forward(...)[0]; `grad.defined() ? f(grad, ...) : std::tuple<...>()` is
  // f(grad, ...), an undefined grad giving no gradients.
  // Softmax.
  t.def("_softmax(Tensor self, int dim, bool half_to_float) -> Tensor")
      .tags(kCore)
      .meta(softmax_meta<false>)
      .derivative(formula("self: _softmax_backward_data(grad, result, dim, self.scalar_type())"))
      .decomposition(decomp(decomps::softmax_full_decomp, kFullTable, "torch/_decomp: _softmax"));
  t.def("_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor")
      .tags(kCore)
      .meta(softmax_meta<true>)
      .derivative(
          formula("self: _log_softmax_backward_data(grad, result, dim, self.scalar_type())"))
      .decomposition(
          decomp(decomps::log_softmax_full_decomp, kFullTable, "torch/_decomp: _log_softmax"));
  t.def(
       "_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) "
       "-> Tensor")
      .writes_out_over_first()
      .tags(kBackward)
      .meta(softmax_backward_meta<false>)
      .derivative(formula("grad_output: _softmax_backward_data(grad, output, dim, input_dtype); "
                          "output: softmax_double_backward(grad, grad_output, dim, output)"))
      .decomposition(decomp(decomps::softmax_backward_data_full_decomp, kFullTable,
                            "torch/_decomp: _softmax_backward_data"));
  t.def(
       "_log_softmax_backward_data(Tensor grad_output, Tensor output, int dim, "
       "ScalarType input_dtype) -> Tensor")
      .writes_out_over_first()
      .tags(kBackward)
      .meta(softmax_backward_meta<true>)
      .derivative(formula("grad_output: grad - (grad * output.exp()).sum(dim, true); "
                          "output: (-grad_output.sum(dim, true) * output.exp() * grad)"))
      .decomposition(decomp(decomps::log_softmax_backward_data_full_decomp, kFullTable,
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

  // nll_loss2d: nll_loss over the spatial positions of an [N, C, H, W] input (what
  // torch.nn.functional.nll_loss calls for a 4-d input), with derivatives.yaml's formulas.
  t.def(
       "nll_loss2d_forward(Tensor self, Tensor target, Tensor? weight, int reduction, "
       "int ignore_index) -> (Tensor output, Tensor total_weight)")
      .meta(nll_loss2d_forward_meta)
      .output_differentiability({true, false})
      .derivative(formula("self: nll_loss2d_backward_symint(grad, self, target, weight, "
                          "reduction, ignore_index, total_weight); target: non_differentiable"));
  t.def(
       "nll_loss2d_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight, "
       "int reduction, int ignore_index, Tensor total_weight) -> Tensor")
      .tags(kBackward)
      .meta(nll_loss2d_backward_meta)
      .derivative(formula(
          "grad_output: nll_loss2d_forward(grad, target, weight, reduction, ignore_index)[0]; "
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
      .decomposition(decomp(decomps::native_dropout_full_decomp, kFullTable,
                            "ATen's CPU native_dropout kernel"));
  t.def("native_dropout_backward(Tensor grad_output, Tensor mask, float scale) -> Tensor")
      .tags(kBackward)
      .meta(native_dropout_backward_meta)
      .derivative(formula("grad_output: grad * (mask.type_as(grad) * scale); "
                          "mask: not_implemented(\"native_dropout_backward: mask\")"))
      .decomposition(decomp(decomps::native_dropout_backward_full_decomp, kFullTable,
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
  // autograd sees them, as in PyTorch (their decompositions are in this file's namespace decomps).
  // The shape ops also have the rule their decompositions come to.
  const uint32_t kCoreFull = kCoreTable | kFullTable;
  t.def("softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor")
      .tags(kCompositeImplicit)
      .meta(softmax_int_meta<false>)
      .decomposition(decomp(decomps::softmax_int_decomp, kCoreFull, "at::native::softmax"));
  t.def("log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor")
      .tags(kCompositeImplicit)
      .meta(softmax_int_meta<true>)
      .decomposition(decomp(decomps::log_softmax_int_decomp, kCoreFull, "at::native::log_softmax"));
  t.def(
       "cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, "
       "int ignore_index=-100, float label_smoothing=0.0) -> Tensor")
      .tags(kCompositeImplicit)
      .meta(cross_entropy_loss_meta)
      .decomposition(
          decomp(decomps::cross_entropy_loss_decomp, kCoreFull, "at::native::cross_entropy_loss"));
  t.def("dropout(Tensor input, float p, bool train) -> Tensor")
      .tags(kRandom | kCompositeImplicit)
      .meta(dropout_meta)
      .decomposition(
          decomp(decomps::dropout_decomp, kCoreFull, "at::native::dropout (_dropout_impl, CPU)"));
  t.def(
       "max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
       "int[2] dilation=1, bool ceil_mode=False) -> Tensor")
      .tags(kCompositeImplicit)
      .meta(max_pool2d_meta)
      .decomposition(decomp(decomps::max_pool2d_decomp, kCoreFull, "at::native::max_pool2d (CPU)"));
  t.def("adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor")
      .tags(kCompositeImplicit)
      .meta(adaptive_avg_pool2d_composite_meta)
      .decomposition(decomp(decomps::adaptive_avg_pool2d_decomp, kCoreFull,
                            "at::native::adaptive_avg_pool2d"));
  t.def("reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)")
      .tags(kRecomputable | kCompositeImplicit)
      .meta(reshape_meta)
      .derivative(formula("self: grad.reshape_symint(self.sym_sizes())"))
      .decomposition(decomp(decomps::reshape_decomp, kCoreFull, "at::native::reshape"));
  t.def("contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format) -> Tensor(a)")
      .tags(kCompositeImplicit)
      .meta(contiguous_meta)
      .derivative(formula("self: grad"))
      .decomposition(decomp(decomps::contiguous_decomp, kCoreFull, "at::native::contiguous"));
  t.def("flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)")
      .tags(kCompositeImplicit)
      .meta(flatten_meta)
      .derivative(formula("self: grad.reshape_symint(self.sym_sizes())"))
      .decomposition(decomp(decomps::flatten_decomp, kCoreFull, "at::native::flatten"));
}

}  // namespace aotgrad
