// aotgrad: the command line's libtorch module (aotgrad_torch.so) -- its entry point.
#include "../torch_module.h"
#include "calibrate.h"
#include "run.h"

extern "C" const aotgrad::cli::TorchModule* aotgrad_torch_module() {
  static const aotgrad::cli::TorchModule m{aotgrad::cli::kTorchModuleAbi, &aotgrad::cli::run_graph,
                                           &aotgrad::cli::calibrate_machine};
  return &m;
}
