// aotgrad: helpers for the op facts that are formulas over a call's metadata (OpDef::flops,
// scratch_bytes, communication_bytes), shared by the op families that declare them.
#pragma once

#include <algorithm>
#include <cstddef>

#include "aotgrad/ir/graph.h"
#include "aotgrad/ir/op.h"

namespace aotgrad::cost {

/// Argument `i` when it is a tensor value (not a Python number, not None), else nullptr.
inline const TensorMeta* tensor_at(const MetaArgs& a, size_t i) {
  if (i >= a.size() || !a.arg(i).is_node()) return nullptr;
  const ValueMeta& m = a.arg(i).node->meta();
  return m.is_tensor() ? &m.tensor : nullptr;
}

/// Elements of `t`, a size without a hint counting 4096 (as everywhere sizes are priced).
inline double numel(const TensorMeta& t) { return static_cast<double>(t.numel().hint_or(4096)); }

/// Size `d` of `t` (1 past its rank).
inline double dim(const TensorMeta& t, size_t d) {
  return d < t.sizes.size() ? static_cast<double>(t.sizes[d].hint_or(4096)) : 1.0;
}

/// 2 * M * K * N of (M x K) @ (K x N), batched by the leading dimensions of `a`.
inline double matmul_flops(const TensorMeta& a, const TensorMeta& b) {
  if (a.sizes.size() < 2 || b.sizes.empty()) return 0;
  double k = dim(a, a.sizes.size() - 1);
  double rows = numel(a) / std::max(k, 1.0);  // B * M
  double n = dim(b, b.sizes.size() - 1);
  return 2 * rows * k * n;
}

/// Elements of weight per output channel: input channels per group times kernel elements.
inline double per_output_channel(const TensorMeta& w) {
  double d0 = dim(w, 0);
  return d0 > 0 ? numel(w) / d0 : 0.0;
}

/// Bytes of `t`: numel(t) elements.
inline double bytes(const TensorMeta& t) {
  return numel(t) * static_cast<double>(element_size(t.dtype));
}

/// Bytes of `t` from its sizes' hints, 4096 for each without one (min_cut.h's value_nbytes of a
/// tensor; the memory timeline's unit).
inline double nbytes(const TensorMeta& t) { return static_cast<double>(t.nbytes_hint()); }

}  // namespace aotgrad::cost
