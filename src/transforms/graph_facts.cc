// aotgrad (internal): storage, mutation and escape facts for the rewriting passes.
#include "graph_facts.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "aotgrad/transforms/dce.h"

namespace aotgrad {

namespace {

// The argument whose storage a call's result lives in, or -1 for a fresh result.
int aliased_arg(const Node& n) {
  const OpDef& op = *n.op();
  int a = op.return_alias_of(0);
  if (a < 0 && op.name == "aten::_unsafe_view") a = 0;  // a view ATen does not annotate
  if (a < 0 || !n.arg(static_cast<size_t>(a)).is_node()) return -1;
  return a;
}

void for_each_written(const Node& n, const std::function<void(const Node*)>& f) {
  const OpDef& op = *n.op();
  for (size_t i = 0; i < op.schema.args.size(); ++i)
    if (op.schema.args[i].alias.is_write) n.arg(i).for_each_node(f);
  if (!op.undeclared_mutations.empty() && has_mutations(n))
    for (int i : op.undeclared_mutations) n.arg(static_cast<size_t>(i)).for_each_node(f);
}

// reshape, contiguous, flatten (CompositeImplicitAutograd): a view when they can, else a copy.
// Their storage is taken as their input's (a write through them may reach it), but two of them
// are not taken to share it (their results may be distinct copies).
bool may_copy(const Node& n) {
  return n.kind() == NodeKind::Call && n.op()->has_tag(kCompositeImplicit) &&
         n.op()->return_alias_of(0) >= 0;
}

}  // namespace

GraphFacts::GraphFacts(const Graph& g) {
  for (const Node* n : g.nodes()) {
    position_[n] = position_.size();
    switch (n->kind()) {
      case NodeKind::Placeholder:
        inputs_.insert(n);
        break;
      case NodeKind::Call: {
        int a = aliased_arg(*n);
        if (a >= 0) base_[n] = n->arg(static_cast<size_t>(a)).node;
        if (has_mutations(*n)) {
          bool input = false;
          for_each_written(*n, [&](const Node* w) {
            const Node* s = storage(w);
            written_.insert(s);
            input = input || inputs_.count(s) > 0;
          });
          if (input) input_writes_.push_back(position_[n]);
        }
        break;
      }
      case NodeKind::GetItem: {
        // An element of a list of views (split) lives in the list's storage; an element of a
        // multi-output op's fresh results is its own storage.
        const Node* in = n->getitem_input();
        if (storage(in) != in) base_[n] = in;
        break;
      }
      case NodeKind::Output:
        n->arg(0).for_each_node([&](const Node* leaf) {
          output_leaves_.insert(leaf);
          escaping_.insert(storage(leaf));
        });
        break;
    }
  }
}

const Node* GraphFacts::find(const Node* n) const {
  auto it = base_.find(n);
  while (it != base_.end()) {
    n = it->second;
    it = base_.find(n);
  }
  return n;
}

const Node* GraphFacts::storage(const Node* n) const { return find(n); }
bool GraphFacts::written(const Node* n) const { return written_.count(storage(n)) > 0; }
bool GraphFacts::is_input(const Node* n) const { return inputs_.count(storage(n)) > 0; }
bool GraphFacts::storage_escapes(const Node* n) const { return escaping_.count(storage(n)) > 0; }

bool GraphFacts::any_getitem(const Node* n, const std::function<bool(const Node*)>& f) const {
  for (const Node* u : n->users())
    if (u->kind() == NodeKind::GetItem && f(u)) return true;
  return false;
}

bool GraphFacts::escapes(const Node* n) const {
  return storage_escapes(n) || any_getitem(n, [&](const Node* u) { return storage_escapes(u); });
}

bool GraphFacts::is_output_leaf(const Node* n) const {
  return output_leaves_.count(n) ||
         any_getitem(n, [&](const Node* u) { return output_leaves_.count(u) > 0; });
}

size_t GraphFacts::last_use(const Node* n) const {
  size_t last = 0;
  for (const Node* u : n->users())
    last = std::max(last, u->kind() == NodeKind::GetItem ? last_use(u) : position_.at(u));
  return last;
}

bool GraphFacts::input_written_before_use(const Node* n) const {
  if (input_writes_.empty()) return false;
  size_t from = position_.at(n), to = last_use(n);
  for (size_t w : input_writes_)
    if (w > from && w < to) return true;
  return false;
}

bool GraphFacts::can_merge(const Node* node, const Node* keep) const {
  if (written(node) || written(keep)) return false;
  bool same_storage = storage(node) == storage(keep) && !may_copy(*node) && !may_copy(*keep);
  if (!same_storage && escapes(node) && (is_input(keep) || escapes(keep))) return false;
  if (!same_storage && is_input(keep) && input_written_before_use(node)) return false;
  if (is_output_leaf(node) && (keep->kind() == NodeKind::Placeholder || is_output_leaf(keep)))
    return false;
  return true;
}

bool GraphFacts::can_replace(const Node* node, const Node* src) const {
  if (!node->meta().is_tensor() || !src->meta().is_tensor()) return false;
  if (!node->meta().tensor.same_layout(src->meta().tensor)) return false;
  return can_merge(node, src);
}

void GraphFacts::replace(Graph& g, Node* node, Node* src) {
  const Node* from = storage(node);
  const Node* to = storage(src);
  if (from != to) {
    if (escaping_.count(from)) escaping_.insert(to);
    base_[from] = to;
  }
  // getitems of `node` move to `src` with replace_all_uses_with; the leaf set is by node.
  if (output_leaves_.erase(node)) output_leaves_.insert(src);
  g.replace_all_uses_with(node, src);
  g.erase(node);
}

std::optional<double> literal_value(const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::Int:
    case Arg::Kind::Bool:
      return static_cast<double>(a.i);
    case Arg::Kind::Float:
      return a.f;
    default:
      return std::nullopt;
  }
}

Node* identity_operand(const Node& n,
                       const std::function<std::optional<double>(const Arg&)>& value_of) {
  if (n.kind() != NodeKind::Call) return nullptr;
  std::string_view name = n.op()->name;
  auto is = [&](const char* base) {
    return name == std::string(base) + ".Tensor" || name == std::string(base) + ".Scalar";
  };
  auto equals = [&](const Arg& a, double v) {
    std::optional<double> x = value_of(a);
    return x && *x == v;
  };
  auto node_of = [](const Arg& a) { return a.is_node() ? a.node : nullptr; };
  if (!is("aten::mul") && !is("aten::div") && !is("aten::add") && !is("aten::sub")) return nullptr;
  const Arg& self = n.arg(0);
  const Arg& other = n.arg(1);
  if (is("aten::mul")) {
    if (equals(other, 1)) return node_of(self);
    if (equals(self, 1)) return node_of(other);
    return nullptr;
  }
  if (is("aten::div")) return equals(other, 1) ? node_of(self) : nullptr;
  if (is("aten::add") || is("aten::sub")) {
    std::optional<double> alpha = literal_value(n.arg(2));
    if (!alpha || !std::isfinite(*alpha)) return nullptr;
    if (equals(other, 0)) return node_of(self);
    if (is("aten::add") && *alpha == 1 && equals(self, 0)) return node_of(other);
  }
  return nullptr;
}

}  // namespace aotgrad
