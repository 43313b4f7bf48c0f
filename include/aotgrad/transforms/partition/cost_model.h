// aotgrad: what a call costs, for the activation memory budget (memory_budget.h): floating-point
// operations from the call's metadata ("flops", PyTorch's estimate_runtime without a GPU), or
// seconds on this machine from a cost profile that `aotgrad calibrate` measured on its kernels
// ("measured"). Std only: the profile is measured by the runtime (runtime/cost_calibration.h) and
// read here.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aotgrad/ir/graph.h"

namespace aotgrad {

enum class CostModelKind { kFlops, kMeasured };

/// "flops" or "measured".
const char* cost_model_name(CostModelKind kind);
/// The kind named `name`; throws Error listing both for anything else.
CostModelKind parse_cost_model(std::string_view name);

/// How long one kind of kernel takes for an amount of work, as measured: (work, seconds) points
/// with work increasing and seconds never decreasing. Between two points the time is interpolated
/// in log-log space; below the first point it is the first point's time (a call's fixed cost);
/// beyond the last, the last point's rate.
struct CostCurve {
  std::vector<std::pair<double, double>> points;
  double seconds(double work) const;
};

/// One machine's kernel speeds.
struct CostProfile {
  std::string machine;    // what it was measured on ("AMD EPYC 7B13, 2 threads")
  int threads = 0;        // ATen's intra-op threads during the measurement
  CostCurve matmul;       // work: FLOPs of mm, bmm, addmm, baddbmm
  CostCurve convolution;  // work: FLOPs of convolution and convolution_backward
  CostCurve memory;       // work: bytes a memory-bound call reads and writes
  /// Kernels much slower than their bytes say (libtorch 1.13's CPU batch norm, pooling, norms,
  /// softmax, transcendental pointwise ops: 2-60x an add of the same bytes), by op
  /// ("aten::max_pool2d_with_indices"); work: the call's bytes. Other ops take `memory`.
  std::map<std::string, CostCurve, std::less<>> ops;
};

/// The profile as JSON ({"format": "aotgrad cost profile", "version": 2, ..., "ops": {...}}).
std::string cost_profile_json(const CostProfile& profile);

/// The profile in `json` (version 2, or a version-1 profile, which has no "ops"). Throws Error
/// naming `where` and the cause for anything else: bad JSON, a missing field, a curve without
/// points, work not increasing, seconds negative or decreasing.
CostProfile parse_cost_profile(std::string_view json, const std::string& where);

/// The profile in the file at `path`; a missing file is an Error that says to run `aotgrad
/// calibrate`.
CostProfile read_cost_profile(const std::string& path);

/// Where `aotgrad calibrate` writes and `--cost-model=measured` reads a profile by default:
/// AOTGRAD_COST_PROFILE when set, else cost_profile.json in the user's cache directory
/// (XDG_CACHE_HOME/aotgrad or HOME/.cache/aotgrad); "" when there is none.
std::string default_cost_profile_path();

/// The estimator: kFlops, or kMeasured with a profile (required).
struct CostModel {
  CostModelKind kind = CostModelKind::kFlops;
  std::shared_ptr<const CostProfile> profile;
  /// "flops", or "measured:" and the SHA-256 of the profile's JSON: what the compile cache keys on.
  std::string fingerprint() const;
};

/// The FLOPs of a call from its metadata (size hints, 4096 elements where a size has none):
/// mm/addmm 2*M*K*N, bmm/baddbmm 2*B*M*K*N, convolution 2 * output elements * (input channels
/// per group * kernel elements), convolution_backward that for each of grad_input and grad_weight
/// it computes; 0 for every other op.
double call_flops(const Node& n);

/// The bytes a call reads and writes: its tensor arguments' and results' bytes (from size hints).
double call_bytes(const Node& n);

/// The bytes a functional collective brings to this rank from the others (from size hints): an
/// all_gather_into_tensor its result, a reduce_scatter_tensor its input, an all_reduce twice its
/// input (a ring's reduce-scatter and all-gather), a broadcast its input; 0 for a wait_tensor (the
/// collective is priced where it is issued) and for every other call.
double communication_bytes(const Node& n);

/// What a byte of communication costs: kFlops, kFlopsPerCommunicatedByte FLOPs; kMeasured,
/// 1 / kCommunicatedBytesPerSecond seconds (a cost profile measures no communication yet). Gloo
/// over 127.0.0.1 received 4 MiB in 1.7-1.9 ms (about 2.3 GB/s) on the machine this was written
/// on, where a single-thread 64x1024x1024 matmul ran at about 110 GFLOP/s: a byte received is
/// worth about 50 FLOPs. The memory budget weighs a re-gathered parameter by it (Note [Re-gather
/// or keep]).
constexpr double kFlopsPerCommunicatedByte = 50;
constexpr double kCommunicatedBytesPerSecond = 2.3e9;

/// The cost of a call. kFlops: call_flops, or for every other op (pointwise ops, reductions,
/// copies) its element count -- the most elements among its tensor arguments and results; at
/// least 1, as PyTorch's max(flops, 1); a node that is not a call costs 1. kMeasured: seconds from
/// the profile's matmul or convolution curve at call_flops, every other call from its op's curve
/// (CostProfile::ops) or else the memory curve at call_bytes (a view at the curve's fixed cost); a
/// node that is not a call costs 0. A functional collective costs its communication_bytes at the
/// rates above instead. Throws Error for kMeasured without a profile.
double estimate_runtime(const Node& n, const CostModel& model = {});

}  // namespace aotgrad
