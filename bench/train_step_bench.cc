// One training step (gradients reset to undefined, forward with the loss, backward) of the exported
// GPT blocks (tests/data/models/gpt_block.fx, and gpt_block_wide.fx whose activations outweigh its
// parameters, with their inputs), run by the eager libtorch C++ model
// (tests/models/eager_models.h) and by CompiledFunction (interpreter backend) with the default
// partition, the min-cut partition (also without the interpreter's re-inplacing:
// min_cut_functional), and the min-cut partition under activation memory budgets 0.8 to 0 (priced
// by peak) and --memory-budget=auto (max slowdown 0.03 and 0.1 under the FLOPs cost model, 0.03
// under this machine's measured kernels: min_cut_auto_measured; cnn_bn too); torchvision's
// resnet18, mobilenet_v2 and efficientnet_b0 (BN in training mode, batch 16 at 3x64x64) in the same
// variants. Time per step; as counters, the peak bytes of tensor storage above the level before a
// step (the tracking allocator is installed before any tensor is made) and the allocations in a
// step.
//
// nanogpt: the demo's character GPT (examples/gpt_demo) at context 256 with naive attention, so
// the [B, H, T, T] scores and softmax are real activations: eager libtorch, eager with every block
// checkpointed by hand (eager_checkpoint, torch.utils.checkpoint's scheme), and aot_module in the
// same variants as the other models (auto at 3% and 10% estimated extra step time).
//
// eager_zero_grad, aotgrad_*_zero_grad: the gradients zeroed in place between steps, as
// Optimizer::zero_grad(set_to_none=false) does, instead of dropped (compiled with
// MinCutOptions::gradients_kept).
//
// Run it as PyTorch's CPU launcher would, with tcmalloc preloaded: `aotgrad launch --nproc=1 --
// build/bench/train_step_bench ...` (Note [The ranks' allocator]); under glibc's malloc both eager
// and compiled steps spend up to a fifth of their time in page faults (page_faults_per_step).
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>
#include <c10/core/GradMode.h>
#include <sys/resource.h>
#include <torch/torch.h>

#include <map>
#include <string>

#include "aotgrad/aotgrad.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/runtime/compiled_function.h"
#include "aotgrad/runtime/cost_calibration.h"
#include "aotgrad/runtime/memory.h"
#include "char_gpt.h"
#include "models/eager_models.h"

namespace {

using aotgrad::models::ModelData;

const ModelData& model_data(const std::string& name) {
  static std::map<std::string, ModelData> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    std::string dir = std::string(AOTGRAD_TEST_DATA) + "/models";
    ModelData d;
    // The torchvision models: checked in as graphs alone (tools/export.py resnet18_b16, ...),
    // valued by their eager twins' own initialization and seeded inputs.
    if (aotgrad::models::is_vision_model(name)) {
      torch::manual_seed(0);
      d = aotgrad::models::model_data_from_eager(dir, *aotgrad::models::make_eager_model(name),
                                                 /*seed=*/0);
    } else {
      d = aotgrad::models::load_model_data(dir, name);
    }
    it = cache.emplace(name, std::move(d)).first;
  }
  return it->second;
}

/// Times `reset(); step();` per iteration. Before timing, one warm-up step, then one measured step:
/// the peak bytes above the level before it, and its allocations, become counters; so do the
/// timed steps' minor page faults per step.
template <class Step, class Reset>
void run_steps(benchmark::State& state, Step step, Reset reset) {
  reset();
  step();
  reset();
  int64_t before = aotgrad::memory_stats().current_bytes;
  aotgrad::reset_peak_memory();
  step();
  aotgrad::MemoryStats s = aotgrad::memory_stats();
  struct rusage start, end;
  getrusage(RUSAGE_SELF, &start);
  int64_t steps = 0;
  for (auto _ : state) {
    reset();
    step();
    ++steps;
  }
  getrusage(RUSAGE_SELF, &end);
  state.counters["peak_bytes_above_pre_step"] = static_cast<double>(s.peak_bytes - before);
  state.counters["allocations_per_step"] = static_cast<double>(s.allocations);
  // Minor page faults: memory the C library had returned to the system and takes back (glibc
  // trims the heap top and unmaps large blocks), a cost of the step's allocation order.
  state.counters["page_faults_per_step"] =
      static_cast<double>(end.ru_minflt - start.ru_minflt) / static_cast<double>(steps);
}

/// One compiled configuration of a training step.
struct Variant {
  const char* name;
  aotgrad::PartitionKind partition;
  double budget;
  bool reinplace = true;
  double max_slowdown = -1;
  bool measured_cost = false;  // the budget prices recomputation from this machine's kernels
};

