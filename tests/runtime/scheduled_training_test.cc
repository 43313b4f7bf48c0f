// Training with CompileOptions::schedule: an attention head compiled with the memory schedule
// trains as libtorch eager does, and bit for bit as the same compilation without the schedule (a
// reorder of independent calls runs the same kernels on the same values).
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

#include "../graph_text.h"
#include "aotgrad/runtime/compiled_function.h"
#include "aotgrad/transforms/partition/memory_timeline.h"

namespace aotgrad {
namespace {

// One attention head (q, k and v projections, softmax, tanh, output projection): the partition
// computes q, k and v before their scores, and its backward keeps more live than it must.
const char* kAttention = R"(
def forward(self, x: "f32[128, 32]", wq: "f32[32, 32]", wk: "f32[32, 32]", wv: "f32[32, 32]", wo: "f32[32, 32]"):
    t = torch.ops.aten.t.default(wq)
    mm = torch.ops.aten.mm.default(x, t)
    t_1 = torch.ops.aten.t.default(wk)
    mm_1 = torch.ops.aten.mm.default(x, t_1)
    t_2 = torch.ops.aten.t.default(wv)
    mm_2 = torch.ops.aten.mm.default(x, t_2)
    t_3 = torch.ops.aten.t.default(mm_1)
    mm_3 = torch.ops.aten.mm.default(mm, t_3)
    _softmax = torch.ops.aten._softmax.default(mm_3, -1, False)
    mm_4 = torch.ops.aten.mm.default(_softmax, mm_2)
    tanh = torch.ops.aten.tanh.default(mm_4)
    t_4 = torch.ops.aten.t.default(wo)
    mm_5 = torch.ops.aten.mm.default(tanh, t_4)
    return (mm_5,)
)";

// `text` compiled for training with the memory schedule or without it.
std::unique_ptr<CompiledFunction> compiled(const char* text, const std::vector<bool>& rg,
                                           ScheduleKind kind) {
  TrainOptions o;
  o.pipeline.cache_dir = "off";
  o.pipeline.schedule = kind;
  return std::make_unique<CompiledFunction>(parse_text(text), rg, o);
}

at::Tensor eager_attention(const std::vector<at::Tensor>& p) {
  at::Tensor q = at::mm(p[0], p[1].t()), k = at::mm(p[0], p[2].t()), v = at::mm(p[0], p[3].t());
  at::Tensor h = at::tanh(at::mm(at::softmax(at::mm(q, k.t()), -1), v));
  return at::mm(h, p[4].t());
}

struct TrainRun {
  std::vector<double> losses;
  std::vector<at::Tensor> params;  // after the last step
  std::vector<at::Tensor> grads;   // of the last step
};

// Four SGD steps on the mean of the squared outputs; `f` null: eager.
TrainRun train(CompiledFunction* f, const std::vector<at::Tensor>& init) {
  TrainRun r;
  std::vector<at::Tensor> p;
  for (size_t i = 0; i < init.size(); ++i) {
    at::Tensor t = init[i].clone();
    p.push_back(i == 0 ? t : t.requires_grad_());
  }
  for (int step = 0; step < 4; ++step) {
    at::Tensor out = f ? (*f)(p)[0] : eager_attention(p);
    at::Tensor loss = (out * out).mean();
    loss.backward();
    r.losses.push_back(loss.item<double>());
    r.grads.clear();
    c10::NoGradGuard no_grad;
    for (size_t i = 1; i < p.size(); ++i) {
      r.grads.push_back(p[i].grad().clone());
      p[i].sub_(p[i].grad(), 0.1);
      p[i].grad().zero_();
    }
  }
  for (size_t i = 1; i < p.size(); ++i) r.params.push_back(p[i].detach().clone());
  return r;
}

TEST(ScheduledTraining, AttentionTrainsAsEagerAndAsTheUnscheduledCompilation) {
  at::manual_seed(0);
  std::vector<at::Tensor> init{at::randn({128, 32}), at::randn({32, 32}) * 0.2,
                               at::randn({32, 32}) * 0.2, at::randn({32, 32}) * 0.2,
                               at::randn({32, 32}) * 0.2};
  std::vector<bool> rg(init.size(), true);
  rg[0] = false;
  std::unique_ptr<CompiledFunction> scheduled = compiled(kAttention, rg, ScheduleKind::kMemory);
  std::unique_ptr<CompiledFunction> plain = compiled(kAttention, rg, ScheduleKind::kNone);
  const TrainingArtifacts& a = scheduled->artifacts();
  const TrainingArtifacts& b = plain->artifacts();
  // The schedule reordered this model, and lowered its predicted peak (282624 -> 270336 bytes).
  EXPECT_NE(graph_text(*a.fw) + graph_text(*a.bw), graph_text(*b.fw) + graph_text(*b.bw));
  EXPECT_LT(training_step_timeline(*a.fw, *a.bw, a.saved).peak_bytes,
            training_step_timeline(*b.fw, *b.bw, b.saved).peak_bytes);
  EXPECT_EQ(a.saved, b.saved);

  TrainRun eager = train(nullptr, init);
  TrainRun with = train(scheduled.get(), init);
  TrainRun without = train(plain.get(), init);
  ASSERT_EQ(with.losses.size(), eager.losses.size());
  for (size_t k = 0; k < eager.losses.size(); ++k) {
    EXPECT_NEAR(with.losses[k], eager.losses[k], 1e-5 * std::abs(eager.losses[k])) << "step " << k;
    EXPECT_EQ(with.losses[k], without.losses[k]) << "step " << k;
  }
  EXPECT_LT(with.losses.back(), with.losses.front());
  for (size_t i = 0; i < eager.grads.size(); ++i) {
    EXPECT_TRUE(at::allclose(with.grads[i], eager.grads[i], 1e-4, 1e-5)) << "grad " << i;
    EXPECT_TRUE(at::equal(with.grads[i], without.grads[i])) << "grad " << i;
    EXPECT_TRUE(at::equal(with.params[i], without.params[i])) << "param " << i;
  }
}

// Three convolutions, the last with most of the weights on the smallest activation: the schedule
// splits each convolution_backward's weight gradient off (split_weight_gradients) and makes the
// last layer's last, once the first layer's activation is freed. libtorch computes grad_input and
// grad_weight apart either way, so the gradients are the unscheduled compilation's, bit for bit.
const char* kConvNet = R"(
def forward(self, x: "f32[2, 8, 64, 64]", w1: "f32[8, 8, 3, 3]", w2: "f32[64, 8, 8, 8]", w3: "f32[256, 64, 3, 3]"):
    convolution = torch.ops.aten.convolution.default(x, w1, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    relu = torch.ops.aten.relu.default(convolution)
    convolution_1 = torch.ops.aten.convolution.default(relu, w2, None, [8, 8], [0, 0], [1, 1], False, [0, 0], 1)
    relu_1 = torch.ops.aten.relu.default(convolution_1)
    convolution_2 = torch.ops.aten.convolution.default(relu_1, w3, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    return (convolution_2,)
)";

TEST(ScheduledTraining, SplitWeightGradientsAreTheUnsplitOnes) {
  at::manual_seed(0);
  std::vector<at::Tensor> init{at::randn({2, 8, 64, 64}), at::randn({8, 8, 3, 3}) * 0.2,
                               at::randn({64, 8, 8, 8}) * 0.05, at::randn({256, 64, 3, 3}) * 0.05};
  std::vector<bool> rg{false, true, true, true};
  std::unique_ptr<CompiledFunction> scheduled = compiled(kConvNet, rg, ScheduleKind::kMemory);
  std::unique_ptr<CompiledFunction> plain = compiled(kConvNet, rg, ScheduleKind::kNone);
  // Weight-only calls: the first layer's (x needs no gradient), split, the other two's too.
  auto weight_calls = [](const Graph& g) {
    int n = 0;
    for (const Node* c : g.nodes())
      n += c->kind() == NodeKind::Call && arg_to_string(c->args().back()) == "[False, True, False]";
    return n;
  };
  EXPECT_EQ(weight_calls(*scheduled->artifacts().bw), 3) << graph_text(*scheduled->artifacts().bw);
  EXPECT_EQ(weight_calls(*plain->artifacts().bw), 1) << graph_text(*plain->artifacts().bw);
  const TrainingArtifacts& a = scheduled->artifacts();
  const TrainingArtifacts& b = plain->artifacts();
  EXPECT_LT(training_step_timeline(*a.fw, *a.bw, a.saved).peak_bytes,
            training_step_timeline(*b.fw, *b.bw, b.saved).peak_bytes);

  auto grads = [&](CompiledFunction* f) {
    std::vector<at::Tensor> p{init[0]};
    for (size_t i = 1; i < init.size(); ++i) p.push_back(init[i].clone().requires_grad_());
    at::Tensor out;
    if (f) {
      out = (*f)(p)[0];
    } else {
      at::Tensor r = at::relu(at::conv2d(p[0], p[1], {}, 1, 1));
      r = at::relu(at::conv2d(r, p[2], {}, 8));
      out = at::conv2d(r, p[3], {}, 1, 1);
    }
    (out * out).mean().backward();
    std::vector<at::Tensor> g;
    for (size_t i = 1; i < p.size(); ++i) g.push_back(p[i].grad());
    return g;
  };
  std::vector<at::Tensor> eager = grads(nullptr), with = grads(scheduled.get()),
                          without = grads(plain.get());
  for (size_t i = 0; i < eager.size(); ++i) {
    EXPECT_TRUE(at::equal(with[i], without[i])) << "grad " << i;
    EXPECT_TRUE(at::allclose(with[i], eager[i], 1e-4, 1e-6)) << "grad " << i;
  }
}

}  // namespace
}  // namespace aotgrad
