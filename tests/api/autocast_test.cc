// Tests for autocast (§13.17): a capture under CPU bf16 autocast records autocast's casts as
// _to_copy nodes, the partition saves the low-precision copies and the backward casts back, the
// autocast state is part of the input signature, and the compiled graphs never cast again.
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "aotgrad/aotgrad.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/runtime/compiled_function.h"
#include "aotgrad/runtime/compiled_graph.h"

namespace aotgrad {
namespace {

// with torch.autocast("cpu", dtype=torch.bfloat16): ...
struct CpuAutocast {
  explicit CpuAutocast(at::ScalarType dtype = at::kBFloat16)
      : was_enabled(at::autocast::is_autocast_enabled(at::kCPU)),
        was_dtype(at::autocast::get_autocast_dtype(at::kCPU)) {
    at::autocast::set_autocast_enabled(at::kCPU, true);
    at::autocast::set_autocast_dtype(at::kCPU, dtype);
    at::autocast::increment_nesting();
  }
  ~CpuAutocast() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(at::kCPU, was_enabled);
    at::autocast::set_autocast_dtype(at::kCPU, was_dtype);
  }
  bool was_enabled;
  at::ScalarType was_dtype;
};

std::vector<std::string> calls(const Graph& g) {
  std::vector<std::string> out;
  for (const Node* n : g.nodes())
    if (n->kind() == NodeKind::Call) out.push_back(n->op()->name);
  return out;
}

// The seed's example: (a @ b).float().sum() under bf16 autocast.
std::vector<at::Tensor> matmul_sum(const std::vector<at::Tensor>& in) {
  return {at::matmul(in[0], in[1]).to(at::kFloat).sum()};
}

TEST(Autocast, Seed13_17_CastsAreToCopyNodesAndTheForwardSavesTheBf16Copies) {
  at::Tensor a = at::randn({4, 8}).requires_grad_(), b = at::randn({8, 3}).requires_grad_();
  std::shared_ptr<const Graph> g;
  {
    CpuAutocast autocast;
    g = capture(matmul_sum, {a, b});
  }
  EXPECT_EQ(calls(*g), (std::vector<std::string>{"aten::_to_copy", "aten::_to_copy", "aten::mm",
                                                 "aten::_to_copy", "aten::sum"}));
  std::string text = print_graph(*g);
  for (const char* line : {"torch.ops.aten._to_copy.default(arg0_1, dtype = torch.bfloat16)",
                           "torch.ops.aten._to_copy.default(arg1_1, dtype = torch.bfloat16)",
                           "_to_copy_2: \"f32[4, 3][3, 1]cpu\" = "
                           "torch.ops.aten._to_copy.default(mm, dtype = torch.float32)"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  TrainingArtifacts art = compile_for_training(*g, {true, true});
  // The forward saves the transposes of the two bf16 copies (t, t_1); the backward casts the fp32
  // grad to bf16, does two mm, and casts each result back to fp32.
  ASSERT_EQ(art.saved.size(), 2u) << print_graph(*art.fw);
  for (const std::string& s : art.saved) {
    const Node* n = art.fw->find(s);
    ASSERT_NE(n, nullptr) << s;
    EXPECT_EQ(n->op()->name, "aten::t") << s;
    EXPECT_EQ(n->meta().tensor.dtype, ScalarType::BFloat16) << s;
  }
  std::vector<std::string> bw = calls(*art.bw);
  EXPECT_EQ(std::count(bw.begin(), bw.end(), "aten::mm"), 2) << print_graph(*art.bw);
  EXPECT_EQ(std::count(bw.begin(), bw.end(), "aten::_to_copy"), 3) << print_graph(*art.bw);
  for (const Arg& out : art.bw->output()->args()[0].list)
    EXPECT_EQ(out.node->meta().tensor.dtype, ScalarType::Float32) << print_graph(*art.bw);
}

// A gradient of eager autocast, for each of `params`.
std::vector<at::Tensor> grads_of(const std::vector<at::Tensor>& params) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& p : params) out.push_back(p.grad().clone());
  return out;
}

TEST(Autocast, AotFunctionTrainsAsEagerAutocastAndKeysOnTheAutocastState) {
  at::manual_seed(0);
  at::Tensor a = at::randn({4, 8}).requires_grad_(), b = at::randn({8, 3}).requires_grad_();
  AOTFunction f = aot_function(matmul_sum);
  at::Tensor eager, compiled;
  std::vector<at::Tensor> eager_grads, compiled_grads;
  {
    CpuAutocast autocast;
    eager = matmul_sum({a, b})[0];
    eager.backward();
    eager_grads = grads_of({a, b});
    a.mutable_grad() = at::Tensor();
    b.mutable_grad() = at::Tensor();
    compiled = f({a, b})[0];
    // The caller's autocast state is as it was, and the cast cache holds no fake.
    EXPECT_TRUE(at::autocast::is_autocast_enabled(at::kCPU));
    EXPECT_EQ(at::autocast::get_autocast_dtype(at::kCPU), at::kBFloat16);
    compiled.backward();
    compiled_grads = grads_of({a, b});
  }
  EXPECT_TRUE(at::equal(compiled, eager)) << compiled << eager;
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(compiled_grads[k].scalar_type(), at::kFloat);
    EXPECT_TRUE(at::equal(compiled_grads[k], eager_grads[k])) << k;
  }
  EXPECT_EQ(f.num_compilations(), 1u);
  // Without autocast: another compilation, in fp32, eager's fp32 result.
  at::Tensor fp32 = f({a, b})[0];
  EXPECT_EQ(f.num_compilations(), 2u);
  EXPECT_TRUE(at::allclose(fp32, matmul_sum({a, b})[0], 1e-5, 1e-5));
  EXPECT_FALSE(at::equal(fp32, eager));
  std::vector<std::string> ops = calls(*f.captured_graph({a, b}));
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "aten::_to_copy"), 0);
  {
    CpuAutocast autocast;
    f({a, b});
  }
  EXPECT_EQ(f.num_compilations(), 2u);
}

