// aotgrad: ops that copy data into fresh tensors -- clone, copy, _to_copy, the view scatters
// (view inverses), cat/stack and the index copies; layouts follow ATen 1.13.
#include "aotgrad/ops/meta_util.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

using meta::one;

// --- helpers
// ---------------------------------------------------------------------------------------

// The scatter ops clone self (preserve format) and check that src fits the view of the clone.
TensorMeta scatter_output(const TensorMeta& self, const TensorMeta& view, const TensorMeta& src) {
  if (view.sizes != src.sizes)
    throw Error("expected src to have a size equal to the slice of self. src size = " +
                to_string(src.sizes) + ", slice size = " + to_string(view.sizes));
  return meta::empty_like_op(self, std::nullopt, std::nullopt);
}

// ATen's cat meta function (TORCH_META_FUNC(cat)): 1-d empty tensors are skipped, dtype is the
// promoted type, memory format is channels-last only when every input suggests it.
TensorMeta cat_impl(const std::vector<const TensorMeta*>& ts, int64_t dim) {
  if (ts.empty()) throw Error("torch.cat(): expected a non-empty list of Tensors");
  for (size_t i = 0; i < ts.size(); ++i)
    if (ts[i]->dim() == 0)
      throw Error("zero-dimensional tensor (at position " + std::to_string(i) +
                  ") cannot be concatenated");
  auto skip = [](const TensorMeta* t) { return t->dim() == 1 && t->sizes[0] == 0; };
  // legacy_cat_wrap_dim: the first non-skipped tensor decides the rank.
  for (auto* t : ts)
    if (!skip(t)) {
      dim = meta::wrap_dim(dim, t->dim());
      break;
    }
  ScalarType dtype = meta::result_type(ts);
  // cat_compute_output_memory_format
  std::optional<MemoryFormat> fmt;
  for (auto* t : ts) {
    MemoryFormat f = meta::suggest_memory_format(*t);
    if (f == MemoryFormat::Contiguous || (fmt && *fmt != f)) {
      fmt = MemoryFormat::Contiguous;
      break;
    }
    fmt = f;
  }
  const TensorMeta* ref = nullptr;
  for (auto* t : ts)
    if (!skip(t)) {
      ref = t;
      break;
    }
  SymIntVector sizes{0};
  if (ref) {
    sizes = ref->sizes;
    SymInt total = 0;
    for (size_t i = 0; i < ts.size(); ++i) {
      const TensorMeta& t = *ts[i];
      if (skip(&t)) continue;
      if (t.dim() != ref->dim())
        throw Error("Tensors must have same number of dimensions: got " +
                    std::to_string(ref->dim()) + " and " + std::to_string(t.dim()));
      for (int64_t d = 0; d < t.dim(); ++d)
        if (d != dim && t.sizes[d] != ref->sizes[d])
          throw Error("Sizes of tensors must match except in dimension " + std::to_string(dim) +
                      ". Expected size " + ref->sizes[d].to_string() + " but got size " +
                      t.sizes[d].to_string() + " for tensor number " + std::to_string(i) +
                      " in the list.");
      total = total + t.sizes[dim];
    }
    sizes[dim] = total;
  }
  TensorMeta out = meta::empty(sizes, dtype, ts[0]->device);
  out.strides = meta::memory_format_strides(sizes, *fmt);
  return out;
}

// --- meta functions
// --------------------------------------------------------------------------------

ValueMeta clone(const MetaArgs& a) {
  return one(meta::empty_like_op(a.tensor(0), std::nullopt, a.memory_format(1)));
}

ValueMeta lift_fresh_copy(const MetaArgs& a) {
  return one(meta::empty_like_op(a.tensor(0), std::nullopt, std::nullopt));
}

// copy(self, src) in 1.13 is `src.to(self's device and dtype)` expanded to self's shape by
// expand_copy: it returns src itself (an alias) when no conversion and no expansion is needed.
ValueMeta copy(const MetaArgs& a) {
  const TensorMeta &self = a.tensor(0), &src = a.tensor(1);
  TensorMeta r = src;
  r.requires_grad = false;
  r.wrapped_number = false;
  if (src.dtype != self.dtype || !(src.device == self.device))
    r = meta::empty_like_op(src, self.dtype, std::nullopt, self.device);
  if (r.sizes != self.sizes)
    r = meta::empty_like_op(meta::expand(r, self.sizes), std::nullopt, std::nullopt);
  return one(r);
}

