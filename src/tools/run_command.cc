// aotgrad: `aotgrad run GRAPH --inputs IN.safetensors` -- run a graph on libtorch kernels.
#include <ATen/ATen.h>

#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/runtime/aten_call.h"
#include "aotgrad/runtime/interpreter.h"
#include "aotgrad/runtime/memory.h"
#include "aotgrad/runtime/tensor_io.h"
#include "aotgrad/transforms/input_mutations.h"
#include "aotgrad/runtime/compiled_graph.h"
#include "commands.h"
#include "pipeline.h"

namespace aotgrad::cli {
namespace {

int run_run(const Args& args) {
  install_tracking_allocator();
  const std::string& graph_path = args.positional[0];
  std::shared_ptr<Graph> graph = load_graph(graph_path);
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

  // Inputs, matched to placeholders by name.
  std::vector<Node*> placeholders = graph->placeholders();
  std::vector<c10::IValue> inputs;
  TensorFile in_file;
  if (auto path = args.get("inputs")) in_file = load_safetensors(*path);
  for (size_t i = 0; i < placeholders.size(); ++i) {
    const Node* ph = placeholders[i];
    if (const TensorRecord* rec = in_file.find(ph->name())) {
      inputs.push_back(to_tensor(*rec));
    } else if (args.has("random-inputs") && ph->meta().is_tensor()) {
      inputs.push_back(random_tensor(ph->meta().tensor, seed + i));
    } else {
      throw Error("no input for placeholder '" + ph->name() + "'" +
                  (args.has("inputs") ? " in " + *args.get("inputs") : std::string()));
    }
  }
  // Keep the caller's view of the inputs to write back mutated ones.
  std::vector<c10::IValue> caller_inputs = inputs;

  // As written (--no-compile) or through the compile pipeline (functionalized graph + wrappers).
  std::function<std::vector<c10::IValue>(std::vector<c10::IValue>)> fn;
  auto tc0 = std::chrono::steady_clock::now();
  if (args.has("no-compile")) {
    auto interp = std::make_shared<Interpreter>(graph);
    interp->check_inputs(inputs);
    fn = [interp](std::vector<c10::IValue> in) { return interp->run(std::move(in)); };
  } else {
    CompileOptions copts;
    copts.keep_inference_input_mutations = args.has("keep-inference-input-mutations");
    auto compiled = std::make_shared<CompiledGraph>(graph, copts);
    Interpreter(graph).check_inputs(inputs);
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
    InputMutations mut = analyze_input_mutations(*graph);
    for (size_t i = 0; i < placeholders.size(); ++i)
      if (mut.data_mutated[i] || mut.metadata_mutated[i])
        out.tensors.push_back(to_record(placeholders[i]->name(), caller_inputs[i].toTensor()));
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
    std::cout << j.dump() << "\n";
  }
  return kOk;
}

}  // namespace

const Command& run_command() {
  static const Command cmd{
      {"run",
       "aotgrad run GRAPH (--inputs=IN.safetensors | --random-inputs) [--outputs=OUT.safetensors]",
       "Compiles GRAPH (functionalization and the runtime wrappers) and runs it on libtorch's ATen\n"
       "kernels; --no-compile runs it as written. Inputs are matched to placeholders by name;\n"
       "OUT gets out_0, out_1, ... for each tensor output (a None output keeps its index), and\n"
       "every input the graph mutates under its own name.",
       {{"inputs", true, "safetensors file with one tensor per placeholder name", "FILE"},
        {"outputs", true, "write outputs (and mutated inputs) to this safetensors file", "FILE"},
        {"random-inputs", false, "make inputs missing from --inputs at random (floats ~N(0,1), ints in [0,2))"},
        {"seed", true, "seed for --random-inputs (default 0)", "N"},
        {"stats", true, "print statistics as one JSON object (peak_bytes, fw_us, ...)", "json"},
        {"no-compile", false, "run the graph as written (in-place ops included), without compiling"},
        {"keep-inference-input-mutations", false, "keep input mutations in the compiled graph as copy_"}},
       1,
       1},
      run_run};
  return cmd;
}

}  // namespace aotgrad::cli
