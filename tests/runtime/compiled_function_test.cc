// Tests for training compilation: the seed's §13.20 partition, and grads through libtorch autograd.
#include "aotgrad/runtime/compiled_function.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/profiler_legacy.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "aotgrad/driver/cache_store.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ops/registry.h"
#include "transposing_compiler.h"

namespace aotgrad {
namespace {

const char* kLinearRelu = R"(
def forward(self, x: "f32[4, 8]", w: "f32[16, 8]", b: "f32[16]"):
    t = torch.ops.aten.t.default(w)
    addmm = torch.ops.aten.addmm.default(b, x, t)
    relu = torch.ops.aten.relu.default(addmm)
    return (relu,)
)";

std::vector<std::string> names(const std::vector<Node*>& nodes) {
  std::vector<std::string> out;
  for (auto* n : nodes) out.push_back(n->name());
  return out;
}

// §13.20: x does not require grad; the default partition saves x and relu's output.
TEST(CompiledFunction, Seed13_20_LinearReluSavesInputAndReluOutput) {
  auto g = parse_graph(kLinearRelu, aten_ops());
  CompileOptions o;
  o.partition = PartitionKind::kDefault;
  TrainingArtifacts a = compile_for_training(*g, {false, true, true}, o);
  std::vector<std::string> ops;
  for (const Node* n : a.joint->nodes())
    if (n->kind() == NodeKind::Call) ops.push_back(n->name());
  EXPECT_EQ(ops, (std::vector<std::string>{"t", "addmm", "relu", "detach", "detach_1",
                                           "threshold_backward", "t_1", "mm", "t_2", "sum_1",
                                           "view", "t_3"}));
  EXPECT_EQ(a.saved, (std::vector<std::string>{"primals_1", "relu"}));
  EXPECT_EQ(names(a.bw->placeholders()),
            (std::vector<std::string>{"primals_1", "relu", "tangents_1"}));
  const Arg& bw_out = a.bw->output()->args()[0];
  ASSERT_EQ(bw_out.list.size(), 3u);
  EXPECT_TRUE(bw_out.list[0].is_none());
  EXPECT_EQ(bw_out.list[1].node->name(), "t_3");
  EXPECT_EQ(bw_out.list[2].node->name(), "view");
}

// §13.20 with the min-cut partition (the pipeline's default): x and relu's output (as detach_1, an
// alias of it) are saved, as the seed's fw_module returns (relu, primals_1, detach_1).
TEST(CompiledFunction, Seed13_20_MinCutSavesInputAndReluOutput) {
  auto g = parse_graph(kLinearRelu, aten_ops());
  TrainingArtifacts a = compile_for_training(*g, {false, true, true});
  EXPECT_EQ(a.saved, (std::vector<std::string>{"primals_1", "detach_1"}));
  EXPECT_EQ(names(a.bw->placeholders()),
            (std::vector<std::string>{"primals_1", "detach_1", "tangents_1"}));
  ASSERT_NE(a.explain, nullptr);
  EXPECT_EQ(a.explain->saved_activation_bytes, 4 * 16 * 4);
}

TEST(CompiledFunction, GradsMatchEagerAutograd) {
  CompiledFunction f(parse_graph(kLinearRelu, aten_ops()), {false, true, true});
  at::Tensor x = at::randn({4, 8});
  at::Tensor w = at::randn({16, 8}).requires_grad_(), b = at::randn({16}).requires_grad_();
  auto out = f({x, w, b});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].requires_grad());
  at::Tensor go = at::randn({4, 16});
  out[0].backward(go);
  at::Tensor we = w.detach().clone().requires_grad_(), be = b.detach().clone().requires_grad_();
  at::Tensor ref = at::relu(at::addmm(be, x, we.t()));
  ref.backward(go);
  EXPECT_TRUE(at::allclose(out[0], ref));
  EXPECT_TRUE(at::allclose(w.grad(), we.grad(), 1e-5, 1e-6));
  EXPECT_TRUE(at::allclose(b.grad(), be.grad(), 1e-5, 1e-6));
}

