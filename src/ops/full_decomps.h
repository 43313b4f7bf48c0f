// aotgrad: the `full` decomposition table (§13.10) -- core ATen ops written as the small ops a code
// generator lowers, as torch/_decomp/decompositions.py and torch/_refs compute them. Each function
// is attached in its op's declaration with decomp(fn, kFullTable, "torch/_decomp: <function>").
//
// Shared conventions (PyTorch's wrappers):
//  - pw_cast_for_opmath: the tensor arguments are converted to the computation dtype (f32 for
//    bf16/f16) and the result back to the promoted result dtype; `x.to(dtype)` is `_to_copy`, and
//    nothing when x already has the dtype.
//  - Python numbers stay scalar arguments of the .Tensor overloads (`0.5 * a` is
//    mul.Tensor(a, 0.5)), as make_fx records them; `1 - t` is rsub.Scalar(t, 1) and `1 / t` is
//    reciprocal(t) * 1.
//  - Where the ATen CPU kernel returns a contiguous result and the decomposition's last op would
//    not (a non-contiguous input), a contiguous clone keeps the kernel's strides.
//
// Not decomposed: _to_copy. PyTorch decomposes it into prims.convert_element_type /
// prims.device_put, which are not ATen ops; the only ATen form (empty_like + copy) is not smaller
// -- copy is the same cast with an extra operand and allocation. nll_loss_backward: PyTorch's
// decomposition needs scatter.value, which the registry does not declare yet.
#pragma once

#include "aotgrad/ops/decomposition.h"

namespace aotgrad {

// Forward ops.
Arg native_layer_norm_full_decomp(DecompBuilder& b);  // torch/_refs: native_layer_norm
Arg gelu_full_decomp(DecompBuilder& b);               // torch/_refs: gelu
Arg silu_full_decomp(DecompBuilder& b);               // torch/_decomp: silu
Arg softmax_full_decomp(DecompBuilder& b);            // torch/_decomp: _softmax
Arg log_softmax_full_decomp(DecompBuilder& b);        // torch/_decomp: _log_softmax
Arg addmm_full_decomp(DecompBuilder& b);              // torch/_decomp: addmm
Arg native_dropout_full_decomp(DecompBuilder& b);     // ATen's CPU kernel (see full_decomps.cc)

// Backward ops.
Arg native_layer_norm_backward_full_decomp(DecompBuilder& b);
Arg gelu_backward_full_decomp(DecompBuilder& b);
Arg softmax_backward_data_full_decomp(DecompBuilder& b);
Arg log_softmax_backward_data_full_decomp(DecompBuilder& b);
Arg threshold_backward_full_decomp(DecompBuilder& b);
Arg hardtanh_backward_full_decomp(DecompBuilder& b);
Arg silu_backward_full_decomp(DecompBuilder& b);
Arg tanh_backward_full_decomp(DecompBuilder& b);
Arg sigmoid_backward_full_decomp(DecompBuilder& b);
Arg mse_loss_backward_full_decomp(DecompBuilder& b);
Arg native_dropout_backward_full_decomp(DecompBuilder& b);

}  // namespace aotgrad
