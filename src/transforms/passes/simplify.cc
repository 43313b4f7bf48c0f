// aotgrad: algebraic simplification.
#include "aotgrad/transforms/passes/simplify.h"

#include <vector>

#include "aotgrad/ops/known_ops.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/transforms/passes/dce.h"
#include "graph_facts.h"

namespace aotgrad {

namespace {

// A pure call whose result is a view of its first argument (an alias in ATen: _unsafe_view too).
bool is_view_call(const Node& n) {
  if (n.kind() != NodeKind::Call || is_impure(n) || !n.meta().is_tensor()) return false;
  if (n.args().empty() || !n.arg(0).is_node()) return false;
  return n.op()->storage_alias_of(0) == 0;
}

// A view that stops gradients (detach): an alias whose result is not differentiable.
bool is_detach(const Node& n) {
  return n.kind() == NodeKind::Call && n.op()->non_differentiable &&
         n.op()->return_alias_of(0) == 0;
}

const OpDef& clone_op() { return ops::clone(); }

// The value earlier in `n`'s chain of views that `n` may become: the deepest one with n's
// layout that GraphFacts accepts, never dropping a detach unless the value kept is detached.
Node* same_view_ancestor(const Node& n, const GraphFacts& facts) {
  std::vector<Node*> chain;  // chain[0] = n's input, then its input, ... down to a non-view
  Node* cur = n.arg(0).node;
  while (true) {
    chain.push_back(cur);
    if (!is_view_call(*cur)) break;
    cur = cur->arg(0).node;
  }
  // detached_below[i]: chain[i] or a value below it is a detach.
  std::vector<bool> detached_below(chain.size());
  bool seen = false;
  for (size_t i = chain.size(); i-- > 0;) {
    seen = seen || is_detach(*chain[i]);
    detached_below[i] = seen;
  }
  bool dropped_detach = is_detach(n);  // among n, chain[0], ..., chain[i-1]
  Node* best = nullptr;
  for (size_t i = 0; i < chain.size(); ++i) {
    if ((!dropped_detach || detached_below[i]) && facts.can_replace(&n, chain[i])) best = chain[i];
    dropped_detach = dropped_detach || is_detach(*chain[i]);
  }
  return best;
}

}  // namespace

bool AlgebraicSimplification::run(Graph& g) {
  changes_ = 0;
  GraphFacts facts(g);
  bool functional = is_functional(g);
  std::vector<Node*> order;
  for (Node* n : g.nodes()) order.push_back(n);
  for (Node* n : order) {
    if (n->kind() != NodeKind::Call || is_impure(*n)) continue;
    Node* src = identity_operand(*n, literal_value);
    if (src && !facts.can_replace(n, src)) src = nullptr;
    if (!src && is_view_call(*n)) src = same_view_ancestor(*n, facts);
    if (!src && functional && n->op() == &clone_op() && n->arg(0).is_node() &&
        facts.can_replace(n, n->arg(0).node))
      src = n->arg(0).node;
    if (!src) continue;
    facts.replace(g, n, src);
    ++changes_;
  }
  return changes_ > 0;
}

}  // namespace aotgrad