// Under autocast, as without it, tensors the function makes or reads from outside are lifted
// constants, and ops on them alone are computed for real.
TEST(Autocast, TensorsMadeOrReadByTheFunctionAreConstants) {
  at::manual_seed(2);
  at::Tensor a = at::randn({4, 8}).requires_grad_(), b = at::randn({8, 3}).requires_grad_();
  at::Tensor bias = at::randn({3});
  TensorFunction fn = [bias](const std::vector<at::Tensor>& in) -> std::vector<at::Tensor> {
    at::Tensor scale = at::full({3}, 2.0) * 0.5;
    at::Tensor shifted = bias.abs();
    return {(at::matmul(in[0], in[1]) * scale + shifted).to(at::kFloat).sum()};
  };
  AOTFunction f = aot_function(fn);
  at::Tensor eager, compiled;
  std::shared_ptr<const Graph> g;
  {
    CpuAutocast autocast;
    eager = fn({a, b})[0];
    compiled = f({a, b})[0];
    g = f.captured_graph({a, b});
  }
  ASSERT_NE(g, nullptr);
  std::vector<std::string> ops = calls(*g);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "aten::full"), 0) << print_graph(*g);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "aten::abs"), 0) << print_graph(*g);
  EXPECT_NE(g->find("_tensor_constant1"), nullptr) << print_graph(*g);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "aten::_to_copy"), 2) << print_graph(*g);
  EXPECT_TRUE(at::equal(compiled, eager)) << compiled << eager;
  compiled.backward();
  at::Tensor ga = a.grad().clone();
  a.mutable_grad() = at::Tensor();
  {
    CpuAutocast autocast;
    eager = fn({a, b})[0];
  }
  eager.backward();
  EXPECT_TRUE(at::equal(ga, a.grad()));
}

struct MlpImpl : torch::nn::Module {
  MlpImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(16, 32));
    fc2 = register_module("fc2", torch::nn::Linear(32, 4));
  }
  at::Tensor forward(const at::Tensor& x) { return fc2->forward(torch::gelu(fc1->forward(x))); }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(Mlp);

TEST(Autocast, AotModuleMixedPrecisionTrainingMatchesEager) {
  at::manual_seed(1);
  Mlp eager_model, model;
  {
    torch::NoGradGuard no_grad;
    auto from = eager_model->parameters();
    auto to = model->parameters();
    for (size_t k = 0; k < from.size(); ++k) to[k].copy_(from[k]);
  }
  AOTModule compiled =
      aot_module(model.ptr(), [m = model.ptr()](const std::vector<at::Tensor>& in) {
        return std::vector<at::Tensor>{m->forward(in[0])};
      });
  at::Tensor x = at::randn({8, 16}), target = at::randn({8, 4});
  for (int step = 0; step < 2; ++step) {
    at::Tensor eager_loss, loss;
    {
      CpuAutocast autocast;
      eager_loss = torch::mse_loss(eager_model->forward(x).to(at::kFloat), target);
      loss = torch::mse_loss(compiled({x})[0].to(at::kFloat), target);
    }
    EXPECT_EQ(loss.scalar_type(), at::kFloat);
    EXPECT_TRUE(at::allclose(loss, eager_loss, 1e-3, 1e-3)) << loss << eager_loss;
    eager_loss.backward();
    loss.backward();
    auto pe = eager_model->named_parameters(), pc = model->named_parameters();
    for (const auto& item : pe) {
      const at::Tensor& ge = item.value().grad();
      const at::Tensor& gc = pc[item.key()].grad();
      ASSERT_TRUE(gc.defined()) << item.key();
      EXPECT_EQ(gc.scalar_type(), at::kFloat) << item.key();
      EXPECT_TRUE(at::allclose(gc, ge, 2e-2, 2e-2)) << item.key() << "\n" << gc << "\n" << ge;
    }
    eager_model->zero_grad();
    model->zero_grad();
  }
  EXPECT_EQ(compiled.num_compilations(), 1u);
  // The bf16 matmuls are in the captured graph.
  std::shared_ptr<const Graph> g;
  {
    CpuAutocast autocast;
    g = compiled.captured_graph({x});
  }
  ASSERT_NE(g, nullptr);
  int bf16_mms = 0;
  for (const Node* n : g->nodes())
    if (n->kind() == NodeKind::Call && n->op()->name == "aten::addmm" &&
        n->meta().tensor.dtype == ScalarType::BFloat16)
      ++bf16_mms;
  EXPECT_EQ(bf16_mms, 2);
}

// A graph compiled without autocast and run under it computes in fp32: the runtime does not let
// libtorch's autocast cast the graph's ops.
TEST(Autocast, CompiledGraphsRunWithoutAutocast) {
  at::Tensor a = at::randn({4, 8}).requires_grad_(), b = at::randn({8, 3}).requires_grad_();
  std::shared_ptr<const Graph> g = capture(matmul_sum, {a, b});
  CompiledFunction train(g, {true, true});
  CompiledGraph infer(g);
  at::Tensor want = matmul_sum({a, b})[0];
  CpuAutocast autocast;
  at::Tensor got = train({a, b})[0];
  EXPECT_TRUE(at::equal(got, want));
  got.backward();
  EXPECT_EQ(a.grad().scalar_type(), at::kFloat);
  std::vector<c10::IValue> out = infer({a, b});
  EXPECT_TRUE(at::equal(out[0].toTensor(), want));
}

}  // namespace
}  // namespace aotgrad
