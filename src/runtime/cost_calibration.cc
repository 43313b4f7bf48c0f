// aotgrad: measuring the cost profile on libtorch's kernels.
#include "aotgrad/runtime/cost_calibration.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
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

int64_t tensor_bytes(const at::Tensor& t) {
  return t.defined() ? static_cast<int64_t>(t.numel() * t.element_size()) : 0;
}

// One op whose kernel is slower than its bytes say, timed on inputs of a few sizes: `make` gives
// the arguments for n elements of input, `run` calls the op and returns its results; work is the
// bytes of the tensor arguments and results, as call_bytes counts them.
struct OpKernel {
  std::vector<const char*> names;  // the ops that share the curve
  std::function<std::vector<at::Tensor>(int64_t)> make;
  std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>&)> run;
};

// [16, 64, s, s] images: a CNN's activations at batch 16; below 4096 elements, fewer images of
// 2x2 (the pooling windows need two pixels).
at::Tensor image(int64_t n) {
  if (n < 16 * 64 * 4) return at::randn({std::max<int64_t>(n / 256, 1), 64, 2, 2});
  const int64_t s = static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(n) / 1024)));
  return at::randn({16, 64, s, s});
}
// Rows of 256 features: a transformer's activations.
at::Tensor rows(int64_t n) { return at::randn({n / 256, 256}); }

std::vector<OpKernel> op_kernels() {
  using V = std::vector<at::Tensor>;
  auto unary = [](const char* name, at::Tensor (*make)(int64_t),
                  at::Tensor (*f)(const at::Tensor&)) {
    return OpKernel{
        {name}, [make](int64_t n) { return V{make(n)}; }, [f](const V& a) { return V{f(a[0])}; }};
  };
  return {
      // Training-mode batch norm; aotgrad's _native_batch_norm_legit_functional runs it.
      OpKernel{{"aten::_native_batch_norm_legit_functional", "aten::native_batch_norm"},
               [](int64_t n) {
                 at::Tensor x = image(n);
                 int64_t c = x.size(1);
                 return V{x, at::ones({c}), at::zeros({c}), at::zeros({c}), at::ones({c})};
               },
               [](const V& a) {
                 auto [y, mean, invstd] =
                     at::native_batch_norm(a[0], a[1], a[2], a[3], a[4], true, 0.1, 1e-5);
                 return V{y, mean, invstd, a[3].clone(), a[4].clone()};
               }},
      OpKernel{{"aten::max_pool2d_with_indices"},
               [](int64_t n) { return V{image(n)}; },
               [](const V& a) {
                 auto [y, idx] = at::max_pool2d_with_indices(a[0], {3, 3}, {2, 2}, {1, 1});
                 return V{y, idx};
               }},
      OpKernel{{"aten::avg_pool2d"},
               [](int64_t n) { return V{image(n)}; },
               [](const V& a) {
                 return V{at::avg_pool2d(a[0], {2, 2}, {2, 2})};
               }},
      OpKernel{{"aten::native_layer_norm"},
               [](int64_t n) {
                 at::Tensor x = rows(n);
                 return V{x, at::ones({x.size(1)}), at::zeros({x.size(1)})};
               },
               [](const V& a) {
                 auto [y, mean, rstd] =
                     at::native_layer_norm(a[0], {a[0].size(1)}, a[1], a[2], 1e-5);
                 return V{y, mean, rstd};
               }},
      unary("aten::_softmax", rows, [](const at::Tensor& x) { return at::_softmax(x, -1, false); }),
      unary("aten::_log_softmax", rows,
            [](const at::Tensor& x) { return at::_log_softmax(x, -1, false); }),
      unary("aten::gelu", rows, [](const at::Tensor& x) { return at::gelu(x); }),
      unary("aten::silu", image, [](const at::Tensor& x) { return at::silu(x); }),
      unary("aten::sigmoid", image, [](const at::Tensor& x) { return at::sigmoid(x); }),
      unary("aten::tanh", rows, [](const at::Tensor& x) { return at::tanh(x); }),
  };
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
  c10::NoGradGuard no_grad;
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
  for (const OpKernel& k : op_kernels()) {
    CostCurve curve;
    for (int64_t n : {int64_t{1} << 10, int64_t{1} << 12, int64_t{1} << 14, int64_t{1} << 16,
                      int64_t{1} << 18, int64_t{1} << 20}) {
      std::vector<at::Tensor> args = k.make(n);
      int64_t bytes = 0;
      for (const at::Tensor& t : args) bytes += tensor_bytes(t);
      for (const at::Tensor& t : k.run(args)) bytes += tensor_bytes(t);
      double s = time_call([&] { k.run(args); }, o);
      add_point(curve, static_cast<double>(bytes), s);
    }
    for (const char* name : k.names) p.ops[name] = curve;
  }
  return p;
}

}  // namespace aotgrad
