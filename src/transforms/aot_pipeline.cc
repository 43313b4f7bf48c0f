// aotgrad: the training compile pipeline.
#include "aotgrad/transforms/aot_pipeline.h"

#include <unordered_set>

#include "aotgrad/ir/printer.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/support/logging.h"
#include "aotgrad/support/timer.h"
#include "aotgrad/transforms/min_cut.h"
#include "aotgrad/transforms/partition.h"

namespace aotgrad {
namespace {

// The partitioner log: the min-cut explanation, with PyTorch's "materialized backwards: NODE
// (USERS)" line for each node banned for that reason; or the default partition's saved values.
std::string partitioner_log(int aot_id, const Graph& joint, const MinCutExplain* explain,
                            const std::vector<std::string>& saved) {
  std::string out = "partitioner (graph " + std::to_string(aot_id) + "): ";
  if (!explain) {
    out += "default_partition saves every forward value the backward uses: " +
           std::to_string(saved.size()) + " values";
    for (size_t i = 0; i < saved.size(); ++i) out += (i ? ", " : ": ") + saved[i];
    return out + "\n";
  }
  out += "min_cut_rematerialization_partition\n";
  for (const auto& b : explain->banned) {
    if (b.reason != "materialized in backward") continue;
    const Node* n = joint.find(b.name);
    if (!n) continue;
    std::unordered_set<const Node*> seen(n->users().begin(), n->users().end());
    // Graph order, as FX keeps node.users.
    std::vector<const Node*> order;
    for (const Node* m : joint.nodes())
      if (seen.count(m)) order.push_back(m);
    out += "materialized backwards: " + b.name + " (";
    for (size_t i = 0; i < order.size(); ++i)
      out += (i ? ", " : "") +
             (order[i]->kind() == NodeKind::Output ? std::string("output") : order[i]->name());
    out += ")\n";
  }
  return out + explain_text(*explain);
}

}  // namespace

TrainingArtifacts compile_for_training(const Graph& graph, const std::vector<bool>& requires_grad,
                                       const PipelineOptions& options) {
  const LogSettings& logs = log_settings();
  int aot_id = logs.any() ? next_aot_id() : 0;
  TrainingArtifacts a;
  StageTimer timer;
  // Composite ops (linear, softmax, ...) decompose first, as PyTorch's tracing does: autograd and
  // functionalization only see what they decompose to.
  std::unique_ptr<Graph> source = graph.clone();
  decompose(*source, DecompositionTable::composite_implicit());
  timer.mark("decompose_composites");
  FunctionalizeResult fr = functionalize(*source);
  // Intermediate graphs get the structural checks; metadata is re-inferred on the forward and
  // backward graphs the backends receive, which hold every node of these that is run.
  if (options.verify) verify(*fr.graph, VerifyLevel::kStructure);
  a.meta = std::move(fr.meta);
  a.input_views = std::shared_ptr<const Graph>(std::move(fr.input_views));
  timer.mark("functionalize");
  // The functional graph's inputs are the original ones; mutated inputs' new values come first.
  JointGraph jg = build_joint(*fr.graph, requires_grad);
  if (options.verify) verify(*jg.graph, VerifyLevel::kStructure);
  timer.mark("joint");
  decompose(*jg.graph, options.decompositions);
  if (options.verify) verify(*jg.graph, VerifyLevel::kStructure);
  timer.mark("decompose");
  if (logs.joint_graph) log_graph("Joint graph " + std::to_string(aot_id), *jg.graph);
  Partition p;
  if (options.partition == PartitionKind::kMinCut) {
    std::shared_ptr<MinCutExplain> explain;
    if (options.explain || logs.partitioner) explain = std::make_shared<MinCutExplain>();
    p = min_cut_partition(jg, options.min_cut, explain.get());
    a.explain = std::move(explain);
  } else {
    p = default_partition(jg);
  }
  if (options.verify) {
    verify(*p.fw);
    verify(*p.bw);
  }
  timer.mark("partition");
  if (logs.graphs) {
    log_graph("Forward graph " + std::to_string(aot_id), *p.fw);
    log_graph("Backward graph " + std::to_string(aot_id), *p.bw);
  }
  if (logs.partitioner) log_text(partitioner_log(aot_id, *jg.graph, a.explain.get(), p.saved));
  a.functional = std::shared_ptr<const Graph>(std::move(fr.graph));
  a.joint = std::shared_ptr<const Graph>(std::move(jg.graph));
  a.joint_info = std::move(jg);
  a.fw = std::shared_ptr<const Graph>(std::move(p.fw));
  a.bw = std::shared_ptr<const Graph>(std::move(p.bw));
  a.saved = std::move(p.saved);
  a.num_forward_outputs = p.num_forward_outputs;
  for (const StageTime& t : timer.stages()) {
    a.phases_us.push_back({t.name, t.wall_us});
    a.phases_cpu_us.push_back({t.name, t.cpu_us});
  }
  return a;
}

}  // namespace aotgrad
