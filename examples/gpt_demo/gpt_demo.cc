// aotgrad demo: trains a character-level GPT (char_gpt.h) on the text shipped beside this file
// (corpus.txt, written for this repository), twice from the same initial weights on the same
// batches: eagerly with libtorch, and compiled with aot_module and the min-cut partition. Prints a
// progress line per mode, then the final losses, median step times and peak training-step memory
// (measured by aotgrad's tracking allocator; on a GPU, by the CUDA caching allocator) of both,
// whether the losses agree, and a sample of text from the compiled run's weights. Exits 1 when the
// losses disagree beyond --tolerance, 2 on bad usage.
//
// Under a launcher (`aotgrad launch --nproc=N -- gpt_demo ...`, torchrun's or OpenMPI's variables)
// the compiled run is data-parallel (DistributedDataParallel's scheme): every rank draws the same
// batches and trains aot_module on its 1/N slice of each, the gradients averaged across the ranks
// in the backward graph; its loss is the ranks' average, which is the loss of the whole batch.
// The eager run trains one process on the whole batch, so the two agree as before. Rank 0 prints.
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "aotgrad/ir/error.h"
#include "aotgrad/runtime/device.h"
#include "aotgrad/runtime/distributed/process_group.h"
#include "aotgrad/runtime/memory.h"
#include "char_gpt.h"

namespace {

using aotgrad::demo::CharGPTConfig;
using aotgrad::demo::CharGPTImpl;
using aotgrad::demo::CharText;

struct Options {
  int64_t steps = 300;
  int64_t batch = 16;
  int64_t seq = 64;
  int64_t d = 96;
  int64_t heads = 4;
  int64_t layers = 3;
  double lr = 1e-3;
  uint64_t seed = 1;
  int64_t sample = 200;            // characters to generate at the end; 0: none
  double tolerance = 1e-3;         // largest relative difference of the final losses
  double memory_budget = 1;        // the min-cut partitioner's activation_memory_budget
  double max_slowdown = -1;        // --memory-budget=auto: the estimated extra step time allowed
  int threads = 0;                 // libtorch intra-op threads; 0: libtorch's default
  bool vary_seq = false;           // each step's windows have a random length in [seq/4, seq]
  bool checkpoint_blocks = false;  // the eager run checkpoints each block by hand
  bool grads_kept = false;         // --zero-grad=in-place: each .grad kept and zeroed in place
  std::string text = AOTGRAD_DEMO_TEXT;
  std::string device = "cpu";  // where the model, the batches and the step run
  int rank = 0;                // data parallel under a launcher: this rank of `world`
  int world = 1;
};

constexpr const char* kUsage =
    "usage: gpt_demo [--steps=N] [--batch=N] [--seq=N] [--d=N] [--heads=N] [--layers=N] [--lr=F]\n"
    "                [--memory-budget=F|auto] [--max-slowdown=F] [--seed=N] [--sample=N] "
    "[--tolerance=F] [--threads=N]\n"
    "                [--text=FILE] [--vary-seq] [--checkpoint-blocks] [--device=cpu|cuda]\n"
    "\n"
    "Trains a character-level GPT on a text twice from the same initial weights and batches --\n"
    "eagerly with libtorch, then compiled with aotgrad::aot_module and the min-cut partition --\n"
    "and compares final loss, median step time and peak training-step memory.\n"
    "\n"
    "  --steps=N       training steps per mode (300)\n"
    "  --batch=N       windows per batch (16)\n"
    "  --seq=N         characters per window, the model's context (64)\n"
    "  --d=N           embedding width (96); --heads=N attention heads (4); --layers=N blocks (3)\n"
    "  --lr=F          Adam's learning rate (1e-3)\n"
    "  --memory-budget=F  aot_module's activation_memory_budget in [0, 1]: 1 saves what is\n"
    "                  fastest, lower budgets the fastest plan whose predicted peak is that\n"
    "                  low (1); auto: the lowest predicted peak within --max-slowdown\n"
    "  --max-slowdown=F  with --memory-budget=auto: estimated extra step time allowed (0.1)\n"
    "  --seed=N        seeds the initial weights, the batches and the sample (1)\n"
    "  --sample=N      characters of text to generate at the end, 0 for none (200)\n"
    "  --tolerance=F   exit 1 when the final losses differ by more than F, relatively (1e-3)\n"
    "  --threads=N     libtorch's intra-op threads (its default)\n"
    "  --text=FILE     the training text (the corpus shipped with the demo)\n"
    "  --device=D      cpu (default) or cuda (cuda:N): where both runs train; on a GPU the peak\n"
    "                  step memory is the CUDA caching allocator's\n"
    "  --vary-seq      each step's windows have a random length in [seq/4, seq]: aot_module\n"
    "                  compiles once with the sequence length a size symbol (dynamic shapes)\n"
    "  --zero-grad=none|in-place  before each step, drop every .grad (none: libtorch 2's\n"
    "                  Optimizer::zero_grad(), the default) or keep and zero it (in-place:\n"
    "                  zero_grad(false)); aot_module plans its memory for the same convention\n"
    "  --checkpoint-blocks  the eager run checkpoints every block by hand "
    "(torch.utils.checkpoint's\n"
    "                  scheme: the forward keeps each block's input only, the backward runs the\n"
    "                  block again): the baseline for lower activation memory budgets\n"
    "\n"
    "Under a launcher (aotgrad launch --nproc=N -- gpt_demo ..., or torchrun's variables) the\n"
    "aot_module run is data-parallel: each rank trains on 1/N of every batch (--batch must be a\n"
    "multiple of N) and the gradients are averaged across the ranks; rank 0 prints.\n";

struct UsageError {
  std::string message;
};

int64_t parse_int(const std::string& flag, const std::string& value, int64_t min) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || value.empty())
    throw UsageError{flag + " expects an integer, got '" + value + "'"};
  if (v < min) throw UsageError{flag + " must be at least " + std::to_string(min)};
  return v;
}

