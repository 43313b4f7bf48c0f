// aotgrad: constant folding of metadata queries and uniform-value factories.
#include "aotgrad/transforms/passes/constant_fold.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string_view>
#include <vector>

#include "aotgrad/transforms/passes/dce.h"
#include "graph_facts.h"

namespace aotgrad {

namespace {

Arg substituted(const Arg& a, const Node* from, int64_t value) {
  if (a.is_node() && a.node == from) return Arg::of_int(value);
  if (a.is_list()) {
    Arg out = a;
    for (Arg& e : out.list) e = substituted(e, from, value);
    return out;
  }
  return a;
}

bool mentions(const Arg& a, const Node* n) {
  bool found = false;
  a.for_each_node([&](const Node* m) { found = found || m == n; });
  return found;
}

// A concrete SymInt result becomes an int in its users' arguments. Returns whether any use went.
bool fold_sym_int(Graph& g, const GraphFacts& facts, Node* n) {
  const ValueMeta& m = n->meta();
  if (m.kind != ValueMeta::Kind::SymInt || !m.sym.is_concrete()) return false;
  // A tensor whose metadata a call changes (t_ on it) is read at a point the IR does not pin.
  bool stable = true;
  for (const Arg& a : n->args())
    a.for_each_node([&](const Node* t) { stable = stable && !facts.written(t); });
  if (!stable) return false;
  int64_t value = m.sym.value();
  std::vector<Node*> users = n->users();
  std::sort(users.begin(), users.end());
  users.erase(std::unique(users.begin(), users.end()), users.end());
  bool folded = false;
  for (Node* u : users) {
    if (u->kind() != NodeKind::Call) continue;  // the output keeps the SymInt
    const FunctionSchema& schema = u->op()->schema;
    for (size_t i = 0; i < u->args().size(); ++i) {
      if (!mentions(u->arg(i), n)) continue;
      Arg replacement = substituted(u->arg(i), n, value);
      if (!check_arg_type(schema.args[i].type, replacement).empty()) continue;
      u->set_arg(i, std::move(replacement), u->arg_given(i));
      folded = true;
    }
  }
  if (folded && n->users().empty()) g.erase(n);
  return folded;
}

// The value every element of `a` has, when it is a factory of a uniform 0 or 1 (or a view, clone
// or copy of one) whose storage nothing writes. Any dtype holds 0 and 1 exactly; a -0.0 stays
// -0.0 only through floating dtypes.
std::optional<double> uniform_value(const GraphFacts& facts, const Arg& a) {
  if (!a.is_node()) return std::nullopt;
  const Node* n = a.node;
  bool floating = true;
  for (int depth = 0; depth < 64; ++depth) {
    if (n->kind() != NodeKind::Call || is_impure(*n) || facts.written(n)) return std::nullopt;
    if (!n->meta().is_tensor()) return std::nullopt;
    floating = floating && is_floating(n->meta().tensor.dtype);
    const OpDef& op = *n->op();
    std::optional<double> v;
    if (op.fill_value) v = op.fill_arg < 0 ? op.fill_value : literal_value(n->arg(op.fill_arg));
    if (v) {
      if (*v == 1.0) return 1.0;
      if (*v == 0.0) return floating && std::signbit(*v) ? -0.0 : 0.0;
      return std::nullopt;
    }
    bool passes_value = op.storage_alias_of(0) == 0 || op.copies_value;
    if (!passes_value || !n->arg(0).is_node()) return std::nullopt;
    n = n->arg(0).node;
  }
  return std::nullopt;
}

}  // namespace

bool ConstantFolding::run(Graph& g) {
  changes_ = 0;
  GraphFacts facts(g);
  std::vector<Node*> order;
  for (Node* n : g.nodes()) order.push_back(n);
  auto value_of = [&](const Arg& a) { return uniform_value(facts, a); };
  for (Node* n : order) {
    if (n->kind() != NodeKind::Call || is_impure(*n)) continue;
    if (fold_sym_int(g, facts, n)) {
      ++changes_;
      continue;
    }
    Node* src = identity_operand(*n, value_of);
    if (src && facts.can_replace(n, src)) {
      facts.replace(g, n, src);
      ++changes_;
    }
  }
  return changes_ > 0;
}

}  // namespace aotgrad
