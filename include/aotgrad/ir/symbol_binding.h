// aotgrad: where each size symbol of a graph gets its value at a call, and which input sizes are
// checked against the bound values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "aotgrad/ir/graph.h"

namespace aotgrad {

/// A symbolic size of a graph input: dimension `dim` of tensor placeholder `input` (its index among
/// Graph::placeholders()), or the value of a SymInt placeholder (dim -1).
struct InputSize {
  int input = 0;
  int dim = -1;
  SymInt size;
};

/// The input size a symbol is bound from: the symbol's value is `at`'s size divided by `divisor`
/// (the graph was traced for sizes divisible by it; a size that does not divide is an error).
struct SymbolSource {
  std::string symbol;
  InputSize at;
  int64_t divisor = 1;
};

/// The binding of a graph's size symbols: `symbols` in binding order (those bound from a bare size
/// first, in input order, then those bound from a multiple), `checks` every other symbolic input
/// size, in input order, whose value each call compares with the bound symbols'.
struct SymbolBindings {
  std::vector<SymbolSource> symbols;
  std::vector<InputSize> checks;
  bool empty() const { return symbols.empty(); }
  /// The index of `symbol` in `symbols`, or -1.
  int find(const std::string& symbol) const;
};

/// The one binding rule, shared by the runtime (which binds and checks at each call) and the
/// command line's report of symbols and guards: a symbol binds from the first input size (in
/// placeholder order, dimensions in order) that is exactly the bare symbol, else from the first
/// that is a multiple c*s of it (s = size / c); every other symbolic input size is a check.
/// Throws Error, naming the symbol and the value that reads it, for a symbol that a size of any
/// node reads but no input binds (data-dependent `u` symbols excepted: an op produces them).
SymbolBindings bind_symbols(const Graph& graph);

}  // namespace aotgrad
