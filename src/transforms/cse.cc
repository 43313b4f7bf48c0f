// aotgrad: common subexpression elimination.
#include "aotgrad/transforms/cse.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "aotgrad/transforms/dce.h"
#include "graph_facts.h"

namespace aotgrad {

namespace {

void append_raw(std::string& key, const void* p, size_t n) {
  key.append(static_cast<const char*>(p), n);
}

// An exact, unambiguous key of an argument: kind, then its value (nodes by identity, floats by
// their bits: 1, 1.0 and True differ, as do 0.0 and -0.0).
void append_key(std::string& key, const Arg& a) {
  key += static_cast<char>(a.kind);
  switch (a.kind) {
    case Arg::Kind::None:
      break;
    case Arg::Kind::Node:
      append_raw(key, &a.node, sizeof a.node);
      break;
    case Arg::Kind::Float:
      append_raw(key, &a.f, sizeof a.f);
      break;
    case Arg::Kind::Str:
      key += std::to_string(a.str.size()) + ":" + a.str;
      break;
    case Arg::Kind::Device:
      key += static_cast<char>(a.device.type);
      append_raw(key, &a.device.index, sizeof a.device.index);
      break;
    case Arg::Kind::List:
    case Arg::Kind::Tuple:
      key += std::to_string(a.list.size()) + "[";
      for (const Arg& e : a.list) append_key(key, e);
      key += "]";
      break;
    default:  // Int, Bool, Dtype, Layout, MemoryFormat
      append_raw(key, &a.i, sizeof a.i);
      break;
  }
}

}  // namespace

bool CommonSubexpressionElimination::run(Graph& g) {
  changes_ = 0;
  GraphFacts facts(g);
  std::vector<Node*> order;
  for (Node* n : g.nodes()) order.push_back(n);
  std::unordered_map<std::string, Node*> seen;
  int64_t region = 0;
  for (Node* n : order) {
    if (n->kind() == NodeKind::Placeholder || n->kind() == NodeKind::Output) continue;
    if (n->kind() == NodeKind::Call && has_mutations(*n)) {
      ++region;  // reads before and after a write see different values
      continue;
    }
    if (n->kind() == NodeKind::Call && is_random(*n->op())) continue;
    if (facts.written(n)) continue;
    std::string key;
    if (n->kind() == NodeKind::GetItem) {
      key = "getitem:";
      append_key(key, n->arg(0));
      append_key(key, n->arg(1));
    } else {
      key = std::to_string(region) + ":";
      const OpDef* op = n->op();
      append_raw(key, &op, sizeof op);
      for (const Arg& a : n->args()) append_key(key, a);
    }
    auto [it, inserted] = seen.emplace(std::move(key), n);
    if (inserted) continue;
    Node* keep = it->second;
    if (!keep->meta().same_as(n->meta()) || !facts.can_merge(n, keep)) continue;
    facts.replace(g, n, keep);
    ++changes_;
  }
  return changes_ > 0;
}

}  // namespace aotgrad
