// aotgrad: common subexpression elimination.
#include "aotgrad/transforms/passes/cse.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "aotgrad/ir/name_table.h"
#include "aotgrad/transforms/passes/dce.h"
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
    case Arg::Kind::None: break;
    case Arg::Kind::Node: append_raw(key, &a.node, sizeof a.node); break;
    case Arg::Kind::Float: append_raw(key, &a.f, sizeof a.f); break;
    case Arg::Kind::Str: key += std::to_string(a.str.size()) + ":" + a.str; break;
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
    case Arg::Kind::Op: append_raw(key, &a.op, sizeof a.op); break;
    case Arg::Kind::Graph: {  // the same subgraph object: equal calls of one branch pair
      const Graph* g = a.graph.get();
      append_raw(key, &g, sizeof g);
      key += std::to_string(a.str.size()) + ":" + a.str;
      break;
    }
    default:  // Int, Bool, Dtype, Layout, MemoryFormat
      append_raw(key, &a.i, sizeof a.i);
      break;
  }
}

// The keys of the calls seen so far, copied into blocks that never move (the table keeps views).
class KeyArena {
 public:
  std::string_view store(std::string_view key) {
    if (blocks_.empty() || used_ + key.size() > kBlock) {
      blocks_.push_back(std::make_unique<char[]>(std::max(kBlock, key.size())));
      used_ = 0;
    }
    char* at = blocks_.back().get() + used_;
    std::memcpy(at, key.data(), key.size());
    used_ += key.size();
    return {at, key.size()};
  }

 private:
  static constexpr size_t kBlock = 1 << 16;
  std::vector<std::unique_ptr<char[]>> blocks_;
  size_t used_ = 0;
};

// The CSE sweep: merges each call into the first equal one, or with `dry_run` stops at the first
// merge it would make and changes nothing. Returns the merges made (dry: 0 or 1).
int64_t merge_common_subexpressions(Graph& g, bool dry_run) {
  int64_t merges = 0;
  GraphFacts facts(g);
  std::vector<Node*> order;
  for (Node* n : g.nodes()) order.push_back(n);
  // Key -> the first node with it; the key text is built in one reused buffer and copied into the
  // arena only when new.
  NameTable seen;
  seen.reserve(order.size());
  KeyArena arena;
  std::string key;
  int64_t region = 0;
  for (Node* n : order) {
    if (n->kind() == NodeKind::Placeholder || n->kind() == NodeKind::Output) continue;
    if (n->kind() == NodeKind::Call && has_mutations(*n)) {
      ++region;  // reads before and after a write see different values
      continue;
    }
    if (n->kind() == NodeKind::Call &&
        (is_random(*n->op()) || is_collective(*n->op()) || is_effectful(*n->op())))
      continue;
    if (facts.written(n)) continue;
    key.clear();
    if (n->kind() == NodeKind::GetItem) {
      key = "getitem:";
      append_key(key, n->arg(0));
      append_key(key, n->arg(1));
    } else {
      key += std::to_string(region);
      key += ':';
      const OpDef* op = n->op();
      append_raw(key, &op, sizeof op);
      for (const Arg& a : n->args()) append_key(key, a);
    }
    Node* const* found = seen.find(key);
    if (!found) {
      seen.insert(arena.store(key), n);
      continue;
    }
    Node* keep = *found;
    if (!keep->meta().same_as(n->meta()) || !facts.can_merge(n, keep)) continue;
    if (dry_run) return 1;
    facts.replace(g, n, keep);
    ++merges;
  }
  return merges;
}

}  // namespace

bool CommonSubexpressionElimination::run(Graph& g) {
  changes_ = merge_common_subexpressions(g, /*dry_run=*/false);
  return changes_ > 0;
}

bool has_common_subexpressions(const Graph& g) {
  // The dry run writes nothing.
  return merge_common_subexpressions(const_cast<Graph&>(g), /*dry_run=*/true) > 0;
}

}  // namespace aotgrad
