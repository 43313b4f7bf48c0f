// aotgrad: compiled functions called from several threads at once, as a server or one trainer per
// thread calls them (issue 44, item 4). Calls race to compile new shapes (static and dynamic
// compilations), training calls run beside no_grad inference, separate functions race to read and
// write one on-disk compile cache, and every output, gradient and written input equals eager's.
// scripts/tsan.sh runs these tests and the compile cache's under ThreadSanitizer.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "aotgrad/aotgrad.h"

namespace aotgrad {
namespace {

// A function with what the wrappers handle: an in-place write of an input (a buffer counting its
// calls), an in-place op on an intermediate, a view output and a reduction.
std::vector<at::Tensor> step_fn(const std::vector<at::Tensor>& a) {
  const at::Tensor& x = a[0];
  const at::Tensor& w = a[1];
  const at::Tensor& count = a[2];
  at::Tensor h = at::gelu(at::matmul(x, w));
  h.mul_(1.5);
  count.add_(1);
  return {h.sum(-1), h.t()};
}

struct Failures {
  std::mutex mu;
  std::vector<std::string> what;
  void add(const std::string& s) {
    std::lock_guard<std::mutex> lock(mu);
    what.push_back(s);
  }
};

bool same(const at::Tensor& a, const at::Tensor& b) {
  return a.defined() == b.defined() &&
         (!a.defined() || (a.sizes() == b.sizes() && at::allclose(a, b, 1e-5, 1e-6)));
}

// One call of `f` (training or no_grad inference) against eager on the same values; failures are
// collected rather than asserted, since gtest's assertions leave a failing thread's work undone.
void check_call(const AOTFunction& f, int64_t batch, bool train, uint64_t seed,
                const std::string& where, Failures& failures) {
  at::Tensor x = at::randn({batch, 6}, at::TensorOptions().dtype(at::kDouble));
  at::Tensor w = at::randn({6, 4}, at::TensorOptions().dtype(at::kDouble));
  at::Tensor count = at::full({1}, static_cast<double>(seed), at::kDouble);
  at::Tensor xe = x.clone(), we = w.clone(), ce = count.clone();
  if (train) {
    x.requires_grad_();
    w.requires_grad_();
    xe.requires_grad_();
    we.requires_grad_();
  }
  std::vector<at::Tensor> got, want;
  {
    std::optional<c10::NoGradGuard> no_grad;
    if (!train) no_grad.emplace();
    got = f({x, w, count});
    want = step_fn({xe, we, ce});
  }
  const std::string at_ =
      where + " (batch " + std::to_string(batch) + (train ? ", training)" : ", inference)");
  if (got.size() != want.size()) return failures.add(at_ + ": output count");
  for (size_t k = 0; k < got.size(); ++k)
    if (!same(got[k], want[k].detach())) failures.add(at_ + ": output " + std::to_string(k));
  if (!same(count, ce)) failures.add(at_ + ": the written input");
  if (!train) return;
  at::Tensor t0 = at::randn({batch}, at::kDouble), t1 = at::randn({4, batch}, at::kDouble);
  torch::autograd::variable_list g = torch::autograd::grad({got[0], got[1]}, {x, w}, {t0, t1});
  torch::autograd::variable_list ge = torch::autograd::grad({want[0], want[1]}, {xe, we}, {t0, t1});
  for (size_t k = 0; k < g.size(); ++k)
    if (!same(g[k], ge[k])) failures.add(at_ + ": gradient " + std::to_string(k));
}

// `threads` threads each make `calls` calls of f with batch sizes and modes that vary by thread
// and call, all starting at once.
void race(const std::function<void(int thread, int call)>& body, int threads, int calls) {
  // libtorch makes its default CPU generator on first use behind a static whose guard its inlined
  // code reads without ThreadSanitizer seeing it (a false report under scripts/tsan.sh): made here.
  (void)at::randn({1});
  std::atomic<int> ready{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < threads) std::this_thread::yield();
      for (int c = 0; c < calls; ++c) body(t, c);
    });
  for (std::thread& th : pool) th.join();
}

void expect_no_failures(const Failures& f) {
  EXPECT_TRUE(f.what.empty()) << f.what.size() << " failures, the first: " << f.what.front();
}

TEST(Concurrency, ThreadsRaceToCompileStaticShapesTrainingBesideInference) {
  AOTConfig cfg;
  cfg.dynamic = DynamicMode::kOff;  // every batch size is a compilation of its own
  AOTFunction f(step_fn, cfg);
  Failures failures;
  const int64_t batches[] = {2, 3, 5, 7};
  race(
      [&](int t, int c) {
        check_call(f, batches[(t + c) % 4], (t + c) / 4 % 2 == 0,
                   static_cast<uint64_t>(t * 100 + c),
                   "thread " + std::to_string(t) + " call " + std::to_string(c), failures);
      },
      4, 8);
  expect_no_failures(failures);
  // One compilation per (batch size, training or inference) that was called.
  EXPECT_EQ(f.num_compilations(), 8u);
}

TEST(Concurrency, ThreadsRaceToCompileADynamicShape) {
  AOTFunction f(step_fn, AOTConfig{});  // kAuto: the second batch size compiles a dynamic one
  Failures failures;
  race(
      [&](int t, int c) {
        check_call(f, 2 + (t * 3 + c) % 9, c % 3 != 2, static_cast<uint64_t>(t * 100 + c),
                   "thread " + std::to_string(t) + " call " + std::to_string(c), failures);
      },
      4, 9);
  expect_no_failures(failures);
  EXPECT_LE(f.num_compilations(), 6u);  // a static and a dynamic one per mode, at most
}

TEST(Concurrency, FunctionsRaceOnOneCompileCache) {
  const std::string dir = testing::TempDir() + "aotgrad_concurrency_cache_" +
                          std::to_string(static_cast<long>(::getpid()));
  std::filesystem::remove_all(dir);
  Failures failures;
  for (int round = 0; round < 2; ++round) {  // the first writes the entries, the second reads
    race(
        [&](int t, int c) {
          AOTConfig cfg;
          cfg.cache_dir = dir;
          cfg.dynamic = DynamicMode::kOff;
          AOTFunction f(step_fn, cfg);  // a function of its own: only the disk is shared
          check_call(f, 2 + c % 2, (t + c) % 2 == 0, static_cast<uint64_t>(t * 100 + c),
                     "round " + std::to_string(round) + " thread " + std::to_string(t), failures);
        },
        4, 4);
  }
  expect_no_failures(failures);
  // Every entry on disk is whole: no temporary file is left.
  size_t entries = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    ++entries;
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
  }
  EXPECT_GT(entries, 0u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace aotgrad
