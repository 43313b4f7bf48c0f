// aotgrad: a graph compiled for training -- forward and backward graphs inside libtorch autograd.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aotgrad/driver/driver.h"
#include "aotgrad/ir/graph.h"
#include "aotgrad/runtime/compiler.h"

namespace aotgrad {

struct TrainOptions {
  std::shared_ptr<const Compiler> fw_compiler;  // nullptr: the interpreter
  std::shared_ptr<const Compiler> bw_compiler;  // nullptr: the interpreter
  /// The compile driver's options (driver/compile_options.h): decompositions, partition, and the
  /// on-disk compile cache (unset: the default directory, $AOTGRAD_CACHE_DIR or else the user's
  /// cache directory; AOTGRAD_CACHE_DIR=off: none; "" or "off", none). On a hit the pipeline does
  /// not run and artifacts() has no joint graph, functional graph or explanation.
  CompileOptions pipeline;
  /// PyTorch's config.debug_assert (DebugAssertWrapper, §13.7): every call checks that each input's
  /// requires_grad is the one compiled for. Off, only an input that requires grad but was compiled
  /// without is an error (its gradient would be silently missing).
  bool debug_assert = false;
};

/// A graph compiled for training (§13.6, §13.7): calling it runs the forward graph and returns the
/// user outputs connected to libtorch's autograd through one node whose backward runs the backward
/// graph on the saved tensors, so `loss.backward()` fills `.grad` of the inputs that require grad.
/// Mutated inputs (BatchNorm's running stats, ...) are written back after the forward, as the
/// seed's RuntimeWrapper does.
///
/// As in PyTorch, the forward is the profiler range `CompiledFunction` and the backward is the
/// autograd node `CompiledFunctionBackward` (its grad_fn name and profiler range, §13.46). A custom
/// forward compiler's outputs whose strides differ from the traced ones are copied to the traced
/// strides (FakifiedOutWrapper); one that aliases an input is an error. Double backward: a
/// backward with create_graph returns grads that are differentiable again (the joint graph's
/// gradient part, compiled as a function of the inputs and the incoming gradients on first use;
/// Note [Double backward]); where that cannot be recomputed from the inputs (random ops, effects,
/// inputs written), their own backward raises naming why, as torch.compile raises for all.
class CompiledFunction {
 public:
  CompiledFunction(std::shared_ptr<const Graph> graph, std::vector<bool> requires_grad,
                   TrainOptions options = {});
  ~CompiledFunction();

  /// One tensor per placeholder (an undefined tensor for a None input is not supported). Inputs
  /// that require grad must be the ones given at construction.
  std::vector<at::Tensor> operator()(const std::vector<at::Tensor>& args);

  const TrainingArtifacts& artifacts() const;
  /// Whether the artifacts came from the compile cache (the pipeline did not run).
  bool cache_hit() const;

  struct State;  // shared with the autograd node

 private:
  std::shared_ptr<State> state_;
};

}  // namespace aotgrad
