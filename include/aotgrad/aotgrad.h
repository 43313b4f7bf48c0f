// aotgrad: the user API -- aot_function compiles a libtorch C++ function on first call with each
// input signature and caches the result (PyTorch's functorch.compile.aot_function).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aotgrad/frontend/capture.h"
#include "aotgrad/ir/graph.h"
#include "aotgrad/runtime/compiler.h"
#include "aotgrad/transforms/aot_pipeline.h"
#include "aotgrad/transforms/decompose.h"
#include "aotgrad/transforms/knapsack.h"

namespace aotgrad {

/// How aot_function compiles (functorch.compile's arguments and torch._functorch.config).
struct AOTConfig {
  /// min_cut_rematerialization_partition (the default) or default_partition.
  PartitionKind partition = PartitionKind::kMinCut;
  /// Applied after functionalization (§13.10); composite ops always decompose first.
  DecompositionTable decompositions = DecompositionTable::core();
  /// Inference: input data mutations stay in the graph as a trailing copy_ (§13.13).
  bool keep_inference_input_mutations = false;
  /// The min-cut partitioner's activation memory budget in [0, 1] and its knapsack solver.
  double activation_memory_budget = 1.0;
  KnapsackSolver solver = KnapsackSolver::kDp;
  /// Backends (nullptr: the interpreter): forward and backward graphs of training compilations,
  /// and the graph of inference compilations.
  std::shared_ptr<const Compiler> fw_compiler;
  std::shared_ptr<const Compiler> bw_compiler;
  std::shared_ptr<const Compiler> inference_compiler;
  /// Placeholder names of the captured graph, one per input (empty: arg0_1, arg1_1, ...).
  std::vector<std::string> input_names;
  /// The on-disk compile cache (TrainOptions::cache_dir): unset, $AOTGRAD_CACHE_DIR or else the
  /// user's cache directory ($XDG_CACHE_HOME/aotgrad, ~/.cache/aotgrad); "" or "off", none; else
  /// that directory.
  std::optional<std::string> cache_dir;
};

/// The input signature a compilation is keyed by: per input its dtype, device, sizes, strides and
/// requires_grad, which inputs are the same tensor or share a storage (with their storage offsets),
/// and whether the call trains (grad mode on and an input requires grad). Text, for messages.
std::string input_signature(const std::vector<at::Tensor>& args);

/// A compiled C++ function. On a call with a signature it has not seen, it captures `fn` on copies
/// of the arguments (capture.h), then compiles the graph: for training with CompiledFunction
/// (forward and backward graphs inside libtorch autograd), else with CompiledGraph; later calls
/// with that signature run the cached compilation. Arguments that are the same tensor are passed
/// to the graph once (as PyTorch's dedupe wrapper). Copies share the cache. Calls may come from
/// several threads.
class AOTFunction {
 public:
  AOTFunction(TensorFunction fn, AOTConfig config);

  /// Runs the compiled function; mutated arguments hold their new values afterwards, as eagerly.
  /// Throws Error for undefined arguments, for training with distinct arguments that share a
  /// storage, and for what capture or compilation cannot handle.
  std::vector<at::Tensor> operator()(const std::vector<at::Tensor>& args) const;

  /// How many signatures have been compiled.
  size_t num_compilations() const;
  /// The captured graph of `args`' signature, or nullptr when it has not been compiled.
  std::shared_ptr<const Graph> captured_graph(const std::vector<at::Tensor>& args) const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

/// aot_function(fn, cfg): see AOTFunction.
AOTFunction aot_function(TensorFunction fn, AOTConfig config = {});

}  // namespace aotgrad
