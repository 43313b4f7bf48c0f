// aotgrad: applying decompositions to a graph (§13.10).
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "aotgrad/ir/graph.h"

namespace aotgrad {

/// Which ops to decompose: the ops (by full name, "aten::linear") whose decomposition is applied.
struct DecompositionTable {
  std::set<std::string> ops;
  bool contains(const OpDef& op) const;

  /// Nothing is decomposed.
  static DecompositionTable none() { return {}; }
  /// The CompositeImplicitAutograd ops (linear, matmul, layer_norm, softmax, cross_entropy, dropout,
  /// reshape, ...): what PyTorch's tracing decomposes before autograd sees a graph.
  static DecompositionTable composite_implicit();
  /// Every op whose decomposition is in the given tables (DecompTableBits of ops/decomposition.h).
  static DecompositionTable from_tables(uint32_t tables);
};

/// Replaces every call of an op in `table` by its decomposition, and the calls that decomposition
/// makes, until none is left (a decomposition may use other decomposable ops). Returns the number
/// of calls replaced. Each replacement must have the original's dtype and sizes; an Error naming
/// the node says so otherwise, or when the decomposition cannot handle the call.
int decompose(Graph& g, const DecompositionTable& table);

/// `g` with its CompositeImplicitAutograd calls decomposed (a copy; `g` itself when it has none).
std::shared_ptr<const Graph> decompose_composites(std::shared_ptr<const Graph> g);

}  // namespace aotgrad
