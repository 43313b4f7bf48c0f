// aotgrad: measures this machine's kernel speeds for the measured cost model
// (transforms/partition/cost_model.h): `aotgrad calibrate`, or a libtorch program before it
// compiles.
#pragma once

#include "aotgrad/transforms/partition/cost_model.h"

namespace aotgrad {

struct CalibrationOptions {
  /// Each point is the median of this many timed repetitions; each repetition runs the kernel
  /// often enough to last at least min_seconds.
  int repetitions = 5;
  double min_seconds = 2e-3;
};

/// Times libtorch's CPU kernels in float32 on ATen's current intra-op threads: square mm of sizes
/// 8 to 512 (work 2n^3 FLOPs), 3x3 convolutions of 4 to 64 channels on 8x8 to 32x32 images (work
/// their FLOPs), and add of 256 to 4M elements (work the bytes read and written). Each curve's
/// seconds are made non-decreasing in work (a later point never shows less time than an earlier
/// one). Then, on 1K to 1M elements each (by factors of 4), the kernels whose time their bytes do
/// not predict (CostProfile::ops): training-mode batch norm, max and average pooling, layer norm,
/// softmax and log-softmax, gelu, silu, sigmoid and tanh. Takes a few seconds.
CostProfile calibrate_cost_profile(const CalibrationOptions& options = {});

}  // namespace aotgrad
