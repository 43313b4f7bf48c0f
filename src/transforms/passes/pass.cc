// aotgrad: the pass interface's helpers for passes that build a new graph: assign_graph and
// copy_in_order.
#include "aotgrad/transforms/passes/pass.h"

#include <unordered_map>

#include "arg_remap.h"

namespace aotgrad {

std::unique_ptr<Graph> copy_in_order(const Graph& g, const std::vector<const Node*>& body) {
  auto out = std::make_unique<Graph>();
  out->signature = g.signature;
  std::unordered_map<const Node*, Node*> map;
  for (const Node* p : g.placeholders()) {
    Node* c = out->add_placeholder(p->name(), p->meta());
    c->info() = p->info();
    map[p] = c;
  }
  for (const Node* n : body) {
    Node* c = nullptr;
    if (n->kind() == NodeKind::GetItem) {
      c = out->add_getitem(map.at(n->getitem_input()), n->getitem_index(), n->name());
    } else {
      std::vector<Arg> args;
      args.reserve(n->args().size());
      for (const Arg& a : n->args()) args.push_back(remap(a, map));
      c = out->add_call_raw(*n->op(), std::move(args), n->given_mask(), n->meta(), n->name());
    }
    c->mutable_meta() = n->meta();
    c->info() = n->info();
    map[n] = c;
  }
  if (g.output()) {
    Node* o = out->set_output(remap(g.output()->args()[0], map));
    o->mutable_meta() = g.output()->meta();
    o->info() = g.output()->info();
  }
  return out;
}

void assign_graph(Graph& dst, const Graph& src) {
  std::vector<Node*> old;
  for (Node* n : dst.nodes()) old.push_back(n);
  for (auto it = old.rbegin(); it != old.rend(); ++it) dst.erase(*it);
  dst.set_insertion_point(nullptr);
  dst.signature = src.signature;
  std::unordered_map<const Node*, Node*> map;
  for (const Node* n : src.nodes()) {
    Node* c = nullptr;
    switch (n->kind()) {
      case NodeKind::Placeholder: c = dst.add_placeholder(n->name(), n->meta()); break;
      case NodeKind::GetItem:
        c = dst.add_getitem(map.at(n->getitem_input()), n->getitem_index(), n->name());
        break;
      case NodeKind::Call: {
        std::vector<Arg> args;
        for (const Arg& a : n->args()) args.push_back(remap(a, map));
        c = dst.add_call_raw(*n->op(), std::move(args), n->given_mask(), n->meta(), n->name());
        break;
      }
      case NodeKind::Output: c = dst.set_output(remap(n->args()[0], map)); break;
    }
    c->mutable_meta() = n->meta();
    c->info() = n->info();
    map[n] = c;
  }
}

}  // namespace aotgrad
