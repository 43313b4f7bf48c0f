// aotgrad: `aotgrad compile GRAPH` -- run the compile pipeline and dump or describe its graphs.
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>

#include "aotgrad/driver/driver.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ops/provider_stats.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/report/partition_dot.h"
#include "aotgrad/report/timeline_svg.h"
#include "aotgrad/support/file.h"
#include "aotgrad/support/timer.h"
#include "aotgrad/transforms/partition/memory_timeline.h"
#include "commands.h"
#include "compile_args.h"

namespace aotgrad::cli {
namespace {

// Process start-up before the first phase: building the op registry (what `import torch` is to
// functorch), reported on its own, not as part of parsing one graph.
double g_startup_us = 0;

nlohmann::ordered_json meta_json(const ViewAndMutationMeta& meta, const Graph& source) {
  nlohmann::ordered_json j;
  std::vector<Node*> phs = source.placeholders();
  nlohmann::ordered_json inputs = nlohmann::ordered_json::array();
  for (size_t i = 0; i < meta.inputs.size(); ++i) {
    const InputInfo& in = meta.inputs[i];
    inputs.push_back({{"name", phs[i]->name()},
                      {"mutates_data", in.mutates_data},
                      {"mutates_metadata", in.mutates_metadata},
                      {"mutation_in_graph", in.mutation_in_graph},
                      {"requires_grad", in.requires_grad}});
  }
  nlohmann::ordered_json outputs = nlohmann::ordered_json::array();
  for (const OutputInfo& o : meta.outputs) {
    const char* kind = o.kind == OutputKind::kFresh          ? "fresh"
                       : o.kind == OutputKind::kIsInput      ? "is_input"
                       : o.kind == OutputKind::kAliasOfInput ? "alias_of_input"
                                                             : "none";
    nlohmann::ordered_json oj = {{"kind", kind}};
    if (o.input >= 0) oj["input"] = phs[o.input]->name();
    outputs.push_back(oj);
  }
  j["inputs"] = inputs;
  j["outputs"] = outputs;
  return j;
}

// The saved values, with their sizes: the summary the partition's explanation (or, without one,
// the forward graph) gives.
nlohmann::ordered_json saved_json(const TrainingArtifacts& a, const SavedSummary& summary) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const SavedValue& v : summary.values) {
    const Node* n = a.fw->find(v.name);
    if (!n || !n->meta().is_tensor()) continue;
    const TensorMeta& m = n->meta().tensor;
    nlohmann::ordered_json dims = nlohmann::ordered_json::array();
    for (auto& d : m.sizes)
      dims.push_back(d.is_concrete() ? nlohmann::ordered_json(d.value())
                                     : nlohmann::ordered_json(d.to_string()));
    list.push_back({{"name", v.name},
                    {"dtype", std::string(short_name(m.dtype))},
                    {"shape", dims},
                    {"bytes", v.bytes},
                    {"is_input", v.is_input}});
  }
  return list;
}

