// aotgrad: splitting a joint graph into forward and backward graphs (§13.6, §13.16).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "aotgrad/ir/graph.h"
#include "aotgrad/transforms/autograd.h"

namespace aotgrad {

/// The two graphs the runtime runs: fw `(primals...) -> (outputs..., saved...)` and
/// bw `(saved..., tangents...) -> (grads...)`.
struct Partition {
  std::unique_ptr<Graph> fw;
  std::unique_ptr<Graph> bw;
  size_t num_forward_outputs = 0;
  /// Names of the saved values, in the order fw returns them and bw takes them.
  std::vector<std::string> saved;
};

/// PyTorch's default_partition: the forward graph computes the forward outputs; every forward
/// value the backward uses is saved (in graph order); the backward recomputes nothing.
Partition default_partition(const JointGraph& joint);

/// What one saved value costs the training step.
struct SavedValue {
  std::string name;
  int64_t bytes = 0;      // from size hints (value_nbytes: 4096 elements where a size has none)
  bool is_input = false;  // a primal or a view of one: no memory beyond the step's inputs
};

/// What the saved values of a partition cost: each one in the order fw returns them, their bytes,
/// and the bytes of the distinct storages among them that are not inputs (a view and its base
/// count once): the activations the backward keeps alive.
struct SavedSummary {
  std::vector<SavedValue> values;
  int64_t bytes = 0;
  int64_t activation_bytes = 0;
};

/// The summary of `saved` (names of values of `fw`, a partition's forward graph).
SavedSummary summarize_saved(const Graph& fw, const std::vector<std::string>& saved);

/// Builds the graph of `nodes` (a subset of `g`, in g's order) whose inputs are `inputs` (values of
/// g that become placeholders, keeping their names) and whose output is the tuple or list
/// `outputs` (values of g, or None). Every argument of a kept node must be a kept node or an input.
std::unique_ptr<Graph> extract_subgraph(const Graph& g, const std::vector<const Node*>& nodes,
                                        const std::vector<const Node*>& inputs,
                                        const std::vector<Arg>& outputs, bool list_output);

}  // namespace aotgrad
