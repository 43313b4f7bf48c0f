// aotgrad: view ops (results share the input's storage) and the in-place metadata mutations;
// sizes, strides and storage offsets follow ATen 1.13's TensorShape.cpp exactly.
#include <algorithm>
#include <climits>
#include <numeric>

#include "aotgrad/ops/decomp_util.h"
#include "aotgrad/ops/derivative.h"
#include "aotgrad/ops/formula.h"
#include "aotgrad/ops/functionalization.h"
#include "aotgrad/ops/meta_util.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

using meta::one;
using meta::view_of;
using meta::wrap_dim;

int64_t hint(const SymInt& s) { return s.hint_or(1); }

/// Tensor[] results of split/unbind: a list of views.
ValueMeta list_of(std::vector<TensorMeta> ts) {
  std::vector<ValueMeta> elems;
  for (auto& t : ts) elems.push_back(ValueMeta::of(std::move(t)));
  return ValueMeta::tuple(std::move(elems), /*is_list=*/true);
}

// --- meta functions
// --------------------------------------------------------------------------------

ValueMeta view_meta(const MetaArgs& a) { return one(meta::view(a.tensor(0), a.int_list(1))); }

ValueMeta view_as_meta(const MetaArgs& a) {
  return one(meta::view(a.tensor(0), a.tensor(1).sizes));
}

ValueMeta reshape_alias_meta(const MetaArgs& a) {
  return one(view_of(a.tensor(0), a.int_list(1), a.int_list(2)));
}

ValueMeta alias_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  return one(view_of(x, x.sizes, x.strides));
}

ValueMeta t_meta(const MetaArgs& a) { return one(meta::t(a.tensor(0))); }

ValueMeta transpose_meta(const MetaArgs& a) {
  return one(meta::transpose(a.tensor(0), a.int_value(1), a.int_value(2)));
}

ValueMeta permute_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  SymIntVector dims = a.int_list(1);
  int64_t n = x.dim();
  if (static_cast<int64_t>(dims.size()) != n)
    throw Error(
        "permute(sparse_coo): number of dimensions in the tensor input does not match the "
        "length of the desired ordering of dimensions i.e. input.dim() = " +
        std::to_string(n) + " is not equal to len(dims) = " + std::to_string(dims.size()));
  SymIntVector sizes(n), strides(n);
  std::vector<bool> seen(n, false);
  for (int64_t i = 0; i < n; ++i) {
    int64_t d = wrap_dim(dims[i].value(), n);
    if (seen[d]) throw Error("permute(): duplicate dims are not allowed.");
    seen[d] = true;
    sizes[i] = x.sizes[d];
    strides[i] = x.strides[d];
  }
  return one(view_of(x, sizes, strides));
}

ValueMeta expand_meta(const MetaArgs& a) { return one(meta::expand(a.tensor(0), a.int_list(1))); }

ValueMeta unsqueeze_meta(const MetaArgs& a) {
  return one(meta::unsqueeze(a.tensor(0), a.int_value(1)));
}

ValueMeta squeeze_meta(const MetaArgs& a) { return one(meta::squeeze(a.tensor(0))); }

ValueMeta squeeze_dim_meta(const MetaArgs& a) {
  return one(meta::squeeze(a.tensor(0), a.int_value(1)));
}

ValueMeta slice_meta(const MetaArgs& a) {
  return one(meta::slice(a.tensor(0), a.int_value(1), a.optional_sym_int(2), a.optional_sym_int(3),
                         a.sym_int(4)));
}

// narrow(self, dim, start, length): a negative start counts from the end, as at::native::narrow.
ValueMeta narrow_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  if (x.dim() == 0) throw Error("narrow() cannot be applied to a 0-dim tensor.");
  int64_t dim = meta::wrap_dim(a.int_value(1), x.dim());
  int64_t start = a.int_value(2);
  const SymInt& size = x.sizes[static_cast<size_t>(dim)];
  if (size.is_concrete()) {
    int64_t n = size.value();
    if (start < -n || start > n)
      throw Error("start out of range (expected to be in range of [" + std::to_string(-n) + ", " +
                  std::to_string(n) + "], but got " + std::to_string(start) + ")");
    if (start < 0) start += n;
  }
  return one(meta::narrow(x, dim, SymInt(start), SymInt(a.int_value(3))));
}

