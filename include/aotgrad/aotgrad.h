// aotgrad: the user API -- aot_function compiles a libtorch C++ function on first call with each
// input signature and caches the result (PyTorch's functorch.compile.aot_function).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aotgrad/driver/driver.h"
#include "aotgrad/frontend/capture.h"
#include "aotgrad/frontend/checkpoint.h"
#include "aotgrad/frontend/cond.h"
#include "aotgrad/ir/graph.h"
#include "aotgrad/runtime/compiler.h"
#include "aotgrad/transforms/distributed/data_parallel.h"
#include "aotgrad/transforms/partition/knapsack.h"
#include "aotgrad/transforms/passes/decompose.h"

namespace torch::nn {
class Module;
}  // namespace torch::nn

namespace aotgrad {

/// Data-parallel training: none, PyTorch's DistributedDataParallel (kReplicated: every rank holds
/// the whole model and trains on its slice of the batch; the gradients are averaged), or FSDP2's
/// fully_shard (kSharded: every rank holds one row block of each parameter, which the forward
/// gathers whole and the backward reduce-scatters the gradient to, averaged; Note [Sharded
/// parameters]).
enum class DataParallelMode { kNone, kReplicated, kSharded };

/// How aot_function compiles (functorch.compile's arguments and torch._functorch.config).
/// torch.compile(dynamic=...): whether compilations make sizes symbolic (§13.15).
enum class DynamicMode {
  kOff,   // every size is static: a call with new sizes compiles again
  kAuto,  // static first; a call whose sizes differ from a compiled call's compiles again with
          // the dimensions that changed as symbols (PyTorch's automatic_dynamic_shapes)
  kOn,    // every dimension of the non-parameter inputs is a symbol from the first call (sizes
          // 0 and 1, and those the function needs static, stay static)
};

struct AOTConfig : CompileOptions {
  // The compile driver's options are the CompileOptions this config is (driver/compile_options.h):
  // partition and partition_fn (min_cut_rematerialization_partition, the default, or
  // default_partition; or a function of the user's, functorch.compile's partition_fn, which
  // replaces them when set), decompositions (applied after functionalization, §13.10; composite
  // ops always decompose first), keep_inference_input_mutations (§13.13), min_cut (the min-cut
  // partitioner's switches as functorch's config, with the activation memory budget in [0, 1] and
  // its knapsack solver; its static_lifetime_inputs come from num_params_buffers), schedule (the
  // order of a training compilation's forward and backward graphs) and cache_dir (the on-disk
  // compile cache: unset, $AOTGRAD_CACHE_DIR or else the user's cache directory; "" or "off",
  // none; else that directory). What follows is the front end's own.
  /// The leading arguments that outlive the step (a module's parameters and buffers, which
  /// aot_module sets): with min_cut.treat_parameters_as_free_to_save they cost nothing to save.
  size_t num_params_buffers = 0;
  /// Backends (nullptr: the interpreter): forward and backward graphs of training compilations,
  /// and the graph of inference compilations.
  std::shared_ptr<const Compiler> fw_compiler;
  std::shared_ptr<const Compiler> bw_compiler;
  std::shared_ptr<const Compiler> inference_compiler;
  /// Placeholder names of the captured graph, one per input (empty: arg0_1, arg1_1, ...).
  std::vector<std::string> input_names;
  /// PyTorch's config.debug_assert: every training call checks each input's requires_grad
  /// against the compiled one (TrainOptions::debug_assert).
  bool debug_assert = false;

