// Tests for aot_function: outputs, grads and mutated arguments equal eager's; compilations are
// cached by input signature.
#include "aotgrad/aotgrad.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "../error_of.h"
#include "aotgrad/driver/cache_store.h"
#include "aotgrad/support/logging.h"

namespace aotgrad {
namespace {

void expect_close(const at::Tensor& got, const at::Tensor& want, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what;
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  EXPECT_TRUE(at::allclose(got, want, 1e-5, 1e-6)) << what << "\n" << got << "\n" << want;
}

std::vector<at::Tensor> mlp(const std::vector<at::Tensor>& a) {
  at::Tensor h = at::relu(at::linear(a[0], a[1], a[2]));
  return {at::linear(h, a[3], a[4]).sum()};
}

std::vector<at::Tensor> mlp_params() {
  return {at::randn({16, 8}).requires_grad_(), at::randn({16}).requires_grad_(),
          at::randn({3, 16}).requires_grad_(), at::randn({3}).requires_grad_()};
}

/// A backend that counts its compilations and interprets.
class CountingCompiler final : public Compiler {
 public:
  explicit CountingCompiler(std::atomic<int>* count) : count_(count) {}
  std::string name() const override { return "counting"; }
  CompiledFn compile(std::shared_ptr<const Graph> graph) const override {
    ++*count_;
    return InterpreterCompiler().compile(std::move(graph));
  }

