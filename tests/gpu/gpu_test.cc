// aotgrad: the GPU test group -- training on a CUDA device against eager libtorch on the same
// device: the GPT demo's model (losses over several Adam steps), one resnet18 training step (loss,
// grads, BatchNorm's buffers), and the measured step peaks at memory budget 1 and 0.5 from the
// CUDA caching allocator's statistics. Where no GPU is (torch::cuda::is_available() false, as on
// the CPU machines CI runs on), the binary prints "skipped: no GPU" and exits 77, which ctest
// counts as skipped (SKIP_RETURN_CODE).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdio>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "aotgrad/runtime/device.h"
#include "aotgrad/runtime/memory.h"
#include "char_gpt.h"
#include "models/eager_models.h"

namespace aotgrad {
namespace {

const c10::Device kCuda(c10::DeviceType::CUDA, 0);

void expect_close(const at::Tensor& got, const at::Tensor& want, const std::string& what,
                  double rtol = 1e-4, double atol = 1e-5) {
  ASSERT_TRUE(got.defined()) << what;
  ASSERT_TRUE(want.defined()) << what;
  ASSERT_EQ(got.device(), want.device()) << what;
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  EXPECT_TRUE(at::allclose(got.cpu().to(at::kDouble), want.cpu().to(at::kDouble), rtol, atol))
      << what << ": largest difference "
      << (got.cpu().to(at::kDouble) - want.cpu().to(at::kDouble)).abs().max().item<double>();
}

// An example model compiled with aot_function over its parameters and buffers, beside an eager
// copy with the same state, both on the GPU.
struct CompiledModel {
  CompiledModel(const std::string& name, double budget)
      : compiled(models::make_eager_model(name)), eager(models::make_eager_model(name)) {
    models::TensorMap state = compiled->parameters();
    for (const auto& [k, v] : compiled->buffers()) state[k] = v;
    eager->load_state(state);
    compiled->to(kCuda);
    eager->to(kCuda);
    state = compiled->parameters();
    for (const auto& [k, v] : compiled->buffers()) state[k] = v;
    for (const std::string& n : compiled->parameter_names()) tensors.push_back(state[n]);
    for (const std::string& n : compiled->buffer_names()) tensors.push_back(state[n]);
    AOTConfig cfg;
    cfg.num_params_buffers = tensors.size();
    cfg.input_names = compiled->placeholder_names();
    cfg.min_cut.activation_memory_budget = budget;
    models::EagerModel* m = compiled.get();
    fn.emplace(aot_function(functional_call(tensors,
                                            [m](const std::vector<at::Tensor>& in) {
                                              return std::vector<at::Tensor>{m->loss(in)};
                                            }),
                            std::move(cfg)));
  }
  at::Tensor compiled_loss(const std::vector<at::Tensor>& inputs) {
    std::vector<at::Tensor> args = tensors;
    args.insert(args.end(), inputs.begin(), inputs.end());
    return (*fn)(args)[0];
  }
  std::unique_ptr<models::EagerModel> compiled, eager;
  std::vector<at::Tensor> tensors;
  std::optional<AOTFunction> fn;
};

std::vector<at::Tensor> image_batch(int64_t batch, int64_t size) {
  return {at::randn({batch, 3, size, size}).to(kCuda),
          at::randint(0, 10, {batch}, at::kLong).to(kCuda)};
}

TEST(Gpu, Resnet18TrainingStepEqualsEager) {
  at::manual_seed(0);
  CompiledModel m("resnet18", 1.0);
  std::vector<at::Tensor> inputs = image_batch(4, 32);
  at::Tensor loss = m.compiled_loss(inputs);
  at::Tensor want = m.eager->loss(inputs);
  ASSERT_EQ(loss.device(), kCuda);
  expect_close(loss, want, "loss");
  loss.backward();
  want.backward();
  models::TensorMap g = m.compiled->parameters(), e = m.eager->parameters();
  for (const auto& [k, v] : g) expect_close(v.grad(), e[k].grad(), "grad of " + k, 1e-3, 1e-4);
  models::TensorMap gb = m.compiled->buffers(), eb = m.eager->buffers();
  for (const auto& [k, v] : gb) expect_close(v, eb[k], "buffer " + k);
}

// The most bytes alive on the GPU during one training step (forward and backward, the gradients
// dropped before it) above the level at its start, from the caching allocator's statistics.
int64_t step_peak(const std::function<at::Tensor()>& forward, models::EagerModel& model) {
  model.zero_grad();
  torch::cuda::synchronize();
  const int64_t before = memory_stats(kCuda).current_bytes;
  reset_peak_memory(kCuda);
  forward().backward();
  torch::cuda::synchronize();
  return memory_stats(kCuda).peak_bytes - before;
}

TEST(Gpu, MemoryBudgetPeaksFromTheCachingAllocator) {
  at::manual_seed(0);
  std::vector<at::Tensor> inputs = image_batch(16, 64);
  int64_t eager_peak = 0;
  std::vector<int64_t> peaks;
  for (double budget : {1.0, 0.5}) {
    CompiledModel m("resnet18", budget);
    m.compiled_loss(inputs).backward();  // compiles; the second step is measured
    m.eager->loss(inputs).backward();
    const int64_t peak = step_peak([&] { return m.compiled_loss(inputs); }, *m.compiled);
    if (budget == 1.0) eager_peak = step_peak([&] { return m.eager->loss(inputs); }, *m.eager);
    peaks.push_back(peak);
    std::printf(
        "resnet18 on %s, batch 16 at 64x64: budget %.1f step peak %.2f MiB (eager %.2f MiB)\n",
        kCuda.str().c_str(), budget, peak / 1048576.0, eager_peak / 1048576.0);
  }
  ASSERT_GT(eager_peak, 0);
  // Budget 1 saves what eager saves, or less; budget 0.5 no more than budget 1.
  EXPECT_LE(peaks[0], eager_peak * 11 / 10);
  EXPECT_LE(peaks[1], peaks[0]);
}

// The GPT demo's model and training loop (examples/gpt_demo) on the GPU: eagerly and through
// aot_module, the same losses over several Adam steps.
TEST(Gpu, GptDemoLossesEqualEager) {
  using aotgrad::demo::CharGPTConfig;
  using aotgrad::demo::CharGPTImpl;
  CharGPTConfig c;
  c.vocab = 65;
  c.seq = 64;
  c.d = 64;
  c.heads = 4;
  c.layers = 2;
  std::vector<std::vector<double>> losses;
  for (bool compiled : {false, true}) {
    torch::manual_seed(0);
    auto model = std::make_shared<CharGPTImpl>(c);
    model->to(kCuda);
    model->train();
    torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
    std::optional<AOTModule> m;
    if (compiled)
      m = aot_module(model, [model](const std::vector<at::Tensor>& in) {
        return std::vector<at::Tensor>{model->forward(in[0], in[1])};
      });
    std::mt19937_64 rng(0);
    losses.emplace_back();
    for (int step = 0; step < 5; ++step) {
      torch::manual_seed(100 + step);
      at::Tensor x = at::randint(0, c.vocab, {8, c.seq}, at::kLong).to(kCuda);
      at::Tensor y = at::randint(0, c.vocab, {8, c.seq}, at::kLong).to(kCuda);
      adam.zero_grad();
      at::Tensor loss = compiled ? (*m)({x, y})[0] : model->forward(x, y);
      ASSERT_EQ(loss.device(), kCuda);
      loss.backward();
      adam.step();
      losses.back().push_back(loss.item<double>());
    }
  }
  for (size_t i = 0; i < losses[0].size(); ++i)
    EXPECT_NEAR(losses[1][i], losses[0][i], 1e-4 * std::abs(losses[0][i])) << "step " << i;
}

}  // namespace
}  // namespace aotgrad

int main(int argc, char** argv) {
  if (!aotgrad::cuda_available()) {
    std::cout << "skipped: no GPU\n";
    return 77;
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
