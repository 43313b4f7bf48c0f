// aotgrad: re-inplacing plan (see reinplace.h).
#include "aotgrad/transforms/passes/reinplace.h"

#include <algorithm>
#include <climits>

#include "aotgrad/ir/node_map.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

constexpr uint32_t kNeverReinplaced = kRandom | kNondeterministicSeeded | kCollective | kEffectful |
                                      kView | kInplace | kOutOfPlaceMutation;

// Whether a call of `op` may write its result into an argument at all.
bool may_reinplace(const OpDef& op) {
  return !op.provided && !op.wrapped && !op.has_tag(kNeverReinplaced) &&
         op.mutated_args().empty() && op.undeclared_mutations.empty() &&
         op.schema.returns.size() == 1 && op.storage_alias_of(0) < 0;
}

// The in-place variant `op` may be replaced by, or nullptr.
const OpDef* inplace_variant_of(const OpDef& op) {
  if (op.inplace_variant.empty() || !may_reinplace(op)) return nullptr;
  const OpDef* v = aten_ops().find_known(op.inplace_variant);
  if (!v || v->provided || v->inplace_value || v->has_tag(kView | kRandom | kCollective) ||
      v->mutated_args() != std::vector<int>{0} || !v->undeclared_mutations.empty() ||
      v->schema.returns.size() != 1 || v->return_alias_of(0) != 0 ||
      v->schema.args.size() != op.schema.args.size())
    return nullptr;
  for (size_t i = 0; i < op.schema.args.size(); ++i) {
    const SchemaArg& a = op.schema.args[i];
    const SchemaArg& b = v->schema.args[i];
    if (a.name != b.name || a.type.to_string() != b.type.to_string() ||
        a.kwarg_only != b.kwarg_only)
      return nullptr;
  }
  if (op.schema.args.empty() || op.schema.args[0].type.base != BaseType::Tensor ||
      op.schema.args[0].type.list || op.schema.args[0].type.optional)
    return nullptr;
  return v;
}

}  // namespace

bool may_write_out(const OpDef& op) { return op.has_tag(kPointwise) && may_reinplace(op); }

bool may_write_out_over_first(const OpDef& op) {
  return may_reinplace(op) && op.writes_out_over_first;
}

std::vector<ReinplaceChoice> reinplace_plan(const Graph& g) {
  NodeMap<int> pos(g.size());
  int k = 0;
  for (const Node* n : g.nodes()) pos.emplace(n, k++);
  // The last node that reads each value; INT_MAX for the output.
  auto last_read = [&](const Node* v) {
    int last = -1;
    for (const Node* u : v->users())
      last = std::max(last, u->kind() == NodeKind::Output ? INT_MAX : pos.at(u, "reinplace"));
    return last;
  };
  std::vector<ReinplaceChoice> plan;
  plan.reserve(pos.size());
  NodeMap<const Node*> root(g.size());  // value -> the node whose storage it lives in
  NodeMap<int> storage_last(g.size());  // root -> last read of any value in it
  auto root_of = [&](const Arg& a, const Node* self) -> const Node* {
    if (!a.is_node()) return self;
    const Node* const* r = root.find(a.node);
    return r ? *r : a.node;
  };
  auto join = [&](const Node* n, const Node* r) {
    root[n] = r;
    int last = last_read(n);
    // The interpreter holds a multi-result call's tuple until its last getitem.
    if (n->kind() == NodeKind::GetItem) last = std::max(last, last_read(n->getitem_input()));
    int& s = storage_last[r];
    s = std::max(s, last);
  };
  // Whether call n (at position i) may write its result into argument k's storage.
  auto writable = [&](const Node* n, int i, size_t k) -> const Node* {
    const Arg& a = n->args()[k];
    if (!a.is_node() || !a.node->meta().is_tensor() || !n->meta().is_tensor()) return nullptr;
    const TensorMeta& m = a.node->tensor_meta();
    if (m.wrapped_number || !m.same_layout(n->tensor_meta())) return nullptr;
    const Node* r = root_of(a, a.node);
    const int* last = storage_last.find(r);
    if (r->kind() == NodeKind::Placeholder || !last || *last != i) return nullptr;
    bool alone = true;
    for (size_t j = 0; alone && j < n->args().size(); ++j)
      if (j != k)
        n->args()[j].for_each_node([&](Node* u) {
          if (root_of(Arg(u), u) == r) alone = false;
        });
    return alone ? r : nullptr;
  };
  for (const Node* n : g.nodes()) {
    const int i = pos.at(n, "reinplace");
    ReinplaceChoice chosen;
    const Node* r = n;
    if (n->kind() == NodeKind::Call) {
      int alias = n->op()->storage_alias_of(0);
      if (alias >= 0) r = root_of(n->args()[alias], n);
      if (const OpDef* v = inplace_variant_of(*n->op())) {
        if (const Node* into = writable(n, i, 0)) {
          chosen = {0, v};
          r = into;
        }
      }
      if (!chosen && may_write_out_over_first(*n->op())) {
        if (const Node* into = writable(n, i, 0)) {
          chosen = {0, nullptr};
          r = into;
        }
      }
      if (!chosen && may_write_out(*n->op())) {
        for (size_t k = 0; k < n->args().size() && !chosen; ++k)
          if (const Node* into = writable(n, i, k)) {
            chosen = {static_cast<int>(k), nullptr};
            r = into;
          }
      }
    } else if (n->kind() == NodeKind::GetItem) {
      const Node* src = n->getitem_input();
      if (src->kind() == NodeKind::Call) {
        const OpDef* op = src->op();
        size_t ret = op->schema.returns.size() == 1 ? 0 : static_cast<size_t>(n->getitem_index());
        int alias = op->storage_alias_of(ret);
        if (alias >= 0) r = root_of(src->args()[alias], n);
      }
    }
    if (n->kind() != NodeKind::Output) join(n, r);
    plan.push_back(chosen);
  }
  return plan;
}

std::vector<int> reinplaced_args(const std::vector<ReinplaceChoice>& plan) {
  std::vector<int> out(plan.size());
  for (size_t i = 0; i < plan.size(); ++i) out[i] = plan[i].arg;
  return out;
}

std::string reinplace_text(const Graph& g, const std::vector<ReinplaceChoice>& plan) {
  auto torch_name = [](const OpDef& op) {
    return op.name.substr(0, op.name.find("::")) + "." + op.short_name;
  };
  std::string out;
  size_t i = 0;
  for (const Node* n : g.nodes()) {
    ReinplaceChoice c = i < plan.size() ? plan[i] : ReinplaceChoice{};
    ++i;
    if (!c) continue;
    const std::string& into = n->args()[c.arg].node->name();
    out += n->name() + " = " +
           (c.inplace ? torch_name(*c.inplace) + " into " : torch_name(*n->op()) + " out= ") +
           into + "\n";
  }
  return out;
}

}  // namespace aotgrad