// copy_(self, src): src must broadcast to self's shape; any dtype converts.
ValueMeta copy_(const MetaArgs& a) {
  const TensorMeta &self = a.tensor(0), &src = a.tensor(1);
  SymIntVector b = meta::broadcast_shapes(self.sizes, src.sizes);
  if (b != self.sizes)
    throw Error("output with shape " + to_string(self.sizes) +
                " doesn't match the broadcast shape " + to_string(b));
  return one(self);
}

// _to_copy(self, *, dtype, layout, device, pin_memory, non_blocking, memory_format)
ValueMeta to_copy(const MetaArgs& a) {
  if (auto layout = a.layout(2); layout && *layout != Layout::Strided)
    throw Error("_to_copy: only the strided layout is supported, got " +
                std::string(torch_name(*layout)));
  return one(meta::empty_like_op(a.tensor(0), a.dtype(1), a.memory_format(6), a.device(3)));
}

ValueMeta slice_scatter(const MetaArgs& a) {
  const TensorMeta &self = a.tensor(0), &src = a.tensor(1);
  TensorMeta view =
      meta::slice(self, a.int_value(2), a.optional_sym_int(3), a.optional_sym_int(4), a.sym_int(5));
  return one(scatter_output(self, view, src));
}

ValueMeta select_scatter(const MetaArgs& a) {
  const TensorMeta &self = a.tensor(0), &src = a.tensor(1);
  return one(scatter_output(self, meta::select(self, a.int_value(2), a.int_value(3)), src));
}

ValueMeta diagonal_scatter(const MetaArgs& a) {
  const TensorMeta &self = a.tensor(0), &src = a.tensor(1);
  TensorMeta view = meta::diagonal(self, a.int_value(2), a.int_value(3), a.int_value(4));
  return one(scatter_output(self, view, src));
}

// as_strided_scatter: the view is taken on the clone, whose storage holds exactly numel elements.
ValueMeta as_strided_scatter(const MetaArgs& a) {
  const TensorMeta &self = a.tensor(0), &src = a.tensor(1);
  TensorMeta clone = meta::empty_like_op(self, std::nullopt, std::nullopt);
  SymIntVector size = a.int_list(2), stride = a.int_list(3);
  std::optional<SymInt> offset = a.optional_sym_int(4);
  TensorMeta view = meta::as_strided(clone, size, stride, offset);
  // checkInBoundsForStorage
  int64_t needed = 0;
  bool empty = false;
  for (size_t i = 0; i < size.size(); ++i) {
    if (size[i].hint_or(1) == 0) empty = true;
    needed += (size[i].hint_or(1) - 1) * stride[i].hint_or(1);
  }
  needed = empty ? 0 : needed + 1 + view.storage_offset.hint_or(0);
  int64_t available = self.numel().hint_or(0);
  if (needed > available) {
    int64_t item = element_size(self.dtype);
    throw Error("setStorage: sizes " + to_string(size) + ", strides " + to_string(stride) +
                ", storage offset " + view.storage_offset.to_string() + ", and itemsize " +
                std::to_string(item) + " requiring a storage size of " +
                std::to_string(needed * item) + " are out of bounds for storage of size " +
                std::to_string(available * item));
  }
  return one(scatter_output(self, view, src));
}

ValueMeta cat(const MetaArgs& a) { return one(cat_impl(a.tensor_list(0), a.int_value(1))); }

// stack: all inputs the same size; cat along an existing dim then view, or cat of unsqueezed
// inputs when stacking after the last dim.
ValueMeta stack(const MetaArgs& a) {
  auto ts = a.tensor_list(0);
  if (ts.empty()) throw Error("stack expects a non-empty TensorList");
  int64_t dim = a.int_value(1);
  int64_t wrapped = meta::wrap_dim(dim, ts[0]->dim() + 1);
  for (size_t i = 1; i < ts.size(); ++i)
    if (ts[i]->sizes != ts[0]->sizes)
      throw Error("stack expects each tensor to be equal size, but got " + to_string(ts[0]->sizes) +
                  " at entry 0 and " + to_string(ts[i]->sizes) + " at entry " + std::to_string(i));
  if (wrapped < ts[0]->dim()) {
    SymIntVector result_sizes = ts[0]->sizes;
    result_sizes.insert(result_sizes.begin() + wrapped, SymInt(static_cast<int64_t>(ts.size())));
    return one(meta::view(cat_impl(ts, wrapped), result_sizes));
  }
  std::vector<TensorMeta> unsqueezed;
  for (auto* t : ts) unsqueezed.push_back(meta::unsqueeze(*t, dim));
  std::vector<const TensorMeta*> ptrs;
  for (auto& t : unsqueezed) ptrs.push_back(&t);
  return one(cat_impl(ptrs, dim));
}

