// aotgrad: cond's derivative -- the backward of torch.ops.higher_order.cond is a cond over the
// branches' backward graphs (PyTorch's CondAutogradOp, torch/_higher_order_ops/cond.py).
#pragma once

#include <memory>
#include <vector>

#include "aotgrad/ir/graph.h"
#include "aotgrad/ops/derivative.h"

namespace aotgrad {

/// The backward graph of cond branch `branch` (Note [cond]): placeholders the branch's operands
/// then one gradient per result (arg0_1, arg1_1, ...), returning for each operand marked in
/// `needs` its gradient -- zeros where the branch's result does not depend on it, contiguous, so
/// that both branches' backward graphs return the same metadata. It recomputes the branch's
/// forward (as PyTorch's create_bw_fn does), dead code removed.
std::unique_ptr<Graph> cond_branch_backward(const Graph& branch, const std::vector<bool>& needs);

/// Writes the gradients of a cond call's operands (GradBuilder::set(3, k, ...)): one backward
/// cond(pred, true_graph_N, false_graph_N, [operands..., grad outputs...]) whose subgraphs are
/// cond_branch_backward of the forward call's, named with the graph's first free N.
void cond_backward(GradBuilder& b);

}  // namespace aotgrad