// min_cut_functional: the interpreter runs every call as written (no re-inplacing).
constexpr aotgrad::PartitionKind kDefault = aotgrad::PartitionKind::kDefault;
constexpr aotgrad::PartitionKind kMinCut = aotgrad::PartitionKind::kMinCut;
const Variant kVariants[] = {{"default_partition", kDefault, 1.0},
                             {"min_cut", kMinCut, 1.0},
                             {"min_cut_functional", kMinCut, 1.0, false},
                             {"min_cut_budget_0.8", kMinCut, 0.8},
                             {"min_cut_budget_0.6", kMinCut, 0.6},
                             {"min_cut_budget_0.5", kMinCut, 0.5},
                             {"min_cut_budget_0.4", kMinCut, 0.4},
                             {"min_cut_budget_0.2", kMinCut, 0.2},
                             {"min_cut_budget_0", kMinCut, 0.0},
                             {"min_cut_auto", kMinCut, 1.0, true, 0.03},
                             {"min_cut_auto_0.1", kMinCut, 1.0, true, 0.1},
                             {"min_cut_auto_measured", kMinCut, 1.0, true, 0.03, true}};

// This machine's kernels, measured once (aotgrad calibrate's profile) on the benchmark's threads.
std::shared_ptr<const aotgrad::CostProfile> measured_profile() {
  static auto profile =
      std::make_shared<const aotgrad::CostProfile>(aotgrad::calibrate_cost_profile());
  return profile;
}

aotgrad::CostModel cost_model(const Variant& v) {
  aotgrad::CostModel m;
  if (v.measured_cost) {
    m.kind = aotgrad::CostModelKind::kMeasured;
    m.profile = measured_profile();
  }
  return m;
}

std::shared_ptr<const aotgrad::Compiler> functional_compiler() {
  return std::make_shared<aotgrad::InterpreterCompiler>(/*reinplace=*/false);
}

// Gradients zeroed and kept (Optimizer::zero_grad(set_to_none=false)) instead of dropped (the
// default, set_to_none): the backward's gradients are then added into them.
void zero_grads_in_place(const std::vector<at::Tensor>& params) {
  c10::NoGradGuard no_grad;
  for (const at::Tensor& p : params)
    if (p.grad().defined()) p.grad().zero_();
}

void BM_TrainStep_Eager(benchmark::State& state, const std::string& name, bool keep_grads) {
  const ModelData& data = model_data(name);
  std::unique_ptr<aotgrad::models::EagerModel> model = aotgrad::models::make_eager_model(name);
  model->load_state(data.values);
  std::vector<at::Tensor> inputs = aotgrad::models::cloned(data.values, model->input_names());
  std::vector<at::Tensor> params;
  for (const auto& [name, t] : model->parameters()) params.push_back(t);
  run_steps(
      state,
      [&] {
        at::Tensor loss = model->loss(inputs);
        loss.backward();
        benchmark::DoNotOptimize(loss);
      },
      [&] { keep_grads ? zero_grads_in_place(params) : model->zero_grad(); });
}

void BM_TrainStep_CompiledFunction(benchmark::State& state, const std::string& name,
                                   const Variant& v, bool keep_grads) {
  const ModelData& data = model_data(name);
  std::unique_ptr<aotgrad::models::EagerModel> model = aotgrad::models::make_eager_model(name);
  std::vector<std::string> params = model->parameter_names();
  std::vector<at::Tensor> args = aotgrad::models::cloned(data.values, data.names);
  std::vector<bool> requires_grad(args.size(), false);
  for (size_t i = 0; i < params.size(); ++i) {
    args[i].requires_grad_(true);
    requires_grad[i] = true;
  }
  aotgrad::TrainOptions options;
  options.pipeline.partition = v.partition;
  options.pipeline.min_cut.activation_memory_budget = v.budget;
  options.pipeline.min_cut.max_slowdown = v.max_slowdown;
  options.pipeline.min_cut.gradients_kept = keep_grads;  // the peak the plan and order lower
  options.pipeline.min_cut.cost_model = cost_model(v);
  if (!v.reinplace) options.fw_compiler = options.bw_compiler = functional_compiler();
  aotgrad::CompiledFunction f(aotgrad::parse_graph(data.graph_text, aotgrad::aten_ops()),
                              requires_grad, options);
  run_steps(
      state,
      [&] {
        std::vector<at::Tensor> out = f(args);
        out[0].backward();
        benchmark::DoNotOptimize(out);
      },
      [&] {
        if (keep_grads) {
          zero_grads_in_place(std::vector<at::Tensor>(args.begin(), args.begin() + params.size()));
          return;
        }
        for (size_t i = 0; i < params.size(); ++i) args[i].mutable_grad() = at::Tensor();
      });
}

