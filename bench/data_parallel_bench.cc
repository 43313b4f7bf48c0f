// Data-parallel step time under `aotgrad launch --nproc N`: an MLP trained with SGD on each rank's
// slice of the batch, (1) eagerly with libtorch, all-reducing every gradient after the backward
// (each issued, then all waited, then divided), (2) compiled with aot_module in data-parallel mode
// (bucketed all-reduces inside the backward graph), and without communication (3) eagerly and (4)
// compiled, and (5) the buckets' all-reduces alone. The fraction of communication hidden behind
// the backward is 1 - (step(2) - step(4)) / comm(5).
//
// usage: aotgrad launch --nproc 2 -- data_parallel_bench [--width=1024] [--layers=8] [--batch=64]
//        [--steps=20] [--threads=1] [--bucket-mb=25] [--first-bucket-mb=1]
// Rank 0 prints the medians in milliseconds, of wall time and of its process's CPU time (every
// thread: the intra-op one and Gloo's).
//
// --memory: per-rank memory of a training step with an optimizer that keeps state
// (--optimizer=adam, or sgd with momentum 0.9) instead: eager libtorch all-reducing after the
// backward, aot_module data-parallel (kReplicated), and sharded (kSharded, FSDP2's fully_shard)
// re-gathering the parameters in the backward (reshard_after_forward) or keeping them from the
// forward. Each configuration is built, trained for --steps steps and destroyed before the next,
// under the tracking allocator (installed before any tensor is made): the bytes of the parameters,
// their gradients and the optimizer's state on this rank, and the peak of tensor storage during a
// step (zero_grad, forward, backward, optimizer step; the largest over the steps after 2 warm-up
// ones). Every rank prints its own figures.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "aotgrad/aotgrad.h"
#include "aotgrad/runtime/distributed/data_parallel.h"
#include "aotgrad/runtime/distributed/process_group.h"
#include "aotgrad/runtime/memory.h"

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
// This process's CPU time (every thread: the intra-op one and Gloo's), in milliseconds.
double cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

// The medians of each mode's wall time and of this process's CPU time in it.
struct Timings {
  std::vector<double> wall, cpu;
};
Timings time_rounds(const c10::intrusive_ptr<c10d::ProcessGroup>& pg, int64_t steps,
                    const std::vector<std::function<void()>>& modes) {
  std::vector<std::vector<double>> ms(modes.size()), cpu(modes.size());
  for (int64_t s = 0; s < steps + 3; ++s)
    for (size_t m = 0; m < modes.size(); ++m) {
      barrier(pg);
      Clock::time_point t0 = Clock::now();
      double c0 = cpu_ms();
      modes[m]();
      double d = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      if (s >= 3) {
        ms[m].push_back(d);
        cpu[m].push_back(cpu_ms() - c0);
      }
    }
  Timings out;
  for (size_t m = 0; m < modes.size(); ++m) {
    out.wall.push_back(median(ms[m]));
    out.cpu.push_back(median(cpu[m]));
  }
  return out;
}

std::string text_option(int argc, char** argv, const std::string& name,
                        const std::string& fallback) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--" + name + "=", 0) == 0) return a.substr(name.size() + 3);
  }
  return fallback;
}

bool flag(int argc, char** argv, const std::string& name) {
  for (int i = 1; i < argc; ++i)
    if (argv[i] == "--" + name) return true;
  return false;
}

int64_t nbytes(const at::Tensor& t) { return t.defined() ? static_cast<int64_t>(t.nbytes()) : 0; }

// The bytes of an Adam's or SGD's state tensors.
int64_t optimizer_state_bytes(const torch::optim::Optimizer& opt) {
  int64_t b = 0;
  for (const auto& entry : opt.state()) {
    const torch::optim::OptimizerParamState* st = entry.second.get();
    if (auto* a = dynamic_cast<const torch::optim::AdamParamState*>(st))
      b += nbytes(a->exp_avg()) + nbytes(a->exp_avg_sq()) + nbytes(a->max_exp_avg_sq());
    else if (auto* m = dynamic_cast<const torch::optim::SGDParamState*>(st))
      b += nbytes(m->momentum_buffer());
  }
  return b;
}

