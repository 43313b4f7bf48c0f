// aotgrad: captures a libtorch C++ function as an aotgrad Graph of ATen ops (the front end of
// aot_function), by running it on fake tensors below autograd.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aotgrad/ir/graph.h"
#include "aotgrad/providers/sym_node.h"
#include "aotgrad/transforms/symbolize.h"

namespace aotgrad {

/// A C++ function of tensors, as aot_function takes it.
using TensorFunction = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>&)>;

struct CaptureOptions {
  /// Placeholder names, one per input; empty: PyTorch's aot_function names (arg0_1, arg1_1, ...).
  std::vector<std::string> input_names;
  /// Receives the values of the tensor constants the function reads (tensors it makes itself, such
  /// as `torch::tensor({0, 2})` or a mask, or captures from outside), which become placeholders
  /// `_tensor_constant0`, ... after the inputs, marked NodeInfo::lifted_constant (make_fx's
  /// get_attr constants, lifted to inputs as AOTAutograd lifts them). Null: such a read is an
  /// Error naming the op.
  std::vector<at::Tensor>* lifted_constants = nullptr;
  /// A symbolic trace (dynamic_capture.h): the placeholders' metadata, one per input, in place of
  /// the inputs' own -- sizes and strides over the symbols of `symbol_sources`, whose hints are the
  /// sizes the function runs at. The fakes then have libtorch SymInt sizes and the trace is one
  /// run for every size. Empty: the inputs' own metadata.
  std::vector<TensorMeta> input_metas;
  std::vector<SymbolSource> symbol_sources;
  /// Receives the guards a symbolic trace took: decisions about its sizes that the symbols' range
  /// (2 and up) does not settle, made by their hints (providers/sym_node.h's ScopedShapeGuards).
  std::vector<ShapeGuard>* shape_guards = nullptr;
};

/// The dtype libtorch's CPU autocast casts to on this thread, or nullopt when it is off. A capture
/// under autocast records its casts, so the state belongs to a compilation's key.
std::optional<c10::ScalarType> cpu_autocast_dtype();

/// Runs `fn` once on fake tensors (providers/fake_tensor.h) standing for `example_inputs` and
/// records the ops libtorch runs on them, below autograd, as make_fx does: one placeholder per
/// input (its dtype, sizes, strides, device and requires_grad), a call per ATen op that reached the
/// fakes -- CompositeImplicitAutograd ops arrive decomposed (`linear` as `t` and `addmm`,
/// `x.to(dtype)` as
/// `_to_copy`); in-place ops and views are recorded as written, for functionalization --, getitems
/// for multi-result ops and Tensor[] results, and the function's results as the output tuple.
/// Every op libtorch has can be recorded (ops the registry does not declare come from libtorch's
/// dispatcher, dispatcher_ops.h). No real computation runs and the inputs are not read or copied,
/// so parameters may be on the meta device (§13.21). The function runs under the caller's grad
/// mode, with autograd working on the fakes, so composite kernels see the requires_grad they see
/// in eager mode.
///
/// Throws Error naming the op for what cannot be recorded: an op whose result depends on tensor
/// data (`item()`, `nonzero`), an explicit generator, a tensor the function reads that is not an
/// input (without `lifted_constants`).
std::unique_ptr<Graph> capture(const TensorFunction& fn,
                               const std::vector<at::Tensor>& example_inputs,
                               const CaptureOptions& options = {});

/// torch.func.functional_call for libtorch: `fn` with the tensors of `state` (a module's parameters
/// and buffers) replaced by the leading arguments. The returned function, called with
/// (one replacement per state tensor..., inputs...), points each state tensor at its replacement's
/// data -- and, under capture, at the replacement's traced value, so the module's tensors become
/// graph inputs -- calls `fn(inputs)`, and points the state tensors back, also when `fn` throws.
/// Writes `fn` makes to a state tensor land on its replacement. Replacements must match the state
/// tensors' dtype and device.
TensorFunction functional_call(std::vector<at::Tensor> state, TensorFunction fn);

/// Copies of `inputs` with the same dtype, sizes, strides, storage offsets and requires_grad, that
/// alias each other as `inputs` do: the same tensor twice is one copy, and inputs sharing a storage
/// become views of one copied storage. The copies are leaves, detached from autograd.
std::vector<at::Tensor> copy_example_inputs(const std::vector<at::Tensor>& inputs);

}  // namespace aotgrad