  /// Data-parallel training (DistributedDataParallel, Note [Gradient buckets]): with kReplicated,
  /// a training compilation's backward graph all-reduces the parameters' gradients over
  /// `process_group` ("": the world group '0') in buckets of `bucket_cap_bytes` (the first
  /// `first_bucket_cap_bytes`), each issued once its last gradient is computed and waited at the
  /// end of the backward, averaged as `grad_reduction` says; every compilation checks that every
  /// rank compiled the same graphs, partition and buckets (an Error on every rank naming what
  /// differs), and the first one broadcasts the parameters from rank 0 (aot_module: its buffers
  /// too). The parameters are the inputs `data_parallel_params` marks (one flag per input;
  /// empty: every input that requires grad; aot_module: the module's parameters).
  ///
  /// With kSharded, the parameters are shards (frontend/sharding.h): aot_module splits its
  /// module's parameters in place when it is made (after broadcasting them from rank 0), and its
  /// traced forward gathers each whole (gather_full_parameter); an aot_function's function gathers
  /// the inputs `data_parallel_params` marks itself. Their gradients are the reduce-scatters of the
  /// gathers' gradients, averaged over the ranks as `grad_reduction` says (no buckets). The
  /// compile check runs as for kReplicated.
  DataParallelMode data_parallel = DataParallelMode::kNone;
  /// kSharded: FSDP2's reshard_after_forward -- the backward gathers each parameter again (true,
  /// the default), or the forward saves the gathered parameter for it (false), at any activation
  /// memory budget; std::nullopt: the partitioner decides for each parameter under
  /// `activation_memory_budget`, keeping a gathered parameter (its bytes) or gathering it again
  /// (communication, priced by the cost model) -- at budget 1 it keeps every one (Note [Re-gather
  /// or keep]).
  std::optional<bool> reshard_after_forward = true;
  std::string process_group;
  GradReduction grad_reduction = GradReduction::kSumDivided;
  int64_t bucket_cap_bytes = 25 << 20;
  int64_t first_bucket_cap_bytes = 1 << 20;
  std::vector<bool> data_parallel_params;
  /// DistributedDataParallel's broadcast_buffers (aot_module, data parallel): every call starts
  /// from rank 0's buffers (BatchNorm's running statistics), broadcast before the forward; false:
  /// only when the module is first compiled, after which each rank keeps its own.
  bool broadcast_buffers = true;

  /// Dynamic shapes (§13.15): compilations whose input sizes are symbols s0, s1, ... serve every
  /// call whose sizes fit (binding each symbol from the inputs) and whose guards hold.
  DynamicMode dynamic = DynamicMode::kAuto;
  /// torch._dynamo.mark_dynamic: per argument (aot_module: per input of the module's forward),
  /// the dimensions compiled as symbols from the first call, unless `dynamic` is kOff. A marked
  /// dimension the function needs static is an Error.
  std::map<size_t, std::vector<int64_t>> dynamic_dims;
};

/// The input signature a compilation is keyed by: per input its dtype, device, sizes, strides and
/// requires_grad, which inputs are the same tensor or share a storage (with their storage offsets),
/// and whether the call trains (grad mode on and an input requires grad); "None" for an undefined
/// argument. Text, for messages.
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
  /// Arguments that are overlapping views written by the function get a synthetic base (§13.23).
  /// An undefined argument is None, as in PyTorch: the function is called with it undefined, the
  /// compilation is a specialization without it (a later call with a tensor there compiles
  /// another), and it gets no gradient. Throws Error for what capture or compilation cannot
  /// handle.
  std::vector<at::Tensor> operator()(const std::vector<at::Tensor>& args) const;

  /// How many signatures have been compiled. With AOTGRAD_LOGS=recompiles each compilation after
  /// the first logs how its signature differs from the last one compiled (TORCH_LOGS=recompiles).
  size_t num_compilations() const;
  /// Whether the compilation of `args`' signature trains (CompiledFunction) or not: an inference
  /// call, or a training call downgraded to inference because no output requires grad and no
  /// input that requires grad is mutated (§13.11; run under no_grad). nullopt: not compiled.
  std::optional<bool> trains(const std::vector<at::Tensor>& args) const;
  /// The captured graph of `args`' signature, or nullptr when it has not been compiled.
  std::shared_ptr<const Graph> captured_graph(const std::vector<at::Tensor>& args) const;
  /// The guards of the compilation that serves `args` (dynamic: "2 <= s0", a dimension sharing a
  /// symbol; static: none), or nullopt when none serves them.
  std::optional<std::vector<std::string>> guards(const std::vector<at::Tensor>& args) const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

/// aot_function(fn, cfg): see AOTFunction.
AOTFunction aot_function(TensorFunction fn, AOTConfig config = {});

/// The tensors aot_module lifts to graph inputs: the module's parameters, then its buffers, by
/// dotted name in registration order, each tensor once (PyTorch's named_parameters and
/// named_buffers), undefined ones left out. Placeholder names are `p_` + the dotted name with dots
/// as underscores (`p_fc1_weight`, `p_bn_running_mean`), as tools/export.py names them.
struct ModuleState {
  std::vector<std::string> names;   // dotted names
  std::vector<at::Tensor> tensors;  // the module's own tensors
  size_t num_parameters = 0;        // the first ones are parameters
};
ModuleState module_state(const torch::nn::Module& module);

/// A compiled libtorch module (PyTorch's functorch.compile.aot_module). `forward(inputs)` calls the
/// module, e.g. `[m](const auto& in) { return std::vector<at::Tensor>{m->forward(in[0])}; }`. The
/// module's parameters and buffers (module_state) become graph inputs in front of the call's
/// inputs: the graph is captured with functional_call, so the module itself is never written during
/// capture. Compilations are cached per input signature, over the module's tensors too, and per
/// module->is_training(). Calls run the compiled graph on the module's current tensors: buffer
/// mutations (BatchNorm's running stats and num_batches_tracked) land in the module's buffers, and
/// backward accumulates into the parameters' .grad, as eagerly. AOTConfig::input_names, when given,
/// names the call's inputs.
///
/// Sharded (AOTConfig::data_parallel kSharded, FSDP2's fully_shard): making it broadcasts the
/// module's parameters and buffers from rank 0, then replaces each parameter's data by this rank's
/// row block (shard_of), so the parameters, their .grad and an optimizer's state made over
/// module->parameters() take 1/N of the memory. Every rank must make it.
class AOTModule {
 public:
  AOTModule(std::shared_ptr<torch::nn::Module> module, TensorFunction forward, AOTConfig config);

