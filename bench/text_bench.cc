// aotgrad: benchmarks of the graph text form -- parse, verify and print, per node, at 1k-100k
// nodes.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

// A graph of `n` pointwise calls in 8 lanes of different shapes. Each call takes its operands
// from the last few values of its lane (so values have several users) or from the lane's inputs
// (a [B, H] tensor, a [H] bias and a [B, 1] column, which broadcast).
std::unique_ptr<Graph> make_graph(int n) {
  const OpTable& ops = aten_ops();
  const OpDef& add = ops.get("aten::add.Tensor");
  const OpDef& mul = ops.get("aten::mul.Tensor");
  const OpDef& sub = ops.get("aten::sub.Tensor");
  const OpDef& mul_scalar = ops.get("aten::mul.Scalar");
  const OpDef& relu = ops.get("aten::relu");
  const OpDef& sigmoid = ops.get("aten::sigmoid");
  const OpDef& neg = ops.get("aten::neg");
  const OpDef& threshold_backward = ops.get("aten::threshold_backward");
  auto g = std::make_unique<Graph>();
  constexpr int kLanes = 8;
  std::vector<std::vector<Node*>> recent(kLanes);
  std::vector<Node*> inputs;
  for (int lane = 0; lane < kLanes; ++lane) {
    int64_t b = 16 + lane, h = 64 << (lane % 3);
    std::string l = std::to_string(lane);
    Node* x =
        g->add_placeholder("x_" + l, ValueMeta::of(make_tensor_meta(ScalarType::Float32, {b, h})));
    Node* bias =
        g->add_placeholder("bias_" + l, ValueMeta::of(make_tensor_meta(ScalarType::Float32, {h})));
    Node* col = g->add_placeholder("col_" + l,
                                   ValueMeta::of(make_tensor_meta(ScalarType::Float32, {b, 1})));
    recent[lane] = {x};
    inputs.insert(inputs.end(), {x, bias, col});
  }
  uint64_t state = 12345;
  auto rnd = [&](uint64_t m) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % m;
  };
  for (int i = 0; i < n; ++i) {
    int lane = static_cast<int>(rnd(kLanes));
    auto& r = recent[lane];
    auto pick = [&]() -> Node* {
      uint64_t k = rnd(10);
      if (k == 0) return inputs[lane * 3 + 1];  // bias [H]
      if (k == 1) return inputs[lane * 3 + 2];  // column [B, 1]
      return r[r.size() - 1 - rnd(std::min<uint64_t>(r.size(), 6))];
    };
    Node* a = r.back();
    Node* out = nullptr;
    switch (rnd(8)) {
      case 0: out = g->add_call(add, {a, pick()}); break;
      case 1: out = g->add_call(add, {a, pick()}, {{"alpha", Arg::of_float(-0.5)}}); break;
      case 2: out = g->add_call(mul, {a, pick()}); break;
      case 3: out = g->add_call(sub, {pick(), a}); break;
      case 4: out = g->add_call(mul_scalar, {a, Arg::of_float(1e-05)}); break;
      case 5: out = g->add_call(relu, {a}); break;
      case 6: out = g->add_call(rnd(2) ? sigmoid : neg, {a}); break;
      case 7: out = g->add_call(threshold_backward, {pick(), a, Arg::of_int(0)}); break;
    }
    r.push_back(out);
    if (r.size() > 64) r.erase(r.begin(), r.begin() + 32);
  }
  std::vector<Arg> outs;
  for (auto& r : recent) outs.emplace_back(r.back());
  g->set_output(Arg::of_tuple(std::move(outs)));
  return g;
}

void set_per_node(benchmark::State& state, int64_t nodes) {
  state.SetItemsProcessed(state.iterations() * nodes);
  state.counters["per_node"] =
      benchmark::Counter(static_cast<double>(nodes), benchmark::Counter::kIsIterationInvariantRate |
                                                         benchmark::Counter::kInvert);
}

void BM_Parse(benchmark::State& state) {
  auto g = make_graph(static_cast<int>(state.range(0)));
  std::string text = print_graph(*g);
  for (auto _ : state) {
    auto parsed = parse_graph(text, aten_ops());
    state.PauseTiming();  // freeing the graph is not parsing
    parsed.reset();
    state.ResumeTiming();
  }
  set_per_node(state, static_cast<int64_t>(g->size()));
  state.counters["bytes_per_node"] =
      static_cast<double>(text.size()) / static_cast<double>(g->size());
}

// Without annotations, every node's metadata is inferred while parsing.
void BM_ParseUnannotated(benchmark::State& state) {
  auto g = make_graph(static_cast<int>(state.range(0)));
  PrintOptions o;
  o.annotations = false;
  std::string text = print_graph(*g, o);
  // Placeholders need annotations: take the annotated signature line.
  std::string annotated = print_graph(*g);
  size_t def_end = annotated.find('\n', annotated.find("def forward"));
  size_t body = text.find('\n', text.find("def forward"));
  text = annotated.substr(0, def_end) + text.substr(body);
  for (auto _ : state) {
    auto parsed = parse_graph(text, aten_ops());
    state.PauseTiming();
    parsed.reset();
    state.ResumeTiming();
  }
  set_per_node(state, static_cast<int64_t>(g->size()));
}

void BM_Verify(benchmark::State& state) {
  auto g = make_graph(static_cast<int>(state.range(0)));
  for (auto _ : state) verify(*g);
  set_per_node(state, static_cast<int64_t>(g->size()));
}

void BM_Print(benchmark::State& state) {
  auto g = make_graph(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(print_graph(*g));
  set_per_node(state, static_cast<int64_t>(g->size()));
}

BENCHMARK(BM_Parse)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ParseUnannotated)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Verify)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Print)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace aotgrad

BENCHMARK_MAIN();