 private:
  std::atomic<int>* count_;
};

TEST(AotFunction, TrainingMatchesEagerAndCachesBySignature) {
  std::atomic<int> fw = 0, bw = 0;
  AOTConfig cfg;
  cfg.fw_compiler = std::make_shared<CountingCompiler>(&fw);
  cfg.bw_compiler = std::make_shared<CountingCompiler>(&bw);
  AOTFunction f = aot_function(mlp, cfg);
  std::vector<at::Tensor> params = mlp_params();
  for (int64_t batch : {4, 4, 6, 4}) {
    at::Tensor x = at::randn({batch, 8});
    std::vector<at::Tensor> eager_params;
    for (const at::Tensor& p : params) eager_params.push_back(p.detach().clone().requires_grad_());
    std::vector<at::Tensor> args = {x}, eager_args = {x};
    args.insert(args.end(), params.begin(), params.end());
    eager_args.insert(eager_args.end(), eager_params.begin(), eager_params.end());
    at::Tensor loss = f(args)[0];
    at::Tensor want = mlp(eager_args)[0];
    expect_close(loss, want, "loss");
    loss.backward();
    want.backward();
    for (size_t i = 0; i < params.size(); ++i) {
      expect_close(params[i].grad(), eager_params[i].grad(), "grad of param " + std::to_string(i));
      params[i].mutable_grad().reset();
    }
  }
  // Batch 4 compiled once, batch 6 once more.
  EXPECT_EQ(f.num_compilations(), 2u);
  EXPECT_EQ(fw.load(), 2);
  EXPECT_EQ(bw.load(), 2);
  {
    c10::NoGradGuard no_grad;  // inference: a new compilation
    std::vector<at::Tensor> args = {at::randn({4, 8})};
    args.insert(args.end(), params.begin(), params.end());
    expect_close(f(args)[0], mlp(args)[0], "inference loss");
    EXPECT_EQ(f.num_compilations(), 3u);
    EXPECT_EQ(fw.load(), 2);
  }
}

TEST(AotFunction, CapturedGraphAndSignature) {
  AOTFunction f = aot_function(mlp, AOTConfig{});
  std::vector<at::Tensor> args = {at::randn({4, 8})};
  std::vector<at::Tensor> params = mlp_params();
  args.insert(args.end(), params.begin(), params.end());
  EXPECT_EQ(f.captured_graph(args), nullptr);
  f(args);
  std::shared_ptr<const Graph> g = f.captured_graph(args);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->placeholders().size(), 5u);
  EXPECT_TRUE(g->find("arg1_1")->tensor_meta().requires_grad);
  EXPECT_FALSE(g->find("arg0_1")->tensor_meta().requires_grad);
  std::string sig = input_signature(args);
  EXPECT_NE(sig.find("train"), std::string::npos) << sig;
  EXPECT_NE(sig.find("f32[4, 8][8, 1]cpu"), std::string::npos) << sig;
  // Strides are part of the signature.
  std::vector<at::Tensor> transposed = args;
  transposed[0] = at::randn({8, 4}).t();
  EXPECT_NE(input_signature(transposed), sig);
  EXPECT_EQ(f.captured_graph(transposed), nullptr);
  expect_close(f(transposed)[0], mlp(transposed)[0], "transposed input");
  EXPECT_EQ(f.num_compilations(), 2u);
}

TEST(AotFunction, BatchNormTrainingWritesRunningStatsBack) {
  auto bn = [](const std::vector<at::Tensor>& a) -> std::vector<at::Tensor> {
    at::Tensor y = at::batch_norm(a[0], a[1], a[2], a[3], a[4], /*training=*/true, /*momentum=*/0.1,
                                  /*eps=*/1e-5, /*cudnn_enabled=*/false);
    return {(y * y).mean()};
  };
  AOTFunction f = aot_function(bn, AOTConfig{});
  at::Tensor w = at::randn({3}).requires_grad_(), b = at::randn({3}).requires_grad_();
  at::Tensor rm = at::zeros({3}), rv = at::ones({3});
  at::Tensor ew = w.detach().clone().requires_grad_(), eb = b.detach().clone().requires_grad_();
  at::Tensor erm = rm.clone(), erv = rv.clone();
  for (int step = 0; step < 2; ++step) {
    at::Tensor x = at::randn({4, 3, 5, 5});
    at::Tensor loss = f({x, w, b, rm, rv})[0];
    at::Tensor want = bn({x, ew, eb, erm, erv})[0];
    expect_close(loss, want, "loss");
    loss.backward();
    want.backward();
    expect_close(w.grad(), ew.grad(), "weight grad");
    expect_close(b.grad(), eb.grad(), "bias grad");
    expect_close(rm, erm, "running_mean");
    expect_close(rv, erv, "running_var");
  }
  EXPECT_EQ(f.num_compilations(), 1u);
}

TEST(AotFunction, SameTensorTwiceIsDeduped) {
  auto f2 = [](const std::vector<at::Tensor>& a) -> std::vector<at::Tensor> {
    return {(a[0] * a[1] + a[0]).sum()};
  };
  AOTFunction f = aot_function(f2, AOTConfig{});
  at::Tensor x = at::randn({5}).requires_grad_();
  at::Tensor ex = x.detach().clone().requires_grad_();
  at::Tensor loss = f({x, x})[0];
  at::Tensor want = f2({ex, ex})[0];
  expect_close(loss, want, "loss");
  EXPECT_EQ(f.captured_graph({x, x})->placeholders().size(), 1u);
  loss.backward();
  want.backward();
  expect_close(x.grad(), ex.grad(), "grad");  // 2x + 1, both uses
  // Two different tensors: another signature.
  at::Tensor y = x.detach().clone().requires_grad_();
  expect_close(f({x, y})[0], want, "two tensors");
  EXPECT_EQ(f.num_compilations(), 2u);
}

TEST(AotFunction, InferenceInputMutationsAndViews) {
  auto step = [](const std::vector<at::Tensor>& a) -> std::vector<at::Tensor> {
    a[0].add_(a[1], 0.5);
    at::Tensor v = a[0].view({2, 3});
    v.mul_(2);
    return {v.sum(1)};
  };
  for (bool keep : {false, true}) {
    AOTConfig cfg;
    cfg.keep_inference_input_mutations = keep;
    AOTFunction f = aot_function(step, cfg);
    at::Tensor p = at::randn({6}), g = at::randn({6});
    at::Tensor ep = p.clone();
    for (int i = 0; i < 2; ++i) {
      at::Tensor out = f({p, g})[0];
      at::Tensor want = step({ep, g})[0];
      expect_close(out, want, "output");
      expect_close(p, ep, "mutated argument");
    }
    EXPECT_EQ(f.num_compilations(), 1u);
  }
}

TEST(AotFunction, InferenceWithOverlappingViews) {
  // The write through one view is seen through the other, as eagerly (CompiledGraph's synthetic
  // bases, §13.23).
  auto fn = [](const std::vector<at::Tensor>& a) -> std::vector<at::Tensor> {
    a[0].mul_(2);
    return {a[1] + 1};
  };
  AOTFunction f = aot_function(fn, AOTConfig{});
  at::Tensor base = at::randn({9}), ebase = base.clone();
  at::Tensor out = f({base.slice(0, 0, 6), base.slice(0, 3, 9)})[0];
  at::Tensor want = fn({ebase.slice(0, 0, 6), ebase.slice(0, 3, 9)})[0];
  expect_close(out, want, "output");
  expect_close(base, ebase, "base");
  // Without the overlap: another compilation.
  at::Tensor x = at::randn({6}), y = at::randn({6}), ex = x.clone();
  expect_close(f({x, y})[0], fn({ex, y})[0], "separate tensors");
  expect_close(x, ex, "mutated argument");
  EXPECT_EQ(f.num_compilations(), 2u);
}

TEST(AotFunction, AttentionTrainsAsEagerly) {
  // One causal self-attention head with an output projection: matmul, transpose, view, masked
  // softmax.
  auto attention = [](const std::vector<at::Tensor>& a) -> std::vector<at::Tensor> {
    const at::Tensor& x = a[0];  // [batch, seq, d]
    int64_t b = x.size(0), t = x.size(1), d = x.size(2);
    at::Tensor qkv = at::linear(x, a[1]);  // [b, t, 3d]
    std::vector<at::Tensor> parts = qkv.split(d, 2);
    at::Tensor q = parts[0].view({b, t, 2, d / 2}).transpose(1, 2);
    at::Tensor k = parts[1].view({b, t, 2, d / 2}).transpose(1, 2);
    at::Tensor v = parts[2].view({b, t, 2, d / 2}).transpose(1, 2);
    at::Tensor scores = at::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(d / 2));
    scores = scores.masked_fill(a[3].logical_not(), -1e9);
    at::Tensor y = at::matmul(at::softmax(scores, -1), v).transpose(1, 2).reshape({b, t, d});
    return {at::linear(y, a[2]).pow(2).mean()};
  };
  AOTFunction f = aot_function(attention, AOTConfig{});
  at::Tensor wqkv = (at::randn({24, 8}) * 0.3).requires_grad_();
  at::Tensor wo = (at::randn({8, 8}) * 0.3).requires_grad_();
  at::Tensor mask = at::ones({5, 5}, at::kBool).tril();
  at::Tensor ewqkv = wqkv.detach().clone().requires_grad_(),
             ewo = wo.detach().clone().requires_grad_();
  for (int step = 0; step < 2; ++step) {
    at::Tensor x = at::randn({3, 5, 8});
    at::Tensor loss = f({x, wqkv, wo, mask})[0];
    at::Tensor want = attention({x, ewqkv, ewo, mask})[0];
    expect_close(loss, want, "loss");
    loss.backward();
    want.backward();
    expect_close(wqkv.grad(), ewqkv.grad(), "qkv weight grad");
    expect_close(wo.grad(), ewo.grad(), "output weight grad");
  }
  EXPECT_EQ(f.num_compilations(), 1u);
}

