// aotgrad::cond (torch.cond, §13.36): eager, captured into a higher-order call with one subgraph
// per branch (the graph PyTorch's make_fx traces), compiled values of both branches against eager
// libtorch, and bad input.
#include "aotgrad/frontend/cond.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "../error_of.h"
#include "aotgrad/aotgrad.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/transforms/autograd.h"

namespace aotgrad {
namespace {

using Tensors = std::vector<at::Tensor>;

Tensors true_branch(const Tensors& a) { return {a[0].sin() + a[1]}; }
Tensors false_branch(const Tensors& a) { return {a[0].cos() * a[1]}; }

// f(p, x, y) = cond(p, sin(x) + y, cos(x) * y) * 2
Tensors fn(const Tensors& a) {
  return {cond(a[0], true_branch, false_branch, {a[1], a[2]})[0] * 2};
}

Tensors eager(const Tensors& a) {
  return {(a[0].item<bool>() ? true_branch({a[1], a[2]}) : false_branch({a[1], a[2]}))[0] * 2};
}

Tensors inputs(bool p, at::ScalarType dtype = at::kFloat) {
  return {at::scalar_tensor(p, at::kBool), at::randn({4}, dtype), at::randn({4}, dtype)};
}

TEST(Cond, EagerRunsTheSelectedBranch) {
  for (bool p : {true, false}) {
    Tensors in = inputs(p);
    EXPECT_TRUE(at::allclose(fn(in)[0], eager(in)[0]));
  }
  EXPECT_NE(error_of([] {
              fn({at::tensor(1.0f), at::randn({4}), at::randn({4})});
            }).find("cond: pred must be a bool tensor with one element"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              fn({at::ones({2}, at::kBool), at::randn({4}), at::randn({4})});
            }).find("cond: pred must be a bool tensor with one element"),
            std::string::npos);
}

TEST(Cond, CaptureRecordsOneCallWithASubgraphPerBranch) {
  std::unique_ptr<Graph> g = capture(fn, inputs(true));
  verify(*g);
  PrintOptions o;
  o.annotations = false;
  std::string text = print_graph(*g, o);
  // make_fx's graph of torch.cond (PyTorch 2.x): get_attr per branch, the cond, its getitem.
  EXPECT_EQ(text, R"(class GraphModule(torch.nn.Module):
    def forward(self, arg0_1, arg1_1, arg2_1):
        true_graph_0 = self.true_graph_0
        false_graph_0 = self.false_graph_0
        cond = torch.ops.higher_order.cond(arg0_1, true_graph_0, false_graph_0, [arg1_1, arg2_1]);  arg0_1 = true_graph_0 = false_graph_0 = arg1_1 = arg2_1 = None
        getitem = cond[0];  cond = None
        mul = torch.ops.aten.mul.Scalar(getitem, 2);  getitem = None
        return (mul,)

    class true_graph_0(torch.nn.Module):
        def forward(self, arg0_1, arg1_1):
            sin = torch.ops.aten.sin.default(arg0_1);  arg0_1 = None
            add = torch.ops.aten.add.Tensor(sin, arg1_1);  sin = arg1_1 = None
            return (add,)

    class false_graph_0(torch.nn.Module):
        def forward(self, arg0_1, arg1_1):
            cos = torch.ops.aten.cos.default(arg0_1);  arg0_1 = None
            mul = torch.ops.aten.mul.Tensor(cos, arg1_1);  cos = arg1_1 = None
            return (mul,)
)");
  // The annotated text parses back to the same graph.
  std::string full = print_graph(*g);
  std::unique_ptr<Graph> back = parse_graph(full, aten_ops());
  verify(*back);
  EXPECT_EQ(print_graph(*back), full);
}

TEST(Cond, FreeVariablesBecomeOperands) {
  // The true branch reads z (an input it does not take): both branches take it as an operand.
  TensorFunction f = [](const Tensors& a) -> Tensors {
    at::Tensor z = a[2];
    return cond(
        a[0], [z](const Tensors& b) -> Tensors { return {b[0] * z}; },
        [](const Tensors& b) -> Tensors { return {b[0].neg()}; }, {a[1]});
  };
  std::unique_ptr<Graph> g = capture(f, inputs(true));
  verify(*g);
  const Node* c = g->find("cond");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(arg_to_string(c->arg(3)), "[arg1_1, arg2_1]");
  EXPECT_EQ(c->arg(2).graph->placeholders().size(), 2u);
  for (bool p : {true, false}) {
    Tensors in = inputs(p);
    c10::NoGradGuard no_grad;
    Tensors got = aot_function(f)(in);
    at::Tensor want = p ? in[1] * in[2] : in[1].neg();
    EXPECT_TRUE(at::allclose(got[0], want));
  }
}

TEST(Cond, CompiledValuesOfBothBranches) {
  AOTFunction compiled = aot_function(fn);
  for (bool p : {true, false}) {
    Tensors in = inputs(p);
    c10::NoGradGuard no_grad;
    Tensors got = compiled(in);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_TRUE(at::allclose(got[0], eager(in)[0])) << "pred " << p;
  }
  // One compilation serves both branches: pred is data, not part of the signature.
  EXPECT_EQ(compiled.num_compilations(), 1u);
}

// Gradients of x and y through cond, compiled (both partitioners) against eager libtorch's, and
// eager's against central finite differences, in float64.
TEST(Cond, TrainingGradsOfBothBranches) {
  for (PartitionKind partition : {PartitionKind::kMinCut, PartitionKind::kDefault}) {
    AOTConfig config;
    config.partition = partition;
    AOTFunction compiled = aot_function(fn, config);
    for (bool p : {true, false}) {
      Tensors in = inputs(p, at::kDouble);
      in[1].requires_grad_();
      in[2].requires_grad_();
      Tensors got = compiled(in);
      ASSERT_TRUE(compiled.trains(in).value_or(false));
      ASSERT_TRUE(got[0].requires_grad()) << "pred " << p;
      at::Tensor w = at::randn({4}, at::kDouble);
      Tensors grads = torch::autograd::grad({(got[0] * w).sum()}, {in[1], in[2]}, {},
                                            /*retain_graph=*/c10::nullopt, false,
                                            /*allow_unused=*/true);
      ASSERT_TRUE(grads[0].defined() && grads[1].defined()) << "pred " << p;
      Tensors ref_in = {in[0], in[1].detach().requires_grad_(), in[2].detach().requires_grad_()};
      at::Tensor want = eager(ref_in)[0];
      EXPECT_TRUE(at::allclose(got[0], want)) << "pred " << p;
      Tensors ref = torch::autograd::grad({(want * w).sum()}, {ref_in[1], ref_in[2]});
      for (size_t k = 0; k < 2; ++k) {
        EXPECT_TRUE(at::allclose(grads[k], ref[k])) << "pred " << p << " grad " << k;
        // Finite differences of sum(f * w) along each coordinate.
        c10::NoGradGuard no_grad;
        at::Tensor fd = at::zeros({4}, at::kDouble);
        for (int64_t i = 0; i < 4; ++i) {
          Tensors plus = {in[0], in[1].detach().clone(), in[2].detach().clone()};
          Tensors minus = {in[0], in[1].detach().clone(), in[2].detach().clone()};
          plus[1 + k][i] += 1e-6;
          minus[1 + k][i] -= 1e-6;
          fd[i] = ((eager(plus)[0] - eager(minus)[0]) * w).sum() / 2e-6;
        }
        EXPECT_TRUE(at::allclose(grads[k], fd, 1e-5, 1e-7)) << "pred " << p << " grad " << k;
      }
    }
  }
}

TEST(Cond, JointGraphBackwardIsACondOverTheBranchesBackward) {
  Tensors in = inputs(true);
  in[1].requires_grad_();
  std::unique_ptr<Graph> fw = capture(fn, in);
  JointGraph jg = build_joint(*fw, {false, true, false});
  verify(*jg.graph);
  PrintOptions o;
  o.annotations = false;
  o.placeholder_annotations = true;
  std::string text = print_graph(*jg.graph, o);
  // The backward cond takes pred, the operands and the gradient of the result, and its branches
  // the backward graphs of sin(x) + y and cos(x) * y with respect to x.
  EXPECT_NE(text.find("cond_1 = torch.ops.higher_order.cond(primals_1, true_graph_1, "
                      "false_graph_1, [primals_2, primals_3, mul_1])"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("class true_graph_1(torch.nn.Module):"), std::string::npos) << text;
  EXPECT_NE(text.find("torch.ops.aten.cos.default(arg0_1)"), std::string::npos) << text;
  EXPECT_NE(text.find("torch.ops.aten.sin.default(arg0_1)"), std::string::npos) << text;
  std::unique_ptr<Graph> back = parse_graph(text, aten_ops());
  verify(*back);
  EXPECT_EQ(print_graph(*back, o), text);
}

int count_conds(const Graph& g) {
  int n = 0;
  for (const Node* node : g.nodes())
    n += node->kind() == NodeKind::Call && node->op()->name == kCond;
  return n;
}

// The partition: the forward runs the forward cond, the backward the backward cond only (the
// min-cut never recomputes a cond), reading pred and the operands the forward saves.
TEST(Cond, PartitionRunsEachCondOnce) {
  Tensors in = inputs(true, at::kDouble);
  in[1].requires_grad_();
  in[2].requires_grad_();
  for (PartitionKind partition : {PartitionKind::kMinCut, PartitionKind::kDefault}) {
    AOTConfig config;
    config.partition = partition;
    ExportedGraphs e = aot_export(fn, in, /*trace_joint=*/true, config);
    EXPECT_EQ(count_conds(*e.fw), 1);
    EXPECT_EQ(count_conds(*e.bw), 1);
    const Node* bw = nullptr;
    for (const Node* n : e.bw->nodes())
      if (n->kind() == NodeKind::Call && n->op()->name == kCond) bw = n;
    ASSERT_NE(bw, nullptr);
    EXPECT_EQ(bw->arg(1).str, "true_graph_1");
    // d(sin(x) + y) = (cos(x), 1); d(cos(x) * y) = (-sin(x) * y, cos(x)).
    EXPECT_NE(bw->arg(1).graph->find("cos"), nullptr);
    EXPECT_NE(bw->arg(2).graph->find("sin"), nullptr);
    EXPECT_EQ(bw->arg(3).list.size(), 3u);  // x, y and the result's gradient
    for (const std::string& name : {"primals_1", "primals_2", "primals_3"})
      EXPECT_NE(std::find(e.saved.begin(), e.saved.end(), name), e.saved.end()) << name;
  }
}

TEST(Cond, BadBranches) {
  Tensors in = inputs(true);
  // Outputs of different sizes.
  TensorFunction sizes = [](const Tensors& a) -> Tensors {
    return cond(
        a[0], [](const Tensors& b) -> Tensors { return {b[0] + 1}; },
        [](const Tensors& b) -> Tensors { return {b[0].sum()}; }, {a[1]});
  };
  EXPECT_NE(error_of([&] { capture(sizes, in); })
                .find("true_fn and false_fn must return tensors of the same metadata, but output 0 "
                      "is f32[4][1]cpu in true_graph_0 and f32[][]cpu in false_graph_0"),
            std::string::npos)
      << error_of([&] { capture(sizes, in); });
  // A different number of outputs.
  TensorFunction count = [](const Tensors& a) -> Tensors {
    return cond(
        a[0],
        [](const Tensors& b) -> Tensors {
          return {b[0] + 1, b[0] - 1};
        },
        [](const Tensors& b) -> Tensors { return {b[0] * 2}; }, {a[1]});
  };
  EXPECT_NE(error_of([&] {
              capture(count, in);
            }).find("true_graph_0 returns 2 and false_graph_0 returns 1"),
            std::string::npos)
      << error_of([&] { capture(count, in); });
  // A branch that writes its operand.
  TensorFunction mutates = [](const Tensors& a) -> Tensors {
    return cond(
        a[0], [](const Tensors& b) -> Tensors { return {b[0].add_(1) * 1}; },
        [](const Tensors& b) -> Tensors { return {b[0] * 2}; }, {a[1]});
  };
  EXPECT_NE(error_of([&] { capture(mutates, in); })
                .find("true_fn mutates operand 0: One of torch.cond branch might be modifying the "
                      "input!"),
            std::string::npos)
      << error_of([&] { capture(mutates, in); });
  // A float predicate under capture.
  EXPECT_NE(error_of([&] {
              capture(fn, {at::tensor(1.0f), in[1], in[2]});
            }).find("cond: pred must be a bool tensor with one element"),
            std::string::npos);
}

}  // namespace
}  // namespace aotgrad
