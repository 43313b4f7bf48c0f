// aotgrad: the default partition of a joint graph, subgraph extraction, what saved values cost.
#include "aotgrad/transforms/partition/partition.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "aotgrad/ir/error.h"
#include "aotgrad/ir/node_map.h"
#include "aotgrad/transforms/input_mutations.h"
#include "aotgrad/transforms/partition/min_cut.h"
#include "aotgrad/transforms/passes/dce.h"

namespace aotgrad {
namespace {

void flatten(const Arg& a, std::vector<Arg>& out) {
  if (a.is_list()) {
    for (auto& e : a.list) flatten(e, out);
  } else {
    out.push_back(a);
  }
}

// The copy of `n` in the subgraph; `user` (nullptr: the output) names the node that uses it.
Node* copy_of(const Node* n, const NodeMap<Node*>& map, const Node* user) {
  Node* const* c = map.find(n);
  AOTGRAD_CHECK(c != nullptr, "partition: ", user ? user->describe() : std::string("output"),
                " uses '", n->name(),
                "' which is on the other side of the partition and not saved");
  return *c;
}

// Points the nodes of `a` at their copies.
void remap_into(Arg& a, const NodeMap<Node*>& map, const Node* user) {
  if (a.is_node()) {
    a.node = copy_of(a.node, map, user);
  } else if (a.is_list()) {
    for (auto& e : a.list) remap_into(e, map, user);
  }
}

}  // namespace

std::unique_ptr<Graph> extract_subgraph(const Graph& g, const std::vector<const Node*>& nodes,
                                        const std::vector<const Node*>& inputs,
                                        const std::vector<Arg>& outputs, bool list_output) {
  auto out = std::make_unique<Graph>();
  NodeMap<Node*> map(inputs.size() + nodes.size());
  for (const Node* in : inputs) map.emplace(in, out->add_placeholder(in->name(), in->meta()));
  for (const Node* n : nodes) {
    if (map.contains(n)) continue;
    if (n->kind() == NodeKind::GetItem) {
      Node* input = copy_of(n->getitem_input(), map, n);
      map.emplace(n, out->add_getitem(input, n->getitem_index(), n->name()));
    } else {
      std::vector<Arg> args = n->args();
      for (auto& a : args) remap_into(a, map, n);
      Node* c = out->add_call_raw(*n->op(), std::move(args), n->given_mask(), n->meta(), n->name());
      c->info() = n->info();
      map.emplace(n, c);
    }
  }
  std::vector<Arg> outs = outputs;
  for (auto& a : outs) remap_into(a, map, nullptr);
  out->set_output(list_output ? Arg::of_list(std::move(outs)) : Arg::of_tuple(std::move(outs)));
  return out;
}

Partition default_partition(const JointGraph& joint) {
  const Graph& g = *joint.graph;
  std::vector<Arg> outs;
  flatten(g.output()->args()[0], outs);
  std::vector<Arg> fw_outs(outs.begin(), outs.begin() + joint.num_forward_outputs);
  std::vector<Arg> grads(outs.begin() + joint.num_forward_outputs, outs.end());

  // Nodes by position: the sets below are flags per position.
  std::vector<const Node*> order;
  order.reserve(g.size());
  NodeMap<uint32_t> pos(g.size());
  for (const Node* n : g.nodes()) {
    pos.emplace(n, static_cast<uint32_t>(order.size()));
    order.push_back(n);
  }
  auto at = [&](const Node* n) { return pos.at(n, "default partition"); };
  const size_t n_nodes = order.size();

  // Forward nodes: the ancestors of the forward outputs (placeholders of primals included). Inputs
  // come before their users, so one backward sweep finds them all.
  std::vector<bool> forward(n_nodes, false);
  for (auto& a : fw_outs) a.for_each_node([&](Node* n) { forward[at(n)] = true; });
  // And the impure calls (random ops) that read no tangent, used or not: dropping an unused one
  // would shift the numbers every later random op draws (fx's is_impure).
  std::vector<bool> reads_tangent(n_nodes, false);
  for (size_t i = joint.num_primals; i < n_nodes; ++i)
    if (order[i]->kind() == NodeKind::Placeholder) reads_tangent[i] = true;
  for (size_t i = 0; i < n_nodes; ++i) {
    const Node* n = order[i];
    if (n->kind() == NodeKind::Placeholder || n->kind() == NodeKind::Output) continue;
    for (auto& a : n->args())
      a.for_each_node([&](Node* m) {
        if (reads_tangent[at(m)]) reads_tangent[i] = true;
      });
    if (!reads_tangent[i] && n->kind() == NodeKind::Call && is_impure(*n)) forward[i] = true;
  }
  for (size_t i = n_nodes; i-- > 0;) {
    if (!forward[i]) continue;
    for (auto& a : order[i]->args()) a.for_each_node([&](Node* m) { forward[at(m)] = true; });
  }
  std::vector<const Node*> placeholders;
  for (const Node* p : g.placeholders()) placeholders.push_back(p);
  AOTGRAD_CHECK(placeholders.size() >= joint.num_primals, "partition: the joint graph has ",
                placeholders.size(), " placeholders, fewer than its ", joint.num_primals,
                " primals");
  std::vector<const Node*> primals(placeholders.begin(), placeholders.begin() + joint.num_primals);
  std::vector<const Node*> tangents(placeholders.begin() + joint.num_primals, placeholders.end());
  for (const Node* p : primals) forward[at(p)] = true;

  // A getitem of a forward tuple is forward too (so a tuple is saved through its elements).
  for (size_t i = 0; i < n_nodes; ++i)
    if (order[i]->kind() == NodeKind::GetItem && forward[at(order[i]->getitem_input())])
      forward[i] = true;
  // Saved: forward values (primals included) that a backward node or a gradient output uses.
  std::vector<bool> used_by_bw(n_nodes, false);
  for (size_t i = 0; i < n_nodes; ++i) {
    const Node* n = order[i];
    if (n->kind() == NodeKind::Placeholder || n->kind() == NodeKind::Output || forward[i]) continue;
    for (auto& a : n->args()) a.for_each_node([&](Node* m) { used_by_bw[at(m)] = true; });
  }
  for (auto& a : grads) a.for_each_node([&](Node* m) { used_by_bw[at(m)] = true; });
  std::vector<const Node*> saved;
  for (size_t i = 0; i < n_nodes; ++i)
    if (forward[i] && used_by_bw[i]) {
      const Node* n = order[i];
      AOTGRAD_CHECK(n->meta().kind != ValueMeta::Kind::Tuple, "partition: the backward uses tuple ",
                    n->describe(), " other than through getitem");
      saved.push_back(n);
    }
  // Tensors first, then symbolic scalars, as the min-cut (and PyTorch) order them (seed §13.16).
  std::stable_partition(saved.begin(), saved.end(),
                        [](const Node* n) { return n->meta().kind != ValueMeta::Kind::SymInt; });
  // Keep fw nodes in graph order.
  std::vector<const Node*> fw_ordered, bw_ordered;
  for (size_t i = 0; i < n_nodes; ++i) {
    const Node* n = order[i];
    if (n->kind() == NodeKind::Placeholder || n->kind() == NodeKind::Output) continue;
    (forward[i] ? fw_ordered : bw_ordered).push_back(n);
  }

  Partition p;
  p.num_forward_outputs = joint.num_forward_outputs;
  std::vector<Arg> fw_result = fw_outs;
  for (const Node* s : saved) {
    fw_result.push_back(Arg(const_cast<Node*>(s)));
    p.saved.push_back(s->name());
  }
  p.fw = extract_subgraph(g, fw_ordered, primals, fw_result, /*list_output=*/false);
  std::vector<const Node*> bw_inputs = saved;
  bw_inputs.insert(bw_inputs.end(), tangents.begin(), tangents.end());
  p.bw = extract_subgraph(g, bw_ordered, bw_inputs, grads, /*list_output=*/true);
  return p;
}

SavedSummary summarize_saved(const Graph& fw, const std::vector<std::string>& saved) {
  std::vector<int> input_roots = input_alias_roots(fw);
  std::vector<const Node*> storage = storage_roots(fw);
  std::unordered_map<const Node*, size_t> position;
  size_t i = 0;
  for (const Node* n : fw.nodes()) position[n] = i++;
  SavedSummary out;
  std::unordered_set<const Node*> counted;
  for (const std::string& name : saved) {
    const Node* n = fw.find(name);
    AOTGRAD_CHECK(n != nullptr, "summarize_saved: the forward graph has no value '", name, "'");
    size_t at = position.at(n);
    SavedValue v{name, value_nbytes(n->meta()), input_roots[at] >= 0};
    out.bytes += v.bytes;
    const Node* root = storage[at];
    if (!v.is_input && counted.insert(root).second)
      out.activation_bytes +=
          root->meta().is_tensor() ? root->meta().tensor.nbytes_hint() : v.bytes;
    out.values.push_back(std::move(v));
  }
  return out;
}

}  // namespace aotgrad