ValueMeta select_meta(const MetaArgs& a) {
  return one(meta::select(a.tensor(0), a.int_value(1), a.int_value(2)));
}

// split.Tensor(self, split_size, dim): at::native::split over narrow.
ValueMeta split_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  if (x.dim() == 0) throw Error("split expects at least a 1-dimensional tensor");
  int64_t split_size = a.int_value(1);
  int64_t dim = wrap_dim(a.int_value(2), x.dim());
  if (split_size < 0)
    throw Error("split expects split_size be non-negative, but got split_size=" +
                std::to_string(split_size));
  const SymInt& dim_size = x.sizes[dim];
  int64_t n = hint(dim_size);
  if (split_size == 0 && n != 0)
    throw Error("split_size can only be 0 if dimension size is 0, but got dimension size of " +
                std::to_string(n));
  int64_t num_splits =
      split_size == 0 ? 1 : std::max<int64_t>((n + split_size - 1) / split_size, 1);
  SymInt last = SymInt(split_size) - (SymInt(split_size * num_splits) - dim_size);
  std::vector<TensorMeta> out;
  for (int64_t i = 0; i < num_splits; ++i) {
    SymInt length = i < num_splits - 1 ? SymInt(split_size) : last;
    out.push_back(meta::narrow(x, dim, SymInt(i * split_size), length));
  }
  return list_of(std::move(out));
}

ValueMeta split_with_sizes_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  if (x.dim() == 0) throw Error("split expects at least a 1-dimensional tensor");
  SymIntVector sizes = a.int_list(1);
  int64_t dim = wrap_dim(a.int_value(2), x.dim());
  const SymInt& dim_size = x.sizes[dim];
  SymInt total = 0;
  for (auto& s : sizes) {
    if (s.is_concrete() && s.value() < 0)
      throw Error(
          "split_with_sizes expects split_sizes have only non-negative entries, but got "
          "split_sizes=" +
          to_string(sizes));
    total = total + s;
  }
  if (!meta::holds_by_hints(total, meta::SizeAssumption::Equal, dim_size))
    throw Error("split_with_sizes expects split_sizes to sum exactly to " + dim_size.to_string() +
                " (input tensor's size at dimension " + std::to_string(dim) +
                "), but got split_sizes=" + to_string(sizes));
  std::vector<TensorMeta> out;
  SymInt start = 0;
  for (auto& s : sizes) {
    out.push_back(meta::narrow(x, dim, start, s));
    start = start + s;
  }
  return list_of(std::move(out));
}

ValueMeta unbind_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  if (x.dim() == 0) throw Error("Dimension specified as 0 but tensor has no dimensions");
  int64_t dim = wrap_dim(a.int_value(1), x.dim());
  const SymInt& size = x.sizes[dim];
  if (!size.is_concrete())
    throw Error("unbind() needs a concrete size at dimension " + std::to_string(dim));
  std::vector<TensorMeta> out;
  for (int64_t i = 0; i < size.value(); ++i) out.push_back(meta::select(x, dim, i));
  return list_of(std::move(out));
}

ValueMeta as_strided_meta(const MetaArgs& a) {
  return one(meta::as_strided(a.tensor(0), a.int_list(1), a.int_list(2), a.optional_sym_int(3)));
}

ValueMeta diagonal_meta(const MetaArgs& a) {
  return one(meta::diagonal(a.tensor(0), a.int_value(1), a.int_value(2), a.int_value(3)));
}

// --- derivative helpers (FunctionsManual.cpp)
// ------------------------------------------------------ The formulas are at the declarations (see
// Note [Derivative formulas]); these are the named functions they call.

using V = FormulaValue;
using Vs = std::vector<FormulaValue>;

/// grad.reshape(sizes) as at::reshape traces: a view when the strides allow one, else a contiguous
/// clone and _unsafe_view.
Node* reshape(GradBuilder& b, Node* x, const SymIntVector& sizes, Node* like) {
  if (meta::compute_view_strides(x->tensor_meta(), sizes))
    return b.call("view.default", {Arg(x), b.sizes_arg(sizes, like)});
  Node* c = b.call("clone.default", {Arg(x)},
                   {{"memory_format", Arg::of_memory_format(MemoryFormat::Contiguous)}});
  return b.call("_unsafe_view.default", {Arg(c), b.sizes_arg(sizes, like)});
}

