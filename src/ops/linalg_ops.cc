// aotgrad: matrix products and convolutions (mm, addmm, bmm, baddbmm, addmv, mv, dot, convolution
// and its backward) plus the composite linear/matmul/conv2d, with ATen 1.13's shapes, checks and
// output layouts (CPU: channels-last convolution outputs when input or weight suggests it).
#include <string>

#include "aotgrad/ops/cost_util.h"
#include "aotgrad/ops/decomp_util.h"
#include "aotgrad/ops/derivative.h"
#include "aotgrad/ops/formula.h"
#include "aotgrad/ops/meta_util.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

using meta::one;

std::string sizes_str(const SymIntVector& s) { return to_string(s); }

int64_t hint(const SymInt& s) { return s.hint_or(1); }

void check_same_dtype(const TensorMeta& expected, const TensorMeta& got) {
  if (expected.dtype != got.dtype)
    throw Error("expected scalar type " + std::string(meta::c10_type_name(expected.dtype)) +
                " but found " + std::string(meta::c10_type_name(got.dtype)));
}

// at::expand_size / inferExpandGeometry's check: `self` must broadcast to `target`.
void check_expandable(const TensorMeta& self, const SymIntVector& target) {
  if (self.dim() > static_cast<int64_t>(target.size()))
    throw Error("expand(" + std::string(short_name(self.dtype)) + sizes_str(self.sizes) +
                ", size=" + sizes_str(target) + "): the number of sizes provided (" +
                std::to_string(target.size()) +
                ") must be greater or equal to the number of dimensions in the tensor (" +
                std::to_string(self.dim()) + ")");
  int64_t off = static_cast<int64_t>(target.size()) - self.dim();
  for (int64_t i = 0; i < self.dim(); ++i) {
    const SymInt& s = self.sizes[i];
    if (s == 1 || !meta::known_differ(s, target[off + i])) continue;
    throw Error("The expanded size of the tensor (" + target[off + i].to_string() +
                ") must match the existing size (" + s.to_string() +
                ") at non-singleton dimension " + std::to_string(off + i) + ".  Target sizes: " +
                sizes_str(target) + ".  Tensor sizes: " + sizes_str(self.sizes));
  }
}

// --- matrix products ---------------------------------------------------------------------------

void check_mm_shapes(const TensorMeta& m1, const TensorMeta& m2) {
  if (meta::known_differ(m1.sizes[1], m2.sizes[0]))
    throw Error("mat1 and mat2 shapes cannot be multiplied (" + m1.sizes[0].to_string() + "x" +
                m1.sizes[1].to_string() + " and " + m2.sizes[0].to_string() + "x" +
                m2.sizes[1].to_string() + ")");
}

TensorMeta mm_out(const TensorMeta& m1, const TensorMeta& m2) {
  if (m1.dim() != 2) throw Error("self must be a matrix");
  if (m2.dim() != 2) throw Error("mat2 must be a matrix");
  check_mm_shapes(m1, m2);
  check_same_dtype(m1, m2);
  return meta::empty({m1.sizes[0], m2.sizes[1]}, m1.dtype, m1.device);
}

// mm(Tensor self, Tensor mat2)
ValueMeta mm_meta(const MetaArgs& a) { return one(mm_out(a.tensor(0), a.tensor(1))); }

TensorMeta addmm_out(const TensorMeta& self, const TensorMeta& m1, const TensorMeta& m2) {
  if (m1.dim() != 2)
    throw Error("mat1 must be a matrix, got " + std::to_string(m1.dim()) + "-D tensor");
  if (m2.dim() != 2)
    throw Error("mat2 must be a matrix, got " + std::to_string(m2.dim()) + "-D tensor");
  check_mm_shapes(m1, m2);
  check_same_dtype(m1, m2);
  SymIntVector shape = {m1.sizes[0], m2.sizes[1]};
  check_expandable(self, shape);
  if (self.dtype != m2.dtype) throw Error("self and mat2 must have the same dtype");
  return meta::empty(shape, m1.dtype, m1.device);
}

// addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1)
ValueMeta addmm_meta(const MetaArgs& a) {
  return one(addmm_out(a.tensor(0), a.tensor(1), a.tensor(2)));
}

TensorMeta bmm_out(const TensorMeta& b1, const TensorMeta& b2) {
  if (b1.dim() != 3) throw Error("batch1 must be a 3D tensor");
  if (b2.dim() != 3) throw Error("batch2 must be a 3D tensor");
  if (meta::known_differ(b2.sizes[0], b1.sizes[0]) || meta::known_differ(b2.sizes[1], b1.sizes[2]))
    throw Error("Expected size for first two dimensions of batch2 tensor to be: [" +
                b1.sizes[0].to_string() + ", " + b1.sizes[2].to_string() + "] but got: [" +
                b2.sizes[0].to_string() + ", " + b2.sizes[1].to_string() + "].");
  check_same_dtype(b1, b2);
  return meta::empty({b1.sizes[0], b1.sizes[1], b2.sizes[2]}, b1.dtype, b1.device);
}

// bmm(Tensor self, Tensor mat2)
ValueMeta bmm_meta(const MetaArgs& a) { return one(bmm_out(a.tensor(0), a.tensor(1))); }

// baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1): self is
// expanded and copied into a result of batch1's dtype.
ValueMeta baddbmm_meta(const MetaArgs& a) {
  const TensorMeta &self = a.tensor(0), &b1 = a.tensor(1), &b2 = a.tensor(2);
  if (self.dtype != b1.dtype || self.dtype != b2.dtype)
    throw Error("Input dtypes must be the same, got: input " +
                std::string(meta::c10_type_name(self.dtype)) +
                ", batch1: " + std::string(meta::c10_type_name(b1.dtype)) +
                ", batch2: " + std::string(meta::c10_type_name(b2.dtype)));
  TensorMeta out = bmm_out(b1, b2);
  check_expandable(a.tensor(0), out.sizes);
  return one(out);
}

// addmv(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1): vec's dtype.
TensorMeta addmv_out(const TensorMeta& self, const TensorMeta& mat, const TensorMeta& vec) {
  if (!(mat.dim() == 2 && vec.dim() == 1 && self.dim() <= 1))
    throw Error("vector + matrix @ vector expected, got " + std::to_string(self.dim()) + ", " +
                std::to_string(mat.dim()) + ", " + std::to_string(vec.dim()));
  if (meta::known_differ(mat.sizes[1], vec.sizes[0]) ||
      (meta::known_differ(mat.sizes[0], self.numel()) && meta::known_differ(self.numel(), 1)))
    throw Error("size mismatch, got " + (self.dim() ? self.sizes[0].to_string() : "1") + ", " +
                mat.sizes[0].to_string() + "x" + mat.sizes[1].to_string() + "," +
                vec.sizes[0].to_string());
  check_same_dtype(mat, vec);
  return meta::empty({mat.sizes[0]}, vec.dtype, vec.device);
}

ValueMeta addmv_meta(const MetaArgs& a) {
  return one(addmv_out(a.tensor(0), a.tensor(1), a.tensor(2)));
}

