// aotgrad: meta function building blocks, each following the ATen code it is named after.
#include "aotgrad/ops/meta_util.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "aotgrad/ir/error.h"

namespace aotgrad::meta {

int64_t wrap_dim(int64_t dim, int64_t ndim) {
  int64_t n = ndim <= 0 ? 1 : ndim;
  if (dim < -n || dim >= n)
    throw Error("dimension out of range (expected to be in range of [" + std::to_string(-n) + ", " +
                std::to_string(n - 1) + "], but got " + std::to_string(dim) + ")");
  return dim < 0 ? dim + n : dim;
}

std::vector<int64_t> wrap_dims(const SymIntVector& dims, int64_t ndim) {
  std::vector<int64_t> out;
  for (auto& d : dims) {
    int64_t w = wrap_dim(d.value(), ndim);
    if (std::find(out.begin(), out.end(), w) != out.end())
      throw Error("dim " + std::to_string(w) + " appears multiple times in the list of dims");
    out.push_back(w);
  }
  return out;
}

SymIntVector broadcast_shapes(const SymIntVector& a, const SymIntVector& b) {
  size_t n = std::max(a.size(), b.size());
  SymIntVector out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t ia = static_cast<int64_t>(a.size()) - static_cast<int64_t>(n) + static_cast<int64_t>(i);
    int64_t ib = static_cast<int64_t>(b.size()) - static_cast<int64_t>(n) + static_cast<int64_t>(i);
    SymInt sa = ia >= 0 ? a[ia] : SymInt(1);
    SymInt sb = ib >= 0 ? b[ib] : SymInt(1);
    if (sa == sb || sb == 1)
      out[i] = sa;
    else if (sa == 1)
      out[i] = sb;
    else
      throw Error("the size of tensor a (" + sa.to_string() +
                  ") must match the size of tensor b (" + sb.to_string() +
                  ") at non-singleton dimension " + std::to_string(i));
  }
  return out;
}

SymIntVector broadcast_all(const std::vector<const TensorMeta*>& ts) {
  SymIntVector out;
  for (auto* t : ts)
    if (t) out = broadcast_shapes(out, t->sizes);
  return out;
}

namespace {

// c10's ResultTypeState: three priority classes, each promoted separately, then combined
// category by category.
enum Category { kBoolCat = 0, kIntCat = 1, kFloatCat = 2, kComplexCat = 3 };
Category category(ScalarType t) {
  if (t == ScalarType::Bool) return kBoolCat;
  if (is_integral(t, false)) return kIntCat;
  if (is_complex(t)) return kComplexCat;
  return kFloatCat;
}

struct ResultTypeState {
  std::optional<ScalarType> dim, zero_dim, wrapped;
  static void promote(std::optional<ScalarType>& slot, ScalarType t) {
    slot = slot ? promote_types(*slot, t) : t;
  }
  void update(const TensorMeta& t) {
    if (t.wrapped_number) {
      ScalarType current = t.dtype;
      // A wrapped float becomes the default dtype; complex the default complex.
      if (is_floating(current))
        current = kDefaultFloat;
      else if (is_complex(current))
        current = to_complex_type(kDefaultFloat);
      promote(wrapped, current);
    } else if (t.dim() == 0) {
      promote(zero_dim, t.dtype);
    } else {
      promote(dim, t.dtype);
    }
  }
  static std::optional<ScalarType> combine(std::optional<ScalarType> higher,
                                           std::optional<ScalarType> lower) {
    if (!higher) return lower;
    if (!lower) return higher;
    if (category(*higher) >= category(*lower)) return higher;
    // The lower-priority class wins only its category: promote within the higher's precision.
    if (is_complex(*lower) && !is_complex(*higher) && is_floating(*higher))
      return to_complex_type(*higher);
    return lower;
  }
  ScalarType result() const {
    auto r = combine(combine(dim, zero_dim), wrapped);
    return r ? *r : kDefaultFloat;
  }
};

}  // namespace

