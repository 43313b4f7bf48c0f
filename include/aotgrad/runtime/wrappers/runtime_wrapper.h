// aotgrad: PyTorch's RuntimeWrapper (§13.7 R3) -- around the compiled call (the autograd Function
// for training, the compiled forward for inference): eager's views of the inputs taken first,
// then the call, then the mutated inputs written back (input_write_back.h) and the outputs that
// alias inputs handed back as eager hands them (aliased_outputs.h).
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <functional>
#include <vector>

#include "aotgrad/runtime/wrappers/aliased_outputs.h"

namespace aotgrad {

class RuntimeWrapper {
 public:
  RuntimeWrapper() = default;
  explicit RuntimeWrapper(OutputAliasing aliasing) : a_(std::move(aliasing)) {}

  /// Inference: `compiled` runs on `inputs` (the caller's `args`, or synthetic bases in place of
  /// the views they regenerate); every write-back is under no_grad.
  std::vector<c10::IValue> inference(const std::vector<c10::IValue>& args,
                                     std::vector<c10::IValue> inputs,
                                     const CompiledFn& compiled) const;

  using TensorCall = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>&)>;
  /// Training: `call` applies the autograd Function to `args` and returns its outputs (the mutated
  /// inputs' new values, then the user outputs). A data write-back runs under autograd where the
  /// caller's graph must see it: grad mode on, a write autograd saw at capture, and the input or
  /// its new value requiring grad (PyTorch's runtime wrapper copies so); else under no_grad.
  std::vector<at::Tensor> training(const std::vector<at::Tensor>& args,
                                   const TensorCall& call) const;

  const OutputAliasing& aliasing() const { return a_; }

 private:
  OutputAliasing a_;
};

}  // namespace aotgrad
