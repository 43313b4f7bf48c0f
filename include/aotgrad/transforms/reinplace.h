// aotgrad: re-inplacing -- which out-of-place calls of a functional graph may write their result
// into their first argument's buffer because that buffer dies at the call (seed §13.4: the memory
// functionalization costs, given back; torch.fx.passes.reinplace's rule).
#pragma once

#include <string>
#include <vector>

#include "aotgrad/ir/graph.h"

namespace aotgrad {

/// Per node of `g` (by position in g.nodes()): the in-place variant the runtime may call instead of
/// the node's op, writing the result into argument 0's buffer (`add` -> `add_`), or nullptr.
///
/// A call is re-inplaced when its op and the variant are declared ops (never derived by an op
/// provider, so a compilation and a run agree), the variant writes argument 0 only and returns it,
/// takes the same arguments, and is not random, collective, a view or a special in-place value
/// (1.13's copy); when argument 0 is a value of the graph with the result's dtype, device, sizes
/// and strides (no broadcast, no promotion, no layout change); and when that value's storage is
/// not a graph input's and dies here: no value living in it (the value itself, its views, earlier
/// re-inplaced results, a multi-result call's tuple) is used by a later node or by the output, and
/// no other argument of the call lives in it. Decided in graph order, so a chain of pointwise ops
/// reuses one buffer.
std::vector<const OpDef*> reinplace_plan(const Graph& g);

/// Whether the plan re-inplaces each node (by position): plan[i] != nullptr.
std::vector<bool> reinplaced_nodes(const std::vector<const OpDef*>& plan);

/// One line per re-inplaced call, in graph order: "add_2 = aten.add_.Tensor into mul_1".
std::string reinplace_text(const Graph& g, const std::vector<const OpDef*>& plan);

}  // namespace aotgrad
