// aotgrad: decompositions of the CompositeImplicitAutograd ops libtorch front ends call (linear,
// matmul, conv2d, layer_norm, batch_norm, softmax, log_softmax, cross_entropy_loss, dropout,
// max_pool2d, adaptive_avg_pool2d, reshape, flatten, contiguous), as their 1.13 C++ kernels run
// on CPU -- what make_fx records for them.
#pragma once

#include "aotgrad/ops/decomposition.h"

namespace aotgrad {

Arg matmul_decomp(DecompBuilder& b);
Arg linear_decomp(DecompBuilder& b);
Arg conv2d_decomp(DecompBuilder& b);
Arg underscore_convolution_decomp(DecompBuilder& b);
Arg narrow_decomp(DecompBuilder& b);
Arg layer_norm_decomp(DecompBuilder& b);
Arg batch_norm_decomp(DecompBuilder& b);
Arg softmax_int_decomp(DecompBuilder& b);
Arg log_softmax_int_decomp(DecompBuilder& b);
Arg cross_entropy_loss_decomp(DecompBuilder& b);
Arg dropout_decomp(DecompBuilder& b);
Arg max_pool2d_decomp(DecompBuilder& b);
Arg adaptive_avg_pool2d_decomp(DecompBuilder& b);
Arg reshape_decomp(DecompBuilder& b);
Arg flatten_decomp(DecompBuilder& b);
Arg contiguous_decomp(DecompBuilder& b);

}  // namespace aotgrad
