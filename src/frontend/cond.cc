// aotgrad: torch.cond for libtorch C++ functions -- each branch traced on the operands' fakes into
// the capture's graph, then outlined into its own subgraph (a C++ make_fx of cond).
#include "aotgrad/frontend/cond.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <unordered_set>

#include "aotgrad/ops/registry.h"
#include "aotgrad/providers/fake_tensor.h"

namespace aotgrad {
namespace {

void check_pred(const at::Tensor& pred) {
  if (!pred.defined() || pred.scalar_type() != at::kBool || pred.numel() != 1)
    throw Error(
        "cond: pred must be a bool tensor with one element (torch.cond: Expected pred to "
        "be bool or single-element tensor), got " +
        (pred.defined()
             ? std::string(pred.toString()) + " of " + std::to_string(pred.numel()) + " elements"
             : std::string("an undefined tensor")));
}

Node* last_node(const Graph& g) {
  Node* last = nullptr;
  for (Node* n : g.nodes()) last = n;
  return last;
}

// One branch traced into the capture's graph: the nodes it recorded (after `marker`), the nodes
// of its results, and the nodes of the graph it read that are not operands (free variables).
struct TracedBranch {
  std::vector<Node*> body;
  std::vector<Node*> results;
};

TracedBranch trace_branch(FakeTrace& trace, const TensorFunction& fn, const char* what,
                          const std::vector<at::Tensor>& operands,
                          const std::vector<Node*>& operand_nodes) {
  Graph& g = trace.graph();
  Node* marker = last_node(g);
  std::vector<at::Tensor> results = fn(operands);
  TracedBranch b;
  for (size_t i = 0; i < operands.size(); ++i)
    if (trace.node_of(operands[i]) != operand_nodes[i])
      throw Error(std::string("cond: ") + what + " mutates operand " + std::to_string(i) +
                  ": One of torch.cond branch might be modifying the input!");
  for (size_t i = 0; i < results.size(); ++i) {
    Node* n = results[i].defined() ? trace.node_of(results[i]) : nullptr;
    if (!n)
      throw Error(std::string("cond: result ") + std::to_string(i) + " of " + what +
                  " is not computed from the operands (a branch returns tensors of the function)");
    b.results.push_back(n);
  }
  for (Node* n = marker ? marker->next() : nullptr; n; n = n->next()) b.body.push_back(n);
  if (!marker)
    for (Node* n : g.nodes()) b.body.push_back(n);
  return b;
}

// The nodes the body uses that it does not compute, in order of first use, other than `known`.
void free_nodes(const TracedBranch& b, std::vector<Node*>& known) {
  std::unordered_set<const Node*> inside(b.body.begin(), b.body.end());
  auto visit = [&](Node* used) {
    if (inside.count(used) || std::find(known.begin(), known.end(), used) != known.end()) return;
    known.push_back(used);
  };
  for (const Node* n : b.body)
    for (const Arg& a : n->args()) a.for_each_node(visit);
  for (Node* r : b.results)
    if (!inside.count(r)) visit(r);
}

}  // namespace

std::vector<at::Tensor> cond(const at::Tensor& pred, const TensorFunction& true_fn,
                             const TensorFunction& false_fn,
                             const std::vector<at::Tensor>& operands) {
  AOTGRAD_CHECK(true_fn && false_fn, "cond: a branch function is empty");
  check_pred(pred);
  FakeTrace* trace = FakeTrace::active();
  Node* pred_node = trace && FakeTrace::is_fake(pred) ? trace->node_of(pred) : nullptr;
  if (!pred_node) {
    // Eager, or a constant predicate under capture: the selected branch runs (is traced) inline.
    bool take_true = false;
    {
      c10::NoGradGuard no_grad;
      take_true = pred.item<bool>();
    }
    return take_true ? true_fn(operands) : false_fn(operands);
  }
  Graph& g = trace->graph();
  std::vector<Node*> operand_nodes;
  for (size_t i = 0; i < operands.size(); ++i) {
    Node* n = operands[i].defined() ? trace->node_of(operands[i]) : nullptr;
    if (!n)
      throw Error("cond: operand " + std::to_string(i) +
                  " is not a tensor of the captured function (an input or a value computed from "
                  "one)");
    operand_nodes.push_back(n);
  }
  // Both branches record into the graph; their nodes move into the subgraphs below.
  TracedBranch t = trace_branch(*trace, true_fn, "true_fn", operands, operand_nodes);
  TracedBranch f = trace_branch(*trace, false_fn, "false_fn", operands, operand_nodes);
  // The true branch's nodes come before the false branch's: its body ends where the false one's
  // starts.
  std::unordered_set<const Node*> in_false(f.body.begin(), f.body.end());
  t.body.erase(
      std::remove_if(t.body.begin(), t.body.end(), [&](Node* n) { return in_false.count(n) > 0; }),
      t.body.end());
  std::vector<Node*> inputs = operand_nodes;
  free_nodes(t, inputs);
  free_nodes(f, inputs);
  std::vector<std::string> names;
  for (size_t i = 0; i < inputs.size(); ++i) names.push_back("arg" + std::to_string(i) + "_1");
  std::shared_ptr<const Graph> tg = outline_graph(inputs, names, t.body, t.results);
  std::shared_ptr<const Graph> fg = outline_graph(inputs, names, f.body, f.results);
  // The branches' nodes leave the graph, last first (users before what they use).
  for (auto* body : {&f.body, &t.body})
    for (auto it = body->rbegin(); it != body->rend(); ++it) {
      if (!(*it)->users().empty())
        throw Error("cond: " + (*it)->describe() +
                    " of a branch is used outside it (a branch leaks a tensor it computed)");
      g.erase(*it);
    }
  int k = free_cond_index(g);
  std::string tn = "true_graph_" + std::to_string(k), fn = "false_graph_" + std::to_string(k);
  std::vector<Arg> ops;
  for (Node* n : inputs) ops.push_back(Arg(n));
  Node* call = g.add_call(
      aten_ops().get(kCond),
      {Arg(pred_node), Arg::of_graph(tn, tg), Arg::of_graph(fn, fg), Arg::of_list(std::move(ops))});
  bool requires_grad = false;
  if (c10::GradMode::is_enabled())
    for (const at::Tensor& o : operands) requires_grad = requires_grad || o.requires_grad();
  std::vector<at::Tensor> out;
  for (size_t i = 0; i < call->meta().elems.size(); ++i)
    out.push_back(trace->fake(g.add_getitem(call, static_cast<int64_t>(i)), requires_grad));
  return out;
}

}  // namespace aotgrad
