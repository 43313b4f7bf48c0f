// aotgrad (the libtorch module of the command line): `aotgrad run GRAPH --inputs IN.safetensors`
// -- run a graph on libtorch kernels.
#include "run.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/autograd.h>

#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../compile_args.h"
#include "aotgrad/driver/stages.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/providers/aten_call.h"
#include "aotgrad/runtime/compiled_function.h"
#include "aotgrad/runtime/compiled_graph.h"
#include "aotgrad/runtime/distributed/data_parallel.h"
#include "aotgrad/runtime/interpreter.h"
#include "aotgrad/runtime/memory.h"
#include "aotgrad/runtime/tensor_io.h"
#include "aotgrad/transforms/input_mutations.h"
#include "aotgrad/transforms/partition/memory_timeline.h"

namespace aotgrad::cli {
namespace {

// The inputs `graph` mutates, under their placeholder names, as the caller's tensors hold them
// after the run.
void add_mutated_inputs(TensorFile& out, const Graph& graph,
                        const std::vector<at::Tensor>& caller) {
  InputMutations mut = analyze_input_mutations(graph);
  std::vector<Node*> placeholders = graph.placeholders();
  for (size_t i = 0; i < placeholders.size(); ++i)
    if (mut.data_mutated[i] || mut.metadata_mutated[i])
      out.tensors.push_back(to_record(placeholders[i]->name(), caller[i]));
}

// `--train`: forward through CompiledFunction, then backward with the tangents.
int run_training(const Args& args, const std::shared_ptr<Graph>& graph,
                 const std::vector<Node*>& placeholders, std::vector<c10::IValue> inputs,
                 bool json_stats) {
  if (args.has("no-compile")) throw UsageError{"--train always compiles; drop --no-compile"};
  std::vector<bool> rg = parse_grad_spec(*graph, args.get("grad").value_or("all"));
  std::vector<at::Tensor> tensors;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].isTensor())
      throw Error("--train needs tensor inputs; '" + placeholders[i]->name() + "' is not");
    at::Tensor t = inputs[i].toTensor();
    tensors.push_back(rg[i] ? t.detach().requires_grad_(true) : t);
  }
  std::vector<at::Tensor> caller = tensors;
  auto tc0 = std::chrono::steady_clock::now();
  TrainOptions topts;
  topts.pipeline = compile_options(args);
  DataParallelOptions dp;
  const bool data_parallel = args.has("data-parallel");
  if (data_parallel) {
    dp.group_size = process_group_place(dp.group_name).size;
    dp.reduce = rg;
    for (const Node* p : placeholders) dp.names.push_back(p->name());
    topts.pipeline.extra_stages.push_back(
        {PipelineKind::kTraining, "partition", false, [dp] { return data_parallel_stage(dp); }});
  }
  const bool reinplace = reinplace_option(args);
  if (!reinplace)
    topts.fw_compiler = topts.bw_compiler = std::make_shared<InterpreterCompiler>(false);
  Interpreter(graph).check_inputs(inputs);
  CompiledFunction f(graph, rg, topts);
  if (data_parallel) {
    const TrainingArtifacts& a = f.artifacts();
    std::string partition = std::to_string(a.num_forward_outputs) + " forward outputs; saved:";
    for (const std::string& n : a.saved) partition += " " + n;
    check_same_on_every_rank(dp.group_name,
                             {{"forward graph", print_graph(*a.fw)},
                              {"backward graph", print_graph(*a.bw)},
                              {"partition", partition},
                              {"bucket plan", read_bucket_plan(*a.bw, dp.names).text()}},
                             "run --data-parallel: the compile check");
  }
  auto tc1 = std::chrono::steady_clock::now();
  // --zero-grad=in-place: the gradients start as kept, zeroed .grad (zero_grad(set_to_none=False)),
  // which the step adds into; the measured peak is then the kept-gradient step's.
  if (topts.pipeline.min_cut.gradients_kept) {
    c10::NoGradGuard no_grad;
    for (size_t i = 0; i < tensors.size(); ++i)
      if (rg[i]) tensors[i].mutable_grad() = at::zeros_like(tensors[i]);
  }
  reset_peak_memory();
  int64_t base = memory_stats().current_bytes;
  auto t0 = std::chrono::steady_clock::now();
  std::vector<at::Tensor> outs = f(tensors);
  auto t1 = std::chrono::steady_clock::now();
  // Tangents: ones for every output that requires grad, or tangent_<k> from a file.
  TensorFile tangent_file;
  std::string tangents = args.get("tangents").value_or("ones");
  if (tangents != "ones") tangent_file = load_safetensors(tangents);
  std::vector<at::Tensor> roots, grads;
  for (size_t k = 0; k < outs.size(); ++k) {
    if (!outs[k].defined() || !outs[k].requires_grad()) continue;
    roots.push_back(outs[k]);
    if (tangents == "ones") {
      grads.push_back(at::ones_like(outs[k]));
    } else {
      const TensorRecord* rec = tangent_file.find("tangent_" + std::to_string(k));
      if (!rec)
        throw Error(tangents + ": no tensor 'tangent_" + std::to_string(k) + "' for output " +
                    std::to_string(k));
      at::Tensor t = to_tensor(*rec);
      if (t.sizes() != outs[k].sizes())
        throw Error(tangents + ": tangent_" + std::to_string(k) + " has the wrong shape");
      grads.push_back(t.to(outs[k].scalar_type()));
    }
  }
  auto t2 = std::chrono::steady_clock::now();
  if (!roots.empty()) torch::autograd::backward(roots, grads);
  auto t3 = std::chrono::steady_clock::now();
  MemoryStats mem = memory_stats();
  if (auto out_path = args.get("outputs")) {
    TensorFile out;
    for (size_t k = 0; k < outs.size(); ++k)
      if (outs[k].defined()) out.tensors.push_back(to_record("out_" + std::to_string(k), outs[k]));
    add_mutated_inputs(out, *graph, caller);
    for (size_t i = 0; i < placeholders.size(); ++i)
      if (rg[i] && caller[i].grad().defined())
        out.tensors.push_back(to_record("grad_" + placeholders[i]->name(), caller[i].grad()));
    save_safetensors(*out_path, out);
  }
  if (json_stats) {
    nlohmann::ordered_json j;
    j["nodes"] = graph->size();
    j["peak_bytes"] = mem.peak_bytes;
    j["peak_bytes_over_inputs"] = mem.peak_bytes - base;
    // The measured peak of the step (above what was live before it) beside the prediction.
    const TrainingArtifacts& a = f.artifacts();
    j["measured_peak_bytes"] = mem.peak_bytes - base;
    j["predicted_peak"] = predicted_peak_json(training_step_peak_report(
        *a.fw, *a.bw, a.saved, reinplace, topts.pipeline.min_cut.gradients_kept));
    j["fw_us"] = std::chrono::duration<double, std::micro>(t1 - t0).count();
    j["bw_us"] = std::chrono::duration<double, std::micro>(t3 - t2).count();
    j["compile_us"] = std::chrono::duration<double, std::micro>(tc1 - tc0).count();
    j["saved"] = f.artifacts().saved.size();
    j["cache"] = cache_stats_json(topts.pipeline);
    std::cout << j.dump() << "\n";
  }
  return kOk;
}

}  // namespace

