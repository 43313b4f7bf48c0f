// Tests for dynamic shapes in aot_function and aot_module (§13.15): one compilation with symbolic
// sizes trains and runs at every batch size and sequence length to eager's numbers; guards
// recompile when a size breaks an assumption; AOTConfig::dynamic's modes.
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <sstream>

#include "aotgrad/aotgrad.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/support/logging.h"
#include "models/eager_models.h"

namespace aotgrad {
namespace {

void expect_close(const at::Tensor& got, const at::Tensor& want, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what;
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  EXPECT_TRUE(at::allclose(got, want, 1e-4, 1e-5)) << what << "\n" << got << "\n" << want;
}

// AOTGRAD_LOGS=recompiles into a string while alive; the settings and the stream are restored
// however the test ends.
class RecompileLog {
 public:
  RecompileLog() {
    LogSettings logs;
    logs.recompiles = true;
    set_log_settings(logs);
    set_log_stream(&os_);
  }
  ~RecompileLog() {
    set_log_stream(nullptr);
    set_log_settings(LogSettings{});
  }
  std::string text() const { return os_.str(); }

 private:
  std::ostringstream os_;
};

// An exported example model compiled with aot_function over its parameters and buffers
// (functional_call, as aot_module lifts them), beside an eager copy with the same state. `marked`:
// the dimensions of the model's inputs (numbered after its tensors) marked dynamic.
struct CompiledModel {
  CompiledModel(const std::string& name, const std::map<size_t, std::vector<int64_t>>& marked)
      : compiled(models::make_eager_model(name)), eager(models::make_eager_model(name)) {
    models::TensorMap state = compiled->parameters();
    for (const auto& [k, v] : compiled->buffers()) state[k] = v;
    eager->load_state(state);
    for (const std::string& n : compiled->parameter_names()) tensors.push_back(state[n]);
    for (const std::string& n : compiled->buffer_names()) tensors.push_back(state[n]);
    AOTConfig cfg;
    for (const auto& [i, dims] : marked) cfg.dynamic_dims[i + tensors.size()] = dims;
    cfg.num_params_buffers = tensors.size();
    cfg.input_names = compiled->placeholder_names();
    models::EagerModel* m = compiled.get();
    fn.emplace(aot_function(functional_call(tensors,
                                            [m](const std::vector<at::Tensor>& in) {
                                              return std::vector<at::Tensor>{m->loss(in)};
                                            }),
                            std::move(cfg)));
  }
  // One training step of both on `inputs`: loss, grads and buffers equal.
  void step(const std::vector<at::Tensor>& inputs, const std::string& what) {
    std::vector<at::Tensor> args = tensors;
    args.insert(args.end(), inputs.begin(), inputs.end());
    at::Tensor loss = (*fn)(args)[0];
    at::Tensor want = eager->loss(inputs);
    expect_close(loss, want, what + ": loss");
    loss.backward();
    want.backward();
    models::TensorMap g = compiled->parameters(), e = eager->parameters();
    for (const auto& [k, v] : g) expect_close(v.grad(), e[k].grad(), what + ": grad of " + k);
    models::TensorMap gb = compiled->buffers(), eb = eager->buffers();
    for (const auto& [k, v] : gb) expect_close(v, eb[k], what + ": buffer " + k);
    compiled->zero_grad();
    eager->zero_grad();
  }
  at::Tensor infer(const std::vector<at::Tensor>& inputs, const std::string& what) {
    c10::NoGradGuard no_grad;
    std::vector<at::Tensor> args = tensors;
    args.insert(args.end(), inputs.begin(), inputs.end());
    at::Tensor loss = (*fn)(args)[0];
    expect_close(loss, eager->loss(inputs), what + ": inference loss");
    return loss;
  }
  std::unique_ptr<models::EagerModel> compiled, eager;
  std::vector<at::Tensor> tensors;
  std::optional<AOTFunction> fn;
};

std::vector<at::Tensor> gpt_inputs(int64_t batch, int64_t seq) {
  return {at::randint(0, 64, {batch, seq}, at::kLong), at::randint(0, 64, {batch, seq}, at::kLong)};
}

// The must-show: a GPT block compiled once with a dynamic batch and sequence length trains at
// batch 1, 3, 8, 17 and sequence 5, 16, 33 to eager's loss and grads.
TEST(Dynamic, GptBlockTrainsAtEveryBatchAndSequenceWithOneCompilation) {
  at::manual_seed(0);
  CompiledModel m("gpt_block_dyn", {{0, {0, 1}}, {1, {0, 1}}});
  for (int64_t b : {1, 3, 8, 17}) m.step(gpt_inputs(b, 16), "batch " + std::to_string(b));
  for (int64_t t : {5, 16, 33}) m.step(gpt_inputs(3, t), "seq " + std::to_string(t));
  EXPECT_EQ(m.fn->num_compilations(), 1u);
  std::vector<at::Tensor> args = m.tensors;
  for (const at::Tensor& t : gpt_inputs(3, 5)) args.push_back(t);
  std::shared_ptr<const Graph> g = m.fn->captured_graph(args);
  ASSERT_NE(g, nullptr);
  std::string text = print_graph(*g);
  EXPECT_NE(text.find("idx: \"i64[s0, s1][s1, 1]cpu\""), std::string::npos) << text;
  EXPECT_NE(text.find("torch.ops.aten.sym_size.int(idx, 1)"), std::string::npos) << text;
  auto guards = m.fn->guards(args);
  ASSERT_TRUE(guards.has_value());
  EXPECT_NE(std::find(guards->begin(), guards->end(), "2 <= s1"), guards->end());
  EXPECT_NE(std::find(guards->begin(), guards->end(), "L['targets'].size()[0] == s0"),
            guards->end());
}

TEST(Dynamic, GptBlockInferenceWithOneCompilation) {
  at::manual_seed(1);
  CompiledModel m("gpt_block_dyn", {{0, {0, 1}}, {1, {0, 1}}});
  for (int64_t b : {1, 3, 8, 17}) m.infer(gpt_inputs(b, 16), "batch " + std::to_string(b));
  for (int64_t t : {5, 16, 33}) m.infer(gpt_inputs(3, t), "seq " + std::to_string(t));
  EXPECT_EQ(m.fn->num_compilations(), 1u);
}

std::vector<at::Tensor> cnn_inputs(int64_t batch) {
  return {at::randn({batch, 3, 16, 16}), at::randint(0, 10, {batch}, at::kLong)};
}

// The CNN with batch norm in training mode: its running statistics land in the buffers as
// eagerly, at every batch size, from one compilation.
TEST(Dynamic, CnnTrainsAtEveryBatchWithOneCompilation) {
  at::manual_seed(2);
  CompiledModel m("cnn_bn", {{0, {0}}, {1, {0}}});
  for (int64_t b : {1, 3, 8, 17}) m.step(cnn_inputs(b), "batch " + std::to_string(b));
  EXPECT_EQ(m.fn->num_compilations(), 1u);
  m.compiled->train(false);
  m.eager->train(false);
  CompiledModel e("cnn_bn", {{0, {0}}, {1, {0}}});
  e.compiled->train(false);
  e.eager->train(false);
  for (int64_t b : {3, 8, 17}) e.infer(cnn_inputs(b), "eval batch " + std::to_string(b));
  EXPECT_EQ(e.fn->num_compilations(), 1u);
}

// aot_module with dynamic=True: every input dimension that can be a symbol is one (the channels
// the convolution needs stay static), from the first call.
TEST(Dynamic, AotModuleDynamicOn) {
  struct NetImpl : torch::nn::Module {
    NetImpl() {
      conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 4, 3)));
      bn = register_module("bn", torch::nn::BatchNorm2d(4));
    }
    at::Tensor forward(const at::Tensor& x) { return torch::relu(bn->forward(conv->forward(x))); }
    torch::nn::Conv2d conv{nullptr};
    torch::nn::BatchNorm2d bn{nullptr};
  };
  auto net = std::make_shared<NetImpl>();
  auto eager = std::make_shared<NetImpl>();
  {
    c10::NoGradGuard g;
    for (size_t i = 0; i < net->parameters().size(); ++i)
      eager->parameters()[i].copy_(net->parameters()[i]);
  }
  AOTConfig cfg;
  cfg.dynamic = DynamicMode::kOn;
  AOTModule m = aot_module(
      net,
      [net](const std::vector<at::Tensor>& in) {
        return std::vector<at::Tensor>{net->forward(in[0])};
      },
      cfg);
  for (int64_t b : {2, 5, 9}) {
    at::Tensor x = at::randn({b, 3, 10 + b, 11 + 2 * b});
    at::Tensor y = m({x})[0], want = eager->forward(x);
    expect_close(y, want, "output at batch " + std::to_string(b));
    y.square().sum().backward();
    want.square().sum().backward();
    expect_close(net->conv->weight.grad(), eager->conv->weight.grad(), "conv grad");
    expect_close(net->bn->running_mean, eager->bn->running_mean, "running mean");
    net->zero_grad();
    eager->zero_grad();
  }
  EXPECT_EQ(m.num_compilations(), 1u);
}

