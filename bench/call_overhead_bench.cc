// Call overhead: a compiled call on tiny tensors (f32[4]) against the same ATen ops called
// directly from C++, so (compiled - direct) is what aotgrad adds around the kernels.
//
// Inference, y = relu(x * w + b): the ops directly (no grad), the Interpreter on the graph (the
// default backend alone), CompiledGraph (the runtime wrappers around it) and aot_function (the
// signature cache in front) under no_grad. Training, loss = relu(x * w + b).sum() with w and b
// requiring grad, forward and backward: libtorch eager autograd, CompiledFunction and aot_function;
// there the reference is eager autograd, which has its own overhead around the same kernels.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>
#include <c10/core/GradMode.h>

#include "aotgrad/aotgrad.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/runtime/compiled_function.h"
#include "aotgrad/runtime/compiled_graph.h"
#include "aotgrad/runtime/interpreter.h"

namespace {

constexpr int64_t kSize = 4;

const char* const kInferenceGraph = R"(def forward(self, x: "f32[4]", w: "f32[4]", b: "f32[4]"):
    mul = torch.ops.aten.mul.Tensor(x, w)
    add = torch.ops.aten.add.Tensor(mul, b)
    relu = torch.ops.aten.relu.default(add)
    return (relu,)
)";

const char* const kTrainingGraph = R"(def forward(self, x: "f32[4]", w: "f32[4]", b: "f32[4]"):
    mul = torch.ops.aten.mul.Tensor(x, w)
    add = torch.ops.aten.add.Tensor(mul, b)
    relu = torch.ops.aten.relu.default(add)
    sum_1 = torch.ops.aten.sum.default(relu)
    return (sum_1,)
)";

std::vector<at::Tensor> inference_fn(const std::vector<at::Tensor>& a) {
  return {at::relu(at::add(at::mul(a[0], a[1]), a[2]))};
}

std::vector<at::Tensor> training_fn(const std::vector<at::Tensor>& a) {
  return {at::relu(at::add(at::mul(a[0], a[1]), a[2])).sum()};
}

std::vector<at::Tensor> tiny_inputs(bool requires_grad) {
  return {at::randn({kSize}), at::randn({kSize}).requires_grad_(requires_grad),
          at::randn({kSize}).requires_grad_(requires_grad)};
}

std::vector<c10::IValue> ivalues(const std::vector<at::Tensor>& ts) {
  return std::vector<c10::IValue>(ts.begin(), ts.end());
}

// --- inference
// ------------------------------------------------------------------------------------

void BM_Inference_DirectAten(benchmark::State& state) {
  std::vector<at::Tensor> in = tiny_inputs(false);
  for (auto _ : state) {
    at::Tensor y = at::relu(at::add(at::mul(in[0], in[1]), in[2]));
    benchmark::DoNotOptimize(y);
  }
}

void BM_Inference_Interpreter(benchmark::State& state) {
  aotgrad::Interpreter interp(aotgrad::parse_graph(kInferenceGraph, aotgrad::aten_ops()));
  std::vector<at::Tensor> in = tiny_inputs(false);
  for (auto _ : state) {
    std::vector<c10::IValue> out = interp.run(ivalues(in));
    benchmark::DoNotOptimize(out);
  }
}

void BM_Inference_CompiledGraph(benchmark::State& state) {
  aotgrad::CompiledGraph f(aotgrad::parse_graph(kInferenceGraph, aotgrad::aten_ops()));
  std::vector<at::Tensor> in = tiny_inputs(false);
  for (auto _ : state) {
    std::vector<c10::IValue> out = f(ivalues(in));
    benchmark::DoNotOptimize(out);
  }
}

void BM_Inference_AotFunction(benchmark::State& state) {
  c10::NoGradGuard no_grad;
  aotgrad::AOTFunction f = aotgrad::aot_function(inference_fn);
  std::vector<at::Tensor> in = tiny_inputs(false);
  f(in);  // compiles
  for (auto _ : state) {
    std::vector<at::Tensor> out = f(in);
    benchmark::DoNotOptimize(out);
  }
  state.counters["compilations"] = static_cast<double>(f.num_compilations());
}

// --- training
// -------------------------------------------------------------------------------------

/// Times forward + backward, the grads reset to undefined before each step.
template <class Forward>
void train_steps(benchmark::State& state, std::vector<at::Tensor>& in, Forward forward) {
  for (auto _ : state) {
    in[1].mutable_grad() = at::Tensor();
    in[2].mutable_grad() = at::Tensor();
    at::Tensor loss = forward(in);
    loss.backward();
    benchmark::DoNotOptimize(loss);
  }
}

void BM_TrainStep_EagerAutograd(benchmark::State& state) {
  std::vector<at::Tensor> in = tiny_inputs(true);
  train_steps(state, in, [](const std::vector<at::Tensor>& a) { return training_fn(a)[0]; });
}

void BM_TrainStep_CompiledFunction(benchmark::State& state) {
  aotgrad::CompiledFunction f(aotgrad::parse_graph(kTrainingGraph, aotgrad::aten_ops()),
                              {false, true, true});
  std::vector<at::Tensor> in = tiny_inputs(true);
  train_steps(state, in, [&](const std::vector<at::Tensor>& a) { return f(a)[0]; });
}

void BM_TrainStep_AotFunction(benchmark::State& state) {
  aotgrad::AOTFunction f = aotgrad::aot_function(training_fn);
  std::vector<at::Tensor> in = tiny_inputs(true);
  train_steps(state, in, [&](const std::vector<at::Tensor>& a) { return f(a)[0]; });
  state.counters["compilations"] = static_cast<double>(f.num_compilations());
}

BENCHMARK(BM_Inference_DirectAten);
BENCHMARK(BM_Inference_Interpreter);
BENCHMARK(BM_Inference_CompiledGraph);
BENCHMARK(BM_Inference_AotFunction);
BENCHMARK(BM_TrainStep_EagerAutograd);
BENCHMARK(BM_TrainStep_CompiledFunction);
BENCHMARK(BM_TrainStep_AotFunction);

}  // namespace

BENCHMARK_MAIN();
