// Tests for functionalization: text in, text out; the seed chapter's printed graphs are exact
// expectations (sections 13.13, 13.23, 13.24).
#include "aotgrad/transforms/functionalize.h"

#include <gtest/gtest.h>

#include <sstream>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

// Lines of the printed graph without leading indentation, blank lines and comments.
std::string normalized(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) {
    size_t a = line.find_first_not_of(' ');
    if (a == std::string::npos || line[a] == '#') continue;
    out += line.substr(a) + "\n";
  }
  return out;
}

FunctionalizeResult run(const std::string& text, bool keep = false, bool rename = true) {
  auto g = parse_graph(text, aten_ops());
  verify(*g);
  FunctionalizeOptions opts;
  opts.keep_input_mutations = keep;
  if (rename) opts.input_name = [](size_t i) { return "arg" + std::to_string(i) + "_1"; };
  FunctionalizeResult r = functionalize(*g, opts);
  verify(*r.graph);
  return r;
}

std::string printed(const Graph& g) {
  PrintOptions p;
  p.class_header = false;
  p.annotations = false;
  return normalized(print_graph(g, p));
}

const char* kSgdStep = R"(
def forward(self, p: "f32[4]", g: "f32[4]"):
    add_ = torch.ops.aten.add_.Tensor(p, g, alpha = -0.1)
    mul = torch.ops.aten.mul.Tensor(p, 2)
    sum_1 = torch.ops.aten.sum.default(mul)
    return (sum_1,)
)";