// mv(Tensor self, Tensor vec): addmv into an empty result of vec's options.
ValueMeta mv_meta(const MetaArgs& a) {
  const TensorMeta &mat = a.tensor(0), &vec = a.tensor(1);
  TensorMeta result = meta::empty({mat.dim() > 0 ? mat.sizes[0] : SymInt(1)}, vec.dtype);
  return one(addmv_out(result, mat, vec));
}

TensorMeta dot_out(const TensorMeta& x, const TensorMeta& y) {
  if (x.dim() != 1 || y.dim() != 1)
    throw Error("1D tensors expected, but got " + std::to_string(x.dim()) + "D and " +
                std::to_string(y.dim()) + "D tensors");
  if (x.dtype != y.dtype)
    throw Error("dot : expected both vectors to have same dtype, but found " +
                std::string(meta::c10_type_name(x.dtype)) + " and " +
                std::string(meta::c10_type_name(y.dtype)));
  if (meta::known_differ(x.sizes[0], y.sizes[0]))
    throw Error("inconsistent tensor size, expected tensor [" + x.sizes[0].to_string() +
                "] and src [" + y.sizes[0].to_string() +
                "] to have the same number of elements, but got " + x.sizes[0].to_string() +
                " and " + y.sizes[0].to_string() + " elements respectively");
  return meta::empty({}, x.dtype, x.device);
}

// dot(Tensor self, Tensor tensor)
ValueMeta dot_meta(const MetaArgs& a) { return one(dot_out(a.tensor(0), a.tensor(1))); }

// at::matmul: dot / mv / mm / folded mm / broadcast bmm by the operands' ranks. Every path gives
// a contiguous result.
TensorMeta matmul_out(const TensorMeta& t1, const TensorMeta& t2) {
  int64_t d1 = t1.dim(), d2 = t2.dim();
  if (d1 == 0 || d2 == 0)
    throw Error("both arguments to matmul need to be at least 1D, but they are " +
                std::to_string(d1) + "D and " + std::to_string(d2) + "D");
  if (d1 == 1 && d2 == 1) return dot_out(t1, t2);
  if (d1 == 2 && d2 == 1) {
    TensorMeta result = meta::empty({t1.sizes[0]}, t2.dtype);
    return addmv_out(result, t1, t2);
  }
  if (d1 == 1 && d2 == 2) {
    TensorMeta row = meta::empty({1, t1.sizes[0]}, t1.dtype, t1.device);
    TensorMeta out = mm_out(row, t2);
    return meta::empty({out.sizes[1]}, out.dtype, out.device);
  }
  if (d1 == 2 && d2 == 2) return mm_out(t1, t2);
  check_same_dtype(t1, t2);
  // Batched: the matrix dims are the last two (a vector contributes one dim, dropped at the end).
  SymIntVector b1(t1.sizes.begin(), t1.sizes.end() - std::min<int64_t>(d1, 2));
  SymIntVector b2(t2.sizes.begin(), t2.sizes.end() - std::min<int64_t>(d2, 2));
  SymInt n = d1 > 1 ? t1.sizes[d1 - 2] : SymInt(1);
  SymInt m1 = t1.sizes[d1 - 1];
  SymInt m2 = t2.sizes[d2 > 1 ? d2 - 2 : 0];
  SymInt p = d2 > 1 ? t2.sizes[d2 - 1] : SymInt(1);
  if (meta::known_differ(m1, m2)) {
    if (d2 <= 2)  // folded into mm / mv
      throw Error(d2 == 2 ? "mat1 and mat2 shapes cannot be multiplied (" +
                                (product(b1) * n).to_string() + "x" + m1.to_string() + " and " +
                                m2.to_string() + "x" + p.to_string() + ")"
                          : "size mismatch, got " + (product(b1) * n).to_string() + ", " +
                                (product(b1) * n).to_string() + "x" + m1.to_string() + "," +
                                m2.to_string());
    throw Error("Expected size for first two dimensions of batch2 tensor to be: [" +
                product(meta::broadcast_shapes(b1, b2)).to_string() + ", " + m1.to_string() +
                "] but got: [" + product(meta::broadcast_shapes(b1, b2)).to_string() + ", " +
                m2.to_string() + "].");
  }
  SymIntVector shape = meta::broadcast_shapes(b1, b2);
  if (d1 > 1) shape.push_back(n);
  if (d2 > 1) shape.push_back(p);
  return meta::empty(shape, t1.dtype, t1.device);
}

// matmul(Tensor self, Tensor other)
ValueMeta matmul_meta(const MetaArgs& a) { return one(matmul_out(a.tensor(0), a.tensor(1))); }

// Whether libtorch 2.11's linear takes its fused path for an input of rank `d` >= 3
// (_flatten_nd_linear): a contiguous input and a bias that is 1-d or squeezes to 1-d.
bool flattens_nd(const TensorMeta& x, const TensorMeta& bias) {
  if (x.dim() < 3 || !x.is_contiguous()) return false;
  int64_t squeezed = 0;
  for (const SymInt& s : bias.sizes)
    if (!(s.is_concrete() && s.value() == 1)) ++squeezed;
  return bias.dim() == 1 || squeezed == 1;
}

// linear(Tensor input, Tensor weight, Tensor? bias=None): addmm for 2-d input (and contiguous
// input of rank >= 3, flattened, when the bias squeezes to 1-d: flattens_nd) with a bias, else
// matmul(input, weight.t()) followed by an in-place bias add.
ValueMeta linear_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  const TensorMeta& w = a.tensor(1);
  const TensorMeta* bias = a.optional_tensor(2);
  if (w.dim() > 2)
    throw Error("t() expects a tensor with <= 2 dimensions, but self is " +
                std::to_string(w.dim()) + "D");
  TensorMeta wt = w.dim() == 2 ? meta::empty({w.sizes[1], w.sizes[0]}, w.dtype, w.device) : w;
  if (bias && x.dim() == 2) return one(addmm_out(*bias, x, wt));
  if (bias && flattens_nd(x, *bias)) {
    SymInt rows = 1;
    for (int64_t i = 0; i + 1 < x.dim(); ++i) rows = rows * x.sizes[i];
    TensorMeta folded = meta::empty({rows, x.sizes[x.dim() - 1]}, x.dtype, x.device);
    TensorMeta out = addmm_out(*bias, folded, wt);
    SymIntVector sizes(x.sizes.begin(), x.sizes.end() - 1);
    sizes.push_back(out.sizes[1]);
    return one(meta::empty(sizes, out.dtype, out.device));
  }
  TensorMeta out = matmul_out(x, wt);
  if (bias) {
    SymIntVector b = meta::broadcast_shapes(out.sizes, bias->sizes);
    if (b != out.sizes)
      throw Error("output with shape " + sizes_str(out.sizes) +
                  " doesn't match the broadcast shape " + sizes_str(b));
  }
  return one(out);
}

// --- convolution -------------------------------------------------------------------------------

struct ConvParams {
  SymIntVector stride, padding, dilation, output_padding;
  bool transposed = false;
  int64_t groups = 1;
};

// expand_param_if_needed: one value for every spatial dim, or exactly one per dim.
SymIntVector expand_param(const SymIntVector& v, const char* name, int64_t dim) {
  if (v.size() == 1) return SymIntVector(dim, v[0]);
  if (static_cast<int64_t>(v.size()) != dim) {
    std::string list = "[";
    for (size_t i = 0; i < v.size(); ++i) list += (i ? ", " : "") + v[i].to_string();
    throw Error(std::string("expected ") + name + " to be a single integer value or a list of " +
                std::to_string(dim) + " values to match the convolution dimensions, but got " +
                name + "=" + list + "]");
  }
  return v;
}