TEST(CompiledFunction, MutatedBufferIsWrittenBackInTraining) {
  CompiledFunction f(parse_graph(R"(
def forward(self, x: "f32[4]", counter: "i64[]"):
    add_ = torch.ops.aten.add_.Tensor(counter, 1)
    mul = torch.ops.aten.mul.Tensor(x, x)
    sum_1 = torch.ops.aten.sum.default(mul)
    return (sum_1,)
)",
                                 aten_ops()),
                     {true, false});
  at::Tensor x = at::randn({4}).requires_grad_();
  at::Tensor counter = at::zeros({}, at::kLong);
  for (int i = 0; i < 3; ++i) {
    auto out = f({x, counter});
    out[0].backward();
  }
  EXPECT_EQ(counter.item<int64_t>(), 3);
  EXPECT_TRUE(at::allclose(x.grad(), 3 * 2 * x.detach()));
}

// A buffer that is a view with a storage offset gets a metadata and a data mutation: the caller's
// tensor ends with eager's geometry (offset kept) and values, and its base sees the write.
TEST(CompiledFunction, MetadataMutationOfOffsetInputKeepsEagerGeometry) {
  const char* text = R"(
def forward(self, buf: "f32[2, 3]", w: "f32[3, 2]"):
    t_ = torch.ops.aten.t_.default(buf)
    add_ = torch.ops.aten.add_.Tensor(t_, 1)
    mul = torch.ops.aten.mul.Tensor(add_, w)
    return (mul, add_)
)";
  CompiledFunction f(parse_graph(text, aten_ops()), {false, true});
  at::Tensor base = at::arange(20, at::kFloat), base_e = base.clone();
  at::Tensor buf = base.slice(0, 4, 10).view({2, 3}), buf_e = base_e.slice(0, 4, 10).view({2, 3});
  at::Tensor w = at::randn({3, 2}).requires_grad_(), w_e = w.detach().clone().requires_grad_();
  auto out = f({buf, w});
  buf_e.t_();
  buf_e.add_(1);
  at::Tensor ref = buf_e * w_e;
  EXPECT_EQ(buf.sizes(), buf_e.sizes());
  EXPECT_EQ(buf.strides(), buf_e.strides());
  EXPECT_EQ(buf.storage_offset(), buf_e.storage_offset());
  EXPECT_TRUE(at::equal(base, base_e));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(at::allclose(out[0], ref));
  EXPECT_TRUE(out[1].is_same(buf));  // the returned input is the caller's tensor, as in eager
  at::Tensor go = at::randn({3, 2});
  out[0].backward(go);
  ref.backward(go);
  EXPECT_TRUE(at::allclose(w.grad(), w_e.grad()));
}

// The backward needs a buffer the forward then writes (as native_batch_norm's backward takes
// running_mean): it gets the value the forward used, and autograd's version check does not fire.
TEST(CompiledFunction, SavedInputThatIsWrittenBackKeepsItsForwardValue) {
  CompiledFunction f(parse_graph(R"(
def forward(self, x: "f32[4]", buf: "f32[4]"):
    mul = torch.ops.aten.mul.Tensor(x, buf)
    add_ = torch.ops.aten.add_.Tensor(buf, 1)
    sum_1 = torch.ops.aten.sum.default(mul)
    return (sum_1,)
)",
                                 aten_ops()),
                     {true, false});
  at::Tensor x = at::randn({4}).requires_grad_();
  at::Tensor buf = at::randn({4});
  at::Tensor before = buf.clone();
  auto out = f({x, buf});
  EXPECT_TRUE(at::allclose(buf, before + 1));
  out[0].backward();
  EXPECT_TRUE(at::allclose(x.grad(), before));
}

// A backend that records, for each call, how many owners each tensor argument has, then runs the
// interpreter.
class ProbeCompiler final : public Compiler {
 public:
  std::string name() const override { return "probe"; }
  CompiledFn compile(std::shared_ptr<const Graph> graph) const override {
    CompiledFn inner = InterpreterCompiler().compile(std::move(graph));
    return [this, inner](std::vector<c10::IValue> in) {
      std::vector<long> counts;
      for (const c10::IValue& v : in) counts.push_back(v.isTensor() ? v.toTensor().use_count() : 0);
      calls.push_back(std::move(counts));
      return inner(std::move(in));
    };
  }
  mutable std::vector<std::vector<long>> calls;
};

