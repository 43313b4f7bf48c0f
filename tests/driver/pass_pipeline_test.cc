// Tests for the pass pipeline: stages in order with statistics, --print-after-all, verification
// (which graphs, at which level), errors naming the stage, inserting stages, graph logs.
#include "aotgrad/driver/pass_pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "aotgrad/ir/error.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

std::unique_ptr<Graph> parse(const std::string& text) {
  auto g = parse_graph(text, aten_ops());
  verify(*g);
  return g;
}

// The graph without header, annotations and release statements.
std::string text_of(const Graph& g) {
  PrintOptions p;
  p.class_header = false;
  p.annotations = false;
  p.release_statements = false;
  return print_graph(g, p);
}

PassPipelineOptions verifying() {
  PassPipelineOptions o;
  o.verify = true;
  return o;
}

const char* kProgram = R"(
def forward(self, x: "f32[4, 3]", y: "f32[4, 3]"):
    mul_ = torch.ops.aten.mul_.Tensor(x, 1)
    ones = torch.ops.aten.ones.default([4, 3])
    add = torch.ops.aten.add.Tensor(y, -0.0)
    mul = torch.ops.aten.mul.Tensor(add, ones)
    exp = torch.ops.aten.exp.default(mul)
    exp_1 = torch.ops.aten.exp.default(y)
    sym_size_int = torch.ops.aten.sym_size.int(y, 0)
    view = torch.ops.aten.view.default(exp_1, [sym_size_int, 3])
    sub = torch.ops.aten.sub.Tensor(exp, view)
    neg = torch.ops.aten.neg.default(exp_1)
    return (sub,)
)";

TEST(PassPipeline, RunsPassesInOrderWithStatistics) {
  auto g = parse(kProgram);
  PassPipeline p(verifying());
  p.add("functionalize").add("simplify").add("constant_fold").add("cse").add("dce").add("dce");
  EXPECT_TRUE(p.run(*g));
  EXPECT_EQ(text_of(*g), R"(def forward(self, x, y):
    mul = torch.ops.aten.mul.Tensor(x, 1)
    exp = torch.ops.aten.exp.default(y)
    sub = torch.ops.aten.sub.Tensor(exp, exp)
    copy_ = torch.ops.aten.copy_.default(x, mul)
    return (sub,)
)");
  const std::vector<PassStats>& s = p.stats();
  ASSERT_EQ(s.size(), 6u);
  EXPECT_EQ(s[0].pass, "functionalize");
  EXPECT_EQ(s[0].changes, 1);  // one mutation
  EXPECT_EQ(s[1].pass, "simplify");
  // y + -0.0, the view to exp_1's own shape; x * 1 stays: its result is written back into x.
  EXPECT_EQ(s[1].changes, 2);
  EXPECT_EQ(s[2].pass, "constant_fold");
  EXPECT_EQ(s[2].changes, 1);  // y * ones
  EXPECT_EQ(s[3].pass, "cse");
  EXPECT_EQ(s[3].changes, 1);  // exp(y) twice
  EXPECT_EQ(s[4].pass, "dce");
  EXPECT_EQ(s[4].nodes_before - s[4].nodes_after, static_cast<size_t>(s[4].changes));
  EXPECT_TRUE(s[4].changed);
  EXPECT_FALSE(s[5].changed);
  EXPECT_EQ(s[5].nodes_before, s[5].nodes_after);
  for (size_t i = 1; i < s.size(); ++i) EXPECT_EQ(s[i].nodes_before, s[i - 1].nodes_after);
  for (const PassStats& st : s) {
    EXPECT_GE(st.seconds, 0);
    EXPECT_GE(st.cpu_seconds, 0);
  }
  // One timer: the stage times are the statistics' times.
  ASSERT_EQ(p.stage_times().size(), s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(p.stage_times()[i].name, s[i].pass);
    EXPECT_DOUBLE_EQ(p.stage_times()[i].wall_us * 1e-6, s[i].seconds);
  }
  std::string table = p.stats_table();
  EXPECT_EQ(table.rfind("pass", 0), 0u) << table;
  EXPECT_NE(table.find("\nconstant_fold "), std::string::npos) << table;
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 7) << table;
}

