// Tests for the compile driver: the stage lists, what differs between the inference, training and
// export pipelines on purpose (input names, what is verified how, where composite ops decompose),
// the AOTGRAD_LOGS artifacts, stages inserted by later work, and the saved-value summary.
#include "aotgrad/driver/driver.h"

#include <gtest/gtest.h>

#include <sstream>

#include "aotgrad/driver/stages.h"
#include "aotgrad/ir/error.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/support/logging.h"

namespace aotgrad {
namespace {

CompileOptions no_cache() {
  CompileOptions o;
  o.cache_dir = "off";
  return o;
}

std::vector<std::string> names(const std::vector<StageTime>& stages) {
  std::vector<std::string> out;
  for (const StageTime& t : stages) out.push_back(t.name);
  return out;
}

std::vector<std::string> placeholder_names(const Graph& g) {
  std::vector<std::string> out;
  for (const Node* n : g.placeholders()) out.push_back(n->name());
  return out;
}

// A linear layer (a composite op) on an input the graph writes.
const char* kLinear = R"(
def forward(self, x: "f32[4, 8]", w: "f32[16, 8]", b: "f32[16]"):
    linear = torch.ops.aten.linear.default(x, w, b)
    relu_ = torch.ops.aten.relu_.default(linear)
    mul_ = torch.ops.aten.mul_.Tensor(x, 2)
    sum_1 = torch.ops.aten.sum.default(relu_)
    return (sum_1,)
)";

TEST(Driver, PipelinesAreNamedStages) {
  CompileOptions o;
  EXPECT_EQ(inference_pipeline(o).stage_names(), "decompose_composites, functionalize, decompose");
  EXPECT_EQ(training_pipeline(o).stage_names(),
            "decompose_composites, functionalize, joint, decompose, partition, schedule");
  CompileOptions unscheduled;
  unscheduled.schedule = ScheduleKind::kNone;
  EXPECT_EQ(training_pipeline(unscheduled).stage_names(),
            "decompose_composites, functionalize, joint, decompose, partition");
  EXPECT_EQ(export_pipeline(o, false).stage_names(),
            "decompose_composites, functionalize, decompose");
  EXPECT_EQ(export_pipeline(o, true).stage_names(),
            "decompose_composites, functionalize, joint, decompose, partition");
  auto g = parse_graph(kLinear, aten_ops());
  EXPECT_EQ(names(compile_for_inference(*g, no_cache()).stages),
            (std::vector<std::string>{"decompose_composites", "functionalize", "decompose"}));
  EXPECT_EQ(names(compile_for_training(*g, {false, true, true}, no_cache()).stages),
            (std::vector<std::string>{"decompose_composites", "functionalize", "joint", "decompose",
                                      "partition", "schedule"}));
}

// Inference graphs name their inputs arg<i>_1 (as PyTorch's inference graphs); training keeps the
// names up to the joint graph's primals; export keeps them in its functional graph, whose
// signature refers to them.
TEST(Driver, InputNamesDifferOnPurpose) {
  auto g = parse_graph(kLinear, aten_ops());
  InferenceArtifacts inf = compile_for_inference(*g, no_cache());
  EXPECT_EQ(placeholder_names(*inf.fw), (std::vector<std::string>{"arg0_1", "arg1_1", "arg2_1"}));
  TrainingArtifacts tr = compile_for_training(*g, {false, true, true}, no_cache());
  EXPECT_EQ(placeholder_names(*tr.functional), (std::vector<std::string>{"x", "w", "b"}));
  EXPECT_EQ(placeholder_names(*tr.fw),
            (std::vector<std::string>{"primals_1", "primals_2", "primals_3"}));
  ExportArtifacts ex = compile_for_export(*g, {}, no_cache());
  EXPECT_EQ(placeholder_names(*ex.forward), (std::vector<std::string>{"x", "w", "b"}));
  ExportArtifacts exj = compile_for_export(*g, {false, true, true}, no_cache());
  EXPECT_EQ(placeholder_names(*exj.forward), (std::vector<std::string>{"x", "w", "b"}));
  EXPECT_EQ(print_graph(*exj.fw), print_graph(*tr.fw));
}

// Composite ops decompose first in every pipeline, so no stage after sees aten::linear.
TEST(Driver, CompositeOpsDecomposeFirstEverywhere) {
  auto g = parse_graph(kLinear, aten_ops());
  CompileOptions o = no_cache();
  o.decompositions = DecompositionTable::none();
  auto has_linear = [](const Graph& x) {
    return print_graph(x).find("aten.linear") != std::string::npos;
  };
  EXPECT_FALSE(has_linear(*compile_for_inference(*g, o).fw));
  TrainingArtifacts tr = compile_for_training(*g, {false, true, true}, o);
  EXPECT_FALSE(has_linear(*tr.functional));
  EXPECT_FALSE(has_linear(*tr.joint));
  EXPECT_FALSE(has_linear(*compile_for_export(*g, {}, o).forward));
  EXPECT_TRUE(has_linear(*g));  // the caller's graph is not changed
}

// keep_inference_input_mutations applies to inference and to an export without the joint graph.
TEST(Driver, KeepInputMutationsInInferenceAndExport) {
  auto g = parse_graph(kLinear, aten_ops());
  CompileOptions o = no_cache();
  o.keep_inference_input_mutations = true;
  auto ends_with_copy = [](const Graph& x) {
    return print_graph(x).find("torch.ops.aten.copy_.default(arg0_1") != std::string::npos ||
           print_graph(x).find("torch.ops.aten.copy_.default(x") != std::string::npos;
  };
  InferenceArtifacts inf = compile_for_inference(*g, o);
  EXPECT_TRUE(ends_with_copy(*inf.fw)) << print_graph(*inf.fw);
  EXPECT_TRUE(inf.meta.mutated_inputs_returned.empty());
  ExportArtifacts ex = compile_for_export(*g, {}, o);
  EXPECT_TRUE(ends_with_copy(*ex.forward)) << print_graph(*ex.forward);
  EXPECT_FALSE(ends_with_copy(*compile_for_inference(*g, no_cache()).fw));
}

// A stage that breaks the metadata of the graph it writes, inserted after `anchor`.
class BreakMeta : public Stage {
 public:
  explicit BreakMeta(GraphSlot slot) : slot_(slot) {}
  std::string_view name() const override { return "break_meta"; }
  bool run(CompileState& s) override {
    for (Node* n : s.slot(slot_)->nodes())
      if (n->kind() == NodeKind::Call && n->meta().is_tensor())
        n->mutable_meta().tensor.dtype = ScalarType::Float64;
    return true;
  }
  std::vector<GraphSlot> writes() const override { return {slot_}; }

