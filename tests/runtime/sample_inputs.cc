// aotgrad: input tensors for the op-sample sweeps.
#include "sample_inputs.h"

#include <ATen/ATen.h>

#include <vector>

#include "aotgrad/providers/aten_call.h"

namespace aotgrad::op_samples {

at::Tensor make_input(const TensorSpec& spec, ScalarType dtype, at::Generator& gen) {
  const TensorMeta& m = spec.meta;
  std::vector<int64_t> sizes, strides;
  for (auto& s : m.sizes) sizes.push_back(s.value());
  for (auto& s : m.strides) strides.push_back(s.value());
  at::Tensor t = at::empty_strided(sizes, strides, at::TensorOptions().dtype(to_c10(dtype)));
  int64_t n = static_cast<int64_t>(t.storage().nbytes()) / static_cast<int64_t>(t.element_size());
  if (n == 0) return t;
  at::Tensor flat = at::empty({0}, t.options()).set_(t.storage(), 0, {n}, {1});
  at::Tensor values;
  if (is_floating(dtype) || is_complex(dtype)) {
    values = at::empty({n}, at::kDouble);
    if (spec.range)
      values.uniform_(spec.range->first, spec.range->second, gen);
    else
      values.normal_(0, 1, gen);
  } else if (dtype == ScalarType::Bool) {
    values = at::empty({n}, at::kLong);
    if (spec.range)
      values.random_(static_cast<int64_t>(spec.range->first),
                     static_cast<int64_t>(spec.range->second), gen);
    else
      values.random_(0, 2, gen);
    values = values != 0;
  } else {
    values = at::empty({n}, at::kLong);
    int64_t lo = spec.range ? static_cast<int64_t>(spec.range->first) : 0;
    int64_t hi = spec.range ? static_cast<int64_t>(spec.range->second) : 10;
    values.random_(lo, hi, gen);
  }
  flat.copy_(values);
  return t;
}

}  // namespace aotgrad::op_samples