ConvParams conv_params(const MetaArgs& a, size_t first, int64_t dim) {
  // (stride, padding, dilation, transposed, output_padding, groups) from argument `first`.
  ConvParams p;
  p.stride = expand_param(a.int_list(first), "stride", dim);
  p.padding = expand_param(a.int_list(first + 1), "padding", dim);
  p.dilation = expand_param(a.int_list(first + 2), "dilation", dim);
  p.transposed = a.bool_value(first + 3);
  p.output_padding = expand_param(a.int_list(first + 4), "output_padding", dim);
  p.groups = a.int_value(first + 5);
  if (p.groups <= 0) throw Error("non-positive groups is not supported");
  return p;
}

// check_shape_forward of Convolution.cpp, with its messages.
void check_conv_shapes(const TensorMeta& input, const TensorMeta& weight, const TensorMeta* bias,
                       const ConvParams& p) {
  for (auto& v : p.padding)
    if (hint(v) < 0) throw Error("negative padding is not supported");
  for (auto& v : p.output_padding)
    if (hint(v) < 0) throw Error("negative output_padding is not supported");
  for (auto& v : p.stride)
    if (hint(v) <= 0) throw Error("non-positive stride is not supported");
  int64_t k = input.dim();
  const SymIntVector& ws = weight.sizes;
  if (weight.dim() != k)
    throw Error("Expected " + std::to_string(weight.dim()) + "-dimensional input for " +
                std::to_string(weight.dim()) + "-dimensional weight " + sizes_str(ws) +
                ", but got " + std::to_string(k) + "-dimensional input of size " +
                sizes_str(input.sizes) + " instead");
  if (hint(ws[0]) < p.groups)
    throw Error("Given groups=" + std::to_string(p.groups) + ", expected weight to be at least " +
                std::to_string(p.groups) + " at dimension 0, but got weight of size " +
                sizes_str(ws) + " instead");
  if (hint(ws[0]) % p.groups != 0)
    throw Error("Given groups=" + std::to_string(p.groups) +
                ", expected weight to be divisible by " + std::to_string(p.groups) +
                " at dimension 0, but got weight of size [" + sizes_str(ws) + "] instead");
  if (!p.transposed) {
    if (meta::known_differ(input.sizes[1], ws[1] * p.groups))
      throw Error("Given groups=" + std::to_string(p.groups) + ", weight of size " + sizes_str(ws) +
                  ", expected input" + sizes_str(input.sizes) + " to have " +
                  (ws[1] * p.groups).to_string() + " channels, but got " +
                  input.sizes[1].to_string() + " channels instead");
    if (bias && (bias->dim() != 1 || meta::known_differ(bias->sizes[0], ws[0])))
      throw Error("Given weight of size " + sizes_str(ws) +
                  ", expected bias to be 1-dimensional with " + ws[0].to_string() +
                  " elements, but got bias of size " + sizes_str(bias->sizes) + " instead");
    bool kernel_ok = true;
    std::string in_s, k_s;
    for (int64_t i = 2; i < k; ++i) {
      SymInt padded = input.sizes[i] + 2 * p.padding[i - 2];
      SymInt kernel = p.dilation[i - 2] * (ws[i] - 1) + 1;
      if (!meta::holds_by_hints(padded, meta::SizeAssumption::AtLeast, kernel)) kernel_ok = false;
      in_s += (i > 2 ? " x " : "") + padded.to_string();
      k_s += (i > 2 ? " x " : "") + kernel.to_string();
    }
    if (!kernel_ok)
      throw Error("Calculated padded input size per channel: (" + in_s + "). Kernel size: (" + k_s +
                  "). Kernel size can't be greater than actual input size");
  } else {
    if (meta::known_differ(input.sizes[1], ws[0]))
      throw Error("Given transposed=1, weight of size " + sizes_str(ws) + ", expected input" +
                  sizes_str(input.sizes) + " to have " + ws[0].to_string() + " channels, but got " +
                  input.sizes[1].to_string() + " channels instead");
    if (bias && (bias->dim() != 1 || meta::known_differ(bias->sizes[0], ws[1] * p.groups)))
      throw Error("Given transposed=1, weight of size " + sizes_str(ws) +
                  ", expected bias to be 1-dimensional with " + (ws[1] * p.groups).to_string() +
                  " elements, but got bias of size " + sizes_str(bias->sizes) + " instead");
    for (size_t i = 0; i < p.output_padding.size(); ++i)
      if (hint(p.output_padding[i]) >= hint(p.stride[i]) &&
          hint(p.output_padding[i]) >= hint(p.dilation[i]))
        throw Error(
            "output padding must be smaller than either stride or dilation, but got "
            "output_padding=" +
            p.output_padding[i].to_string() + " stride=" + p.stride[i].to_string() +
            " dilation=" + p.dilation[i].to_string());
  }
}

// conv_output_size / conv_input_size of ConvUtils.h.
SymIntVector conv_output_shape(const TensorMeta& input, const TensorMeta& weight,
                               const ConvParams& p) {
  SymIntVector out = {input.sizes[0], p.transposed ? weight.sizes[1] * p.groups : weight.sizes[0]};
  for (int64_t d = 2; d < input.dim(); ++d) {
    const SymInt &in = input.sizes[d], &k = weight.sizes[d];
    const SymInt &s = p.stride[d - 2], &pad = p.padding[d - 2], &dil = p.dilation[d - 2];
    if (p.transposed)
      out.push_back((in - 1) * s - 2 * pad + dil * (k - 1) + p.output_padding[d - 2] + 1);
    else
      out.push_back(floordiv(in + 2 * pad - dil * (k - 1) - 1, s) + 1);
  }
  return out;
}

// at::unsqueeze's strides for a new dim 2 (how 1.13 views a 1-d convolution as a 2-d one).
TensorMeta view4d(const TensorMeta& t) {
  TensorMeta out = t;
  out.sizes.insert(out.sizes.begin() + 2, 1);
  out.strides.insert(out.strides.begin() + 2, t.sizes[2] * t.strides[2]);
  return out;
}

// The memory format libtorch 2.11's CPU convolution backends compute in
// (_determine_backend_memory_format): a 2-d convolution, transposed or not, runs channels-last when
// its input or weight suggests it (mkldnn, and thnn for the slow kernels); a 3-d one runs
// channels-last-3d when either suggests it and mkldnn takes it (floating types other than double:
// the slow 3-d kernels are contiguous). A 1-d convolution runs as 2-d on a contiguous input; an
// empty input gives a contiguous result.
MemoryFormat conv_memory_format(const TensorMeta& input, const TensorMeta& weight) {
  if (input.numel().is_concrete() && input.numel().value() == 0) return MemoryFormat::Contiguous;
  if (input.dim() == 3) {
    TensorMeta in4 = view4d(meta::empty(input.sizes, input.dtype));
    return conv_memory_format(in4, view4d(weight));
  }
  MemoryFormat in = meta::suggest_memory_format(input), w = meta::suggest_memory_format(weight);
  if (input.dim() == 4)
    return in == MemoryFormat::ChannelsLast || w == MemoryFormat::ChannelsLast
               ? MemoryFormat::ChannelsLast
               : MemoryFormat::Contiguous;
  bool mkldnn = is_floating(input.dtype) && input.dtype != ScalarType::Float64;
  if (input.dim() == 5 && mkldnn &&
      (in == MemoryFormat::ChannelsLast3d || w == MemoryFormat::ChannelsLast3d))
    return MemoryFormat::ChannelsLast3d;
  return MemoryFormat::Contiguous;
}

