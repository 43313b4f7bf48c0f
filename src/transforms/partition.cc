// aotgrad: the default partition of a joint graph and subgraph extraction.
#include "aotgrad/transforms/partition.h"

#include <unordered_map>
#include <unordered_set>

#include "aotgrad/ir/error.h"

namespace aotgrad {
namespace {

void flatten(const Arg& a, std::vector<Arg>& out) {
  if (a.is_list()) {
    for (auto& e : a.list) flatten(e, out);
  } else {
    out.push_back(a);
  }
}

Arg remap(const Arg& a, const std::unordered_map<const Node*, Node*>& map, const Node* user) {
  if (a.is_node()) {
    auto it = map.find(a.node);
    AOTGRAD_CHECK(it != map.end(), "partition: ", user ? user->describe() : std::string("output"), " uses '",
                  a.node->name(), "' which is on the other side of the partition and not saved");
    return Arg(it->second);
  }
  if (a.is_list()) {
    Arg out = a;
    for (auto& e : out.list) e = remap(e, map, user);
    return out;
  }
  return a;
}

}  // namespace

std::unique_ptr<Graph> extract_subgraph(const Graph& g, const std::vector<const Node*>& nodes,
                                        const std::vector<const Node*>& inputs, const std::vector<Arg>& outputs,
                                        bool list_output) {
  auto out = std::make_unique<Graph>();
  std::unordered_map<const Node*, Node*> map;
  for (const Node* in : inputs) {
    ValueMeta m = in->meta();
    map[in] = out->add_placeholder(in->name(), m);
  }
  for (const Node* n : nodes) {
    if (map.count(n)) continue;
    if (n->kind() == NodeKind::GetItem) {
      map[n] = out->add_getitem(map.at(n->getitem_input()), n->getitem_index(), n->name());
    } else {
      std::vector<Arg> args;
      for (auto& a : n->args()) args.push_back(remap(a, map, n));
      Node* c = out->add_call_raw(*n->op(), std::move(args), n->given_mask(), n->meta(), n->name());
      c->info() = n->info();
      map[n] = c;
    }
  }
  std::vector<Arg> outs;
  for (auto& a : outputs) outs.push_back(remap(a, map, nullptr));
  out->set_output(list_output ? Arg::of_list(std::move(outs)) : Arg::of_tuple(std::move(outs)));
  return out;
}

Partition default_partition(const JointGraph& joint) {
  const Graph& g = *joint.graph;
  std::vector<Arg> outs;
  flatten(g.output()->args()[0], outs);
  std::vector<Arg> fw_outs(outs.begin(), outs.begin() + joint.num_forward_outputs);
  std::vector<Arg> grads(outs.begin() + joint.num_forward_outputs, outs.end());

  // Forward nodes: the ancestors of the forward outputs (placeholders of primals included).
  std::unordered_set<const Node*> forward;
  std::vector<const Node*> stack;
  for (auto& a : fw_outs) a.for_each_node([&](Node* n) { stack.push_back(n); });
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (!forward.insert(n).second) continue;
    for (auto& a : n->args()) a.for_each_node([&](Node* m) { stack.push_back(m); });
  }
  std::vector<const Node*> placeholders;
  for (const Node* p : g.placeholders()) placeholders.push_back(p);
  std::vector<const Node*> primals(placeholders.begin(), placeholders.begin() + joint.num_primals);
  std::vector<const Node*> tangents(placeholders.begin() + joint.num_primals, placeholders.end());
  for (const Node* p : primals) forward.insert(p);

  // A getitem of a forward tuple is forward too (so a tuple is saved through its elements).
  for (const Node* n : g.nodes())
    if (n->kind() == NodeKind::GetItem && forward.count(n->getitem_input())) forward.insert(n);
  // Saved: forward values (primals included) that a backward node or a gradient output uses.
  std::unordered_set<const Node*> used_by_bw;
  for (const Node* n : g.nodes()) {
    if (n->kind() == NodeKind::Placeholder || n->kind() == NodeKind::Output || forward.count(n)) continue;
    for (auto& a : n->args()) a.for_each_node([&](Node* m) { used_by_bw.insert(m); });
  }
  for (auto& a : grads) a.for_each_node([&](Node* m) { used_by_bw.insert(m); });
  std::vector<const Node*> saved;
  for (const Node* n : g.nodes())
    if (forward.count(n) && used_by_bw.count(n)) {
      AOTGRAD_CHECK(n->meta().kind != ValueMeta::Kind::Tuple, "partition: the backward uses tuple ", n->describe(),
                    " other than through getitem");
      saved.push_back(n);
    }
  // Keep fw nodes in graph order.
  std::vector<const Node*> fw_ordered, bw_ordered;
  for (const Node* n : g.nodes()) {
    if (n->kind() == NodeKind::Placeholder || n->kind() == NodeKind::Output) continue;
    (forward.count(n) ? fw_ordered : bw_ordered).push_back(n);
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

}  // namespace aotgrad
