// aotgrad: `aotgrad run` -- its options here; running a graph needs libtorch, so the command runs
// in the command line's libtorch module (torch_module.h), loaded only for it.
#include "commands.h"
#include "compile_args.h"
#include "torch_module.h"

namespace aotgrad::cli {

const Command& run_command() {
  static const Command cmd{
      {"run",
       "aotgrad run GRAPH (--inputs=IN.safetensors | --random-inputs) [--outputs=OUT.safetensors]",
       "Compiles GRAPH (functionalization and the runtime wrappers) and runs it on libtorch's "
       "ATen\n"
       "kernels; --no-compile runs it as written. Inputs are matched to placeholders by name;\n"
       "OUT gets out_0, out_1, ... for each tensor output (a None output keeps its index), and\n"
       "every input the graph mutates under its own name.",
       with_compile_options(
           {{"inputs", true, "safetensors file with one tensor per placeholder name", "FILE"},
            {"outputs", true, "write outputs (and mutated inputs) to this safetensors file",
             "FILE"},
            {"random-inputs", false,
             "make inputs missing from --inputs at random (floats ~N(0,1), ints in [0,2))"},
            {"seed", true,
             "seed for --random-inputs (default 0) and, when given, for the graph's random ops",
             "N"},
            {"stats", true, "print statistics as one JSON object (peak_bytes, fw_us, ...)", "json"},
            {"no-compile", false,
             "run the graph as written (in-place ops included), without compiling"},
            {"train", false, "forward then backward (CompiledFunction); OUT adds grad_<input>"},
            {"grad", true, "with --train: inputs that require grad: all (default), none, or names",
             "SPEC"},
            {"tangents", true,
             "with --train: 'ones' (default) or a safetensors file of tangent_<k>", "ones|FILE"},
            {"data-parallel", false,
             "with --train under a launcher: average the --grad inputs' gradients over the world "
             "group '0' in buckets inside the backward graph (AOTConfig::data_parallel)"},
            {"split-batch", true,
             "with --data-parallel: rank r takes the r-th of WORLD_SIZE equal slices of dim 0 of "
             "these inputs (the graph's placeholders have a slice's sizes)",
             "NAMES"}}),
       1, 1},
      [](const Args& args) { return torch_module().run(args); }};
  return cmd;
}

}  // namespace aotgrad::cli
