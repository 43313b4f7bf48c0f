// aotgrad: the subcommands of the `aotgrad` command line.
#pragma once

#include <string>
#include <vector>

#include "cli.h"

namespace aotgrad::cli {

/// A subcommand: its spec (name, synopsis, options) and the function that runs it.
struct Command {
  CommandSpec spec;
  int (*run)(const Args& args);
  /// The command works on graphs only (no libtorch tensors): its process prepares the malloc heap
  /// for many small objects (support/heap.h) before it starts.
  bool graphs_only = false;
};

const Command& check_command();
const Command& ops_command();
const Command& run_command();
const Command& compile_command();
const Command& opt_command();
const Command& launch_command();
const Command& calibrate_command();

}  // namespace aotgrad::cli
