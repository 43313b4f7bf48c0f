// aotgrad: saved-tensor hooks for compiled functions (torch.autograd.graph.saved_tensors_hooks).
#pragma once

#include <functional>
#include <memory>

namespace at {
class Tensor;
}
namespace c10 {
struct IValue;
}
namespace torch::autograd {
struct SavedVariableHooks;
}

namespace aotgrad {

/// What a pack hook makes of a saved tensor (any IValue: a compressed tensor, a tuple, a file
/// name...), and the unpack hook that turns it back into a tensor of the saved one's sizes and
/// dtype.
using PackHook = std::function<c10::IValue(const at::Tensor&)>;
using UnpackHook = std::function<at::Tensor(const c10::IValue&)>;

/// While alive, the values a CompiledFunction's forward saves for its backward go through `pack`
/// when the forward runs, and through `unpack` when the backward needs them (each time, with
/// retain_graph), as torch.autograd.graph.saved_tensors_hooks does (§13.33): activation compression
/// and offloading. Guards nest per thread; the innermost applies. A saved value's hooks are the
/// ones its forward ran under, whichever thread runs the backward. Without an aotgrad guard, the
/// autograd engine's default hooks apply when it has them (in a Python process, the ones
/// torch.autograd.graph.saved_tensors_hooks sets); libtorch's C++ API has no other way to set
/// default hooks (at::SavedTensorDefaultHooks holds Python objects), so eager libtorch nodes do not
/// see these.
///
/// An unpacked tensor must have the saved tensor's sizes and dtype. A packed value is not checked
/// for in-place writes after the forward (the saved tensor itself is no longer held), as in
/// PyTorch.
class SavedTensorsHooks {
 public:
  SavedTensorsHooks(PackHook pack, UnpackHook unpack);
  ~SavedTensorsHooks();
  SavedTensorsHooks(const SavedTensorsHooks&) = delete;
  SavedTensorsHooks& operator=(const SavedTensorsHooks&) = delete;
};

/// Hooks for one saved tensor: the innermost SavedTensorsHooks of this thread, else the autograd
/// engine's default hooks, else nullptr (save the tensor itself).
std::unique_ptr<torch::autograd::SavedVariableHooks> saved_tensor_hooks_for_this_thread();

}  // namespace aotgrad