// Without retain_graph the backward graph receives the only reference to each saved value, so the
// interpreter frees it after its last use (as PyTorch's boxed backward with
// maybe_clear_saved_tensors, and as eager autograd frees a node's saved tensors once it ran);
// with retain_graph the values stay for a second backward; a backward after the values were
// freed is an error, as in eager.
TEST(CompiledFunction, BackwardOwnsSavedValuesUnlessTheGraphIsRetained) {
  auto probe = std::make_shared<ProbeCompiler>();
  TrainOptions options;
  options.bw_compiler = probe;
  CompiledFunction f(parse_graph(kLinearRelu, aten_ops()), {false, true, true}, options);
  const size_t n_saved = f.artifacts().saved.size();
  ASSERT_EQ(n_saved, 2u);  // x and relu's output
  at::Tensor x = at::randn({4, 8});
  at::Tensor w = at::randn({16, 8}).requires_grad_(), b = at::randn({16}).requires_grad_();

  auto out = f({x, w, b});
  out[0].sum().backward({}, /*retain_graph=*/true);
  ASSERT_EQ(probe->calls.size(), 1u);
  for (size_t k = 0; k < n_saved; ++k) EXPECT_GT(probe->calls[0][k], 1) << "saved value " << k;
  at::Tensor first = w.grad().clone();
  out[0].sum().backward();  // the retained values again: the grads accumulate
  ASSERT_EQ(probe->calls.size(), 2u);
  for (size_t k = 0; k < n_saved; ++k) EXPECT_EQ(probe->calls[1][k], 1) << "saved value " << k;
  EXPECT_TRUE(at::allclose(w.grad(), 2 * first));
  try {
    out[0].sum().backward();
    FAIL() << "a third backward found the freed values";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("a second time"), std::string::npos) << e.what();
  }
}

// A saved value modified in place before the backward is an error, as SavedVariable's check.
TEST(CompiledFunction, SavedValueModifiedInPlaceIsAnError) {
  CompiledFunction f(parse_graph(kLinearRelu, aten_ops()), {false, true, true});
  at::Tensor x = at::randn({4, 8});
  at::Tensor w = at::randn({16, 8}).requires_grad_(), b = at::randn({16}).requires_grad_();
  auto out = f({x, w, b});
  x.mul_(2);  // x is saved (primals_1)
  try {
    out[0].sum().backward();
    FAIL() << "expected the version check to fire";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("modified by an inplace operation"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("primals_1"), std::string::npos) << e.what();
  }
}

// A fresh temporary directory for one test's compile cache, removed afterwards.
struct CacheDir {
  std::filesystem::path path;
  CacheDir() {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "aotgrad-cf-cache-XXXXXX").string();
    AOTGRAD_CHECK(::mkdtemp(tmpl.data()), "mkdtemp failed");
    path = tmpl;
  }
  ~CacheDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// Records the graphs a backend receives, as text, and runs them on the interpreter.
class RecordingCompiler final : public Compiler {
 public:
  std::string name() const override { return "recording"; }
  CompiledFn compile(std::shared_ptr<const Graph> graph) const override {
    texts.push_back(print_graph(*graph));
    return default_compiler()->compile(graph);
  }
  mutable std::vector<std::string> texts;
};

// Linear + relu with a counter buffer written in place and a MUST_RECOMPUTE dropout, whose mask
// the backward replays from the saved generator state.
const char* kCachedStep = R"(
def forward(self, x: "f32[4, 8]", w: "f32[16, 8]", b: "f32[16]", counter: "i64[]"):
    add_ = torch.ops.aten.add_.Tensor(counter, 1)
    t = torch.ops.aten.t.default(w)
    addmm = torch.ops.aten.addmm.default(b, x, t)
    relu = torch.ops.aten.relu.default(addmm)
    native_dropout = torch.ops.aten.native_dropout.default(relu, 0.5, True)
    getitem = native_dropout[0]
    sum_1 = torch.ops.aten.sum.default(getitem)
    return (sum_1,)
)";

std::shared_ptr<Graph> cached_step_graph() {
  auto g = parse_graph(kCachedStep, aten_ops());
  g->find("native_dropout")->info().recompute = RecomputePolicy::MustRecompute;
  return g;
}

struct StepResult {
  at::Tensor loss, w_grad, b_grad, counter;
};

StepResult compiled_step(CompiledFunction& f, const at::Tensor& x, const at::Tensor& w0,
                         const at::Tensor& b0, uint64_t seed) {
  at::Tensor w = w0.clone().requires_grad_(), b = b0.clone().requires_grad_();
  at::Tensor counter = at::zeros({}, at::kLong);
  at::manual_seed(seed);
  auto out = f({x, w, b, counter});
  out[0].backward();
  return {out[0].detach(), w.grad(), b.grad(), counter};
}

