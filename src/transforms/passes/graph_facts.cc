// aotgrad (internal): storage, mutation and escape facts for the rewriting passes.
#include "graph_facts.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>
#include <utility>

#include "aotgrad/ir/dtype.h"
#include "aotgrad/ir/error.h"
#include "aotgrad/transforms/passes/dce.h"

namespace aotgrad {

namespace {

// The argument whose storage a call's result lives in, or -1 for a fresh result.
int aliased_arg(const Node& n) {
  int a = n.op()->storage_alias_of(0);
  if (a < 0 || !n.arg(static_cast<size_t>(a)).is_node()) return -1;
  return a;
}

void for_each_written(const Node& n, const std::function<void(const Node*)>& f) {
  for (int i : n.op()->written_args(n.args())) n.arg(static_cast<size_t>(i)).for_each_node(f);
}

// reshape, contiguous, flatten (CompositeImplicitAutograd): a view when they can, else a copy.
// Their storage is taken as their input's (a write through them may reach it), but two of them
// are not taken to share it (their results may be distinct copies).
bool may_copy(const Node& n) {
  return n.kind() == NodeKind::Call && n.op()->has_tag(kCompositeImplicit) &&
         n.op()->return_alias_of(0) >= 0;
}

}  // namespace

GraphFacts::GraphFacts(const Graph& g) : position_(g.size()) {
  std::map<std::pair<const Node*, int64_t>, const Node*> getitems;
  for (const Node* n : g.nodes()) {
    position_.emplace(n, position_.size());
    switch (n->kind()) {
      case NodeKind::Placeholder: inputs_.insert(n); break;
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
          if (input) input_writes_.push_back(position_.at(n));
        }
        break;
      }
      case NodeKind::GetItem: {
        // An element of a list of views (split) lives in the list's storage; an element of a
        // multi-output op's fresh results is its own storage, and the same element taken twice is
        // one tensor.
        const Node* in = n->getitem_input();
        auto [first, inserted] = getitems.emplace(std::make_pair(in, n->getitem_index()), n);
        if (!inserted) same_tensor_[n] = first->second;
        if (storage(in) != in)
          base_[n] = in;
        else if (!inserted)
          base_[n] = first->second;
        break;
      }
      case NodeKind::Output:
        n->arg(0).for_each_node([&](const Node* leaf) {
          output_leaves_.insert(tensor(leaf));
          escaping_.insert(storage(leaf));
        });
        break;
    }
  }
}

const Node* GraphFacts::find(const Node* n) const {
  if (base_.empty()) return n;
  for (const Node* const* b = base_.find(n); b; b = base_.find(n)) n = *b;
  return n;
}

const Node* GraphFacts::storage(const Node* n) const { return find(n); }
bool GraphFacts::written(const Node* n) const {
  return written_.count(storage(n)) > 0 ||
         any_getitem(n, [&](const Node* u) { return written_.count(storage(u)) > 0; });
}
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

const Node* GraphFacts::tensor(const Node* n) const {
  const Node* const* first = same_tensor_.find(n);
  return first ? *first : n;
}

bool GraphFacts::is_output_leaf(const Node* n) const {
  return output_leaves_.count(tensor(n)) ||
         any_getitem(n, [&](const Node* u) { return output_leaves_.count(tensor(u)) > 0; });
}

size_t GraphFacts::last_use(const Node* n) const {
  // Uses of n's views and getitems read n's storage too.
  size_t last = 0;
  for (const Node* u : n->users()) {
    last = std::max(last, position_.at(u, "graph facts: position"));
    const Node* const* b = base_.find(u);
    if (u->kind() == NodeKind::GetItem || (b && *b == n)) last = std::max(last, last_use(u));
  }
  return last;
}

bool GraphFacts::input_written_before_use(const Node* n) const {
  if (input_writes_.empty()) return false;
  size_t from = position_.at(n, "graph facts: position"), to = last_use(n);
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
  if (output_leaves_.erase(tensor(node))) output_leaves_.insert(tensor(src));
  g.replace_all_uses_with(node, src);
  g.erase(node);
}

std::optional<double> literal_value(const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::Int:
    case Arg::Kind::Bool: return static_cast<double>(a.i);
    case Arg::Kind::Float: return a.f;
    default: return std::nullopt;
  }
}

Node* identity_operand(const Node& n,
                       const std::function<std::optional<double>(const Arg&)>& value_of) {
  if (n.kind() != NodeKind::Call || !n.meta().is_tensor() || !n.op()->identity) return nullptr;
  const IdentityElement& e = *n.op()->identity;
  auto node_of = [](const Arg& a) { return a.is_node() ? a.node : nullptr; };
  auto equals = [&](const Arg& a, double v) {
    std::optional<double> x = value_of(a);
    return x && *x == v;
  };
  const Arg& self = n.arg(0);
  const Arg& other = n.arg(1);
  if (e.alpha_arg < 0) {  // mul, div: x * 1, 1 * x, x / 1
    if (equals(other, e.value)) return node_of(self);
    if (e.commutes && equals(self, e.value)) return node_of(other);
    return nullptr;
  }
  // An additive identity, 0 (add: self + alpha * other; sub: self + (-alpha) * other, negated as
  // the Scalar it is -- an int 0 negated is +0.0 once converted, a float 0.0 is -0.0 -- as ATen's
  // sub calls add). x + z is x for every x exactly when z is -0.0 (+0.0 turns x = -0.0 into
  // +0.0); integers and bools have one zero.
  AOTGRAD_CHECK(e.value == 0, n.describe(), ": an identity scaled by alpha must be 0");
  bool floating = is_floating(n.meta().tensor.dtype);
  auto adds_nothing = [&](double z) { return z == 0 && (!floating || std::signbit(z)); };
  const Arg& alpha_arg = n.arg(e.alpha_arg);
  std::optional<double> alpha = literal_value(alpha_arg);
  if (!alpha || !std::isfinite(*alpha)) return nullptr;
  double scale = *alpha;
  if (e.negates)
    scale = alpha_arg.kind == Arg::Kind::Float ? -alpha_arg.f : static_cast<double>(-alpha_arg.i);
  std::optional<double> b = value_of(other);
  if (b && adds_nothing(scale * *b)) return node_of(self);
  std::optional<double> a = value_of(self);
  if (e.commutes && *alpha == 1 && a && adds_nothing(*a)) return node_of(other);
  return nullptr;
}

}  // namespace aotgrad