// A fresh tensor of `sizes` in the layout a convolution computes in; 1-d results come back from
// the 2-d view with dim 2 squeezed out.
TensorMeta conv_result(const SymIntVector& sizes, ScalarType dtype, Device device,
                       MemoryFormat fmt) {
  TensorMeta out = meta::empty(sizes, dtype, device);
  if (fmt == MemoryFormat::ChannelsLast3d) {
    out.strides = meta::memory_format_strides(sizes, fmt);
    return out;
  }
  if (fmt != MemoryFormat::ChannelsLast) return out;
  if (sizes.size() == 3) {
    SymIntVector s4 = sizes;
    s4.insert(s4.begin() + 2, 1);
    SymIntVector st = meta::memory_format_strides(s4, fmt);
    st.erase(st.begin() + 2);
    out.strides = st;
  } else {
    out.strides = meta::memory_format_strides(sizes, fmt);
  }
  return out;
}

void check_conv_dtypes(const TensorMeta& input, const TensorMeta& weight, const TensorMeta* bias) {
  auto legacy = [](ScalarType t) {
    return "torch." + std::string(meta::c10_type_name(t)) + "Tensor";
  };
  if (input.dtype != weight.dtype)
    throw Error("Input type (" + legacy(input.dtype) + ") and weight type (" +
                legacy(weight.dtype) +
                ") should be the same or input should be a MKLDNN tensor and weight is a dense "
                "tensor");
  if (bias && bias->dtype != input.dtype)
    throw Error("Input type (" + legacy(input.dtype) + ") and bias type (" + legacy(bias->dtype) +
                ") should be the same");
}

TensorMeta convolution_out(const TensorMeta& input, const TensorMeta& weight,
                           const TensorMeta* bias, const ConvParams& p) {
  check_conv_shapes(input, weight, bias, p);
  check_conv_dtypes(input, weight, bias);
  return conv_result(conv_output_shape(input, weight, p), input.dtype, input.device,
                     conv_memory_format(input, weight));
}

// convolution(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding,
//             int[] dilation, bool transposed, int[] output_padding, int groups)
ValueMeta convolution_meta(const MetaArgs& a) {
  const TensorMeta& input = a.tensor(0);
  const TensorMeta& weight = a.tensor(1);
  int64_t dim = weight.dim() - 2;
  if (dim <= 0) throw Error("weight should have at least three dimensions");
  ConvParams p = conv_params(a, 3, dim);
  return one(convolution_out(input, weight, a.optional_tensor(2), p));
}

// conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, int[2] padding=0,
//        int[2] dilation=1, int groups=1): also takes an unbatched 3-d input.
ValueMeta conv2d_meta(const MetaArgs& a) {
  const TensorMeta& in = a.tensor(0);
  const TensorMeta& weight = a.tensor(1);
  ConvParams p;
  p.stride = expand_param(a.int_list(3), "stride", 2);
  p.padding = expand_param(a.int_list(4), "padding", 2);
  p.dilation = expand_param(a.int_list(5), "dilation", 2);
  p.output_padding = {0, 0};
  p.groups = a.int_value(6);
  if (p.groups <= 0) throw Error("non-positive groups is not supported");
  if (in.dim() != 3 && in.dim() != 4)
    throw Error("Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: " +
                sizes_str(in.sizes));
  if (in.dim() == 4) return one(convolution_out(in, weight, a.optional_tensor(2), p));
  // unsqueeze(0), convolve, squeeze(0).
  TensorMeta batched = in;
  batched.sizes.insert(batched.sizes.begin(), 1);
  batched.strides.insert(batched.strides.begin(), in.sizes[0] * in.strides[0]);
  TensorMeta out = convolution_out(batched, weight, a.optional_tensor(2), p);
  out.sizes.erase(out.sizes.begin());
  out.strides.erase(out.strides.begin());
  return one(out);
}

// convolution_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[]? bias_sizes,
//   int[] stride, int[] padding, int[] dilation, bool transposed, int[] output_padding, int groups,
//   bool[3] output_mask) -> (grad_input, grad_weight, grad_bias); None where the mask is false.
ValueMeta convolution_backward_meta(const MetaArgs& a) {
  const TensorMeta& go = a.tensor(0);
  const TensorMeta& input = a.tensor(1);
  const TensorMeta& weight = a.tensor(2);
  int64_t dim = weight.dim() - 2;
  if (dim <= 0) throw Error("weight should have at least three dimensions");
  ConvParams p = conv_params(a, 4, dim);
  std::vector<bool> mask = a.bool_list(10);
  if (mask.size() != 3) throw Error("output_mask must have 3 elements");
  check_conv_shapes(input, weight, nullptr, p);
  check_conv_dtypes(input, weight, nullptr);
  if (go.dtype != input.dtype)
    throw Error("Expected grad_output to have dtype " + std::string(torch_name(input.dtype)) +
                ", but got " + std::string(torch_name(go.dtype)));
  SymIntVector expected = conv_output_shape(input, weight, p);
  bool shape_ok = go.dim() == static_cast<int64_t>(expected.size());
  for (size_t i = 0; shape_ok && i < expected.size(); ++i)
    shape_ok = !meta::known_differ(go.sizes[i], expected[i]);
  if (!shape_ok)
    throw Error("Expected grad_output of size " + sizes_str(expected) + " but got " +
                sizes_str(go.sizes));
  MemoryFormat fmt = conv_memory_format(input, weight);
  std::vector<ValueMeta> results(3);
  if (mask[0]) results[0] = one(conv_result(input.sizes, input.dtype, input.device, fmt));
  if (mask[1]) results[1] = one(conv_result(weight.sizes, weight.dtype, weight.device, fmt));
  if (mask[2]) results[2] = one(meta::empty({go.sizes[1]}, go.dtype, go.device));
  return ValueMeta::tuple(std::move(results));
}

// --- derivative helpers (FunctionsManual.cpp)
// ------------------------------------------------------ The formulas are at the declarations (see
// Note [Derivative formulas]); inputs' formulas run in the order PyTorch's generated backward runs
// them: sorted by input name (mm: mat2 before self; addmm: mat1, mat2, self).

using V = FormulaValue;
using Vs = std::vector<FormulaValue>;

/// maybe_multiply(t, s): t itself when the Scalar s is 1, else t * s (mul.Scalar).
Node* maybe_multiply(GradBuilder& b, Node* t, const Arg& s) {
  bool one = (s.kind == Arg::Kind::Int || s.kind == Arg::Kind::Bool) ? s.i == 1
             : s.kind == Arg::Kind::Float                            ? s.f == 1.0
                                                                     : false;
  return one ? t : b.call("mul.Scalar", {Arg(t), s});
}

