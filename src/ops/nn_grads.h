// aotgrad: the neural-network family's derivative helpers (internal to src/ops: nn_ops.cc's
// formulas call them).
#pragma once

namespace aotgrad::nn_grads {

/// Registers FunctionsManual's nn helpers for formulas (embedding_backward,
/// max_pool_double_backward, layer_norm_double_backward, batchnorm_double_backward,
/// softmax_double_backward, ...).
void add_nn_grad_helpers();

}  // namespace aotgrad::nn_grads
