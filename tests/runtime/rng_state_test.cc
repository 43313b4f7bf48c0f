// Tests of RNG-safe recomputation against libtorch (§13.25): the generator state's size, the
// run_and_save_rng_state / run_with_rng_state ops in the interpreter, and a dropout the backward
// recomputes drawing the forward's mask bit for bit, with eager's grads and an undisturbed stream.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/runtime/compiled_function.h"
#include "aotgrad/runtime/interpreter.h"

namespace aotgrad {
namespace {

at::Tensor cpu_state() {
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

TEST(RngState, CpuGeneratorStateIsTheDeclaredU8Tensor) {
  at::Tensor s = cpu_state();
  EXPECT_EQ(s.scalar_type(), at::kByte);
  ASSERT_EQ(s.dim(), 1);
  EXPECT_EQ(s.numel(), kCpuRngStateBytes);
  EXPECT_EQ(s.numel(), cpu_rng_state_meta().sizes[0].value());
}

TEST(RngState, InterpreterReplaysTheSavedStateAndRestoresTheGenerator) {
  auto g = std::shared_ptr<const Graph>(parse_graph(R"(
def forward(self, x: "f32[64]"):
    run_and_save_rng_state = torch.ops.higher_order.run_and_save_rng_state(torch.ops.aten.rand_like.default, x)
    getitem = run_and_save_rng_state[0]
    getitem_1 = run_and_save_rng_state[1]
    rand_like = torch.ops.aten.rand_like.default(x)
    run_with_rng_state = torch.ops.higher_order.run_with_rng_state(getitem, torch.ops.aten.rand_like.default, x)
    rand_like_1 = torch.ops.aten.rand_like.default(x)
    return (getitem, getitem_1, rand_like, run_with_rng_state, rand_like_1)
)",
                                                    aten_ops()));
  Interpreter interp(g);
  at::Tensor x = at::zeros({64});
  at::manual_seed(7);
  at::Tensor seeded = cpu_state();
  std::vector<c10::IValue> out = interp.run({x});
  at::Tensor after = cpu_state();
  at::manual_seed(7);
  at::Tensor first = at::rand_like(x), second = at::rand_like(x), third = at::rand_like(x);
  EXPECT_TRUE(at::equal(cpu_state(), after));  // three draws, as eager
  EXPECT_TRUE(at::equal(out[0].toTensor(), seeded));
  EXPECT_TRUE(at::equal(out[1].toTensor(), first));
  EXPECT_TRUE(at::equal(out[2].toTensor(), second));
  EXPECT_TRUE(at::equal(out[3].toTensor(), first));  // replayed bit for bit
  EXPECT_TRUE(at::equal(out[4].toTensor(), third));  // the generator was put back
}

TEST(RngState, ABadStateIsAnErrorAndLeavesTheGeneratorAlone) {
  auto g = std::shared_ptr<const Graph>(parse_graph(R"(
def forward(self, s: "u8[10]", x: "f32[4]"):
    run_with_rng_state = torch.ops.higher_order.run_with_rng_state(s, torch.ops.aten.rand_like.default, x)
    return (run_with_rng_state,)
)",
                                                    aten_ops()));
  Interpreter interp(g);
  at::manual_seed(3);
  at::Tensor before = cpu_state();
  try {
    interp.run({at::zeros({10}, at::kByte), at::zeros({4})});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.message(),
                testing::StartsWith("node 'run_with_rng_state' (higher_order::run_with_rng_state): "
                                    "cannot set the CPU generator's state: "));
  }
  EXPECT_TRUE(at::equal(cpu_state(), before));
}

// --- training: a dropout the backward recomputes ------------------------------------------------

// sin -> native_dropout -> cos -> sum; the mask is returned too, to compare with the backward's.
const char* kDropout = R"(
def forward(self, x: "f32[16, 32]"):
    sin = torch.ops.aten.sin.default(x)
    native_dropout = torch.ops.aten.native_dropout.default(sin, 0.5, True)
    getitem = native_dropout[0]
    getitem_1 = native_dropout[1]
    cos = torch.ops.aten.cos.default(getitem)
    sum_1 = torch.ops.aten.sum.default(cos)
    return (sum_1, getitem_1)
)";