StepResult eager_step(const at::Tensor& x, const at::Tensor& w0, const at::Tensor& b0,
                      uint64_t seed) {
  at::Tensor w = w0.clone().requires_grad_(), b = b0.clone().requires_grad_();
  at::Tensor counter = at::zeros({}, at::kLong);
  at::manual_seed(seed);
  counter.add_(1);
  at::Tensor relu = at::relu(at::addmm(b, x, w.t()));
  at::Tensor loss = std::get<0>(at::native_dropout(relu, 0.5, true)).sum();
  loss.backward();
  return {loss.detach(), w.grad(), b.grad(), counter};
}

// The compile cache: a second CompiledFunction of the same graph and options loads the first one's
// entry (the pipeline does not run), its backends receive text-identical graphs, and a training
// step with it matches eager autograd -- loss, grads, the written-back buffer, the dropout mask.
TEST(CompiledFunction, CacheHitTrainsAsEager) {
  CacheDir dir;
  reset_compile_cache_stats();
  auto fw1 = std::make_shared<RecordingCompiler>(), bw1 = std::make_shared<RecordingCompiler>();
  TrainOptions o1;
  o1.pipeline.cache_dir = dir.path.string();
  o1.fw_compiler = fw1;
  o1.bw_compiler = bw1;
  CompiledFunction first(cached_step_graph(), {false, true, true, false}, o1);
  EXPECT_FALSE(first.cache_hit());
  ASSERT_NE(first.artifacts().joint, nullptr);
  auto fw2 = std::make_shared<RecordingCompiler>(), bw2 = std::make_shared<RecordingCompiler>();
  TrainOptions o2 = o1;
  o2.fw_compiler = fw2;
  o2.bw_compiler = bw2;
  CompiledFunction second(cached_step_graph(), {false, true, true, false}, o2);
  EXPECT_TRUE(second.cache_hit());
  EXPECT_EQ(second.artifacts().joint, nullptr);
  EXPECT_EQ(second.artifacts().explain, nullptr);
  CompileCacheStats s = compile_cache_stats();
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.hits, 1);
  EXPECT_EQ(fw1->texts, fw2->texts);
  EXPECT_EQ(bw1->texts, bw2->texts);
  ASSERT_EQ(fw2->texts.size(), 1u);
  EXPECT_NE(fw2->texts[0].find("run_and_save_rng_state"), std::string::npos);

  at::Tensor x = at::randn({4, 8}), w = at::randn({16, 8}), b = at::randn({16});
  for (uint64_t seed : {7u, 8u}) {
    StepResult e = eager_step(x, w, b, seed);
    for (CompiledFunction* f : {&first, &second}) {
      StepResult r = compiled_step(*f, x, w, b, seed);
      EXPECT_TRUE(at::allclose(r.loss, e.loss, 1e-5, 1e-5)) << seed;
      EXPECT_TRUE(at::allclose(r.w_grad, e.w_grad, 1e-5, 1e-6)) << seed;
      EXPECT_TRUE(at::allclose(r.b_grad, e.b_grad, 1e-5, 1e-6)) << seed;
      EXPECT_EQ(r.counter.item<int64_t>(), 1);
    }
  }
}

// A corrupted entry: one warning, the graph compiles again, trains as eager, and the rewritten
// entry serves the next compilation.
TEST(CompiledFunction, CorruptCacheEntryRecovers) {
  CacheDir dir;
  TrainOptions o;
  o.pipeline.cache_dir = dir.path.string();
  { CompiledFunction f(cached_step_graph(), {false, true, true, false}, o); }
  std::filesystem::path entry;
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) entry = e.path();
  ASSERT_EQ(entry.extension(), ".entry");
  std::filesystem::resize_file(entry, std::filesystem::file_size(entry) / 3);
  reset_compile_cache_stats();
  testing::internal::CaptureStderr();
  CompiledFunction f(cached_step_graph(), {false, true, true, false}, o);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(f.cache_hit());
  EXPECT_NE(err.find(entry.string()), std::string::npos) << err;
  EXPECT_NE(err.find("truncated"), std::string::npos) << err;
  EXPECT_EQ(compile_cache_stats().corrupt, 1);
  at::Tensor x = at::randn({4, 8}), w = at::randn({16, 8}), b = at::randn({16});
  StepResult e = eager_step(x, w, b, 3), r = compiled_step(f, x, w, b, 3);
  EXPECT_TRUE(at::allclose(r.loss, e.loss, 1e-5, 1e-5));
  EXPECT_TRUE(at::allclose(r.w_grad, e.w_grad, 1e-5, 1e-6));
  CompiledFunction again(cached_step_graph(), {false, true, true, false}, o);
  EXPECT_TRUE(again.cache_hit());
}

