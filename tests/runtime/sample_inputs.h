// aotgrad: input tensors for the op-sample sweeps (tests/data/op_samples), made with libtorch.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include "op_samples.h"

namespace aotgrad::op_samples {

/// A tensor with the spec's sizes and strides (at::empty_strided) and the given dtype, every
/// storage element filled from `gen`: floats ~ randn (uniform in [lo, hi) with a range), ints in
/// [0, 10) or [lo, hi), bools random. The same generator state gives the same values in every
/// sweep.
at::Tensor make_input(const TensorSpec& spec, ScalarType dtype, at::Generator& gen);

}  // namespace aotgrad::op_samples