TEST(AotFunction, InPlaceOpsAndViewsTrainAsEagerly) {
  // In-place ops on intermediates and through views, a view of a parameter, and a counter input
  // that does not require grad written in place (written back, as eagerly).
  auto fn = [](const std::vector<at::Tensor>& a) -> std::vector<at::Tensor> {
    at::Tensor h = at::mm(a[0], a[1]);  // [4, 6]
    h.slice(1, 0, 3).mul_(a[1].select(0, 0).slice(0, 0, 3));
    h.transpose(0, 1).select(0, 5).add_(1);
    at::Tensor r = h.view({2, 12});
    r.sigmoid_();
    a[2].add_(r.detach().sum(0));  // a running statistic
    return {r.sum() + a[1].t().contiguous().view({-1}).pow(2).sum()};
  };
  AOTFunction f = aot_function(fn, AOTConfig{});
  at::Tensor w = at::randn({5, 6}).requires_grad_(), ew = w.detach().clone().requires_grad_();
  at::Tensor stat = at::zeros({12}), estat = stat.clone();
  for (int step = 0; step < 2; ++step) {
    at::Tensor x = at::randn({4, 5});
    at::Tensor loss = f({x, w, stat})[0];
    at::Tensor want = fn({x, ew, estat})[0];
    expect_close(loss, want, "loss");
    expect_close(stat, estat, "mutated input");
    loss.backward();
    want.backward();
    expect_close(w.grad(), ew.grad(), "grad");
  }
  EXPECT_EQ(f.num_compilations(), 1u);
}

