// aotgrad: aot_module -- a libtorch module compiled with its parameters and buffers lifted to
// graph inputs (functional_call), on top of aot_function's per-signature cache.
#include <c10/core/GradMode.h>
#include <torch/nn/module.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <unordered_set>

#include "aotgrad/aotgrad.h"
#include "aotgrad/frontend/sharding.h"
#include "aotgrad/runtime/distributed/data_parallel.h"
#include "config_options.h"
#include "lifted_names.h"

namespace aotgrad {

ModuleState module_state(const torch::nn::Module& module) {
  ModuleState s;
  std::unordered_set<const c10::TensorImpl*> seen;
  auto add = [&](const std::string& name, const at::Tensor& t) {
    if (!t.defined() || !seen.insert(t.unsafeGetTensorImpl()).second) return;
    s.names.push_back(name);
    s.tensors.push_back(t);
  };
  for (const auto& item : module.named_parameters(/*recurse=*/true)) add(item.key(), item.value());
  s.num_parameters = s.tensors.size();
  for (const auto& item : module.named_buffers(/*recurse=*/true)) add(item.key(), item.value());
  return s;
}

struct AOTModule::State {
  std::shared_ptr<torch::nn::Module> module;
  TensorFunction forward;
  AOTConfig config;
  mutable std::mutex mu;
  /// One AOTFunction per training mode and set of lifted tensor names (a module whose tensors
  /// were replaced by others of other names compiles anew).
  mutable std::map<std::string, AOTFunction> functions;
  /// Sharded: each parameter's whole sizes, by name, and the group's place.
  std::map<std::string, std::vector<int64_t>> full_sizes;
  GroupPlace place;

  /// Sharded: broadcasts the module's tensors from rank 0 and cuts its parameters into shards.
  void shard_parameters();

