// aotgrad: cond's derivative, a cond over the branches' backward graphs.
#include "aotgrad/transforms/cond_autograd.h"

#include "aotgrad/ops/known_ops.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/transforms/autograd.h"
#include "aotgrad/transforms/passes/dce.h"

namespace aotgrad {

std::unique_ptr<Graph> cond_branch_backward(const Graph& branch, const std::vector<bool>& needs) {
  JointGraph jg = build_joint(branch, needs);
  auto g = std::make_unique<Graph>();
  std::vector<Node*> branch_inputs = branch.placeholders();
  std::vector<Arg> primals;
  for (const Node* p : branch_inputs) {
    ValueMeta m = p->meta();
    m.tensor.requires_grad = false;
    primals.push_back(Arg(g->add_placeholder("arg" + std::to_string(primals.size()) + "_1", m)));
  }
  std::vector<const ValueMeta*> results = subgraph_result_metas(branch, "the branch");
  std::vector<Arg> inputs = primals;
  std::vector<Arg> tangents(jg.num_tangents);
  for (size_t k = 0; k < results.size(); ++k) {
    ValueMeta m = *results[k];
    m.tensor.strides = contiguous_strides(m.tensor.sizes);
    m.tensor.storage_offset = 0;
    m.tensor.requires_grad = false;
    Node* t = g->add_placeholder("arg" + std::to_string(branch_inputs.size() + k) + "_1", m);
    if (jg.tangent_of_output[k] >= 0) tangents[static_cast<size_t>(jg.tangent_of_output[k])] = t;
  }
  inputs.insert(inputs.end(), tangents.begin(), tangents.end());
  Arg out = inline_graph(*g, *jg.graph, inputs);
  const OpDef& zeros = ops::zeros_like();
  const OpDef& clone = ops::clone();
  std::vector<Arg> grads;
  for (size_t k = 0; k < needs.size(); ++k) {
    if (!needs[k]) continue;
    Arg gk = out.list.at(jg.num_forward_outputs + k);
    if (!gk.is_node()) {
      gk = Arg(g->add_call(zeros, {primals[k]}));
    } else if (const Node* n = gk.node; n->kind() != NodeKind::Call ||
                                        n->op()->storage_alias_of(0) >= 0 ||
                                        !n->tensor_meta().is_contiguous()) {
      // An input (the gradient of an operand the result is: the incoming gradient itself), a
      // view, or a strided result: a fresh contiguous copy, as a cond branch returns no input.
      gk = Arg(g->add_call(clone, {gk},
                           {{"memory_format", Arg::of_memory_format(MemoryFormat::Contiguous)}}));
    }
    grads.push_back(gk);
  }
  g->set_output(Arg::of_tuple(std::move(grads)));
  eliminate_dead_code(*g);
  return g;
}

void cond_backward(GradBuilder& b) {
  const Node& fw = b.node();
  const std::vector<Arg>& operands = fw.arg(3).list;
  std::vector<bool> needs(operands.size());
  bool any = false;
  for (size_t k = 0; k < operands.size(); ++k) {
    needs[k] = b.needs(3, k);
    any = any || needs[k];
  }
  if (!any) return;
  std::vector<Arg> args = operands;
  for (size_t i = 0; i < fw.meta().elems.size(); ++i) args.push_back(Arg(b.grad_or_zeros(i)));
  std::shared_ptr<const Graph> tbw = cond_branch_backward(*fw.arg(1).graph, needs);
  std::shared_ptr<const Graph> fbw = cond_branch_backward(*fw.arg(2).graph, needs);
  int n = free_cond_index(b.graph());
  Node* bw = b.call(
      aten_ops().get(kCond),
      {fw.arg(0), Arg::of_graph("true_graph_" + std::to_string(n), tbw),
       Arg::of_graph("false_graph_" + std::to_string(n), fbw), Arg::of_list(std::move(args))});
  int64_t j = 0;
  for (size_t k = 0; k < operands.size(); ++k)
    if (needs[k]) b.set(3, k, b.getitem(bw, j++));
}

}  // namespace aotgrad