// Ops under torch.no_grad are not differentiated: eagerly their results have no history, and so
// in the compiled graph (issue 44's fuzzer found them differentiated: silently wrong gradients).
TEST(AotFunction, NoGradRegionsAreNotDifferentiated) {
  auto fn = [](const std::vector<at::Tensor>& a) -> std::vector<at::Tensor> {
    at::Tensor h = a[0] * a[1];
    at::Tensor scale, frozen;
    {
      at::NoGradGuard no_grad;
      scale = h.abs().amax() + 1;  // a statistic, not differentiated
      frozen = h.sin();
    }
    frozen.mul_(a[1]);  // written with grad mode on: the write starts its history
    return {(h / scale).sum() + frozen.sum(), scale};
  };
  AOTFunction f = aot_function(fn, AOTConfig{});
  at::Tensor x = at::randn({3, 4}, at::kDouble).requires_grad_();
  at::Tensor w = at::randn({3, 4}, at::kDouble).requires_grad_();
  at::Tensor ex = x.detach().clone().requires_grad_(), ew = w.detach().clone().requires_grad_();
  std::vector<at::Tensor> got = f({x, w}), want = fn({ex, ew});
  expect_close(got[0], want[0], "loss");
  EXPECT_FALSE(got[1].requires_grad());
  EXPECT_FALSE(want[1].requires_grad());
  got[0].backward();
  want[0].backward();
  EXPECT_TRUE(at::allclose(x.grad(), ex.grad(), 1e-12, 1e-12)) << x.grad() << ex.grad();
  EXPECT_TRUE(at::allclose(w.grad(), ew.grad(), 1e-12, 1e-12)) << w.grad() << ew.grad();
}

// A tensor that requires grad, written in place under torch.no_grad, keeps its history: a
// straight-through estimator (the rounded values, the identity's gradient) trains as eagerly (see
// Note [Writes under no_grad]). A leaf parameter written so (a clamp, an optimizer's step) is
// written back under no_grad and stays a leaf, as eagerly; so is one written through a detach.
TEST(AotFunction, WritesUnderNoGradKeepTheTensorsHistory) {
  auto fn = [](const std::vector<at::Tensor>& a) -> std::vector<at::Tensor> {
    at::Tensor h = a[0] * 3;
    {
      at::NoGradGuard no_grad;
      h.copy_(h.round());  // the forward rounds, the gradient does not see it
    }
    return {(h * a[1]).sum()};
  };
  AOTFunction f = aot_function(fn, AOTConfig{});
  for (int step = 0; step < 2; ++step) {
    at::Tensor x = at::randn({4, 3}, at::kDouble).requires_grad_();
    at::Tensor w = at::randn({4, 3}, at::kDouble).requires_grad_();
    at::Tensor ex = x.detach().clone().requires_grad_(), ew = w.detach().clone().requires_grad_();
    at::Tensor got = f({x, w})[0], want = fn({ex, ew})[0];
    EXPECT_TRUE(at::equal(got, want)) << got << want;
    got.backward();
    want.backward();
    EXPECT_TRUE(at::allclose(x.grad(), ex.grad(), 1e-12, 1e-12)) << x.grad() << ex.grad();
    EXPECT_TRUE(at::allclose(w.grad(), ew.grad(), 1e-12, 1e-12)) << w.grad() << ew.grad();
  }
  EXPECT_EQ(f.num_compilations(), 1u);

  auto clamp = [](const std::vector<at::Tensor>& a) -> std::vector<at::Tensor> {
    {
      at::NoGradGuard no_grad;
      a[0].clamp_(-0.5, 0.5);
    }
    a[0].detach().mul_(2);  // a write autograd does not see either
    return {(a[0] * a[1]).sum()};
  };
  AOTFunction g = aot_function(clamp, AOTConfig{});
  at::Tensor p = at::randn({3}, at::kDouble).requires_grad_(), x = at::randn({3}, at::kDouble);
  at::Tensor ep = p.detach().clone().requires_grad_();
  at::Tensor got = g({p, x})[0], want = clamp({ep, x})[0];
  EXPECT_TRUE(at::equal(got, want)) << got << want;
  EXPECT_TRUE(at::equal(p, ep)) << p << ep;
  EXPECT_TRUE(p.is_leaf());
  got.backward();
  want.backward();
  EXPECT_TRUE(at::equal(p.grad(), ep.grad())) << p.grad() << ep.grad();
}

