// Data-parallel step time under `aotgrad launch --nproc N`: an MLP trained with SGD on each rank's
// slice of the batch, (1) eagerly with libtorch, all-reducing every gradient after the backward
// (each issued, then all waited, then divided), (2) compiled with aot_module in data-parallel mode
// (bucketed all-reduces inside the backward graph), and without communication (3) eagerly and (4)
// compiled, and (5) the buckets' all-reduces alone. The fraction of communication hidden behind
// the backward is 1 - (step(2) - step(4)) / comm(5).
//
// usage: aotgrad launch --nproc 2 -- data_parallel_bench [--width=1024] [--layers=8] [--batch=64]
//        [--steps=20] [--threads=1] [--bucket-mb=25] [--first-bucket-mb=1]
// Rank 0 prints the medians in milliseconds.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "aotgrad/aotgrad.h"
#include "aotgrad/runtime/data_parallel.h"
#include "aotgrad/runtime/process_group.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Mlp : torch::nn::Module {
  Mlp(int64_t width, int64_t layers) {
    for (int64_t i = 0; i < layers; ++i)
      fc.push_back(register_module("fc" + std::to_string(i), torch::nn::Linear(width, width)));
  }
  at::Tensor forward(at::Tensor x) {
    for (size_t i = 0; i < fc.size(); ++i) {
      x = fc[i](x);
      if (i + 1 < fc.size()) x = torch::relu(x);
    }
    return x;
  }
  std::vector<torch::nn::Linear> fc;
};

int64_t option(int argc, char** argv, const std::string& name, int64_t fallback) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--" + name + "=", 0) == 0) return std::stoll(a.substr(name.size() + 3));
  }
  return fallback;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void barrier(const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
  std::vector<at::Tensor> t{at::zeros({1})};
  pg->allreduce(t)->wait();
}