Node* t_of(GradBuilder& b, Node* x) { return b.call("t.default", {Arg(x)}); }
Node* mm(GradBuilder& b, Node* x, Node* y) { return b.call("mm.default", {Arg(x), Arg(y)}); }

/// A strided matrix stored column-major: strides [1, rows].
bool column_major(const SymIntVector& sizes, const SymIntVector& strides) {
  return strides[0] == 1 && strides[1] == sizes[0];
}

// mm_mat1_backward(grad, mat2, mat1_sizes, mat1_strides, mat1_layout, alpha): a column-major mat1
// gets its gradient column-major, mat2.mm(grad.t()).t().
V mm_mat1_backward(GradBuilder& b, Vs& a) {
  Node* grad = a[0].node();
  Node* mat2 = a[1].node();
  if (column_major(a[2].sym_ints(), a[3].sym_ints()))
    return V::tensor(maybe_multiply(b, t_of(b, mm(b, mat2, t_of(b, grad))), a[5].arg));
  return V::tensor(maybe_multiply(b, mm(b, grad, t_of(b, mat2)), a[5].arg));
}

// mm_mat2_backward(grad, mat1, mat2_sizes, mat2_strides, mat2_layout, alpha): a column-major mat2
// (a transposed weight) gets grad.t().mm(mat1).t().
V mm_mat2_backward(GradBuilder& b, Vs& a) {
  Node* grad = a[0].node();
  Node* mat1 = a[1].node();
  if (column_major(a[2].sym_ints(), a[3].sym_ints()))
    return V::tensor(maybe_multiply(b, t_of(b, mm(b, t_of(b, grad), mat1)), a[5].arg));
  return V::tensor(maybe_multiply(b, mm(b, t_of(b, mat1), grad), a[5].arg));
}

// x.ger(vec) = outer: x.reshape({n, 1}) * vec.
V ger(GradBuilder& b, Vs& a) {
  Node* x = a[0].node();
  const TensorMeta& m = x->tensor_meta();
  Node* col = b.call("view.default", {Arg(x), b.sizes_arg({m.sizes[0], SymInt(1)}, x)});
  return V::tensor(b.call("mul.Tensor", {Arg(col), Arg(a[1].node())}));
}

// _convolution_double_backward(ggI, ggW, ggb, gO, weight, input, stride, padding, dilation,
//   transposed, output_padding, groups, output_mask): (ggO, gI, gW).
// _convolution_double_backward (Convolution.cpp) is CompositeImplicitAutograd, so PyTorch traces
// its body; this writes the same ops for the outputs that are needed, in its order:
//   ggO = conv(ggI, w) + conv(input, ggW) + ggb viewed [1, C, 1, ...] and expanded;
//   gW  = conv(ggI^T, gO^T) with stride and dilation swapped, transposed back and narrowed
//         (per group, concatenated);
//   gI  = convT(gO, ggW) (output_padding making up the input size), or conv(gO, ggW) narrowed
//         for a transposed convolution.
V convolution_double_backward(GradBuilder& b, Vs& a) {
  auto defined = [](const V& v) { return v.is_tensor() ? v.node() : nullptr; };
  Node* ggI = defined(a[0]);
  Node* ggW = defined(a[1]);
  Node* ggb = defined(a[2]);
  Node* gO = a[3].node();
  Node* weight = a[4].node();
  Node* input = a[5].node();
  const Arg& mask = a[12].arg;
  auto needs = [&](size_t k) { return mask.list.at(k).i != 0; };
  const TensorMeta &im = input->tensor_meta(), &wm = weight->tensor_meta();
  const TensorMeta& gm = gO->tensor_meta();
  int64_t dim = wm.dim() - 2;
  auto concrete = [&](const SymIntVector& v, const char* what) {
    std::vector<int64_t> out;
    for (auto& s : expand_param(v, what, dim)) {
      if (!s.is_concrete())
        throw Error(std::string("convolution double backward needs a concrete ") + what);
      out.push_back(s.value());
    }
    return out;
  };
  auto sizes = [&](const SymIntVector& v, const char* what) {
    std::vector<int64_t> out;
    for (auto& s : v) {
      if (!s.is_concrete())
        throw Error(std::string("convolution double backward needs concrete ") + what);
      out.push_back(s.value());
    }
    return out;
  };
  std::vector<int64_t> stride = concrete(a[6].sym_ints(), "stride");
  std::vector<int64_t> padding = concrete(a[7].sym_ints(), "padding");
  std::vector<int64_t> dilation = concrete(a[8].sym_ints(), "dilation");
  std::vector<int64_t> output_padding = concrete(a[10].sym_ints(), "output_padding");
  bool transposed = a[9].to_int() != 0;
  std::vector<int64_t> in_sizes = sizes(im.sizes, "input sizes");
  std::vector<int64_t> w_sizes = sizes(wm.sizes, "weight sizes");
  std::vector<int64_t> go_sizes = sizes(gm.sizes, "grad_output sizes");
  // "hacky way of inferring the groups number for grouped Conv3D" (pytorch#36355)
  int64_t groups = a[11].to_int();
  if (!transposed && im.dim() > 4) groups = w_sizes[1] > 0 ? in_sizes[1] / w_sizes[1] : -1;
  bool nonempty = product(im.sizes) != 0;

  auto conv = [&](Node* x, Node* w, const std::vector<int64_t>& st, const std::vector<int64_t>& pad,
                  const std::vector<int64_t>& dil, bool tr, const std::vector<int64_t>& opad,
                  int64_t g) {
    return b.call("convolution.default",
                  {Arg(x), Arg(w), Arg::none(), Arg::of_ints(st), Arg::of_ints(pad),
                   Arg::of_ints(dil), Arg::of_bool(tr), Arg::of_ints(opad), Arg::of_int(g)});
  };
  auto add = [&](Node* x, Node* y) { return x ? b.call("add.Tensor", {Arg(x), Arg(y)}) : y; };
  auto transpose01 = [&](Node* x) {
    return b.call("transpose.int", {Arg(x), Arg::of_int(0), Arg::of_int(1)});
  };
  auto narrow = [&](Node* x, int64_t d, int64_t start, int64_t length) {
    return b.call("slice.Tensor",
                  {Arg(x), Arg::of_int(d), Arg::of_int(start), Arg::of_int(start + length)});
  };
  auto subvariable = [&](Node* x, int64_t d, int64_t g) {
    int64_t n = x->tensor_meta().sizes[d].value() / groups;
    return narrow(x, d, n * g, n);
  };
  // Narrows dims >= 2 of x down to `want` (the kernels do not support asymmetric padding).
  auto narrow_to = [&](Node* x, const std::vector<int64_t>& want) {
    for (size_t i = 2; i < want.size(); ++i)
      if (x->tensor_meta().sizes[i].value() > want[i])
        x = narrow(x, static_cast<int64_t>(i), 0, want[i]);
    return x;
  };

  // ggO = conv(ggI, w) + conv(i, ggW) + ggb
  Node* ggO = nullptr;
  if (needs(0)) {
    if (nonempty) {
      if (ggI)
        ggO = conv(ggI, weight, stride, padding, dilation, transposed, output_padding, groups);
      if (ggW)
        ggO = add(ggO,
                  conv(input, ggW, stride, padding, dilation, transposed, output_padding, groups));
    }
    if (ggb) {
      std::vector<int64_t> new_size(go_sizes.size(), 1);
      new_size[1] = ggb->tensor_meta().sizes[0].value();
      Node* c = ggb;
      if (!ggb->tensor_meta().is_contiguous())
        c = b.call("clone.default", {Arg(ggb)},
                   {{"memory_format", Arg::of_memory_format(MemoryFormat::Contiguous)}});
      Node* v = b.call("view.default", {Arg(c), Arg::of_ints(new_size)});
      ggO = add(ggO, b.call("expand.default", {Arg(v), Arg::of_ints(go_sizes)}));
    }
  }

  // gW = conv(ggI, gO), accumulated over the batch: stride and dilation swapped, groups split.
  Node* gW = nullptr;
  if (needs(2) && ggI) {
    Node* gOt = transpose01(gO);
    Node* ggIt = transpose01(ggI);
    if (nonempty) {
      auto one = [&](Node* x, Node* y) {  // x: ggIt (or its group), y: gOt
        return transposed ? conv(y, x, dilation, padding, stride, false, output_padding, 1)
                          : conv(x, y, dilation, padding, stride, false, output_padding, 1);
      };
      Node* gWt;
      if (groups == 1) {
        gWt = one(ggIt, gOt);
      } else {
        std::vector<Arg> parts;
        for (int64_t g = 0; g < groups; ++g) {
          Node* ggIt_g = subvariable(ggIt, 0, g);
          Node* gOt_g = subvariable(gOt, 0, g);
          parts.push_back(Arg(one(ggIt_g, gOt_g)));
        }
        gWt = b.call("cat.default", {Arg::of_list(std::move(parts)), Arg::of_int(1)});
      }
      gW = narrow_to(transpose01(gWt), w_sizes);
    }
  }

  // gI = convT(gO, ggW) if !transposed, conv(gO, ggW) if transposed
  Node* gI = nullptr;
  if (needs(1) && ggW && nonempty) {
    if (transposed) {
      gI = narrow_to(conv(gO, ggW, stride, padding, dilation, false, output_padding, groups),
                     in_sizes);
    } else {
      std::vector<int64_t> opad = output_padding;
      for (int64_t i = 0; i < dim; ++i) {
        int64_t expected = (w_sizes[i + 2] - 1) * dilation[i] - 2 * padding[i] +
                           (stride[i] * (go_sizes[i + 2] - 1) + 1);
        if (expected != in_sizes[i + 2]) opad[i] = in_sizes[i + 2] - expected;
      }
      gI = conv(gO, ggW, stride, padding, dilation, true, opad, groups);
    }
  }
  return V::tuple({V::tensor(ggO), V::tensor(gI), V::tensor(gW)});
}

