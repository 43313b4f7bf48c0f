// aotgrad: the aliased-output epilogue of PyTorch's RuntimeWrapper (§13.7 R3): outputs that are
// inputs, or views of inputs, handed back as the caller's tensors or eager's views of them.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <vector>

#include "aotgrad/runtime/compiler.h"
#include "aotgrad/runtime/wrappers/input_write_back.h"
#include "aotgrad/transforms/functionalize.h"

namespace aotgrad {

/// What the epilogue knows of a compiled graph's outputs from compile time.
struct OutputAliasing {
  ViewAndMutationMeta meta;
  /// Per user output: the argument of the captured graph it is the very tensor of, or -1.
  std::vector<int> output_is_arg;
  /// Training: per forward output (mutated inputs' values, then user outputs), whether eagerly it
  /// is a leaf of its own that requires grad (JointGraph::leaf_output).
  std::vector<bool> leaf_output;
  /// FunctionalizeResult::input_views compiled (null when it returns nothing).
  CompiledFn input_views;
};

/// Inference: the user outputs of `outs` (the graph's outputs, mutated inputs' values first),
/// after the write-back. `args` are the caller's arguments (output_is_arg's), `inputs` the graph's
/// (the arguments, or synthetic bases in place of the views they regenerate).
std::vector<c10::IValue> inference_outputs(const OutputAliasing& a,
                                           const std::vector<c10::IValue>& args,
                                           const std::vector<c10::IValue>& inputs,
                                           std::vector<c10::IValue> outs,
                                           const InputsBefore& before);

/// Training: the user outputs of `outs` (the autograd Function's outputs) for the arguments
/// `args`, after the write-back under `grad_mode`. An output through which no gradient flows is
/// the caller's tensor or eager's view of it; else the graph's value, with its grad_fn, or a view
/// of the caller's tensor replayed under grad mode and given the value's history.
std::vector<at::Tensor> training_outputs(const OutputAliasing& a,
                                         const std::vector<at::Tensor>& args,
                                         const std::vector<at::Tensor>& outs,
                                         const InputsBefore& before, bool grad_mode);

}  // namespace aotgrad
