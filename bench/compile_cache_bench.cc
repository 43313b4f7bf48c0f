// aotgrad: what the compile cache saves -- the training pipeline (compile_for_training) against
// loading its entry from disk (read, checksum, parse and verify the graphs), and the cost of a
// miss (the pipeline plus writing the entry), on MLPs of 8 to 256 layers (linear, relu, layer
// norm each).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "aotgrad/driver/driver.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/support/version.h"

namespace {

// x [32, 64] through `layers` of linear (weight w<i>, bias b<i>), relu, layer_norm; then sum.
std::string mlp_text(int layers) {
  std::string args = "x: \"f32[32, 64]\"";
  std::string body;
  std::string cur = "x";
  for (int i = 0; i < layers; ++i) {
    std::string k = std::to_string(i);
    args += ", w" + k + ": \"f32[64, 64]\", b" + k + ": \"f32[64]\"";
    body += "    t_" + k + " = torch.ops.aten.t.default(w" + k + ")\n";
    body += "    addmm_" + k + " = torch.ops.aten.addmm.default(b" + k + ", " + cur + ", t_" + k +
            ")\n";
    body += "    relu_" + k + " = torch.ops.aten.relu.default(addmm_" + k + ")\n";
    body += "    ln_" + k + " = torch.ops.aten.native_layer_norm.default(relu_" + k +
            ", [64], None, None, 1e-05)\n";
    body += "    y_" + k + " = ln_" + k + "[0]\n";
    cur = "y_" + k;
  }
  body += "    sum_1 = torch.ops.aten.sum.default(" + cur + ")\n    return (sum_1,)\n";
  return "def forward(self, " + args + "):\n" + body;
}

struct Case {
  std::shared_ptr<aotgrad::Graph> graph;
  std::vector<bool> requires_grad;
  explicit Case(int layers) : graph(aotgrad::parse_graph(mlp_text(layers), aotgrad::aten_ops())) {
    requires_grad.assign(graph->placeholders().size(), true);
    requires_grad[0] = false;
  }
};

aotgrad::CompileOptions cache_in(const std::string& dir) {
  aotgrad::CompileOptions o;
  o.cache_dir = dir;
  return o;
}

std::string temp_dir() {
  std::string tmpl =
      (std::filesystem::temp_directory_path() / "aotgrad-cache-bench-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) std::abort();
  return tmpl;
}

void BM_CompileForTraining(benchmark::State& state) {
  Case c(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    aotgrad::TrainingArtifacts a =
        aotgrad::compile_for_training(*c.graph, c.requires_grad, cache_in("off"));
    benchmark::DoNotOptimize(a.fw);
  }
  state.counters["nodes"] = static_cast<double>(c.graph->size());
}

// A miss: the key, the pipeline, and the entry written (temporary file + rename).
void BM_CacheMissAndStore(benchmark::State& state) {
  Case c(static_cast<int>(state.range(0)));
  std::string dir = temp_dir();
  std::string path;
  for (auto _ : state) {
    state.PauseTiming();
    std::filesystem::remove_all(dir);
    state.ResumeTiming();
    aotgrad::TrainingArtifacts a =
        aotgrad::compile_for_training(*c.graph, c.requires_grad, cache_in(dir));
    benchmark::DoNotOptimize(a.fw);
  }
  std::filesystem::remove_all(dir);
}

// A hit: the key, the entry read, checked, parsed and verified.
void BM_CacheHit(benchmark::State& state) {
  Case c(static_cast<int>(state.range(0)));
  std::string dir = temp_dir();
  aotgrad::compile_for_training(*c.graph, c.requires_grad, cache_in(dir));
  std::string key = aotgrad::training_cache_key(*c.graph, c.requires_grad, {}, aotgrad::version());
  for (auto _ : state) {
    aotgrad::TrainingArtifacts a =
        aotgrad::compile_for_training(*c.graph, c.requires_grad, cache_in(dir));
    if (!a.cache_hit) state.SkipWithError("no cache hit");
    benchmark::DoNotOptimize(a.fw);
  }
  state.counters["entry_bytes"] = static_cast<double>(
      std::filesystem::file_size(std::filesystem::path(dir) / (key + ".entry")));
  std::filesystem::remove_all(dir);
}

BENCHMARK(BM_CompileForTraining)->Arg(8)->Arg(64)->Arg(256)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CacheMissAndStore)->Arg(8)->Arg(64)->Arg(256)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CacheHit)->Arg(8)->Arg(64)->Arg(256)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