/// at::zeros(sizes, options) with the options of a tensor (dtype, layout, device given).
Node* zeros(GradBuilder& b, const SymIntVector& sizes, const TensorMeta& options, Node* like) {
  return b.call("zeros.default", {b.sizes_arg(sizes, like)},
                {{"dtype", Arg::of_dtype(options.dtype)},
                 {"layout", Arg::of_layout(Layout::Strided)},
                 {"device", Arg::of_device(options.device)}});
}

// permute_backwards(grad, dims): the inverse permutation.
V permute_backwards(GradBuilder& b, Vs& a) {
  SymIntVector fwd = a[1].sym_ints();
  int64_t n = static_cast<int64_t>(fwd.size());
  std::vector<int64_t> inv(n);
  for (int64_t i = 0; i < n; ++i) inv[wrap_dim(fwd[i].value(), n)] = i;
  return V::tensor(b.call("permute.default", {Arg(a[0].node()), Arg::of_ints(inv)}));
}

// at::sum_to(grad, sizes): the leading dims and the dims broadcast from size 1 summed.
V sum_to(GradBuilder& b, Vs& a) { return V::tensor(b.sum_to(a[0].node(), a[1].sym_ints())); }

// unsqueeze_to(grad, dim, sizes): grad unsqueezed at dim when sizes[dim] is 1;
// unsqueeze_to(grad, sizes): at every dim of size 1.
V unsqueeze_to(GradBuilder& b, Vs& a) {
  Node* g = a[0].node();
  if (a.size() == 3) {
    SymIntVector sizes = a[2].sym_ints();
    if (sizes.empty()) return a[0];
    int64_t dim = wrap_dim(a[1].to_int(), static_cast<int64_t>(sizes.size()));
    if (!(sizes[dim] == 1)) return a[0];
    return V::tensor(b.call("unsqueeze.default", {Arg(g), Arg::of_int(dim)}));
  }
  SymIntVector sizes = a[1].sym_ints();
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] == 1)
      g = b.call("unsqueeze.default", {Arg(g), Arg::of_int(static_cast<int64_t>(d))});
  return V::tensor(g);
}

// slice_backward_wrapper(grad, sizes, dim, start, end, step): slice_backward with start 0 and end
// INT64_MAX for None.
V slice_backward_wrapper(GradBuilder& b, Vs& a) {
  Arg start = a[3].is_none() ? Arg::of_int(0) : a[3].arg;
  Arg end = a[4].is_none() ? Arg::of_int(INT64_MAX) : a[4].arg;
  return V::tensor(b.call("slice_backward.default", {Arg(a[0].node()), formula_arg(b, a[1]),
                                                     a[2].arg, start, end, a[5].arg}));
}

// split_with_sizes_backward: cat of the output gradients along dim, zeros for the missing ones.
Node* split_backward(GradBuilder& b, const V& grads, const SymIntVector& split_sizes, int64_t dim) {
  const TensorMeta& self = b.input_meta(0);
  dim = wrap_dim(dim, self.dim());
  std::vector<Arg> parts;
  for (size_t j = 0; j < split_sizes.size(); ++j) {
    if (grads.elems[j].is_tensor()) {
      parts.push_back(Arg(grads.elems[j].node()));
      continue;
    }
    SymIntVector sizes = self.sizes;
    sizes[dim] = split_sizes[j];
    parts.push_back(Arg(zeros(b, sizes, self, b.input(0))));
  }
  return b.call("cat.default", {Arg::of_list(std::move(parts)), Arg::of_int(dim)});
}

// split_backward(grads, split_size, dim, sizes, options)
V split_backward(GradBuilder& b, Vs& a) {
  SymIntVector self_sizes = a[3].sym_ints();
  int64_t dim = wrap_dim(a[2].to_int(), static_cast<int64_t>(self_sizes.size()));
  int64_t split_size = a[1].to_int();
  size_t n = a[0].elems.size();
  SymIntVector sizes(n, SymInt(split_size));
  sizes[n - 1] =
      SymInt(split_size) - (SymInt(split_size * static_cast<int64_t>(n)) - self_sizes[dim]);
  return V::tensor(split_backward(b, a[0], sizes, dim));
}