  /// The module's parameters, whole, by dotted name: sharded, gathered from every rank (a
  /// collective: every rank must call it); otherwise the parameters themselves. Outside autograd.
  std::vector<std::pair<std::string, at::Tensor>> full_parameters() const;

  std::vector<at::Tensor> operator()(const std::vector<at::Tensor>& inputs) const;

  size_t num_compilations() const;
  /// The captured graph (module tensors then inputs) of this call's signature, or nullptr.
  std::shared_ptr<const Graph> captured_graph(const std::vector<at::Tensor>& inputs) const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

/// aot_module(module, forward, cfg): see AOTModule.
AOTModule aot_module(std::shared_ptr<torch::nn::Module> module, TensorFunction forward,
                     AOTConfig config = {});

/// What aot_export returns: the graphs, not compiled (the seed's export path, §13.11).
struct ExportedGraphs {
  /// As captured: in-place ops and views as written.
  std::shared_ptr<const Graph> captured;
  /// trace_joint false: the functionalized forward, decomposed with AOTConfig::decompositions; its
  /// outputs are the new values of mutated inputs (meta.mutated_inputs_returned), then the user
  /// outputs. trace_joint true: the functionalized forward the joint graph was built from.
  std::shared_ptr<const Graph> forward;
  ViewAndMutationMeta meta;
  /// trace_joint true: the joint graph and its partition into forward and backward graphs.
  std::shared_ptr<const Graph> joint, fw, bw;
  std::vector<std::string> saved;  // names of the values fw saves for bw
  /// Placeholder names: lifted parameters, lifted buffers (aot_export_module), user inputs, and
  /// the tensor constants the function reads (`_tensor_constant0`, ..., after the inputs; PyTorch's
  /// GraphSignature.lifted_tensor_constants), whose values are `tensor_constant_values`.
  std::vector<std::string> parameters, buffers, user_inputs, tensor_constants;
  std::vector<at::Tensor> tensor_constant_values;
  /// Per mutated input the graph returns (meta.mutated_inputs_returned): its placeholder name,
  /// as PyTorch's GraphSignature.buffers_to_mutate / user_inputs_to_mutate.
  std::vector<std::string> inputs_to_mutate;
  /// Effect tokens (Note [Effect tokens]): the names of the tokens the forward takes first and of
  /// the final tokens it returns first, as PyTorch's GraphSignature.input_tokens / output_tokens.
  std::vector<std::string> input_tokens, output_tokens;
};

/// Captures `fn` on fake tensors standing for `args` (never read or written) and runs the pipeline
/// without compiling. With `trace_joint`, the arguments that require grad are differentiated (at
/// least one must) and the joint graph is partitioned as AOTConfig says; else the forward is
/// functionalized and decomposed only (AOTConfig::keep_inference_input_mutations keeps input
/// mutations in it).
ExportedGraphs aot_export(const TensorFunction& fn, const std::vector<at::Tensor>& args,
                          bool trace_joint, const AOTConfig& config = {});
/// aot_export_module (PyTorch's torch._functorch.aot_autograd.aot_export_module): as aot_export,
/// with the module's tensors lifted as aot_module lifts them; with `trace_joint`, its parameters
/// that require grad are differentiated.
ExportedGraphs aot_export_module(torch::nn::Module& module, const TensorFunction& forward,
                                 const std::vector<at::Tensor>& inputs, bool trace_joint,
                                 const AOTConfig& config = {});

}  // namespace aotgrad