// Tensors the function makes itself (an index, a target, a mask) are read by the trace as real
// tensors: they become the graph's lifted constants, whose values the compiled function passes.
TEST(AotFunction, TensorsMadeInsideTheFunctionAreLiftedConstants) {
  TensorFunction f = [](const std::vector<at::Tensor>& a) -> std::vector<at::Tensor> {
    at::Tensor idx = torch::tensor({0, 2, 3}, at::kLong);
    at::Tensor target = torch::tensor({1, 0}, at::kLong);
    at::Tensor mask = at::ones({2, 3}, at::kBool).tril();
    at::Tensor logits = a[0].index_select(1, idx).masked_fill(mask.logical_not(), -1e4);
    return {at::cross_entropy_loss(logits, target)};
  };
  AOTFunction compiled = aot_function(f);
  at::Tensor x = at::randn({2, 4}).requires_grad_();
  at::Tensor loss = compiled({x})[0];
  loss.backward();
  at::Tensor xe = x.detach().clone().requires_grad_();
  at::Tensor ref = f({xe})[0];
  ref.backward();
  expect_close(loss, ref, "loss");
  expect_close(x.grad(), xe.grad(), "grad");
  std::shared_ptr<const Graph> g = compiled.captured_graph({x});
  ASSERT_NE(g, nullptr);
  std::vector<std::string> constants;
  for (const Node* p : g->placeholders())
    if (p->info().lifted_constant) constants.push_back(p->name());
  EXPECT_EQ(constants.size(), 3u);  // the index, the mask's logical_not and the target
  at::Tensor x2 = at::randn({2, 4}).requires_grad_();
  at::Tensor x2e = x2.detach().clone().requires_grad_();
  expect_close(compiled({x2})[0], f({x2e})[0], "second call's loss");
  EXPECT_EQ(compiled.num_compilations(), 1u);
}

TEST(AotFunction, Errors) {
  EXPECT_THROW(aot_function(TensorFunction(), AOTConfig{}), Error);
  AOTConfig bad;
  bad.min_cut.activation_memory_budget = 2;
  EXPECT_THROW(aot_function(mlp, bad), Error);
  auto f = aot_function(
      [](const std::vector<at::Tensor>& a) -> std::vector<at::Tensor> {
        return {(a[0] + a[1]).sum()};
      },
      AOTConfig{});
  EXPECT_THROW(f({at::randn({2}), at::Tensor()}), Error);
  EXPECT_EQ(f.num_compilations(), 0u);
  // Views of one base that the function does not write train as independent inputs (§13.23; the
  // written, overlapping case gets a synthetic base: aliased_inputs_test.cc).
  at::Tensor base = at::randn({4}).requires_grad_();
  f({base.slice(0, 0, 2), base.slice(0, 2, 4)})[0].backward();
  EXPECT_TRUE(at::equal(base.grad(), at::ones({4})));
  EXPECT_EQ(f.num_compilations(), 1u);
}

// An undefined argument is None, as in PyTorch's f(x, w, None) (issue 44, item 6): the call
// compiles a specialization without it, whose results and gradients are eager's; the None gets no
// gradient, and a defined tensor in its place is another signature (it recompiles).
TEST(AotFunction, NoneArgumentsCompileASpecializationWithoutThem) {
  TensorFunction fn = [](const std::vector<at::Tensor>& a) -> std::vector<at::Tensor> {
    // linear's bias is optional: an undefined one is none.
    return {at::relu(at::linear(a[0], a[1], a[2])).pow(2).sum()};
  };
  auto f = aot_function(fn, AOTConfig{});
  at::Tensor x = at::randn({4, 8}), w = at::randn({5, 8}).requires_grad_(),
             b = at::randn({5}).requires_grad_();
  auto check = [&](const std::vector<at::Tensor>& args, const std::string& what) {
    at::Tensor loss = f(args)[0];
    auto grads = torch::autograd::grad({loss}, {w});
    std::vector<at::Tensor> eager_args;
    for (const at::Tensor& t : args)
      eager_args.push_back(t.defined() ? t.detach().requires_grad_(t.requires_grad()) : t);
    at::Tensor want = fn(eager_args)[0];
    expect_close(loss, want, what + ": loss");
    expect_close(grads[0], torch::autograd::grad({want}, {eager_args[1]})[0], what + ": grad w");
  };
  check({x, w, at::Tensor()}, "bias None");
  EXPECT_EQ(f.num_compilations(), 1u);
  EXPECT_NE(input_signature({x, w, at::Tensor()}).find("\n2: None"), std::string::npos);
  ASSERT_TRUE(f.trains({x, w, at::Tensor()}).has_value());
  std::shared_ptr<const Graph> g = f.captured_graph({x, w, at::Tensor()});
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->placeholders().size(), 2u);  // x and w only
  check({x, w, b}, "bias given");
  EXPECT_EQ(f.num_compilations(), 2u);
  check({x, w, at::Tensor()}, "bias None again");
  EXPECT_EQ(f.num_compilations(), 2u);
  // The None gets no gradient; the defined arguments' .grad accumulate as eagerly.
  at::Tensor w2 = w.detach().clone().requires_grad_();
  f({x, w2, at::Tensor()})[0].backward();
  ASSERT_TRUE(w2.grad().defined());
  // A function that cannot take None fails as a clear Error, and compiles nothing.
  auto g2 = aot_function(
      [](const std::vector<at::Tensor>& a) -> std::vector<at::Tensor> {
        return {(a[0] + a[1]).sum()};
      },
      AOTConfig{});
  EXPECT_THROW(g2({at::randn({2}), at::Tensor()}), Error);
  EXPECT_EQ(g2.num_compilations(), 0u);
}