nlohmann::ordered_json explain_json(const MinCutExplain& e) {
  nlohmann::ordered_json j;
  nlohmann::ordered_json saved = nlohmann::ordered_json::array();
  for (const auto& s : e.saved)
    saved.push_back({{"name", s.name},
                     {"annotation", s.annotation},
                     {"bytes", s.bytes},
                     {"weight", s.weight},
                     {"is_input", s.is_input},
                     {"why", s.why}});
  nlohmann::ordered_json recomputed = nlohmann::ordered_json::array();
  for (const auto& r : e.recomputed) recomputed.push_back({{"name", r.name}, {"op", r.op}});
  nlohmann::ordered_json banned = nlohmann::ordered_json::array();
  for (const auto& b : e.banned)
    banned.push_back({{"name", b.name}, {"op", b.op}, {"reason", b.reason}});
  j["saved"] = saved;
  j["recomputed"] = recomputed;
  j["banned"] = banned;
  j["cut_value"] = e.cut_value;
  j["cse_merged"] = e.cse_merged;
  nlohmann::ordered_json knapsack = nlohmann::ordered_json::array();
  for (const auto& n : e.knapsack_recomputable) knapsack.push_back(n);
  nlohmann::ordered_json plans = nlohmann::ordered_json::array();
  for (size_t i = 0; i < e.budget_plans.size(); ++i) {
    const BudgetPlan& p = e.budget_plans[i];
    plans.push_back({{"stage", p.stage},
                     {"chosen", i == e.budget_chosen},
                     {"peak_bytes", p.peak_bytes},
                     {"peak_ratio", p.peak_ratio},
                     {"memory_ratio", p.memory_ratio},
                     {"recompute_cost", p.recompute_cost},
                     {"step_cost", p.step_cost},
                     {"again_rounds", p.again_rounds}});
  }
  j["memory_budget"] = {{"budget", e.max_slowdown >= 0 ? nlohmann::ordered_json("auto")
                                                       : nlohmann::ordered_json(e.memory_budget)},
                        {"max_slowdown", e.max_slowdown},
                        {"stage", e.budget_stage},
                        {"memory_ratio", e.memory_ratio},
                        {"knapsack_recomputable", knapsack},
                        {"computed_again", e.computed_again},
                        {"plans", plans}};
  return j;
}

// What both kinds of compilation print with --stats=json: the options, the metadata, the phases
// (the command's own: parse, the pipeline's stages, dump) and the cache.
nlohmann::ordered_json stats_json(const char* kind, const Args& args, const CompileOptions& o) {
  nlohmann::ordered_json j;
  j["kind"] = kind;
  if (std::string(kind) == "autograd") j["partition"] = partition_kind_name(o.partition);
  j["decomp"] = args.get("decomp").value_or("core");
  if (o.partition == PartitionKind::kMinCut) {
    if (o.min_cut.max_slowdown >= 0) {
      j["memory_budget"] = "auto";
      j["max_slowdown"] = o.min_cut.max_slowdown;
    } else {
      j["memory_budget"] = o.min_cut.activation_memory_budget;
    }
    j["cost_model"] = cost_model_name(o.min_cut.cost_model.kind);
    j["solver"] = std::string(knapsack_solver_name(o.min_cut.memory_budget_solver));
    j["budget_pricing"] = o.min_cut.budget_pricing == BudgetPricing::kPeak ? "peak" : "sum";
  }
  return j;
}

// How the compiled graphs' calls got their op facts: declared by the registry, or given by the op
// provider (libtorch), and how the provider found its metadata, derivatives and decompositions.
nlohmann::ordered_json op_world_json(const std::vector<const Graph*>& graphs) {
  int64_t declared = 0, provided = 0;
  for (const Graph* g : graphs)
    for (const Node* n : g->nodes())
      if (n->kind() == NodeKind::Call) ++(n->op()->provided ? provided : declared);
  OpProviderStats p = op_provider_stats();
  nlohmann::ordered_json j;
  j["nodes_declared"] = declared;
  j["nodes_provided"] = provided;
  j["ops_provided"] = p.ops_provided;
  j["meta_kernel"] = p.meta_kernel;
  j["meta_cpu_kernel"] = p.meta_cpu_kernel;
  j["meta_cache_hits"] = p.meta_cache_hits;
  j["traced_derivatives"] = p.traced_derivatives;
  j["eager_backwards"] = p.eager_backwards;
  j["derivative_cache_hits"] = p.derivative_cache_hits;
  j["traced_decompositions"] = p.traced_decompositions;
  j["decomposition_cache_hits"] = p.decomposition_cache_hits;
  return j;
}

void finish_stats(nlohmann::ordered_json& j, const StageTimer& timer, const CompileOptions& o) {
  add_phases_json(j, timer);
  j["startup_us"] = g_startup_us;
  j["cache"] = cache_stats_json(o);
  std::cout << j.dump() << "\n";
}

