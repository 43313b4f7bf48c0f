// aotgrad: `aotgrad opt GRAPH --passes=...` -- runs graph passes and prints the result.
#include <iostream>
#include <set>
#include <sstream>

#include "aotgrad/driver/pass_pipeline.h"
#include "aotgrad/ir/error.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/transforms/autograd.h"
#include "aotgrad/transforms/partition/min_cut.h"
#include "aotgrad/transforms/partition/partition.h"
#include "commands.h"
#include "compile_args.h"

namespace aotgrad::cli {
namespace {

// The stages of `opt` that change what the graph is, rather than Graph -> Graph passes: `joint`
// (or `joint:NAME,...`, the inputs that require grad; plain, every floating-point input) makes the
// joint forward+backward graph (§13.3), `partition` (min-cut, which also functionalizes the RNG
// of recomputed random ops, §13.25) or `partition:default` splits that joint into the forward and
// backward graphs (§13.5).
bool is_joint(const std::string& spec) { return spec == "joint" || spec.rfind("joint:", 0) == 0; }
bool is_partition(const std::string& spec) {
  return spec == "partition" || spec == "partition:default" || spec == "partition:min_cut";
}

// Splits --passes at commas; items after a `decomp:` item that are not pass names continue its
// decomposition spec ("decomp:full,-aten::native_layer_norm,cse" is two passes).
std::vector<std::string> split_passes(const std::string& list) {
  auto is_pass = [](const std::string& name) {  // a name make_pass accepts (aliases included)
    if (is_joint(name) || is_partition(name)) return true;
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
    throw UsageError{"give --passes=PASS,... (known: " + known_pass_names() +
                     ", joint, partition)"};
  PassPipelineOptions popts;
  popts.verify = true;
  if (args.has("print-after-all")) popts.print_after_all = &std::cerr;
  // The passes before `joint`, on the forward graph, and those after it, on the joint graph.
  PassPipeline before(popts), after(popts);
  std::string joint, partition;
  for (const std::string& spec : split_passes(*list)) {
    if (spec.empty()) throw UsageError{"--passes: empty pass name in '" + *list + "'"};
    if (!partition.empty())
      throw UsageError{"--passes: '" + spec + "' after " + partition +
                       ", which must be the last (it makes two graphs)"};
    if (is_joint(spec)) {
      if (!joint.empty()) throw UsageError{"--passes: a second " + spec};
      joint = spec;
      continue;
    }
    if (is_partition(spec)) {
      if (joint.empty())
        throw UsageError{"--passes: " + spec +
                         " needs the joint graph's layout: run joint before it"};
      partition = spec;
      continue;
    }
    try {
      (joint.empty() ? before : after).add(spec);
    } catch (const Error& e) {
      throw UsageError{"--passes: " + e.message()};
    }
  }
  std::shared_ptr<Graph> graph = load_graph(args.positional[0]);
  before.run(*graph);
  auto stats = [&] {
    if (!args.has("stats")) return;
    std::cerr << before.stats_table();
    if (!joint.empty()) std::cerr << after.stats_table();
  };
  if (joint.empty()) {
    std::cout << print_graph(*graph);
    stats();
    return kOk;
  }
  const std::string grad = joint == "joint" ? std::string("all") : joint.substr(6);
  JointGraph jg = build_joint(*graph, parse_grad_spec(*graph, grad));
  verify(*jg.graph);
  if (args.has("print-after-all"))
    std::cerr << "# after " << joint << "\n" << print_graph(*jg.graph);
  after.run(*jg.graph);
  if (partition.empty()) {
    std::cout << print_graph(*jg.graph);
    stats();
    return kOk;
  }
  Partition p = partition == "partition:default" ? default_partition(jg) : min_cut_partition(jg);
  verify(*p.fw);
  verify(*p.bw);
  std::cout << "# forward\n" << print_graph(*p.fw) << "# backward\n" << print_graph(*p.bw);
  stats();
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
       "reinplace (in-place variants only, as torch.fx.passes.reinplace), split_weight_grads.\n"
       "Then joint (joint:NAME,... names the inputs that require grad; plain, every\n"
       "floating-point input) makes the joint graph, and the passes after it run on that; a last\n"
       "partition (min-cut, which also functionalizes recomputed random ops) or\n"
       "partition:default prints the forward and the backward graphs.",
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