void add_linalg_grad_helpers() {
  add_grad_helper("mm_mat1_backward", mm_mat1_backward);
  add_grad_helper("mm_mat2_backward", mm_mat2_backward);
  add_grad_helper("ger", ger);
  add_grad_helper("_convolution_double_backward", convolution_double_backward);
}

// --- cost facts: FLOPs (the cost model) and kernel scratch (the memory timeline) -------------

// mm(self, mat2), bmm(self, mat2): 2 * M * K * N per batch.
double mm_flops(const MetaArgs& a, const ValueMeta&) {
  const TensorMeta* x = cost::tensor_at(a, 0);
  const TensorMeta* y = cost::tensor_at(a, 1);
  return x && y ? cost::matmul_flops(*x, *y) : 0;
}

// addmm(self, mat1, mat2), baddbmm(self, batch1, batch2): the product's; the scaled add is free.
double addmm_flops(const MetaArgs& a, const ValueMeta&) {
  const TensorMeta* x = cost::tensor_at(a, 1);
  const TensorMeta* y = cost::tensor_at(a, 2);
  return x && y ? cost::matmul_flops(*x, *y) : 0;
}

// convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
// each output element of a convolution (each input element of a transposed one) takes one
// multiply-add per weight element of its channel.
double convolution_flops(const MetaArgs& a, const ValueMeta& result) {
  const TensorMeta* x = cost::tensor_at(a, 0);
  const TensorMeta* w = cost::tensor_at(a, 1);
  bool transposed = a.size() > 6 && a.arg(6).i != 0;
  if (!x || !w || !result.is_tensor()) return 0;
  return 2 * (transposed ? cost::numel(*x) : cost::numel(result.tensor)) *
         cost::per_output_channel(*w);
}

// convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
// transposed, output_padding, groups, output_mask): grad_input and grad_weight each cost one
// convolution.
double convolution_backward_flops(const MetaArgs& a, const ValueMeta&) {
  const TensorMeta* gy = cost::tensor_at(a, 0);
  const TensorMeta* x = cost::tensor_at(a, 1);
  const TensorMeta* w = cost::tensor_at(a, 2);
  bool transposed = a.size() > 7 && a.arg(7).i != 0;
  if (!gy || !x || !w) return 0;
  double conv =
      2 * (transposed ? cost::numel(*x) : cost::numel(*gy)) * cost::per_output_channel(*w);
  int convs = 2;
  if (a.size() > 10 && a.arg(10).is_list()) {
    const auto& mask = a.arg(10).list;
    convs = (mask.size() > 0 && mask[0].i != 0) + (mask.size() > 1 && mask[1].i != 0);
  }
  return conv * convs;
}

// The bytes of an f32 NCHW tensor of `sizes` with its channels padded to oneDNN's blocks of 16.
double blocked_bytes(const TensorMeta& t, bool pad_channels) {
  if (t.sizes.size() < 2) return 0;
  int64_t n = 1;
  for (size_t d = 0; d < t.sizes.size(); ++d) {
    int64_t s = t.sizes[d].hint_or(4096);
    if (d == 1 && pad_channels) s = (s + 15) / 16 * 16;
    n *= s;
  }
  return static_cast<double>(n * element_size(t.dtype));
}

// A 2-d convolution that libtorch 1.13's CPU backend gives oneDNN (use_mkldnn in
// ATen/native/Convolution.cpp, with more than one intra-op thread): float, not transposed, and
// not a small single image with a kernel of at most 3x3.
bool onednn_convolution(const MetaArgs& a) {
  const TensorMeta* in = cost::tensor_at(a, 0);
  const TensorMeta* w = cost::tensor_at(a, 1);
  if (a.size() < 9 || !in || !w || in->sizes.size() != 4 || w->sizes.size() != 4 ||
      in->dtype != ScalarType::Float32)
    return false;
  if (a.arg(6).kind == Arg::Kind::Bool && a.arg(6).i) return false;  // transposed
  const auto& is = in->sizes;
  const auto& ws = w->sizes;
  int64_t batch = is[0].hint_or(4096), numel = 1;
  for (const auto& d : is) numel *= d.hint_or(4096);
  const int64_t groups = a.arg(8).kind == Arg::Kind::Int ? a.arg(8).i : 1;
  return groups > 1 || (ws[2].hint_or(1) > 3 && ws[3].hint_or(1) > 3) || batch > 1 || numel > 20480;
}

