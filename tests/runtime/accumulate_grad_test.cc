// Note [Gradients accumulated as they are made]: with gradients kept between steps, a compiled
// backward adds each gradient into its leaf's .grad as soon as it computes it (as eager's
// AccumulateGrad does), so the fresh gradients do not all live to the end of the backward; the
// sums are AccumulateGrad's bit for bit. torch::autograd::grad, backward(inputs=...),
// create_graph and tensor hooks take AccumulateGrad's path, as before.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include "../graph_text.h"
#include "aotgrad/runtime/compiled_function.h"
#include "aotgrad/runtime/memory.h"

namespace aotgrad {
namespace {

// Three layers whose weights (256x256, 256 KiB each) outweigh the activations (8x256): the
// backward makes the last layer's weight gradient first.
const char* kMlp = R"(
def forward(self, x: "f32[8, 256]", w1: "f32[256, 256]", w2: "f32[256, 256]", w3: "f32[256, 256]"):
    t = torch.ops.aten.t.default(w1)
    mm = torch.ops.aten.mm.default(x, t)
    relu = torch.ops.aten.relu.default(mm)
    t_1 = torch.ops.aten.t.default(w2)
    mm_1 = torch.ops.aten.mm.default(relu, t_1)
    relu_1 = torch.ops.aten.relu.default(mm_1)
    t_2 = torch.ops.aten.t.default(w3)
    mm_2 = torch.ops.aten.mm.default(relu_1, t_2)
    sum_1 = torch.ops.aten.sum.default(mm_2)
    return (sum_1,)
)";

struct Mlp {
  std::unique_ptr<CompiledFunction> f;
  at::Tensor x;
  std::vector<at::Tensor> w;
};

Mlp make_mlp() {
  at::manual_seed(0);
  TrainOptions o;
  o.pipeline.cache_dir = "off";
  Mlp s{std::make_unique<CompiledFunction>(parse_text(kMlp),
                                           std::vector<bool>{false, true, true, true}, o),
        at::randn({8, 256}),
        {}};
  for (int i = 0; i < 3; ++i) s.w.push_back((at::randn({256, 256}) * 0.1).requires_grad_());
  return s;
}

at::Tensor loss(Mlp& s) { return (*s.f)({s.x, s.w[0], s.w[1], s.w[2]})[0]; }

TEST(AccumulateGrad, KeptGradientsAreAddedAsTheyAreMadeAsAccumulateGradDoes) {
  install_tracking_allocator();
  Mlp early = make_mlp(), late = make_mlp();
  // `late`: an identity hook on each weight sends its gradients through AccumulateGrad.
  for (at::Tensor& w : late.w) w.register_hook([](const at::Tensor& g) { return g; });
  for (Mlp* s : {&early, &late}) {
    loss(*s).backward();  // the first step makes the .grad tensors
    for (at::Tensor& w : s->w) w.mutable_grad().mul_(0.5);
  }
  std::vector<const void*> storage;
  for (at::Tensor& w : early.w) storage.push_back(w.grad().data_ptr());
  int64_t peaks[2];
  for (int k = 0; k < 2; ++k) {
    Mlp& s = k == 0 ? early : late;
    at::Tensor l = loss(s);
    reset_peak_memory();
    int64_t before = memory_stats().current_bytes;
    l.backward();
    peaks[k] = memory_stats().peak_bytes - before;
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(at::equal(early.w[i].grad(), late.w[i].grad())) << "w" << i + 1;
    EXPECT_EQ(early.w[i].grad().data_ptr(), storage[i]) << "accumulated in place";
  }
  // Late: the three fresh 256 KiB gradients live at once before AccumulateGrad adds them in.
  // Early: at most two (w3's is added and freed before w1's is made).
  EXPECT_LE(peaks[0], peaks[1] - 256 * 256 * 4) << peaks[0] << " vs " << peaks[1];
}

TEST(AccumulateGrad, AutogradGradAndBackwardWithInputsLeaveOtherGradsAlone) {
  Mlp s = make_mlp();
  loss(s).backward();
  std::vector<at::Tensor> kept;
  for (at::Tensor& w : s.w) kept.push_back(w.grad().clone());
  // torch::autograd::grad returns the gradients and accumulates nothing.
  std::vector<at::Tensor> g = torch::autograd::grad({loss(s)}, {s.w[0], s.w[1], s.w[2]});
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(at::equal(s.w[i].grad(), kept[i])) << "w" << i + 1;
    EXPECT_TRUE(at::allclose(g[i], kept[i])) << "w" << i + 1;
  }
  // backward(inputs={w2}) accumulates into w2 only.
  torch::autograd::backward({loss(s)}, {}, c10::nullopt, false, {s.w[1]});
  EXPECT_TRUE(at::equal(s.w[0].grad(), kept[0]));
  EXPECT_TRUE(at::allclose(s.w[1].grad(), kept[1] * 2));
  EXPECT_TRUE(at::equal(s.w[2].grad(), kept[2]));
}

TEST(AccumulateGrad, HooksSeeEveryGradient) {
  Mlp s = make_mlp();
  loss(s).backward();
  int calls = 0;
  s.w[2].register_hook([&calls](const at::Tensor& g) {
    ++calls;
    return g * 0;
  });
  at::Tensor before = s.w[2].grad().clone();
  loss(s).backward();
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(at::equal(s.w[2].grad(), before));  // the hook zeroed the new gradient
}

}  // namespace
}  // namespace aotgrad
