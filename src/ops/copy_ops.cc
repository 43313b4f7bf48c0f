// aotgrad: ops that copy data into fresh tensors -- clone, copy, _to_copy, the view scatters
// (view inverses), cat/stack and the index copies; layouts follow ATen 1.13.
#include <algorithm>

#include "aotgrad/ops/derivative.h"
#include "aotgrad/ops/formula.h"
#include "aotgrad/ops/functionalization.h"
#include "aotgrad/ops/meta_util.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

using meta::one;

// --- helpers
// ---------------------------------------------------------------------------------------

// ATen's has_internal_overlap(t) == MemOverlap::Yes: a stride 0 over more than one element.
bool has_internal_overlap(const TensorMeta& t) {
  if (meta::is_non_overlapping_and_dense(t)) return false;
  for (size_t d = 0; d < t.sizes.size(); ++d)
    if (t.strides[d].hint_or(1) == 0 && t.sizes[d].hint_or(2) > 1) return true;
  return false;
}

// ATen's clone_preserve_strides: self's sizes, strides and storage offset on a copy of its
// storage; a self with internal overlap (an expanded tensor) is cloned (preserve format) instead.
TensorMeta clone_preserve_strides(const TensorMeta& self) {
  if (has_internal_overlap(self)) return meta::empty_like_op(self, std::nullopt, std::nullopt);
  TensorMeta r = self;
  r.requires_grad = false;
  r.wrapped_number = false;
  return r;
}