 private:
  GraphSlot slot_;
};

// The graphs later stages rewrite get the structural checks; the graphs the compilation returns
// get the full verifier (metadata re-inferred).
TEST(Driver, IntermediateGraphsStructuralResultsFull) {
  auto g = parse_graph(kLinear, aten_ops());
  CompileState s = begin_compilation(CompileKind::kTraining, *g, {false, true, true});
  PassPipeline p = training_pipeline(no_cache());
  p.insert_after("functionalize", std::make_unique<BreakMeta>(GraphSlot::kGraph));
  // Broken metadata in the functional graph passes the structural check; autograd then works on
  // f64 values, and the forward graph it leads to is checked in full.
  EXPECT_THROW(p.run(s), Error);
  CompileState s2 = begin_compilation(CompileKind::kTraining, *g, {false, true, true});
  PassPipeline q = training_pipeline(no_cache());
  q.insert_after("partition", std::make_unique<BreakMeta>(GraphSlot::kBackward));
  try {
    q.run(s2);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("differs from inferred"), std::string::npos) << e.message();
  }
  CompileOptions off = no_cache();
  off.verify = false;
  CompileState s3 = begin_compilation(CompileKind::kTraining, *g, {false, true, true});
  PassPipeline r = training_pipeline(off);
  r.insert_after("partition", std::make_unique<BreakMeta>(GraphSlot::kBackward));
  EXPECT_NO_THROW(r.run(s3));
}