ValueMeta index_select(const MetaArgs& a) {
  const TensorMeta &self = a.tensor(0), &index = a.tensor(2);
  int64_t dim = meta::wrap_dim(a.int_value(1), self.dim());
  if (index.dim() > 1) throw Error("index_select(): Index is supposed to be a vector");
  if (index.dtype != ScalarType::Int64 && index.dtype != ScalarType::Int32)
    throw Error("index_select(): Expected dtype int32 or int64 for index");
  SymIntVector sizes = self.sizes;
  if (self.dim() > 0) sizes[dim] = index.numel();
  return one(meta::empty(sizes, self.dtype, self.device));
}

ValueMeta gather(const MetaArgs& a) {
  const TensorMeta &self = a.tensor(0), &index = a.tensor(2);
  int64_t dim = meta::wrap_dim(a.int_value(1), self.dim());
  if (index.dtype != ScalarType::Int64) throw Error("gather(): Expected dtype int64 for index");
  // gather_shape_check, skipped for an empty index.
  if (index.numel().hint_or(1) != 0) {
    int64_t self_dims = std::max<int64_t>(self.dim(), 1);
    if (self_dims != std::max<int64_t>(index.dim(), 1))
      throw Error("Index tensor must have the same number of dimensions as input tensor");
    for (int64_t i = 0; i < self_dims; ++i) {
      if (i == dim) continue;
      int64_t is = index.dim() == 0 ? 1 : index.sizes[i].hint_or(1);
      int64_t ss = self.dim() == 0 ? 1 : self.sizes[i].hint_or(1);
      if (is > ss)
        throw Error("Size does not match at dimension " + std::to_string(i) + " expected index " +
                    to_string(index.sizes) + " to be smaller than self " + to_string(self.sizes) +
                    " apart from dimension " + std::to_string(dim));
    }
  }
  return one(meta::empty(index.sizes, self.dtype, self.device));
}

}  // namespace

void register_copy_ops(OpTable& t) {
  t.def("clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor")
      .tags(kCore)
      .meta(clone);
  t.def("lift_fresh_copy(Tensor self) -> Tensor").meta(lift_fresh_copy);
  t.def("copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor")
      .tags(kCore)
      .meta(copy)
      .inplace("copy_");
  t.def("copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)")
      .tags(kInplace)
      .meta(copy_);
  t.def(
       "_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
       "bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> "
       "Tensor")
      .tags(kCore)
      .meta(to_copy);

  // View inverses: a copy of self with src written into the view.
  t.def(
       "slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, "
       "SymInt step=1) -> Tensor")
      .tags(kScatter | kCore)
      .meta(slice_scatter);
  t.def("select_scatter(Tensor self, Tensor src, int dim, int index) -> Tensor")
      .tags(kScatter | kCore)
      .meta(select_scatter);
  t.def("diagonal_scatter(Tensor self, Tensor src, int offset=0, int dim1=0, int dim2=1) -> Tensor")
      .tags(kScatter | kCore)
      .meta(diagonal_scatter);
  t.def(
       "as_strided_scatter(Tensor self, Tensor src, SymInt[] size, SymInt[] stride, "
       "SymInt? storage_offset=None) -> Tensor")
      .tags(kScatter | kCore)
      .meta(as_strided_scatter);

  t.def("cat(Tensor[] tensors, int dim=0) -> Tensor").tags(kCore).meta(cat);
  t.def("stack(Tensor[] tensors, int dim=0) -> Tensor").meta(stack);
  t.def("index_select(Tensor self, int dim, Tensor index) -> Tensor")
      .tags(kCore)
      .meta(index_select);
  t.def("gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor")
      .tags(kCore)
      .meta(gather);
}

}  // namespace aotgrad
