// aotgrad: which graph inputs a graph (as written, in-place ops included) mutates.
#pragma once

#include <vector>

#include "aotgrad/ir/graph.h"

namespace aotgrad {

/// Per placeholder: whether the graph writes its data or its metadata (t_, as_strided_, ...),
/// directly or through views of it. Follows the schemas' alias annotations (`Tensor(a)` returns
/// alias argument `a`; `Tensor(a!)` arguments are written) and the ops' undeclared mutations.
struct InputMutations {
  std::vector<bool> data_mutated;
  std::vector<bool> metadata_mutated;
  /// An as_strided (or as_strided_) of the input or of a view of it: geometry absolute in the
  /// input's storage, which may reach past the input's elements.
  struct AbsoluteView {
    std::vector<int64_t> sizes, strides;
    int64_t storage_offset = -1;  // -1: not given (the viewed tensor's own)
    bool known = true;            // false: symbolic sizes, strides or offset
  };
  std::vector<std::vector<AbsoluteView>> absolute_views;  // per placeholder
  bool any() const;
};

InputMutations analyze_input_mutations(const Graph& g);

/// For each node (by position in g.nodes()), the index of the placeholder whose storage it is a
/// view of, or -1. Values computed by ops that return fresh tensors are -1.
std::vector<int> input_alias_roots(const Graph& g);

/// For each node (by position in g.nodes()): the node whose storage its value lives in -- itself
/// for fresh values, the viewed value's root for views (a placeholder for views of inputs).
/// `written_into` (by position, as reinplaced_args of transforms/passes/reinplace.h; empty: none)
/// gives the argument a re-inplaced call writes its result into (-1: none): it lives in that
/// storage.
std::vector<const Node*> storage_roots(const Graph& g, const std::vector<int>& written_into = {});

/// Per output leaf of `g`: the placeholder it is the very tensor of (the placeholder itself, or an
/// in-place op's result on it), or -1. A runtime returns the caller's argument for such outputs, as
/// eager does.
std::vector<int> outputs_that_are_args(const Graph& g);

}  // namespace aotgrad
