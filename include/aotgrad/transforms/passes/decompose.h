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
  /// Also every op the registry's provider gave (not declared) that is CompositeImplicitAutograd
  /// and has a decomposition (traced from its kernel), or whose user registered a decomposition
  /// for the core table (ops/custom_ops.h): part of composite_implicit(), core(), full().
  bool provided_composites = false;
  /// Ops left out although provided_composites would take them ("-aten::group_norm").
  std::set<std::string> excluded;
  bool contains(const OpDef& op) const;

  /// Nothing is decomposed.
  static DecompositionTable none() { return {}; }
  /// The CompositeImplicitAutograd ops (linear, matmul, layer_norm, softmax, cross_entropy,
  /// dropout, reshape, ...): what PyTorch's tracing decomposes before autograd sees a graph.
  static DecompositionTable composite_implicit();
  /// Every op whose decomposition is in the given tables (DecompTableBits of ops/decomposition.h).
  static DecompositionTable from_tables(uint32_t tables);
  /// The `core` table (§13.10): composite ops down to core ATen.
  static DecompositionTable core();
  /// The `full` table: core, and core ATen ops down to the small ops a code generator wants.
  static DecompositionTable full();
};

/// get_decompositions({...}): the decompositions of the named ops. A name with an overload
/// ("native_layer_norm.default", "aten::gelu") is that overload; a name without one ("aten::var")
/// is every overload of it that has a decomposition. Throws Error for an unknown op or an op
/// without a decomposition.
DecompositionTable get_decompositions(const std::vector<std::string>& names);

/// The CLI's --decomp value: comma-separated items, applied left to right: `none`, `core`, `full`
/// (add that table), an op name (add its decompositions), `-`op name (remove them). Example:
/// "full,-aten::native_layer_norm". Throws Error naming the item that is not understood.
DecompositionTable parse_decomposition_spec(const std::string& spec);

/// Replaces every call of an op in `table` by its decomposition, and the calls that decomposition
/// makes, until none is left (a decomposition may use other decomposable ops). Returns the number
/// of calls replaced. Each replacement must have the original's dtype and sizes; an Error naming
/// the node says so otherwise, or when the decomposition cannot handle the call.
int decompose(Graph& g, const DecompositionTable& table);

/// `g` with its CompositeImplicitAutograd calls decomposed (a copy; `g` itself when it has none).
std::shared_ptr<const Graph> decompose_composites(std::shared_ptr<const Graph> g);

}  // namespace aotgrad