// Scratch as measured with the tracking allocator on libtorch 1.13. A convolution oneDNN runs
// (onednn_convolution) works in blocked layouts (channels padded to 16; a 3-channel image is read
// as it is): the larger of its blocked output and its blocked input with its weight -- exact on 17
// of 21 shapes measured (4 to 256 channels, 1x1 and 3x3 kernels, strides 1 and 2, grouped and
// not), at most 8% low on the others but a 1x1 stride-2 convolution of a 3-channel image; the
// other convolutions count their weight once. 3x3 convolutions on 1x1 or 2x2 images take a path
// that allocates several times more, which is not modelled; nor does single-threaded libtorch's
// own kernel for 1x1 convolutions of fewer than 16 images, which then allocates nothing.
double convolution_scratch(const MetaArgs& a, const ValueMeta& result) {
  const TensorMeta* w = cost::tensor_at(a, 1);
  if (!w) return 0;
  const double weight = cost::nbytes(*w);
  if (!onednn_convolution(a) || !result.is_tensor()) return weight;
  const TensorMeta& in = *cost::tensor_at(a, 0);
  const bool image = in.sizes[1].hint_or(4096) <= 3;
  return std::max(blocked_bytes(result.tensor, true),
                  (image ? 0 : blocked_bytes(in, true)) + weight);
}

// convolution_backward computes grad_input and grad_weight into buffers of their own size before
// copying them into its results.
double convolution_backward_scratch(const MetaArgs&, const ValueMeta& result) {
  if (result.kind != ValueMeta::Kind::Tuple || result.elems.size() < 2) return 0;
  double bytes = 0;
  for (size_t k = 0; k < 2; ++k)
    if (result.elems[k].is_tensor()) bytes += cost::nbytes(result.elems[k].tensor);
  return bytes;
}

}  // namespace

// --- decompositions (torch/_decomp, torch/_refs, CompositeImplicitAutograd kernels) ----------

namespace decomps {
namespace {

// at::native::_matmul_impl (1.13, LinearAlgebra.cpp): dot / mv / mm for 1-d and 2-d operands; a
// >=3-d left operand against a matrix or vector is folded into one mm/mv; a 1-d or 2-d left
// operand against a >=3-d right one is the transposed fold; otherwise both are expanded to the
// broadcast batch shape and multiplied with bmm.
Node* matmul(DecompBuilder& b, Node* x, Node* y) {
  int64_t d1 = dim_of(x), d2 = dim_of(y);
  AOTGRAD_CHECK(d1 >= 1 && d2 >= 1, b.node().describe(),
                ": both arguments to matmul need to be at least 1D, but they are ", d1, "D and ",
                d2, "D");
  if (d1 == 1 && d2 == 1) return b.call("dot.default", {Arg(x), Arg(y)});
  if (d1 == 2 && d2 == 1) return b.call("mv.default", {Arg(x), Arg(y)});
  if (d1 == 1 && d2 == 2) {
    Node* u = b.call("unsqueeze.default", {Arg(x), int_arg(0)});
    Node* mm = b.call("mm.default", {Arg(u), Arg(y)});
    return b.call("squeeze.dim", {Arg(mm), int_arg(0)});  // 1.13 uses squeeze_ on the fresh result
  }
  if (d1 == 2 && d2 == 2) return b.call("mm.default", {Arg(x), Arg(y)});
  auto fold = [&](Node* t1, Node* t2) {  // t1: >= 3-d, t2: 1-d or 2-d
    SymIntVector s1 = sizes_of(t1);
    SymIntVector out(s1.begin(), s1.end() - 1);
    if (dim_of(t2) == 2) out.push_back(sizes_of(t2)[1]);
    Node* flat = b.reshape(t1, {product(s1, 0, s1.size() - 1), s1.back()});
    Node* r = dim_of(t2) == 2 ? b.call("mm.default", {Arg(flat), Arg(t2)})
                              : b.call("mv.default", {Arg(flat), Arg(t2)});
    return b.call("_unsafe_view.default", {Arg(r), Arg::of_symints(out)});
  };
  if (d1 >= 3 && d2 <= 2) return fold(x, y);
  if (d1 <= 2 && d2 >= 3) {
    Node* yt = transpose(b, y, -2, -1);
    Node* xt = d1 == 2 ? b.call("t.default", {Arg(x)}) : x;
    Node* r = fold(yt, xt);
    if (d1 == 1) return r;
    return contiguous_clone(b, transpose(b, r, -2, -1));
  }
  SymIntVector s1 = sizes_of(x), s2 = sizes_of(y);
  SymIntVector batch1(s1.begin(), s1.end() - 2), batch2(s2.begin(), s2.end() - 2);
  SymIntVector batch = meta::broadcast_shapes(batch1, batch2);
  SymInt n = s1[s1.size() - 2], m1 = s1.back(), m2 = s2[s2.size() - 2], p = s2.back();
  SymIntVector e1 = batch, e2 = batch;
  e1.push_back(n);
  e1.push_back(m1);
  e2.push_back(m2);
  e2.push_back(p);
  SymInt nb = product(batch, 0, batch.size());
  Node* xe = b.reshape(b.call("expand.default", {Arg(x), Arg::of_symints(e1)}), {nb, n, m1});
  Node* ye = b.reshape(b.call("expand.default", {Arg(y), Arg::of_symints(e2)}), {nb, m2, p});
  Node* r = b.call("bmm.default", {Arg(xe), Arg(ye)});
  SymIntVector out = batch;
  out.push_back(n);
  out.push_back(p);
  return b.call("_unsafe_view.default", {Arg(r), Arg::of_symints(out)});
}

Arg matmul_decomp(DecompBuilder& b) { return Arg(matmul(b, b.input(0), b.input(1))); }

// at::native::linear: addmm for a 2-d input with bias; a contiguous input of rank >= 3 with a bias
// that squeezes to 1-d is flattened to 2-d for addmm (_flatten_nd_linear: view, t, addmm, view);
// otherwise matmul, then the bias added.
Arg linear_decomp(DecompBuilder& b) {
  Node* x = b.input(0);
  Node* w = b.input(1);
  bool has_bias = !b.is_none(2);
  int64_t d = dim_of(x);
  if (has_bias && flattens_nd(x->tensor_meta(), b.input(2)->tensor_meta())) {
    SymIntVector s = sizes_of(x);
    SymInt rows = 1;
    for (int64_t i = 0; i + 1 < d; ++i) rows = rows * s[i];
    Node* flat = b.call("view.default", {Arg(x), Arg::of_symints({rows, s[d - 1]})});
    Node* wt = b.call("t.default", {Arg(w)});
    Node* mm = b.call("addmm.default", {Arg(b.input(2)), Arg(flat), Arg(wt)});
    SymIntVector out(s.begin(), s.end() - 1);
    out.push_back(sizes_of(w)[0]);
    return Arg(b.call("view.default", {Arg(mm), Arg::of_symints(out)}));
  }
  Node* wt = b.call("t.default", {Arg(w)});
  if (d == 2 && has_bias) return Arg(b.call("addmm.default", {Arg(b.input(2)), Arg(x), Arg(wt)}));
  Node* out = matmul(b, x, wt);
  if (has_bias)
    out =
        b.call("add.Tensor", {Arg(out), Arg(b.input(2))});  // libtorch uses add_ on a fresh result
  return Arg(out);
}

// at::native::conv2d: convolution (not transposed); an unbatched 3-d input gets a batch dim.
Arg conv2d_decomp(DecompBuilder& b) {
  Node* x = b.input(0);
  bool unbatched = dim_of(x) == 3;
  if (unbatched) x = b.call("unsqueeze.default", {Arg(x), int_arg(0)});
  Node* out =
      b.call("convolution.default", {Arg(x), b.arg(1), b.arg(2), pair_arg(b.arg(3)),
                                     pair_arg(b.arg(4)), pair_arg(b.arg(5)), Arg::of_bool(false),
                                     Arg::of_list({int_arg(0), int_arg(0)}), b.arg(6)});
  if (unbatched) out = b.call("squeeze.dim", {Arg(out), int_arg(0)});
  return Arg(out);
}

// _convolution, as the tracer records conv2d: convolution with the first nine arguments.
Arg underscore_convolution_decomp(DecompBuilder& b) {
  std::vector<Arg> args;
  for (int i = 0; i < 9; ++i) args.push_back(b.arg(i));
  return Arg(b.call("convolution.default", std::move(args)));
}

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

}  // namespace
}  // namespace decomps