ScalarType result_type(const std::vector<const TensorMeta*>& tensors,
                       const std::vector<ScalarValue>& scalars) {
  ResultTypeState st;
  for (auto* t : tensors)
    if (t) st.update(*t);
  for (auto& s : scalars) {
    TensorMeta w;
    w.wrapped_number = true;
    w.dtype = s.kind == ScalarValue::Kind::Float  ? ScalarType::Float64
              : s.kind == ScalarValue::Kind::Bool ? ScalarType::Bool
                                                  : ScalarType::Int64;
    st.update(w);
  }
  return st.result();
}

bool is_non_overlapping_and_dense(const TensorMeta& t) {
  int64_t n = t.dim();
  if (n == 1) return t.sizes[0].hint_or(2) < 2 || t.strides[0] == 1;
  std::vector<int64_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  std::sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
    if (t.sizes[a].hint_or(2) < 2) return false;
    if (t.sizes[b].hint_or(2) < 2) return true;
    return t.strides[a].hint_or(0) < t.strides[b].hint_or(0);
  });
  SymInt require = 1;
  for (int64_t i = 0; i < n; ++i) {
    const SymInt& size = t.sizes[perm[i]];
    if (size.hint_or(2) < 2) return true;
    if (t.strides[perm[i]] != require) return false;
    require = require * size;
  }
  return true;
}

bool is_channels_last_contiguous(const TensorMeta& t) {
  if (t.dim() != 4 && t.dim() != 5) return false;
  // c10's is_channels_last_strides + compute_channels_last_contiguous.
  SymInt expected = 1;
  std::vector<int64_t> order =
      t.dim() == 4 ? std::vector<int64_t>{1, 3, 2, 0} : std::vector<int64_t>{1, 4, 3, 2, 0};
  for (int64_t d : order) {
    const SymInt& size = t.sizes[d];
    if (!(size == 1)) {
      if (t.strides[d] != expected) return false;
      expected = expected * size;
    }
  }
  return true;
}

TensorMeta empty(const SymIntVector& sizes, ScalarType dtype, Device device) {
  return make_tensor_meta(dtype, sizes, device);
}

namespace {

Device first_device(const std::vector<const TensorMeta*>& ins) {
  for (auto* t : ins)
    if (t && !t->wrapped_number && t->dim() > 0) return t->device;
  for (auto* t : ins)
    if (t && !t->wrapped_number) return t->device;
  return {};
}

// TensorIteratorBase::reorder_dimensions over the inputs, then allocate_or_resize_outputs.
SymIntVector permuted_output_strides(const std::vector<const TensorMeta*>& ins,
                                     const SymIntVector& shape, ScalarType out_dtype) {
  int64_t ndim = static_cast<int64_t>(shape.size());
  // stride_bytes per operand in the broadcast shape's dims (0 for broadcast dims).
  std::vector<std::vector<int64_t>> strides;
  for (auto* t : ins) {
    if (!t) continue;
    std::vector<int64_t> sb(ndim, 0);
    int64_t offset = ndim - t->dim();
    for (int64_t i = 0; i < t->dim(); ++i) {
      if (t->sizes[i] == 1 && !(shape[offset + i] == 1))
        sb[offset + i] = 0;
      else
        sb[offset + i] = t->strides[i].hint_or(1) * element_size(t->dtype);
    }
    strides.push_back(std::move(sb));
  }
  std::vector<int64_t> perm(ndim);
  for (int64_t i = 0; i < ndim; ++i) perm[i] = ndim - 1 - i;
  auto should_swap = [&](int64_t dim0, int64_t dim1) -> int {
    for (auto& sb : strides) {
      int64_t s0 = sb[dim0], s1 = sb[dim1];
      if (s0 == 0 || s1 == 0) continue;
      if (s0 < s1) return -1;
      if (s0 > s1) return 1;
      if (shape[dim0].hint_or(1) > shape[dim1].hint_or(1)) return 1;
    }
    return 0;
  };
  if (ndim > 1) {
    for (int64_t i = 1; i < ndim; ++i) {
      int64_t dim1 = i;
      for (int64_t dim0 = i - 1; dim0 >= 0; --dim0) {
        int cmp = should_swap(perm[dim0], perm[dim1]);
        if (cmp > 0) {
          std::swap(perm[dim0], perm[dim1]);
          dim1 = dim0;
        } else if (cmp < 0) {
          break;
        }
      }
    }
  }
  // compatible_stride over the permuted shape, then invert the permutation.
  SymIntVector out(ndim);
  SymInt next = 1;
  for (int64_t k = 0; k < ndim; ++k) {
    out[perm[k]] = next;
    next = next * shape[perm[k]];
  }
  (void)out_dtype;
  return out;
}

}  // namespace