int compile_training(const Args& args, const Graph& graph, const std::vector<bool>& rg,
                     CompileOptions o, StageTimer& timer, const std::optional<std::string>& dump,
                     bool json_stats) {
  if (args.has("keep-inference-input-mutations"))
    throw UsageError{"--keep-inference-input-mutations applies to inference compilations only"};
  bool explain = args.has("explain");
  if (explain && o.partition != PartitionKind::kMinCut)
    throw UsageError{"--explain describes the min_cut partition; drop --partition=default"};
  o.explain = explain;
  // A cache entry holds the forward and backward graphs, not the joint graph or the explanation:
  // outputs that need those compile (and refresh the entry) without reading it.
  o.read_cache = !(explain || args.has("dot") || args.has("timeline") || dump || !json_stats);
  TrainingArtifacts a = compile_for_training(graph, rg, o);
  for (const StageTime& t : a.stages) timer.add(t);
  if (dump) {
    write_file_atomic(*dump + "/joint.fx", print_graph(*a.joint));
    write_file_atomic(*dump + "/fw.fx", print_graph(*a.fw));
    write_file_atomic(*dump + "/bw.fx", print_graph(*a.bw));
  }
  if (auto dot = args.get("dot"))
    write_file_atomic(*dot, joint_graph_dot(*a.joint, *a.fw, *a.bw, a.saved));
  if (auto svg = args.get("timeline"))
    write_file_atomic(
        *svg, partition_timeline_svg(*a.joint, a.joint_info, *a.fw, *a.bw, a.saved,
                                     partition_kind_name(o.partition), o.min_cut.gradients_kept));
  timer.mark("dump");
  if (json_stats) {
    nlohmann::ordered_json j = stats_json("autograd", args, o);
    add_symbols_json(j, graph);
    if (a.joint) j["joint_nodes"] = a.joint->size();  // absent on a cache hit
    j["fw_nodes"] = a.fw->size();
    j["bw_nodes"] = a.bw->size();
    j["op_world"] = op_world_json({a.fw.get(), a.bw.get()});
    SavedSummary summary = saved_summary(a);
    j["saved"] = saved_json(a, summary);
    j["saved_bytes"] = summary.bytes;
    j["saved_activation_bytes"] = summary.activation_bytes;
    j["meta"] = meta_json(a.meta, graph);
    j["predicted_peak"] = predicted_peak_json(training_step_peak_report(
        *a.fw, *a.bw, a.saved, reinplace_option(args), o.min_cut.gradients_kept));
    if (explain && a.explain) j["explain"] = explain_json(*a.explain);
    finish_stats(j, timer, o);
  } else if (explain) {
    if (a.explain) std::cout << explain_text(*a.explain);
    MemoryTimeline t = training_step_peak_report(*a.fw, *a.bw, a.saved, reinplace_option(args),
                                                 o.min_cut.gradients_kept);
    std::cout << "predicted training-step peak: " << peak_text(t) << "\n"
              << "live at the peak: " << peak_live_text(t) << "\n";
  } else if (!dump) {
    std::cout << print_graph(*a.joint);
  }
  return kOk;
}