// split_with_sizes_backward(grads, split_sizes, dim, sizes, options)
V split_with_sizes_backward(GradBuilder& b, Vs& a) {
  return V::tensor(split_backward(b, a[0], a[1].sym_ints(), a[2].to_int()));
}

// unbind_backward(grads, dim): stack, zeros({}).expand for missing grads.
V unbind_backward(GradBuilder& b, Vs& a) {
  const V& grads = a[0];
  Node* defined = nullptr;
  for (size_t j = 0; j < grads.elems.size() && !defined; ++j)
    if (grads.elems[j].is_tensor()) defined = grads.elems[j].node();
  const TensorMeta& like = defined->tensor_meta();
  std::vector<Arg> parts;
  for (const V& g : grads.elems) {
    if (g.is_tensor()) {
      parts.push_back(Arg(g.node()));
      continue;
    }
    Node* z = zeros(b, {}, like, nullptr);
    parts.push_back(Arg(b.call("expand.default", {Arg(z), b.sizes_arg(like.sizes, defined)})));
  }
  return V::tensor(b.call("stack.default", {Arg::of_list(std::move(parts)), a[1].arg}));
}

// as_strided_backward's helpers (NOTE [ Detecting Memory Overlap Within A Strided Tensor ]).
bool maybe_overlapping_memory(const std::vector<int64_t>& sizes,
                              const std::vector<int64_t>& strides) {
  std::vector<size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](size_t i, size_t j) { return strides[i] < strides[j]; });
  int64_t max_index_in_slice = 0;
  for (size_t i : order) {
    if (strides[i] <= max_index_in_slice) return true;
    max_index_in_slice += strides[i] * (sizes[i] - 1);
  }
  return false;
}

int64_t min_storage_size(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                         int64_t storage_offset) {
  int64_t size = storage_offset + 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) return storage_offset;
    size += (sizes[i] - 1) * strides[i];
  }
  return size;
}

std::vector<int64_t> concrete(const SymIntVector& v, const char* what) {
  std::vector<int64_t> out;
  for (auto& s : v) {
    if (!s.is_concrete())
      throw Error(std::string("as_strided backward needs concrete ") + what + ", got " +
                  to_string(v));
    out.push_back(s.value());
  }
  return out;
}