// Other options are another entry; "off" and "" use no cache at all.
TEST(CompiledFunction, CacheKeyFollowsOptionsAndOffDisables) {
  CacheDir dir;
  TrainOptions o;
  o.pipeline.cache_dir = dir.path.string();
  { CompiledFunction f(cached_step_graph(), {false, true, true, false}, o); }
  o.pipeline.partition = PartitionKind::kDefault;
  CompiledFunction d(cached_step_graph(), {false, true, true, false}, o);
  EXPECT_FALSE(d.cache_hit());
  reset_compile_cache_stats();
  for (const char* off : {"off", ""}) {
    o.pipeline.cache_dir = off;
    CompiledFunction f(cached_step_graph(), {false, true, true, false}, o);
    EXPECT_FALSE(f.cache_hit());
  }
  CompileCacheStats s = compile_cache_stats();
  EXPECT_EQ(s.hits + s.misses + s.saved + s.bypasses, 0);
}

// §13.46: the forward is the profiler range CompiledFunction, the backward the autograd node
// CompiledFunctionBackward (grad_fn name and profiler range), as in PyTorch.
TEST(CompiledFunction, ProfilerAndGradFnNames) {
  CompiledFunction f(parse_graph(kLinearRelu, aten_ops()), {false, true, true});
  at::Tensor x = at::randn({4, 8});
  at::Tensor w = at::randn({16, 8}).requires_grad_(), b = at::randn({16}).requires_grad_();
  std::ostringstream trace;
  {
    torch::autograd::profiler::RecordProfile profile(trace);
    at::Tensor out = f({x, w, b})[0];
    ASSERT_NE(out.grad_fn(), nullptr);
    EXPECT_EQ(out.grad_fn()->name(), "CompiledFunctionBackward");
    out.sum().backward();
  }
  std::string t = trace.str();
  EXPECT_NE(t.find("\"name\": \"CompiledFunction\""), std::string::npos) << t.substr(0, 2000);
  EXPECT_NE(t.find("\"name\": \"CompiledFunctionBackward\""), std::string::npos)
      << t.substr(0, 2000);
}

// Double backward (Note [Double backward]): create_graph gives eager's first-order grads, and
// differentiating them again gives eager's second-order grads (through the joint graph's gradient
// part compiled as a function of the primals and tangents), with allow_unused both ways.
TEST(CompiledFunction, DoubleBackwardEqualsEager) {
  CompiledFunction f(parse_graph(kLinearRelu, aten_ops()), {false, true, true});
  at::Tensor x = at::randn({4, 8}, at::kDouble).to(at::kFloat);
  at::Tensor w = at::randn({16, 8}).requires_grad_(), b = at::randn({16}).requires_grad_();
  at::Tensor y = f({x, w, b})[0];
  at::Tensor loss = (y * y * y).sum();
  std::vector<at::Tensor> g = torch::autograd::grad({loss}, {w}, {}, true, /*create_graph=*/true);
  at::Tensor we = w.detach().clone().requires_grad_(), be = b.detach().clone().requires_grad_();
  at::Tensor r = at::relu(at::addmm(be, x, we.t()));
  std::vector<at::Tensor> ge =
      torch::autograd::grad({(r * r * r).sum()}, {we}, {}, true, /*create_graph=*/true);
  EXPECT_TRUE(at::allclose(g[0], ge[0], 1e-4, 1e-4));
  ASSERT_TRUE(g[0].requires_grad());
  // d/d(w, b) of a function of the first-order grad: eager's.
  at::Tensor penalty = (g[0] * g[0]).sum(), penalty_e = (ge[0] * ge[0]).sum();
  std::vector<at::Tensor> h = torch::autograd::grad({penalty}, {w, b});
  std::vector<at::Tensor> he = torch::autograd::grad({penalty_e}, {we, be});
  EXPECT_TRUE(at::allclose(h[0], he[0], 1e-3, 1e-3)) << h[0] - he[0];
  EXPECT_TRUE(at::allclose(h[1], he[1], 1e-3, 1e-3)) << h[1] - he[1];
  // x does not require grad: asking for it is libtorch's error, and allow_unused gives None as
  // eagerly; never a silent zero where eager has a gradient.
  at::Tensor y2 = f({x, w, b})[0];
  std::vector<at::Tensor> g2 =
      torch::autograd::grad({(y2 * y2).sum()}, {w, b}, {}, true, /*create_graph=*/true);
  std::vector<at::Tensor> u =
      torch::autograd::grad({g2[1].sum()}, {w, b}, {}, true, false, /*allow_unused=*/true);
  at::Tensor r2 = at::relu(at::addmm(be, x, we.t()));
  std::vector<at::Tensor> ge2 =
      torch::autograd::grad({(r2 * r2).sum()}, {we, be}, {}, true, /*create_graph=*/true);
  std::vector<at::Tensor> ue =
      torch::autograd::grad({ge2[1].sum()}, {we, be}, {}, true, false, /*allow_unused=*/true);
  ASSERT_EQ(u[0].defined(), ue[0].defined());
  ASSERT_EQ(u[1].defined(), ue[1].defined());
  if (u[0].defined()) EXPECT_TRUE(at::allclose(u[0], ue[0], 1e-4, 1e-4));
  if (u[1].defined()) EXPECT_TRUE(at::allclose(u[1], ue[1], 1e-4, 1e-4));
}