TEST(PassPipeline, PrintsAfterEveryStage) {
  auto g = parse(R"(
def forward(self, x: "f32[4]"):
    relu = torch.ops.aten.relu.default(x)
    neg = torch.ops.aten.neg.default(x)
    return (neg,)
)");
  std::ostringstream out;
  PassPipelineOptions o = verifying();
  o.print_after_all = &out;
  std::vector<std::string> seen;
  o.after_stage = [&](const Stage& stage, const CompileState& s) {
    seen.push_back(std::string(stage.name()) + ":" + std::to_string(s.graph->size()));
  };
  PassPipeline p(o);
  p.add("cse").add("dce");
  p.run(*g);
  EXPECT_EQ(seen, (std::vector<std::string>{"cse:4", "dce:3"}));
  std::string text = out.str();
  EXPECT_EQ(text.rfind("# after cse: 4 nodes, 0 changes\n", 0), 0u) << text;
  EXPECT_NE(text.find("# after dce: 3 nodes, 1 changes\n"), std::string::npos) << text;
  EXPECT_NE(text.find("= torch.ops.aten.relu.default(x)"), std::string::npos) << text;
}

// A pass that leaves a node whose metadata is not what the registry infers: only the full
// verifier (metadata re-inferred) sees it.
class BreakingPass : public Pass {
 public:
  std::string_view name() const override { return "breaking"; }
  bool run(Graph& g) override {
    for (Node* n : g.nodes())
      if (n->kind() == NodeKind::Call) n->mutable_meta().tensor.dtype = ScalarType::Float64;
    return true;
  }
};

const char* kRelu = R"(
def forward(self, x: "f32[4]"):
    relu = torch.ops.aten.relu.default(x)
    return (relu,)
)";

TEST(PassPipeline, VerifierNamesThePassThatBrokeTheGraph) {
  auto g = parse(kRelu);
  PassPipeline p(verifying());
  p.add("dce").add(std::make_unique<BreakingPass>()).add("cse");
  try {
    p.run(*g);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message().rfind("pass 'breaking' left an invalid graph: ", 0), 0u) << e.message();
  }
  EXPECT_EQ(p.stats().size(), 2u);  // cse never ran
  // The graph is left as it was.
  EXPECT_EQ(text_of(*g), text_of(*parse(kRelu)));
  // Without the verifier the pipeline goes on.
  PassPipelineOptions o;
  o.verify = false;
  PassPipeline unchecked(o);
  unchecked.add(std::make_unique<BreakingPass>());
  auto g2 = parse(kRelu);
  EXPECT_TRUE(unchecked.run(*g2));
}

// Intermediate graphs get `intermediate`'s checks; the results get the full verifier once no later
// stage writes them.
TEST(PassPipeline, StructuralChecksOnIntermediateGraphsFullOnResults) {
  PassPipelineOptions o = verifying();
  o.intermediate = VerifyLevel::kStructure;
  {
    PassPipeline p(o);
    p.add(std::make_unique<BreakingPass>()).add("dce");
    auto g = parse(kRelu);
    EXPECT_THROW(p.run(*g), Error);  // dce changes nothing: the result is verified after it
  }
  {
    o.results = {};  // nothing is a result: structural checks only
    PassPipeline p(o);
    p.add(std::make_unique<BreakingPass>()).add("dce");
    auto g = parse(kRelu);
    EXPECT_TRUE(p.run(*g));
  }
}

class ThrowingPass : public Pass {
 public:
  std::string_view name() const override { return "throwing"; }
  bool run(Graph&) override { throw Error("cannot do this"); }
};