// AOTConfig::cache_dir reaches the compilations: a second aot_function of the same function (a new
// process, as far as the cache knows) loads the entries of the first for training and inference,
// and trains to eager's loss and grads.
TEST(AotFunction, CompileCacheDirectoryIsUsed) {
  std::string dir = (std::filesystem::temp_directory_path() / "aotgrad-api-cache-XXXXXX").string();
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  AOTConfig cfg;
  cfg.cache_dir = dir;
  std::vector<at::Tensor> params = mlp_params();
  at::Tensor x = at::randn({4, 8});
  reset_compile_cache_stats();
  for (int round = 0; round < 2; ++round) {
    AOTFunction f = aot_function(mlp, cfg);
    std::vector<at::Tensor> own, eager;
    for (const at::Tensor& p : params) {
      own.push_back(p.detach().clone().requires_grad_());
      eager.push_back(p.detach().clone().requires_grad_());
    }
    std::vector<at::Tensor> args = {x}, eager_args = {x};
    args.insert(args.end(), own.begin(), own.end());
    eager_args.insert(eager_args.end(), eager.begin(), eager.end());
    at::Tensor loss = f(args)[0];
    at::Tensor want = mlp(eager_args)[0];
    expect_close(loss, want, "loss");
    loss.backward();
    want.backward();
    for (size_t i = 0; i < own.size(); ++i)
      expect_close(own[i].grad(), eager[i].grad(), "grad " + std::to_string(i));
    c10::NoGradGuard no_grad;
    expect_close(f(args)[0], mlp(eager_args)[0], "inference");
    CompileCacheStats s = compile_cache_stats();
    EXPECT_EQ(s.misses, 2) << round;  // training and inference, in the first round
    EXPECT_EQ(s.hits, 2 * round) << round;
  }
  std::filesystem::remove_all(dir);
}

// §13.11: a training call whose outputs need no grad (and that mutates no input requiring grad)
// compiles for inference and runs under no_grad.
TEST(AotFunction, TrainingCallWithoutGradOutputsIsDowngradedToInference) {
  AOTFunction f = aot_function(
      [](const std::vector<at::Tensor>& a) -> std::vector<at::Tensor> {
        return {at::argmax(at::mm(a[0], a[1]), 1), (a[1] > 0).sum()};
      },
      AOTConfig{});
  std::vector<at::Tensor> args = {at::randn({4, 8}), at::randn({8, 3}).requires_grad_()};
  std::vector<at::Tensor> out = f(args);
  EXPECT_EQ(f.trains(args), std::optional<bool>(false));
  EXPECT_FALSE(out[0].requires_grad());
  EXPECT_TRUE(at::equal(out[0], at::argmax(at::mm(args[0], args[1]), 1)));
  EXPECT_TRUE(at::equal(out[1], (args[1] > 0).sum()));
  // An output that needs grad trains.
  AOTFunction g = aot_function(mlp, AOTConfig{});
  std::vector<at::Tensor> margs = {at::randn({4, 8})};
  std::vector<at::Tensor> params = mlp_params();
  margs.insert(margs.end(), params.begin(), params.end());
  EXPECT_EQ(g.trains(margs), std::nullopt);
  g(margs);
  EXPECT_EQ(g.trains(margs), std::optional<bool>(true));
}

