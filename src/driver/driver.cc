// aotgrad: the compile driver -- the standard pipelines and the compile functions.
#include "aotgrad/driver/driver.h"

#include "aotgrad/driver/cache_key.h"
#include "aotgrad/driver/cache_store.h"
#include "aotgrad/driver/stages.h"
#include "aotgrad/ir/error.h"
#include "aotgrad/support/version.h"
#include "aotgrad/transforms/requires_grad.h"

namespace aotgrad {
namespace {

// Verification, cache and error settings every standard pipeline shares, for a compilation by
// `kind`; only inference and training are cached.
PassPipelineOptions driver_options(const CompileOptions& o, PipelineKind kind) {
  PassPipelineOptions p;
  p.verify = o.verify;
  p.intermediate = VerifyLevel::kStructure;
  p.errors_name_the_stage = false;
  if (kind != PipelineKind::kExport) {
    p.cache_dir = resolve_compile_cache_dir(o.cache_dir);
    p.read_cache = o.read_cache;
    p.version = version();
    p.options_key = compile_options_key(o, kind);
  }
  return p;
}

template <typename Artifacts>
void take_times(Artifacts& a, const PassPipeline& p) {
  a.stages = p.stage_times();
}

// Adds the options' extra stages for `kind` to a standard pipeline.
PassPipeline with_extra_stages(PassPipeline p, const CompileOptions& o, PipelineKind kind) {
  for (const StageInsertion& e : o.extra_stages) {
    if (e.pipeline != kind) continue;
    AOTGRAD_CHECK(e.make != nullptr, "CompileOptions::extra_stages: a stage without a maker");
    if (e.before)
      p.insert_before(e.anchor, e.make());
    else
      p.insert_after(e.anchor, e.make());
  }
  return p;
}

}  // namespace

const char* partition_kind_name(PartitionKind kind) {
  return kind == PartitionKind::kMinCut ? "min_cut" : "default";
}

PassPipeline inference_pipeline(const CompileOptions& options) {
  PassPipelineOptions p = driver_options(options, PipelineKind::kInference);
  p.results = {GraphSlot::kGraph};
  p.graph_logs = {{GraphSlot::kGraph, &LogSettings::graphs, "Forward graph"}};
  PassPipeline pipeline(std::move(p));
  pipeline.add(decompose_composites_stage())
      .add(functionalize_stage(options.keep_inference_input_mutations,
                               /*positional_input_names=*/true))
      .add(decompose_stage(options.decompositions));
  return with_extra_stages(std::move(pipeline), options, PipelineKind::kInference);
}

PassPipeline training_pipeline(const CompileOptions& options) {
  PassPipelineOptions p = driver_options(options, PipelineKind::kTraining);
  p.results = {GraphSlot::kForward, GraphSlot::kBackward};
  p.graph_logs = {{GraphSlot::kGraph, &LogSettings::joint_graph, "Joint graph"},
                  {GraphSlot::kForward, &LogSettings::graphs, "Forward graph"},
                  {GraphSlot::kBackward, &LogSettings::graphs, "Backward graph"}};
  PassPipeline pipeline(std::move(p));
  pipeline.add(decompose_composites_stage())
      .add(functionalize_stage(/*keep_input_mutations=*/false, /*positional_input_names=*/false))
      .add(joint_stage())
      .add(decompose_stage(options.decompositions));
  pipeline.add(partition_stage(options, options.schedule));
  if (options.schedule != ScheduleKind::kNone)
    pipeline.add(schedule_stage(options.schedule, options.min_cut.gradients_kept));
  return with_extra_stages(std::move(pipeline), options, PipelineKind::kTraining);
}

PassPipeline export_pipeline(const CompileOptions& options, bool trace_joint) {
  PassPipelineOptions p = driver_options(options, PipelineKind::kExport);
  if (trace_joint)
    p.results = {GraphSlot::kGraph, GraphSlot::kForward, GraphSlot::kBackward};
  else
    p.results = {GraphSlot::kGraph};
  PassPipeline pipeline(std::move(p));
  pipeline.add(decompose_composites_stage())
      .add(functionalize_stage(trace_joint ? false : options.keep_inference_input_mutations,
                               /*positional_input_names=*/false));
  if (trace_joint) pipeline.add(joint_stage());
  pipeline.add(decompose_stage(options.decompositions));
  if (trace_joint) {
    pipeline.add(partition_stage(options, ScheduleKind::kNone));  // an export is not reordered
  }
  return with_extra_stages(std::move(pipeline), options, PipelineKind::kExport);
}

CompileState begin_compilation(CompileKind kind, const Graph& graph,
                               std::vector<bool> requires_grad) {
  CompileState s;
  s.kind = kind;
  s.graph = graph.clone();
  s.requires_grad = std::move(requires_grad);
  return s;
}

CompileKind choose_compile_kind(const Graph& graph, const std::vector<bool>& requires_grad) {
  return needs_autograd(graph, requires_grad) ? CompileKind::kTraining : CompileKind::kInference;
}

InferenceArtifacts compile_for_inference(const Graph& graph, const CompileOptions& options) {
  CompileState s = begin_compilation(CompileKind::kInference, graph);
  PassPipeline p = inference_pipeline(options);
  p.run(s);
  InferenceArtifacts a;
  a.fw = std::shared_ptr<const Graph>(std::move(s.graph));
  a.meta = std::move(s.meta);
  a.input_views = std::move(s.input_views);
  a.cache_hit = p.cache_hit();
  take_times(a, p);
  return a;
}

TrainingArtifacts compile_for_training(const Graph& graph, const std::vector<bool>& requires_grad,
                                       const CompileOptions& options) {
  AOTGRAD_CHECK(requires_grad.size() == graph.placeholders().size(),
                "compile_for_training: ", requires_grad.size(), " requires_grad flags for ",
                graph.placeholders().size(), " inputs");
  CompileState s = begin_compilation(CompileKind::kTraining, graph, requires_grad);
  PassPipeline p = training_pipeline(options);
  p.run(s);
  TrainingArtifacts a;
  a.functional = std::move(s.functional);
  a.meta = std::move(s.meta);
  a.input_views = std::move(s.input_views);
  a.joint = std::shared_ptr<const Graph>(std::move(s.graph));
  a.joint_info = std::move(s.joint);
  a.fw = std::shared_ptr<const Graph>(std::move(s.fw));
  a.bw = std::shared_ptr<const Graph>(std::move(s.bw));
  a.saved = std::move(s.saved);
  a.num_forward_outputs = s.num_forward_outputs;
  a.explain = std::move(s.explain);
  a.cache_hit = p.cache_hit();
  take_times(a, p);
  return a;
}

ExportArtifacts compile_for_export(const Graph& graph, const std::vector<bool>& requires_grad,
                                   const CompileOptions& options) {
  bool trace_joint = !requires_grad.empty();
  if (trace_joint)
    AOTGRAD_CHECK(requires_grad.size() == graph.placeholders().size(),
                  "compile_for_export: ", requires_grad.size(), " requires_grad flags for ",
                  graph.placeholders().size(), " inputs");
  CompileState s = begin_compilation(CompileKind::kExport, graph, requires_grad);
  PassPipeline p = export_pipeline(options, trace_joint);
  p.run(s);
  ExportArtifacts a;
  a.meta = std::move(s.meta);
  a.input_views = std::move(s.input_views);
  if (trace_joint) {
    a.forward = std::move(s.functional);
    a.joint = std::shared_ptr<const Graph>(std::move(s.graph));
    a.fw = std::shared_ptr<const Graph>(std::move(s.fw));
    a.bw = std::shared_ptr<const Graph>(std::move(s.bw));
    a.saved = std::move(s.saved);
    a.num_forward_outputs = s.num_forward_outputs;
  } else {
    a.forward = std::shared_ptr<const Graph>(std::move(s.graph));
  }
  take_times(a, p);
  return a;
}

namespace {

// The key `pipeline` takes for `s` once its stages before the cache have run.
std::string key_after_normalization(CompileState s, PassPipeline pipeline,
                                    std::string_view version) {
  size_t first = 0;
  const auto& stages = pipeline.stages();
  while (first < stages.size() && stages[first]->before_cache()) stages[first++]->run(s);
  return compile_cache_key(s, pipeline, first, version);
}

}  // namespace

std::string inference_cache_key(const Graph& graph, const CompileOptions& options,
                                std::string_view version) {
  return key_after_normalization(begin_compilation(CompileKind::kInference, graph),
                                 inference_pipeline(options), version);
}

std::string training_cache_key(const Graph& graph, const std::vector<bool>& requires_grad,
                               const CompileOptions& options, std::string_view version) {
  return key_after_normalization(begin_compilation(CompileKind::kTraining, graph, requires_grad),
                                 training_pipeline(options), version);
}

SavedSummary saved_summary(const TrainingArtifacts& a) {
  if (a.explain) {
    SavedSummary out;
    for (const MinCutExplain::Saved& v : a.explain->saved)
      out.values.push_back({v.name, v.bytes, v.is_input});
    out.bytes = a.explain->saved_bytes;
    out.activation_bytes = a.explain->saved_activation_bytes;
    return out;
  }
  AOTGRAD_CHECK(a.fw != nullptr, "saved_summary: artifacts without a forward graph");
  return summarize_saved(*a.fw, a.saved);
}

}  // namespace aotgrad