void register_linalg_ops(OpTable& t) {
  add_linalg_grad_helpers();
  t.def("mm(Tensor self, Tensor mat2) -> Tensor")
      .flops(mm_flops, FlopsKind::kMatmul)
      .tags(kComputeIntensive | kCore)
      .meta(mm_meta)
      .derivative(
          formula("self: mm_mat1_backward(grad, mat2, self.sym_sizes(), self.sym_strides(), "
                  "self.layout(), 1); mat2: mm_mat2_backward(grad, self, mat2.sym_sizes(), "
                  "mat2.sym_strides(), mat2.layout(), 1)"));
  t.def("addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor")
      .flops(addmm_flops, FlopsKind::kMatmul)
      .tags(kComputeIntensive | kCore)
      .meta(addmm_meta)
      .derivative(
          formula("self: maybe_multiply(grad, beta.conj()); mat1: mm_mat1_backward(grad, "
                  "mat2, mat1.sym_sizes(), mat1.sym_strides(), mat1.layout(), alpha); mat2: "
                  "mm_mat2_backward(grad, mat1, mat2.sym_sizes(), mat2.sym_strides(), "
                  "mat2.layout(), alpha)"))
      .decomposition(decomp(decomps::addmm_full_decomp, kFullTable, "torch/_decomp: addmm"));
  t.def("bmm(Tensor self, Tensor mat2) -> Tensor")
      .flops(mm_flops, FlopsKind::kMatmul)
      .tags(kComputeIntensive | kCore)
      .meta(bmm_meta)
      .derivative(formula("self: grad.bmm(mat2.transpose(1, 2).conj()); mat2: self.transpose(1, "
                          "2).conj().bmm(grad)"));
  t.def(
       "baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> "
       "Tensor")
      .flops(addmm_flops, FlopsKind::kMatmul)
      .tags(kComputeIntensive)
      .meta(baddbmm_meta)
      .derivative(
          formula("self: maybe_multiply(grad, beta.conj()); batch1: "
                  "maybe_multiply(grad.bmm(batch2.transpose(1, 2).conj()), alpha.conj()); batch2: "
                  "maybe_multiply(batch1.transpose(1, 2).conj().bmm(grad), alpha.conj())"));
  t.def("addmv(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1) -> Tensor")
      .tags(kComputeIntensive)
      .meta(addmv_meta)
      .derivative(formula(
          "self: maybe_multiply(grad, beta.conj()); mat: maybe_multiply(grad.ger(vec.conj()), "
          "alpha.conj()); vec: maybe_multiply(mat.t().conj().mv(grad), alpha.conj())"));
  t.def("mv(Tensor self, Tensor vec) -> Tensor")
      .tags(kComputeIntensive)
      .meta(mv_meta)
      .derivative(formula("self: grad.ger(vec.conj()); vec: self.conj().t().mv(grad)"));
  t.def("dot(Tensor self, Tensor tensor) -> Tensor")
      .tags(kComputeIntensive)
      .meta(dot_meta)
      .derivative(formula("self: grad * tensor.conj(); tensor: grad * self.conj()"));
  t.def(
       "convolution(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, "
       "int[] dilation, bool transposed, int[] output_padding, int groups) -> Tensor")
      .flops(convolution_flops, FlopsKind::kConvolution)
      .scratch_bytes(convolution_scratch)
      .tags(kComputeIntensive | kCore)
      .meta(convolution_meta)
      .derivative(
          formula("input, weight, bias: convolution_backward_symint(grad, input, weight, "
                  "bias->sym_sizes(), stride, padding, dilation, transposed, output_padding, "
                  "groups, grad_input_mask)"));
  t.def(
       "convolution_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[]? "
       "bias_sizes, "
       "int[] stride, int[] padding, int[] dilation, bool transposed, int[] output_padding, "
       "int groups, bool[3] output_mask) -> (Tensor, Tensor, Tensor)")
      .flops(convolution_backward_flops, FlopsKind::kConvolution)
      .scratch_bytes(convolution_backward_scratch)
      .tags(kComputeIntensive | kCore | kBackward)
      .meta(convolution_backward_meta)
      .derivative(
          formula("grad_output, input, weight: _convolution_double_backward_symint(grads[0], "
                  "grads[1], grads[2], grad_output, weight, input, stride, padding, dilation, "
                  "transposed, output_padding, groups, grad_input_mask)"));

  // CompositeImplicitAutograd ops that libtorch front ends call; not core: they decompose before
  // autograd sees them, as in PyTorch (their decompositions are in this file's namespace decomps).
  t.def("matmul(Tensor self, Tensor other) -> Tensor")
      .tags(kComputeIntensive | kCompositeImplicit)
      .meta(matmul_meta)
      .decomposition(decomp(decomps::matmul_decomp, kCoreTable | kFullTable,
                            "at::native::matmul (_matmul_impl)"));
  t.def("linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor")
      .tags(kComputeIntensive | kCompositeImplicit)
      .meta(linear_meta)
      .decomposition(decomp(decomps::linear_decomp, kCoreTable | kFullTable, "at::native::linear"));
  // What libtorch's tracer records for conv2d and convolution (they are not traced themselves);
  // the cudnn/benchmark/tf32 switches do not change the result on the CPU.
  t.def(
       "_convolution(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, "
       "int[] dilation, bool transposed, int[] output_padding, int groups, bool benchmark, "
       "bool deterministic, bool cudnn_enabled, bool allow_tf32) -> Tensor")
      .tags(kComputeIntensive | kCompositeImplicit)
      .meta(convolution_meta)
      .decomposition(decomp(decomps::underscore_convolution_decomp, kCoreTable | kFullTable,
                            "at::native::_convolution (its CPU path is convolution's)"));
  t.def(
       "conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, int[2] padding=0, "
       "int[2] dilation=1, int groups=1) -> Tensor")
      .tags(kComputeIntensive | kCompositeImplicit)
      .meta(conv2d_meta)
      .decomposition(decomp(decomps::conv2d_decomp, kCoreTable | kFullTable, "at::native::conv2d"));
}

}  // namespace aotgrad
