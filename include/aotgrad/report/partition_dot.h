// aotgrad: the joint graph as partitioned, drawn as a Graphviz file (`aotgrad compile --dot`).
#pragma once

#include <string>
#include <vector>

#include "aotgrad/ir/graph.h"

namespace aotgrad {

/// What a joint-graph node became in a partition.
enum class JointRole {
  kInput,       // a primal placeholder
  kTangent,     // a tangent placeholder
  kForward,     // computed by the forward graph only
  kSaved,       // computed by the forward and saved for the backward
  kRecomputed,  // computed by the forward and again by the backward
  kBackward,    // computed by the backward only
  kUnused,      // in neither graph (dead, or merged by CSE before partitioning)
  kOutput,      // the output node
};

/// "input", "tangent", "forward", "saved", "recomputed", "backward", "unused", "output".
const char* joint_role_name(JointRole role);

/// The role of each node of `joint` (by position in joint.nodes()) in the partition `fw`/`bw` whose
/// saved values are `saved`, matched by name (the partitioners keep the joint graph's names).
/// A saved primal is kInput (see joint_graph_dot).
std::vector<JointRole> joint_roles(const Graph& joint, const Graph& fw, const Graph& bw,
                                   const std::vector<std::string>& saved);

/// A Graphviz digraph of `joint`: one box per node labelled name, op and annotation, filled by its
/// joint_roles role (saved primals keep the input colour with a thick red border), an edge per
/// data use, and a legend of the colours.
std::string joint_graph_dot(const Graph& joint, const Graph& fw, const Graph& bw,
                            const std::vector<std::string>& saved);

}  // namespace aotgrad
