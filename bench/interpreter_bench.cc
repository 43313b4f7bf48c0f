// Interpreter overhead per node: a chain of small pointwise ops run by the interpreter, against
// the same ATen calls made directly from C++. Overhead per node = (interpreted - direct) / nodes.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/runtime/interpreter.h"

namespace {

constexpr int kNodes = 1000;

std::shared_ptr<aotgrad::Graph> chain_graph() {
  std::string text = "def forward(self, x: \"f32[8]\", y: \"f32[8]\"):\n";
  std::string prev = "x";
  for (int i = 0; i < kNodes; ++i) {
    std::string name = "v" + std::to_string(i);
    const char* op = i % 3 == 0 ? "add.Tensor" : i % 3 == 1 ? "mul.Tensor" : "sub.Tensor";
    text += "    " + name + " = torch.ops.aten." + op + "(" + prev + ", y)\n";
    prev = name;
  }
  text += "    return (" + prev + ",)\n";
  return aotgrad::parse_graph(text, aotgrad::aten_ops());
}

void BM_Interpreted(benchmark::State& state) {
  aotgrad::Interpreter interp(chain_graph());
  at::Tensor x = at::randn({8}), y = at::randn({8});
  for (auto _ : state) {
    auto out = interp.run({x, y});
    benchmark::DoNotOptimize(out);
  }
  state.counters["ns_per_node"] = benchmark::Counter(
      static_cast<double>(kNodes),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_DirectAten(benchmark::State& state) {
  at::Tensor x = at::randn({8}), y = at::randn({8});
  for (auto _ : state) {
    at::Tensor v = x;
    for (int i = 0; i < kNodes; ++i)
      v = i % 3 == 0 ? at::add(v, y) : i % 3 == 1 ? at::mul(v, y) : at::sub(v, y);
    benchmark::DoNotOptimize(v);
  }
  state.counters["ns_per_node"] = benchmark::Counter(
      static_cast<double>(kNodes),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

BENCHMARK(BM_Interpreted)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DirectAten)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
