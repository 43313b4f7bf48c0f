// aotgrad: a value of the backward computed a second time for its uses after the step's peak, so
// that it is not live there (Note [Computed again] in recompute_again.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "aotgrad/ir/graph.h"
#include "aotgrad/transforms/partition/cost_model.h"

namespace aotgrad {

struct RecomputeAgainOptions {
  /// Price each candidate after schedule_backward_for_memory, as the training pipeline's schedule
  /// stage will order the backward (recompute_plan_again's `then`); off: in graph order,
  /// each copy just before its first use.
  bool scheduled = true;
  /// MinCutOptions::gradients_kept: the peak as the runtime makes it then.
  bool gradients_kept = false;
  /// What a copied call costs (estimate_runtime).
  CostModel cost_model;
  /// At most this many values computed again, one per round.
  int max_rounds = 4;
  /// A copy is kept only if it lowers the step's peak by at least this fraction of it.
  double min_gain = 0.01;
  /// Each round weighs at most this many values live at the peak, largest first.
  int max_candidates = 6;
};

/// One value computed again: `value` (a call of the backward, or a getitem of one) and the views
/// of it the later uses read, copied as `copies` just before them; the step's predicted peak
/// after it and the estimated cost of the calls it adds (estimate_runtime; a value no use before
/// the peak reads moves instead of being copied, and costs nothing).
struct RecomputeAgainRound {
  std::string value;
  std::vector<std::string> copies;
  std::vector<std::string> uses;  // the calls that read the copies
  int64_t peak_bytes = 0;
  double extra_cost = 0;  // cumulative over this round and the ones before it
};

struct RecomputeAgain {
  int64_t peak_before = 0, peak_after = 0;
  std::vector<RecomputeAgainRound> rounds;
};

/// Lowers the training step's predicted peak (training_step_timeline) by computing a value of
/// `bw` again. Each round takes the backward's peak step and the values live across it -- made by
/// a call of bw before it (not a saved value: bw has no way to make those), read before it and
/// again after it, not by the peak's call -- and, for each (largest first), copies its call (a
/// multi-result call and the getitem; a pure call: not random, effectful, collective or writing
/// an argument) and the views of it the later uses read, just before the first later use, which
/// read the copies; the original then dies at its last earlier use. The round keeps the copy that
/// lowers the step's peak most (by at least options.min_gain of it; the earlier candidate on a
/// tie) and stops when none does, or when the peak is the forward's. `bw` (ordered by
/// schedule_backward_for_memory first when options.scheduled) is replaced by the result; rounds[k]
/// describes the graph after k+1 rounds. Values do not change: a copy of a pure call computes what
/// the call computed.
RecomputeAgain recompute_again(const Graph& fw, std::unique_ptr<Graph>& bw,
                               const std::vector<std::string>& saved,
                               const RecomputeAgainOptions& options);

/// "addmm_2 again as addmm_2_again, view_9_again for gelu_backward (peak 32904 bytes)" per round.
std::string recompute_again_text(const RecomputeAgain& r);

}  // namespace aotgrad
