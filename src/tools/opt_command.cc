// aotgrad: `aotgrad opt GRAPH --passes=...` -- runs graph passes and prints the result.
#include <iostream>
#include <set>
#include <sstream>

#include "aotgrad/driver/pass_pipeline.h"
#include "aotgrad/ir/error.h"
#include "aotgrad/ir/printer.h"
#include "commands.h"
#include "pipeline.h"

namespace aotgrad::cli {
namespace {

// Splits --passes at commas; items after a `decomp:` item that are not pass names continue its
// decomposition spec ("decomp:full,-aten::native_layer_norm,cse" is two passes).
std::vector<std::string> split_passes(const std::string& list) {
  auto is_pass = [](const std::string& name) {  // a name make_pass accepts (aliases included)
    try {
      make_pass(name);
      return true;
    } catch (const Error&) {
      return false;
    }
  };
  std::vector<std::string> items, out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) items.push_back(item);
  if (!list.empty() && list.back() == ',') items.push_back("");
  for (const std::string& it : items) {
    bool continues_decomp = !out.empty() && out.back().rfind("decomp:", 0) == 0 && !it.empty() &&
                            it.rfind("decomp:", 0) != 0 && !is_pass(it);
    if (continues_decomp)
      out.back() += "," + it;
    else
      out.push_back(it);
  }
  return out;
}

int run_opt(const Args& args) {
  auto list = args.get("passes");
  if (!list || list->empty())
    throw UsageError{"give --passes=PASS,... (known: " + known_pass_names() + ")"};
  PassPipelineOptions popts;
  popts.verify = true;
  if (args.has("print-after-all")) popts.print_after_all = &std::cerr;
  PassPipeline pipeline(popts);
  for (const std::string& spec : split_passes(*list)) {
    if (spec.empty()) throw UsageError{"--passes: empty pass name in '" + *list + "'"};
    try {
      pipeline.add(spec);
    } catch (const Error& e) {
      throw UsageError{"--passes: " + e.message()};
    }
  }
  std::shared_ptr<Graph> graph = load_graph(args.positional[0]);
  pipeline.run(*graph);
  std::string text = print_graph(*graph);
  std::cout << text;
  if (args.has("stats")) std::cerr << pipeline.stats_table();
  return kOk;
}

}  // namespace

const Command& opt_command() {
  static const Command cmd{
      {"opt",
       "aotgrad opt GRAPH --passes=PASS,... [--print-after-all] [--stats]",
       "Runs graph passes in order on GRAPH (the verifier checks the graph after each) and prints "
       "the\n"
       "result. Passes: functionalize, decomp:<spec> (none, core, full, op names, -op), dce, cse,\n"
       "constant_fold (fold), simplify,\n"
       "reinplace (in-place variants only, as torch.fx.passes.reinplace), split_weight_grads.",
       {{"passes", true, "the passes, in order (e.g. functionalize,decomp:full,cse,dce,simplify)",
         "LIST"},
        {"print-after-all", false, "print the graph after every pass (to standard error)"},
        {"stats", false,
         "print what each pass did: nodes before and after, changes, time (standard error)"}},
       1,
       1},
      run_opt,
      /*graphs_only=*/true};
  return cmd;
}

}  // namespace aotgrad::cli