double parse_float(const std::string& flag, const std::string& value, bool allow_zero = false) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || value.empty() || !std::isfinite(v) || v < 0 ||
      (v == 0 && !allow_zero))
    throw UsageError{flag + " expects a " + (allow_zero ? "non-negative" : "positive") +
                     " number, got '" + value + "'"};
  return v;
}

// Optimizer::zero_grad's two conventions: drop each .grad (the default, set_to_none) or zero it in
// place (zero_grad(set_to_none=false)).
void zero_grad(const std::vector<torch::Tensor>& params, bool in_place) {
  for (const torch::Tensor& p : params) {
    torch::Tensor& g = const_cast<torch::Tensor&>(p).mutable_grad();
    if (!g.defined()) continue;
    if (!in_place) {
      g.reset();
      continue;
    }
    if (g.grad_fn())
      g.detach_();
    else
      g.requires_grad_(false);
    g.zero_();
  }
}

Options parse_options(int argc, char** argv) {
  Options o;
  bool saw_auto = false, saw_max_slowdown = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--vary-seq") {
      o.vary_seq = true;
      continue;
    }
    if (arg == "--checkpoint-blocks") {
      o.checkpoint_blocks = true;
      continue;
    }
    size_t eq = arg.find('=');
    std::string flag = arg.substr(0, eq);
    if (eq == std::string::npos) throw UsageError{"unknown argument '" + arg + "'"};
    std::string value = arg.substr(eq + 1);
    if (flag == "--steps")
      o.steps = parse_int(flag, value, 1);
    else if (flag == "--batch")
      o.batch = parse_int(flag, value, 1);
    else if (flag == "--seq")
      o.seq = parse_int(flag, value, 1);
    else if (flag == "--d")
      o.d = parse_int(flag, value, 1);
    else if (flag == "--heads")
      o.heads = parse_int(flag, value, 1);
    else if (flag == "--layers")
      o.layers = parse_int(flag, value, 1);
    else if (flag == "--lr")
      o.lr = parse_float(flag, value);
    else if (flag == "--seed")
      o.seed = static_cast<uint64_t>(parse_int(flag, value, 0));
    else if (flag == "--sample")
      o.sample = parse_int(flag, value, 0);
    else if (flag == "--memory-budget" && value == "auto") {
      saw_auto = true;
    } else if (flag == "--memory-budget") {
      o.memory_budget = parse_float(flag, value, /*allow_zero=*/true);
      if (o.memory_budget > 1) throw UsageError{"--memory-budget must be in [0, 1] or auto"};
    } else if (flag == "--max-slowdown") {
      o.max_slowdown = parse_float(flag, value, /*allow_zero=*/true);
      saw_max_slowdown = true;
    } else if (flag == "--tolerance")
      o.tolerance = parse_float(flag, value);
    else if (flag == "--threads")
      o.threads = static_cast<int>(parse_int(flag, value, 1));
    else if (flag == "--device")
      o.device = value;
    else if (flag == "--text")
      o.text = value;
    else if (flag == "--zero-grad" && (value == "none" || value == "in-place"))
      o.grads_kept = value == "in-place";
    else if (flag == "--zero-grad")
      throw UsageError{"--zero-grad takes none or in-place, not '" + value + "'"};
    else
      throw UsageError{"unknown flag '" + flag + "'"};
  }
  if (saw_max_slowdown && !saw_auto)
    throw UsageError{"--max-slowdown applies to --memory-budget=auto"};
  if (saw_auto && !saw_max_slowdown) o.max_slowdown = aotgrad::kDefaultMaxSlowdown;
  if (o.d % o.heads != 0)
    throw UsageError{"--d (" + std::to_string(o.d) + ") must be a multiple of --heads (" +
                     std::to_string(o.heads) + ")"};
  return o;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string mib(int64_t bytes) {
  return format("%.2f MiB", static_cast<double>(bytes) / (1 << 20));
}

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

