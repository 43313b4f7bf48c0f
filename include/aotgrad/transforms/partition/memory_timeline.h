// aotgrad: live activation bytes over the forward + backward schedule of a partition, from
// metadata sizes (plotted by report/timeline_svg.h for `aotgrad compile --timeline`).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "aotgrad/ir/graph.h"

namespace aotgrad {

/// One step of the schedule: a call or getitem of fw, then of bw, in graph order.
struct TimelineStep {
  std::string node;
  bool backward = false;
  int64_t live_bytes = 0;  // activation bytes live while the node runs, its own result included
};

/// A storage live at the peak, named by the value that made it (a node of fw or bw), "tangents",
/// or "scratch of <node>" for the peak kernel's own scratch.
struct LiveValue {
  std::string value;
  int64_t bytes = 0;
};

struct MemoryTimeline {
  std::vector<TimelineStep> steps;
  int64_t peak_bytes = 0;
  size_t peak_step = 0;  // the first step at peak_bytes
  size_t num_forward_steps = 0;
  /// What is live at peak_step, largest first, summing to the peak (training_step_peak_report
  /// fills it; the other builders leave it empty).
  std::vector<LiveValue> peak_live;
};

/// Live activation bytes at each step of `fw` then `bw` (the partition's graphs; `saved` are the
/// values fw returns for bw, matched to bw's placeholders by name). A storage (a fresh value and
/// its views; bytes from size hints, value_nbytes) is live from the step that creates it to its
/// last use; a saved value's storage stays live into the backward until bw's last use of it. Inputs
/// (primals, tangents and their views) are not activations and count nothing; tuple values count
/// through their getitems; outputs that are not saved count only at their own step.
MemoryTimeline activation_timeline(const Graph& fw, const Graph& bw,
                                   const std::vector<std::string>& saved);

/// Whether the runtime hands `g`'s outputs over as soon as it makes them (Interpreter's
/// OutputSink, Note [Gradients accumulated as they are made]): no call writes an argument,
/// communicates or has effects, so an output's value is final when it is computed.
bool offers_outputs_early(const Graph& g);

/// The training step's predicted memory: every byte the step allocates above what was live before
/// it, as the runtime's tracking allocator counts it for CompiledFunction's forward, the caller's
/// tangents and the backward. On top of activation_timeline: the forward's outputs stay live to
/// the end of the step (the caller holds them), the tangents from the first backward step to the
/// end, the gradients from the step that makes them to the end; each result of a multi-result call
/// is live from that call until the last getitem of the tuple (the interpreter holds the tuple);
/// and the scratch the convolution kernels allocate counts at their step. Other kernels' scratch
/// is not modelled. With `reinplace`, as the default backend runs the graphs (the interpreter's
/// re-inplacing, transforms/passes/reinplace.h): a re-inplaced call's result lives in its
/// argument's storage and allocates nothing. With `gradients_kept` (MinCutOptions::gradients_kept:
/// the caller keeps each parameter's `.grad` between steps, and CompiledFunction adds each gradient
/// into it as soon as the backward makes it, Note [Gradients accumulated as they are made]), a
/// gradient lives to its last use in the backward, and only one a later call reads to the end --
/// when bw offers its outputs early (offers_outputs_early; a data-parallel backward does not).
MemoryTimeline training_step_timeline(const Graph& fw, const Graph& bw,
                                      const std::vector<std::string>& saved, bool reinplace = true,
                                      bool gradients_kept = false);

/// training_step_timeline with peak_live filled: for what reports the peak (`compile
/// --explain`, `--stats=json`, `run --train --stats=json`), not for the passes that price many
/// timelines.
MemoryTimeline training_step_peak_report(const Graph& fw, const Graph& bw,
                                         const std::vector<std::string>& saved,
                                         bool reinplace = true, bool gradients_kept = false);

/// The highest live bytes over the steps of one phase of `t` (the backward's, or the forward's);
/// `at`, when given, gets the phase's first step at that peak, counted within the phase.
int64_t phase_peak(const MemoryTimeline& t, bool backward, size_t* at = nullptr);

/// "<bytes> bytes (<MiB> MiB) at <node> (forward|backward step <k> of <n>)": the peak and where.
std::string peak_text(const MemoryTimeline& t);
/// "mm_3 16384, gelu 8192, ... and <k> more (<bytes>)": the `most` largest values live at the peak.
std::string peak_live_text(const MemoryTimeline& t, size_t most = 8);

}  // namespace aotgrad
