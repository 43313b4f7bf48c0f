// aotgrad: measuring the cost profile on libtorch's kernels.
#include "aotgrad/runtime/cost_calibration.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace aotgrad {
namespace {

// The median over `reps` repetitions of the seconds one call of `f` takes.
double time_call(const std::function<void()>& f, const CalibrationOptions& o) {
  using clock = std::chrono::steady_clock;
  f();  // warm up (allocations, oneDNN primitives)
  int calls = 1;
  for (;;) {
    auto t0 = clock::now();
    for (int i = 0; i < calls; ++i) f();
    double s = std::chrono::duration<double>(clock::now() - t0).count();
    if (s >= o.min_seconds || calls >= (1 << 20)) break;
    calls *= 2;
  }
  std::vector<double> per_call;
  for (int r = 0; r < std::max(o.repetitions, 1); ++r) {
    auto t0 = clock::now();
    for (int i = 0; i < calls; ++i) f();
    per_call.push_back(std::chrono::duration<double>(clock::now() - t0).count() / calls);
  }
  std::nth_element(per_call.begin(), per_call.begin() + per_call.size() / 2, per_call.end());
  return per_call[per_call.size() / 2];
}

void add_point(CostCurve& c, double work, double seconds) {
  if (!c.points.empty()) seconds = std::max(seconds, c.points.back().second);
  c.points.emplace_back(work, seconds);
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown CPU";
}

}  // namespace

CostProfile calibrate_cost_profile(const CalibrationOptions& o) {
  at::NoGradGuard no_grad;
  CostProfile p;
  p.threads = at::get_num_threads();
  p.machine = cpu_model() + ", " + std::to_string(p.threads) + " threads";
  for (int64_t n : {8, 16, 32, 64, 128, 256, 512}) {
    at::Tensor a = at::randn({n, n}), b = at::randn({n, n});
    double s = time_call([&] { at::mm(a, b); }, o);
    add_point(p.matmul, 2.0 * n * n * n, s);
  }
  struct Conv {
    int64_t channels, size;
  };
  std::vector<std::pair<double, double>> conv_points;
  for (Conv c : {Conv{4, 8}, Conv{8, 16}, Conv{16, 16}, Conv{32, 16}, Conv{32, 32}, Conv{64, 32}}) {
    at::Tensor x = at::randn({2, c.channels, c.size, c.size});
    at::Tensor w = at::randn({c.channels, c.channels, 3, 3});
    double s = time_call(
        [&] {
          at::convolution(x, w, {}, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1);
        },
        o);
    conv_points.emplace_back(2.0 * 2 * c.channels * c.size * c.size * c.channels * 9, s);
  }
  std::sort(conv_points.begin(), conv_points.end());
  for (auto [work, s] : conv_points) add_point(p.convolution, work, s);
  for (int64_t n = 256; n <= (int64_t{1} << 22); n *= 4) {
    at::Tensor a = at::randn({n}), b = at::randn({n});
    double s = time_call([&] { at::add(a, b); }, o);
    add_point(p.memory, 3.0 * 4 * n, s);
  }
  return p;
}

}  // namespace aotgrad