/// The progress line of one mode: `eager      [#####.....]  150/300  loss 2.1345  median 12.3 ms`.
/// On a terminal it is redrawn after every step; otherwise only the last state is printed.
class ProgressLine {
 public:
  ProgressLine(std::string mode, int64_t total)
      : mode_(std::move(mode)), total_(total), tty_(isatty(STDOUT_FILENO) != 0) {}

  void update(int64_t step, double loss, double median_ms) {
    last_ = render(step, loss, median_ms);
    if (tty_) {
      std::cout << '\r' << last_ << std::flush;
    }
  }
  void finish() { std::cout << (tty_ ? "\r" : "") << last_ << '\n' << std::flush; }

 private:
  std::string render(int64_t step, double loss, double median_ms) const {
    constexpr int64_t kWidth = 30;
    int64_t filled = step * kWidth / total_;
    std::string bar(static_cast<size_t>(filled), '#');
    bar.append(static_cast<size_t>(kWidth - filled), '.');
    std::string count = std::to_string(step) + "/" + std::to_string(total_);
    return pad(mode_, 11) + "[" + bar + "] " + pad(count, 9) + " loss " + format("%.4f", loss) +
           "  median " + format("%.2f", median_ms) + " ms/step";
  }

  std::string mode_;
  int64_t total_;
  bool tty_;
  std::string last_;
};

struct RunResult {
  std::string mode;
  std::vector<double> losses;
  std::vector<double> step_ms;  // wall time of each step: zero_grad, forward, backward, Adam step
  // The most storage alive at once during a step (after the first) above the level at its start.
  int64_t peak_step_bytes = 0;
  size_t compilations = 0;
  std::shared_ptr<CharGPTImpl> model;

  /// The first step also compiles (aot_module) and creates Adam's state; the rest are steady.
  std::vector<double> steady_ms() const {
    if (step_ms.size() <= 1) return step_ms;
    return std::vector<double>(step_ms.begin() + 1, step_ms.end());
  }
};

CharGPTConfig model_config(const Options& o, const CharText& text) {
  CharGPTConfig c;
  c.vocab = text.vocab_size();
  c.seq = o.seq;
  c.d = o.d;
  c.heads = o.heads;
  c.layers = o.layers;
  return c;
}

/// The mean of `loss` over the ranks of the world group: with equal slices of a batch, the loss of
/// the whole batch.
double average_over_ranks(const torch::Tensor& loss) {
  std::vector<at::Tensor> t{loss.detach().reshape({1}).to(at::kDouble).cpu()};
  c10::intrusive_ptr<c10d::ProcessGroup> world = aotgrad::resolve_process_group("0");
  world->allreduce(t)->wait();
  return t[0].item<double>() / world->getSize();
}

