// Dynamic shapes against static ones (issue 16) on the GPT block with a 64-token context
// (tests/models' gpt_block_dyn), trained through aot_function over its parameters:
// - Compile/dynamic: one compilation with the batch and sequence length as symbols, then a step
//   at each of the 4 shapes (1x5, 3x16, 8x33, 17x5); Compile/static: the same 4 steps with
//   dynamic=off, one compilation per shape. Counters "compilations" and "heap_bytes": the heap the
//   function holds after the steps (malloc's in-use bytes then, less before the model was made;
//   the model's own tensors are the same in both).
// - Step/dynamic and Step/static: the steady training step at 8x32 of each compilation.
// - Capture/symbolic and Capture/unified: capture_dynamic alone at 3x16, by one trace with
//   symbolic sizes (Note [One symbolic trace]) and by three traces unified (Note [Unifying
//   traces]); both give the same graph (tests/api/symbolic_trace_test.cc).
// `dynamic_bench --steps=N --mode=dynamic|static` instead compiles, runs 1 + N steps at 8x32 on
// one thread and exits: under `valgrind --tool=callgrind` the difference between N=10 and N=0 is
// the instructions of 10 steps, a figure the machine's load does not move.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <cstring>
#include <string>

#include "aotgrad/aotgrad.h"
#include "aotgrad/frontend/dynamic_capture.h"
#include "models/eager_models.h"

namespace {

struct Model {
  explicit Model(bool dynamic) : model(aotgrad::models::make_eager_model("gpt_block_dyn")) {
    // Parameters and buffers are inputs (as aot_module lifts them): the causal mask, sliced to
    // the sequence length, is then part of the graph rather than a constant of one length.
    for (const auto& [k, v] : model->parameters()) (void)k, tensors.push_back(v);
    for (const auto& [k, v] : model->buffers()) (void)k, tensors.push_back(v);
    aotgrad::AOTConfig cfg;
    cfg.num_params_buffers = tensors.size();
    cfg.cache_dir = "off";
    if (dynamic)
      cfg.dynamic_dims = {{tensors.size(), {0, 1}}, {tensors.size() + 1, {0, 1}}};
    else
      cfg.dynamic = aotgrad::DynamicMode::kOff;
    aotgrad::models::EagerModel* m = model.get();
    fn.emplace(aotgrad::aot_function(
        aotgrad::functional_call(tensors,
                                 [m](const std::vector<at::Tensor>& in) {
                                   return std::vector<at::Tensor>{m->loss(in)};
                                 }),
        std::move(cfg)));
  }
  void step(int64_t batch, int64_t seq) {
    std::vector<at::Tensor> args = tensors;
    args.push_back(at::randint(0, 64, {batch, seq}, at::kLong));
    args.push_back(at::randint(0, 64, {batch, seq}, at::kLong));
    (*fn)(args)[0].backward();
    model->zero_grad();
  }
  std::unique_ptr<aotgrad::models::EagerModel> model;
  std::vector<at::Tensor> tensors;
  std::optional<aotgrad::AOTFunction> fn;
};

void BM_Compile(benchmark::State& state, bool dynamic) {
  size_t compilations = 0;
  double heap = 0;
  for (auto _ : state) {
    const size_t before = mallinfo2().uordblks;
    Model m(dynamic);
    for (auto [b, t] : {std::pair<int64_t, int64_t>{1, 5}, {3, 16}, {8, 33}, {17, 5}}) m.step(b, t);
    compilations = m.fn->num_compilations();
    heap = static_cast<double>(mallinfo2().uordblks) - static_cast<double>(before);
  }
  state.counters["compilations"] = static_cast<double>(compilations);
  state.counters["heap_bytes"] = heap;
}

void BM_Step(benchmark::State& state, bool dynamic) {
  Model m(dynamic);
  m.step(8, 32);
  for (auto _ : state) m.step(8, 32);
}

void BM_Capture(benchmark::State& state, aotgrad::DynamicTrace how) {
  Model m(true);
  std::vector<at::Tensor> args = m.tensors;
  args.push_back(at::randint(0, 64, {3, 16}, at::kLong));
  args.push_back(at::randint(0, 64, {3, 16}, at::kLong));
  aotgrad::models::EagerModel* model = m.model.get();
  aotgrad::TensorFunction fn =
      aotgrad::functional_call(m.tensors, [model](const std::vector<at::Tensor>& in) {
        return std::vector<at::Tensor>{model->loss(in)};
      });
  const size_t n = m.tensors.size();
  std::vector<aotgrad::DynamicDim> dims = {{n, 0}, {n, 1}, {n + 1, 0}, {n + 1, 1}};
  for (auto _ : state) {
    aotgrad::DynamicCapture c = aotgrad::capture_dynamic(fn, args, dims, {}, how);
    benchmark::DoNotOptimize(c.graph);
  }
}

BENCHMARK_CAPTURE(BM_Capture, symbolic, aotgrad::DynamicTrace::Symbolic)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Capture, unified, aotgrad::DynamicTrace::Unified)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Compile, dynamic, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Compile, static, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Step, dynamic, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Step, static, false)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  long steps = -1;
  std::string mode = "dynamic";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--steps=", 8) == 0) steps = std::stol(argv[i] + 8);
    if (std::strncmp(argv[i], "--mode=", 7) == 0) mode = argv[i] + 7;
  }
  if (steps >= 0) {
    at::set_num_threads(1);
    Model m(mode == "dynamic");
    for (long k = 0; k <= steps; ++k) m.step(8, 32);
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