std::vector<at::Tensor> reduce_two(const std::vector<at::Tensor>& a) {
  return {a[0].sum(0) * a[1].sum(0)};
}

// dynamic=auto (the default): static first, then one dynamic compilation for the dimension that
// changed; a call that breaks a guard (duck sizing made two dimensions one symbol) compiles again
// and the recompiles log names the guard.
TEST(Dynamic, AutoRecompilesOnceThenGuardsRecompile) {
  RecompileLog recompiles;
  AOTFunction f = aot_function(reduce_two, AOTConfig{});
  auto call = [&](int64_t b1, int64_t b2) {
    std::vector<at::Tensor> a = {at::randn({b1, 4}), at::randn({b2, 4})};
    expect_close(f(a)[0], reduce_two(a)[0],
                 "sizes " + std::to_string(b1) + ", " + std::to_string(b2));
    return a;
  };
  call(4, 4);
  EXPECT_EQ(f.num_compilations(), 1u);
  std::vector<at::Tensor> six = call(6, 6);
  EXPECT_EQ(f.num_compilations(), 2u);
  std::string text = print_graph(*f.captured_graph(six));
  EXPECT_NE(text.find("arg0_1: \"f32[s0, 4][4, 1]cpu\", arg1_1: \"f32[s0, 4][4, 1]cpu\""),
            std::string::npos)
      << text;
  for (int64_t b : {7, 9, 30}) call(b, b);
  EXPECT_EQ(f.num_compilations(), 2u);
  call(5, 7);  // the two are one symbol: the guard fails
  EXPECT_EQ(f.num_compilations(), 3u);
  call(8, 3);  // two symbols now serve
  call(2, 11);
  EXPECT_EQ(f.num_compilations(), 3u);
  std::string log = recompiles.text();
  EXPECT_NE(log.find("compiled with dynamic sizes: s0 = arg0_1.size()[0] (hint 6); guards: 2 <= "
                     "s0; L['arg1_1'].size()[0] == s0"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("Recompiling function (compilation 3): guard failed in the dynamic "
                     "compilation: argument 1 ('arg1_1')'s size 0 is 7, not s0 = 5"),
            std::string::npos)
      << log;
}

// A size 1 breaks the guard 2 <= s0: the function traced at that size decides. The same graph
// (a sum) is served by the dynamic compilation; another graph (squeeze drops the dimension)
// compiles again, and its result is right.
TEST(Dynamic, SizeOneIsCheckedByATrace) {
  auto sum = [](const std::vector<at::Tensor>& a) { return std::vector<at::Tensor>{a[0].sum(0)}; };
  AOTFunction f = aot_function(sum, AOTConfig{});
  for (int64_t b : {4, 6, 1, 1}) {
    at::Tensor x = at::randn({b, 3});
    expect_close(f({x})[0], sum({x})[0], "sum at " + std::to_string(b));
  }
  EXPECT_EQ(f.num_compilations(), 2u);
  auto squeeze = [](const std::vector<at::Tensor>& a) {
    return std::vector<at::Tensor>{a[0].squeeze() * 2};
  };
  AOTFunction g = aot_function(squeeze, AOTConfig{});
  for (int64_t b : {4, 6, 1, 5}) {
    at::Tensor x = at::randn({b, 3});
    expect_close(g({x})[0], squeeze({x})[0], "squeeze at " + std::to_string(b));
  }
  EXPECT_EQ(g.num_compilations(), 3u);
}

// An output the loss does not use gets a zero gradient of this call's size, not the hint's.
TEST(Dynamic, MissingGradientsAreZerosOfTheCallsSize) {
  auto two = [](const std::vector<at::Tensor>& a) {
    return std::vector<at::Tensor>{a[0] * 2, (a[0] * a[0]).sum(0)};
  };
  AOTConfig cfg;
  cfg.dynamic_dims[0] = {0};
  AOTFunction f = aot_function(two, cfg);
  for (int64_t b : {4, 7, 2}) {
    at::Tensor x = at::randn({b, 3}).requires_grad_(), y = x.detach().clone().requires_grad_();
    f({x})[1].sum().backward();
    two({y})[1].sum().backward();
    expect_close(x.grad(), y.grad(), "grad at batch " + std::to_string(b));
  }
  EXPECT_EQ(f.num_compilations(), 1u);
}

// A function that needs its size even (a view of half the batch) compiles once with the symbol
// half the batch (PyTorch prints f32[s0, 3] and s0//2; aotgrad reparametrizes, Note [Unifying
// traces]): the input is f32[2*s0, 3], s0 is read as sym_size // 2, and the guard
// Eq(Mod(size, 2), 0) sends an odd batch to a new compilation.
TEST(Dynamic, AViewOfHalfTheBatchIsGuardedEven) {
  RecompileLog recompiles;
  auto halves = [](const std::vector<at::Tensor>& a) {
    return std::vector<at::Tensor>{a[0].view({a[0].size(0) / 2, -1}).sum(0)};
  };
  AOTFunction f = aot_function(halves, AOTConfig{});
  for (int64_t b : {4, 6, 8, 6, 12}) {
    at::Tensor x = at::randn({b, 3});
    expect_close(f({x})[0], halves({x})[0], "batch " + std::to_string(b));
  }
  EXPECT_EQ(f.num_compilations(), 2u);
  std::vector<at::Tensor> six = {at::randn({6, 3})};
  std::string text = print_graph(*f.captured_graph(six));
  EXPECT_NE(text.find("arg0_1: \"f32[2*s0, 3][3, 1]cpu\""), std::string::npos) << text;
  EXPECT_NE(text.find("floordiv: \"Sym(s0)\" = sym_size_int // 2"), std::string::npos) << text;
  EXPECT_NE(text.find("\"f32[s0, 6][6, 1]cpu\" = torch.ops.aten.view.default(arg0_1, [floordiv, "
                      "-1])"),
            std::string::npos)
      << text;
  std::optional<std::vector<std::string>> guards = f.guards(six);
  ASSERT_TRUE(guards.has_value());
  EXPECT_EQ(*guards, (std::vector<std::string>{"2 <= s0", "Eq(Mod(L['arg0_1'].size()[0], 2), 0)"}));
  at::Tensor odd = at::randn({7, 3});
  expect_close(f({odd})[0], halves({odd})[0], "batch 7");
  EXPECT_EQ(f.num_compilations(), 3u);
  std::string log = recompiles.text();
  EXPECT_NE(log.find("compiled with dynamic sizes: s0 = arg0_1.size()[0] // 2 (hint 3); guards: "
                     "2 <= s0; Eq(Mod(L['arg0_1'].size()[0], 2), 0)"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("guard failed in the dynamic compilation: Eq(Mod(L['arg0_1'].size()[0], 2), "
                     "0) (L['arg0_1'].size()[0] = 7)"),
            std::string::npos)
      << log;
}

// Attention-style heads that split a dynamic width (view(N, 4, W / 4)): one compilation with
// W = 4*s0 trains at widths 8, 12, 20 to eager's grads; a width no multiple of 4 is an error, as
// it is eagerly.
TEST(Dynamic, HeadsOfADynamicWidthTrainWithOneCompilation) {
  auto heads = [](const std::vector<at::Tensor>& a) {
    const int64_t n = a[0].size(0), w = a[0].size(1);
    at::Tensor h = (a[0] * a[1]).view({n, 4, w / 4}).softmax(-1);
    return std::vector<at::Tensor>{(h * h).sum()};
  };
  AOTConfig cfg;
  cfg.dynamic_dims[0] = {1};
  cfg.dynamic_dims[1] = {0};
  AOTFunction f = aot_function(heads, cfg);
  for (int64_t w : {8, 12, 20}) {
    auto opts = at::TensorOptions().dtype(at::kDouble);
    at::Tensor x = at::randn({3, w}, opts).requires_grad_(),
               s = at::randn({w}, opts).requires_grad_();
    at::Tensor ex = x.detach().clone().requires_grad_(), es = s.detach().clone().requires_grad_();
    at::Tensor got = f({x, s})[0], want = heads({ex, es})[0];
    expect_close(got, want, "loss at width " + std::to_string(w));
    got.backward();
    want.backward();
    expect_close(x.grad(), ex.grad(), "grad of x at width " + std::to_string(w));
    expect_close(s.grad(), es.grad(), "grad of s at width " + std::to_string(w));
  }
  EXPECT_EQ(f.num_compilations(), 1u);
  std::optional<std::vector<std::string>> guards =
      f.guards({at::randn({3, 8}, at::kDouble).requires_grad_(),
                at::randn({8}, at::kDouble).requires_grad_()});
  ASSERT_TRUE(guards.has_value());
  EXPECT_EQ(*guards, (std::vector<std::string>{"2 <= s0", "Eq(Mod(L['arg0_1'].size()[1], 4), 0)",
                                               "L['arg1_1'].size()[0] == 4*s0"}));
  try {
    f({at::randn({3, 10}), at::randn({10})});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the dimensions marked dynamic cannot all be symbols"),
              std::string::npos)
        << e.what();
  }
}

// A function whose float argument changes with the size cannot be dynamic: auto compiles static
// sizes, and tries the dynamic capture once, not at every new size.
TEST(Dynamic, AutoFallsBackToStaticSizesOnce) {
  RecompileLog recompiles;
  auto scaled = [](const std::vector<at::Tensor>& a) {
    return std::vector<at::Tensor>{a[0].sum(0) * static_cast<double>(a[0].size(0))};
  };
  AOTFunction f = aot_function(scaled, AOTConfig{});
  for (int64_t b : {4, 6, 8, 6}) {
    at::Tensor x = at::randn({b, 3});
    expect_close(f({x})[0], scaled({x})[0], "batch " + std::to_string(b));
  }
  EXPECT_EQ(f.num_compilations(), 3u);
  std::string log = recompiles.text();
  size_t first = log.find("dynamic sizes failed (");
  EXPECT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find("dynamic sizes failed (", first + 1), std::string::npos) << log;
}

