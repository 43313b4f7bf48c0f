// aotgrad: `aotgrad check FILE` -- parse, verify and print a graph in canonical text.
#include <iostream>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"
#include "commands.h"

namespace aotgrad::cli {
namespace {

int run_check(const Args& args) {
  const std::string& path = args.positional[0];
  std::string text = read_input(path);
  std::unique_ptr<Graph> g;
  try {
    g = parse_graph(text, aten_ops());
    verify(*g);
  } catch (const Error& e) {
    std::string where = e.loc().line > 0 ? path + ":" + std::to_string(e.loc().line) + ":" +
                                               std::to_string(e.loc().col)
                                         : path;
    std::cerr << where << ": error: " << e.message() << "\n";
    return kBadInput;
  }
  PrintOptions opts;
  opts.annotations = !args.has("no-annotations");
  opts.release_statements = !args.has("no-release");
  std::cout << print_graph(*g, opts);
  return kOk;
}

}  // namespace

const Command& check_command() {
  static const Command cmd{
      {"check",
       "aotgrad check FILE",
       "Parses and verifies the graph in FILE (the text form PyTorch prints; '-' or /dev/stdin\n"
       "for standard input) and prints it in canonical form. Errors are printed as\n"
       "FILE:LINE:COL: error: MESSAGE.",
       {{"no-annotations", false, "print without type annotations"},
        {"no-release", false, "print without the '; x = None' release statements"}},
       1,
       1},
      run_check,
      /*graphs_only=*/true};
  return cmd;
}

}  // namespace aotgrad::cli
