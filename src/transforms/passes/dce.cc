// aotgrad: dead code elimination and the purity predicates.
#include "aotgrad/transforms/passes/dce.h"

#include <vector>

namespace aotgrad {

bool has_mutations(const Node& n) {
  return n.kind() == NodeKind::Call && !n.op()->written_args(n.args()).empty();
}

bool is_random(const OpDef& op) {
  return op.has_tag(kRandom) || op.has_tag(kNondeterministicSeeded);
}

bool is_collective(const OpDef& op) { return op.has_tag(kCollective); }

bool is_effectful(const OpDef& op) { return op.has_tag(kEffectful); }

bool is_impure(const Node& n) {
  switch (n.kind()) {
    case NodeKind::Placeholder:
    case NodeKind::Output: return true;
    case NodeKind::GetItem: return false;
    case NodeKind::Call:
      return has_mutations(n) || is_random(*n.op()) || is_collective(*n.op()) ||
             is_effectful(*n.op());
  }
  return true;
}

bool is_functional(const Graph& g) {
  for (const Node* n : g.nodes())
    if (has_mutations(*n)) return false;
  return true;
}

bool DeadCodeElimination::run(Graph& g) {
  std::vector<Node*> order;
  for (Node* n : g.nodes()) order.push_back(n);
  changes_ = 0;
  // Users come after their inputs: one reverse sweep removes whole dead chains.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* n = *it;
    if (!n->users().empty() || is_impure(*n)) continue;
    g.erase(n);
    ++changes_;
  }
  return changes_ > 0;
}

bool has_dead_code(const Graph& g) {
  for (const Node* n : g.nodes())
    if (n->users().empty() && !is_impure(*n)) return true;
  return false;
}

int eliminate_dead_code(Graph& g) {
  DeadCodeElimination dce;
  dce.run(g);
  return static_cast<int>(dce.changes());
}

}  // namespace aotgrad