// The hook of later work: a stage inserted into a standard pipeline runs there and sees the
// partition.
TEST(Driver, InsertedStagesRunInTheirPlace) {
  auto g = parse_graph(kLinear, aten_ops());
  CompileState s = begin_compilation(CompileKind::kTraining, *g, {false, true, true});
  PassPipeline p = training_pipeline(no_cache());
  p.insert_after("partition", pass_stage(make_pass("cse"), GraphSlot::kBackward, "bw_cse"));
  p.run(s);
  ASSERT_EQ(p.stats().size(), 7u);
  EXPECT_EQ(p.stats()[5].pass, "bw_cse");
  EXPECT_EQ(p.stats()[6].pass, "schedule");
  EXPECT_EQ(p.stats()[5].nodes_after, s.bw->size());
}

// The same through the options every front end fills: CompileOptions::extra_stages.
TEST(Driver, ExtraStagesFromTheOptions) {
  auto g = parse_graph(kLinear, aten_ops());
  CompileOptions o = no_cache();
  o.extra_stages.push_back({PipelineKind::kTraining, "partition", false, [] {
                              return pass_stage(make_pass("dce"), GraphSlot::kBackward, "bw_dce");
                            }});
  o.extra_stages.push_back({PipelineKind::kTraining, "functionalize", true, [] {
                              return pass_stage(make_pass("cse"), GraphSlot::kGraph, "pre_cse");
                            }});
  o.extra_stages.push_back({PipelineKind::kInference, "decompose", false, [] {
                              return pass_stage(make_pass("cse"), GraphSlot::kGraph, "inf_cse");
                            }});
  EXPECT_EQ(names(compile_for_training(*g, {false, true, true}, o).stages),
            (std::vector<std::string>{"decompose_composites", "pre_cse", "functionalize", "joint",
                                      "decompose", "partition", "bw_dce", "schedule"}));
  EXPECT_EQ(
      names(compile_for_inference(*g, o).stages),
      (std::vector<std::string>{"decompose_composites", "functionalize", "decompose", "inf_cse"}));
  // Part of the cache key.
  EXPECT_NE(training_cache_key(*g, {false, true, true}, o, "v"),
            training_cache_key(*g, {false, true, true}, no_cache(), "v"));
  o.extra_stages.push_back(
      {PipelineKind::kInference, "partition", false, [] { return pass_stage(make_pass("cse")); }});
  EXPECT_THROW(compile_for_inference(*g, o), Error);  // inference has no partition stage
}

// Restores quiet logging to std::cerr after a test.
struct CapturedLogs {
  std::ostringstream os;
  explicit CapturedLogs(const LogSettings& s) {
    set_log_settings(s);
    set_log_stream(&os);
  }
  ~CapturedLogs() {
    set_log_stream(nullptr);
    set_log_settings({});
  }
};

const char* kLinearRelu = R"(
def forward(self, x: "f32[4, 8]", w: "f32[16, 8]", b: "f32[16]"):
    t = torch.ops.aten.t.default(w)
    addmm = torch.ops.aten.addmm.default(b, x, t)
    relu = torch.ops.aten.relu.default(addmm)
    return (relu,)
)";