// The scatter ops write src into the view of clone_preserve_strides(self); src must fit the view.
TensorMeta scatter_output(const TensorMeta& self, const TensorMeta& view, const TensorMeta& src) {
  if (view.sizes != src.sizes)
    throw Error("expected src to have a size equal to the slice of self. src size = " +
                to_string(src.sizes) + ", slice size = " + to_string(view.sizes));
  return clone_preserve_strides(self);
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

// copy(self, src), the functional copy_: src written into clone_preserve_strides(self), so the
// result has self's layout, dtype and device; src must broadcast to self's shape.
ValueMeta copy(const MetaArgs& a) {
  const TensorMeta &self = a.tensor(0), &src = a.tensor(1);
  SymIntVector b = meta::broadcast_shapes(self.sizes, src.sizes);
  if (b != self.sizes)
    throw Error("output with shape " + to_string(self.sizes) +
                " doesn't match the broadcast shape " + to_string(b));
  return one(clone_preserve_strides(self));
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

// as_strided_scatter: the view is taken on clone_preserve_strides(self), whose storage holds self's
// extent.
ValueMeta as_strided_scatter(const MetaArgs& a) {
  const TensorMeta &self = a.tensor(0), &src = a.tensor(1);
  TensorMeta clone = clone_preserve_strides(self);
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

// repeat_interleave.Tensor(repeats, output_size): the indices 0, 1, ... each repeated repeats[i]
// times; the result's length is the sum of repeats' values, known only when output_size gives it
// (PyTorch 2.x's make_fx records it for repeat_interleave(x, n, dim), as tools/export.py writes
// it).
ValueMeta repeat_interleave_tensor(const MetaArgs& a) {
  const TensorMeta& repeats = a.tensor(0);
  if (repeats.dim() != 1) throw Error("repeat_interleave only accept 1D vector as repeat");
  if (repeats.dtype != ScalarType::Int64 && repeats.dtype != ScalarType::Int32)
    throw Error("repeats has to be Long or Int tensor");
  std::optional<SymInt> n = a.optional_sym_int(1);
  if (!n)
    throw Error(
        "the shape of its result is the sum of repeats' values (dynamic_output_shape), which "
        "aotgrad cannot know before the graph runs: give output_size");
  return one(meta::empty({*n}, repeats.dtype, repeats.device));
}

// ATen's scatter_gather_dtype_check: a non-empty index is int32 or int64.
void scatter_gather_dtype_check(const TensorMeta& index, const std::string& op) {
  if (index.numel().hint_or(1) != 0 && index.dtype != ScalarType::Int64 &&
      index.dtype != ScalarType::Int32)
    throw Error(op + "(): Expected dtype int32/int64 for index");
}

ValueMeta gather(const MetaArgs& a) {
  const TensorMeta &self = a.tensor(0), &index = a.tensor(2);
  int64_t dim = meta::wrap_dim(a.int_value(1), self.dim());
  scatter_gather_dtype_check(index, "gather");
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

// The view backward kernels: zeros of input_sizes (grad's options) with grad copied into the view,
// so grad must broadcast to the view's shape (copy_).
TensorMeta view_backward_output(const TensorMeta& grad, const SymIntVector& input_sizes,
                                const TensorMeta& view) {
  SymIntVector b = meta::broadcast_shapes(view.sizes, grad.sizes);
  if (b != view.sizes)
    throw Error("output with shape " + to_string(view.sizes) +
                " doesn't match the broadcast shape " + to_string(b));
  return meta::empty(input_sizes, grad.dtype, grad.device);
}

// slice_backward(Tensor grad_output, SymInt[] input_sizes, int dim, SymInt start, SymInt end,
//                SymInt step)
ValueMeta slice_backward(const MetaArgs& a) {
  const TensorMeta& grad = a.tensor(0);
  SymIntVector sizes = a.int_list(1);
  meta::check_non_negative_sizes(sizes);
  TensorMeta base = meta::empty(sizes, grad.dtype, grad.device);
  TensorMeta view = meta::slice(base, a.int_value(2), a.sym_int(3), a.sym_int(4), a.sym_int(5));
  return one(view_backward_output(grad, sizes, view));
}

// select_backward(Tensor grad_output, SymInt[] input_sizes, int dim, int index)
ValueMeta select_backward(const MetaArgs& a) {
  const TensorMeta& grad = a.tensor(0);
  SymIntVector sizes = a.int_list(1);
  meta::check_non_negative_sizes(sizes);
  TensorMeta base = meta::empty(sizes, grad.dtype, grad.device);
  return one(view_backward_output(grad, sizes, meta::select(base, a.int_value(2), a.int_value(3))));
}

// diagonal_backward(Tensor grad_output, SymInt[] input_sizes, int offset, int dim1, int dim2)
ValueMeta diagonal_backward(const MetaArgs& a) {
  const TensorMeta& grad = a.tensor(0);
  SymIntVector sizes = a.int_list(1);
  meta::check_non_negative_sizes(sizes);
  TensorMeta base = meta::empty(sizes, grad.dtype, grad.device);
  TensorMeta view = meta::diagonal(base, a.int_value(2), a.int_value(3), a.int_value(4));
  return one(view_backward_output(grad, sizes, view));
}

int64_t size_or_1(const TensorMeta& t, int64_t d) {
  return t.dim() == 0 ? 1 : t.sizes[d].hint_or(1);
}

// index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1): a contiguous
// result of self's shape and dtype (index_func_meta_impl).
ValueMeta index_add(const MetaArgs& a) {
  const TensorMeta &self = a.tensor(0), &index = a.tensor(2), &source = a.tensor(3);
  int64_t dim = meta::wrap_dim(a.int_value(1), self.dim());
  if (index.dim() > 1)
    throw Error("index_add_(): Index is supposed to be a vector, but got dim: " +
                std::to_string(index.dim()));
  if (index.dtype != ScalarType::Int64 && index.dtype != ScalarType::Int32)
    throw Error("index_add_(): Expected dtype int32/int64 for index");
  if (self.dtype != source.dtype)
    throw Error("index_add_(): self and source must have the same scalar type");
  if (!(dim == 0 || dim < source.dim()))
    throw Error("index_add_(): Indexing dim " + std::to_string(dim) +
                " is out of bounds of the source tensor with dim " + std::to_string(source.dim()));
  if (index.numel().hint_or(0) != size_or_1(source, dim))
    throw Error("index_add_(): Number of indices (" + index.numel().to_string() +
                ") should be equal to source.size(dim)");
  // index_func_meta_impl: self and source have the same rank and agree in every dim but `dim`.
  bool same = self.dim() == source.dim();
  for (int64_t d = 0; same && d < self.dim(); ++d)
    same = d == dim || self.sizes[d] == source.sizes[d];
  if (!same)
    throw Error(
        "source tensor shape must match self tensor shape, excluding the specified dimension. "
        "Got self.shape = " +
        to_string(self.sizes) + " source.shape = " + to_string(source.sizes));
  return one(meta::empty(self.sizes, self.dtype, self.device));
}

// scatter_add(Tensor self, int dim, Tensor index, Tensor src): scatter_meta_impl.
ValueMeta scatter_add(const MetaArgs& a) {
  const TensorMeta &self = a.tensor(0), &index = a.tensor(2), &src = a.tensor(3);
  int64_t dim = meta::wrap_dim(a.int_value(1), self.dim());
  scatter_gather_dtype_check(index, "scatter");
  if (self.dtype != src.dtype)
    throw Error("scatter(): Expected self.dtype to be equal to src.dtype");
  if (index.numel().hint_or(1) != 0) {
    int64_t n = std::max<int64_t>(self.dim(), 1);
    if (n != std::max<int64_t>(index.dim(), 1))
      throw Error("Index tensor must have the same number of dimensions as self tensor");
    if (std::max<int64_t>(src.dim(), 1) != std::max<int64_t>(index.dim(), 1))
      throw Error("Index tensor must have the same number of dimensions as src tensor");
    for (int64_t d = 0; d < n; ++d)
      if ((d != dim && size_or_1(index, d) > size_or_1(self, d)) ||
          size_or_1(index, d) > size_or_1(src, d))
        throw Error("Expected index " + to_string(index.sizes) + " to be smaller than self " +
                    to_string(self.sizes) + " apart from dimension " + std::to_string(dim) +
                    " and to be smaller size than src " + to_string(src.sizes));
  }
  return one(meta::empty(self.sizes, self.dtype, self.device));
}

// --- derivative helpers (FunctionsManual.cpp)
// ------------------------------------------------------ The formulas are at the declarations (see
// Note [Derivative formulas]); these are the named functions they call.

using V = FormulaValue;
using Vs = std::vector<FormulaValue>;

/// grad.contiguous(): grad itself, or a contiguous clone.
Node* contiguous(GradBuilder& b, Node* x) {
  if (x->tensor_meta().is_contiguous()) return x;
  return b.call("clone.default", {Arg(x)},
                {{"memory_format", Arg::of_memory_format(MemoryFormat::Contiguous)}});
}

/// at::zeros(sizes, options) with the options of a tensor (dtype, layout, device given).
Node* zeros(GradBuilder& b, const SymIntVector& sizes, const TensorMeta& options, Node* like) {
  return b.call("zeros.default", {b.sizes_arg(sizes, like)},
                {{"dtype", Arg::of_dtype(options.dtype)},
                 {"layout", Arg::of_layout(Layout::Strided)},
                 {"device", Arg::of_device(options.device)}});
}

// _to_copy_backward(grad, self.options()): grad.to(self's dtype and device).
V to_copy_backward(GradBuilder& b, Vs& a) {
  const TensorMeta& self = *a[1].options;
  Node* g = a[0].node();
  const TensorMeta& gm = g->tensor_meta();
  if (gm.dtype == self.dtype && gm.device == self.device) return a[0];
  return V::tensor(b.call("_to_copy.default", {Arg(g)},
                          {{"dtype", Arg::of_dtype(self.dtype)},
                           {"layout", Arg::of_layout(Layout::Strided)},
                           {"device", Arg::of_device(self.device)}}));
}

// as_strided_scatter_backward(grad, result, src, size, stride, storage_offset, grad_input_mask):
// self: the gradient with the scattered region zeroed, written like the other scatters'
// `X_scatter(grad, zeros_like(src), ...)`; src: grad.contiguous().as_strided_symint(size, stride,
// storage_offset). PyTorch's as_strided_scatter_backward instead returns a zero (1.13:
// uninitialized) buffer holding grad's slice -- the region that is *not* self's (see albanD's
// review of pytorch#77128, "Autograd formula looks wrong"); finite differences agree with this
// rule. The region is defined on the result's layout, which is self's (clone_preserve_strides):
// PyTorch assumes a contiguous one (Note [as_strided_scatter backward support]; libtorch's kernel
// refuses a non-contiguous self that requires grad); for another layout the gradient is first
// copied into that layout (as_strided_scatter of grad into new_empty_strided). An explicit
// storage_offset counts from the start of self's storage, which the gradient's buffer does not
// have when self has an offset of its own: that case is an Error. The result is only read for its
// layout, so it is not saved.
V as_strided_scatter_backward(GradBuilder& b, Vs& a) {
  Node* grad = a[0].node();
  const TensorMeta& out = a[1].meta();
  if (a[5].arg.kind != Arg::Kind::None && out.storage_offset.hint_or(0) != 0)
    throw Error("as_strided_scatter: the derivative for a self with storage offset " +
                out.storage_offset.to_string() +
                " and an explicit storage_offset is not supported (its region would be misplaced)");
  Node* g;
  if (out.is_contiguous()) {
    g = contiguous(b, grad);
  } else {
    Node* like = const_cast<Node*>(&b.node());
    Arg sizes = b.sizes_arg(out.sizes, like), strides = b.sizes_arg(out.strides);
    Node* buf = b.call("new_empty_strided.default", {Arg(grad), sizes, strides});
    g = b.call("as_strided_scatter.default", {Arg(buf), Arg(grad), sizes, strides, Arg::of_int(0)});
  }
  const Arg& mask = a[6].arg;
  V self, src;
  if (mask.list[0].i)
    self = V::tensor(b.call("as_strided_scatter.default",
                            {Arg(g), Arg(b.zeros_like(a[2].node())), formula_arg(b, a[3]),
                             formula_arg(b, a[4]), a[5].arg}));
  if (mask.list[1].i)
    src = V::tensor(b.call("as_strided.default",
                           {Arg(g), formula_arg(b, a[3]), formula_arg(b, a[4]), a[5].arg}));
  return V::tuple({self, src});
}

// cat_tensors_backward(grad, sizes, dtypes, dim): a narrow (slice) of grad per input; 1-d empty
// inputs get zeros({0}).
V cat_tensors_backward(GradBuilder& b, Vs& a) {
  Node* grad = a[0].node();
  std::vector<const TensorMeta*> ts;
  for (const V& e : a[1].elems) ts.push_back(&e.meta());
  auto skip = [](const TensorMeta* t) { return t->dim() == 1 && t->sizes[0] == 0; };
  int64_t dim = a[3].to_int();
  for (auto* t : ts)
    if (!skip(t)) {
      dim = meta::wrap_dim(dim, t->dim());
      break;
    }
  std::vector<V> out(ts.size());
  SymInt acc = 0;
  for (size_t k = 0; k < ts.size(); ++k) {
    if (skip(ts[k])) {
      if (b.needs(0, k)) out[k] = V::tensor(zeros(b, {0}, grad->tensor_meta(), nullptr));
      continue;
    }
    SymInt size = ts[k]->sizes[dim];
    SymInt start = acc;
    acc = acc + size;
    if (!b.needs(0, k)) continue;
    if (!start.is_concrete() || !acc.is_concrete())
      throw Error("cat backward needs concrete sizes along dim " + std::to_string(dim));
    out[k] =
        V::tensor(b.call("slice.Tensor", {Arg(grad), Arg::of_int(dim), Arg::of_int(start.value()),
                                          Arg::of_int(acc.value())}));
  }
  return V::tuple(std::move(out));
}

// stack_tensors_backward(grad, dim, dtypes): grad.select(dim, i) per input.
V stack_tensors_backward(GradBuilder& b, Vs& a) {
  std::vector<V> out(a[2].elems.size());
  for (size_t k = 0; k < out.size(); ++k)
    if (b.needs(0, k))
      out[k] = V::tensor(
          b.call("select.int", {Arg(a[0].node()), a[1].arg, Arg::of_int(static_cast<int64_t>(k))}));
  return V::tuple(std::move(out));
}

// gather_backward(grad, self, dim, index, sparse_grad)
//   = grad.new_zeros_symint(self.sym_sizes()).scatter_add_(dim, index, grad)
V gather_backward(GradBuilder& b, Vs& a) {
  if (a[4].arg.kind == Arg::Kind::Bool && a[4].arg.i)
    throw Error("gather backward with sparse_grad=True (_gather_sparse_backward) is not supported");
  Node* grad = a[0].node();
  Node* self = a[1].node();
  Node* z = b.call("new_zeros.default", {Arg(grad), b.sizes_arg(self->tensor_meta().sizes, self)});
  return V::tensor(b.call("scatter_add.default", {Arg(z), a[2].arg, a[3].arg, Arg(grad)}));
}

// scatter_add's src: grad.gather(dim, index) has index's shape; when src is larger PyTorch's
// backward fails (ScatterAddBackward0 "returned an invalid gradient"), so aotgrad places it in
// zeros of src's shape instead: the src elements the index does not reach get zero gradient.
V scatter_add_src_backward(GradBuilder& b, Vs& a) {
  Node* grad = a[0].node();
  Node* index_node = a[2].node();
  Node* src_node = a[3].node();
  const TensorMeta& src = src_node->tensor_meta();
  const TensorMeta& index = index_node->tensor_meta();
  if (index.dim() != src.dim())  // only an empty index: nothing reaches src
    return V::tensor(b.call("new_zeros.default", {Arg(grad), b.sizes_arg(src.sizes, src_node)}));
  Node* g = b.call("gather.default", {Arg(grad), a[1].arg, a[2].arg});
  if (index.sizes != src.sizes) {
    Node* z = b.call("new_zeros.default", {Arg(g), b.sizes_arg(src.sizes, src_node)});
    g = b.call("as_strided_scatter.default",
               {Arg(z), Arg(g), b.sizes_arg(index.sizes, index_node),
                b.sizes_arg(contiguous_strides(src.sizes)), Arg::of_int(0)});
  }
  return V::tensor(g);
}

void add_copy_grad_helpers() {
  add_grad_helper("_to_copy_backward", to_copy_backward);
  add_grad_helper("as_strided_scatter_backward", as_strided_scatter_backward);
  add_grad_helper("cat_tensors_backward", cat_tensors_backward);
  add_grad_helper("stack_tensors_backward", stack_tensors_backward);
  add_grad_helper("gather_backward", gather_backward);
  add_grad_helper("scatter_add_src_backward", scatter_add_src_backward);
  // index_select_backward_symint(grad, self.sym_sizes(), dim, index)
  add_grad_helper("index_select_backward(grad, self_sizes, dim, index)",
                  "grad.new_zeros_symint(self_sizes).index_add_(dim, index, grad)");
}

// copy_(self, src) functionalized: the new value is src's values (cast, broadcast) in a fresh
// tensor laid out as self, i.e. PyTorch 2.x's copy(). libtorch 1.13's aten::copy returns src itself
// when shape and dtype match and is laid out as src otherwise, so the new value could alias
// another value (an input the runtime later writes into) and an input's new base would not have
// the input's layout, which the runtime's write-back relies on. slice_scatter over all of self
// clones self and copies src in. nullptr (use aten::copy) for a number src, a 0-dim self or a
// broadcast with symbolic sizes.
Node* copy_inplace_value(InplaceValueBuilder& b) {
  Arg src_arg = b.arg(1);
  if (!src_arg.is_node()) return nullptr;
  Node* src = src_arg.node;
  Node* self = b.arg(0).node;
  const TensorMeta& sm = self->tensor_meta();
  bool cast = src->tensor_meta().dtype != sm.dtype;
  bool broadcast = src->tensor_meta().sizes != sm.sizes;
  if (broadcast && !std::all_of(sm.sizes.begin(), sm.sizes.end(),
                                [](const SymInt& x) { return x.is_concrete(); }))
    return nullptr;
  // A 0-dim self has no slice to scatter into: aten::copy, whose result requires grad when self
  // does, as eagerly the written tensor keeps requiring grad (CopyBackwards).
  if (sm.dim() == 0) return nullptr;
  if (cast) src = b.call("aten::_to_copy", {Arg(src)}, {{"dtype", Arg::of_dtype(sm.dtype)}});
  if (broadcast) src = b.call("aten::expand", {Arg(src), Arg::of_symints(sm.sizes)});
  return b.call("aten::slice_scatter", {Arg(self), Arg(src)});
}

}  // namespace

void register_copy_ops(OpTable& t) {
  add_copy_grad_helpers();
  t.def("clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor")
      .copies_value()
      .tags(kRecomputable | kCore)
      .meta(clone)
      .derivative(formula("self: grad"));
  t.def("lift_fresh_copy(Tensor self) -> Tensor")
      .copies_value()
      .tags(kRecomputable)
      .meta(lift_fresh_copy)
      .derivative(formula("self: grad"));
  t.def("copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor")
      .tags(kCore)
      .meta(copy)
      .derivative(formula("self: zeros_like(grad); src: grad"))  // sum_to, cast: autograd
      .inplace("copy_");
  t.def("copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)")
      .tags(kInplace)
      .meta(copy_)
      .inplace_value(copy_inplace_value);
  t.def(
       "_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
       "bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> "
       "Tensor")
      .copies_value()
      .tags(kRecomputable | kCore)
      .meta(to_copy)
      .derivative(formula("self: _to_copy_backward(grad, self.options())"));

  // View inverses: a copy of self with src written into the view.
  t.def(
       "slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, "
       "SymInt step=1) -> Tensor")
      .tags(kScatter | kCore)
      .meta(slice_scatter)
      .derivative(
          formula("self: slice_scatter_symint(grad, zeros_like(src), dim, start, end, step); "
                  "src: grad.slice_symint(dim, start, end, step)"));
  t.def("select_scatter(Tensor self, Tensor src, int dim, int index) -> Tensor")
      .tags(kScatter | kCore)
      .meta(select_scatter)
      .derivative(formula("self: select_scatter_symint(grad, zeros_like(src), dim, index); src: "
                          "grad.select_symint(dim, index)"));
  t.def("diagonal_scatter(Tensor self, Tensor src, int offset=0, int dim1=0, int dim2=1) -> Tensor")
      .tags(kScatter | kCore)
      .meta(diagonal_scatter)
      .derivative(formula("self: diagonal_scatter(grad, zeros_like(src), offset, dim1, dim2); src: "
                          "grad.diagonal(offset, dim1, dim2)"));
  t.def(
       "as_strided_scatter(Tensor self, Tensor src, SymInt[] size, SymInt[] stride, "
       "SymInt? storage_offset=None) -> Tensor")
      .tags(kScatter | kCore)
      .meta(as_strided_scatter)
      .derivative(formula("self, src: as_strided_scatter_backward(grad, result, src, size, stride, "
                          "storage_offset, grad_input_mask)"));

  t.def("cat(Tensor[] tensors, int dim=0) -> Tensor")
      .tags(kCore)
      .meta(cat)
      .derivative(formula("tensors: cat_tensors_backward(grad, to_args_sizes_symint(tensors), "
                          "to_args_scalartypes(tensors), dim)"));
  t.def("stack(Tensor[] tensors, int dim=0) -> Tensor")
      .meta(stack)
      .derivative(
          formula("tensors: stack_tensors_backward(grad, dim, to_args_scalartypes(tensors))"));
  t.def("index_select(Tensor self, int dim, Tensor index) -> Tensor")
      .tags(kCore)
      .meta(index_select)
      .derivative(
          formula("self: index_select_backward_symint(grad, self.sym_sizes(), dim, index)"));
  t.def("repeat_interleave.Tensor(Tensor repeats, *, int? output_size=None) -> Tensor")
      .tags(kDynamicOutputShape)
      .meta(repeat_interleave_tensor)
      .non_differentiable();
  t.def("gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor")
      .tags(kRecomputable | kCore)
      .meta(gather)
      .derivative(formula("self: gather_backward(grad, self, dim, index, sparse_grad)"));

  // The view ops' backward kernels and the index scatters their formulas use.
  t.def(
       "slice_backward(Tensor grad_output, SymInt[] input_sizes, int dim, SymInt start, "
       "SymInt end, SymInt step) -> Tensor")
      .tags(kBackward)
      .meta(slice_backward)
      .derivative(formula("grad_output: grad.slice_symint(dim, start, end, step)"));
  t.def("select_backward(Tensor grad_output, SymInt[] input_sizes, int dim, int index) -> Tensor")
      .tags(kBackward)
      .meta(select_backward)
      .derivative(formula("grad_output: grad.select_symint(dim, index)"));
  t.def(
       "diagonal_backward(Tensor grad_output, SymInt[] input_sizes, int offset, int dim1, "
       "int dim2) -> Tensor")
      .tags(kBackward)
      .meta(diagonal_backward)
      .derivative(formula("grad_output: grad.diagonal(offset, dim1, dim2)"));
  t.def(
       "index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> "
       "Tensor")
      .meta(index_add)
      .derivative(
          formula("self: grad; source: maybe_multiply(source.dim() > 0 ? grad.index_select(dim, "
                  "index).expand_as(source) : grad.index_select(dim, index.squeeze(0)), alpha)"));
  t.def("scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor")
      .meta(scatter_add)
      .derivative(formula("self: grad; src: scatter_add_src_backward(grad, dim, index, src)"));
}

}  // namespace aotgrad
