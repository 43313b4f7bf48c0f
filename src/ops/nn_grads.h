// aotgrad: derivative rules of the neural-network op family (internal to src/ops: nn_ops.cc
// attaches them to the op declarations).
#pragma once

#include "aotgrad/ops/derivative.h"

namespace aotgrad::nn_grads {

// Each rule implements its op's tools/autograd/derivatives.yaml entry (formula text at the
// declaration in nn_ops.cc) and emits the ATen graph PyTorch's AOTAutograd traces for it.

/// native_layer_norm: native_layer_norm_backward(grad, input, normalized_shape, result1, result2,
/// weight, bias, grad_input_mask).
void native_layer_norm_grad(GradBuilder& b);
/// native_batch_norm and _native_batch_norm_legit_functional: native_batch_norm_backward(grad,
/// input, weight, running_mean, running_var, result1, result2, training, eps, grad_input_mask).
void native_batch_norm_grad(GradBuilder& b);
/// _softmax / _log_softmax: _softmax_backward_data / _log_softmax_backward_data(grad, result, dim,
/// self.scalar_type()).
void softmax_grad(GradBuilder& b);
void log_softmax_grad(GradBuilder& b);
/// nll_loss_forward: nll_loss_backward(grad, self, target, weight, reduction, ignore_index,
/// total_weight).
void nll_loss_forward_grad(GradBuilder& b);
/// embedding: embedding_backward(...) = embedding_dense_backward for a dense weight.
void embedding_grad(GradBuilder& b);
/// native_dropout: native_dropout_backward(grad, result1, scale).
void native_dropout_grad(GradBuilder& b);
/// max_pool2d_with_indices: max_pool2d_with_indices_backward(grad, self, ..., result1).
void max_pool2d_with_indices_grad(GradBuilder& b);
/// avg_pool2d: avg_pool2d_backward(grad, self, ...).
void avg_pool2d_grad(GradBuilder& b);
/// _adaptive_avg_pool2d: _adaptive_avg_pool2d_backward(grad, self).
void adaptive_avg_pool2d_grad(GradBuilder& b);

// Double backward: the derivatives of the backward kernels.
/// native_layer_norm_backward: layer_norm_double_backward(...).
void native_layer_norm_backward_grad(GradBuilder& b);
/// native_batch_norm_backward: batchnorm_double_backward(...).
void native_batch_norm_backward_grad(GradBuilder& b);
void softmax_backward_data_grad(GradBuilder& b);
void log_softmax_backward_data_grad(GradBuilder& b);
void nll_loss_backward_grad(GradBuilder& b);
void embedding_dense_backward_grad(GradBuilder& b);
void native_dropout_backward_grad(GradBuilder& b);
void max_pool2d_with_indices_backward_grad(GradBuilder& b);
void avg_pool2d_backward_grad(GradBuilder& b);
void adaptive_avg_pool2d_backward_grad(GradBuilder& b);

// Composite shape ops (no derivatives.yaml entry: PyTorch differentiates what they decompose to,
// which comes to these).
/// reshape, flatten.using_ints: grad.reshape(self.sizes()).
void reshape_grad(GradBuilder& b);
/// contiguous: grad (a clone's or an alias's gradient).
void contiguous_grad(GradBuilder& b);

}  // namespace aotgrad::nn_grads