int run_graph(const Args& args) {
  install_tracking_allocator();
  const std::string& graph_path = args.positional[0];
  std::shared_ptr<Graph> graph = load_graph(graph_path, hint_option(args));
  apply_recompute_option(args, *graph);
  if (!args.has("inputs") && !args.has("random-inputs"))
    throw UsageError{"give --inputs=FILE or --random-inputs"};
  uint64_t seed = 0;
  if (auto s = args.get("seed")) {
    try {
      seed = std::stoull(*s);
    } catch (...) {
      throw UsageError{"--seed takes a non-negative integer, got '" + *s + "'"};
    }
  }
  bool json_stats = false;
  if (auto s = args.get("stats")) {
    if (*s != "json") throw UsageError{"--stats takes 'json'"};
    json_stats = true;
  }
  if (args.has("no-compile") &&
      (args.has("decomp") || args.has("partition") || args.has("memory-budget") ||
       args.has("solver") || args.has("cache-dir")))
    throw UsageError{
        "--decomp, --partition, --memory-budget, --solver and --cache-dir apply to compilation; "
        "drop --no-compile"};
  if (!args.has("train") && (args.has("grad") || args.has("tangents") ||
                             args.has("data-parallel") || args.has("zero-grad")))
    throw UsageError{"--grad, --tangents, --data-parallel and --zero-grad go with --train"};
  if (args.has("split-batch") && !args.has("data-parallel"))
    throw UsageError{"--split-batch goes with --data-parallel"};

  // Inputs, matched to placeholders by name.
  std::vector<Node*> placeholders = graph->placeholders();
  std::vector<c10::IValue> inputs;
  TensorFile in_file;
  if (auto path = args.get("inputs")) in_file = load_safetensors(*path);
  for (size_t i = 0; i < placeholders.size(); ++i) {
    const Node* ph = placeholders[i];
    if (const TensorRecord* rec = in_file.find(ph->name())) {
      inputs.push_back(to_tensor(*rec));
    } else if (ph->info().lifted_constant) {
      // A tensor constant (`self._tensor_constant0`) is part of the model, not an input to
      // invent: tools/export.py writes its value with the inputs.
      throw Error("no value for the tensor constant '" + ph->name() + "' (self." + ph->name() +
                  ")" + (args.has("inputs") ? " in " + *args.get("inputs") : std::string()) +
                  ": give it in --inputs; --random-inputs does not make constants up");
    } else if (args.has("random-inputs") && ph->meta().is_tensor()) {
      inputs.push_back(random_tensor(ph->meta().tensor, seed + i));
    } else if (args.has("random-inputs") && ph->meta().kind == ValueMeta::Kind::SymInt) {
      // A SymInt input is its symbol's hint, the size random_tensor gives the tensors (2
      // without one).
      inputs.push_back(c10::IValue(ph->meta().sym.hint_or(2)));
    } else {
      throw Error("no input for placeholder '" + ph->name() + "'" +
                  (args.has("inputs") ? " in " + *args.get("inputs") : std::string()));
    }
  }
  // --split-batch: this rank's slice of dim 0 of the named inputs.
  if (auto names = args.get("split-batch")) {
    GroupPlace place = process_group_place("0");
    std::stringstream ss(*names);
    for (std::string name; std::getline(ss, name, ',');) {
      if (name.empty()) continue;
      size_t i = 0;
      while (i < placeholders.size() && placeholders[i]->name() != name) ++i;
      if (i == placeholders.size())
        throw UsageError{"--split-batch: the graph has no input '" + name + "'"};
      at::Tensor t = inputs[i].isTensor() ? inputs[i].toTensor() : at::Tensor();
      if (!t.defined() || t.dim() == 0 || t.size(0) % place.size != 0)
        throw Error("--split-batch: input '" + name + "' cannot be split in " +
                    std::to_string(place.size) + " equal slices along dim 0" +
                    (t.defined() && t.dim() > 0 ? " (it has " + std::to_string(t.size(0)) + ")"
                                                : std::string()));
      inputs[i] = t.chunk(place.size)[place.rank].contiguous();
    }
  }
  // The graph's random ops draw from libtorch's default generator: --seed makes them repeatable.
  if (args.has("seed")) at::manual_seed(seed);
  if (args.has("train"))
    return run_training(args, graph, placeholders, std::move(inputs), json_stats);
  // Keep the caller's view of the inputs to write back mutated ones.
  std::vector<c10::IValue> caller_inputs = inputs;

  // As written (--no-compile) or through the compile pipeline (functionalized graph + wrappers).
  std::function<std::vector<c10::IValue>(std::vector<c10::IValue>)> fn;
  auto tc0 = std::chrono::steady_clock::now();
  if (args.has("no-compile")) {
    auto interp = std::make_shared<Interpreter>(graph, InterpreterOptions{reinplace_option(args)});
    interp->check_inputs(inputs);
    fn = [interp](std::vector<c10::IValue> in) { return interp->run(std::move(in)); };
  } else {
    Interpreter(graph).check_inputs(inputs);  // first: errors name the graph's own inputs
    auto compiled = std::make_shared<CompiledGraph>(
        graph, compile_options(args),
        reinplace_option(args) ? nullptr : std::make_shared<InterpreterCompiler>(false));
    fn = [compiled](std::vector<c10::IValue> in) { return (*compiled)(std::move(in)); };
  }
  auto tc1 = std::chrono::steady_clock::now();
  reset_peak_memory();
  int64_t base = memory_stats().current_bytes;
  auto t0 = std::chrono::steady_clock::now();
  std::vector<c10::IValue> outputs = fn(std::move(inputs));
  auto t1 = std::chrono::steady_clock::now();
  MemoryStats mem = memory_stats();

  if (auto out_path = args.get("outputs")) {
    TensorFile out;
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i].isTensor() && outputs[i].toTensor().defined())
        out.tensors.push_back(to_record("out_" + std::to_string(i), outputs[i].toTensor()));
    }
    std::vector<at::Tensor> caller;
    for (const c10::IValue& v : caller_inputs)
      caller.push_back(v.isTensor() ? v.toTensor() : at::Tensor());
    add_mutated_inputs(out, *graph, caller);
    save_safetensors(*out_path, out);
  }
  if (json_stats) {
    nlohmann::ordered_json j;
    j["nodes"] = graph->size();
    j["peak_bytes"] = mem.peak_bytes;
    j["peak_bytes_over_inputs"] = mem.peak_bytes - base;
    j["allocations"] = mem.allocations;
    j["fw_us"] = std::chrono::duration<double, std::micro>(t1 - t0).count();
    j["compile_us"] = std::chrono::duration<double, std::micro>(tc1 - tc0).count();
    j["compiled"] = !args.has("no-compile");
    CompileOptions none;
    none.cache_dir = "off";
    j["cache"] = cache_stats_json(args.has("no-compile") ? none : compile_options(args));
    std::cout << j.dump() << "\n";
  }
  return kOk;
}

}  // namespace aotgrad::cli
