// torch.ops.higher_order.cond (Note [cond]): subgraph arguments in the IR, their text form (parse
// and print round trip, PyTorch's nested GraphModule classes), the verifier, and bad input.
#include <gtest/gtest.h>

#include <string>

#include "../graph_text.h"
#include "aotgrad/ir/graph.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

// make_fx's graph of `torch.cond(p, lambda x, y: (x.sin() + y,), lambda x, y: (x.cos() * y,),
// [x, y])` as PyTorch 2.x prints it (print_readable: the branches as nested GraphModule classes).
const std::string kCondText = read_text(AOTGRAD_TEST_DATA "/cond/sin_cos.fx");

std::string with(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

std::string parse_error(const std::string& text) {
  try {
    verify(*parse_graph(text, aten_ops()));
  } catch (const Error& e) {
    return "line " + std::to_string(e.loc().line) + ": " + e.message();
  }
  return "no error";
}

TEST(CondOp, TextRoundTrip) {
  std::unique_ptr<Graph> g = parse_graph(kCondText, aten_ops());
  verify(*g);
  EXPECT_EQ(print_graph(*g), kCondText);
  const Node* cond = g->find("cond");
  ASSERT_NE(cond, nullptr);
  EXPECT_EQ(cond->op()->name, kCond);
  ASSERT_EQ(cond->arg(1).kind, Arg::Kind::Graph);
  EXPECT_EQ(cond->arg(1).str, "true_graph_0");
  EXPECT_EQ(cond->arg(2).graph->find("mul")->op()->name, "aten::mul.Tensor");
  EXPECT_EQ(cond->meta().elems.size(), 1u);
  EXPECT_TRUE(cond->meta().is_list);
  // The subgraph is a closed function: the cond's uses are its arguments'.
  EXPECT_EQ(g->find("arg1_1")->users().size(), 1u);
  // A copy shares the (immutable) subgraphs and prints the same.
  std::unique_ptr<Graph> copy = g->clone();
  verify(*copy);
  EXPECT_EQ(print_graph(*copy), kCondText);
  EXPECT_EQ(copy->find("cond")->arg(1).graph, cond->arg(1).graph);
}

TEST(CondOp, TextWithoutHeaderOrAnnotations) {
  std::unique_ptr<Graph> g = parse_graph(kCondText, aten_ops());
  PrintOptions o;
  o.class_header = false;
  o.annotations = false;
  o.placeholder_annotations = true;
  std::string text = print_graph(*g, o);
  EXPECT_NE(text.find("\nclass true_graph_0(torch.nn.Module):\n    def forward(self, arg0_1: "),
            std::string::npos)
      << text;
  std::unique_ptr<Graph> back = parse_graph(text, aten_ops());
  verify(*back);
  EXPECT_EQ(print_graph(*back), kCondText);
}

TEST(CondOp, NestedCond) {
  // A cond inside a branch: its subgraphs nest one level deeper.
  const std::string inner = R"(class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "b8[][]cpu", arg1_1: "f32[4][1]cpu"):
        true_graph_0 = self.true_graph_0
        false_graph_0 = self.false_graph_0
        cond = torch.ops.higher_order.cond(arg0_1, true_graph_0, false_graph_0, [arg0_1, arg1_1]);  arg0_1 = true_graph_0 = false_graph_0 = arg1_1 = None
        getitem: "f32[4][1]cpu" = cond[0];  cond = None
        return (getitem,)

    class true_graph_0(torch.nn.Module):
        def forward(self, arg0_1: "b8[][]cpu", arg1_1: "f32[4][1]cpu"):
            true_graph_0 = self.true_graph_0
            false_graph_0 = self.false_graph_0
            cond = torch.ops.higher_order.cond(arg0_1, true_graph_0, false_graph_0, [arg1_1]);  arg0_1 = true_graph_0 = false_graph_0 = arg1_1 = None
            getitem: "f32[4][1]cpu" = cond[0];  cond = None
            return (getitem,)

        class true_graph_0(torch.nn.Module):
            def forward(self, arg0_1: "f32[4][1]cpu"):
                sin: "f32[4][1]cpu" = torch.ops.aten.sin.default(arg0_1);  arg0_1 = None
                return (sin,)

        class false_graph_0(torch.nn.Module):
            def forward(self, arg0_1: "f32[4][1]cpu"):
                cos: "f32[4][1]cpu" = torch.ops.aten.cos.default(arg0_1);  arg0_1 = None
                return (cos,)

    class false_graph_0(torch.nn.Module):
        def forward(self, arg0_1: "b8[][]cpu", arg1_1: "f32[4][1]cpu"):
            neg: "f32[4][1]cpu" = torch.ops.aten.neg.default(arg1_1);  arg1_1 = None
            return (neg,)
)";
  std::unique_ptr<Graph> g = parse_graph(inner, aten_ops());
  verify(*g);
  EXPECT_EQ(print_graph(*g), inner);
  const Graph& t = *g->find("cond")->arg(1).graph;
  EXPECT_EQ(t.find("cond")->arg(2).graph->find("cos")->op()->name, "aten::cos");
}

