// aotgrad: saved-tensor hooks for compiled functions.
#include "aotgrad/runtime/saved_tensors_hooks.h"

#include <ATen/core/ivalue.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/saved_variable_hooks.h>

#include <utility>
#include <vector>

#include "aotgrad/ir/error.h"

namespace aotgrad {
namespace {

struct HookPair {
  PackHook pack;
  UnpackHook unpack;
};

thread_local std::vector<std::shared_ptr<const HookPair>> t_hooks;

// libtorch's per-tensor hook interface over a user's pack/unpack pair: the packed value lives
// here between the forward and the backward.
class FunctionHooks final : public torch::autograd::SavedVariableHooks {
 public:
  explicit FunctionHooks(std::shared_ptr<const HookPair> hooks) : hooks_(std::move(hooks)) {}
  void call_pack_hook(const at::Tensor& tensor) override { packed_ = hooks_->pack(tensor); }
  at::Tensor call_unpack_hook() override { return hooks_->unpack(packed_); }

 private:
  std::shared_ptr<const HookPair> hooks_;
  c10::IValue packed_;
};

}  // namespace

SavedTensorsHooks::SavedTensorsHooks(PackHook pack, UnpackHook unpack) {
  AOTGRAD_CHECK(pack && unpack, "SavedTensorsHooks: the pack and unpack hooks must not be empty");
  t_hooks.push_back(std::make_shared<const HookPair>(HookPair{std::move(pack), std::move(unpack)}));
}

SavedTensorsHooks::~SavedTensorsHooks() { t_hooks.pop_back(); }

std::unique_ptr<torch::autograd::SavedVariableHooks> saved_tensor_hooks_for_this_thread() {
  if (!t_hooks.empty()) return std::make_unique<FunctionHooks>(t_hooks.back());
  return torch::autograd::Engine::get_default_engine().get_default_saved_variable_hooks();
}

}  // namespace aotgrad
