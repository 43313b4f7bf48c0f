// aotgrad: re-inplacing -- which out-of-place calls of a functional graph may write their result
// into their first argument's buffer because that buffer dies at the call (seed §13.4: the memory
// functionalization costs, given back; torch.fx.passes.reinplace's rule).
#pragma once

#include <string>
#include <vector>

#include "aotgrad/ir/graph.h"

namespace aotgrad {

/// How the runtime may run a call without allocating its result: written into the buffer of its
/// argument `arg`, by the in-place variant `inplace` (`add` as `add_`, into argument 0) or, for a
/// pointwise op, by its out= overload (`gelu_backward(grad, x, out=grad)`; `inplace` nullptr).
struct ReinplaceChoice {
  int arg = -1;  // -1: the call allocates its result
  const OpDef* inplace = nullptr;
  explicit operator bool() const { return arg >= 0; }
};

/// Per node of `g` (by position in g.nodes()): where the runtime may write the node's result.
///
/// A call writes into an argument when that argument is a value of the graph with the result's
/// dtype, device, sizes and strides (no broadcast, no promotion, no layout change) whose storage
/// is not a graph input's and dies here: no value living in it (the value itself, its views,
/// earlier re-inplaced results, a multi-result call's tuple) is read by a later node or by the
/// output, and no other argument of the call lives in it. Decided in graph order, so a chain of
/// pointwise ops reuses one buffer. The op must be declared (never derived by an op provider, so a
/// compilation and a run agree) and not random, collective, a view or a mutation. Argument 0 is
/// written by the in-place variant when the op has one that writes argument 0 only, returns it and
/// takes the same arguments (not 1.13's copy); any tensor argument of a pointwise op
/// (may_write_out) by its out= overload, which libtorch has for every such op (the interpreter's
/// tests check); argument 0 of _softmax_backward_data and _log_softmax_backward_data (grad_output)
/// by their out= overloads too: libtorch's CPU kernels reduce each row of it before writing that
/// row of the result.
std::vector<ReinplaceChoice> reinplace_plan(const Graph& g);

/// Whether the plan may write a pointwise op's result into any of its arguments through its out=
/// overload.
bool may_write_out(const OpDef& op);

/// Whether the plan may write the op's result over its argument 0 through its out= overload, the op
/// not being pointwise (OpDef::writes_out_over_first): libtorch 1.13's CPU softmax backward kernels
/// (_softmax_backward_data, _log_softmax_backward_data) reduce each row of grad_output, with the
/// saved output, before writing that row of the result at the same indices (Megatron's fused
/// softmax backward writes its result over the gradient too).
bool may_write_out_over_first(const OpDef& op);

/// Per node (by position): the argument whose storage the plan writes its result into, or -1.
std::vector<int> reinplaced_args(const std::vector<ReinplaceChoice>& plan);

/// One line per re-inplaced call, in graph order: "add_2 = aten.add_.Tensor into mul_1" (the
/// in-place variant) or "gelu_backward = aten.gelu_backward.default out= mul_3" (out=).
std::string reinplace_text(const Graph& g, const std::vector<ReinplaceChoice>& plan);

}  // namespace aotgrad