// One configuration's memory on this rank.
struct MemoryRow {
  std::string name;
  int64_t params = 0, grads = 0, state = 0;  // bytes held between steps
  int64_t peak = 0;                          // the largest peak of tensor storage in a step
  int64_t phase_peak[3] = {0, 0, 0};         // ... in its forward, backward, optimizer step
  double step_ms = 0;                        // median step time
};

// Every rank's value of `v` (a collective: every rank calls it).
std::vector<double> gather_all(const c10::intrusive_ptr<c10d::ProcessGroup>& pg, double v) {
  std::vector<std::vector<at::Tensor>> out(1);
  for (int r = 0; r < pg->getSize(); ++r) out[0].push_back(at::empty({1}, at::kDouble));
  std::vector<at::Tensor> in{at::full({1}, v, at::kDouble)};
  pg->allgather(out, in)->wait();
  std::vector<double> all;
  for (const at::Tensor& t : out[0]) all.push_back(t.item<double>());
  return all;
}

// The peak of tensor storage since the last phase ends a phase (forward, backward, optimizer
// step): its peak is kept, and the next phase's starts from the bytes alive now.
struct Phases {
  int64_t peak[3] = {0, 0, 0};
  int next = 0;
  void end_phase() {
    peak[next++] = aotgrad::memory_stats().peak_bytes;
    aotgrad::reset_peak_memory();
  }
};

