// aotgrad: a backward graph's weight gradients as calls of their own, so that the memory schedule
// can run each one where the step's live bytes are lowest.
#pragma once

#include "aotgrad/ir/graph.h"

namespace aotgrad {

/// Splits every convolution_backward call of `g` that computes grad_input and also grad_weight or
/// grad_bias into two calls of the same op on the same arguments: the first keeps its name and
/// computes grad_input alone (output_mask [True, False, False]), the second, named after it
/// (convolution_backward_N), computes the weight and bias gradients its mask asked for
/// ([False, grad_weight, grad_bias]); their getitems read from the second. libtorch computes the
/// two halves apart anyway (oneDNN's backward-data and backward-weights primitives), so the values
/// are the same bits and the work the same. A weight gradient depends on nothing the rest of the
/// backward computes from grad_input, so once apart the scheduler may move it: a deep network's
/// last layers hold most of its parameters and the backward makes their gradients first, while
/// the first layers' activations still live -- later, those gradients no longer meet them. A call
/// no getitem reads one half of is left as it is (splitting it would leave a dead call). Returns
/// the number of calls split.
int split_weight_gradients(Graph& g);

/// Whether split_weight_gradients would split a call of `g` (without copying or changing it).
bool has_weight_gradients_to_split(const Graph& g);

}  // namespace aotgrad