// AOTGRAD_LOGS=recompiles: a new signature logs what differs from the last one compiled.
TEST(AotFunction, RecompilesAreLogged) {
  LogSettings logs;
  logs.recompiles = true;
  set_log_settings(logs);
  std::ostringstream os;
  set_log_stream(&os);
  AOTFunction f = aot_function(mlp, AOTConfig{});
  std::vector<at::Tensor> params = mlp_params();
  for (int64_t batch : {4, 4, 6}) {
    std::vector<at::Tensor> args = {at::randn({batch, 8})};
    args.insert(args.end(), params.begin(), params.end());
    f(args);
  }
  set_log_stream(nullptr);
  set_log_settings(LogSettings{});
  std::string log = os.str();
  EXPECT_NE(log.find("Recompiling function (compilation 2)"), std::string::npos) << log;
  EXPECT_NE(log.find("argument 0: f32[4, 8][8, 1]cpu -> f32[6, 8][8, 1]cpu"), std::string::npos)
      << log;
  EXPECT_EQ(log.find("compilation 3"), std::string::npos) << log;
}

// An argument that is a view of an activation (a non-leaf that requires grad), written in place
// by the function: the capture lets the write happen as eagerly, and the runtime writes the new
// value back under autograd, so gradients flow through the write to the activation's inputs.
TEST(AotFunction, WritesIntoAViewOfAnActivationTrainAsEagerly) {
  auto fn = [](const std::vector<at::Tensor>& a) {
    a[0].mul_(3);
    return std::vector<at::Tensor>{(a[0] * a[1]).sum()};
  };
  AOTFunction f = aot_function(fn, AOTConfig{});
  at::Tensor q = at::randn({4, 6}).requires_grad_(), w = at::randn({4, 3}).requires_grad_();
  at::Tensor q2 = q.detach().clone().requires_grad_(), w2 = w.detach().clone().requires_grad_();
  at::Tensor base = q * 1, base2 = q2 * 1;
  at::Tensor loss = f({base.narrow(1, 1, 3), w})[0] + base.sum();
  at::Tensor want = fn({base2.narrow(1, 1, 3), w2})[0] + base2.sum();
  expect_close(loss, want, "loss");
  expect_close(base, base2, "the activation after the write");
  loss.backward();
  want.backward();
  expect_close(q.grad(), q2.grad(), "grad through the write");
  expect_close(w.grad(), w2.grad(), "grad of w");
}

// AOTConfig::partition_fn (functorch.compile's partition_fn, §13.8): the user's function splits the
// joint graph -- here default_partition, counted -- and the step trains to eager's grads; one
// whose graphs do not fit the joint graph is an Error naming it and what is off.
TEST(AotFunction, UserPartitionFunction) {
  int calls = 0;
  AOTConfig config;
  config.partition_fn = {"counted_default", [&calls](const JointGraph& joint) {
                           ++calls;
                           return default_partition(joint);
                         }};
  AOTFunction f = aot_function(mlp, config);
  at::Tensor x = at::randn({4, 8});
  std::vector<at::Tensor> p = mlp_params();
  f({x, p[0], p[1], p[2], p[3]})[0].backward();
  EXPECT_EQ(calls, 1);
  std::vector<at::Tensor> got;
  for (at::Tensor& t : p) {
    got.push_back(t.grad().clone());
    t.mutable_grad() = at::Tensor();
  }
  mlp({x, p[0], p[1], p[2], p[3]})[0].backward();
  for (size_t i = 0; i < p.size(); ++i)
    expect_close(got[i], p[i].grad(), "grad " + std::to_string(i));
  f({x, p[0], p[1], p[2], p[3]});
  EXPECT_EQ(calls, 1);  // compiled once per signature

  AOTConfig bad;
  bad.partition_fn = {"drops_a_saved_value", [](const JointGraph& joint) {
                        Partition part = default_partition(joint);
                        part.saved.pop_back();
                        return part;
                      }};
  AOTFunction g = aot_function(mlp, bad);
  try {
    g({x, p[0], p[1], p[2], p[3]});
    ADD_FAILURE() << "a partition that does not fit the joint graph compiled";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("partition_fn 'drops_a_saved_value': its forward graph "
                                         "returns"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace aotgrad
