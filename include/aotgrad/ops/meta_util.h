// aotgrad: building blocks for meta functions -- broadcasting, type promotion, TensorIterator's
// output strides, dimension wrapping, reductions, views. Each mirrors the ATen code it names.
#pragma once

#include <functional>
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
SymIntVector reduced_shape(const SymIntVector& sizes, const std::vector<int64_t>& dims,
                           bool keepdim);
/// Wraps and de-duplicates a dim list (empty list means all dims for reductions).
std::vector<int64_t> wrap_dims(const SymIntVector& dims, int64_t ndim);

/// A view of `base` with new sizes/strides/offset: same dtype and device.
TensorMeta view_of(const TensorMeta& base, SymIntVector sizes, SymIntVector strides,
                   std::optional<SymInt> storage_offset = std::nullopt);
/// at::infer_size for view/reshape: resolves one -1 and checks the element count.
SymIntVector infer_view_size(const SymIntVector& shape, const SymInt& numel);
/// at::detail::computeStride: strides for viewing `t` as `new_sizes` without copying, or nullopt.
std::optional<SymIntVector> compute_view_strides(const TensorMeta& t,
                                                 const SymIntVector& new_sizes);

/// The dims of `t` in memory order: strides decreasing (by their hints), ties in dim order. For a
/// dense `t`, permute(t, memory_order(t)) lists its elements in the order they lie in memory
/// (what a kernel that fills `t` in memory order, as bernoulli_ does, goes through).
std::vector<int64_t> memory_order(const TensorMeta& t);
/// The permutation that undoes `perm` (permute(permute(t, perm), inverse) is t).
std::vector<int64_t> inverse_permutation(const std::vector<int64_t>& perm);

/// c10's TensorImpl::suggest_memory_format: ChannelsLast (ChannelsLast3d) when a rank-4 (rank-5)
/// tensor's strides look channels-last (is_channels_last_strides_2d/3d), else Contiguous.
MemoryFormat suggest_memory_format(const TensorMeta& t);
/// Strides at::empty gives a fresh tensor in memory format `fmt` (TensorImpl::
/// empty_tensor_restride): channels_last needs rank 4, channels_last_3d rank 5, and Preserve is
/// refused -- each with ATen's message.
SymIntVector memory_format_strides(const SymIntVector& sizes, MemoryFormat fmt);
/// at::empty_like as the op computes it: `fmt` None means Preserve (dense strides kept, else
/// inferred), an explicit format is checked as memory_format_strides does.
TensorMeta empty_like_op(const TensorMeta& self, std::optional<ScalarType> dtype,
                         std::optional<MemoryFormat> fmt,
                         std::optional<Device> device = std::nullopt);
/// Throws ATen's "Trying to create tensor with negative dimension" for a negative concrete size.
void check_non_negative_sizes(const SymIntVector& sizes);

// View geometry: each returns the metadata the ATen view op of the same name gives (sizes,
// strides, storage offset), with ATen's argument checks and messages.
/// at::native::view: one -1 inferred, strides from computeStride, or an error naming .reshape.
TensorMeta view(const TensorMeta& self, const SymIntVector& size);
/// at::inferExpandGeometry: -1 keeps a size, broadcast dims get stride 0.
TensorMeta expand(const TensorMeta& self, const SymIntVector& size);
TensorMeta transpose(const TensorMeta& self, int64_t dim0, int64_t dim1);
/// t(): transpose(0, 1) for 2-d, self for 0/1-d, an error above 2-d.
TensorMeta t(const TensorMeta& self);
TensorMeta unsqueeze(const TensorMeta& self, int64_t dim);
/// squeeze(): drops every size-1 dim; squeeze(dim): only `dim`, if its size is 1.
TensorMeta squeeze(const TensorMeta& self);
TensorMeta squeeze(const TensorMeta& self, int64_t dim);
/// slice(dim, start, end, step): start/end wrapped and clamped into [0, size].
TensorMeta slice(const TensorMeta& self, int64_t dim, std::optional<SymInt> start,
                 std::optional<SymInt> end, const SymInt& step);
TensorMeta select(const TensorMeta& self, int64_t dim, int64_t index);
TensorMeta narrow(const TensorMeta& self, int64_t dim, const SymInt& start, const SymInt& length);
/// as_strided: storage offset None keeps self's; the storage's bounds are not checked.
TensorMeta as_strided(const TensorMeta& self, const SymIntVector& size, const SymIntVector& stride,
                      std::optional<SymInt> storage_offset);
TensorMeta diagonal(const TensorMeta& self, int64_t offset, int64_t dim1, int64_t dim2);

/// c10's name of a dtype as ATen's messages print it: "Float", "Long", "Bool", "BFloat16", ...
std::string_view c10_type_name(ScalarType t);

/// What a meta function assumes of symbolic sizes from their hints where their expressions do not
/// settle it: `a == b` (s0 against 5, s0 against s1) or `a >= b` (a padded input at least its
/// kernel). Reported to the thread's sink (a symbolic trace records each as a guard,
/// providers/sym_node.h); without one, nothing.
enum class SizeAssumption { Equal, AtLeast };
using SizeAssumptionSink =
    std::function<void(const SymInt& a, SizeAssumption rel, const SymInt& b)>;
/// Installs `sink` on this thread while alive (restoring the previous one).
class ScopedSizeAssumptions {
 public:
  explicit ScopedSizeAssumptions(SizeAssumptionSink sink);
  ~ScopedSizeAssumptions();
  ScopedSizeAssumptions(const ScopedSizeAssumptions&) = delete;
  ScopedSizeAssumptions& operator=(const ScopedSizeAssumptions&) = delete;

 private:
  SizeAssumptionSink saved_;
};
/// Whether `a rel b` holds by the hints (or by the expressions), reporting an assumption to the
/// sink when the expressions alone do not settle it.
bool holds_by_hints(const SymInt& a, SizeAssumption rel, const SymInt& b);

/// True when two sizes are known to differ (concrete, or symbolic with differing hints); equal
/// hints of different expressions are an assumption (holds_by_hints).
bool known_differ(const SymInt& a, const SymInt& b);
bool known_zero(const SymInt& s);
/// The error AT_DISPATCH raises in a CPU kernel that has no floating-point-only instance.
void check_floating(ScalarType t, const std::string& kernel);
/// "expected scalar type X but found Y" unless `got` has `expected`'s dtype.
void check_dtype(const TensorMeta& expected, const TensorMeta& got);
/// A fresh tensor in memory format `fmt` (contiguous, or channels-last for rank 4/5).
TensorMeta empty_in_format(const SymIntVector& sizes, ScalarType dtype, Device device,
                           MemoryFormat fmt);

/// Common meta function results.
inline ValueMeta one(TensorMeta t) { return ValueMeta::of(std::move(t)); }
ValueMeta tuple_of(std::vector<TensorMeta> ts);

}  // namespace aotgrad::meta
