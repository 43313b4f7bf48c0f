// aotgrad: libFuzzer target -- the command line's options. The input is lines: the first names a
// command (check, compile, opt, run, ...; another word is `compile`), each other line is one
// argument, and a line `AOTGRAD_LOGS=SPEC` is the logging variable instead. The arguments go
// through the command's own option spec (parse_args), then through what the commands read from
// them: the compile options (--decomp, --partition, --memory-budget, --solver, --cost-model, ...),
// --hint, --reinplace, --grad and --recompute on a small graph, and opt's --passes, run on it. A
// command line is understood, or it is a UsageError or an Error. Nothing is run, read or written:
// --cost-profile names a file that does not exist.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "aotgrad/driver/pass_pipeline.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/support/logging.h"
#include "commands.h"
#include "compile_args.h"
#include "fuzz_check.h"

namespace {

using namespace aotgrad;

constexpr const char* kNoProfile = "aotgrad-fuzz-no-such-cost-profile.json";

// A graph with tensor and SymInt inputs, integer and floating ones, and calls of several ops.
constexpr const char* kGraph = R"fx(class GraphModule(torch.nn.Module):
    def forward(self, s0: "Sym(s0)", x: "f32[s0, 8][8, 1]cpu", w: "f32[8, 8][8, 1]cpu", i: "i64[4][1]cpu"):
        mm: "f32[s0, 8][8, 1]cpu" = torch.ops.aten.mm.default(x, w)
        relu: "f32[s0, 8][8, 1]cpu" = torch.ops.aten.relu.default(mm)
        mul: "f32[s0, 8][8, 1]cpu" = torch.ops.aten.mul.Tensor(relu, relu)
        add: "f32[s0, 8][8, 1]cpu" = torch.ops.aten.add.Tensor(mul, x)
        return (add, i)
)fx";

const std::vector<const cli::Command*>& commands() {
  static const std::vector<const cli::Command*> cmds = {
      &cli::check_command(),    &cli::ops_command(), &cli::run_command(),
      &cli::compile_command(),  &cli::opt_command(), &cli::launch_command(),
      &cli::calibrate_command()};
  return cmds;
}

// What the commands that compile read from their options.
void read_options(const cli::Args& args) {
  cli::Args a = args;
  if (a.has("cost-profile")) a.options["cost-profile"] = kNoProfile;
  cli::compile_options(a);
  cli::hint_option(a);
  cli::reinplace_option(a);
  std::unique_ptr<Graph> g = parse_graph(kGraph, aten_ops(), cli::hint_option(a));
  cli::parse_grad_spec(*g, a.get("grad").value_or("none"));
  cli::apply_recompute_option(a, *g);
  if (auto passes = a.get("passes")) {
    PassPipelineOptions popts;
    popts.verify = true;
    PassPipeline pipeline(popts);
    std::stringstream in(*passes);
    for (std::string spec; std::getline(in, spec, ',');)
      if (!spec.empty()) pipeline.add(spec);
    pipeline.run(*g);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("AOTGRAD_COST_PROFILE", kNoProfile, 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  std::string name;
  std::getline(in, name);
  const cli::Command* cmd = &cli::compile_command();
  for (const cli::Command* c : commands())
    if (c->spec.name == name) cmd = c;
  std::vector<std::string> argv;
  std::vector<std::string> logs;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("AOTGRAD_LOGS=", 0) == 0)
      logs.push_back(line.substr(13));
    else
      argv.push_back(line);
  }
  for (const std::string& spec : logs) {
    try {
      parse_log_settings(spec);
    } catch (const Error& e) {
      fuzz::check_error(e, false);
    }
  }
  try {
    cli::Args args = cli::parse_args(cmd->spec, argv);
    if (args.has("help")) {
      fuzz::require(!cli::help_text(cmd->spec).empty(), "an empty --help");
      return 0;
    }
    read_options(args);
  } catch (const cli::UsageError& e) {
    fuzz::require(!e.message.empty(), "a UsageError without a message");
  } catch (const Error& e) {
    fuzz::check_error(e, false);
  }
  return 0;
}
