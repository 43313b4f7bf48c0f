// aotgrad: `aotgrad calibrate` -- its options here; measuring needs libtorch's kernels, so the
// command runs in the command line's libtorch module (torch_module.h).
#include "commands.h"
#include "torch_module.h"

namespace aotgrad::cli {

const Command& calibrate_command() {
  static const Command cmd{
      {"calibrate",
       "aotgrad calibrate [--output=FILE]",
       "Measures this machine's matmul, convolution and memory-bound kernels on libtorch and\n"
       "writes the cost profile that --cost-model=measured prices recomputation with (default\n"
       "FILE: AOTGRAD_COST_PROFILE, else cost_profile.json in the user's cache directory).",
       {{"output", true, "where to write the profile (JSON, written atomically)", "FILE"},
        {"repetitions", true, "timed repetitions per point, the median kept (default 5)", "N"}},
       0,
       0},
      [](const Args& args) { return torch_module().calibrate(args); }};
  return cmd;
}

}  // namespace aotgrad::cli