// What cannot be recomputed from the inputs: create_graph still gives the first-order grads, and
// differentiating them again is an error naming the construct, here a random op.
TEST(CompiledFunction, DoubleBackwardThroughRandomOpsIsAClearError) {
  CompiledFunction f(parse_graph(R"(
def forward(self, x: "f32[4, 8]", w: "f32[8, 8]"):
    mm = torch.ops.aten.mm.default(x, w)
    native_dropout = torch.ops.aten.native_dropout.default(mm, 0.5, True)
    getitem = native_dropout[0]
    return (getitem,)
)",
                                 aten_ops()),
                     {false, true});
  at::Tensor x = at::randn({4, 8}), w = at::randn({8, 8}).requires_grad_();
  at::Tensor y = f({x, w})[0];
  std::vector<at::Tensor> g =
      torch::autograd::grad({(y * y).sum()}, {w}, {}, true, /*create_graph=*/true);
  try {
    g[0].sum().backward();
    ADD_FAILURE() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("double backward through this aotgrad compiled function "
                                         "is not supported: it has random ops (node "
                                         "'native_dropout'"),
              std::string::npos)
        << e.what();
  }
}

// DebugAssertWrapper: an input that requires grad but was compiled without is always an error
// (its grad would be missing); the reverse only with debug_assert.
TEST(CompiledFunction, RequiresGradOfInputsIsChecked) {
  at::Tensor x = at::randn({4, 8});
  at::Tensor w = at::randn({16, 8}).requires_grad_(), b = at::randn({16}).requires_grad_();
  CompiledFunction f(parse_graph(kLinearRelu, aten_ops()), {false, true, true});
  try {
    f({x.clone().requires_grad_(), w, b});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("argument 0 requires grad but was compiled as not requiring grad"),
              std::string::npos)
        << e.message();
  }
  {
    c10::NoGradGuard no_grad;  // no gradient can go missing
    EXPECT_NO_THROW(f({x.clone().requires_grad_(), w, b}));
  }
  EXPECT_NO_THROW(f({x, w.detach(), b}));  // compiled with a grad it does not need
  TrainOptions o;
  o.debug_assert = true;
  CompiledFunction strict(parse_graph(kLinearRelu, aten_ops()), {false, true, true}, o);
  EXPECT_NO_THROW(strict({x, w, b}));
  try {
    strict({x, w.detach(), b});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("debug_assert: argument 1"), std::string::npos) << e.message();
  }
}

// FakifiedOutWrapper: a custom forward compiler's outputs get the traced strides back.
TEST(CompiledFunction, CustomForwardOutputsKeepTracedStrides) {
  TrainOptions o;
  o.fw_compiler = std::make_shared<TransposingCompiler>();
  CompiledFunction f(parse_graph(kLinearRelu, aten_ops()), {false, true, true}, o);
  at::Tensor x = at::randn({4, 8});
  at::Tensor w = at::randn({16, 8}).requires_grad_(), b = at::randn({16}).requires_grad_();
  at::Tensor out = f({x, w, b})[0];
  EXPECT_EQ(out.strides(), (std::vector<int64_t>{16, 1}));
  EXPECT_TRUE(at::allclose(out, at::relu(at::addmm(b, x, w.t()))));
  out.sum().backward();
  EXPECT_TRUE(at::allclose(b.grad(), (at::addmm(b, x, w.t()) > 0).sum(0).to(at::kFloat)));
}

}  // namespace
}  // namespace aotgrad
