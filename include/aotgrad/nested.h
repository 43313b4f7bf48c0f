// aotgrad: aot_function over nested inputs and outputs (lists, tuples, dicts, constants, None).
#pragma once

#include <ATen/core/ivalue.h>

#include <functional>
#include <memory>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "aotgrad/frontend/pytree.h"

namespace aotgrad {

/// A C++ function of nested values: each argument and the result may be a tensor, a list, tuple or
/// string-keyed dict of them (nested), None (or an undefined tensor), or a constant (int, float,
/// bool, string, int list).
using NestedFunction = std::function<c10::IValue(const std::vector<c10::IValue>&)>;

/// aot_function for nested values, as PyTorch's aot_function takes pytrees (§13.22: flat_args and
/// the input/output specs). A call flattens its arguments into tensors and a structure
/// (frontend/pytree.h); each structure -- the containers, dict keys, None positions and constant
/// values, which the captured graph bakes in as PyTorch specializes on them -- has its own flat
/// AOTFunction (which keys on the tensors' signature as usual), whose function rebuilds the
/// arguments, calls `fn`, and flattens the result; the result is rebuilt around the compiled
/// outputs. `fn` must return the same structure every time it is captured for one input structure.
class AOTNestedFunction {
 public:
  AOTNestedFunction(NestedFunction fn, AOTConfig config);

  c10::IValue operator()(const std::vector<c10::IValue>& args) const;

  /// Compilations over every input structure.
  size_t num_compilations() const;
  /// How many input structures have been seen.
  size_t num_structures() const;
  /// The flat function compiled for `args`' structure (nullptr: not called with it yet), e.g. for
  /// its captured_graph of the flattened tensors.
  const AOTFunction* flat_function(const std::vector<c10::IValue>& args) const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

/// aot_function(fn, cfg) for nested values: see AOTNestedFunction.
AOTNestedFunction aot_function(NestedFunction fn, AOTConfig config = {});

}  // namespace aotgrad