std::unique_ptr<CompiledFunction> compile(RecomputePolicy policy, CompileOptions o = {}) {
  auto g = parse_graph(kDropout, aten_ops());
  g->find("native_dropout")->info().recompute = policy;
  return std::make_unique<CompiledFunction>(std::move(g), std::vector<bool>{true},
                                            TrainOptions{nullptr, nullptr, o});
}

// The ops a graph calls, higher-order ops as "run_with_rng_state(aten::native_dropout)".
std::vector<std::string> ops_of(const Graph& g) {
  std::vector<std::string> out;
  for (const Node* n : g.nodes())
    if (n->kind() == NodeKind::Call)
      out.push_back(n->op()->wrapped ? n->op()->short_name + "(" + n->op()->wrapped->name + ")"
                                     : n->op()->name);
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

struct Step {
  at::Tensor loss, mask, grad;
  at::Tensor state_after_forward, state_after_backward;
};

Step compiled_step(CompiledFunction& f, const at::Tensor& x0, uint64_t seed) {
  Step s;
  at::Tensor x = x0.detach().clone().requires_grad_();
  at::manual_seed(seed);
  std::vector<at::Tensor> out = f({x});
  s.state_after_forward = cpu_state();
  s.loss = out.at(0);
  s.mask = out.at(1);
  s.loss.backward();
  s.state_after_backward = cpu_state();
  s.grad = x.grad();
  return s;
}

Step eager_step(const at::Tensor& x0, uint64_t seed) {
  Step s;
  at::Tensor x = x0.detach().clone().requires_grad_();
  at::manual_seed(seed);
  auto [y, mask] = at::native_dropout(at::sin(x), 0.5, true);
  s.state_after_forward = cpu_state();
  s.loss = at::cos(y).sum();
  s.mask = mask;
  s.loss.backward();
  s.state_after_backward = cpu_state();
  s.grad = x.grad();
  return s;
}

void expect_matches_eager(CompiledFunction& f, const std::string& what) {
  SCOPED_TRACE(what);
  at::manual_seed(0);
  at::Tensor x = at::randn({16, 32});
  for (uint64_t seed : {1u, 2u, 3u}) {
    Step c = compiled_step(f, x, seed), e = eager_step(x, seed);
    EXPECT_TRUE(at::equal(c.mask, e.mask)) << "seed " << seed;
    // Where the backward's mask (recomputed) is off, the grad is exactly 0; where on, it is not.
    EXPECT_TRUE(at::equal(c.grad.ne(0), c.mask)) << "seed " << seed;
    EXPECT_TRUE(at::allclose(c.loss, e.loss, 1e-5, 1e-6)) << "seed " << seed;
    EXPECT_TRUE(at::allclose(c.grad, e.grad, 1e-5, 1e-7)) << "seed " << seed;
    // The backward leaves the generator where the forward left it, as eager's does.
    EXPECT_TRUE(at::equal(c.state_after_forward, e.state_after_forward)) << "seed " << seed;
    EXPECT_TRUE(at::equal(c.state_after_backward, e.state_after_backward)) << "seed " << seed;
  }
}

TEST(RngState, RecomputedDropoutDrawsTheForwardsMask) {
  auto f = compile(RecomputePolicy::MustRecompute);
  const TrainingArtifacts& a = f->artifacts();
  std::vector<std::string> fw = ops_of(*a.fw), bw = ops_of(*a.bw);
  EXPECT_TRUE(has(fw, "run_and_save_rng_state(aten::native_dropout)")) << print_graph(*a.fw);
  EXPECT_FALSE(has(fw, "aten::native_dropout"));
  EXPECT_TRUE(has(bw, "run_with_rng_state(aten::native_dropout)")) << print_graph(*a.bw);
  EXPECT_FALSE(has(bw, "aten::native_dropout"));
  ASSERT_NE(a.bw->find("rng_state_output_0"), nullptr) << print_graph(*a.bw);
  EXPECT_EQ(a.bw->find("rng_state_output_0")->meta().annotation(), "u8[5056][1]cpu");
  ASSERT_NE(a.explain, nullptr);
  bool saved_state = false;
  for (const auto& s : a.explain->saved)
    saved_state = saved_state || s.why == "rng state for recomputed native_dropout";
  EXPECT_TRUE(saved_state) << explain_text(*a.explain);
  expect_matches_eager(*f, "MUST_RECOMPUTE");
}

TEST(RngState, SavedDropoutGivesTheSameNumbers) {
  CompileOptions o;
  o.min_cut.recompute_random_ops = false;
  auto f = compile(RecomputePolicy::MustRecompute, o);
  EXPECT_FALSE(has(ops_of(*f->artifacts().bw), "run_with_rng_state(aten::native_dropout)"));
  expect_matches_eager(*f, "saved");
}

// The activation memory budget may recompute an untagged dropout: at budget 0 priced by summed
// bytes (PyTorch's budget) only the inputs are saved, and the state.
TEST(RngState, DropoutTheMemoryBudgetRecomputesDrawsTheForwardsMask) {
  CompileOptions o;
  o.min_cut.activation_memory_budget = 0;
  o.min_cut.budget_pricing = BudgetPricing::kSum;
  auto f = compile(RecomputePolicy::None, o);
  const TrainingArtifacts& a = f->artifacts();
  EXPECT_TRUE(has(ops_of(*a.bw), "run_with_rng_state(aten::native_dropout)")) << print_graph(*a.bw);
  ASSERT_NE(a.explain, nullptr);
  ASSERT_EQ(a.explain->saved.size(), 2u) << explain_text(*a.explain);
  EXPECT_TRUE(a.explain->saved[0].is_input);
  EXPECT_EQ(a.explain->saved[1].why, "rng state for recomputed native_dropout");
  expect_matches_eager(*f, "memory budget 0");
}

// Through the full decomposition table native_dropout is bernoulli.p on a bool empty_like: the
// tag reaches what it decomposes to, and the backward replays the bernoulli draw.
TEST(RngState, RecomputedBernoulliOfTheFullDecompositionDrawsTheForwardsMask) {
  CompileOptions o;
  o.decompositions = DecompositionTable::full();
  auto f = compile(RecomputePolicy::PreferRecompute, o);
  const TrainingArtifacts& a = f->artifacts();
  EXPECT_TRUE(has(ops_of(*a.fw), "run_and_save_rng_state(aten::bernoulli.p)"))
      << print_graph(*a.fw);
  EXPECT_TRUE(has(ops_of(*a.bw), "run_with_rng_state(aten::bernoulli.p)")) << print_graph(*a.bw);
  EXPECT_FALSE(has(ops_of(*a.bw), "aten::bernoulli.p"));
  expect_matches_eager(*f, "full decomposition");
}

// Each forward saves its own state: two forwards, then the backward of the first, replays the
// first's mask.
TEST(RngState, EachCallSavesItsOwnState) {
  auto f = compile(RecomputePolicy::MustRecompute);
  at::manual_seed(0);
  at::Tensor x0 = at::randn({16, 32});
  at::Tensor x1 = x0.clone().requires_grad_(), x2 = x0.clone().requires_grad_();
  at::manual_seed(11);
  std::vector<at::Tensor> first = (*f)({x1});
  std::vector<at::Tensor> second = (*f)({x2});
  EXPECT_FALSE(at::equal(first[1], second[1]));
  at::Tensor before = cpu_state();
  first[0].backward();
  EXPECT_TRUE(at::equal(cpu_state(), before));  // the first backward put the generator back
  second[0].backward();
  EXPECT_TRUE(at::equal(cpu_state(), before));
  EXPECT_TRUE(at::equal(x1.grad().ne(0), first[1]));
  EXPECT_TRUE(at::equal(x2.grad().ne(0), second[1]));
  Step e = eager_step(x0, 11);
  EXPECT_TRUE(at::allclose(x1.grad(), e.grad, 1e-5, 1e-7));
}

}  // namespace
}  // namespace aotgrad
