// aotgrad: the §13.7 wrapper stack, composed here for training and for inference. Outermost
// first, in the seed's order (graph_compile.py's assembly):
//
//   R1 AOTDedupeWrapper          dedupe.h (a function of tensors); plan_aliasing (a graph)
//   R2 AOTSyntheticBaseWrapper   synthetic_base.h
//      DebugAssertWrapper        debug_assert.h: training, config.debug_assert
//   R3 RuntimeWrapper            runtime_wrapper.h: input_write_back.h, aliased_outputs.h
//   R4 AOTDispatchAutograd       runtime/compiled_function.h: training only
//   R5 FakifiedOutWrapper        fakified_out.h: a compiler other than the interpreter
//   R6 FunctionalizedRngRuntimeWrapper: none. PyTorch's applies only with functionalize_rng_ops
//      (CUDA's philox seed and offset as graph inputs); aotgrad carries the generator state as a
//      value of the graph (run_and_save_rng_state / run_with_rng_state, rng_functionalize), so
//      no wrapper passes it in or out.
//   R7 AOTDispatchSubclassWrapper: none. C++ has no traceable tensor subclasses.
//   R8 EffectTokensWrapper       effect_tokens.h
//
// R5-R8 wrap the compiled forward (compile_forward below); the backward graph is compiled as it
// is. R1-R2 make the compiled graph's inputs from a call's arguments (ArgumentWrappers for
// aot_function; CompiledGraph's specializations for a graph). The choice between the two stacks
// (§13.11) is the driver's (choose_compile_kind, driver/driver.h).
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <vector>

#include "aotgrad/ir/graph.h"
#include "aotgrad/runtime/compiler.h"
#include "aotgrad/runtime/wrappers/dedupe.h"
#include "aotgrad/runtime/wrappers/synthetic_base.h"
#include "aotgrad/transforms/functionalize.h"

namespace aotgrad {

/// R5-R8 around the forward graph `fw` (or inference graph) that `compiler` compiles: effect
/// tokens innermost, then the traced strides for a compiler other than the interpreter.
/// `meta` is the functionalization's (its mutated inputs and user outputs).
CompiledFn compile_forward(const Compiler& compiler, std::shared_ptr<const Graph> fw,
                           const ViewAndMutationMeta& meta);

/// The functionalization's input_views graph (eager's views of the inputs, replayed on the
/// caller's tensors) compiled for the RuntimeWrapper's OutputAliasing: null when it returns
/// nothing.
CompiledFn compile_input_views(std::shared_ptr<const Graph> input_views);

/// R1-R2 of aot_function: the compiled graph's inputs from a call's arguments -- the distinct
/// arguments, then the lifted constants -- with synthetic bases in the place of the views they
/// regenerate.
struct ArgumentWrappers {
  DedupedArgs dedupe;
  /// Over the distinct arguments then the constants (empty: none).
  SyntheticBaseInputs synthetic_bases;

  /// The distinct arguments, then `constants`.
  std::vector<at::Tensor> distinct(const std::vector<at::Tensor>& args,
                                   const std::vector<at::Tensor>& constants) const;
  /// Per tensor of distinct() (`n` of them), the caller's argument position it came from, or -1
  /// for a constant: what errors about synthetic bases name.
  std::vector<int> positions(size_t n) const;
  /// The compiled graph's inputs for a call.
  std::vector<at::Tensor> inputs(const std::vector<at::Tensor>& args,
                                 const std::vector<at::Tensor>& constants) const;
};

}  // namespace aotgrad