// Slices of a batch (a rank's share, a window of a sequence) start at storage offsets that change
// with the sizes: the capture traces them at offset 0, checks the function at the example's own
// offset, and one compilation serves every offset, in training too. A function that takes an
// as_strided view (an absolute offset) compiles static sizes instead, with the right values.
TEST(Dynamic, SlicesAtAnyStorageOffsetShareOneCompilation) {
  auto f = [](const std::vector<at::Tensor>& a) {
    return std::vector<at::Tensor>{(a[0] * a[0]).sum(0) * a[1]};
  };
  AOTConfig cfg;
  cfg.dynamic_dims[0] = {0};
  AOTFunction g = aot_function(f, cfg);
  for (int64_t b : {4, 6, 9, 5}) {
    at::Tensor x = at::randn({3 * b, 3}, at::kDouble).narrow(0, b, b);  // at offset 3*b
    at::Tensor w = at::randn({3}, at::kDouble).requires_grad_();
    at::Tensor ew = w.detach().clone().requires_grad_();
    at::Tensor got = g({x, w})[0], want = f({x, ew})[0];
    expect_close(got, want, "slice at offset " + std::to_string(3 * b));
    got.sum().backward();
    want.sum().backward();
    expect_close(w.grad(), ew.grad(), "grad at offset " + std::to_string(3 * b));
  }
  EXPECT_EQ(g.num_compilations(), 1u);

  auto strided = [](const std::vector<at::Tensor>& a) {
    return std::vector<at::Tensor>{a[0].as_strided({2}, {1}, 1) * 2 + a[0].sum()};
  };
  AOTConfig on;
  on.dynamic = DynamicMode::kOn;
  AOTFunction h = aot_function(strided, on);
  at::Tensor base = at::randn({20});
  for (int64_t off : {2, 2, 5}) {
    at::Tensor x = base.narrow(0, off, 6 + off);
    expect_close(h({x})[0], strided({x})[0], "as_strided at offset " + std::to_string(off));
  }
  EXPECT_EQ(h.num_compilations(), 2u);  // static sizes: offset 2 (twice), then 5
}

// dynamic=off compiles every size; a marked dimension the function needs static is an error.
TEST(Dynamic, OffAndMarkedErrors) {
  AOTConfig off;
  off.dynamic = DynamicMode::kOff;
  AOTFunction f = aot_function(reduce_two, off);
  for (int64_t b : {4, 6, 8}) f({at::randn({b, 4}), at::randn({b, 4})});
  EXPECT_EQ(f.num_compilations(), 3u);
  auto mm = [](const std::vector<at::Tensor>& a) { return std::vector<at::Tensor>{a[0].mm(a[1])}; };
  AOTConfig marked;
  marked.dynamic_dims[0] = {1};  // the inner dimension of a matmul with a static weight
  AOTFunction g = aot_function(mm, marked);
  try {
    g({at::randn({4, 5}), at::randn({5, 3})});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the dimensions marked dynamic cannot all be symbols"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace aotgrad
