// aotgrad: the command line's libtorch module. The aotgrad executable does not link libtorch, whose
// loading and initialization (~0.85 s) check, ops, opt and compile do not need; the commands that
// run graphs on libtorch's kernels are in a module (aotgrad_torch.so) loaded on demand.
#pragma once

#include "cli.h"

namespace aotgrad::cli {

/// What the module provides. `abi` is kTorchModuleAbi of the build that made it.
struct TorchModule {
  int abi = 0;
  /// `aotgrad run`, on arguments parsed against run_command()'s spec.
  int (*run)(const Args& args) = nullptr;
  /// `aotgrad calibrate`, on arguments parsed against calibrate_command()'s spec.
  int (*calibrate)(const Args& args) = nullptr;
};
inline constexpr int kTorchModuleAbi = 2;

/// The module, loaded on first use from beside the executable (the build tree) or from the
/// installed libdir's aotgrad/ directory. Throws Error naming the places tried and the loader's
/// message when it cannot be loaded.
const TorchModule& torch_module();

/// Installs, when no op provider is installed yet, one that loads the module on the first op the
/// registry does not declare: the runtime the module links installs libtorch's op provider
/// (providers/dispatcher_ops.h) as it loads, and this one then forwards to it. So `check`, `opt`
/// and `compile` read any ATen op, and pay for libtorch only for graphs that use such ops.
void install_lazy_libtorch_ops();

}  // namespace aotgrad::cli

/// The module's entry point: its TorchModule.
extern "C" const aotgrad::cli::TorchModule* aotgrad_torch_module();
