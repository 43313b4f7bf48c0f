// aotgrad: the op side of functionalization -- a view's inverse and an in-place op's written value,
// declared with the op (OpDef::view_inverse, OpDef::inplace_value) as PyTorch's
// FunctionalInverses declares them with the view ops.
#pragma once

#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "aotgrad/ir/graph.h"

namespace aotgrad {

/// What a view's inverse sees: the view call being undone (its op and its arguments, bound as in
/// the graph being built), the base it viewed, and the new value the view was given; calls are
/// appended to that graph. See OpDef::view_inverse.
class ViewInverseBuilder {
 public:
  ViewInverseBuilder(Graph& graph, const OpDef& view, const std::vector<Arg>& view_args,
                     int64_t element, Node* base, Node* value)
      : g_(graph), op_(view), args_(view_args), element_(element), base_(base), value_(value) {}

  const OpDef& op() const { return op_; }
  /// The view call's argument i (i >= 1; argument 0 is the base).
  const Arg& arg(size_t i) const;
  Node* base() const { return base_; }
  const TensorMeta& base_meta() const { return base_->tensor_meta(); }
  /// The new value of the view.
  Node* value() const { return value_; }
  /// For a view that returns a list (split, unbind): the element written; -1 otherwise.
  int64_t element() const { return element_; }
  /// The metadata the view had: the op's meta function on the base and the arguments.
  TensorMeta view_meta() const;
  /// The base's sizes as an int list; throws naming the view when one is symbolic.
  Arg base_sizes() const;

  /// Appends a call (trailing arguments equal to their defaults dropped, metadata inferred).
  Node* call(const OpDef& op, std::vector<Arg> args,
             std::vector<std::pair<std::string, Arg>> kwargs = {});
  Node* call(std::string_view op, std::vector<Arg> args,
             std::vector<std::pair<std::string, Arg>> kwargs = {});

 private:
  Graph& g_;
  const OpDef& op_;
  const std::vector<Arg>& args_;
  int64_t element_;
  Node* base_;
  Node* value_;
};

/// What OpDef::inplace_value sees: the in-place call's arguments as values of the graph being
/// built, read on first use (reading a stale view replays it, so the function decides the order).
class InplaceValueBuilder {
 public:
  InplaceValueBuilder(Graph& graph, const OpDef& op, std::function<Arg(size_t)> read_arg)
      : g_(graph), op_(op), read_(std::move(read_arg)) {}

  const OpDef& op() const { return op_; }
  /// The call's argument i in the graph being built.
  Arg arg(size_t i) const { return read_(i); }
  Node* call(std::string_view op, std::vector<Arg> args,
             std::vector<std::pair<std::string, Arg>> kwargs = {});

 private:
  Graph& g_;
  const OpDef& op_;
  std::function<Arg(size_t)> read_;
};

/// The inverse of a view through its geometry, for view ops without their own (an op provider's
/// views derived from schemas): as_strided_scatter of the new value into the base at the view's
/// sizes, strides and offset relative to the base. Needs a base whose elements are dense and do
/// not overlap (its clone has its strides) and concrete sizes; throws naming the view otherwise.
Node* as_strided_view_inverse(ViewInverseBuilder& b);

/// The inverse of views that only relabel the base's elements (alias, detach, lift_fresh): the new
/// value is the base's.
Node* identity_view_inverse(ViewInverseBuilder& b);

/// The inverse of views that reshape (view, _reshape_alias, view_as, squeeze, unsqueeze): the new
/// value viewed with the base's sizes.
Node* reshape_view_inverse(ViewInverseBuilder& b);

/// Appends to `g` a value with the values of `values`, exactly, and the gradient of `history`:
/// the value a tensor has when it is written in a way autograd does not see (under torch.no_grad,
/// through a detach), or when it keeps its own history over values written elsewhere. It is
/// `detach(values) - z`, with z = `detach(history) - history` where that is zero (+0: a -0
/// written stays -0) and 0 where history is not finite (there the gradient does not reach
/// history: inf - inf would make the values NaN). For a history that cannot have a gradient (not
/// floating point), `detach(values)`.
Node* values_with_history(Graph& g, Node* values, Node* history);

}  // namespace aotgrad
