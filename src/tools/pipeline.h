// aotgrad: what the compile and run commands share -- loading a graph, --grad, timed phases.
#pragma once

#include <chrono>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "aotgrad/ir/graph.h"
#include "aotgrad/transforms/aot_pipeline.h"
#include "cli.h"

namespace aotgrad::cli {

/// Reads, parses and verifies a graph; errors are rethrown as "FILE:LINE:COL: error: ..." text.
std::shared_ptr<Graph> load_graph(const std::string& path);

/// --grad=all|none|NAME,...: which placeholders require grad ("all": every floating-point input).
/// Throws UsageError for an unknown or non-floating name.
std::vector<bool> parse_grad_spec(const Graph& g, const std::string& spec);

/// --decomp=none|core|full|LIST (default core), --partition=default|min_cut (default min_cut),
/// --memory-budget=F and --solver=greedy|dp|ilp: the pipeline's options.
/// Throws UsageError naming what is not understood.
PipelineOptions pipeline_options(const Args& args);

/// The help lines of --decomp and --partition, for commands that take them.
std::vector<OptionSpec> pipeline_option_specs();

/// --cache-dir=DIR: the compile cache directory of compile and run; "" (no cache) without it, so
/// the command line never uses the user's cache unless asked. "off" is also no cache.
std::string cache_dir_option(const Args& args);
OptionSpec cache_dir_option_spec();

/// The compile cache's counters and directory as one JSON object, for --stats=json:
/// {"dir": DIR or null, "hits": N, "misses": N, "corrupt": N, "saved": N, "bypasses": N}.
nlohmann::ordered_json cache_stats_json(const std::string& dir);

/// Wall-clock phases in microseconds, in the order they ran, and the process CPU time (std::clock)
/// of each, which a loaded machine does not inflate with time spent waiting for a core.
class PhaseTimer {
 public:
  PhaseTimer()
      : start_(std::chrono::steady_clock::now()),
        last_(start_),
        cpu_start_(std::clock()),
        cpu_last_(cpu_start_) {}
  /// Records a phase timed elsewhere (a pipeline stage; `cpu_us` < 0: its CPU time is unknown) and
  /// restarts the clocks for the next one.
  void add(const std::string& phase, double us, double cpu_us = -1) {
    phases_.push_back({phase, us});
    if (cpu_us >= 0) cpu_phases_.push_back({phase, cpu_us});
    last_ = std::chrono::steady_clock::now();
    cpu_last_ = std::clock();
  }
  void mark(const std::string& phase) {
    auto now = std::chrono::steady_clock::now();
    std::clock_t cpu = std::clock();
    phases_.push_back({phase, std::chrono::duration<double, std::micro>(now - last_).count()});
    cpu_phases_.push_back({phase, cpu_us(cpu - cpu_last_)});
    last_ = now;
    cpu_last_ = cpu;
  }
  double total_us() const {
    return std::chrono::duration<double, std::micro>(last_ - start_).count();
  }
  double total_cpu_us() const { return cpu_us(cpu_last_ - cpu_start_); }
  const std::vector<std::pair<std::string, double>>& phases() const { return phases_; }
  const std::vector<std::pair<std::string, double>>& cpu_phases() const { return cpu_phases_; }

 private:
  static double cpu_us(std::clock_t ticks) {
    return 1e6 * static_cast<double>(ticks) / CLOCKS_PER_SEC;
  }
  std::chrono::steady_clock::time_point start_, last_;
  std::clock_t cpu_start_, cpu_last_;
  std::vector<std::pair<std::string, double>> phases_, cpu_phases_;
};

}  // namespace aotgrad::cli