TensorMeta tensor_iterator_output(const std::vector<const TensorMeta*>& ins, ScalarType dtype) {
  std::vector<const TensorMeta*> defined;
  for (auto* t : ins)
    if (t) defined.push_back(t);
  SymIntVector shape = broadcast_all(defined);
  TensorMeta out;
  out.dtype = dtype;
  out.device = first_device(defined);
  out.sizes = shape;
  // compute_fast_setup_type: all operands the same shape, then contiguous / channels-last /
  // non-overlapping-and-dense with equal strides.
  bool same_shape = true;
  for (auto* t : defined) same_shape = same_shape && t->sizes == shape;
  if (same_shape && !defined.empty()) {
    bool contiguous = true, channels_last = true, dense = true;
    for (auto* t : defined) {
      contiguous = contiguous && t->is_contiguous();
      channels_last = channels_last && is_channels_last_contiguous(*t);
      dense = dense && is_non_overlapping_and_dense(*t);
    }
    if (contiguous) {
      out.strides = contiguous_strides(shape);
      return out;
    }
    if (channels_last) {
      out.strides = channels_last_strides(shape);
      return out;
    }
    if (dense) {
      bool equal = true;
      for (auto* t : defined) equal = equal && t->strides == defined.back()->strides;
      if (equal) {
        out.strides = defined.back()->strides;
        return out;
      }
    }
  }
  out.strides = permuted_output_strides(defined, shape, dtype);
  return out;
}

TensorMeta empty_like(const TensorMeta& self, std::optional<ScalarType> dtype, MemoryFormat fmt) {
  TensorMeta out;
  out.dtype = dtype.value_or(self.dtype);
  out.device = self.device;
  out.sizes = self.sizes;
  switch (fmt) {
    case MemoryFormat::Contiguous: out.strides = contiguous_strides(self.sizes); break;
    case MemoryFormat::ChannelsLast:
    case MemoryFormat::ChannelsLast3d: out.strides = channels_last_strides(self.sizes); break;
    case MemoryFormat::Preserve:
      if (is_non_overlapping_and_dense(self))
        out.strides = self.strides;
      else
        out.strides = permuted_output_strides({&self}, self.sizes, out.dtype);
      break;
  }
  return out;
}

