// aotgrad: algebraic simplification (no-op removal).
#pragma once

#include <string_view>

#include "aotgrad/transforms/passes/pass.h"

namespace aotgrad {

/// Algebraic simplification, as Inductor's remove_no_ops / remove_noop_ops: a call that returns
/// a value equal to one the graph already has becomes a use of that value.
///  - x * 1, 1 * x, x / 1, x - 0 (alpha > 0), with a Python-number operand, Tensor and Scalar
///    overloads (factories of 0/1 are constant_fold's). x + 0 and 0 + x only on integer and bool
///    tensors, or with a -0.0: on floating tensors -0.0 + 0 is +0.0 (1 / x tells them apart), so
///    unlike Inductor's remove_no_ops this pass keeps them; alpha matters only through that sign.
///  - A chain of views (view, reshape, _unsafe_view, expand, t, transpose, permute, ...) whose
///    result has the dtype, sizes, strides and offset of a value earlier in the chain becomes that
///    value: view/reshape to the same shape, expand to the same shape, t(t(x)), transpose(x, d, d).
///  - clone(x) with x's layout, in a functional graph only (nothing can write either tensor).
/// detach stays: it cuts the gradient where the graph is differentiated later (a joint graph, a
/// forward graph given to autograd), so a rewrite may drop a detach only when the value it keeps
/// is itself detached: detach(detach(x)) becomes detach(x), detach(x) stays.
/// Every rewrite keeps the dtype, sizes and strides its users see (x * 1.0 with x an int tensor
/// is a float tensor: not simplified), and adds no aliasing between the graph's inputs and
/// outputs (Note [Replacing a value by another] in graph_facts.h): users see the same bits.
/// changes(): rewrites. Leaves unused views: run dce after it.
class AlgebraicSimplification : public Pass {
 public:
  std::string_view name() const override { return "simplify"; }
  bool run(Graph& g) override;
};

}  // namespace aotgrad
