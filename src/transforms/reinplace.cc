// aotgrad: re-inplacing plan (see reinplace.h).
#include "aotgrad/transforms/reinplace.h"

#include <algorithm>
#include <climits>
#include <unordered_map>

#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

constexpr uint32_t kNeverReinplaced =
    kRandom | kNondeterministicSeeded | kCollective | kView | kInplace | kOutOfPlaceMutation;

// The in-place variant `op` may be replaced by, or nullptr.
const OpDef* inplace_variant_of(const OpDef& op) {
  if (op.inplace_variant.empty() || op.provided || op.wrapped || op.has_tag(kNeverReinplaced) ||
      !op.mutated_args().empty() || !op.undeclared_mutations.empty() ||
      op.schema.returns.size() != 1 || op.storage_alias_of(0) >= 0)
    return nullptr;
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

std::vector<const OpDef*> reinplace_plan(const Graph& g) {
  std::unordered_map<const Node*, int> pos;
  int k = 0;
  for (const Node* n : g.nodes()) pos[n] = k++;
  // The last node that reads each value; INT_MAX for the output.
  auto last_read = [&](const Node* v) {
    int last = -1;
    for (const Node* u : v->users())
      last = std::max(last, u->kind() == NodeKind::Output ? INT_MAX : pos.at(u));
    return last;
  };
  std::vector<const OpDef*> plan;
  plan.reserve(pos.size());
  std::unordered_map<const Node*, const Node*> root;  // value -> the node whose storage it lives in
  std::unordered_map<const Node*, int> storage_last;  // root -> last read of any value in it
  auto root_of = [&](const Arg& a, const Node* self) -> const Node* {
    if (!a.is_node()) return self;
    auto it = root.find(a.node);
    return it == root.end() ? a.node : it->second;
  };
  auto join = [&](const Node* n, const Node* r) {
    root[n] = r;
    int last = last_read(n);
    // The interpreter holds a multi-result call's tuple until its last getitem.
    if (n->kind() == NodeKind::GetItem) last = std::max(last, last_read(n->getitem_input()));
    int& s = storage_last[r];
    s = std::max(s, last);
  };
  for (const Node* n : g.nodes()) {
    const int i = pos.at(n);
    const OpDef* chosen = nullptr;
    const Node* r = n;
    if (n->kind() == NodeKind::Call) {
      int alias = n->op()->storage_alias_of(0);
      if (alias >= 0) r = root_of(n->args()[alias], n);
      const OpDef* v = alias < 0 ? inplace_variant_of(*n->op()) : nullptr;
      const Arg& self = n->args().empty() ? Arg() : n->args()[0];
      if (v && self.is_node() && n->meta().is_tensor() && self.node->meta().is_tensor() &&
          self.node->tensor_meta().same_layout(n->tensor_meta()) &&
          !self.node->tensor_meta().wrapped_number) {
        const Node* sr = root_of(self, self.node);
        bool ok = sr->kind() != NodeKind::Placeholder && storage_last.count(sr) &&
                  storage_last.at(sr) == i;
        for (size_t j = 1; ok && j < n->args().size(); ++j)
          n->args()[j].for_each_node([&](Node* u) {
            if (root_of(Arg(u), u) == sr) ok = false;
          });
        if (ok) {
          chosen = v;
          r = sr;
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

std::vector<bool> reinplaced_nodes(const std::vector<const OpDef*>& plan) {
  std::vector<bool> out(plan.size());
  for (size_t i = 0; i < plan.size(); ++i) out[i] = plan[i] != nullptr;
  return out;
}

std::string reinplace_text(const Graph& g, const std::vector<const OpDef*>& plan) {
  std::string out;
  size_t i = 0;
  for (const Node* n : g.nodes()) {
    const OpDef* v = i < plan.size() ? plan[i] : nullptr;
    ++i;
    if (!v) continue;
    out += n->name() + " = " + v->name.substr(0, v->name.find("::")) + "." + v->short_name +
           " into " + n->args()[0].node->name() + "\n";
  }
  return out;
}

}  // namespace aotgrad
