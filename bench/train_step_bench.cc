// One training step (gradients reset to undefined, forward with the loss, backward) of the exported
// GPT block (tests/data/models/gpt_block.fx with its inputs), run by the eager libtorch C++ model
// (tests/models/eager_models.h) and by CompiledFunction (default partition, interpreter backend).
// Time per step; as counters, the peak bytes of tensor storage above the level before a step (the
// tracking allocator is installed before any tensor is made) and the allocations in a step.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/runtime/compiled_function.h"
#include "aotgrad/runtime/memory.h"
#include "models/eager_models.h"

namespace {

using aotgrad::models::ModelData;

const ModelData& gpt_block_data() {
  static const ModelData data =
      aotgrad::models::load_model_data(std::string(AOTGRAD_TEST_DATA) + "/models", "gpt_block");
  return data;
}

/// Times `reset(); step();` per iteration. Before timing, one warm-up step, then one measured step:
/// the peak bytes above the level before it, and its allocations, become counters.
template <class Step, class Reset>
void run_steps(benchmark::State& state, Step step, Reset reset) {
  reset();
  step();
  reset();
  int64_t before = aotgrad::memory_stats().current_bytes;
  aotgrad::reset_peak_memory();
  step();
  aotgrad::MemoryStats s = aotgrad::memory_stats();
  for (auto _ : state) {
    reset();
    step();
  }
  state.counters["peak_bytes_above_pre_step"] = static_cast<double>(s.peak_bytes - before);
  state.counters["allocations_per_step"] = static_cast<double>(s.allocations);
}

void BM_GptBlockTrainStep_Eager(benchmark::State& state) {
  const ModelData& data = gpt_block_data();
  std::unique_ptr<aotgrad::models::EagerModel> model =
      aotgrad::models::make_eager_model("gpt_block");
  model->load_state(data.values);
  std::vector<at::Tensor> inputs = aotgrad::models::cloned(data.values, model->input_names());
  run_steps(
      state,
      [&] {
        at::Tensor loss = model->loss(inputs);
        loss.backward();
        benchmark::DoNotOptimize(loss);
      },
      [&] { model->zero_grad(); });
}

void BM_GptBlockTrainStep_CompiledFunction(benchmark::State& state) {
  const ModelData& data = gpt_block_data();
  std::unique_ptr<aotgrad::models::EagerModel> model =
      aotgrad::models::make_eager_model("gpt_block");
  std::vector<std::string> params = model->parameter_names();
  std::vector<at::Tensor> args = aotgrad::models::cloned(data.values, data.names);
  std::vector<bool> requires_grad(args.size(), false);
  for (size_t i = 0; i < params.size(); ++i) {
    args[i].requires_grad_(true);
    requires_grad[i] = true;
  }
  aotgrad::CompiledFunction f(aotgrad::parse_graph(data.graph_text, aotgrad::aten_ops()),
                              requires_grad);
  run_steps(
      state,
      [&] {
        std::vector<at::Tensor> out = f(args);
        out[0].backward();
        benchmark::DoNotOptimize(out);
      },
      [&] {
        for (size_t i = 0; i < params.size(); ++i) args[i].mutable_grad() = at::Tensor();
      });
}

BENCHMARK(BM_GptBlockTrainStep_Eager)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GptBlockTrainStep_CompiledFunction)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  // Before any tensor exists, so every step allocation is counted.
  aotgrad::install_tracking_allocator();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
