// Tests for libtorch capture: C++ functions run on fake tensors and recorded below autograd (the
// graphs are the ones PyTorch 1.13's make_fx prints for the same Python code), with in-place ops
// and views as written, run by the Interpreter and by CompiledGraph against the function run
// eagerly.
#include "aotgrad/frontend/capture.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "../graph_text.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/runtime/compiled_graph.h"
#include "aotgrad/runtime/interpreter.h"

namespace aotgrad {
namespace {

/// The graph's body without annotations, release statements or indentation.
std::string body(const Graph& g) { return graph_text(g); }

std::vector<c10::IValue> ivalues(const std::vector<at::Tensor>& ts) {
  return std::vector<c10::IValue>(ts.begin(), ts.end());
}

void expect_same(const at::Tensor& got, const at::Tensor& want, const std::string& what) {
  ASSERT_EQ(got.scalar_type(), want.scalar_type()) << what;
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  EXPECT_TRUE(at::allclose(got, want, 1e-5, 1e-6)) << what << "\n" << got << "\n" << want;
}

/// Runs `fn` eagerly, the captured graph with the Interpreter and with CompiledGraph, each on its
/// own copy of `inputs`, and compares the results and the inputs afterwards (mutations).
void check_against_eager(const TensorFunction& fn, const std::vector<at::Tensor>& inputs,
                         const Graph& captured) {
  std::shared_ptr<const Graph> graph = captured.clone();
  std::vector<at::Tensor> eager_in = copy_example_inputs(inputs);
  std::vector<at::Tensor> want;
  {
    c10::NoGradGuard no_grad;
    want = fn(eager_in);
  }
  std::vector<at::Tensor> interp_in = copy_example_inputs(inputs);
  std::vector<c10::IValue> interp_out = Interpreter(graph).run(ivalues(interp_in));
  std::vector<at::Tensor> compiled_in = copy_example_inputs(inputs);
  CompiledGraph compiled(graph);
  std::vector<c10::IValue> compiled_out = compiled(ivalues(compiled_in));
  ASSERT_EQ(interp_out.size(), want.size());
  ASSERT_EQ(compiled_out.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    expect_same(interp_out[i].toTensor(), want[i], "interpreter output " + std::to_string(i));
    expect_same(compiled_out[i].toTensor(), want[i], "compiled output " + std::to_string(i));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    expect_same(interp_in[i], eager_in[i], "interpreter input " + std::to_string(i));
    expect_same(compiled_in[i], eager_in[i], "compiled input " + std::to_string(i));
  }
}

TEST(Capture, MlpWithLinearAndRelu) {
  TensorFunction mlp = [](const std::vector<at::Tensor>& a) -> std::vector<at::Tensor> {
    at::Tensor h = at::relu(at::linear(a[0], a[1], a[2]));
    return {at::linear(h, a[3], a[4])};
  };
  std::vector<at::Tensor> in = {at::randn({4, 8}), at::randn({16, 8}), at::randn({16}),
                                at::randn({3, 16}), at::randn({3})};
  auto g = capture(mlp, in);
  verify(*g);
  // linear is CompositeImplicitAutograd: it arrives as t and addmm.
  EXPECT_EQ(body(*g),
            "def forward(self, arg0_1, arg1_1, arg2_1, arg3_1, arg4_1):\n"
            "t = torch.ops.aten.t.default(arg1_1)\n"
            "addmm = torch.ops.aten.addmm.default(arg2_1, arg0_1, t)\n"
            "relu = torch.ops.aten.relu.default(addmm)\n"
            "t_1 = torch.ops.aten.t.default(arg3_1)\n"
            "addmm_1 = torch.ops.aten.addmm.default(arg4_1, relu, t_1)\n"
            "return (addmm_1,)\n");
  EXPECT_EQ(g->find("addmm_1")->tensor_meta().annotation(), "f32[4, 3][3, 1]cpu");
  check_against_eager(mlp, in, *g);
}

TEST(Capture, InputNamesAndRequiresGrad) {
  TensorFunction f = [](const std::vector<at::Tensor>& a) -> std::vector<at::Tensor> {
    return {a[0].mul(a[1])};
  };
  CaptureOptions opts;
  opts.input_names = {"x", "w"};
  std::vector<at::Tensor> in = {at::randn({2, 3}), at::randn({3}).requires_grad_()};
  auto g = capture(f, in, opts);
  EXPECT_EQ(body(*g),
            "def forward(self, x, w):\n"
            "mul = torch.ops.aten.mul.Tensor(x, w)\n"
            "return (mul,)\n");
  EXPECT_FALSE(g->find("x")->tensor_meta().requires_grad);
  EXPECT_TRUE(g->find("w")->tensor_meta().requires_grad);
  opts.input_names = {"x"};
  EXPECT_THROW(capture(f, in, opts), Error);
}

TEST(Capture, AttentionWithMatmulSoftmaxTransposeView) {
  TensorFunction attn = [](const std::vector<at::Tensor>& a) -> std::vector<at::Tensor> {
    at::Tensor scores = at::matmul(a[0], a[1].transpose(-2, -1)) / std::sqrt(8.0);
    at::Tensor p = at::softmax(scores, -1);
    return {at::matmul(p, a[2]).view({2, 32})};
  };
  std::vector<at::Tensor> in = {at::randn({2, 4, 8}), at::randn({2, 4, 8}), at::randn({2, 4, 8})};
  auto g = capture(attn, in);
  verify(*g);
  // matmul and softmax decompose as make_fx shows them (C++'s tensor / double is div.Scalar).
  // libtorch's reshape views a contiguous tensor with view and keeps _reshape_alias for the
  // others.
  EXPECT_EQ(body(*g),
            "def forward(self, arg0_1, arg1_1, arg2_1):\n"
            "transpose = torch.ops.aten.transpose.int(arg1_1, -2, -1)\n"
            "expand = torch.ops.aten.expand.default(arg0_1, [2, 4, 8])\n"
            "view = torch.ops.aten.view.default(expand, [2, 4, 8])\n"
            "expand_1 = torch.ops.aten.expand.default(transpose, [2, 8, 4])\n"
            "_reshape_alias = torch.ops.aten._reshape_alias.default(expand_1, [2, 8, 4], "
            "[32, 1, 8])\n"
            "bmm = torch.ops.aten.bmm.default(view, _reshape_alias)\n"
            "_unsafe_view = torch.ops.aten._unsafe_view.default(bmm, [2, 4, 4])\n"
            "div = torch.ops.aten.div.Scalar(_unsafe_view, 2.8284271247461903)\n"
            "_softmax = torch.ops.aten._softmax.default(div, -1, False)\n"
            "expand_2 = torch.ops.aten.expand.default(_softmax, [2, 4, 4])\n"
            "view_1 = torch.ops.aten.view.default(expand_2, [2, 4, 4])\n"
            "expand_3 = torch.ops.aten.expand.default(arg2_1, [2, 4, 8])\n"
            "view_2 = torch.ops.aten.view.default(expand_3, [2, 4, 8])\n"
            "bmm_1 = torch.ops.aten.bmm.default(view_1, view_2)\n"
            "_unsafe_view_1 = torch.ops.aten._unsafe_view.default(bmm_1, [2, 4, 8])\n"
            "view_3 = torch.ops.aten.view.default(_unsafe_view_1, [2, 32])\n"
            "return (view_3,)\n");
  check_against_eager(attn, in, *g);
}

TEST(Capture, InPlaceOpsAndViewsStayAsWritten) {
  TensorFunction f = [](const std::vector<at::Tensor>& a) -> std::vector<at::Tensor> {
    at::Tensor x = a[0];
    x.add_(1);
    at::Tensor y = x.view({4, 2});
    y.mul_(2);
    return {x.sum(), y};
  };
  std::vector<at::Tensor> in = {at::randn({2, 4})};
  at::Tensor before = in[0].clone();
  auto g = capture(f, in);
  verify(*g);
  EXPECT_EQ(body(*g),
            "def forward(self, arg0_1):\n"
            "add_ = torch.ops.aten.add_.Scalar(arg0_1, 1)\n"
            "view = torch.ops.aten.view.default(add_, [4, 2])\n"
            "mul_ = torch.ops.aten.mul_.Scalar(view, 2)\n"
            "sum_1 = torch.ops.aten.sum.default(add_)\n"
            "return (sum_1, mul_)\n");
  // The capture ran the function on fake tensors: the input was neither read nor written.
  EXPECT_TRUE(at::equal(in[0], before));
  check_against_eager(f, in, *g);
}

// A value computed under torch.no_grad is read through a detach where grad mode is on again, and
// returned as one (see Note [Values made under no_grad]); a read inside the region is not.
TEST(Capture, NoGradValuesAreReadThroughDetach) {
  TensorFunction f = [](const std::vector<at::Tensor>& a) -> std::vector<at::Tensor> {
    at::Tensor s;
    {
      c10::NoGradGuard no_grad;
      s = a[0].exp();
      s = s * 2;
    }
    return {a[0] * s, s};
  };
  std::vector<at::Tensor> in = {at::randn({3}).requires_grad_()};
  auto g = capture(f, in);
  verify(*g);
  EXPECT_EQ(body(*g),
            "def forward(self, arg0_1):\n"
            "exp = torch.ops.aten.exp.default(arg0_1)\n"
            "mul = torch.ops.aten.mul.Scalar(exp, 2)\n"
            "detach = torch.ops.aten.detach.default(mul)\n"
            "mul_1 = torch.ops.aten.mul.Tensor(arg0_1, detach)\n"
            "detach_1 = torch.ops.aten.detach.default(mul)\n"
            "return (mul_1, detach_1)\n");
  check_against_eager(f, in, *g);
}

TEST(Capture, BatchNormInTrainingUpdatesRunningStats) {
  TensorFunction bn = [](const std::vector<at::Tensor>& a) -> std::vector<at::Tensor> {
    return {at::relu(at::batch_norm(a[0], a[1], a[2], a[3], a[4], /*training=*/true,
                                    /*momentum=*/0.1, /*eps=*/1e-5, /*cudnn_enabled=*/false))};
  };
  std::vector<at::Tensor> in = {at::randn({4, 3, 5, 5}), at::randn({3}), at::randn({3}),
                                at::randn({3}), at::rand({3}) + 0.5};
  auto g = capture(bn, in, {{"x", "weight", "bias", "running_mean", "running_var"}});
  verify(*g);
  // As make_fx records batch_norm, with _batch_norm_impl_index's empty reserve buffer.
  EXPECT_EQ(body(*g),
            "def forward(self, x, weight, bias, running_mean, running_var):\n"
            "empty = torch.ops.aten.empty.memory_format([0], dtype = torch.uint8, layout = "
            "torch.strided, device = device(type='cpu'))\n"
            "native_batch_norm = torch.ops.aten.native_batch_norm.default(x, weight, bias, "
            "running_mean, running_var, True, 0.1, 1e-05)\n"
            "getitem = native_batch_norm[0]\n"
            "getitem_1 = native_batch_norm[1]\n"
            "getitem_2 = native_batch_norm[2]\n"
            "relu = torch.ops.aten.relu.default(getitem)\n"
            "return (relu,)\n");
  check_against_eager(bn, in, *g);
}

// §13.21: a model bigger than memory is traced with its parameters on the meta device. The graph
// is the one its real parameters give, but for the device. (libtorch 1.13's Module::to cannot move
// a module to the meta device, so the model's tensors are made there.)
TEST(Capture, MetaDeviceParametersGiveTheSameGraph) {
  auto graph_of = [](at::Device device) {
    auto o = at::TensorOptions().device(device);
    // conv weight and bias, batch norm weight, bias, running mean and var, linear weight and bias.
    std::vector<at::Tensor> state = {at::empty({4, 3, 3, 3}, o),
                                     at::empty({4}, o),
                                     at::empty({4}, o),
                                     at::empty({4}, o),
                                     at::zeros({4}, o),
                                     at::ones({4}, o),
                                     at::empty({5, 4 * 6 * 6}, o),
                                     at::empty({5}, o)};
    std::vector<at::Tensor> in = state;
    in.push_back(at::empty({2, 3, 6, 6}, o));
    TensorFunction net = [](const std::vector<at::Tensor>& a) -> std::vector<at::Tensor> {
      at::Tensor h = at::conv2d(a[0], a[1], a[2], 1, 1);
      h = at::relu(at::batch_norm(h, a[3], a[4], a[5], a[6], /*training=*/true, 0.1, 1e-5,
                                  /*cudnn_enabled=*/false));
      return {at::log_softmax(at::linear(h.flatten(1), a[7], a[8]), 1).sum().unsqueeze(0)};
    };
    TensorFunction fn = [net](const std::vector<at::Tensor>& a) {
      std::vector<at::Tensor> b(a.end() - 1, a.end());
      b.insert(b.end(), a.begin(), a.end() - 1);
      return net(b);
    };
    return capture(fn, in);
  };
  auto real = graph_of(at::kCPU);
  auto meta = graph_of(at::kMeta);
  verify(*meta);
  std::string want = print_graph(*real), got = print_graph(*meta);
  EXPECT_NE(got.find("]meta"), std::string::npos) << got;
  for (auto [from, to] : {std::pair<std::string, std::string>{"]meta", "]cpu"},
                          {"device(type='meta')", "device(type='cpu')"}})
    for (size_t at = got.find(from); at != std::string::npos; at = got.find(from, at))
      got.replace(at, from.size(), to);
  EXPECT_EQ(got, want);
  EXPECT_NE(want.find("native_batch_norm"), std::string::npos) << want;
  EXPECT_NE(want.find("convolution"), std::string::npos) << want;
}

TEST(Capture, MultiResultOpsBecomeGetitems) {
  TensorFunction f = [](const std::vector<at::Tensor>& a) -> std::vector<at::Tensor> {
    auto [values, indices] = a[0].max(1);
    std::vector<at::Tensor> parts = a[0].split(2, 0);
    return {values, indices, parts[1]};
  };
  std::vector<at::Tensor> in = {at::randn({4, 5})};
  auto g = capture(f, in);
  verify(*g);
  EXPECT_EQ(body(*g),
            "def forward(self, arg0_1):\n"
            "max_1 = torch.ops.aten.max.dim(arg0_1, 1)\n"
            "getitem = max_1[0]\n"
            "getitem_1 = max_1[1]\n"
            "split = torch.ops.aten.split.Tensor(arg0_1, 2)\n"
            "getitem_2 = split[0]\n"
            "getitem_3 = split[1]\n"
            "return (getitem, getitem_1, getitem_3)\n");
  check_against_eager(f, in, *g);
}

TEST(Capture, SameTensorTwiceAndAliasedInputs) {
  TensorFunction f = [](const std::vector<at::Tensor>& a) -> std::vector<at::Tensor> {
    a[0].mul_(3);
    return {a[0] + a[1]};
  };
  at::Tensor x = at::randn({6});
  // Same tensor twice: the trace maps both inputs to the last placeholder, and CompiledGraph
  // dedupes them, as eager sees one tensor.
  auto g = capture(f, copy_example_inputs({x, x}));
  check_against_eager(f, {x, x}, *g);
  // Overlapping views of one base.
  at::Tensor base = at::randn({8});
  std::vector<at::Tensor> views = {base.slice(0, 0, 6), base.slice(0, 2, 8)};
  std::vector<at::Tensor> copies = copy_example_inputs(views);
  EXPECT_TRUE(copies[0].storage().is_alias_of(copies[1].storage()));
  EXPECT_FALSE(copies[0].storage().is_alias_of(base.storage()));
  EXPECT_EQ(copies[1].storage_offset() - copies[0].storage_offset(), 2);
  auto g2 = capture(f, copy_example_inputs(views));
  check_against_eager(f, views, *g2);
}

TEST(Capture, ErrorsNameTheCause) {
  auto message = [](const TensorFunction& f, const std::vector<at::Tensor>& in) -> std::string {
    try {
      capture(f, in);
    } catch (const Error& e) {
      return e.message();
    }
    return "no error";
  };
  std::string data_dependent = message(
      [](const std::vector<at::Tensor>& a) -> std::vector<at::Tensor> {
        return {a[0] * a[0].sum().item<float>()};
      },
      {at::randn({3})});
  EXPECT_NE(data_dependent.find("aten::_local_scalar_dense"), std::string::npos) << data_dependent;
  EXPECT_NE(data_dependent.find("data_dependent_output"), std::string::npos) << data_dependent;

  at::Tensor captured = at::randn({3});
  std::string constant = message(
      [&](const std::vector<at::Tensor>& a) -> std::vector<at::Tensor> {
        return {a[0] + captured};
      },
      {at::randn({3})});
  EXPECT_NE(constant.find("neither an input of the function nor made from one"), std::string::npos)
      << constant;

  std::string failing = message(
      [](const std::vector<at::Tensor>& a) -> std::vector<at::Tensor> {
        return {at::mm(a[0], a[0])};
      },
      {at::randn({2, 3})});
  EXPECT_NE(failing.find("aten::mm"), std::string::npos) << failing;
  EXPECT_NE(failing.find("mat1 and mat2 shapes cannot be multiplied"), std::string::npos)
      << failing;

  std::string undefined = message(
      [](const std::vector<at::Tensor>&) -> std::vector<at::Tensor> { return {at::Tensor()}; },
      {at::randn({2})});
  EXPECT_NE(undefined.find("undefined tensor"), std::string::npos) << undefined;
  // A failed capture leaves no trace behind: the next one records from scratch.
  auto g = capture(
      [](const std::vector<at::Tensor>& a) -> std::vector<at::Tensor> { return {a[0].neg()}; },
      {at::randn({2})});
  EXPECT_EQ(g->size(), 3u);
}

}  // namespace
}  // namespace aotgrad