// Section 13.13, keep_inference_input_mutations=False: the new value is an extra output.
TEST(Functionalize, Seed13_13_MutationAsOutput) {
  FunctionalizeResult r = run(kSgdStep);
  EXPECT_EQ(printed(*r.graph), normalized(R"(
def forward(self, arg0_1, arg1_1):
    add = torch.ops.aten.add.Tensor(arg0_1, arg1_1, alpha = -0.1);  arg0_1 = arg1_1 = None
    mul = torch.ops.aten.mul.Tensor(add, 2)
    sum_1 = torch.ops.aten.sum.default(mul);  mul = None
    return (add, sum_1)
)"));
  EXPECT_TRUE(r.meta.inputs[0].mutates_data);
  EXPECT_FALSE(r.meta.inputs[1].mutates_data);
  EXPECT_EQ(r.meta.mutated_inputs_returned, std::vector<int>{0});
}

// Section 13.13, keep_inference_input_mutations=True: a trailing copy_ in the graph.
TEST(Functionalize, Seed13_13_MutationKeptInGraph) {
  FunctionalizeResult r = run(kSgdStep, /*keep=*/true);
  EXPECT_EQ(printed(*r.graph), normalized(R"(
def forward(self, arg0_1, arg1_1):
    add = torch.ops.aten.add.Tensor(arg0_1, arg1_1, alpha = -0.1);  arg1_1 = None
    mul = torch.ops.aten.mul.Tensor(add, 2)
    sum_1 = torch.ops.aten.sum.default(mul);  mul = None
    copy_ = torch.ops.aten.copy_.default(arg0_1, add);  arg0_1 = add = copy_ = None
    return (sum_1,)
)"));
  EXPECT_TRUE(r.meta.inputs[0].mutation_in_graph);
  EXPECT_TRUE(r.meta.mutated_inputs_returned.empty());
}

// Section 13.24: f(t, t) with x.add_(1); return x + y, after the dedupe wrapper merged y into x.
TEST(Functionalize, Seed13_24_DedupedInput) {
  FunctionalizeResult r = run(R"(
def forward(self, x: "f32[4]"):
    add_ = torch.ops.aten.add_.Tensor(x, 1)
    add = torch.ops.aten.add.Tensor(x, x)
    return (add,)
)");
  EXPECT_EQ(printed(*r.graph), normalized(R"(
def forward(self, arg0_1):
    add = torch.ops.aten.add.Tensor(arg0_1, 1);  arg0_1 = None
    add_1 = torch.ops.aten.add.Tensor(add, add)
    return (add, add_1)
)"));
}

// Section 13.23: f(base[:6], base[4:]) after the synthetic-base wrapper made both views of one
// [10] input: as_strided -> mul -> as_strided_scatter -> two as_strided -> add.
TEST(Functionalize, Seed13_23_SyntheticBase) {
  FunctionalizeResult r = run(R"(
def forward(self, base: "f32[10]"):
    x = torch.ops.aten.as_strided.default(base, [6], [1], 0)
    y = torch.ops.aten.as_strided.default(base, [6], [1], 4)
    mul_ = torch.ops.aten.mul_.Tensor(x, 2)
    add = torch.ops.aten.add.Tensor(x, y)
    return (add,)
)");
  std::vector<std::string> ops;
  for (const Node* n : r.graph->nodes())
    if (n->kind() == NodeKind::Call) ops.push_back(n->op()->name);
  EXPECT_EQ(ops, (std::vector<std::string>{"aten::as_strided", "aten::mul.Tensor", "aten::as_strided_scatter",
                                           "aten::as_strided", "aten::as_strided", "aten::add.Tensor"}));
  EXPECT_EQ(r.graph->placeholders().size(), 1u);
  EXPECT_TRUE(r.meta.inputs[0].mutates_data);
}

TEST(Functionalize, WriteThroughSliceAndSelectBecomesScatter) {
  FunctionalizeResult r = run(R"(
def forward(self, x: "f32[4, 6]"):
    clone = torch.ops.aten.clone.default(x)
    slice_1 = torch.ops.aten.slice.Tensor(clone, 1, 0, 3)
    select = torch.ops.aten.select.int(slice_1, 0, 2)
    fill_ = torch.ops.aten.fill_.Scalar(select, 5.0)
    relu = torch.ops.aten.relu.default(slice_1)
    return (clone, relu)
)", false, false);
  std::string text = printed(*r.graph);
  EXPECT_NE(text.find("torch.ops.aten.fill.Scalar(select, 5.0)"), std::string::npos) << text;
  // As PyTorch's apply_update: the intermediate view is replayed from the base, then the inverses
  // are applied innermost first.
  EXPECT_NE(text.find("slice_2 = torch.ops.aten.slice.Tensor(clone, 1, 0, 3)"), std::string::npos) << text;
  EXPECT_NE(text.find("select_scatter.default(slice_2, fill, 0, 2)"), std::string::npos) << text;
  EXPECT_NE(text.find("slice_scatter.default(clone, select_scatter, 1, 0, 3)"), std::string::npos) << text;
  // The later read of slice_1 is replayed from the updated base.
  EXPECT_NE(text.find("slice.Tensor(slice_scatter, 1, 0, 3)"), std::string::npos) << text;
  EXPECT_FALSE(r.meta.inputs[0].mutates_data);
}

TEST(Functionalize, MetadataMutationBecomesView) {
  FunctionalizeResult r = run(R"(
def forward(self, x: "f32[2, 3]"):
    t_ = torch.ops.aten.t_.default(x)
    mul = torch.ops.aten.mul.Tensor(x, 2)
    return (mul,)
)", false, false);
  std::string text = printed(*r.graph);
  EXPECT_NE(text.find("t = torch.ops.aten.t.default(x)"), std::string::npos) << text;
  EXPECT_NE(text.find("mul = torch.ops.aten.mul.Tensor(t, 2)"), std::string::npos) << text;
  EXPECT_TRUE(r.meta.inputs[0].mutates_metadata);
  EXPECT_FALSE(r.meta.inputs[0].mutates_data);
  EXPECT_EQ(r.meta.mutated_inputs_returned, std::vector<int>{0});
}

TEST(Functionalize, OutputAliasKinds) {
  FunctionalizeResult r = run(R"(
def forward(self, x: "f32[2, 3]"):
    view = torch.ops.aten.view.default(x, [6])
    relu = torch.ops.aten.relu.default(x)
    return (x, view, relu, None)
)", false, false);
  ASSERT_EQ(r.meta.outputs.size(), 4u);
  EXPECT_EQ(r.meta.outputs[0].kind, OutputKind::kIsInput);
  EXPECT_EQ(r.meta.outputs[1].kind, OutputKind::kAliasOfInput);
  EXPECT_EQ(r.meta.outputs[1].input, 0);
  EXPECT_EQ(r.meta.outputs[2].kind, OutputKind::kFresh);
  EXPECT_EQ(r.meta.outputs[3].kind, OutputKind::kNone);
}

TEST(Functionalize, WriteThroughAViewWithoutInverseIsAnError) {
  // A write into an expanded view is rejected when the graph is built (overlapping memory); a
  // write through a view of an expand of a fresh tensor that does not overlap has no inverse.
  auto g = parse_graph(R"(
def forward(self, x: "f32[1, 3]"):
    clone = torch.ops.aten.clone.default(x)
    expand = torch.ops.aten.expand.default(clone, [1, 3])
    add_ = torch.ops.aten.add_.Tensor(expand, 1)
    return (clone,)
)", aten_ops());
  try {
    functionalize(*g);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("node 'add_'"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("expanded"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace aotgrad
