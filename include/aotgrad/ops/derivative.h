// aotgrad: derivative rules -- how an op's backward is written into a joint graph.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aotgrad/ir/graph.h"

namespace aotgrad {

/// What a derivative rule sees and uses: the forward node (in the joint graph being built), the
/// gradients flowing into its outputs, which inputs need a gradient, and a builder that appends
/// backward nodes. A rule mirrors its `derivatives.yaml` entry: for each input i that needs(i),
/// it computes the formula and calls set(i, ...). Broadcast reduction (sum_to) and dtype casts of
/// the returned gradients are done afterwards by the autograd transform, as autograd's engine does
/// in validate_outputs, so a rule returns gradients in the shape its formula gives.
class GradBuilder {
 public:
  GradBuilder(Graph& graph, const Node& forward, std::vector<Node*> grad_outputs,
              std::vector<bool> needs_input_grad);

  const Node& node() const { return fwd_; }
  const OpDef& op() const { return *fwd_.op(); }

  /// Argument i as a node (a tensor or SymInt value); throws if it is a constant.
  Node* input(size_t i) const;
  /// Argument i as the forward node holds it (constants, lists, None).
  const Arg& arg(size_t i) const { return fwd_.args().at(i); }
  const TensorMeta& input_meta(size_t i) const;
  /// Forward result i (a saved output, read through detach(detach(...)) as PyTorch's traced
  /// joint graphs show: once per rule invocation).
  Node* result(size_t i = 0);
  const TensorMeta& result_meta(size_t i = 0) const;
  /// Forward result i as the forward graph holds it, not detached (a saved result that is not
  /// differentiated: mean/rstd, indices, masks); a missing getitem is added among the forward
  /// node's getitems, in index order.
  Node* saved_output(size_t i);

  /// The gradient flowing into output i, or nullptr when none does.
  Node* grad(size_t i = 0) const { return i < grad_outputs_.size() ? grad_outputs_[i] : nullptr; }
  /// The gradient of output i, or zeros like it when none flows (for multi-output formulas).
  Node* grad_or_zeros(size_t i);
  bool needs(size_t i) const { return i < needs_.size() && needs_[i]; }
  /// Sets the gradient for input i (ignored unless needs(i); nullptr means none).
  void set(size_t i, Node* g);
  const std::vector<Node*>& input_grads() const { return input_grads_; }
  /// Tensor[] argument i (cat, stack): whether its element k needs a gradient, and setting it.
  /// needs(i) is true when any element does (PyTorch's grad_input_mask for a list).
  bool needs(size_t i, size_t k) const;
  void set(size_t i, size_t k, Node* g);
  /// Per-element needs of Tensor[] argument i, set by the autograd transform.
  void set_list_needs(size_t i, std::vector<bool> needs);
  /// Gradients set for Tensor[] arguments: [arg][element], empty for other arguments.
  const std::vector<std::vector<Node*>>& list_input_grads() const { return list_grads_; }

  /// Appends a call of `op` ("mul.Tensor", "aten::sum.dim_IntList") with positional and keyword
  /// arguments; metadata is inferred. Trailing arguments equal to their defaults are dropped.
  Node* call(std::string_view op, std::vector<Arg> args,
             std::vector<std::pair<std::string, Arg>> kwargs = {});
  Node* call(const OpDef& op, std::vector<Arg> args,
             std::vector<std::pair<std::string, Arg>> kwargs = {});
  Node* getitem(Node* tuple, int64_t index);
  Graph& graph() { return g_; }

  // FunctionsManual-style helpers used by many rules.
  /// at::sum_to: sums the leading dims and the dims broadcast from size 1, then views to `shape`.
  Node* sum_to(Node* x, const SymIntVector& shape);
  /// A list Arg of sizes (concrete ints, or sym_size nodes of `like` for symbolic ones).
  Arg sizes_arg(const SymIntVector& sizes, Node* like = nullptr);
  /// A size as an argument: the int, or a sym_size node reading it from `like` (preferring
  /// dimension `dim`) or from an input of the graph; an Error when none has it.
  Arg sym_arg(const SymInt& s, Node* like = nullptr, int64_t dim = -1);
  Node* zeros_like(Node* x);
  Node* scalar_mul(Node* x, double v);  // mul.Tensor(x, v), or x itself when v == 1

 private:
  Graph& g_;
  const Node& fwd_;
  std::vector<Node*> grad_outputs_;
  std::vector<bool> needs_;
  std::vector<Node*> input_grads_;
  std::vector<std::vector<bool>> list_needs_;   // per Tensor[] argument
  std::vector<std::vector<Node*>> list_grads_;  // per Tensor[] argument
  std::vector<Node*> results_;                  // saved outputs already read
};

/// A derivative computed in C++ rather than by a formula: for an op provider's ops (a backward
/// traced through libtorch's autograd); the registry's ops declare formulas (ops/formula.h).
using GradFn = void (*)(GradBuilder&);

struct FormulaProgram;  // a parsed formula (ops/formula.h)

/// A derivative rule: fills in GradBuilder::set for the inputs that need gradients.
struct DerivativeRule {
  /// The derivatives.yaml text of the rule ("self: threshold_backward(grad, result, 0)"), which
  /// is what runs; for a C++ rule, what it computes.
  std::string formula;
  std::shared_ptr<const FormulaProgram> program;
  GradFn fn = nullptr;  // a rule that is not a formula
  /// Computes the gradients of the inputs that need one.
  void apply(GradBuilder& b) const;
};

/// A rule computed by `fn` (see GradFn), described by `what`.
inline std::shared_ptr<const DerivativeRule> derivative_fn(GradFn fn, std::string what) {
  auto r = std::make_shared<DerivativeRule>();
  r->fn = fn;
  r->formula = std::move(what);
  return r;
}

}  // namespace aotgrad
