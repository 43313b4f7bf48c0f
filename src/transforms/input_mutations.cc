// aotgrad: alias roots of values and mutated inputs, from schema alias annotations.
#include "aotgrad/transforms/input_mutations.h"

#include <algorithm>
#include <functional>
#include <unordered_map>

#include "aotgrad/ir/node_map.h"

namespace aotgrad {

bool InputMutations::any() const {
  for (size_t i = 0; i < data_mutated.size(); ++i)
    if (data_mutated[i] || metadata_mutated[i]) return true;
  return false;
}

namespace {

// Root placeholder index per node; a Call's root is that of the argument its first return aliases.
std::unordered_map<const Node*, int> compute_roots(const Graph& g) {
  std::unordered_map<const Node*, int> root;
  int ph = 0;
  auto root_of = [&](const Arg& a) -> int {
    if (!a.is_node()) return -1;
    auto it = root.find(a.node);
    return it == root.end() ? -1 : it->second;
  };
  for (const Node* n : g.nodes()) {
    switch (n->kind()) {
      case NodeKind::Placeholder: root[n] = ph++; break;
      case NodeKind::GetItem: {
        const Node* src = n->getitem_input();
        int r = -1;
        if (src->kind() == NodeKind::Call) {
          // Tensor(a)[] returns (split, unbind) alias per element; tuples per return index.
          const OpDef* op = src->op();
          size_t ret = op->schema.returns.size() == 1 ? 0 : static_cast<size_t>(n->getitem_index());
          int arg = op->return_alias_of(ret);
          if (arg >= 0) r = root_of(src->args()[arg]);
        }
        root[n] = r;
        break;
      }
      case NodeKind::Call: {
        int arg = n->op()->return_alias_of(0);
        root[n] = arg >= 0 ? root_of(n->args()[arg]) : -1;
        break;
      }
      case NodeKind::Output: break;
    }
  }
  return root;
}

}  // namespace

std::vector<int> input_alias_roots(const Graph& g) {
  auto root = compute_roots(g);
  std::vector<int> out;
  for (const Node* n : g.nodes()) {
    auto it = root.find(n);
    out.push_back(it == root.end() ? -1 : it->second);
  }
  return out;
}

std::vector<const Node*> storage_roots(const Graph& g, const std::vector<int>& written_into) {
  NodeMap<const Node*> root(g.size());
  std::vector<const Node*> out;
  out.reserve(g.size());
  auto root_of = [&](const Arg& a, const Node* self) -> const Node* {
    if (!a.is_node()) return self;
    const Node* const* r = root.find(a.node);
    return r ? *r : a.node;
  };
  size_t pos = 0;
  for (const Node* n : g.nodes()) {
    const Node* r = n;
    const int into = pos < written_into.size() ? written_into[pos] : -1;
    ++pos;
    if (n->kind() == NodeKind::Call) {
      int arg = into >= 0 ? into : n->op()->return_alias_of(0);
      if (arg >= 0) r = root_of(n->args()[arg], n);
    } else if (n->kind() == NodeKind::GetItem) {
      const Node* src = n->getitem_input();
      if (src->kind() == NodeKind::Call) {
        const OpDef* op = src->op();
        size_t ret = op->schema.returns.size() == 1 ? 0 : static_cast<size_t>(n->getitem_index());
        int arg = op->return_alias_of(ret);
        if (arg >= 0) r = root_of(src->args()[arg], n);
      }
    }
    root[n] = r;
    out.push_back(r);
  }
  return out;
}

InputMutations analyze_input_mutations(const Graph& g) {
  auto root = compute_roots(g);
  size_t n_inputs = g.placeholders().size();
  InputMutations m{std::vector<bool>(n_inputs), std::vector<bool>(n_inputs),
                   std::vector<std::vector<InputMutations::AbsoluteView>>(n_inputs)};
  std::function<void(const Arg&, bool)> mark = [&](const Arg& a, bool metadata) {
    if (a.is_list()) {  // a written Tensor[] (the in-place foreach ops) writes every element
      for (const Arg& e : a.list) mark(e, metadata);
      return;
    }
    if (!a.is_node()) return;
    auto it = root.find(a.node);
    if (it == root.end() || it->second < 0) return;
    (metadata ? m.metadata_mutated : m.data_mutated)[it->second] = true;
  };
  for (const Node* n : g.nodes()) {
    if (n->kind() != NodeKind::Call) continue;
    const OpDef* op = n->op();
    bool metadata_only = op->has_tag(kView) && op->has_tag(kInplace);
    for (int i : op->written_args(n->args())) mark(n->args()[i], metadata_only);
    if (!op->absolute_view || n->args().empty() || !n->args()[0].is_node()) continue;
    auto it = root.find(n->args()[0].node);
    if (it == root.end() || it->second < 0) continue;
    InputMutations::AbsoluteView v;
    auto ints = [&](size_t k, std::vector<int64_t>& out) {
      if (k >= n->args().size() || !n->args()[k].is_list()) return void(v.known = false);
      for (const Arg& e : n->args()[k].list)
        e.kind == Arg::Kind::Int ? out.push_back(e.i) : void(v.known = false);
    };
    ints(1, v.sizes);
    ints(2, v.strides);
    if (n->args().size() > 3 && n->args()[3].kind == Arg::Kind::Int)
      v.storage_offset = n->args()[3].i;
    else if (n->args().size() > 3 && !n->args()[3].is_none())
      v.known = false;
    m.absolute_views[static_cast<size_t>(it->second)].push_back(std::move(v));
  }
  return m;
}

std::vector<int> outputs_that_are_args(const Graph& g) {
  std::unordered_map<const Node*, int> arg_of;
  int index = 0;
  for (const Node* n : g.nodes()) {
    if (n->kind() == NodeKind::Placeholder) {
      arg_of[n] = index++;
    } else if (n->kind() == NodeKind::Call && n->op()->return_alias_of(0) == 0 &&
               !n->args().empty() && n->args()[0].is_node()) {
      std::vector<int> written = n->op()->written_args(n->args());
      auto it = arg_of.find(n->args()[0].node);
      if (it != arg_of.end() && std::find(written.begin(), written.end(), 0) != written.end())
        arg_of[n] = it->second;
    }
  }
  std::vector<int> out;
  std::function<void(const Arg&)> leaves = [&](const Arg& a) {
    if (a.is_list()) {
      for (auto& e : a.list) leaves(e);
      return;
    }
    auto it = a.is_node() ? arg_of.find(a.node) : arg_of.end();
    out.push_back(it == arg_of.end() ? -1 : it->second);
  };
  if (g.output()) leaves(g.output()->args()[0]);
  return out;
}

}  // namespace aotgrad