// as_strided_backward(grad, TensorGeometry(self), size, stride, storage_offset). Functionalized:
// the storage is new_zeros, `storage.as_strided(out).copy_(grad)` is an as_strided_scatter, and
// `index_add_` / `div_` are their out-of-place forms.
V as_strided_backward(GradBuilder& b, Vs& a) {
  const TensorMeta& in = a[1].meta();
  std::vector<int64_t> sizes = concrete(a[2].sym_ints(), "sizes");
  std::vector<int64_t> strides = concrete(a[3].sym_ints(), "strides");
  int64_t in_offset = concrete({in.storage_offset}, "storage offsets")[0];
  int64_t offset = in_offset;
  if (!a[4].is_none()) {
    const Arg& o = a[4].arg;
    SymInt off = o.is_node() ? o.node->meta().sym : SymInt(o.i);
    offset = concrete({off}, "storage offsets")[0];
  }
  std::vector<int64_t> in_sizes = concrete(in.sizes, "sizes");
  std::vector<int64_t> in_strides = concrete(in.strides, "strides");
  Node* grad = a[0].node();
  auto all_zeros = [&] { return V::tensor(zeros(b, in.sizes, grad->tensor_meta(), a[1].node())); };

  // Output geometry: size-0 dims give zeros, size-1 dims are squeezed, expanded dims summed.
  std::vector<int64_t> out_sizes_, out_strides_;
  for (int64_t i = static_cast<int64_t>(sizes.size()) - 1; i >= 0; --i) {
    if (sizes[i] == 0) return all_zeros();
    if (sizes[i] == 1) {
      grad = b.call("squeeze.dim", {Arg(grad), Arg::of_int(i)});
    } else if (strides[i] == 0) {
      grad = b.call("sum.dim_IntList", {Arg(grad), Arg::of_list({Arg::of_int(i)})});
    } else {
      out_sizes_.insert(out_sizes_.begin(), sizes[i]);
      out_strides_.insert(out_strides_.begin(), strides[i]);
    }
  }
  bool out_overlap = maybe_overlapping_memory(out_sizes_, out_strides_);
  std::vector<int64_t> inp_sizes_, inp_strides_;
  for (int64_t i = static_cast<int64_t>(in_sizes.size()) - 1; i >= 0; --i) {
    if (in_sizes[i] == 0) return all_zeros();
    if (in_sizes[i] != 1) {
      inp_sizes_.insert(inp_sizes_.begin(), in_sizes[i]);
      inp_strides_.insert(inp_strides_.begin(), in_strides[i]);
    }
  }
  bool inp_overlap = maybe_overlapping_memory(inp_sizes_, inp_strides_);

  int64_t shared_offset = std::min(in_offset, offset);
  int64_t inp_effective_offset = in_offset - shared_offset;
  int64_t out_effective_offset = offset - shared_offset;
  int64_t base_size = std::max(min_storage_size(inp_sizes_, inp_strides_, inp_effective_offset),
                               min_storage_size(out_sizes_, out_strides_, out_effective_offset));
  Node* storage = b.call("new_zeros.default", {Arg(grad), Arg::of_ints({base_size})});
  const TensorMeta& gm = grad->tensor_meta();
  Node* indices = nullptr;
  if (inp_overlap || out_overlap)
    indices = b.call("arange.start", {Arg::of_int(0), Arg::of_int(base_size)},
                     {{"dtype", Arg::of_dtype(ScalarType::Int64)},
                      {"layout", Arg::of_layout(Layout::Strided)},
                      {"device", Arg::of_device(gm.device)}});
  auto flat = [&](Node* x) { return reshape(b, x, {x->tensor_meta().numel()}, nullptr); };
  auto strided = [&](Node* x, const std::vector<int64_t>& sz, const std::vector<int64_t>& st,
                     int64_t off) {
    return b.call("as_strided.default",
                  {Arg(x), Arg::of_ints(sz), Arg::of_ints(st), Arg::of_int(off)});
  };
  if (out_overlap) {
    Node* out_indices = strided(indices, out_sizes_, out_strides_, out_effective_offset);
    // `storage.index_add_(0, out_indices.reshape(-1), grad.reshape(-1))`: GCC evaluates the
    // arguments right to left, so PyTorch's traces reshape grad first.
    Node* flat_grad = flat(grad);
    storage = b.call("index_add.default",
                     {Arg(storage), Arg::of_int(0), Arg(flat(out_indices)), Arg(flat_grad)});
  } else {
    storage = b.call("as_strided_scatter.default",
                     {Arg(storage), Arg(grad), Arg::of_ints(out_sizes_), Arg::of_ints(out_strides_),
                      Arg::of_int(out_effective_offset)});
  }
  if (inp_overlap) {
    Node* count = b.call("zeros_like.default", {Arg(storage)},
                         {{"memory_format", Arg::of_memory_format(MemoryFormat::Contiguous)}});
    Node* inp_indices = flat(strided(indices, inp_sizes_, inp_strides_, inp_effective_offset));
    Node* one = b.call("ones.default", {Arg::of_ints({1})},
                       {{"dtype", Arg::of_dtype(gm.dtype)},
                        {"layout", Arg::of_layout(Layout::Strided)},
                        {"device", Arg::of_device(gm.device)}});
    Node* ones =
        b.call("expand.default", {Arg(one), Arg::of_symints(inp_indices->tensor_meta().sizes)});
    count = b.call("index_add.default", {Arg(count), Arg::of_int(0), Arg(inp_indices), Arg(ones)});
    storage = b.call("div.Tensor", {Arg(storage), Arg(count)});
  }
  return V::tensor(strided(storage, in_sizes, in_strides, inp_effective_offset));
}

