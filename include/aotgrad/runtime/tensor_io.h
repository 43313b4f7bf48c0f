// aotgrad: converting between tensor files and libtorch tensors; random inputs for a graph.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

#include "aotgrad/ir/tensor_meta.h"
#include "aotgrad/runtime/safetensors.h"

namespace aotgrad {

/// A contiguous CPU tensor holding a copy of the record's data.
at::Tensor to_tensor(const TensorRecord& rec);
/// A record holding a contiguous copy of `t` (moved to CPU).
TensorRecord to_record(const std::string& name, const at::Tensor& t);
/// A tensor laid out as `meta` says (sizes, strides; symbolic sizes use their hints, else 2),
/// filled from `gen` (seeded): floats ~ N(0, 1), integers in [0, 2), bools at random.
at::Tensor random_tensor(const TensorMeta& meta, uint64_t seed);

}  // namespace aotgrad
