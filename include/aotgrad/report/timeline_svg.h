// aotgrad: SVG plots of activation timelines (`aotgrad compile --timeline`). Std only.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "aotgrad/transforms/autograd.h"
#include "aotgrad/transforms/partition/memory_timeline.h"

namespace aotgrad {

/// A self-contained SVG plot of one or more timelines (label, timeline) as polylines over the step
/// index, with axes, the forward/backward boundary, a legend naming each curve with its peak and
/// the node at the peak, and a dot at each peak.
std::string timeline_svg(const std::vector<std::pair<std::string, MemoryTimeline>>& series,
                         const std::string& title);

/// The plot of `aotgrad compile --timeline`: the training step's live bytes
/// (training_step_timeline) of the partition fw/bw/saved of the joint graph `joint` (laid out as
/// `layout`) under `label`, against default_partition of the same joint graph; each curve's peak
/// is marked and named in the legend with its node.
std::string partition_timeline_svg(const Graph& joint, const JointGraph& layout, const Graph& fw,
                                   const Graph& bw, const std::vector<std::string>& saved,
                                   const std::string& label, bool gradients_kept = false);

}  // namespace aotgrad
