// aotgrad: decompositions -- an op rewritten as a small graph of other ops.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aotgrad/ir/graph.h"

namespace aotgrad {

/// What a decomposition sees and uses: the call being replaced and a builder that inserts the
/// replacement before it (metadata inferred for every new node). It mirrors the C++ kernel of a
/// CompositeImplicitAutograd op, or the entry of torch/_decomp, named in Decomposition::source.
class DecompBuilder {
 public:
  DecompBuilder(Graph& graph, const Node& node) : g_(graph), node_(node) {}

  const Node& node() const { return node_; }
  const OpDef& op() const { return *node_.op(); }
  /// Argument i as a node; throws naming the argument if it is a constant or None.
  Node* input(size_t i) const;
  /// Argument i as the call holds it (constants, lists, None).
  const Arg& arg(size_t i) const { return node_.args().at(i); }
  bool is_none(size_t i) const { return i >= node_.args().size() || node_.args()[i].is_none(); }
  const TensorMeta& input_meta(size_t i) const { return input(i)->tensor_meta(); }
  int64_t int_arg(size_t i) const;
  double float_arg(size_t i) const;
  bool bool_arg(size_t i) const;

  /// Inserts a call of `op` (see append_call: defaults dropped, metadata inferred).
  Node* call(std::string_view op, std::vector<Arg> args,
             std::vector<std::pair<std::string, Arg>> kwargs = {});
  Node* getitem(Node* tuple, int64_t index);
  /// x.reshape(sizes) as at::reshape does it: a view when the strides allow one, else a contiguous
  /// clone and _unsafe_view. Sizes are concrete or symbolic values of this graph.
  Node* reshape(Node* x, const SymIntVector& sizes);
  Graph& graph() { return g_; }

 private:
  Graph& g_;
  const Node& node_;
};

/// A decomposition: returns the value that replaces the call (a node, an input of the call --
/// dropout in eval mode is its input -- or a tuple of nodes for an op with several results).
using DecompFn = Arg (*)(DecompBuilder&);

/// The tables a decomposition belongs to (§13.10).
enum DecompTableBits : uint32_t {
  kCoreTable = 1u << 0,  // composite ops down to core ATen (CompositeImplicitAutograd kernels)
  kFullTable = 1u << 1,  // what a code generator wants: core ATen ops down to small ops
};

struct Decomposition {
  DecompFn fn = nullptr;
  uint32_t tables = kCoreTable | kFullTable;
  /// Where the formula comes from ("CompositeImplicitAutograd: at::native::linear (1.13)").
  std::string source;
};

/// Attaches a decomposition to an op declaration: `t.def(...).decomposition(decomp(fn, ...))`.
inline std::shared_ptr<const Decomposition> decomp(DecompFn fn, uint32_t tables,
                                                   std::string source) {
  auto d = std::make_shared<Decomposition>();
  d->fn = fn;
  d->tables = tables;
  d->source = std::move(source);
  return d;
}

}  // namespace aotgrad
