// aotgrad (internal): storage, mutation and escape facts of a graph, shared by the rewriting
// passes (cse, constant_fold, simplify) to decide when replacing one value by another is exact.
#pragma once

#include <functional>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "aotgrad/ir/graph.h"
#include "aotgrad/ir/node_map.h"

namespace aotgrad {

// Note [Replacing a value by another]
// A rewrite that makes the users of `node` use `src` instead is exact when (1) both are tensors
// with the same dtype, device, sizes, strides and storage offset (what users and the caller see),
// (2) no call of the graph writes either storage (so their values stay equal after the rewrite,
// whatever runs later), and (3) it adds no aliasing the caller can observe, as Inductor's
// remove_noop_ops decides (torch/_inductor/fx_passes/README.md): a fresh `node` that reaches the
// output is not replaced by an input's storage or by another output's storage, and a view `node`
// that is itself an output is not replaced by an input or another output (the caller would get
// the very same tensor twice). In a graph with mutations, inputs may alias each other at run time:
// a fresh value is not replaced by an input's storage when a write to any input comes between the
// value and one of its uses.
// A storage is the value a tensor lives in: a placeholder, a fresh result, or (for views, the
// results of in-place ops and _unsafe_view, which shares storage in ATen) the storage of the value
// it aliases.
class GraphFacts {
 public:
  explicit GraphFacts(const Graph& g);

  /// The node that owns the storage `n`'s value lives in.
  const Node* storage(const Node* n) const;
  /// Whether a call of the graph writes the storage of `n` or of one of its getitems (declared or
  /// undeclared mutation).
  bool written(const Node* n) const;
  /// Whether the storage of `n` (or of one of its getitems) reaches the graph's output.
  bool escapes(const Node* n) const;
  /// Whether `n` (or one of its getitems) is directly a leaf of the graph's output.
  bool is_output_leaf(const Node* n) const;
  /// Whether `n` lives in a placeholder's storage.
  bool is_input(const Node* n) const;
  /// Whether a call writes an input's storage after `n` and before one of the uses of n or of
  /// its views.
  bool input_written_before_use(const Node* n) const;

  /// Whether every use of `node` may use `src` instead (see the Note above).
  bool can_replace(const Node* node, const Node* src) const;
  /// Whether two calls that compute the same value may be merged (`node` into `keep`): as
  /// can_replace without the layout check, which the caller makes.
  bool can_merge(const Node* node, const Node* keep) const;
  /// Makes every use of `node` use `src`, erases `node` and updates the facts.
  void replace(Graph& g, Node* node, Node* src);

 private:
  const Node* find(const Node* n) const;
  /// The node that first took the same tensor: getitems of one tuple and index are one tensor.
  const Node* tensor(const Node* n) const;
  bool storage_escapes(const Node* n) const;
  bool any_getitem(const Node* n, const std::function<bool(const Node*)>& f) const;
  size_t last_use(const Node* n) const;

  NodeMap<const Node*> base_;                      // union-find parent towards the storage
  std::unordered_set<const Node*> written_;        // storages
  std::unordered_set<const Node*> escaping_;       // storages
  std::unordered_set<const Node*> inputs_;         // storages
  std::unordered_set<const Node*> output_leaves_;  // tensor() of each output leaf
  NodeMap<const Node*> same_tensor_;               // repeated getitem -> first one
  NodeMap<size_t> position_;                       // index in the graph
  std::vector<size_t> input_writes_;               // positions of calls writing an input
};

/// The value of a constant scalar argument (a Python int, float or bool), if it is one.
std::optional<double> literal_value(const Arg& a);

/// For an op that declares an identity element (OpDef::identity: add, sub, mul, div, Tensor and
/// Scalar overloads): the operand whose value the call returns,
/// bit for bit, when `value_of` gives the other operand's value: x * 1, 1 * x, x / 1, and x + z,
/// z + x (alpha 1), x - z (alpha finite) where the zero added (alpha * z, -alpha * z) is -0.0 or
/// the result is not floating (x + 0.0 is +0.0 for x = -0.0, so x + 0 and x - (-0.0) on floating
/// tensors are not x); nullptr otherwise. value_of keeps the sign of a zero. dtype, shape and
/// aliasing are the caller's to check (GraphFacts::can_replace).
Node* identity_operand(const Node& n,
                       const std::function<std::optional<double>(const Arg&)>& value_of);

}  // namespace aotgrad
