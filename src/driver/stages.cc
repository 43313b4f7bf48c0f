// aotgrad: the standard pipelines' stages.
#include "aotgrad/driver/stages.h"

#include <cstdio>
#include <unordered_set>

#include "aotgrad/ir/error.h"
#include "aotgrad/support/logging.h"
#include "aotgrad/transforms/autograd.h"
#include "aotgrad/transforms/functionalize.h"
#include "aotgrad/transforms/partition/memory_schedule.h"
#include "aotgrad/transforms/partition/partition.h"
#include "aotgrad/transforms/passes/decompose.h"

namespace aotgrad {
namespace {

class DecomposeCompositesStage : public Stage {
 public:
  std::string_view name() const override { return "decompose_composites"; }
  bool run(CompileState& s) override {
    changes_ = decompose(*s.graph, DecompositionTable::composite_implicit());
    return changes_ > 0;
  }
  bool before_cache() const override { return true; }
};

class FunctionalizeStage : public Stage {
 public:
  FunctionalizeStage(bool keep_input_mutations, bool positional_input_names)
      : keep_(keep_input_mutations), positional_(positional_input_names) {}
  std::string_view name() const override { return "functionalize"; }
  bool run(CompileState& s) override {
    FunctionalizeOptions o;
    o.keep_input_mutations = keep_;
    if (positional_) o.input_name = [](size_t i) { return "arg" + std::to_string(i) + "_1"; };
    FunctionalizeResult r = functionalize(*s.graph, o);
    s.graph = std::move(r.graph);
    s.meta = std::move(r.meta);
    s.input_views = std::shared_ptr<const Graph>(std::move(r.input_views));
    changes_ = 1;
    return true;
  }
  std::string fingerprint() const override {
    return std::string("keep_input_mutations=") + (keep_ ? "1" : "0") +
           " input_names=" + (positional_ ? "positional" : "kept");
  }

 private:
  bool keep_, positional_;
};

class JointStage : public Stage {
 public:
  std::string_view name() const override { return "joint"; }
  bool run(CompileState& s) override {
    // The functional graph's inputs are the original ones; mutated inputs' new values come first.
    s.functional = std::shared_ptr<const Graph>(std::move(s.graph));
    // Outputs: the effect token, the mutated inputs' new values, the user's outputs.
    std::vector<bool> no_tangent(static_cast<size_t>(s.meta.num_tokens), false);
    for (int p : s.meta.mutated_inputs_returned)
      no_tangent.push_back(s.meta.inputs.at(static_cast<size_t>(p)).mutations_hidden_from_autograd);
    JointGraph jg = build_joint(*s.functional, s.requires_grad,
                                static_cast<size_t>(s.meta.num_tokens), no_tangent);
    s.graph = std::move(jg.graph);
    s.joint = std::move(jg);
    changes_ = 1;
    return true;
  }
};

class DecomposeStage : public Stage {
 public:
  explicit DecomposeStage(DecompositionTable table) : table_(std::move(table)) {}
  std::string_view name() const override { return "decompose"; }
  bool run(CompileState& s) override {
    changes_ = decompose(*s.graph, table_);
    return changes_ > 0;
  }

