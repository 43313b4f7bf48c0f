// aotgrad: derivative formulas in the vocabulary of PyTorch's tools/autograd/derivatives.yaml --
// the formula text is the rule: parsed when the op is declared, evaluated by the autograd
// transform on each forward call, with named C++ helpers (FunctionsManual) for the hard ones.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "aotgrad/ir/graph.h"

namespace aotgrad {

class GradBuilder;
struct DerivativeRule;

// Note [Derivative formulas]
// A rule is `key: expression; key: expression; ...`, one entry per differentiable input (keys
// are schema argument names; several keys share one tuple-valued expression, `input, weight:
// f(...)`), or `key: non_differentiable`. A tensor input that needs a gradient and has no entry is
// refused, as PyTorch's check_no_requires_grad does.
// Names: the forward call's arguments, typed by the schema (`other` of mul.Tensor is a Tensor
// even when the call passes a Python number); `grad` (the incoming gradient, also for an argument
// named grad) and `grads[i]`; `result` (read through detach(detach(...)), once, as PyTorch's
// joint graphs show) and `result<i>` or a result's schema name (the forward's getitem, not
// detached) -- a saved result is read only when the formula uses its value, not for
// `result.sym_sizes()`; `grad_input_mask` (the entry's keys' needs); true, false, M_PI.
// Calls: helpers (add_grad_helper: FunctionsManual's functions, in C++ or as formulas), else aten
// ops by base name (`threshold_backward(grad, result, 0)`), the first overload whose schema takes
// the argument types; `at::` and `_symint` are dropped, and a trailing `_` names the functional
// op (the joint graph is functional). An op given an undefined tensor where its schema wants one
// gives an undefined tensor (derivatives.yaml's `grad.defined() ? ... : Tensor()`). Builtins:
// Tensor() (undefined), not_implemented("what"), derivative_not_implemented(), sqrt of a number,
// and TensorGeometry / to_args_sizes_symint / to_args_scalartypes (their argument).
// Methods are ops on their object (`grad.neg()`), or helpers (`grad.ger(vec)`), except sym_sizes,
// sym_strides, sym_numel (a sym_numel node where it is used, when symbolic), size(d) (an int or a
// sym_size node), dim, scalar_type, options, layout, defined, has_value, value, toDouble, conj
// (real tensors: the value itself), type_as, expand_as, contiguous and reshape (at::reshape's
// view, or clone and _unsafe_view). `x->m()` is `x.m()`.
// Operators follow ATen's C++ operators: Tensor * Tensor is mul.Tensor, Tensor * Scalar and
// Scalar * Tensor mul.Scalar, Scalar - Tensor and Scalar / Tensor `empty_like(t).fill_(s).sub_(t)`
// / `.div_(t)`; comparisons take the .Tensor overload when the right operand is a tensor value,
// else .Scalar; arithmetic, comparisons, !, && and || on numbers fold; `c ? a : b` needs a
// constant condition and evaluates one branch, typed as C++ types it (an int branch is a double
// when the other is). The graph is built as the C++ formula would trace: entries in the order of
// their first key's name, a call's arguments and an operator's operands evaluated right to left
// (as GCC evaluates them), a method's object before its arguments, a braced list `{a, b}` left
// to right.

/// A value a formula computes.
struct FormulaValue {
  enum class Kind : uint8_t {
    kNone,     // None, c10::nullopt, an undefined tensor (Tensor(), a missing grads[i])
    kTensor,   // a node, a Python number given for a Tensor argument, or a saved result
    kScalar,   // a number or a SymInt value (int, float, bool, Scalar)
    kList,     // int[] / SymInt[] / bool[], or the sizes of a tensor (x.sym_sizes())
    kString,   // str
    kDtype,    // ScalarType
    kOptions,  // TensorOptions: dtype, layout, device of `options`
    kTuple,    // Tensor[] arguments, grads, several results
  };
  Kind kind = Kind::kNone;
  Arg arg;  // kTensor, kScalar, kList, kString, kDtype
  // A saved result read only when it is used (a formula that reads only its sizes saves none):
  // its index and the builder that reads it.
  int pending_result = -1;
  GradBuilder* builder = nullptr;
  bool has_sizes = false;  // kList from x.sym_sizes(): `sizes`, symbolic ones read from
  SymIntVector sizes;      // `sizes_of` by sym_size
  Node* sizes_of = nullptr;
  Node* numel_of = nullptr;  // kScalar from x.sym_numel() of symbolic sizes: sym_numel when used
  const TensorMeta* options = nullptr;  // kOptions: the tensor's (in the graph)
  std::vector<FormulaValue> elems;      // kTuple

  static FormulaValue none() { return {}; }
  static FormulaValue tensor(Node* n);
  static FormulaValue tensor_arg(Arg a);
  static FormulaValue scalar(Arg a);
  static FormulaValue list(Arg a);
  static FormulaValue tuple(std::vector<FormulaValue> e);
  bool is_none() const {
    return kind == Kind::kNone || (kind == Kind::kTensor && arg.is_none() && pending_result < 0);
  }
  bool is_tensor() const { return kind == Kind::kTensor && !is_none(); }
  /// The tensor's node (a saved result is read now); throws naming `what` for anything else (a
  /// Python number included).
  Node* node(const char* what = "a tensor") const;
  /// The tensor's metadata (a saved result's without reading it).
  const TensorMeta& meta() const;
  /// The number of a constant kScalar as a double / int64; throws when it is symbolic.
  double to_double() const;
  int64_t to_int() const;
  /// kList as SymInts.
  SymIntVector sym_ints() const;
};

/// The value as an op argument (a saved result read, sizes as ints or sym_size nodes).
Arg formula_arg(GradBuilder& b, const FormulaValue& v);

/// A named helper a formula calls (PyTorch's FunctionsManual.cpp): the builder of the rule being
/// evaluated and the evaluated arguments.
using GradHelper = FormulaValue (*)(GradBuilder& b, std::vector<FormulaValue>& args);

/// Registers `name` for formulas; a second registration of the same name throws.
void add_grad_helper(const std::string& name, GradHelper fn);
/// Registers a helper written as a formula: add_grad_helper("log1p_backward(grad, self)",
/// "grad / (self + 1).conj()"). Its arguments are evaluated as a C++ call's, then the body with
/// the parameters bound to them (they hide every other name).
void add_grad_helper(const std::string& signature, const std::string& body);
/// The helper called `name`, or nullptr.
GradHelper find_grad_helper(const std::string& name);

/// Parses `text` into a rule (throws Error naming the position and cause on a syntax error):
/// `t.def(...).derivative(formula("self: grad * other; other: grad * self"))`.
std::shared_ptr<const DerivativeRule> formula(std::string text);

/// Resolves, once, what the names in the formulas of `table`'s ops refer to (helpers, helpers
/// written as formulas, the aten overloads a call may take), so that evaluating a formula looks
/// nothing up by name. aten_ops() calls it when it builds the registry, with `table` the registry
/// (whose ops the formulas call); a formula of another table is bound when it first runs.
void bind_formulas(const OpTable& table);

/// The names `rule` uses that neither the op's schema, the formula vocabulary, a helper nor an
/// aten op of the registry defines (the registry sweep requires none), as "name (why)".
std::vector<std::string> unresolved_names(const DerivativeRule& rule, const OpDef& op);

}  // namespace aotgrad