SymIntVector reduced_shape(const SymIntVector& sizes, const std::vector<int64_t>& dims,
                           bool keepdim) {
  SymIntVector out;
  for (int64_t i = 0; i < static_cast<int64_t>(sizes.size()); ++i) {
    bool reduced = dims.empty() || std::find(dims.begin(), dims.end(), i) != dims.end();
    if (!reduced)
      out.push_back(sizes[i]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

TensorMeta view_of(const TensorMeta& base, SymIntVector sizes, SymIntVector strides,
                   std::optional<SymInt> storage_offset) {
  TensorMeta out;
  out.dtype = base.dtype;
  out.device = base.device;
  out.sizes = std::move(sizes);
  out.strides = std::move(strides);
  out.storage_offset = storage_offset.value_or(base.storage_offset);
  return out;
}

SymIntVector infer_view_size(const SymIntVector& shape, const SymInt& numel) {
  SymIntVector out = shape;
  SymInt known = 1;
  int64_t infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (infer >= 0) throw Error("only one dimension can be inferred");
      infer = static_cast<int64_t>(i);
    } else {
      if (out[i].is_concrete() && out[i].value() < 0)
        throw Error("invalid shape dimension " + out[i].to_string());
      known = known * out[i];
    }
  }
  if (infer >= 0) {
    if (known == 0)
      throw Error("cannot reshape tensor of " + numel.to_string() + " elements into shape " +
                  to_string(shape) + " because the unspecified dimension size -1 can be any value");
    out[infer] = floordiv(numel, known);
    known = known * out[infer];
  }
  bool mismatch = !holds_by_hints(known, SizeAssumption::Equal, numel);
  if (mismatch)
    throw Error("shape '" + to_string(shape) + "' is invalid for input of size " +
                numel.to_string());
  return out;
}

std::optional<SymIntVector> compute_view_strides(const TensorMeta& t,
                                                 const SymIntVector& new_sizes) {
  // at::detail::computeStride
  const SymIntVector& oldshape = t.sizes;
  const SymIntVector& oldstride = t.strides;
  // A 0-dim tensor views as any all-ones shape with strides 1.
  if (oldshape.empty()) return SymIntVector(new_sizes.size(), SymInt(1));
  SymIntVector newstride(new_sizes.size());
  if (t.numel() == 0) {
    if (oldshape == new_sizes) return oldstride;
    return contiguous_strides(new_sizes);
  }
  int64_t view_d = static_cast<int64_t>(new_sizes.size()) - 1;
  SymInt chunk_base_stride = oldstride.empty() ? SymInt(1) : oldstride.back();
  SymInt tensor_numel = 1;
  SymInt view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(oldshape.size()) - 1; tensor_d >= 0; tensor_d--) {
    tensor_numel = tensor_numel * oldshape[tensor_d];
    bool boundary = tensor_d == 0 || (!(oldshape[tensor_d - 1] == 1) &&
                                      oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride);
    if (boundary) {
      // view_numel only grows toward tensor_numel, so `<` is `!=` (which also works symbolically).
      auto below = [&] {
        if (view_numel.is_concrete() && tensor_numel.is_concrete())
          return view_numel.value() < tensor_numel.value();
        return view_numel != tensor_numel;
      };
      while (view_d >= 0 && (below() || new_sizes[view_d] == 1)) {
        newstride[view_d] = view_numel * chunk_base_stride;
        view_numel = view_numel * new_sizes[view_d];
        view_d--;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = oldstride[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return newstride;
}

namespace {

// c10's is_channels_last_strides_2d_s4 / _3d_s5: strides ordered C fastest, then W, H, (D), N.
bool is_channels_last_strides(const TensorMeta& t, const std::vector<int64_t>& order) {
  int64_t min = 0;
  if (t.strides[1].hint_or(1) == 0) return false;
  for (int64_t d : order) {
    int64_t size = t.sizes[d].hint_or(2), stride = t.strides[d].hint_or(1);
    if (size == 0) return false;
    if (stride < min) return false;
    if (d == 0 && min == t.strides[1].hint_or(1)) return false;
    min = stride;
    if (size > 1) min *= size;
  }
  return true;
}

}  // namespace

std::vector<int64_t> memory_order(const TensorMeta& t) {
  std::vector<int64_t> order(static_cast<size_t>(t.dim()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return t.strides[static_cast<size_t>(a)].hint_or(0) >
           t.strides[static_cast<size_t>(b)].hint_or(0);
  });
  return order;
}

std::vector<int64_t> inverse_permutation(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inverse(perm.size());
  for (size_t k = 0; k < perm.size(); ++k)
    inverse[static_cast<size_t>(perm[k])] = static_cast<int64_t>(k);
  return inverse;
}

MemoryFormat suggest_memory_format(const TensorMeta& t) {
  if (t.dim() == 4 && is_channels_last_strides(t, {1, 3, 2, 0})) return MemoryFormat::ChannelsLast;
  if (t.dim() == 5 && is_channels_last_strides(t, {1, 4, 3, 2, 0}))
    return MemoryFormat::ChannelsLast3d;
  return MemoryFormat::Contiguous;
}

SymIntVector memory_format_strides(const SymIntVector& sizes, MemoryFormat fmt) {
  switch (fmt) {
    case MemoryFormat::Contiguous: return contiguous_strides(sizes);
    case MemoryFormat::Preserve: throw Error("unsupported memory format Preserve");
    case MemoryFormat::ChannelsLast:
    case MemoryFormat::ChannelsLast3d: {
      // c10::get_channels_last_strides_2d/3d: no max(size, 1) here, unlike contiguous strides.
      bool is_3d = fmt == MemoryFormat::ChannelsLast3d;
      size_t rank = is_3d ? 5 : 4;
      if (sizes.size() != rank)
        throw Error(is_3d ? "required rank 5 tensor to use channels_last_3d format"
                          : "required rank 4 tensor to use channels_last format");
      SymIntVector st(rank);
      st[1] = 1;
      st[rank - 1] = sizes[1];
      for (size_t d = rank - 2; d >= 2; --d) st[d] = st[d + 1] * sizes[d + 1];
      st[0] = st[2] * sizes[2];
      return st;
    }
  }
  return contiguous_strides(sizes);
}

TensorMeta empty_like_op(const TensorMeta& self, std::optional<ScalarType> dtype,
                         std::optional<MemoryFormat> fmt, std::optional<Device> device) {
  MemoryFormat f = fmt.value_or(MemoryFormat::Preserve);
  TensorMeta out;
  if (f == MemoryFormat::Preserve) {
    out = empty_like(self, dtype, MemoryFormat::Preserve);
  } else {
    out = make_tensor_meta(dtype.value_or(self.dtype), self.sizes, self.device);
    out.strides = memory_format_strides(self.sizes, f);
  }
  out.storage_offset = 0;
  if (device) out.device = *device;
  return out;
}

void check_non_negative_sizes(const SymIntVector& sizes) {
  for (auto& s : sizes)
    if (s.is_concrete() && s.value() < 0)
      throw Error("Trying to create tensor with negative dimension " + s.to_string() + ": " +
                  to_string(sizes));
}

// --- view geometry: the result of each ATen view op ---------------------------------------------

namespace {
int64_t hint1(const SymInt& s) { return s.hint_or(1); }
}  // namespace

// at::native::view_impl: infer one -1, then computeStride or fail.
TensorMeta view(const TensorMeta& self, const SymIntVector& size) {
  SymIntVector shape = meta::infer_view_size(size, self.numel());
  auto strides = meta::compute_view_strides(self, shape);
  if (!strides)
    throw Error(
        "view size is not compatible with input tensor's size and stride (at least one dimension "
        "spans across two contiguous subspaces). Use .reshape(...) instead.");
  return view_of(self, shape, *strides);
}

TensorMeta transpose(const TensorMeta& self, int64_t dim0, int64_t dim1) {
  int64_t n = self.dim();
  dim0 = wrap_dim(dim0, n);
  dim1 = wrap_dim(dim1, n);
  TensorMeta out = view_of(self, self.sizes, self.strides);
  if (n == 0 || dim0 == dim1) return out;
  std::swap(out.sizes[dim0], out.sizes[dim1]);
  std::swap(out.strides[dim0], out.strides[dim1]);
  return out;
}

TensorMeta t(const TensorMeta& self) {
  if (self.dim() > 2)
    throw Error("t() expects a tensor with <= 2 dimensions, but self is " +
                std::to_string(self.dim()) + "D");
  return transpose(self, 0, self.dim() < 2 ? 0 : 1);
}

// at::inferUnsqueezeGeometry
TensorMeta unsqueeze(const TensorMeta& self, int64_t dim) {
  dim = wrap_dim(dim, self.dim() + 1);
  SymIntVector sizes = self.sizes, strides = self.strides;
  SymInt stride = dim >= self.dim() ? SymInt(1) : sizes[dim] * strides[dim];
  sizes.insert(sizes.begin() + dim, SymInt(1));
  strides.insert(strides.begin() + dim, stride);
  return view_of(self, sizes, strides);
}

TensorMeta squeeze(const TensorMeta& self) {
  SymIntVector sizes, strides;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (!(self.sizes[d] == 1)) {
      sizes.push_back(self.sizes[d]);
      strides.push_back(self.strides[d]);
    }
  return view_of(self, sizes, strides);
}

TensorMeta squeeze(const TensorMeta& self, int64_t dim) {
  dim = wrap_dim(dim, self.dim());
  SymIntVector sizes = self.sizes, strides = self.strides;
  if (self.dim() > 0 && sizes[dim] == 1) {
    sizes.erase(sizes.begin() + dim);
    strides.erase(strides.begin() + dim);
  }
  return view_of(self, sizes, strides);
}

// at::native::slice: clamps start/end into [0, size], rounds the length up by step.
TensorMeta slice(const TensorMeta& self, int64_t dim, std::optional<SymInt> start,
                 std::optional<SymInt> end, const SymInt& step) {
  if (self.dim() == 0) throw Error("slice() cannot be applied to a 0-dim tensor.");
  dim = wrap_dim(dim, self.dim());
  if (step.hint_or(1) <= 0) throw Error("slice step must be positive");
  const SymInt& size = self.sizes[dim];
  SymInt s = start.value_or(SymInt(0));
  SymInt e;
  if (end) e = *end;
  bool end_is_max =
      !end || (end->is_concrete() && end->value() == std::numeric_limits<int64_t>::max());
  if (s.is_concrete() && size.is_concrete() && (end_is_max || e.is_concrete())) {
    int64_t n = size.value(), sv = s.value();
    int64_t ev = end_is_max ? std::numeric_limits<int64_t>::max() : e.value();
    if (sv < 0) sv += n;
    if (ev < 0) ev += n;
    sv = std::clamp<int64_t>(sv, 0, n);
    if (ev < sv)
      ev = sv;
    else if (ev >= n)
      ev = n;
    s = sv;
    e = ev;
  } else {
    // Symbolic bounds: wrap negative constants and clamp by hints, as PyTorch's guards would.
    if (s.is_concrete() && s.value() < 0) s = s + size;
    if (end_is_max)
      e = size;
    else if (e.is_concrete() && e.value() < 0)
      e = e + size;
    if (hint1(s) < 0) s = 0;
    if (hint1(s) > hint1(size)) s = size;
    if (hint1(e) < hint1(s))
      e = s;
    else if (hint1(e) >= hint1(size))
      e = size;
  }
  SymIntVector sizes = self.sizes, strides = self.strides;
  SymInt offset = self.storage_offset + s * strides[dim];
  SymInt len = e - s;
  sizes[dim] = step == 1 ? len : floordiv(len + step - 1, step);
  strides[dim] = strides[dim] * step;
  return view_of(self, sizes, strides, offset);
}

TensorMeta select(const TensorMeta& self, int64_t dim, int64_t index) {
  if (self.dim() == 0) throw Error("select() cannot be applied to a 0-dim tensor.");
  dim = wrap_dim(dim, self.dim());
  const SymInt& size = self.sizes[dim];
  if (size.is_concrete() && (index < -size.value() || index >= size.value()))
    throw Error("select(): index " + std::to_string(index) + " out of range for tensor of size " +
                to_string(self.sizes) + " at dimension " + std::to_string(dim));
  SymInt idx = index < 0 ? size + index : SymInt(index);
  SymIntVector sizes = self.sizes, strides = self.strides;
  SymInt offset = self.storage_offset + idx * strides[dim];
  sizes.erase(sizes.begin() + dim);
  strides.erase(strides.begin() + dim);
  return view_of(self, sizes, strides, offset);
}

// at::native::narrow, as split uses it.
TensorMeta narrow(const TensorMeta& self, int64_t dim, const SymInt& start, const SymInt& length) {
  const SymInt& size = self.sizes[dim];
  if (size.is_concrete() && start.is_concrete() && length.is_concrete() &&
      (length.value() < 0 || start.value() > size.value() - length.value()))
    throw Error("start (" + start.to_string() + ") + length (" + length.to_string() +
                ") exceeds dimension size (" + size.to_string() + ").");
  return slice(self, dim, start, start + length, 1);
}

TensorMeta as_strided(const TensorMeta& self, const SymIntVector& size, const SymIntVector& stride,
                      std::optional<SymInt> offset) {
  SymInt off = offset.value_or(self.storage_offset);
  if (size.size() != stride.size()) throw Error("mismatch in length of strides and shape");
  for (auto& s : stride)
    if (s.is_concrete() && s.value() < 0)
      throw Error("as_strided: Negative strides are not supported at the moment, got strides: " +
                  to_string(stride));
  if (off.is_concrete() && off.value() < 0)
    throw Error("Tensor: invalid storage offset " + off.to_string());
  check_non_negative_sizes(size);
  return view_of(self, size, stride, off);
}

TensorMeta diagonal(const TensorMeta& self, int64_t offset, int64_t dim1_, int64_t dim2_) {
  int64_t n = self.dim();
  int64_t dim1 = wrap_dim(dim1_, n), dim2 = wrap_dim(dim2_, n);
  if (dim1 == dim2)
    throw Error("diagonal dimensions cannot be identical " + std::to_string(dim1_) + ", " +
                std::to_string(dim2_));
  int64_t s1 = hint1(self.sizes[dim1]), s2 = hint1(self.sizes[dim2]);
  SymInt diag_size;
  bool concrete = self.sizes[dim1].is_concrete() && self.sizes[dim2].is_concrete();
  if (offset >= 0) {
    int64_t v = std::max<int64_t>(std::min(s1, s2 - offset), 0);
    diag_size =
        concrete ? SymInt(v) : (s1 <= s2 - offset ? self.sizes[dim1] : self.sizes[dim2] - offset);
  } else {
    int64_t v = std::max<int64_t>(std::min(s1 + offset, s2), 0);
    diag_size =
        concrete ? SymInt(v) : (s1 + offset <= s2 ? self.sizes[dim1] + offset : self.sizes[dim2]);
  }
  SymInt storage_offset = self.storage_offset;
  if (diag_size == 0) {
    // ATen leaves the offset alone when the diagonal is empty.
  } else if (offset >= 0) {
    storage_offset = storage_offset + self.strides[dim2] * offset;
  } else {
    storage_offset = storage_offset - self.strides[dim1] * offset;
  }
  SymIntVector sizes = self.sizes, strides = self.strides;
  for (int64_t d : {std::max(dim1, dim2), std::min(dim1, dim2)}) {
    sizes.erase(sizes.begin() + d);
    strides.erase(strides.begin() + d);
  }
  sizes.push_back(diag_size);
  strides.push_back(self.strides[dim1] + self.strides[dim2]);
  return view_of(self, sizes, strides, storage_offset);
}

// at::inferExpandGeometry
TensorMeta expand(const TensorMeta& self, const SymIntVector& size) {
  int64_t ndim = static_cast<int64_t>(size.size()), tdim = self.dim();
  if (ndim < tdim)
    throw Error("expand(" + self.annotation() + ", size=" + to_string(size) +
                "): the number of sizes provided (" + std::to_string(ndim) +
                ") must be greater or equal to the number of dimensions in the tensor (" +
                std::to_string(tdim) + ")");
  SymIntVector sizes(ndim), strides(ndim);
  for (int64_t i = ndim - 1; i >= 0; --i) {
    int64_t dim = tdim - 1 - (ndim - 1 - i);
    SymInt cur = dim >= 0 ? self.sizes[dim] : SymInt(1);
    // A 0-dim tensor expands with stride 0 everywhere (ATen reads a zero past the end).
    SymInt stride = dim >= 0       ? self.strides[dim]
                    : i + 1 < ndim ? sizes[i + 1] * strides[i + 1]
                                   : SymInt(0);
    SymInt target = size[i];
    if (target == -1) {
      if (dim < 0)
        throw Error(
            "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing "
            "dimension " +
            std::to_string(i));
      target = cur;
    }
    if (cur != target) {
      if (!(cur == 1))
        throw Error("The expanded size of the tensor (" + target.to_string() +
                    ") must match the existing size (" + cur.to_string() +
                    ") at non-singleton dimension " + std::to_string(i) + ".  Target sizes: " +
                    to_string(size) + ".  Tensor sizes: " + to_string(self.sizes));
      cur = target;
      stride = 0;
    }
    sizes[i] = cur;
    strides[i] = stride;
  }
  return view_of(self, sizes, strides);
}

ValueMeta tuple_of(std::vector<TensorMeta> ts) {
  std::vector<ValueMeta> elems;
  elems.reserve(ts.size());
  for (auto& t : ts) elems.push_back(ValueMeta::of(std::move(t)));
  return ValueMeta::tuple(std::move(elems));
}

std::string_view c10_type_name(ScalarType t) {
  static constexpr std::string_view kNames[] = {
      "Byte",  "Char",   "Short",        "Int",           "Long", "Half",
      "Float", "Double", "ComplexFloat", "ComplexDouble", "Bool", "BFloat16"};
  return kNames[static_cast<int>(t)];
}

namespace {
thread_local SizeAssumptionSink g_sink;
}  // namespace

ScopedSizeAssumptions::ScopedSizeAssumptions(SizeAssumptionSink sink) : saved_(std::move(g_sink)) {
  g_sink = std::move(sink);
}
ScopedSizeAssumptions::~ScopedSizeAssumptions() { g_sink = std::move(saved_); }

bool holds_by_hints(const SymInt& a, SizeAssumption rel, const SymInt& b) {
  if (a.is_concrete() && b.is_concrete())
    return rel == SizeAssumption::Equal ? a.value() == b.value() : a.value() >= b.value();
  if (rel == SizeAssumption::Equal && a == b) return true;
  auto ha = a.hint(), hb = b.hint();
  if (!ha || !hb) return true;  // no hint to go by: as before, the check passes
  const bool holds = rel == SizeAssumption::Equal ? *ha == *hb : *ha >= *hb;
  if (holds && g_sink) g_sink(a, rel, b);
  return holds;
}

bool known_differ(const SymInt& a, const SymInt& b) {
  return !holds_by_hints(a, SizeAssumption::Equal, b);
}

bool known_zero(const SymInt& s) { return s.is_concrete() && s.value() == 0; }

void check_floating(ScalarType t, const std::string& kernel) {
  if (!is_floating(t))
    throw Error("\"" + kernel + "\" not implemented for '" + std::string(c10_type_name(t)) + "'");
}

void check_dtype(const TensorMeta& expected, const TensorMeta& got) {
  if (expected.dtype != got.dtype)
    throw Error("expected scalar type " + std::string(c10_type_name(expected.dtype)) +
                " but found " + std::string(c10_type_name(got.dtype)));
}

TensorMeta empty_in_format(const SymIntVector& sizes, ScalarType dtype, Device device,
                           MemoryFormat fmt) {
  TensorMeta out = empty(sizes, dtype, device);
  if (fmt != MemoryFormat::Contiguous) out.strides = memory_format_strides(sizes, fmt);
  return out;
}

}  // namespace aotgrad::meta
