// One rank of the data-parallel tests (dist/data_parallel_test.sh runs it under `aotgrad launch`):
// trains an MLP, a CNN with BatchNorm and a GPT block for a few SGD steps with aot_module in
// data-parallel mode on this rank's slice of a global batch, and compares the parameters with one
// process that trains the same model eagerly with libtorch on the whole batch.
//
// Every rank starts from other weights (seeded by its rank): the broadcast from rank 0 at the first
// compilation is what makes them rank 0's, which the reference (seeded like rank 0) starts from.
// The MLP and the GPT block (LayerNorm) see the concatenated batch in the reference; BatchNorm
// normalizes over each rank's slice (DDP does not synchronize batch statistics), so the CNN's
// reference runs its forward on each rank's slice and averages the losses: the parameters compare
// exactly so; the running statistics are each rank's own and are not compared.
//
// --mode=sharded trains with DataParallelMode::kSharded (FSDP2's fully_shard) instead of
// kReplicated and compares the gathered parameters (AOTModule::full_parameters), printing how many
// parameter elements this rank holds; --reshard=0 keeps the gathered parameters from the forward,
// --reshard=auto leaves it to the partitioner under the activation memory budget --budget (Note
// [Re-gather or keep]).
//
// --models=wide_mlp trains an MLP whose parameters outweigh its activations. --die-rank=R
// --die-at-step=S: rank R kills itself (SIGKILL) between the forward and the backward of step S,
// so that the others fail in the backward's collectives.
//
// usage: data_parallel_worker [--models=mlp,cnn,gpt] [--steps=N] [--tanh-on-rank=R]
//                             [--mode=replicated|sharded] [--reshard=1|0|auto] [--budget=B]
//                             [--die-rank=R --die-at-step=S] [--group=NAME]
// Prints one line per model, "rank R MODEL: N steps, P parameters, max |param - reference| = D",
// and exits 1 when a parameter differs from the reference by more than fp32 rounding.
#include <torch/torch.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include "../../examples/gpt_demo/char_gpt.h"
#include "aotgrad/aotgrad.h"
#include "aotgrad/runtime/distributed/data_parallel.h"

namespace {

using Loss = std::function<at::Tensor(torch::nn::Module&, const at::Tensor&, const at::Tensor&)>;

struct Case {
  std::shared_ptr<torch::nn::Module> (*make)(bool tanh);
  Loss loss;
  // The global batch (every rank makes the same) for `n` ranks, split in n slices along dim 0.
  std::pair<at::Tensor, at::Tensor> (*batch)(int64_t n);
  bool per_slice_reference;  // BatchNorm: the reference's forward runs on each slice
};

struct Mlp : torch::nn::Module {
  explicit Mlp(bool tanh) : tanh(tanh) {
    fc1 = register_module("fc1", torch::nn::Linear(16, 64));
    fc2 = register_module("fc2", torch::nn::Linear(64, 64));
    fc3 = register_module("fc3", torch::nn::Linear(64, 8));
  }
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor h = fc1(x);
    h = tanh ? torch::tanh(h) : torch::relu(h);
    return fc3(torch::relu(fc2(h)));
  }
  bool tanh;
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
};

// An MLP whose parameters outweigh its activations (a batch of 2 per rank): where keeping the
// gathered weights from the forward raises the step's peak.
struct WideMlp : torch::nn::Module {
  WideMlp() {
    for (int i = 0; i < 4; ++i)
      fc.push_back(register_module("fc" + std::to_string(i),
                                   torch::nn::Linear(i == 0 ? 32 : 128, i == 3 ? 8 : 128)));
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

struct Cnn : torch::nn::Module {
  Cnn() {
    conv1 =
        register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).padding(1)));
    bn1 = register_module("bn1", torch::nn::BatchNorm2d(8));
    conv2 =
        register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 8, 3).padding(1)));
    bn2 = register_module("bn2", torch::nn::BatchNorm2d(8));
    fc = register_module("fc", torch::nn::Linear(8, 5));
  }
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor h = torch::relu(bn1(conv1(x)));
    h = torch::relu(bn2(conv2(h)));
    return fc(h.mean({2, 3}));
  }
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};
  torch::nn::Linear fc{nullptr};
};

