// aotgrad: view ops (results share the input's storage) and the in-place metadata mutations;
// sizes, strides and storage offsets follow ATen 1.13's TensorShape.cpp exactly.
#include <algorithm>

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
  if (total != dim_size && !(total.hint() && dim_size.hint() && *total.hint() == *dim_size.hint()))
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

}  // namespace

void register_view_ops(OpTable& t) {
  t.def("view(Tensor(a) self, SymInt[] size) -> Tensor(a)").tags(kView | kCore).meta(view_meta);
  t.def("_unsafe_view(Tensor self, SymInt[] size) -> Tensor").meta(view_meta);
  t.def("_reshape_alias(Tensor(a) self, SymInt[] size, SymInt[] stride) -> Tensor(a)")
      .tags(kView)
      .meta(reshape_alias_meta);
  t.def("view_as(Tensor(a) self, Tensor other) -> Tensor(a)").tags(kView).meta(view_as_meta);
  t.def("alias(Tensor(a) self) -> Tensor(a)").tags(kView | kCore).meta(alias_meta);
  t.def("detach(Tensor(a) self) -> Tensor(a)").tags(kView).meta(alias_meta);
  t.def("t(Tensor(a) self) -> Tensor(a)").tags(kView).meta(t_meta).inplace("t_");
  t.def("transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)")
      .tags(kView)
      .meta(transpose_meta)
      .inplace("transpose_");
  t.def("permute(Tensor(a) self, int[] dims) -> Tensor(a)").tags(kView | kCore).meta(permute_meta);
  t.def("expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)")
      .tags(kView | kCore)
      .meta(expand_meta);
  t.def("unsqueeze(Tensor(a) self, int dim) -> Tensor(a)")
      .tags(kView | kCore)
      .meta(unsqueeze_meta)
      .inplace("unsqueeze_");
  t.def("squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)")
      .tags(kView | kCore)
      .meta(squeeze_dim_meta)
      .inplace("squeeze_.dim");
  t.def("squeeze(Tensor(a) self) -> Tensor(a)")
      .tags(kView | kCore)
      .meta(squeeze_meta)
      .inplace("squeeze_");
  t.def(
       "slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, "
       "SymInt step=1) -> Tensor(a)")
      .tags(kView | kCore)
      .meta(slice_meta)
      .scatter("slice_scatter");
  t.def("select.int(Tensor(a) self, int dim, int index) -> Tensor(a)")
      .tags(kView | kCore)
      .meta(select_meta)
      .scatter("select_scatter");
  t.def("split.Tensor(Tensor(a -> *) self, int split_size, int dim=0) -> Tensor(a)[]")
      .tags(kView | kCore)
      .meta(split_meta);
  t.def("split_with_sizes(Tensor(a -> *) self, int[] split_sizes, int dim=0) -> Tensor(a)[]")
      .tags(kView | kCore)
      .meta(split_with_sizes_meta);
  t.def("unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]").tags(kView).meta(unbind_meta);
  t.def(
       "as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) "
       "-> Tensor(a)")
      .tags(kView | kCore)
      .meta(as_strided_meta)
      .scatter("as_strided_scatter")
      .inplace("as_strided_");
  t.def("diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)")
      .tags(kView)
      .meta(diagonal_meta)
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