/// Trains a fresh model (weights from seed `o.seed`) for `o.steps` Adam steps over random windows
/// drawn from a generator seeded with `o.seed`: eagerly, or through aot_module with min-cut.
RunResult train(const std::string& mode, bool compiled, const Options& o, const CharText& text) {
  RunResult r;
  r.mode = mode;
  torch::manual_seed(o.seed);
  CharGPTConfig model_cfg = model_config(o, text);
  model_cfg.checkpoint_blocks = o.checkpoint_blocks && !compiled;
  r.model = std::make_shared<CharGPTImpl>(model_cfg);
  const torch::Device device(o.device);
  r.model->to(device);
  r.model->train();
  torch::optim::Adam adam(r.model->parameters(), torch::optim::AdamOptions(o.lr));
  std::optional<aotgrad::AOTModule> compiled_model;
  if (compiled) {
    aotgrad::AOTConfig config;
    config.partition = aotgrad::PartitionKind::kMinCut;
    config.min_cut.activation_memory_budget = o.memory_budget;
    config.min_cut.max_slowdown = o.max_slowdown;
    // --zero-grad=in-place keeps each .grad and zeroes it: the step adds each gradient into it as
    // soon as the backward makes it, and the plan and order lower that peak (not with data
    // parallelism, whose backward all-reduces the gradients in buckets first). Dropped gradients
    // (libtorch 2's zero_grad()) are the compiler's default convention.
    config.min_cut.gradients_kept = o.grads_kept && o.world == 1;
    // --vary-seq: the sequence dimension of the windows and targets is a symbol from the start
    // (torch._dynamo.mark_dynamic), so every length runs one compilation.
    if (o.vary_seq) config.dynamic_dims = {{0, {1}}, {1, {1}}};
    if (o.world > 1) config.data_parallel = aotgrad::DataParallelMode::kReplicated;
    std::shared_ptr<CharGPTImpl> model = r.model;
    compiled_model = aotgrad::aot_module(
        model,
        [model](const std::vector<at::Tensor>& in) {
          return std::vector<at::Tensor>{model->forward(in[0], in[1])};
        },
        config);
  }
  std::mt19937_64 rng(o.seed);
  ProgressLine progress(mode, o.steps);
  for (int64_t step = 1; step <= o.steps; ++step) {
    const int64_t seq = o.vary_seq ? std::uniform_int_distribution<int64_t>(
                                         std::max<int64_t>(2, o.seq / 4), o.seq)(rng)
                                   : o.seq;
    auto [x, y] = text.random_batch(o.batch, seq, rng);
    x = x.to(device);
    y = y.to(device);
    // This rank's slice of the batch every rank drew: a view, at a storage offset that changes
    // with --vary-seq's length (a dynamic compilation admits any offset).
    if (compiled && o.world > 1) {
      x = x.chunk(o.world)[o.rank];
      y = y.chunk(o.world)[o.rank];
    }
    if (device.is_cuda()) torch::cuda::synchronize();
    const int64_t before = aotgrad::memory_stats(device).current_bytes;
    aotgrad::reset_peak_memory(device);
    auto start = std::chrono::steady_clock::now();
    zero_grad(r.model->parameters(), o.grads_kept);
    torch::Tensor loss = compiled ? (*compiled_model)({x, y})[0] : r.model->forward(x, y);
    loss.backward();
    adam.step();
    if (device.is_cuda()) torch::cuda::synchronize();
    auto end = std::chrono::steady_clock::now();
    const int64_t peak = aotgrad::memory_stats(device).peak_bytes - before;
    if (step > 1 || o.steps == 1) r.peak_step_bytes = std::max(r.peak_step_bytes, peak);
    r.step_ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
    r.losses.push_back(compiled && o.world > 1 ? average_over_ranks(loss) : loss.item<double>());
    progress.update(step, r.losses.back(), median(r.steady_ms()));
  }
  progress.finish();
  if (compiled) r.compilations = compiled_model->num_compilations();
  return r;
}

int64_t parameter_count(CharGPTImpl& model) {
  int64_t n = 0;
  for (const torch::Tensor& p : model.parameters()) n += p.numel();
  return n;
}

double relative_difference(double a, double b) {
  return std::abs(a - b) / std::max(std::abs(b), 1e-12);
}