/// The nanoGPT-style model and one batch: 4 blocks of width 128 with 4 heads, context 256, batch 4,
/// a vocabulary of 65 (Shakespeare's characters); weights and batch from fixed seeds.
struct NanoGPT {
  std::shared_ptr<aotgrad::demo::CharGPTImpl> model;
  at::Tensor idx, targets;
};

NanoGPT make_nanogpt(bool checkpoint_blocks) {
  aotgrad::demo::CharGPTConfig c;
  c.vocab = 65;
  c.seq = 256;
  c.d = 128;
  c.heads = 4;
  c.layers = 4;
  c.checkpoint_blocks = checkpoint_blocks;
  torch::manual_seed(0);
  NanoGPT g;
  g.model = std::make_shared<aotgrad::demo::CharGPTImpl>(c);
  g.model->train();
  g.idx = torch::randint(c.vocab, {4, c.seq}, torch::kLong);
  g.targets = torch::randint(c.vocab, {4, c.seq}, torch::kLong);
  return g;
}

void reset_grads(aotgrad::demo::CharGPTImpl& model) {
  for (at::Tensor& p : model.parameters()) p.mutable_grad() = at::Tensor();
}

void BM_TrainStep_NanoGPTEager(benchmark::State& state, bool checkpoint_blocks) {
  NanoGPT g = make_nanogpt(checkpoint_blocks);
  run_steps(
      state,
      [&] {
        at::Tensor loss = g.model->forward(g.idx, g.targets);
        loss.backward();
        benchmark::DoNotOptimize(loss);
      },
      [&] { reset_grads(*g.model); });
}

void BM_TrainStep_NanoGPTCompiled(benchmark::State& state, const Variant& v) {
  NanoGPT g = make_nanogpt(/*checkpoint_blocks=*/false);
  aotgrad::AOTConfig config;
  config.partition = v.partition;
  config.min_cut.activation_memory_budget = v.budget;
  config.min_cut.max_slowdown = v.max_slowdown;
  config.min_cut.cost_model = cost_model(v);
  if (!v.reinplace) config.fw_compiler = config.bw_compiler = functional_compiler();
  std::shared_ptr<aotgrad::demo::CharGPTImpl> model = g.model;
  aotgrad::AOTModule compiled = aotgrad::aot_module(
      model,
      [model](const std::vector<at::Tensor>& in) {
        return std::vector<at::Tensor>{model->forward(in[0], in[1])};
      },
      config);
  run_steps(
      state,
      [&] {
        std::vector<at::Tensor> out = compiled({g.idx, g.targets});
        out[0].backward();
        benchmark::DoNotOptimize(out);
      },
      [&] { reset_grads(*g.model); });
}

void register_benchmarks() {
  // Every model with gradients dropped between steps, then with them zeroed and kept
  // (zero_grads_in_place, Optimizer::zero_grad(set_to_none=false): the peak above the step's start
  // then holds no gradient), suffixed _zero_grad.
  for (bool keep : {false, true})
    for (std::string model :
         {"gpt_block", "gpt_block_wide", "cnn_bn", "resnet18", "mobilenet_v2", "efficientnet_b0"}) {
      const std::string suffix = keep ? "_zero_grad" : "";
      benchmark::RegisterBenchmark(
          ("TrainStep/" + model + "/eager" + suffix).c_str(),
          [model, keep](benchmark::State& s) { BM_TrainStep_Eager(s, model, keep); })
          ->Unit(benchmark::kMicrosecond);
      for (const Variant& v : kVariants)
        benchmark::RegisterBenchmark(("TrainStep/" + model + "/aotgrad_" + v.name + suffix).c_str(),
                                     [model, v, keep](benchmark::State& s) {
                                       BM_TrainStep_CompiledFunction(s, model, v, keep);
                                     })
            ->Unit(benchmark::kMicrosecond);
    }
  benchmark::RegisterBenchmark("TrainStep/nanogpt/eager", [](benchmark::State& s) {
    BM_TrainStep_NanoGPTEager(s, false);
  })->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("TrainStep/nanogpt/eager_checkpoint", [](benchmark::State& s) {
    BM_TrainStep_NanoGPTEager(s, true);
  })->Unit(benchmark::kMicrosecond);
  for (const Variant& v : kVariants)
    benchmark::RegisterBenchmark((std::string("TrainStep/nanogpt/aotgrad_") + v.name).c_str(),
                                 [v](benchmark::State& s) { BM_TrainStep_NanoGPTCompiled(s, v); })
        ->Unit(benchmark::kMicrosecond);
}

}  // namespace

int main(int argc, char** argv) {
  // Before any tensor exists, so every step allocation is counted.
  aotgrad::install_tracking_allocator();
  register_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