struct Gpt : torch::nn::Module {
  Gpt() {
    block = register_module("block", std::make_shared<aotgrad::demo::BlockImpl>(32, 4, 8));
    head = register_module("head", torch::nn::Linear(32, 16));
  }
  at::Tensor forward(const at::Tensor& x) { return head(block->forward(x)); }
  std::shared_ptr<aotgrad::demo::BlockImpl> block;
  torch::nn::Linear head{nullptr};
};

const std::map<std::string, Case>& cases() {
  static const std::map<std::string, Case> c = {
      {"mlp",
       {[](bool tanh) -> std::shared_ptr<torch::nn::Module> { return std::make_shared<Mlp>(tanh); },
        [](torch::nn::Module& m, const at::Tensor& x, const at::Tensor& y) {
          return torch::mse_loss(static_cast<Mlp&>(m).forward(x), y);
        },
        [](int64_t n) {
          return std::make_pair(torch::randn({4 * n, 16}), torch::randn({4 * n, 8}));
        },
        false}},
      {"wide_mlp",
       {[](bool) -> std::shared_ptr<torch::nn::Module> { return std::make_shared<WideMlp>(); },
        [](torch::nn::Module& m, const at::Tensor& x, const at::Tensor& y) {
          return torch::mse_loss(static_cast<WideMlp&>(m).forward(x), y);
        },
        [](int64_t n) {
          return std::make_pair(torch::randn({2 * n, 32}), torch::randn({2 * n, 8}));
        },
        false}},
      {"cnn",
       {[](bool) -> std::shared_ptr<torch::nn::Module> { return std::make_shared<Cnn>(); },
        [](torch::nn::Module& m, const at::Tensor& x, const at::Tensor& y) {
          return torch::cross_entropy_loss(static_cast<Cnn&>(m).forward(x), y);
        },
        [](int64_t n) {
          return std::make_pair(torch::randn({4 * n, 3, 8, 8}), torch::randint(0, 5, {4 * n}));
        },
        true}},
      {"gpt",
       {[](bool) -> std::shared_ptr<torch::nn::Module> { return std::make_shared<Gpt>(); },
        [](torch::nn::Module& m, const at::Tensor& x, const at::Tensor& y) {
          return torch::mse_loss(static_cast<Gpt&>(m).forward(x), y);
        },
        [](int64_t n) {
          return std::make_pair(torch::randn({2 * n, 8, 32}), torch::randn({2 * n, 8, 16}));
        },
        false}},
  };
  return c;
}

// --die-rank, --die-at-step; --group: AOTConfig::process_group.
int g_die_rank = -1, g_die_at_step = -1;
std::string g_group;

std::string option(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--" + name + "=", 0) == 0) return a.substr(name.size() + 3);
  }
  return fallback;
}

