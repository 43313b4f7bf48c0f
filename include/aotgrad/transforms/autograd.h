// aotgrad: reverse-mode AD over a functional forward graph, giving the joint graph (§13.3, §13.20).
#pragma once

#include <memory>
#include <vector>

#include "aotgrad/ir/graph.h"

namespace aotgrad {

struct JointGraph {
  /// `(primals, tangents) -> (outputs..., grads...)`: placeholders primals_1.. then tangents_1..,
  /// the forward nodes, then the backward nodes; one grad (or None) per primal after the effect
  /// tokens (which get none, as in PyTorch).
  std::unique_ptr<Graph> graph;
  size_t num_primals = 0;
  size_t num_tangents = 0;
  size_t num_forward_outputs = 0;
  /// For each forward output: its tangent's index, or -1 when it gets none (not differentiable).
  std::vector<int> tangent_of_output;
  /// For each forward output: whether it is a user output that is a view made under
  /// torch.no_grad of a value that requires grad (NodeInfo::no_grad_view_requires_grad). Eagerly
  /// a leaf of its own that requires grad, whose backward reaches nothing: it gets no tangent,
  /// and the runtime returns it as such a leaf.
  std::vector<bool> leaf_output;
  /// Which primals get a gradient (requires grad); the others' grad output is None.
  std::vector<bool> primal_requires_grad;
  /// The leading primals that are effect tokens (ViewAndMutationMeta::num_tokens).
  size_t num_tokens = 0;
};

/// Differentiates the functional graph `fw` (no in-place ops: functionalize first) with respect to
/// the placeholders marked in `requires_grad`, using each op's derivative rule. Outputs that are
/// floating point and require grad get a tangent. Throws Error naming the node for an op that
/// has neither a derivative rule nor `non_differentiable`. The first `num_tokens` placeholders of
/// `fw` are effect tokens (`requires_grad` is then over the placeholders after them): primals
/// without a gradient output; a gradient asked through an effectful call is an Error. Forward
/// outputs marked in `no_tangent` get none: the new values of inputs whose writes autograd does
/// not see (InputInfo::mutations_hidden_from_autograd), which the runtime writes back under
/// no_grad. The outputs after `no_tangent`'s entries are the user's: those may be leaf outputs
/// (JointGraph::leaf_output).
JointGraph build_joint(const Graph& fw, const std::vector<bool>& requires_grad,
                       size_t num_tokens = 0, const std::vector<bool>& no_tangent = {});

}  // namespace aotgrad
