// aotgrad (the libtorch module of the command line): running a graph, `aotgrad run`.
#pragma once

#include "../cli.h"

namespace aotgrad::cli {

/// `aotgrad run` on arguments parsed against run_command()'s spec; returns the exit status.
int run_graph(const Args& args);

}  // namespace aotgrad::cli