void add_view_grad_helpers() {
  add_grad_helper("permute_backwards", permute_backwards);
  add_grad_helper("sum_to", sum_to);
  add_grad_helper("unsqueeze_to", unsqueeze_to);
  add_grad_helper("slice_backward_wrapper", slice_backward_wrapper);
  add_grad_helper("split_backward", split_backward);
  add_grad_helper("split_with_sizes_backward", split_with_sizes_backward);
  add_grad_helper("unbind_backward", unbind_backward);
  add_grad_helper("as_strided_backward", as_strided_backward);
}

// --- view inverses (FunctionalInverses.cpp): the base after the view got a new value ------------

Node* t_inverse(ViewInverseBuilder& b) { return b.call("aten::t", {Arg(b.value())}); }

Node* transpose_inverse(ViewInverseBuilder& b) {
  return b.call(b.op(), {Arg(b.value()), b.arg(1), b.arg(2)});
}

// permute: the inverse permutation.
Node* permute_inverse(ViewInverseBuilder& b) {
  const Arg& dims = b.arg(1);
  int64_t nd = static_cast<int64_t>(dims.list.size());
  std::vector<Arg> inv(nd);
  for (int64_t i = 0; i < nd; ++i) inv[wrap_dim(dims.list[i].i, nd)] = Arg::of_int(i);
  return b.call(b.op(), {Arg(b.value()), Arg::of_list(std::move(inv))});
}

Node* slice_inverse(ViewInverseBuilder& b) {
  return b.call("aten::slice_scatter",
                {Arg(b.base()), Arg(b.value()), b.arg(1), b.arg(2), b.arg(3), b.arg(4)});
}

// narrow(self, dim, start, length) is slice(self, dim, start, start + length).
Node* narrow_inverse(ViewInverseBuilder& b) {
  const TensorMeta& base = b.base_meta();
  int64_t dim = wrap_dim(b.arg(1).i, base.dim());
  int64_t start = b.arg(2).i;
  if (start < 0) {
    const SymInt& size = base.sizes[static_cast<size_t>(dim)];
    if (!size.is_concrete())
      throw Error(
          "cannot write through 'aten::narrow' with a negative start of a tensor with "
          "symbolic sizes");
    start += size.value();
  }
  return b.call("aten::slice_scatter", {Arg(b.base()), Arg(b.value()), Arg::of_int(dim),
                                        Arg::of_int(start), Arg::of_int(start + b.arg(3).i)});
}

Node* select_inverse(ViewInverseBuilder& b) {
  return b.call("aten::select_scatter", {Arg(b.base()), Arg(b.value()), b.arg(1), b.arg(2)});
}

Node* diagonal_inverse(ViewInverseBuilder& b) {
  return b.call("aten::diagonal_scatter",
                {Arg(b.base()), Arg(b.value()), b.arg(1), b.arg(2), b.arg(3)});
}

Node* as_strided_inverse(ViewInverseBuilder& b) {
  return b.call("aten::as_strided_scatter",
                {Arg(b.base()), Arg(b.value()), b.arg(1), b.arg(2), b.arg(3)});
}

// unbind: element k is select(dim, k).
Node* unbind_inverse(ViewInverseBuilder& b) {
  return b.call("aten::select_scatter",
                {Arg(b.base()), Arg(b.value()), b.arg(1), Arg::of_int(b.element())});
}

// split / split_with_sizes: element k is a slice along dim.
Node* split_inverse(ViewInverseBuilder& b) {
  const TensorMeta& base = b.base_meta();
  int64_t dim = wrap_dim(b.arg(2).i, base.dim());
  int64_t total = base.sizes[dim].value();
  int64_t k = b.element(), start = 0, end = 0;
  if (b.arg(1).is_list()) {  // split_with_sizes
    for (int64_t j = 0; j < k; ++j) start += b.arg(1).list[j].i;
    end = start + b.arg(1).list[k].i;
  } else {
    int64_t split = b.arg(1).i;
    start = split * k;
    end = std::min(total, start + split);
  }
  return b.call("aten::slice_scatter", {Arg(b.base()), Arg(b.value()), Arg::of_int(dim),
                                        Arg::of_int(start), Arg::of_int(end)});
}

Node* expand_inverse(ViewInverseBuilder&) {
  throw Error("cannot functionalize a write into an expanded view (several elements share memory)");
}

}  // namespace

