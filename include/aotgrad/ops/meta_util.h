// aotgrad: building blocks for meta functions -- broadcasting, type promotion, TensorIterator's
// output strides, dimension wrapping, reductions, views. Each mirrors the ATen code it names.
#pragma once

#include <optional>
#include <vector>

#include "aotgrad/ir/error.h"
#include "aotgrad/ir/graph.h"
#include "aotgrad/ir/op.h"
#include "aotgrad/ir/tensor_meta.h"

namespace aotgrad::meta {

/// at::maybe_wrap_dim: -1 means the last dim; a 0-dim tensor accepts dims -1 and 0.
int64_t wrap_dim(int64_t dim, int64_t ndim);
/// at::infer_size: broadcasts two shapes; throws Error naming the mismatching sizes.
SymIntVector broadcast_shapes(const SymIntVector& a, const SymIntVector& b);
SymIntVector broadcast_all(const std::vector<const TensorMeta*>& ts);

/// at::native::result_type over tensors (wrapped numbers and 0-dim tensors participate with
/// lower priority, as in c10's ResultTypeState) and extra Python scalars.
ScalarType result_type(const std::vector<const TensorMeta*>& tensors,
                       const std::vector<ScalarValue>& scalars = {});

/// ATen's is_non_overlapping_and_dense / is_contiguous(channels_last).
bool is_non_overlapping_and_dense(const TensorMeta& t);
bool is_channels_last_contiguous(const TensorMeta& t);

/// The output metadata TensorIterator allocates for inputs `ins` broadcast together, with dtype
/// `dtype`: fast setup (all contiguous / all channels-last / all dense with equal strides), else
/// the stride permutation of reorder_dimensions. Device from the first non-wrapped input.
TensorMeta tensor_iterator_output(const std::vector<const TensorMeta*>& ins, ScalarType dtype);

/// at::empty_like(self, dtype, memory_format): Preserve keeps dense strides or infers dense strides
/// with the same permutation; Contiguous / ChannelsLast give those layouts.
TensorMeta empty_like(const TensorMeta& self, std::optional<ScalarType> dtype = std::nullopt,
                      MemoryFormat fmt = MemoryFormat::Preserve);
/// A fresh contiguous tensor.
TensorMeta empty(const SymIntVector& sizes, ScalarType dtype, Device device = {});

/// The output shape of a reduction over `dims` (empty: all dims), with or without keepdim.
SymIntVector reduced_shape(const SymIntVector& sizes, const std::vector<int64_t>& dims, bool keepdim);
/// Wraps and de-duplicates a dim list (empty list means all dims for reductions).
std::vector<int64_t> wrap_dims(const SymIntVector& dims, int64_t ndim);

/// A view of `base` with new sizes/strides/offset: same dtype and device.
TensorMeta view_of(const TensorMeta& base, SymIntVector sizes, SymIntVector strides,
                   std::optional<SymInt> storage_offset = std::nullopt);
/// at::infer_size for view/reshape: resolves one -1 and checks the element count.
SymIntVector infer_view_size(const SymIntVector& shape, const SymInt& numel);
/// at::detail::computeStride: strides for viewing `t` as `new_sizes` without copying, or nullopt.
std::optional<SymIntVector> compute_view_strides(const TensorMeta& t, const SymIntVector& new_sizes);

/// Common meta function results.
inline ValueMeta one(TensorMeta t) { return ValueMeta::of(std::move(t)); }
ValueMeta tuple_of(std::vector<TensorMeta> ts);

}  // namespace aotgrad::meta
