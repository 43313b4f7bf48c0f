// aotgrad: calls ATen ops named by the IR through libtorch's c10 dispatcher (boxed), and converts
// between IR values (Arg, TensorMeta, dtypes) and libtorch values (c10::IValue, at::Tensor).
#pragma once

#include <ATen/core/ivalue.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "aotgrad/ir/dtype.h"
#include "aotgrad/ir/graph.h"
#include "aotgrad/ir/op.h"
#include "aotgrad/ir/tensor_meta.h"

namespace aotgrad {

/// The runtime value of a node an argument refers to: a placeholder's tensor, a getitem's element,
/// a SymInt node's integer. Called once per node reference (list elements included).
using NodeValueFn = std::function<c10::IValue(const Node&)>;

// --- dtype / device / layout / memory format -------------------------------------------------

c10::ScalarType to_c10(ScalarType t);
/// Throws Error for libtorch dtypes aotgrad has no name for (quantized types, ...).
ScalarType from_c10(c10::ScalarType t);
c10::Device to_c10(const Device& d);
/// Throws Error for device types aotgrad does not model.
Device from_c10(const c10::Device& d);
c10::Layout to_c10(Layout l);
c10::MemoryFormat to_c10(MemoryFormat m);

// --- tensors and values --------------------------------------------------------------------------

/// dtype, sizes, strides, storage offset, device and requires_grad of a defined tensor.
TensorMeta tensor_meta_of(const at::Tensor& t);
/// The ValueMeta of a result: a tensor, None (an undefined tensor or None), a SymInt (an int), a
/// SymFloat / SymBool (a double or bool, its Python repr in sym_text), or a tuple (a tuple or a
/// list; a list gets is_list). Throws Error for other kinds of values.
ValueMeta value_meta_of(const c10::IValue& v);

/// Converts the IR argument `arg` for a schema argument of type `type` to a c10::IValue:
/// Python numbers given for a Tensor become wrapped-number 0-dim tensors (as PyTorch's argument
/// parser makes them); a single int for `int[N]` is repeated N times; node references are looked
/// up through `lookup`. Throws Error saying what was expected.
c10::IValue to_ivalue(const TypeRef& type, const Arg& arg, const NodeValueFn& lookup);

// --- ops -----------------------------------------------------------------------------------------

/// An OpDef resolved to a c10::OperatorHandle. Resolution checks that libtorch has the overload and
/// that its schema agrees with the IR's (same leading argument names; libtorch's extra trailing
/// arguments must have defaults, which are passed). Cheap to copy.
class AtenOp {
 public:
  /// Throws Error naming the op when libtorch lacks it or its schema is incompatible.
  explicit AtenOp(const OpDef& op);
  ~AtenOp();
  AtenOp(const AtenOp&);
  AtenOp& operator=(const AtenOp&);

  const OpDef& def() const;
  /// libtorch's schema of the op, as c10 prints it.
  std::string libtorch_schema() const;

  /// Converts `bound_args` (one per schema argument, as a Call node holds them) and calls the op.
  /// Returns one IValue per schema return. A libtorch error is rethrown as Error prefixed with the
  /// op's name (without libtorch's backtrace).
  std::vector<c10::IValue> call(const std::vector<Arg>& bound_args,
                                const NodeValueFn& lookup) const;
  /// Calls with a ready stack (one IValue per IR schema argument; libtorch's extra defaults are
  /// appended). Returns one IValue per schema return.
  std::vector<c10::IValue> call_boxed(std::vector<c10::IValue> stack) const;

  /// Whether libtorch has the op's out= overload: the same arguments, then one keyword-only
  /// `Tensor(a!) out` (`add.out`, `gelu_backward.grad_input`); looked up for pointwise ops only.
  bool has_out_variant() const;
  /// call_boxed through the out= overload, the result written into the tensor at stack[out_arg]
  /// (a pointwise kernel reads each element before it writes it: an argument may be the output).
  /// Returns that tensor. Throws Error when the op has no out= overload.
  std::vector<c10::IValue> call_boxed_out(std::vector<c10::IValue> stack, size_t out_arg) const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

/// The AtenOp of `op`, resolved on first use and cached for the process (thread-safe; the reference
/// stays valid while `op` lives). Throws like AtenOp's constructor, every time it is asked for an
/// op libtorch lacks.
const AtenOp& aten_op(const OpDef& op);

/// torch.ops.higher_order.run_and_save_rng_state on CPU (torch/_prims/rng_prims.py): the default
/// CPU generator's state (a u8 tensor, taken under the generator's mutex as torch.get_rng_state
/// takes it), then `op` called on `stack`. Returns {state, op's results...}.
std::vector<c10::IValue> run_and_save_rng_state(const AtenOp& op, std::vector<c10::IValue> stack);
/// run_with_rng_state on CPU: sets the default CPU generator to `state`, calls `op` on `stack`, and
/// sets the generator back to the state it had before (also when the op throws), each under the
/// generator's mutex. Returns the op's results. Throws Error when `state` is not a state libtorch
/// accepts.
std::vector<c10::IValue> run_with_rng_state(const at::Tensor& state, const AtenOp& op,
                                            std::vector<c10::IValue> stack);

/// eager_backward (ops/registry.h, kEagerBackward): runs `op` on `stack` under libtorch's autograd,
/// the arguments at `needs` as fresh leaves, and returns {the list of their gradients} for the
/// results' gradients `grads` (a Tensor?[] list, one per tensor result); an argument no gradient
/// reaches gets zeros.
std::vector<c10::IValue> eager_backward(const c10::IValue& grads, const std::vector<int64_t>& needs,
                                        const AtenOp& op, std::vector<c10::IValue> stack);

/// Calls a Call node's op on its arguments: aten_op(*node.op()).call(node.args(), lookup); a
/// higher-order op (run_and_save_rng_state, run_with_rng_state) runs its wrapped op as above, its
/// result a tuple (state, result) or the wrapped op's results. Errors are prefixed with the node's
/// description.
std::vector<c10::IValue> call_node(const Node& node, const NodeValueFn& lookup);

}  // namespace aotgrad