// --- decompositions (torch/_decomp, torch/_refs, CompositeImplicitAutograd kernels) ----------

namespace decomps {
namespace {

// at::native::narrow: slice(self, dim, start, start + length), a negative start counted from the
// end.
Arg narrow_decomp(DecompBuilder& b) {
  Node* x = b.input(0);
  int64_t dim = meta::wrap_dim(b.int_arg(1), dim_of(x));
  int64_t start = b.int_arg(2);
  if (start < 0) start += sizes_of(x)[static_cast<size_t>(dim)].value();
  return Arg(b.call("slice.Tensor",
                    {Arg(x), int_arg(dim), int_arg(start), int_arg(start + b.int_arg(3))}));
}

}  // namespace
}  // namespace decomps

void register_view_ops(OpTable& t) {
  add_view_grad_helpers();
  t.def("view(Tensor(a) self, SymInt[] size) -> Tensor(a)")
      .tags(kViewOp | kView | kCore)
      .meta(view_meta)
      .view_inverse(reshape_view_inverse)
      .derivative(formula("self: grad.reshape_symint(self.sym_sizes())"));
  // _unsafe_view's result shares self's storage although its schema does not say so.
  t.def("_unsafe_view(Tensor self, SymInt[] size) -> Tensor")
      .tags(kRecomputable)
      .meta(view_meta)
      .undeclared_alias(0)
      .derivative(formula("self: grad.reshape_symint(self.sym_sizes())"));
  t.def("_reshape_alias(Tensor(a) self, SymInt[] size, SymInt[] stride) -> Tensor(a)")
      .tags(kView)
      .meta(reshape_alias_meta)
      .view_inverse(reshape_view_inverse)
      .derivative(formula("self: grad.reshape_symint(self.sym_sizes())"));
  // view_as is CompositeImplicitAutograd (view(other.sizes())): view's formula.
  t.def("view_as(Tensor(a) self, Tensor other) -> Tensor(a)")
      .tags(kView)
      .meta(view_as_meta)
      .view_inverse(reshape_view_inverse)
      // `other` gives only its sizes: it gets no gradient.
      .derivative(
          formula("self: grad.reshape_symint(self.sym_sizes()); other: non_differentiable"));
  t.def("alias(Tensor(a) self) -> Tensor(a)")
      .tags(kViewOp | kView | kCore)
      .meta(alias_meta)
      .view_inverse(identity_view_inverse)
      .derivative(formula("self: grad"));
  t.def("detach(Tensor(a) self) -> Tensor(a)")
      .tags(kView)
      .meta(alias_meta)
      .view_inverse(identity_view_inverse)
      .non_differentiable();  // derivatives.yaml: output_differentiability: [False]
  t.def("t(Tensor(a) self) -> Tensor(a)")
      .tags(kViewOp | kView)
      .meta(t_meta)
      .view_inverse(t_inverse)
      .derivative(formula("self: grad.t()"))
      .inplace("t_");
  t.def("transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)")
      .tags(kView)
      .meta(transpose_meta)
      .view_inverse(transpose_inverse)
      .derivative(formula("self: grad.transpose(dim0, dim1)"))
      .inplace("transpose_");
  t.def("permute(Tensor(a) self, int[] dims) -> Tensor(a)")
      .tags(kViewOp | kView | kCore)
      .meta(permute_meta)
      .view_inverse(permute_inverse)
      .derivative(formula("self: permute_backwards(grad, dims)"));
  t.def("expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)")
      .tags(kViewOp | kView | kCore)
      .meta(expand_meta)
      .view_inverse(expand_inverse)
      .derivative(formula("self: at::sum_to(grad, self.sym_sizes())"));
  t.def("unsqueeze(Tensor(a) self, int dim) -> Tensor(a)")
      .tags(kViewOp | kView | kCore)
      .meta(unsqueeze_meta)
      .view_inverse(reshape_view_inverse)
      .derivative(formula("self: grad.squeeze(dim)"))
      .inplace("unsqueeze_");
  t.def("squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)")
      .tags(kViewOp | kView | kCore)
      .meta(squeeze_dim_meta)
      .view_inverse(reshape_view_inverse)
      .derivative(formula("self: unsqueeze_to(grad, dim, self.sym_sizes())"))
      .inplace("squeeze_.dim");
  t.def("squeeze(Tensor(a) self) -> Tensor(a)")
      .tags(kViewOp | kView | kCore)
      .meta(squeeze_meta)
      .view_inverse(reshape_view_inverse)
      .derivative(formula("self: unsqueeze_to(grad, self.sym_sizes())"))
      .inplace("squeeze_");
  t.def(
       "slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, "
       "SymInt step=1) -> Tensor(a)")
      .tags(kViewOp | kView | kCore)
      .meta(slice_meta)
      .view_inverse(slice_inverse)
      .derivative(
          formula("self: slice_backward_wrapper(grad, self.sym_sizes(), dim, start, end, step)"))
      .scatter("slice_scatter");
  t.def("narrow(Tensor(a) self, int dim, int start, int length) -> Tensor(a)")
      .tags(kView | kCompositeImplicit)
      .meta(narrow_meta)
      .view_inverse(narrow_inverse)
      .decomposition(decomp(decomps::narrow_decomp, kCoreTable | kFullTable, "at::native::narrow"));
  t.def("select.int(Tensor(a) self, int dim, int index) -> Tensor(a)")
      .tags(kViewOp | kView | kCore)
      .meta(select_meta)
      .view_inverse(select_inverse)
      .derivative(formula("self: select_backward_symint(grad, self.sym_sizes(), dim, index)"))
      .scatter("select_scatter");
  t.def("split.Tensor(Tensor(a -> *) self, int split_size, int dim=0) -> Tensor(a)[]")
      .tags(kViewOp | kView | kCore)
      .meta(split_meta)
      .view_inverse(split_inverse)
      .derivative(formula(
          "self: split_backward(grads, split_size, dim, self.sym_sizes(), self.options())"));
  t.def("split_with_sizes(Tensor(a -> *) self, int[] split_sizes, int dim=0) -> Tensor(a)[]")
      .tags(kView | kCore)
      .meta(split_with_sizes_meta)
      .view_inverse(split_inverse)
      .derivative(
          formula("self: split_with_sizes_backward(grads, split_sizes, dim, self.sym_sizes(), "
                  "self.options())"));
  t.def("unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]")
      .tags(kView)
      .meta(unbind_meta)
      .view_inverse(unbind_inverse)
      .derivative(formula("self: unbind_backward(grads, dim)"));
  t.def(
       "as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) "
       "-> Tensor(a)")
      .tags(kViewOp | kView | kCore)
      .meta(as_strided_meta)
      .view_inverse(as_strided_inverse, /*absolute=*/true)
      .derivative(formula(
          "self: as_strided_backward(grad, TensorGeometry(self), size, stride, storage_offset)"))
      .scatter("as_strided_scatter")
      .inplace("as_strided_");
  t.def("diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)")
      .tags(kView)
      .meta(diagonal_meta)
      .view_inverse(diagonal_inverse)
      .derivative(
          formula("self: diagonal_backward_symint(grad, self.sym_sizes(), offset, dim1, dim2)"))
      .scatter("diagonal_scatter");

  // In-place metadata mutations: `self` itself, with the view's sizes and strides.
  t.def("t_(Tensor(a!) self) -> Tensor(a!)").tags(kView | kInplace).meta(t_meta);
  t.def("transpose_(Tensor(a!) self, int dim0, int dim1) -> Tensor(a!)")
      .tags(kView | kInplace)
      .meta(transpose_meta);
  t.def("unsqueeze_(Tensor(a!) self, int dim) -> Tensor(a!)")
      .tags(kView | kInplace)
      .meta(unsqueeze_meta);
  t.def("squeeze_.dim(Tensor(a!) self, int dim) -> Tensor(a!)")
      .tags(kView | kInplace)
      .meta(squeeze_dim_meta);
  t.def("squeeze_(Tensor(a!) self) -> Tensor(a!)").tags(kView | kInplace).meta(squeeze_meta);
  t.def(
       "as_strided_(Tensor(a!) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) "
       "-> Tensor(a!)")
      .tags(kView | kInplace)
      .meta(as_strided_meta);
}

}  // namespace aotgrad
