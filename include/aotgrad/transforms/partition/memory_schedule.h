// aotgrad: memory-aware scheduling -- the partition's forward and backward graphs reordered, within
// their data dependences and effect order, so that the training step's predicted peak falls.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "aotgrad/ir/graph.h"

namespace aotgrad {

/// How the partition's graphs are ordered before they run: as the partitioner left them (kNone),
/// or by schedule_for_memory (kMemory, the default).
enum class ScheduleKind { kNone, kMemory };

/// "none" or "memory".
const char* schedule_kind_name(ScheduleKind kind);
/// The kind named `name` ("none", "memory"); throws Error listing both for anything else.
ScheduleKind parse_schedule_kind(std::string_view name);

/// What schedule_for_memory did: the training step's predicted peak (training_step_timeline) and
/// the peak of each phase's steps, before and after, and which candidate order each graph kept.
struct MemorySchedule {
  int64_t peak_before = 0, peak_after = 0;
  int64_t forward_peak_before = 0, forward_peak_after = 0;
  int64_t backward_peak_before = 0, backward_peak_after = 0;
  /// "original", "greedy" or "depth_first"; the backward's also "split_greedy": the greedy order
  /// of the backward with its weight gradients split off (split_weight_gradients; `split_calls`
  /// of them).
  std::string forward_order = "original", backward_order = "original";
  int split_calls = 0;
  bool changed() const { return forward_order != "original" || backward_order != "original"; }
};

/// Reorders `fw` and `bw` (a partition's graphs; `saved` are the values fw returns for bw) so that
/// the training step's predicted peak of live bytes (training_step_timeline, sizes at their hints)
/// falls. Each graph gets two candidate orders: a greedy list schedule that runs, among the ready
/// nodes, the one that frees the most bytes net of what it allocates (ties in graph order), and a
/// depth-first order from the graph's sinks that computes each value just before its first use
/// (recomputation sinks to where it is needed). A graph keeps the candidate whose own steps peak
/// lowest, and its order only if that peak is strictly lower: the result is never worse. A
/// backward with convolutions has its greedy candidate made on itself with each
/// convolution_backward's weight gradient a call of its own (split_weight_gradients; every order of
/// the unsplit graph is one of the split graph's): the greedy order then makes a big weight
/// gradient last, once the activations the backward frees are gone.
///
/// Kept in place: placeholders first, the output last; a call that writes an argument (in-place
/// ops, copy_) and a collective are barriers nothing moves across; random calls keep their order
/// among themselves (the generator's stream); a getitem follows its call at once. Values do not
/// change: only independent calls are reordered. Run it last, once the graphs are final (data
/// parallelism's all-reduces included). `gradients_kept`: the step's peak as the runtime makes it
/// when the caller keeps the parameters' `.grad` between steps (training_step_timeline).
///
/// The graphs are reordered in place (Graph::reorder: the same nodes, relinked; their users lists
/// keep their order), each candidate priced on the graph itself; only a winning split backward is
/// a new graph, copied into `bw`.
MemorySchedule schedule_for_memory(Graph& fw, Graph& bw, const std::vector<std::string>& saved,
                                   bool gradients_kept = false);
/// The same, with `bw` replaced by a winning split backward instead of it being copied in.
MemorySchedule schedule_for_memory(std::unique_ptr<Graph>& fw, std::unique_ptr<Graph>& bw,
                                   const std::vector<std::string>& saved,
                                   bool gradients_kept = false);

/// The same for `bw` alone: `fw` keeps its order (the forward's peak is reported as it is).
MemorySchedule schedule_backward_for_memory(const Graph& fw, std::unique_ptr<Graph>& bw,
                                            const std::vector<std::string>& saved,
                                            bool gradients_kept = false);

/// "forward peak A -> B bytes (ORDER), backward peak C -> D bytes (ORDER), step peak E -> F".
std::string schedule_text(const MemorySchedule& s);

}  // namespace aotgrad