 private:
  DecompositionTable table_;
};

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

class PartitionStage : public Stage {
 public:
  PartitionStage(PartitionKind kind, MinCutOptions min_cut, bool explain, PartitionFn custom,
                 bool scheduled)
      : kind_(kind),
        min_cut_(std::move(min_cut)),
        explain_(explain),
        custom_(std::move(custom)),
        scheduled_(scheduled) {}
  std::string_view name() const override { return "partition"; }
  bool run(CompileState& s) override {
    AOTGRAD_CHECK(s.graph != nullptr, "partition: no joint graph");
    s.joint.graph = std::move(s.graph);
    Partition p;
    s.explain.reset();
    try {
      if (custom_) {
        p = custom_.fn(s.joint);
        check_custom(s.joint, p);
      } else if (kind_ == PartitionKind::kMinCut) {
        std::shared_ptr<MinCutExplain> explain;
        if (explain_ || log_settings().partitioner) explain = std::make_shared<MinCutExplain>();
        p = min_cut_partition(s.joint, min_cut_, explain.get(),
                              scheduled_ ? ScheduleKind::kMemory : ScheduleKind::kNone);
        s.explain = std::move(explain);
      } else {
        p = default_partition(s.joint);
      }
    } catch (...) {
      s.graph = std::move(s.joint.graph);
      throw;
    }
    s.graph = std::move(s.joint.graph);
    s.fw = std::move(p.fw);
    s.bw = std::move(p.bw);
    s.saved = std::move(p.saved);
    s.num_forward_outputs = p.num_forward_outputs;
    changes_ = 1;
    return true;
  }
  std::vector<GraphSlot> writes() const override {
    return {GraphSlot::kForward, GraphSlot::kBackward};
  }
  // The partition kind and the min-cut's options enter the key as compile options; what the
  // stage is given besides: the custom function's name, the inputs that outlive the step, whether
  // the memory schedule will reorder the graphs (which the budget's pricing mimics).
  std::string fingerprint() const override {
    if (custom_) return "custom:" + custom_.name;
    std::string m =
        std::string("scheduled=") + (scheduled_ ? "1" : "0") + " static_lifetime_inputs=";
    for (bool b : min_cut_.static_lifetime_inputs) m += b ? "1" : "0";
    return m;
  }
  void log(const CompileState& s, const LogSettings& logs) const override {
    if (logs.partitioner && s.graph && !custom_)
      log_text(partitioner_log(s.aot_id, *s.graph, s.explain.get(), s.saved));
  }

 private:
  // A user's partition keeps default_partition's calling convention (the verifier checks each
  // graph on its own after the stage; this checks how they fit together).
  void check_custom(const JointGraph& joint, const Partition& p) const {
    const std::string who = "partition_fn '" + custom_.name + "': ";
    AOTGRAD_CHECK(p.fw && p.bw, who, "returned no ", p.fw ? "backward" : "forward", " graph");
    AOTGRAD_CHECK(p.num_forward_outputs == joint.num_forward_outputs, who, "returned ",
                  p.num_forward_outputs, " forward outputs; the joint graph has ",
                  joint.num_forward_outputs);
    const size_t fw_outs = p.fw->output() ? p.fw->output()->args()[0].list.size() : 0;
    AOTGRAD_CHECK(fw_outs == p.num_forward_outputs + p.saved.size(), who,
                  "its forward graph returns ", fw_outs, " values; expected ",
                  p.num_forward_outputs, " forward outputs and ", p.saved.size(), " saved values");
    const size_t bw_ins = p.bw->placeholders().size();
    AOTGRAD_CHECK(bw_ins == p.saved.size() + joint.num_tangents, who, "its backward graph takes ",
                  bw_ins, " inputs; expected ", p.saved.size(), " saved values and ",
                  joint.num_tangents, " tangents");
    const size_t joint_outs = joint.graph->output()->args()[0].list.size();
    const size_t bw_outs = p.bw->output() ? p.bw->output()->args()[0].list.size() : 0;
    AOTGRAD_CHECK(bw_outs + joint.num_forward_outputs == joint_outs, who,
                  "its backward graph returns ", bw_outs, " values; expected ",
                  joint_outs - joint.num_forward_outputs, " (one grad or None per primal)");
  }

  PartitionKind kind_;
  MinCutOptions min_cut_;
  bool explain_;
  PartitionFn custom_;
  bool scheduled_;
};

class ScheduleStage : public Stage {
 public:
  ScheduleStage(ScheduleKind kind, bool gradients_kept)
      : kind_(kind), gradients_kept_(gradients_kept) {}
  std::string_view name() const override { return "schedule"; }
  bool run(CompileState& s) override {
    changes_ = 0;
    if (kind_ == ScheduleKind::kNone) return false;
    AOTGRAD_CHECK(s.fw != nullptr && s.bw != nullptr,
                  "schedule: no forward and backward graphs (run it after partition)");
    last_ = schedule_for_memory(s.fw, s.bw, s.saved, gradients_kept_);
    changes_ = (last_.forward_order != "original") + (last_.backward_order != "original");
    return changes_ > 0;
  }
  std::vector<GraphSlot> writes() const override {
    return {GraphSlot::kForward, GraphSlot::kBackward};
  }
  void log(const CompileState& s, const LogSettings& logs) const override {
    if (logs.partitioner && kind_ != ScheduleKind::kNone && s.fw)
      log_text("memory schedule (graph " + std::to_string(s.aot_id) + "): " + schedule_text(last_));
  }

