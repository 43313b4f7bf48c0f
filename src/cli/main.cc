// aotgrad: the `aotgrad` command line -- dispatches to subcommands.
#include <exception>
#include <iostream>
#include <new>

#include "aotgrad/ir/error.h"
#include "aotgrad/support/heap.h"
#include "aotgrad/support/logging.h"
#include "commands.h"
#include "torch_module.h"

namespace {

using aotgrad::cli::Command;

const std::vector<const Command*>& commands() {
  static const std::vector<const Command*> cmds = {
      &aotgrad::cli::check_command(),    &aotgrad::cli::ops_command(),
      &aotgrad::cli::run_command(),      &aotgrad::cli::compile_command(),
      &aotgrad::cli::opt_command(),      &aotgrad::cli::launch_command(),
      &aotgrad::cli::calibrate_command()};
  return cmds;
}

void print_usage(std::ostream& os) {
  os << "usage: aotgrad <command> [options]\n\n"
        "aotgrad is PyTorch's AOTAutograd in C++: it functionalizes a forward graph of ATen ops,\n"
        "differentiates it, partitions it and runs it on libtorch.\n\ncommands:\n";
  for (const Command* c : commands()) {
    os << "  " << c->spec.name;
    for (size_t pad = c->spec.name.size(); pad < 10; ++pad) os << ' ';
    std::string summary = c->spec.summary.substr(0, c->spec.summary.find('\n'));
    os << summary << "\n";
  }
  os << "\n'aotgrad <command> --help' describes a command.\n";
}

}  // namespace

int main(int argc, char** argv) {
  namespace cli = aotgrad::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    print_usage(std::cerr);
    return cli::kBadUsage;
  }
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_usage(std::cout);
    return cli::kOk;
  }
  // AOTGRAD_LOGS is parsed once, before any work: an unknown name is a usage error.
  try {
    aotgrad::log_settings();
  } catch (const aotgrad::Error& e) {
    std::cerr << "aotgrad: " << e.formatted() << "\n";
    return cli::kBadUsage;
  }
  // Ops the registry does not declare come from libtorch, loaded only when a graph names one.
  cli::install_lazy_libtorch_ops();
  const Command* cmd = nullptr;
  for (const Command* c : commands())
    if (c->spec.name == args[0]) cmd = c;
  if (!cmd) {
    std::cerr << "aotgrad: unknown command '" << args[0] << "'\n";
    print_usage(std::cerr);
    return cli::kBadUsage;
  }
  args.erase(args.begin());
  // 64 MiB of address space: more than a 48-layer GPT's compilation allocates.
  if (cmd->graphs_only) aotgrad::reserve_heap(size_t{64} << 20);
  try {
    cli::Args parsed = cli::parse_args(cmd->spec, args);
    if (parsed.has("help")) {
      std::cout << cli::help_text(cmd->spec);
      return cli::kOk;
    }
    return cmd->run(parsed);
  } catch (const cli::UsageError& e) {
    std::cerr << "aotgrad " << cmd->spec.name << ": " << e.message << "\n"
              << "usage: " << cmd->spec.synopsis << " (see --help)\n";
    return cli::kBadUsage;
  } catch (const aotgrad::Error& e) {
    std::cerr << "aotgrad " << cmd->spec.name << ": " << e.formatted() << "\n";
    return cli::kBadInput;
  } catch (const std::bad_alloc&) {
    std::cerr << "aotgrad " << cmd->spec.name << ": error: out of memory\n";
    return cli::kBadInput;
  } catch (const std::exception& e) {
    std::cerr << "aotgrad " << cmd->spec.name << ": internal error: " << e.what() << "\n";
    return cli::kBadInput;
  }
}