TEST(CondOp, BadInput) {
  // A float predicate.
  EXPECT_EQ(parse_error(
                with(kCondText, "arg0_1: \"b8[][]cpu\", arg1_1", "arg0_1: \"f32[][]cpu\", arg1_1")),
            "line 5: higher_order::cond: argument 'pred' must be a bool tensor with one element "
            "(torch.cond: Expected "
            "pred to be bool or single-element tensor), got f32[][]cpu");
  // A predicate of two elements.
  EXPECT_NE(
      parse_error(with(kCondText, "arg0_1: \"b8[][]cpu\", arg1_1", "arg0_1: \"b8[2]cpu\", arg1_1"))
          .find(
              "line 5: higher_order::cond: argument 'pred' must be a bool tensor with one element"),
      std::string::npos);
  // Branches whose outputs differ.
  std::string shapes = with(kCondText, "            return (mul,)",
                            "            sum_1: \"f32[][]cpu\" = torch.ops.aten.sum.default(mul)\n"
                            "            return (sum_1,)");
  EXPECT_EQ(parse_error(shapes),
            "line 5: higher_order::cond: true_fn and false_fn must return tensors of the same "
            "metadata, but output 0 "
            "is f32[4][1]cpu in true_graph_0 and f32[][]cpu in false_graph_0");
  std::string count = with(kCondText, "            return (mul,)", "            return (mul, cos)");
  count = with(count, "cos = arg1_1 = None", "arg1_1 = None");
  EXPECT_EQ(parse_error(count),
            "line 5: higher_order::cond: true_fn and false_fn must return the same number of "
            "tensors, but "
            "true_graph_0 returns 1 and false_graph_0 returns 2");
  // An unknown subgraph.
  EXPECT_EQ(parse_error(with(kCondText, "false_graph_0 = self.false_graph_0",
                             "false_graph_0 = self.false_graph_1")),
            "line 4: unknown subgraph 'false_graph_1' (no nested class "
            "false_graph_1(torch.nn.Module) defines it), or a tensor constant without a type "
            "annotation");
  // A subgraph class nobody uses.
  std::string unused = with(kCondText, "class false_graph_0", "class false_graph_7");
  unused = with(unused, "false_graph_0 = self.false_graph_0", "false_graph_0 = self.true_graph_0");
  EXPECT_EQ(parse_error(unused),
            "line 4: 'false_graph_0 = self.true_graph_0': a subgraph must be assigned to its own "
            "name");
  std::string extra = kCondText +
                      "\n    class spare_graph(torch.nn.Module):\n"
                      "        def forward(self, x: \"f32[4]\"):\n"
                      "            return (x,)\n";
  EXPECT_EQ(parse_error(extra),
            "line 21: subgraph class 'spare_graph' is not used: no 'self.spare_graph' attribute "
            "reads it");
  // Operands the branch does not take.
  EXPECT_EQ(parse_error(with(kCondText, "[arg1_1, arg2_1]", "[arg1_1]")),
            "line 5: higher_order::cond: subgraph true_graph_0 takes 2 inputs, but operands has 1");
  // A branch argument that is not a subgraph.
  EXPECT_NE(parse_error(with(kCondText, "arg0_1, true_graph_0, false_graph_0",
                             "arg0_1, arg1_1, false_graph_0"))
                .find("argument 'true_fn' must be a subgraph"),
            std::string::npos);
  // A subgraph used where a tensor goes.
  EXPECT_NE(parse_error(with(kCondText, "getitem: \"f32[4][1]cpu\" = cond[0];  cond = None",
                             "getitem: \"f32[4][1]cpu\" = cond[0];  cond = None\n"
                             "        neg = torch.ops.aten.neg.default(true_graph_0)"))
                .find("expected Tensor, got subgraph true_graph_0"),
            std::string::npos);
  // An error inside a subgraph names its line in the whole text.
  EXPECT_EQ(parse_error(with(kCondText, "torch.ops.aten.cos.default(arg0_1)",
                             "torch.ops.aten.cos.default(nope)")),
            "line 17: 'nope' used before it is defined");
  // A class at the top level beside the graph's.
  std::string second = kCondText + "class Other(torch.nn.Module):\n";
  EXPECT_NE(parse_error(second).find("line 20: unexpected 'class'"), std::string::npos);
}

TEST(CondOp, BranchesArePure) {
  std::string mutates =
      with(kCondText,
           "            sin: \"f32[4][1]cpu\" = torch.ops.aten.sin.default(arg0_1);  arg0_1 = None",
           "            sin: \"f32[4][1]cpu\" = torch.ops.aten.sin_.default(arg0_1)");
  EXPECT_NE(parse_error(mutates).find("subgraph true_graph_0 mutates its input 'arg0_1'"),
            std::string::npos)
      << parse_error(mutates);
  std::string aliases =
      with(kCondText, "            return (add,)", "            return (arg1_1,)");
  EXPECT_NE(parse_error(aliases).find("subgraph true_graph_0 returns its input 'arg1_1'"),
            std::string::npos)
      << parse_error(aliases);
}

TEST(CondOp, VerifierChecksSubgraphs) {
  std::unique_ptr<Graph> g = parse_graph(kCondText, aten_ops());
  Node* cond = g->find("cond");
  // Two different graphs under one attribute name.
  std::unique_ptr<Graph> other = cond->arg(2).graph->clone();
  cond->set_arg(2, Arg::of_graph("true_graph_0", std::move(other)));
  try {
    verify(*g);
    FAIL() << "verified";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("subgraph attribute 'true_graph_0' names two different "
                                         "graphs"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace aotgrad