int memory_main(int argc, char** argv, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
  const int64_t width = option(argc, argv, "width", 1024), layers = option(argc, argv, "layers", 8);
  const int64_t batch = option(argc, argv, "batch", 64), steps = option(argc, argv, "steps", 5);
  const std::string optimizer = text_option(argc, argv, "optimizer", "adam");
  if (optimizer != "adam" && optimizer != "sgd") {
    std::fprintf(stderr, "data_parallel_bench: --optimizer must be adam or sgd\n");
    return 2;
  }
  const int world = pg->getSize(), rank = pg->getRank();
  torch::manual_seed(rank);
  at::Tensor x = torch::randn({batch, width}), y = torch::randn({batch, width});
  auto make_optimizer = [&](Mlp& m) -> std::unique_ptr<torch::optim::Optimizer> {
    if (optimizer == "adam")
      return std::make_unique<torch::optim::Adam>(m.parameters(), torch::optim::AdamOptions(1e-4));
    return std::make_unique<torch::optim::SGD>(m.parameters(),
                                               torch::optim::SGDOptions(1e-3).momentum(0.9));
  };

  // Trains one configuration and measures it: `setup` prepares the model (before the optimizer is
  // made over its parameters) and returns its step.
  using Step = std::function<void(torch::optim::Optimizer&, Phases&)>;
  auto measure = [&](const std::string& name,
                     const std::function<Step(const std::shared_ptr<Mlp>&)>& setup) {
    MemoryRow row;
    row.name = name;
    torch::manual_seed(0);
    auto m = std::make_shared<Mlp>(width, layers);
    Step step = setup(m);
    std::unique_ptr<torch::optim::Optimizer> opt = make_optimizer(*m);
    std::vector<double> ms;
    for (int64_t s = 0; s < steps + 2; ++s) {
      barrier(pg);
      aotgrad::reset_peak_memory();
      Clock::time_point t0 = Clock::now();
      Phases phases;
      step(*opt, phases);
      double d = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      if (s < 2) continue;
      for (int k = 0; k < 3; ++k) {
        row.phase_peak[k] = std::max(row.phase_peak[k], phases.peak[k]);
        row.peak = std::max(row.peak, phases.peak[k]);
      }
      ms.push_back(d);
    }
    for (const at::Tensor& p : m->parameters()) {
      row.params += nbytes(p);
      row.grads += nbytes(p.grad());
    }
    row.state = optimizer_state_bytes(*opt);
    row.step_ms = median(ms);
    barrier(pg);
    return row;
  };

  std::vector<MemoryRow> rows;
  rows.push_back(measure("eager, all-reduce after backward", [&](const std::shared_ptr<Mlp>& m) {
    return [&, m](torch::optim::Optimizer& opt, Phases& phases) {
      opt.zero_grad();
      at::Tensor loss = torch::mse_loss(m->forward(x), y);
      phases.end_phase();
      loss.backward();
      std::vector<c10::intrusive_ptr<c10d::Work>> works;
      std::vector<std::vector<at::Tensor>> bufs;
      for (auto& p : m->parameters()) bufs.push_back({p.grad()});
      for (auto& b : bufs) works.push_back(pg->allreduce(b));
      for (auto& w : works) w->wait();
      for (auto& p : m->parameters()) p.grad().div_(world);
      phases.end_phase();
      opt.step();
      phases.end_phase();
    };
  }));
  struct Compiled {
    const char* name;
    aotgrad::DataParallelMode mode;
    std::optional<bool> reshard;
    double budget;
  };
  using aotgrad::DataParallelMode;
  for (const Compiled& c :
       {Compiled{"aot_module data-parallel", DataParallelMode::kReplicated, true, 1.0},
        Compiled{"aot_module sharded, re-gather in backward", DataParallelMode::kSharded, true,
                 1.0},
        Compiled{"aot_module sharded, keep gathered", DataParallelMode::kSharded, false, 1.0},
        Compiled{"aot_module sharded, by the budget, 1", DataParallelMode::kSharded, std::nullopt,
                 1.0},
        Compiled{"aot_module sharded, by the budget, 0.5", DataParallelMode::kSharded, std::nullopt,
                 0.5},
        Compiled{"aot_module sharded, by the budget, 0", DataParallelMode::kSharded, std::nullopt,
                 0.0}}) {
    rows.push_back(measure(c.name, [&](const std::shared_ptr<Mlp>& m) -> Step {
      aotgrad::AOTConfig config;
      config.data_parallel = c.mode;
      config.reshard_after_forward = c.reshard;
      config.min_cut.activation_memory_budget = c.budget;
      Mlp* raw = m.get();
      auto compiled = std::make_shared<aotgrad::AOTModule>(aotgrad::aot_module(
          m,
          [raw, &y](const std::vector<at::Tensor>& in) {
            return std::vector<at::Tensor>{torch::mse_loss(raw->forward(in[0]), y)};
          },
          config));
      return [&, compiled](torch::optim::Optimizer& opt, Phases& phases) {
        opt.zero_grad();
        at::Tensor loss = (*compiled)({x})[0];
        phases.end_phase();
        loss.backward();
        phases.end_phase();
        opt.step();
        phases.end_phase();
      };
    }));
  }

  // Rank 0 prints every rank's figures (gathered, so the lines do not interleave).
  const double mib = 1 << 20;
  std::vector<std::vector<double>> peaks;
  for (const MemoryRow& r : rows) peaks.push_back(gather_all(pg, static_cast<double>(r.peak)));
  if (rank == 0) {
    double params_mib = static_cast<double>(layers * (width * width + width) * 4) / mib;
    std::printf(
        "data_parallel_bench --memory: %d ranks, MLP %lld x Linear(%lld, %lld) (%.1f MiB of "
        "parameters), batch %lld per rank, %s; per rank, MiB (rank 0's unless named); peak of "
        "tensor storage in a step, the largest over %lld steps\n",
        world, static_cast<long long>(layers), static_cast<long long>(width),
        static_cast<long long>(width), params_mib, static_cast<long long>(batch),
        optimizer == "adam" ? "Adam" : "SGD with momentum", static_cast<long long>(steps));
    std::printf("  %-44s %8s %8s %8s %10s %s %8s   peak in forward / backward / optimizer\n",
                "configuration", "params", "grads", "state", "peak", "(every rank)", "step ms");
    for (size_t i = 0; i < rows.size(); ++i) {
      const MemoryRow& r = rows[i];
      std::string all;
      for (double p : peaks[i]) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%s%.2f", all.empty() ? "" : " ", p / mib);
        all += buf;
      }
      std::printf("  %-44s %8.2f %8.2f %8.2f %10.2f (%s) %8.1f   %.2f / %.2f / %.2f\n",
                  r.name.c_str(), r.params / mib, r.grads / mib, r.state / mib, r.peak / mib,
                  all.c_str(), r.step_ms, r.phase_peak[0] / mib, r.phase_peak[1] / mib,
                  r.phase_peak[2] / mib);
    }
    for (size_t i = 2; i < rows.size(); ++i) {
      double worst = 0;
      for (size_t k = 0; k < peaks[i].size(); ++k)
        worst = std::max(worst, peaks[i][k] / peaks[1][k]);
      std::printf("  peak %s / aot_module data-parallel: %.3f (the largest over the ranks)\n",
                  rows[i].name.c_str(), worst);
    }
  }
  barrier(pg);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (flag(argc, argv, "memory")) {
    aotgrad::install_tracking_allocator();
    at::set_num_threads(static_cast<int>(option(argc, argv, "threads", 1)));
    return memory_main(argc, argv, aotgrad::resolve_process_group("0"));
  }
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
  // The same all-reduces issued before this rank sleeps (computes nothing) for 1.5 times as long as
  // they take alone, then waited: how long the waits block when a CPU is free for Gloo.
  double comm_estimate = time_rounds(pg, 5, {comm_only}).wall[0];
  std::vector<double> blocked;
  auto comm_behind_sleep = [&] {
    std::vector<std::vector<at::Tensor>> bufs;
    for (int64_t n : buckets) bufs.push_back({at::ones({n})});
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    for (auto& b : bufs) works.push_back(pg->allreduce(b));
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(1.5 * comm_estimate));
    Clock::time_point t0 = Clock::now();
    for (auto& w : works) w->wait();
    blocked.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  };
  Timings timed = time_rounds(
      pg, steps,
      {[&] { eager_step(*eager, eager_opt, true); }, [&] { eager_step(*eager, eager_opt, false); },
       [&] { compiled_step(0); }, [&] { compiled_step(1); }, comm_only, comm_behind_sleep});
  const std::vector<double>& t = timed.wall;
  double eager_comm = t[0], eager_local = t[1], aot_dp = t[2], aot_local = t[3], comm = t[4];

  if (rank == 0) {
    double params_mib = static_cast<double>(layers * (width * width + width) * 4) / (1 << 20);
    std::printf(
        "data_parallel_bench: %d ranks, MLP %lld x Linear(%lld, %lld) (%.1f MiB of "
        "parameters, %zu buckets), batch %lld per rank, %d intra-op thread(s), %u CPUs online; "
        "median of %lld steps, ms of wall time and of rank 0's CPU time (all its threads)\n",
        world, static_cast<long long>(layers), static_cast<long long>(width),
        static_cast<long long>(width), params_mib, buckets.size(), static_cast<long long>(batch),
        at::get_num_threads(), std::thread::hardware_concurrency(), static_cast<long long>(steps));
    const char* names[] = {"eager, all-reduce after backward", "eager, no communication",
                           "aot_module data-parallel", "aot_module, no communication",
                           "the buckets' all-reduces alone"};
    for (size_t m = 0; m < 5; ++m)
      std::printf("  %-34s %8.2f  CPU %8.2f\n", names[m], t[m], timed.cpu[m]);
    double hidden = 1 - (aot_dp - aot_local) / comm;
    double eager_hidden = 1 - (eager_comm - eager_local) / comm;
    std::printf("  communication hidden behind the backward: aot_module %.0f%%, eager %.0f%%\n",
                100 * std::clamp(hidden, 0.0, 1.0), 100 * std::clamp(eager_hidden, 0.0, 1.0));
    std::printf("  step time aot_module data-parallel / eager all-reduce after backward: %.2f\n",
                aot_dp / eager_comm);
    double b = median(blocked);
    std::printf(
        "  the all-reduces issued before a %.1f ms sleep: the waits block %.2f ms (%.0f%% of "
        "them hidden when the rank computes nothing)\n",
        1.5 * comm_estimate, b, 100 * std::clamp(1 - b / comm, 0.0, 1.0));
  }
  barrier(pg);
  return 0;
}
