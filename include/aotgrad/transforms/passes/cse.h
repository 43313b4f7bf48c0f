// aotgrad: common subexpression elimination on the graph (fx_graph_cse).
#pragma once

#include <string_view>

#include "aotgrad/transforms/passes/pass.h"

namespace aotgrad {

/// Common subexpression elimination, as torch/_functorch/compile_utils.py's fx_graph_cse: a call
/// of the same op overload with the same arguments (after merging, defaults filled in; floats
/// compared bit for bit, so 1 and 1.0 and 0.0 and -0.0 differ) and the same result metadata as an
/// earlier call in the same mutation region becomes a use of the earlier one; so does a getitem
/// of the same tuple and index. Never merged: placeholders, random ops (each draws its own
/// numbers), collectives and their waits (each is a communication every rank issues), effectful
/// calls (each effect happens: _print, with_effects; Note [Effect tokens]), calls with
/// mutations (each starts a new region, as compute_mutation_region_ids), values whose storage some
/// call writes, and pairs whose merge would add aliasing the caller sees (two outputs becoming one
/// tensor or one storage; see Note [Replacing a value by another]). The earlier node keeps its
/// name. changes(): nodes merged away. Leaves no dead code behind.
class CommonSubexpressionElimination : public Pass {
 public:
  std::string_view name() const override { return "cse"; }
  bool run(Graph& g) override;
};

/// Whether CommonSubexpressionElimination would merge some node of `g` (stops at the first).
bool has_common_subexpressions(const Graph& g);

}  // namespace aotgrad