TEST(PassPipeline, ErrorsNameTheStage) {
  auto g = parse(R"(
def forward(self, x: "f32[4]"):
    return (x,)
)");
  PassPipeline p(verifying());
  p.add(std::make_unique<ThrowingPass>());
  try {
    p.run(*g);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "pass 'throwing': cannot do this");
  }
  PassPipelineOptions o = verifying();
  o.errors_name_the_stage = false;
  PassPipeline plain(o);
  plain.add(std::make_unique<ThrowingPass>());
  try {
    plain.run(*g);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "cannot do this");
  }
}

// A stage that records where it ran, for the insertion tests.
class Marker : public Stage {
 public:
  explicit Marker(std::string name, std::vector<std::string>* log) : name_(name), log_(log) {}
  std::string_view name() const override { return name_; }
  bool run(CompileState&) override {
    log_->push_back(name_);
    return false;
  }

 private:
  std::string name_;
  std::vector<std::string>* log_;
};

TEST(PassPipeline, StagesAreInsertedByName) {
  std::vector<std::string> ran;
  PassPipeline p;
  p.add(std::make_unique<Marker>("a", &ran)).add(std::make_unique<Marker>("c", &ran));
  p.insert_after("a", std::make_unique<Marker>("b", &ran));
  p.insert_before("a", std::make_unique<Marker>("start", &ran));
  p.insert_after("c", std::make_unique<Marker>("end", &ran));
  EXPECT_EQ(p.stage_names(), "start, a, b, c, end");
  auto g = parse(kRelu);
  EXPECT_FALSE(p.run(*g));
  EXPECT_EQ(ran, (std::vector<std::string>{"start", "a", "b", "c", "end"}));
  try {
    p.insert_after("nope", std::make_unique<Marker>("x", &ran));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "the pipeline has no stage 'nope'; its stages: start, a, b, c, end");
  }
}

TEST(PassPipeline, PassStagesRunOnTheirSlot) {
  CompileState s;
  s.graph = parse(kRelu);
  s.fw = parse(R"(
def forward(self, x: "f32[4]"):
    relu = torch.ops.aten.relu.default(x)
    neg = torch.ops.aten.neg.default(x)
    return (relu,)
)");
  PassPipeline p(verifying());
  p.add(pass_stage(make_pass("dce"), GraphSlot::kForward, "fw_dce"));
  EXPECT_TRUE(p.run(s));
  EXPECT_EQ(p.stats()[0].pass, "fw_dce");
  EXPECT_EQ(s.fw->size(), 3u);
  EXPECT_EQ(s.graph->size(), 3u);
  // A slot the compilation does not have.
  CompileState empty;
  empty.graph = parse(kRelu);
  PassPipeline q(verifying());
  q.add(pass_stage(make_pass("dce"), GraphSlot::kBackward));
  EXPECT_THROW(q.run(empty), Error);
}

// The graph logs: after the last stage that writes the slot, when the artifact is on.
TEST(PassPipeline, LogsGraphsAfterTheirLastWriter) {
  std::ostringstream os;
  LogSettings on;
  on.graphs = true;
  set_log_settings(on);
  set_log_stream(&os);
  PassPipelineOptions o = verifying();
  o.graph_logs = {{GraphSlot::kGraph, &LogSettings::graphs, "Forward graph"},
                  {GraphSlot::kGraph, &LogSettings::joint_graph, "Joint graph"}};
  PassPipeline p(o);
  p.add("cse").add("dce");
  CompileState s;
  s.graph = parse(kRelu);
  p.run(s);
  set_log_stream(nullptr);
  set_log_settings({});
  std::string log = os.str();
  EXPECT_EQ(
      log.rfind("TRACED GRAPH\n ===== Forward graph " + std::to_string(s.aot_id) + " =====\n", 0),
      0u)
      << log;
  EXPECT_EQ(log.find("TRACED GRAPH", 1), std::string::npos) << log;  // once, after dce
  EXPECT_EQ(log.find("Joint graph"), std::string::npos) << log;
}

}  // namespace
}  // namespace aotgrad