// Median milliseconds of each of `modes` over `steps` rounds after 3 warm-up rounds; in each round
// every mode runs once, started together on every rank (so a change in the machine's load touches
// every mode alike).
std::vector<double> time_rounds(const c10::intrusive_ptr<c10d::ProcessGroup>& pg, int64_t steps,
                                const std::vector<std::function<void()>>& modes) {
  std::vector<std::vector<double>> ms(modes.size());
  for (int64_t s = 0; s < steps + 3; ++s)
    for (size_t m = 0; m < modes.size(); ++m) {
      barrier(pg);
      Clock::time_point t0 = Clock::now();
      modes[m]();
      double d = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      if (s >= 3) ms[m].push_back(d);
    }
  std::vector<double> out;
  for (auto& v : ms) out.push_back(median(v));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t width = option(argc, argv, "width", 1024), layers = option(argc, argv, "layers", 8);
  int64_t batch = option(argc, argv, "batch", 64), steps = option(argc, argv, "steps", 20);
  at::set_num_threads(static_cast<int>(option(argc, argv, "threads", 1)));
  auto pg = aotgrad::resolve_process_group("0");
  const int world = pg->getSize(), rank = pg->getRank();
  torch::manual_seed(rank);
  at::Tensor x = torch::randn({batch, width}), y = torch::randn({batch, width});
  auto loss_of = [&](Mlp& m) { return torch::mse_loss(m.forward(x), y); };

  auto eager_step = [&](Mlp& m, torch::optim::SGD& opt, bool communicate) {
    opt.zero_grad();
    loss_of(m).backward();
    if (communicate) {
      std::vector<c10::intrusive_ptr<c10d::Work>> works;
      std::vector<std::vector<at::Tensor>> bufs;
      for (auto& p : m.parameters()) bufs.push_back({p.grad()});
      for (auto& b : bufs) works.push_back(pg->allreduce(b));
      for (auto& w : works) w->wait();
      for (auto& p : m.parameters()) p.grad().div_(world);
    }
    opt.step();
  };

  int64_t bucket_mb = option(argc, argv, "bucket-mb", 25);
  int64_t first_bucket_mb = option(argc, argv, "first-bucket-mb", 1);
  torch::manual_seed(0);
  auto eager = std::make_shared<Mlp>(width, layers);
  torch::optim::SGD eager_opt(eager->parameters(), 1e-3);
  std::vector<std::shared_ptr<Mlp>> models;
  std::vector<std::unique_ptr<torch::optim::SGD>> opts;
  std::vector<aotgrad::AOTModule> compiled;
  for (bool dp : {true, false}) {
    torch::manual_seed(0);
    models.push_back(std::make_shared<Mlp>(width, layers));
    opts.push_back(std::make_unique<torch::optim::SGD>(models.back()->parameters(), 1e-3));
    aotgrad::AOTConfig config;
    if (dp) config.data_parallel = aotgrad::DataParallelMode::kReplicated;
    config.bucket_cap_bytes = bucket_mb << 20;
    config.first_bucket_cap_bytes = first_bucket_mb << 20;
    Mlp* raw = models.back().get();
    compiled.push_back(aotgrad::aot_module(
        models.back(),
        [raw, &y](const std::vector<at::Tensor>& in) {
          return std::vector<at::Tensor>{torch::mse_loss(raw->forward(in[0]), y)};
        },
        config));
  }
  auto compiled_step = [&](size_t k) {
    opts[k]->zero_grad();
    compiled[k]({x})[0].backward();
    opts[k]->step();
  };

  // The buckets' communication alone: the data-parallel compilation's buckets (DDP's caps, in
  // the backward's order: the last layer's first), each all-reduced, all waited.
  std::vector<int64_t> buckets;
  {
    int64_t open = 0, cap = first_bucket_mb << 20;
    for (int64_t l = 0; l < layers; ++l)
      for (int64_t n : {width, width * width}) {
        open += n * 4;
        if (open >= cap) {
          buckets.push_back(open / 4);
          open = 0;
          cap = bucket_mb << 20;
        }
      }
    if (open) buckets.push_back(open / 4);
  }
  auto comm_only = [&] {
    std::vector<std::vector<at::Tensor>> bufs;
    for (int64_t n : buckets) bufs.push_back({at::ones({n})});
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    for (auto& b : bufs) works.push_back(pg->allreduce(b));
    for (auto& w : works) w->wait();
  };
  std::vector<double> t = time_rounds(
      pg, steps,
      {[&] { eager_step(*eager, eager_opt, true); }, [&] { eager_step(*eager, eager_opt, false); },
       [&] { compiled_step(0); }, [&] { compiled_step(1); }, comm_only});
  double eager_comm = t[0], eager_local = t[1], aot_dp = t[2], aot_local = t[3], comm = t[4];

  if (rank == 0) {
    double params_mib = static_cast<double>(layers * (width * width + width) * 4) / (1 << 20);
    std::printf(
        "data_parallel_bench: %d ranks, MLP %lld x Linear(%lld, %lld) (%.1f MiB of "
        "parameters, %zu buckets), batch %lld per rank, %d intra-op thread(s); median of "
        "%lld steps, ms\n",
        world, static_cast<long long>(layers), static_cast<long long>(width),
        static_cast<long long>(width), params_mib, buckets.size(), static_cast<long long>(batch),
        at::get_num_threads(), static_cast<long long>(steps));
    std::printf("  eager, all-reduce after backward   %8.2f\n", eager_comm);
    std::printf("  eager, no communication            %8.2f\n", eager_local);
    std::printf("  aot_module data-parallel           %8.2f\n", aot_dp);
    std::printf("  aot_module, no communication       %8.2f\n", aot_local);
    std::printf("  the buckets' all-reduces alone     %8.2f\n", comm);
    double hidden = 1 - (aot_dp - aot_local) / comm;
    double eager_hidden = 1 - (eager_comm - eager_local) / comm;
    std::printf("  communication hidden behind the backward: aot_module %.0f%%, eager %.0f%%\n",
                100 * std::clamp(hidden, 0.0, 1.0), 100 * std::clamp(eager_hidden, 0.0, 1.0));
    std::printf("  step time aot_module data-parallel / eager all-reduce after backward: %.2f\n",
                aot_dp / eager_comm);
  }
  barrier(pg);
  return 0;
}
