// aotgrad: the decomposition pass.
#include "aotgrad/transforms/passes/decompose.h"

#include "aotgrad/ir/error.h"
#include "aotgrad/ops/decomposition.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {

bool DecompositionTable::contains(const OpDef& op) const {
  // A provided op's decomposition: traced from its CompositeImplicitAutograd kernel, or one its
  // user registered for the core table (Note [Custom ops]).
  if (provided_composites && op.provided && op.decomposition &&
      (op.has_tag(kCompositeImplicit) || (op.decomposition->tables & kCoreTable) != 0))
    return excluded.count(op.name) == 0;
  return ops.count(op.name) != 0;
}

DecompositionTable DecompositionTable::composite_implicit() {
  DecompositionTable t;
  t.provided_composites = true;
  for (const OpDef* op : aten_ops().all())
    if (op->has_tag(kCompositeImplicit) && op->decomposition) t.ops.insert(op->name);
  return t;
}

DecompositionTable DecompositionTable::from_tables(uint32_t tables) {
  DecompositionTable t;
  t.provided_composites = (tables & kCoreTable) != 0;
  for (const OpDef* op : aten_ops().all())
    if (op->decomposition && (op->decomposition->tables & tables) != 0) t.ops.insert(op->name);
  return t;
}

DecompositionTable DecompositionTable::core() { return from_tables(kCoreTable); }
DecompositionTable DecompositionTable::full() { return from_tables(kCoreTable | kFullTable); }

namespace {

// The ops a name means (see get_decompositions); empty when the name is unknown.
std::vector<const OpDef*> ops_named(std::string name) {
  for (const char* prefix : {"aten::", "aten.", "torch.ops.aten."})
    if (name.rfind(prefix, 0) == 0) name = name.substr(std::string(prefix).size());
  std::vector<const OpDef*> out;
  if (name.find('.') != std::string::npos) {
    if (const OpDef* op = aten_ops().find(name)) out.push_back(op);
    return out;
  }
  for (const OpDef* op : aten_ops().all())
    if (op->base_name == name && !op->has_tag(kInplace)) out.push_back(op);
  return out;
}

std::vector<std::string> decomposable(const std::string& name) {
  std::vector<const OpDef*> ops = ops_named(name);
  if (ops.empty()) throw Error("unknown op '" + name + "'");
  std::vector<std::string> out;
  for (const OpDef* op : ops)
    if (op->decomposition) out.push_back(op->name);
  if (out.empty()) throw Error(ops[0]->name + " has no decomposition");
  return out;
}

}  // namespace

DecompositionTable get_decompositions(const std::vector<std::string>& names) {
  DecompositionTable t;
  for (const std::string& n : names)
    for (std::string& op : decomposable(n)) t.ops.insert(std::move(op));
  return t;
}

DecompositionTable parse_decomposition_spec(const std::string& spec) {
  DecompositionTable t;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t end = spec.find(',', start);
    if (end == std::string::npos) end = spec.size();
    std::string item = spec.substr(start, end - start);
    start = end + 1;
    size_t a = item.find_first_not_of(" \t"), b = item.find_last_not_of(" \t");
    item = a == std::string::npos ? "" : item.substr(a, b - a + 1);
    if (item.empty()) throw Error("decomposition spec '" + spec + "': empty item");
    try {
      if (item == "none") continue;
      if (item == "core" || item == "full") {
        DecompositionTable add =
            item == "core" ? DecompositionTable::core() : DecompositionTable::full();
        t.ops.insert(add.ops.begin(), add.ops.end());
        t.provided_composites = t.provided_composites || add.provided_composites;
      } else if (item[0] == '-') {
        for (const std::string& op : decomposable(item.substr(1))) {
          t.ops.erase(op);
          t.excluded.insert(op);
        }
      } else {
        for (std::string& op : decomposable(item)) {
          t.excluded.erase(op);
          t.ops.insert(std::move(op));
        }
      }
    } catch (const Error& e) {
      throw Error("decomposition spec '" + spec + "': " + e.message());
    }
    if (end == spec.size()) break;
  }
  return t;
}

namespace {

bool same_value(const ValueMeta& a, const ValueMeta& b) {
  if (a.kind != b.kind) return false;
  if (a.is_tensor()) return a.tensor.dtype == b.tensor.dtype && a.tensor.sizes == b.tensor.sizes;
  if (a.kind == ValueMeta::Kind::Tuple) {
    if (a.elems.size() != b.elems.size()) return false;
    for (size_t i = 0; i < a.elems.size(); ++i)
      if (!same_value(a.elems[i], b.elems[i])) return false;
  }
  return true;
}

// Replaces the call `n` by the value `r` of its decomposition.
void replace(Graph& g, Node* n, const Arg& r) {
  const Decomposition& d = *n->op()->decomposition;
  if (r.is_node()) {
    AOTGRAD_CHECK(same_value(r.node->meta(), n->meta()), n->describe(), ": decomposition (",
                  d.source, ") gives a value of different dtype or sizes");
    g.replace_all_uses_with(n, r.node);
  } else {
    // Several results: the call's getitem users take the corresponding element.
    AOTGRAD_CHECK(r.kind == Arg::Kind::Tuple, n->describe(), ": decomposition (", d.source,
                  ") returned no value");
    std::vector<Node*> users = n->users();
    for (Node* u : users) {
      AOTGRAD_CHECK(u->kind() == NodeKind::GetItem, n->describe(), ": its result is used whole by ",
                    u->name());
      const Arg& e = r.list.at(static_cast<size_t>(u->getitem_index()));
      AOTGRAD_CHECK(e.is_node(), n->describe(), ": decomposition gives no value for result ",
                    u->getitem_index());
      g.replace_all_uses_with(u, e.node);
      g.erase(u);
    }
  }
  g.erase(n);
}

}  // namespace

int decompose(Graph& g, const DecompositionTable& table) {
  if (table.ops.empty() && !table.provided_composites) return 0;
  int count = 0;
  Node* saved_point = g.insertion_point();
  Node* n = g.nodes().begin() == g.nodes().end() ? nullptr : *g.nodes().begin();
  while (n) {
    if (n->kind() != NodeKind::Call || !n->op()->decomposition || !table.contains(*n->op())) {
      n = n->next();
      continue;
    }
    Node* before = n->prev();
    g.set_insertion_point(n);
    DecompBuilder b(g, *n);
    Arg r;
    try {
      r = n->op()->decomposition->fn(b);
    } catch (const Error& e) {
      g.set_insertion_point(saved_point);
      throw Error(e.message(), n->info().loc);
    }
    replace(g, n, r);
    ++count;
    // Continue with the first node the decomposition made: it may decompose further.
    n = before ? before->next() : *g.nodes().begin();
  }
  g.set_insertion_point(saved_point);
  return count;
}

std::shared_ptr<const Graph> decompose_composites(std::shared_ptr<const Graph> g) {
  bool any = false;
  for (const Node* n : g->nodes())
    any = any || (n->kind() == NodeKind::Call && n->op()->has_tag(kCompositeImplicit) &&
                  n->op()->decomposition);
  if (!any) return g;
  std::unique_ptr<Graph> copy = g->clone();
  decompose(*copy, DecompositionTable::composite_implicit());
  return std::shared_ptr<const Graph>(std::move(copy));
}

}  // namespace aotgrad