// Trains `name` on this rank; returns the largest difference from the reference's parameters.
double train(const std::string& name, const Case& c, int rank, int world, int steps, bool tanh,
             double lr, bool sharded, std::optional<bool> reshard, double budget) {
  torch::manual_seed(1234);
  auto [x, y] = c.batch(world);
  at::Tensor xr = x.chunk(world)[rank], yr = y.chunk(world)[rank];

  torch::manual_seed(rank == 0 ? 7 : 100 + rank);  // other weights than rank 0's: the broadcast
  std::shared_ptr<torch::nn::Module> model = c.make(tanh);
  torch::manual_seed(7);
  std::shared_ptr<torch::nn::Module> ref = c.make(false);

  aotgrad::AOTConfig config;
  config.data_parallel =
      sharded ? aotgrad::DataParallelMode::kSharded : aotgrad::DataParallelMode::kReplicated;
  config.reshard_after_forward = reshard;
  config.min_cut.activation_memory_budget = budget;
  config.process_group = g_group;
  config.first_bucket_cap_bytes = 4096;  // several buckets in small models
  config.bucket_cap_bytes = 16384;
  Loss loss = c.loss;
  torch::nn::Module* raw = model.get();
  auto compiled = aotgrad::aot_module(
      model,
      [raw, loss](const std::vector<at::Tensor>& in) {
        return std::vector<at::Tensor>{loss(*raw, in[0], in[1])};
      },
      config);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(lr).momentum(0.9));
  torch::optim::SGD ref_opt(ref->parameters(), torch::optim::SGDOptions(lr).momentum(0.9));
  // An eval call first (its compilation broadcasts the buffers once), so that the eval call after
  // training runs a compiled function and broadcasts only as broadcast_buffers says.
  auto eval_call = [&] {
    model->eval();
    torch::NoGradGuard no_grad;
    compiled({xr, yr});
    model->train();
  };
  const bool has_buffers = !model->named_buffers().is_empty();
  if (has_buffers) eval_call();
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    at::Tensor loss = compiled({xr, yr})[0];
    if (rank == g_die_rank && s == g_die_at_step) {
      std::fflush(stdout);
      raise(SIGKILL);
    }
    loss.backward();
    opt.step();

    ref_opt.zero_grad();
    at::Tensor l;
    if (c.per_slice_reference) {
      l = at::zeros({});
      for (int r = 0; r < world; ++r)
        l = l + c.loss(*ref, x.chunk(world)[r], y.chunk(world)[r]) / world;
    } else {
      l = c.loss(*ref, x, y);
    }
    l.backward();
    ref_opt.step();
  }
  double worst = 0;
  auto theirs = ref->named_parameters();
  std::vector<std::pair<std::string, at::Tensor>> mine = compiled.full_parameters();
  if (sharded) {
    int64_t held = 0, whole = 0;
    for (const at::Tensor& p : model->parameters()) held += p.numel();
    for (const auto& p : mine) whole += p.second.numel();
    std::printf("rank %d %s: sharded, %lld of %lld parameter elements on this rank\n", rank,
                name.c_str(), static_cast<long long>(held), static_cast<long long>(whole));
  }
  for (const auto& p : mine) {
    const at::Tensor& a = p.second;
    const at::Tensor& b = theirs[p.first];
    double d = (a - b).abs().max().item<double>();
    double tol = 2e-5 + 1e-4 * b.abs().max().item<double>();
    if (d > tol)
      std::cerr << "rank " << rank << " " << name << ": parameter " << p.first << " differs by "
                << d << " (tolerance " << tol << ")\n";
    worst = std::max(worst, d > tol ? 1e30 : d);
  }
  std::printf("rank %d %s: %d steps, %zu parameters, max |param - reference| = %.3g\n", rank,
              name.c_str(), steps, mine.size(), worst);
  // broadcast_buffers (DDP's default): a call starts from rank 0's buffers, so after an eval call
  // (which leaves them as they are) every rank holds rank 0's, though each rank's training steps
  // updated its running statistics with its own slice.
  if (has_buffers) {
    eval_call();
    double sum = 0;
    for (const auto& b : model->named_buffers())
      sum += b.value().to(at::kDouble).sum().item<double>();
    std::printf("rank %d %s: buffers after an eval call %.12g\n", rank, name.c_str(), sum);
  }
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    at::set_num_threads(1);
    aotgrad::GroupPlace place = aotgrad::process_group_place("0");
    int steps = std::stoi(option(argc, argv, "steps", "4"));
    int tanh_rank = std::stoi(option(argc, argv, "tanh-on-rank", "-1"));
    std::string mode = option(argc, argv, "mode", "replicated");
    if (mode != "replicated" && mode != "sharded")
      throw aotgrad::Error("--mode must be replicated or sharded, got '" + mode + "'");
    std::string reshard_text = option(argc, argv, "reshard", "1");
    std::optional<bool> reshard;
    if (reshard_text != "auto") reshard = reshard_text != "0";
    double budget = std::stod(option(argc, argv, "budget", "1"));
    g_die_rank = std::stoi(option(argc, argv, "die-rank", "-1"));
    g_die_at_step = std::stoi(option(argc, argv, "die-at-step", "-1"));
    g_group = option(argc, argv, "group", "");
    std::stringstream models(option(argc, argv, "models", "mlp,cnn,gpt"));
    bool ok = true;
    for (std::string m; std::getline(models, m, ',');) {
      auto it = cases().find(m);
      if (it == cases().end()) throw aotgrad::Error("unknown model '" + m + "'");
      double d = train(m, it->second, place.rank, place.size, steps, place.rank == tanh_rank, 0.05,
                       mode == "sharded", reshard, budget);
      ok = ok && d < 1e29;
    }
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