TEST(Driver, TrainingLogsTheSelectedArtifacts) {
  auto g = parse_graph(kLinearRelu, aten_ops());
  {
    CapturedLogs logs(parse_log_settings("aot_joint_graph,aot_graphs"));
    compile_for_training(*g, {false, true, true}, no_cache());
    std::string out = logs.os.str();
    size_t joint = out.find("TRACED GRAPH\n ===== Joint graph ");
    size_t fw = out.find(" ===== Forward graph ");
    size_t bw = out.find(" ===== Backward graph ");
    ASSERT_NE(joint, std::string::npos) << out;
    ASSERT_NE(fw, std::string::npos) << out;
    ASSERT_NE(bw, std::string::npos) << out;
    EXPECT_LT(joint, fw);
    EXPECT_LT(fw, bw);
    EXPECT_NE(out.find("def forward(self, primals, tangents):"), std::string::npos);
    EXPECT_EQ(out.find("partitioner"), std::string::npos);
  }
  {
    CapturedLogs logs(parse_log_settings("partitioner"));
    compile_for_training(*g, {false, true, true}, no_cache());
    std::string out = logs.os.str();
    EXPECT_NE(out.find("min_cut_rematerialization_partition"), std::string::npos) << out;
    EXPECT_NE(out.find("saved: "), std::string::npos) << out;
    EXPECT_NE(out.find("banned: "), std::string::npos) << out;
    EXPECT_EQ(out.find("TRACED GRAPH"), std::string::npos);
  }
  {
    CapturedLogs logs(parse_log_settings("partitioner"));
    CompileOptions o = no_cache();
    o.partition = PartitionKind::kDefault;
    compile_for_training(*g, {false, true, true}, o);
    EXPECT_NE(logs.os.str().find("default_partition saves"), std::string::npos) << logs.os.str();
  }
  {
    CapturedLogs logs(LogSettings{});
    compile_for_training(*g, {false, true, true}, no_cache());
    EXPECT_EQ(logs.os.str(), "");
  }
}

TEST(Driver, InferenceLogsItsForwardGraph) {
  auto g = parse_graph(kLinearRelu, aten_ops());
  CapturedLogs logs(parse_log_settings("aot_graphs"));
  compile_for_inference(*g, no_cache());
  std::string out = logs.os.str();
  EXPECT_NE(out.find(" ===== Forward graph "), std::string::npos) << out;
  EXPECT_EQ(out.find("Backward graph"), std::string::npos) << out;
  EXPECT_EQ(out.find("TRACED GRAPH", 1), std::string::npos) << out;  // once
}

// The summary of what is saved: the explanation's figures when there is one, the same figures
// from the forward graph when there is none (default partition, explanation off).
TEST(Driver, SavedSummaryWithAndWithoutTheExplanation) {
  auto g = parse_graph(kLinearRelu, aten_ops());
  TrainingArtifacts explained = compile_for_training(*g, {true, true, true}, no_cache());
  ASSERT_NE(explained.explain, nullptr);
  CompileOptions o = no_cache();
  o.explain = false;
  TrainingArtifacts plain = compile_for_training(*g, {true, true, true}, o);
  ASSERT_EQ(plain.explain, nullptr);
  SavedSummary a = saved_summary(explained), b = saved_summary(plain);
  EXPECT_EQ(a.bytes, explained.explain->saved_bytes);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_EQ(a.activation_bytes, b.activation_bytes);
  ASSERT_EQ(a.values.size(), b.values.size());
  for (size_t i = 0; i < a.values.size(); ++i) {
    EXPECT_EQ(a.values[i].name, b.values[i].name);
    EXPECT_EQ(a.values[i].bytes, b.values[i].bytes);
    EXPECT_EQ(a.values[i].is_input, b.values[i].is_input);
  }
  // x (an input) and relu (4 x 16 floats, an activation) are saved.
  EXPECT_EQ(b.activation_bytes, 4 * 16 * 4);
  EXPECT_GT(b.bytes, b.activation_bytes);
}

TEST(Driver, RequiresGradFlagsMustMatchTheInputs) {
  auto g = parse_graph(kLinearRelu, aten_ops());
  EXPECT_THROW(compile_for_training(*g, {true}, no_cache()), Error);
  EXPECT_THROW(compile_for_export(*g, {true, false}, no_cache()), Error);
}

}  // namespace
}  // namespace aotgrad
