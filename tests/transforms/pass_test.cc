// Tests for the pass interface, make_pass and the pass pipeline.
#include "aotgrad/transforms/pass.h"

#include <gtest/gtest.h>

#include <sstream>

#include "aotgrad/ir/error.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/registry.h"
#include "pass_text.h"

namespace aotgrad {
namespace {

std::unique_ptr<Graph> parse(const std::string& text) {
  auto g = parse_graph(text, aten_ops());
  verify(*g);
  return g;
}

PassPipelineOptions verifying() {
  PassPipelineOptions o;
  o.verify = true;
  return o;
}

TEST(MakePass, KnownNames) {
  for (const char* spec : {"functionalize", "dce", "cse", "constant_fold", "simplify"})
    EXPECT_EQ(make_pass(spec)->name(), spec);
  EXPECT_EQ(make_pass("fold")->name(), "constant_fold");
  EXPECT_EQ(make_pass("decomp:core")->name(), "decomp:core");
  EXPECT_EQ(make_pass("decomp:full,-aten::native_layer_norm")->name(),
            "decomp:full,-aten::native_layer_norm");
}

TEST(MakePass, UnknownNameListsTheKnownOnes) {
  try {
    make_pass("cse2");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(),
              "unknown pass 'cse2'; known passes: functionalize, decomp:<spec>, dce, "
              "cse, constant_fold (fold), simplify");
  }
  try {
    make_pass("decomp:bogus");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message().rfind("pass 'decomp:bogus': ", 0), 0u) << e.message();
  }
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
  EXPECT_EQ(graph_text(*g), normalized(R"(
def forward(self, x, y):
    mul = torch.ops.aten.mul.Tensor(x, 1)
    exp = torch.ops.aten.exp.default(y)
    sub = torch.ops.aten.sub.Tensor(exp, exp)
    copy_ = torch.ops.aten.copy_.default(x, mul)
    return (sub,)
)"));
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
  for (const PassStats& st : s) EXPECT_GE(st.seconds, 0);
  std::string table = p.stats_table();
  EXPECT_EQ(table.rfind("pass", 0), 0u) << table;
  EXPECT_NE(table.find("\nconstant_fold "), std::string::npos) << table;
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 7) << table;
}

TEST(PassPipeline, PrintsAfterEveryPass) {
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
  o.after_pass = [&](const Pass& pass, const Graph& graph) {
    seen.push_back(std::string(pass.name()) + ":" + std::to_string(graph.size()));
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

// A pass that leaves a node whose metadata is not what the registry infers.
class BreakingPass : public Pass {
 public:
  std::string_view name() const override { return "breaking"; }
  bool run(Graph& g) override {
    for (Node* n : g.nodes())
      if (n->kind() == NodeKind::Call) n->mutable_meta().tensor.dtype = ScalarType::Float64;
    return true;
  }
};

TEST(PassPipeline, VerifierNamesThePassThatBrokeTheGraph) {
  const char* text = R"(
def forward(self, x: "f32[4]"):
    relu = torch.ops.aten.relu.default(x)
    return (relu,)
)";
  auto g = parse(text);
  PassPipeline p(verifying());
  p.add("dce").add(std::make_unique<BreakingPass>()).add("cse");
  try {
    p.run(*g);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message().rfind("pass 'breaking' left an invalid graph: ", 0), 0u) << e.message();
  }
  EXPECT_EQ(p.stats().size(), 2u);  // cse never ran
  // Without the verifier the pipeline goes on.
  PassPipelineOptions o;
  o.verify = false;
  PassPipeline unchecked(o);
  unchecked.add(std::make_unique<BreakingPass>());
  auto g2 = parse(text);
  EXPECT_TRUE(unchecked.run(*g2));
}

class ThrowingPass : public Pass {
 public:
  std::string_view name() const override { return "throwing"; }
  bool run(Graph&) override { throw Error("cannot do this"); }
};

TEST(PassPipeline, ErrorsNameThePass) {
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
}

// functionalize as a pass keeps the signature: the input mutation is a trailing copy_.
TEST(FunctionalizePass, RewritesInPlaceAndKeepsTheSignature) {
  auto g = parse(R"(
def forward(self, x: "f32[4]"):
    add_ = torch.ops.aten.add_.Tensor(x, 1)
    mul = torch.ops.aten.mul.Tensor(x, 2)
    return (mul,)
)");
  auto pass = make_pass("functionalize");
  EXPECT_TRUE(pass->run(*g));
  verify(*g);
  EXPECT_EQ(graph_text(*g), normalized(R"(
def forward(self, x):
    add = torch.ops.aten.add.Tensor(x, 1)
    mul = torch.ops.aten.mul.Tensor(add, 2)
    copy_ = torch.ops.aten.copy_.default(x, add)
    return (mul,)
)"));
  EXPECT_FALSE(pass->run(*g)) << graph_text(*g);
}

TEST(DecompPass, DecomposesWithTheSpecTable) {
  PassRun r = run_pass("decomp:aten::addmm", R"(
def forward(self, b: "f32[3]", x: "f32[2, 4]", w: "f32[4, 3]"):
    addmm = torch.ops.aten.addmm.default(b, x, w)
    return (addmm,)
)");
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(r.changes, 1);
  EXPECT_EQ(r.text.find("addmm.default"), std::string::npos) << r.text;
}

TEST(AssignGraph, CopiesNodesNamesAndSignature) {
  auto src = parse(R"(
def forward(self, a: "f32[4]"):
    exp = torch.ops.aten.exp.default(a)
    max_1 = torch.ops.aten.max.dim(exp, 0)
    getitem = max_1[0]
    return (getitem,)
)");
  src->signature = Signature::Joint;
  auto dst = parse(R"(
def forward(self, x: "f32[2]"):
    relu = torch.ops.aten.relu.default(x)
    return (relu,)
)");
  assign_graph(*dst, *src);
  verify(*dst);
  EXPECT_EQ(graph_text(*dst), graph_text(*src));
  EXPECT_EQ(dst->signature, Signature::Joint);
  EXPECT_EQ(dst->find("x"), nullptr);
}

}  // namespace
}  // namespace aotgrad
