// aotgrad: the compile driver -- the inference, training and export pipelines as named stages on
// a PassPipeline, run with one CompileOptions. Every front end (the command line, CompiledGraph,
// CompiledFunction, aot_function / aot_module, aot_export) compiles through these functions. Std
// only: the runtime compiles and runs what they return.
//
// The pipelines, by stage name (a later stage joins them through CompileOptions::extra_stages, or
// PassPipeline::insert_after on a pipeline built here):
//   inference: decompose_composites, functionalize (inputs named arg<i>_1), decompose
//   training:  decompose_composites, functionalize, joint, decompose, partition
//   export:    decompose_composites, functionalize, decompose; with the joint graph as training
// What differs between them is deliberate: inference graphs name their inputs as PyTorch's
// inference graphs do, training and export keep the caller's names (the primals, the export
// signature); composite ops decompose first everywhere; the verifier checks the graphs later
// stages rewrite structurally and the graphs a compilation returns fully (metadata re-inferred);
// inference and training are cached, exports are not.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "aotgrad/driver/compile_options.h"
#include "aotgrad/driver/pass_pipeline.h"
#include "aotgrad/ir/graph.h"
#include "aotgrad/support/timer.h"
#include "aotgrad/transforms/partition/partition.h"

namespace aotgrad {

/// The artifacts of an inference compilation: the functional graph the backend receives, its
/// metadata and its input views graph (FunctionalizeResult).
struct InferenceArtifacts {
  std::shared_ptr<const Graph> fw;
  ViewAndMutationMeta meta;
  std::shared_ptr<const Graph> input_views;
  /// The wall-clock and CPU time of each stage, in order (one "cache_load" on a cache hit, after
  /// decompose_composites).
  std::vector<StageTime> stages;
  bool cache_hit = false;
};

/// The artifacts of a training compilation, for the runtime and for inspection (`aotgrad compile
/// --dump`). A cache hit has no functional graph, joint graph (nor joint_info.graph) or
/// explanation.
struct TrainingArtifacts {
  std::shared_ptr<const Graph> functional;  // the functionalized forward graph
  ViewAndMutationMeta meta;
  std::shared_ptr<const Graph> input_views;  // FunctionalizeResult::input_views
  std::shared_ptr<const Graph> joint;        // after decomposition
  JointGraph joint_info;                     // (graph moved into `joint`)
  std::shared_ptr<const Graph> fw, bw;
  std::vector<std::string> saved;  // names of saved values, fw output order
  size_t num_forward_outputs = 0;  // effect tokens + mutated-input values + user outputs
  /// Why the min-cut partition saved and recomputed what it did; null for the default partition.
  std::shared_ptr<const MinCutExplain> explain;
  /// Each stage's wall-clock and process CPU time, in order: decompose_composites,
  /// functionalize, joint, decompose, partition (or decompose_composites, cache_load).
  std::vector<StageTime> stages;
  bool cache_hit = false;
};

/// The artifacts of an export (the seed's export path, §13.11): the functionalized forward
/// (decomposed, without the joint graph), its metadata, and with the joint graph the joint graph
/// and its partition.
struct ExportArtifacts {
  std::shared_ptr<const Graph> forward;
  ViewAndMutationMeta meta;
  std::shared_ptr<const Graph> input_views;
  std::shared_ptr<const Graph> joint, fw, bw;
  std::vector<std::string> saved;
  size_t num_forward_outputs = 0;
  std::vector<StageTime> stages;
};

/// The standard pipelines, configured by `options` (verification, logs, cache, extra stages), for
/// a caller that runs them itself or inserts stages of its own.
PassPipeline inference_pipeline(const CompileOptions& options);
PassPipeline training_pipeline(const CompileOptions& options);
PassPipeline export_pipeline(const CompileOptions& options, bool trace_joint);

/// A compilation of kind `kind` of a copy of `graph`, before any stage has run.
CompileState begin_compilation(CompileKind kind, const Graph& graph,
                               std::vector<bool> requires_grad = {});

/// §13.11, decided here for every front end: a graph whose inputs require grad as
/// `requires_grad` says (per placeholder; none when grad mode is off) compiles for training when it
/// needs autograd -- an output requires grad, a grad-requiring input is written, or an input is
/// written with a value that requires grad (needs_autograd) -- and for inference otherwise.
CompileKind choose_compile_kind(const Graph& graph, const std::vector<bool>& requires_grad);

/// Compiles `graph` for inference. The graph is logged on AOTGRAD_LOGS=aot_graphs ("Forward
/// graph N") when compiled. Throws Error naming the node for what a stage cannot handle.
InferenceArtifacts compile_for_inference(const Graph& graph, const CompileOptions& options = {});

/// Compiles `graph` for training the placeholders marked in `requires_grad`. Logs the joint graph
/// (aot_joint_graph), the forward and backward graphs (aot_graphs) and the partitioner's decisions
/// (partitioner). Throws Error naming the node for what a stage cannot handle.
TrainingArtifacts compile_for_training(const Graph& graph, const std::vector<bool>& requires_grad,
                                       const CompileOptions& options = {});

/// Exports `graph`: with `requires_grad` non-empty the joint graph over those placeholders and its
/// partition, else the functionalized forward (CompileOptions::keep_inference_input_mutations
/// keeps input mutations in it). Never cached.
ExportArtifacts compile_for_export(const Graph& graph, const std::vector<bool>& requires_grad,
                                   const CompileOptions& options = {});

/// The cache keys the pipelines use for `graph` (after decompose_composites), for tools and tests.
std::string inference_cache_key(const Graph& graph, const CompileOptions& options,
                                std::string_view version);
std::string training_cache_key(const Graph& graph, const std::vector<bool>& requires_grad,
                               const CompileOptions& options, std::string_view version);

/// What the saved values of a training compilation cost: the explanation's figures when the
/// min-cut gave one, else summarize_saved over the forward graph
/// (transforms/partition/partition.h).
SavedSummary saved_summary(const TrainingArtifacts& a);

}  // namespace aotgrad