  /// The module's current tensors followed by `inputs`, and the AOTFunction they call.
  std::pair<AOTFunction, std::vector<at::Tensor>> prepare(
      const std::vector<at::Tensor>& inputs) const;
  /// Data parallel: the module's buffers from rank 0.
  void broadcast_buffers(const ModuleState& s) const;
};

AOTModule::AOTModule(std::shared_ptr<torch::nn::Module> module, TensorFunction forward,
                     AOTConfig config)
    : state_(std::make_shared<State>()) {
  AOTGRAD_CHECK(module, "aot_module: the module is null");
  AOTGRAD_CHECK(forward, "aot_module: the forward function is empty");
  state_->module = std::move(module);
  state_->forward = std::move(forward);
  AOTGRAD_CHECK(config.data_parallel_params.empty(),
                "aot_module: data_parallel_params is for aot_function; a module's gradients to "
                "all-reduce are its parameters'");
  state_->config = std::move(config);
  if (state_->config.data_parallel == DataParallelMode::kSharded) state_->shard_parameters();
}

void AOTModule::State::shard_parameters() {
  const std::string group = data_parallel_group(config);
  place = process_group_place(group);
  ModuleState s = module_state(*module);
  broadcast_from_rank0(group, s.tensors, s.names);
  c10::NoGradGuard no_grad;
  for (size_t i = 0; i < s.num_parameters; ++i) {
    at::Tensor& p = s.tensors[i];
    full_sizes[s.names[i]] = p.sizes().vec();
    p.set_data(shard_of(p, place.rank, place.size));
  }
}

std::pair<AOTFunction, std::vector<at::Tensor>> AOTModule::State::prepare(
    const std::vector<at::Tensor>& inputs) const {
  ModuleState s = module_state(*module);
  std::string key = module->is_training() ? "train" : "eval";
  for (const std::string& n : s.names) key += "\n" + n;
  std::vector<at::Tensor> args = s.tensors;
  args.insert(args.end(), inputs.begin(), inputs.end());
  std::lock_guard<std::mutex> lock(mu);
  auto it = functions.find(key);
  if (it == functions.end()) {
    AOTConfig c = config;
    c.input_names = lifted_input_names(s, config.input_names, inputs.size(), "aot_module");
    c.num_params_buffers = s.tensors.size();
    // mark_dynamic names the module's inputs; the compiled function's arguments start with the
    // module's tensors.
    c.dynamic_dims.clear();
    for (const auto& [input, dims] : config.dynamic_dims) {
      AOTGRAD_CHECK(input < inputs.size(), "aot_module: dynamic_dims marks input ", input,
                    " but the module is called with ", inputs.size(), " inputs");
      c.dynamic_dims[input + s.tensors.size()] = dims;
    }
    if (config.data_parallel != DataParallelMode::kNone) {
      // The parameters' gradients are all-reduced (and the parameters broadcast at the first
      // compilation); the buffers are broadcast from rank 0 now, as DDP does when it is made.
      c.data_parallel_params.assign(args.size(), false);
      std::fill(c.data_parallel_params.begin(),
                c.data_parallel_params.begin() + static_cast<std::ptrdiff_t>(s.num_parameters),
                true);
      if (!config.broadcast_buffers && config.data_parallel == DataParallelMode::kReplicated)
        broadcast_buffers(s);
    }
    // The module's tensors are looked up again when the function is captured: they are the ones
    // of this call, in this order (the key above fixes their names).
    TensorFunction fn = [m = module, f = forward](const std::vector<at::Tensor>& a) {
      return functional_call(module_state(*m).tensors, f)(a);
    };
    if (config.data_parallel == DataParallelMode::kSharded) {
      // The traced forward gathers each parameter whole from the shards (Note [Sharded
      // parameters]).
      std::vector<std::vector<int64_t>> sizes;
      for (size_t i = 0; i < s.num_parameters; ++i) {
        auto found = full_sizes.find(s.names[i]);
        AOTGRAD_CHECK(found != full_sizes.end(), "aot_module: parameter '", s.names[i],
                      "' was added after the module was sharded");
        sizes.push_back(found->second);
      }
      fn = [fn, sizes, group = data_parallel_group(config), n = place.size,
            reshard = config.reshard_after_forward](const std::vector<at::Tensor>& a) {
        std::vector<at::Tensor> whole = a;
        for (size_t i = 0; i < sizes.size(); ++i)
          whole[i] = gather_full_parameter(a[i], sizes[i], n, group, reshard);
        return fn(whole);
      };
    }
    it = functions.emplace(key, AOTFunction(std::move(fn), std::move(c))).first;
  }
  return {it->second, std::move(args)};
}

void AOTModule::State::broadcast_buffers(const ModuleState& s) const {
  std::vector<at::Tensor> buffers(s.tensors.begin() + static_cast<std::ptrdiff_t>(s.num_parameters),
                                  s.tensors.end());
  if (buffers.empty()) return;
  std::vector<std::string> names(s.names.begin() + static_cast<std::ptrdiff_t>(s.num_parameters),
                                 s.names.end());
  broadcast_from_rank0(data_parallel_group(config), buffers, names);
}

std::vector<at::Tensor> AOTModule::operator()(const std::vector<at::Tensor>& inputs) const {
  // DDP's broadcast_buffers: every forward starts from rank 0's buffers.
  const AOTConfig& c = state_->config;
  if (c.data_parallel != DataParallelMode::kNone && c.broadcast_buffers)
    state_->broadcast_buffers(module_state(*state_->module));
  auto [fn, args] = state_->prepare(inputs);
  return fn(args);
}

std::vector<std::pair<std::string, at::Tensor>> AOTModule::full_parameters() const {
  const State& st = *state_;
  ModuleState s = module_state(*st.module);
  c10::NoGradGuard no_grad;
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (size_t i = 0; i < s.num_parameters; ++i) {
    at::Tensor p = s.tensors[i].detach();
    if (st.config.data_parallel == DataParallelMode::kSharded)
      p = gather_full_parameter(p, st.full_sizes.at(s.names[i]), st.place.size,
                                data_parallel_group(st.config), std::nullopt);
    out.emplace_back(s.names[i], p);
  }
  return out;
}

size_t AOTModule::num_compilations() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  size_t n = 0;
  for (const auto& [key, fn] : state_->functions) n += fn.num_compilations();
  return n;
}

std::shared_ptr<const Graph> AOTModule::captured_graph(
    const std::vector<at::Tensor>& inputs) const {
  auto [fn, args] = state_->prepare(inputs);
  return fn.captured_graph(args);
}

AOTModule aot_module(std::shared_ptr<torch::nn::Module> module, TensorFunction forward,
                     AOTConfig config) {
  return AOTModule(std::move(module), std::move(forward), std::move(config));
}

}  // namespace aotgrad
