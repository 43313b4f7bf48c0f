// aotgrad: aot_export / aot_export_module -- capture and the pipeline, without compiling (the
// seed's export path, §13.11).
#include <torch/nn/module.h>

#include "aotgrad/aotgrad.h"
#include "aotgrad/runtime/compiled_graph.h"
#include "config_options.h"
#include "lifted_names.h"

namespace aotgrad {
namespace {

ExportedGraphs export_graphs(const TensorFunction& fn, const std::vector<at::Tensor>& args,
                             bool trace_joint, const AOTConfig& config,
                             std::vector<std::string> names, size_t num_parameters,
                             size_t num_buffers, const char* who) {
  AOTGRAD_CHECK(fn, who, ": the function is empty");
  for (size_t i = 0; i < args.size(); ++i) {
    AOTGRAD_CHECK(args[i].defined(), who, ": argument ", i, " is an undefined tensor");
    for (size_t j = 0; j < i; ++j)
      AOTGRAD_CHECK(args[j].unsafeGetTensorImpl() != args[i].unsafeGetTensorImpl(), who,
                    ": arguments ", j, " and ", i, " are the same tensor; pass it once");
  }
  check_config(config, who);
  ExportedGraphs out;
  CaptureOptions capture_options;
  capture_options.input_names = names;
  capture_options.lifted_constants = &out.tensor_constant_values;
  out.captured = capture(fn, args, capture_options);
  for (const Node* p : out.captured->placeholders())
    if (p->info().lifted_constant) out.tensor_constants.push_back(p->name());
  if (names.empty())
    for (size_t i = 0; i < args.size(); ++i) names.push_back("arg" + std::to_string(i) + "_1");
  out.parameters.assign(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(num_parameters));
  out.buffers.assign(names.begin() + static_cast<std::ptrdiff_t>(num_parameters),
                     names.begin() + static_cast<std::ptrdiff_t>(num_parameters + num_buffers));
  out.user_inputs.assign(names.begin() + static_cast<std::ptrdiff_t>(num_parameters + num_buffers),
                         names.end());

  std::vector<bool> requires_grad;  // empty: no joint graph
  if (trace_joint) {
    bool any = false;
    for (const at::Tensor& t : args) {
      requires_grad.push_back(t.requires_grad());
      any = any || t.requires_grad();
    }
    requires_grad.resize(requires_grad.size() + out.tensor_constants.size(), false);
    AOTGRAD_CHECK(any, who, ": trace_joint needs an argument that requires grad");
  }
  CompileOptions options = config;
  options.explain = false;  // an export returns no explanation
  ExportArtifacts a = compile_for_export(*out.captured, requires_grad, options);
  out.forward = std::move(a.forward);
  out.meta = std::move(a.meta);
  out.joint = std::move(a.joint);
  out.fw = std::move(a.fw);
  out.bw = std::move(a.bw);
  out.saved = std::move(a.saved);
  for (int i : out.meta.mutated_inputs_returned) out.inputs_to_mutate.push_back(names.at(i));
  // Effect tokens: the graph's leading placeholders and outputs (Note [Effect tokens]).
  const Graph& tokens_graph = out.fw ? *out.fw : *out.forward;
  std::vector<Node*> phs = tokens_graph.placeholders();
  const Arg& returned = tokens_graph.output()->args()[0];
  for (size_t k = 0; k < static_cast<size_t>(out.meta.num_tokens); ++k) {
    out.input_tokens.push_back(phs.at(k)->name());
    out.output_tokens.push_back(returned.list.at(k).is_node() ? returned.list.at(k).node->name()
                                                              : std::string());
  }
  // Overlapping views of which one is written would need a synthetic base (§13.23), which
  // PyTorch's export path refuses too.
  auto o = find_written_overlap(args, [&](size_t i) {
    return out.meta.inputs.at(i).mutates_data || out.meta.inputs.at(i).mutates_metadata;
  });
  AOTGRAD_CHECK(!o, who,
                ": encountered aliased inputs that are mutated in the graph you are trying to "
                "export: inputs ",
                names.at(o->first), " and ", names.at(o->second),
                " are overlapping views of one storage and the graph writes ", names.at(o->written),
                "; this is not supported (as in PyTorch); clone one of them");
  return out;
}

}  // namespace

ExportedGraphs aot_export(const TensorFunction& fn, const std::vector<at::Tensor>& args,
                          bool trace_joint, const AOTConfig& config) {
  AOTGRAD_CHECK(config.input_names.empty() || config.input_names.size() == args.size(),
                "aot_export: ", config.input_names.size(), " input names for ", args.size(),
                " arguments");
  return export_graphs(fn, args, trace_joint, config, config.input_names, 0, 0, "aot_export");
}

ExportedGraphs aot_export_module(torch::nn::Module& module, const TensorFunction& forward,
                                 const std::vector<at::Tensor>& inputs, bool trace_joint,
                                 const AOTConfig& config) {
  AOTGRAD_CHECK(forward, "aot_export_module: the forward function is empty");
  ModuleState s = module_state(module);
  std::vector<std::string> names =
      lifted_input_names(s, config.input_names, inputs.size(), "aot_export_module");
  std::vector<at::Tensor> args = s.tensors;
  args.insert(args.end(), inputs.begin(), inputs.end());
  return export_graphs(functional_call(s.tensors, forward), args, trace_joint, config,
                       std::move(names), s.num_parameters, s.tensors.size() - s.num_parameters,
                       "aot_export_module");
}

}  // namespace aotgrad
