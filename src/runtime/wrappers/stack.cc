// aotgrad: the wrapper stack composed -- the compiled forward's wrappers, aot_function's inputs.
#include "aotgrad/runtime/wrappers/stack.h"

#include "aotgrad/ir/error.h"
#include "aotgrad/runtime/wrappers/effect_tokens.h"
#include "aotgrad/runtime/wrappers/fakified_out.h"

namespace aotgrad {
namespace {

// The user outputs of `fw` as traced: after its effect tokens and mutated inputs' values.
TracedOutputs traced_outputs(const Graph& fw, const ViewAndMutationMeta& meta) {
  TracedOutputs t;
  t.first = meta.mutated_inputs_returned.size();
  const std::vector<Arg>& outs = fw.output()->args()[0].list;
  const size_t begin = static_cast<size_t>(meta.num_tokens) + t.first;
  for (size_t j = 0; j < meta.outputs.size() && begin + j < outs.size(); ++j) {
    const Arg& a = outs[begin + j];
    t.metas.push_back(a.is_node() && a.node->meta().is_tensor() ? a.node->meta().tensor
                                                                : TensorMeta{});
    t.aliases_input.push_back(meta.outputs[j].kind != OutputKind::kFresh);
  }
  return t;
}

}  // namespace

CompiledFn compile_forward(const Compiler& compiler, std::shared_ptr<const Graph> fw,
                           const ViewAndMutationMeta& meta) {
  const bool custom = compiler.name() != InterpreterCompiler().name();
  TracedOutputs traced = custom ? traced_outputs(*fw, meta) : TracedOutputs{};
  CompiledFn fn = with_effect_tokens(compiler.compile(std::move(fw)), meta.num_tokens);  // R8
  if (custom) fn = with_traced_strides(std::move(fn), std::move(traced));                // R5
  return fn;
}

CompiledFn compile_input_views(std::shared_ptr<const Graph> input_views) {
  if (input_views->output()->args()[0].list.empty()) return nullptr;
  return InterpreterCompiler().compile(std::move(input_views));
}

std::vector<at::Tensor> ArgumentWrappers::distinct(const std::vector<at::Tensor>& args,
                                                   const std::vector<at::Tensor>& constants) const {
  std::vector<at::Tensor> in = dedupe.distinct(args);
  in.insert(in.end(), constants.begin(), constants.end());
  return in;
}

std::vector<int> ArgumentWrappers::positions(size_t n) const {
  std::vector<int> out;
  out.reserve(n);
  for (size_t k = 0; k < n; ++k)
    out.push_back(k < dedupe.unique.size() ? static_cast<int>(dedupe.unique[k]) : -1);
  return out;
}

std::vector<at::Tensor> ArgumentWrappers::inputs(const std::vector<at::Tensor>& args,
                                                 const std::vector<at::Tensor>& constants) const {
  std::vector<at::Tensor> in = distinct(args, constants);
  if (synthetic_bases.empty()) return in;
  std::vector<const at::Tensor*> tensors;
  for (const at::Tensor& t : in) tensors.push_back(&t);
  return synthetic_bases.inputs(in, synthetic_bases.bases(tensors, positions(in.size())));
}

}  // namespace aotgrad