 private:
  ScheduleKind kind_;
  bool gradients_kept_;
  MemorySchedule last_;
};

class DataParallelStage : public Stage {
 public:
  explicit DataParallelStage(DataParallelOptions options) : options_(std::move(options)) {}
  std::string_view name() const override { return "data_parallel"; }
  bool run(CompileState& s) override {
    AOTGRAD_CHECK(s.bw != nullptr, "data_parallel: no backward graph (run it after partition)");
    changes_ = average_sharded_gradients(*s.bw, options_);
    if (std::unique_ptr<Graph> early = issue_sharded_reduce_scatters_early(*s.bw, options_))
      s.bw = std::move(early);
    BucketPlan plan = plan_gradient_buckets(*s.bw, options_);
    insert_gradient_all_reduces(*s.bw, plan);
    changes_ += static_cast<int64_t>(plan.buckets.size());
    return changes_ > 0;
  }
  std::vector<GraphSlot> writes() const override { return {GraphSlot::kBackward}; }
  // The names are for logs only; everything else decides the graph.
  std::string fingerprint() const override {
    const DataParallelOptions& o = options_;
    std::string m = "group=" + o.group_name + " size=" + std::to_string(o.group_size) +
                    " reduction=" + grad_reduction_name(o.reduction) +
                    " bucket_cap=" + std::to_string(o.bucket_cap_bytes) +
                    " first_bucket_cap=" + std::to_string(o.first_bucket_cap_bytes) + " reduce=";
    for (bool b : o.reduce) m += b ? "1" : "0";
    m += " sharded=";
    for (bool b : o.sharded) m += b ? "1" : "0";
    return m;
  }
  void log(const CompileState& s, const LogSettings& logs) const override {
    if (!logs.collectives || !s.bw) return;
    log_text("collectives (graph " + std::to_string(s.aot_id) + "): gradient buckets\n" +
             read_bucket_plan(*s.bw, options_.names).text());
  }

 private:
  DataParallelOptions options_;
};

class GatherAtFirstUseStage : public Stage {
 public:
  std::string_view name() const override { return "gather_at_first_use"; }
  bool run(CompileState& s) override {
    changes_ = 0;
    AOTGRAD_CHECK(s.graph != nullptr, "gather_at_first_use: no graph");
    std::unique_ptr<Graph> g = gather_parameters_at_first_use(*s.graph);
    if (!g) return false;
    s.graph = std::move(g);
    changes_ = 1;
    return true;
  }
};

}  // namespace

std::unique_ptr<Stage> decompose_composites_stage() {
  return std::make_unique<DecomposeCompositesStage>();
}

std::unique_ptr<Stage> functionalize_stage(bool keep_input_mutations, bool positional_input_names) {
  return std::make_unique<FunctionalizeStage>(keep_input_mutations, positional_input_names);
}

std::unique_ptr<Stage> joint_stage() { return std::make_unique<JointStage>(); }

std::unique_ptr<Stage> decompose_stage(DecompositionTable table) {
  return std::make_unique<DecomposeStage>(std::move(table));
}

std::unique_ptr<Stage> partition_stage(const CompileOptions& options, ScheduleKind then) {
  return std::make_unique<PartitionStage>(options.partition, options.min_cut, options.explain,
                                          options.partition_fn, then == ScheduleKind::kMemory);
}

std::unique_ptr<Stage> schedule_stage(ScheduleKind kind, bool gradients_kept) {
  return std::make_unique<ScheduleStage>(kind, gradients_kept);
}

std::unique_ptr<Stage> data_parallel_stage(DataParallelOptions options) {
  return std::make_unique<DataParallelStage>(std::move(options));
}

std::unique_ptr<Stage> gather_at_first_use_stage() {
  return std::make_unique<GatherAtFirstUseStage>();
}

}  // namespace aotgrad
