// aotgrad: torch.cond for libtorch C++ functions -- data-dependent control flow that a capture
// records as one higher-order call with a subgraph per branch (§13.36).
#pragma once

#include <vector>

#include "aotgrad/frontend/capture.h"

namespace aotgrad {

/// torch.cond(pred, true_fn, false_fn, operands): `true_fn(operands)` when the one element of the
/// bool tensor `pred` is true, else `false_fn(operands)`. Under capture (aot_function,
/// aot_module, capture()) with a traced `pred`, both branches are traced on the operands' fakes,
/// each into its own subgraph (`true_graph_0`, `false_graph_0`), and the call is recorded as one
/// `torch.ops.higher_order.cond(pred, true_graph_0, false_graph_0, [operands...])` node whose
/// results the returned tensors stand for; a tensor of the function a branch reads without taking
/// it as an operand is passed to both branches as an extra operand (as torch.compile lifts a
/// branch's free variables). Outside a capture, or with a `pred` that is not traced (a constant),
/// it runs the selected branch. Throws Error for a `pred` that is not a one-element bool tensor,
/// branches returning different numbers or metadata of tensors, and a branch that writes or
/// returns one of its operands (torch.cond's branches are pure).
std::vector<at::Tensor> cond(const at::Tensor& pred, const TensorFunction& true_fn,
                             const TensorFunction& false_fn,
                             const std::vector<at::Tensor>& operands);

}  // namespace aotgrad