int run_compile(const Args& args) {
  auto t0 = std::chrono::steady_clock::now();
  aten_ops();
  g_startup_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  StageTimer timer;
  std::shared_ptr<Graph> graph = load_graph(args.positional[0], hint_option(args));
  apply_recompute_option(args, *graph);
  timer.mark("parse");
  std::vector<bool> rg = parse_grad_spec(*graph, args.get("grad").value_or("none"));
  bool json_stats = false;
  if (auto s = args.get("stats")) {
    if (*s != "json") throw UsageError{"--stats takes 'json'"};
    json_stats = true;
  }
  std::optional<std::string> dump = args.get("dump");
  if (dump && ::mkdir(dump->c_str(), 0755) != 0 && errno != EEXIST)
    throw Error("cannot create directory '" + *dump + "': " + std::strerror(errno));
  CompileOptions o = compile_options(args);

  if (choose_compile_kind(*graph, rg) == CompileKind::kTraining)
    return compile_training(args, *graph, rg, o, timer, dump, json_stats);
  if (args.has("explain"))
    throw UsageError{"--explain describes the partition of a training compilation: give --grad"};
  for (const char* opt : {"dot", "timeline"})
    if (args.has(opt))
      throw UsageError{std::string("--") + opt +
                       " draws the partition of a training compilation: give --grad"};
  if (args.has("zero-grad"))
    throw UsageError{"--zero-grad applies to a training compilation: give --grad"};
  // Inputs carry their requires_grad into the metadata.
  std::vector<Node*> phs = graph->placeholders();
  for (size_t i = 0; i < phs.size(); ++i)
    if (phs[i]->meta().is_tensor()) phs[i]->mutable_meta().tensor.requires_grad = rg[i];
  InferenceArtifacts a = compile_for_inference(*graph, o);
  for (const StageTime& t : a.stages) timer.add(t);
  std::string fw_text = print_graph(*a.fw);
  if (dump) write_file_atomic(*dump + "/fw.fx", fw_text);
  timer.mark("dump");
  if (json_stats) {
    nlohmann::ordered_json j = stats_json("inference", args, o);
    add_symbols_json(j, *graph);
    j["fw_nodes"] = a.fw->size();
    j["op_world"] = op_world_json({a.fw.get()});
    j["meta"] = meta_json(a.meta, *graph);
    finish_stats(j, timer, o);
  } else if (!dump) {
    std::cout << fw_text;
  }
  return kOk;
}

}  // namespace

const Command& compile_command() {
  static const Command cmd{
      {"compile",
       "aotgrad compile GRAPH [--grad=all|none|NAME,...] [--decomp=SPEC] "
       "[--partition=default|min_cut] "
       "[--memory-budget=F] [--solver=greedy|dp|ilp] "
       "[--explain] [--keep-inference-input-mutations] [--dump=DIR] [--dot=FILE.dot] "
       "[--timeline=FILE.svg] "
       "[--recompute=SPEC] [--stats=json] [--cache-dir=DIR]",
       "Compiles GRAPH: decomposes composite ops, functionalizes it (in-place ops and views become "
       "a pure graph; mutated inputs\n"
       "become extra outputs or a trailing copy_). When inputs require grad (--grad) and an "
       "output\n"
       "depends on them, builds the joint forward+backward graph, decomposes it (--decomp) and\n"
       "partitions it (--partition). Prints the graph (fw for inference, joint for training), or "
       "writes fw.fx (and\n"
       "joint.fx, bw.fx) into DIR.\n"
       "AOTGRAD_LOGS=aot_joint_graph,aot_graphs,partitioner,cache (or +all), comma-separated, "
       "prints the\n"
       "joint graph, the forward and backward graphs and the partitioner's decisions to stderr.\n"
       "--cache-dir=DIR reads and writes the compile cache there; a training compilation reads it\n"
       "only with --stats=json alone (an entry has no joint graph or explanation).",
       with_compile_options(
           {{"grad", true,
             "inputs that require grad: all (floating-point), none (default), or names", "SPEC"},
            {"dump", true, "write the compiled graphs into this directory (fw.fx; joint.fx, bw.fx)",
             "DIR"},
            {"stats", true, "print statistics and metadata as one JSON object", "json"},
            {"dot", true,
             "write the joint graph as partitioned as a Graphviz file: inputs, tangents, forward, "
             "saved, "
             "recomputed and backward nodes in distinct colours, with a legend (render: dot -Tsvg)",
             "FILE"},
            {"timeline", true,
             "write an SVG plot of live activation bytes over the forward then backward schedule "
             "of "
             "the "
             "chosen partition against default_partition, with each peak in the legend",
             "FILE"},
            {"explain", false,
             "print why the min_cut partition saves each saved value, which forward ops the "
             "backward "
             "recomputes and which ops it may not recompute (in the JSON as \"explain\" with "
             "--stats=json)"}}),
       1, 1},
      run_compile,
      /*graphs_only=*/true};
  return cmd;
}

}  // namespace aotgrad::cli
