// FakeTrace: ops on fake tensors recorded below autograd, and a backward traced by applying a fake
// result's grad_fn (libtorch's own derivative formulas, the seed's §13.20 joint graph).
#include "aotgrad/providers/fake_tensor.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <cstdlib>
#include <sstream>
#include <thread>

#include "../graph_text.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/providers/aten_call.h"

namespace aotgrad {
namespace {

std::string body(const Graph& g) { return graph_text(g); }

Node* input(Graph& g, const std::string& name, std::vector<int64_t> sizes) {
  SymIntVector s(sizes.begin(), sizes.end());
  return g.add_placeholder(name, ValueMeta::of(make_tensor_meta(ScalarType::Float32, s)));
}

TEST(FakeTrace, RecordsOpsBelowAutogradWithoutComputing) {
  Graph g;
  Node* x = input(g, "x", {4, 8});
  Node* w = input(g, "w", {16, 8});
  Node* b = input(g, "b", {16});
  FakeTrace trace(g, {});
  at::Tensor fx = trace.fake(x), fw = trace.fake(w, true), fb = trace.fake(b, true);
  EXPECT_TRUE(FakeTrace::is_fake(fx));
  EXPECT_EQ(fw.sizes(), at::IntArrayRef({16, 8}));
  at::Tensor out = at::relu(at::linear(fx, fw, fb)).to(at::kDouble).sum();
  g.set_output(Arg::of_tuple({Arg(trace.node_of(out))}));
  verify(g);
  // linear and to(dtype) are CompositeImplicitAutograd: they arrive as make_fx records them.
  EXPECT_EQ(body(g),
            "def forward(self, x, w, b):\n"
            "t = torch.ops.aten.t.default(w)\n"
            "addmm = torch.ops.aten.addmm.default(b, x, t)\n"
            "relu = torch.ops.aten.relu.default(addmm)\n"
            "_to_copy = torch.ops.aten._to_copy.default(relu, dtype = torch.float64)\n"
            "sum_1 = torch.ops.aten.sum.default(_to_copy)\n"
            "return (sum_1,)\n");
  // Autograd ran on the fakes: the result has a grad_fn, its backward is recorded too.
  ASSERT_TRUE(out.requires_grad());
  Node* before = g.output()->prev();
  auto grads = torch::autograd::grad({out}, {fw, fb});
  std::string ops;
  for (Node* n = before->next(); n != g.output(); n = n->next())
    if (n->kind() == NodeKind::Call) ops += n->op()->base_name + " ";
  // §13.20's backward: the tangent expanded, cast back, threshold_backward, the weight's mm and
  // the bias's sum, t's backward a t.
  EXPECT_EQ(ops, "ones_like expand _to_copy threshold_backward t mm t sum view t ") << ops;
  EXPECT_NE(trace.node_of(grads[0]), nullptr);
  EXPECT_NE(trace.node_of(grads[1]), nullptr);
}

// A capture after training: the process's first backward is a real CPU one, before any trace has
// registered the fake device, and a backward of fakes still runs (libtorch's autograd engine
// sizes its device queues at its first backward; Note in FakeTrace's constructor). The death
// test's child is a fresh process running only this test, so its first backward is the real one.
TEST(FakeTraceDeathTest, CapturesAfterARealBackward) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        at::Tensor a = at::randn({3, 4}).requires_grad_(true);
        torch::autograd::grad({(a * a).sum()}, {a});
        Graph g;
        Node* w = input(g, "w", {3, 4});
        FakeTrace trace(g, {});
        at::Tensor fw = trace.fake(w, true);
        auto grads = torch::autograd::grad({(fw * fw).sum()}, {fw});
        std::exit(trace.node_of(grads[0]) ? 0 : 3);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(FakeTrace, InPlaceOpsRebindAndViewsAreRecorded) {
  Graph g;
  Node* x = input(g, "x", {2, 4});
  FakeTrace trace(g, {});
  at::Tensor fx = trace.fake(x);
  fx.add_(1);
  at::Tensor v = fx.view({4, 2});
  v.mul_(2);
  // What autograd would save of fx (a shallow copy, another TensorImpl) stands for the same node.
  at::Tensor alias = fx.variable_data();
  EXPECT_EQ(trace.node_of(alias), trace.node_of(fx));
  g.set_output(Arg::of_tuple({Arg(trace.node_of(fx.sum())), Arg(trace.node_of(v))}));
  EXPECT_EQ(body(g),
            "def forward(self, x):\n"
            "add_ = torch.ops.aten.add_.Scalar(x, 1)\n"
            "view = torch.ops.aten.view.default(add_, [4, 2])\n"
            "mul_ = torch.ops.aten.mul_.Scalar(view, 2)\n"
            "sum_1 = torch.ops.aten.sum.default(add_)\n"
            "return (sum_1, mul_)\n");
}

TEST(FakeTrace, RealTensorsGoToTheCallerAndWrappedNumbersAreNumbers) {
  Graph g;
  Node* x = input(g, "x", {3});
  std::vector<std::string> seen;
  FakeTrace::Options o;
  o.on_real_tensor = [&](const at::Tensor& t, const std::string& where) -> Arg {
    seen.push_back(where);
    Node* c = g.add_placeholder("c", ValueMeta::of(tensor_meta_of(t)));
    return Arg(c);
  };
  FakeTrace trace(g, o);
  at::Tensor fx = trace.fake(x);
  at::Tensor c = at::arange(3, at::kFloat);
  at::Tensor out = (fx * 2.5 + c).clamp_min(0);
  g.set_output(Arg::of_tuple({Arg(trace.node_of(out))}));
  EXPECT_EQ(seen, std::vector<std::string>{"aten::add.Tensor argument 'other'"});
  EXPECT_EQ(body(g),
            "def forward(self, x, c):\n"
            "mul = torch.ops.aten.mul.Scalar(x, 2.5)\n"
            "add = torch.ops.aten.add.Tensor(mul, c)\n"
            "clamp_min = torch.ops.aten.clamp_min.default(add, 0)\n"
            "return (clamp_min,)\n");
}

TEST(FakeTrace, ErrorsNameTheOp) {
  Graph g;
  Node* x = input(g, "x", {3});
  at::Tensor escaped;
  {
    FakeTrace trace(g, {});
    at::Tensor fx = trace.fake(x);
    EXPECT_THROW(FakeTrace(g, {}), Error);  // a second trace on the same thread
    try {
      (void)fx.sum().item<float>();
      FAIL() << "expected an Error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("aten::_local_scalar_dense"), std::string::npos)
          << e.what();
    }
    try {
      (void)(fx + at::ones({3}));
      FAIL() << "expected an Error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("neither an input"), std::string::npos) << e.what();
    }
    escaped = fx;
  }
  try {
    (void)escaped.neg();
    FAIL() << "expected an Error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("outside of a trace"), std::string::npos) << e.what();
  }
}

TEST(FakeTrace, OneTraceAtATimeAcrossThreads) {
  // A trace on another thread waits for this one to end, then records into its own graph.
  Graph g1, g2;
  Node* x1 = input(g1, "x", {2});
  Node* x2 = input(g2, "y", {2});
  std::thread other;
  {
    FakeTrace t1(g1, {});
    other = std::thread([&] {
      FakeTrace t2(g2, {});
      g2.set_output(Arg::of_tuple({Arg(t2.node_of(t2.fake(x2).exp()))}));
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    g1.set_output(Arg::of_tuple({Arg(t1.node_of(t1.fake(x1).neg()))}));
  }
  other.join();
  EXPECT_EQ(body(g1),
            "def forward(self, x):\nneg = torch.ops.aten.neg.default(x)\nreturn (neg,)\n");
  EXPECT_EQ(body(g2),
            "def forward(self, y):\nexp = torch.ops.aten.exp.default(y)\nreturn (exp,)\n");
}

}  // namespace
}  // namespace aotgrad
