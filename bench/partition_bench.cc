// Partitioning time against joint-graph size: the min-cut partition (CSE, classification, the
// Boykov-Kolmogorov max-flow, extraction and backward reordering) and its solve alone, against the
// default partition, on joint graphs of about 1k to 100k nodes built from a stack of MLP-style
// layers (mm, bias add, gelu-like pointwise chain, a row normalization, a residual add), each with
// its own weight and bias: a 100k-node joint graph has about 6k inputs and 6k gradients.
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <utility>

#include "aotgrad/ops/registry.h"
#include "aotgrad/transforms/autograd.h"
#include "aotgrad/transforms/partition/min_cut.h"
#include "aotgrad/transforms/partition/partition.h"
#include "aotgrad/transforms/passes/cse.h"
#include "aotgrad/transforms/passes/dce.h"
#include "aotgrad/transforms/passes/decompose.h"

namespace {

using namespace aotgrad;

/// The forward of `layers` layers on x [16, 64]; each layer has its own weight and bias that
/// require grad, or with `weight_sets` > 0 the layers use that many weight/bias pairs in turn.
std::unique_ptr<Graph> forward(int layers, int weight_sets, std::vector<bool>& rg) {
  const OpTable& ops = aten_ops();
  auto g = std::make_unique<Graph>();
  auto f32 = [](std::vector<int64_t> sizes) {
    SymIntVector s;
    for (int64_t v : sizes) s.push_back(v);
    return ValueMeta::of(make_tensor_meta(ScalarType::Float32, s));
  };
  Node* x = g->add_placeholder("x", f32({16, 64}));
  rg = {false};
  auto call = [&](const char* op, std::vector<Arg> args) {
    return g->add_call(ops.get(op), std::move(args));
  };
  const int sets = weight_sets > 0 ? weight_sets : layers;
  std::vector<Node*> ws, bs;
  for (int k = 0; k < sets; ++k) {
    ws.push_back(g->add_placeholder("w" + std::to_string(k), f32({64, 64})));
    bs.push_back(g->add_placeholder("b" + std::to_string(k), f32({64})));
    rg.push_back(true);
    rg.push_back(true);
  }
  for (int l = 0; l < layers; ++l) {
    Node* w = ws[l % sets];
    Node* b = bs[l % sets];
    Node* h = call("mm.default", {Arg(x), Arg(w)});
    h = call("add.Tensor", {Arg(h), Arg(b)});
    Node* s = call("sigmoid.default", {Arg(h)});
    Node* a = call("mul.Tensor", {Arg(h), Arg(s)});  // silu, as a pointwise chain
    Node* t = call("tanh.default", {Arg(a)});
    Node* sum = call("sum.dim_IntList", {Arg(t), Arg::of_ints({1}), Arg::of_bool(true)});
    Node* n = call("div.Tensor", {Arg(t), Arg(sum)});
    x = call("add.Tensor", {Arg(x), Arg(n)});
  }
  Node* loss = call("sum.default", {Arg(x)});
  g->set_output(Arg::of_tuple({Arg(loss)}));
  return g;
}

/// A joint graph of at least `nodes` nodes (built once per size and weight_sets).
const JointGraph& joint_of_size(int64_t nodes, int weight_sets = 0) {
  static std::map<std::pair<int64_t, int>, JointGraph> cache;
  auto it = cache.find({nodes, weight_sets});
  if (it != cache.end()) return it->second;
  std::vector<bool> rg;
  auto joint = [&](int layers) {
    JointGraph j = build_joint(*forward(layers, weight_sets, rg), rg);
    decompose(*j.graph, DecompositionTable::core());
    return j;
  };
  // The joint graph grows linearly with the layers: size = base + per_layer * layers.
  const int64_t one = static_cast<int64_t>(joint(1).graph->size());
  const int64_t per_layer = static_cast<int64_t>(joint(2).graph->size()) - one;
  int layers =
      static_cast<int>(std::max<int64_t>(1, (nodes - one + per_layer - 1) / per_layer + 1));
  JointGraph j = joint(layers);
  while (static_cast<int64_t>(j.graph->size()) < nodes) j = joint(++layers);
  return cache.emplace(std::make_pair(nodes, weight_sets), std::move(j)).first->second;
}

void counters(benchmark::State& state, const JointGraph& j, const Partition& p) {
  state.counters["joint_nodes"] = static_cast<double>(j.graph->size());
  state.counters["inputs"] = static_cast<double>(j.num_primals + j.num_tangents);
  state.counters["saved"] = static_cast<double>(p.saved.size());
  state.counters["bw_nodes"] = static_cast<double>(p.bw->size());
}

void BM_MinCutPartition(benchmark::State& state) {
  const JointGraph& j = joint_of_size(state.range(0));
  Partition p;
  for (auto _ : state) {
    p = min_cut_partition(j);
    benchmark::DoNotOptimize(p.fw.get());
  }
  counters(state, j, p);
}

// As BM_MinCutPartition with 16 weight/bias pairs shared by all layers (few inputs, the benchmark's
// graphs before add_placeholder was linear).
void BM_MinCutPartitionSharedWeights(benchmark::State& state) {
  const JointGraph& j = joint_of_size(state.range(0), /*weight_sets=*/16);
  Partition p;
  for (auto _ : state) {
    p = min_cut_partition(j);
    benchmark::DoNotOptimize(p.fw.get());
  }
  counters(state, j, p);
}

// Classification and the flow network with its max-flow only (no CSE, no graph extraction).
void BM_MinCutSolve(benchmark::State& state) {
  const JointGraph& j = joint_of_size(state.range(0));
  JointNodeClasses c = classify_joint_nodes(*j.graph, j);
  size_t saved = 0;
  for (auto _ : state) {
    MinCutSolution sol = solve_min_cut(c, MinCutOptions{});
    saved = sol.saved.size();
    benchmark::DoNotOptimize(saved);
  }
  state.counters["joint_nodes"] = static_cast<double>(j.graph->size());
  state.counters["saved"] = static_cast<double>(saved);
}

// The stages of min_cut_partition one by one: copying the joint graph, DCE + CSE on the copy,
// classification, and building the two graphs from the saved set.
void BM_StageClone(benchmark::State& state) {
  const JointGraph& j = joint_of_size(state.range(0));
  for (auto _ : state) {
    auto g = j.graph->clone();
    benchmark::DoNotOptimize(g.get());
  }
}

void BM_StageDceCse(benchmark::State& state) {
  const JointGraph& j = joint_of_size(state.range(0));
  for (auto _ : state) {
    state.PauseTiming();
    auto g = j.graph->clone();
    state.ResumeTiming();
    eliminate_dead_code(*g);
    CommonSubexpressionElimination cse;
    cse.run(*g);
    state.PauseTiming();
    g.reset();
    state.ResumeTiming();
  }
}

void BM_StageClassify(benchmark::State& state) {
  const JointGraph& j = joint_of_size(state.range(0));
  for (auto _ : state) {
    JointNodeClasses c = classify_joint_nodes(*j.graph, j);
    benchmark::DoNotOptimize(c.nodes.data());
  }
}

void BM_StageExtract(benchmark::State& state) {
  const JointGraph& j = joint_of_size(state.range(0));
  JointNodeClasses c = classify_joint_nodes(*j.graph, j);
  MinCutSolution sol = solve_min_cut(c, MinCutOptions{});
  for (auto _ : state) {
    Partition p = partition_with_saved_values(*j.graph, c, sol.saved);
    benchmark::DoNotOptimize(p.fw.get());
  }
}

void BM_DefaultPartition(benchmark::State& state) {
  const JointGraph& j = joint_of_size(state.range(0));
  Partition p;
  for (auto _ : state) {
    p = default_partition(j);
    benchmark::DoNotOptimize(p.fw.get());
  }
  counters(state, j, p);
}

#define SIZES Arg(1000)->Arg(3000)->Arg(10000)->Arg(30000)->Arg(100000)
BENCHMARK(BM_MinCutPartition)->SIZES->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MinCutPartitionSharedWeights)->SIZES->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MinCutSolve)->SIZES->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StageClone)->SIZES->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StageDceCse)->SIZES->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StageClassify)->SIZES->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StageExtract)->SIZES->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DefaultPartition)->SIZES->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