int run(Options o) {
  if (o.threads > 0) torch::set_num_threads(o.threads);
  try {
    const torch::Device device(o.device);
    if (!device.is_cpu() && !device.is_cuda())
      throw UsageError{"--device takes cpu or cuda[:N], not '" + o.device + "'"};
    if (device.is_cuda() && !aotgrad::cuda_available())
      throw UsageError{"--device=" + o.device +
                       ": no GPU here (torch::cuda::is_available() is "
                       "false)"};
  } catch (const c10::Error&) {
    throw UsageError{"--device takes cpu or cuda[:N], not '" + o.device + "'"};
  }
  if (std::optional<aotgrad::DistEnvironment> env = aotgrad::distributed_environment();
      env && env->world_size > 1) {
    o.rank = env->rank;
    o.world = env->world_size;
    if (o.batch % o.world != 0)
      throw UsageError{"--batch (" + std::to_string(o.batch) + ") must be a multiple of the " +
                       std::to_string(o.world) + " data-parallel ranks"};
    if (o.rank > 0) std::cout.setstate(std::ios::failbit);  // rank 0 prints
  }
  CharText text = CharText::load(o.text, o.seq);
  {
    torch::manual_seed(o.seed);
    CharGPTImpl probe(model_config(o, text));
    std::cout << "char GPT: " << o.layers << " layers, d " << o.d << ", " << o.heads
              << " heads, context " << o.seq << ", vocabulary " << text.vocab_size() << ", "
              << parameter_count(probe) << " parameters\n"
              << "training: " << o.steps << " Adam steps (lr " << o.lr << "), batch " << o.batch
              << " windows of " << o.seq << " from a text of " << text.size() << " characters"
              << (o.vary_seq ? " (random lengths from " +
                                   std::to_string(std::max<int64_t>(2, o.seq / 4)) + ")"
                             : "")
              << ", seed " << o.seed << ", " << torch::get_num_threads()
              << (torch::get_num_threads() == 1 ? " thread\n" : " threads\n")
              << "aot_module: min-cut partition, activation memory budget "
              << (o.max_slowdown >= 0 ? "auto (max slowdown " + format("%g", o.max_slowdown) + ")"
                                      : format("%g", o.memory_budget))
              << "\n"
              << "zero_grad: "
              << (o.grads_kept ? "each .grad kept and zeroed in place" : "each .grad dropped")
              << " before every step\n";
    if (o.checkpoint_blocks)
      std::cout << "eager: every block checkpointed by hand (its input kept, the block run again "
                   "in the backward)\n";
    if (o.world > 1)
      std::cout << "data parallel: " << o.world << " ranks, each trains aot_module on "
                << o.batch / o.world << " of the " << o.batch
                << " windows, gradients averaged across the ranks; eager: one process, the whole "
                   "batch\n";
    std::cout << "\n";
  }
  RunResult eager = train("eager", /*compiled=*/false, o, text);
  RunResult aot = train("aot_module", /*compiled=*/true, o, text);

  std::cout << "\n"
            << pad("mode", 12) << pad("final loss", 13) << pad("median step", 14)
            << pad("first step", 13) << "peak step memory\n";
  for (const RunResult* r : {&eager, &aot})
    std::cout << pad(r->mode, 12) << pad(format("%.6f", r->losses.back()), 13)
              << pad(format("%.2f ms", median(r->steady_ms())), 14)
              << pad(format("%.2f ms", r->step_ms.front()), 13) << mib(r->peak_step_bytes) << "\n";
  const double eager_ms = median(eager.steady_ms()), aot_ms = median(aot.steady_ms());
  std::cout << "aot_module / eager: step time " << format("%.2f", aot_ms / eager_ms)
            << "x, peak step memory "
            << format("%.2f", static_cast<double>(aot.peak_step_bytes) /
                                  static_cast<double>(std::max<int64_t>(eager.peak_step_bytes, 1)))
            << "x" << (o.world > 1 ? " (aot_module: one rank's)" : "") << "; " << aot.compilations
            << " compilation" << (aot.compilations == 1 ? "" : "s") << "\n";

  double worst = 0;
  for (size_t i = 0; i < eager.losses.size(); ++i)
    worst = std::max(worst, relative_difference(aot.losses[i], eager.losses[i]));
  const double final_diff = relative_difference(aot.losses.back(), eager.losses.back());
  const bool agree = final_diff <= o.tolerance;
  std::cout << "losses " << (agree ? "agree" : "DISAGREE") << ": final relative difference "
            << format("%.2e", final_diff) << ", largest over " << eager.losses.size() << " steps "
            << format("%.2e", worst) << " (tolerance " << format("%.0e", o.tolerance) << ")\n";

  if (o.sample > 0) {
    std::string prompt = "The ";
    std::string sample = aotgrad::demo::generate(*aot.model, text, prompt, o.sample, o.seed);
    std::cout << "\nsample from the aot_module-trained weights:\n" << prompt << sample << "\n";
  }
  return agree ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  // Before any tensor exists, so that every allocation of a step is counted.
  aotgrad::install_tracking_allocator();
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::cout << kUsage;
      return 0;
    }
  Options options;
  try {
    options = parse_options(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "gpt_demo: " << e.message << "\n\n" << kUsage;
    return 2;
  }
  try {
    return run(options);
  } catch (const UsageError& e) {
    std::cerr << "gpt_demo: " << e.message << "\n";
    return 2;
  } catch (const aotgrad::Error& e) {
    std::cerr << "gpt_demo: " << e.formatted() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "gpt_demo: error: " << e.what() << "\n";
  }
  return 1;
}
