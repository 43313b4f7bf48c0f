// aotgrad: the binding of a graph's size symbols to its input sizes.
#include "aotgrad/ir/symbol_binding.h"

#include "aotgrad/ir/error.h"

namespace aotgrad {

int SymbolBindings::find(const std::string& symbol) const {
  for (size_t k = 0; k < symbols.size(); ++k)
    if (symbols[k].symbol == symbol) return static_cast<int>(k);
  return -1;
}

namespace {

// Throws when `s` reads a symbol that `b` does not bind; `where` names the value.
void check_bound(const SymbolBindings& b, const SymInt& s, const std::string& where) {
  if (s.is_concrete()) return;
  std::vector<std::string> names;
  s.collect_symbols(names);
  for (const std::string& name : names) {
    if (b.find(name) >= 0 || name.rfind('u', 0) == 0) continue;  // u0: data-dependent
    throw Error("size symbol " + name + " (in " + where + ", " + s.to_string() +
                ") is bound by no input: no input has a size or SymInt value that is just " + name +
                " or a multiple of it");
  }
}

}  // namespace

SymbolBindings bind_symbols(const Graph& graph) {
  std::vector<InputSize> sizes;  // every symbolic input size, in input order
  std::vector<Node*> placeholders = graph.placeholders();
  for (size_t i = 0; i < placeholders.size(); ++i) {
    const ValueMeta& m = placeholders[i]->meta();
    int input = static_cast<int>(i);
    if (m.kind == ValueMeta::Kind::SymInt && !m.sym.is_concrete())
      sizes.push_back({input, -1, m.sym});
    if (m.kind == ValueMeta::Kind::Tensor)
      for (size_t d = 0; d < m.tensor.sizes.size(); ++d)
        if (!m.tensor.sizes[d].is_concrete())
          sizes.push_back({input, static_cast<int>(d), m.tensor.sizes[d]});
  }
  SymbolBindings b;
  std::vector<bool> binds(sizes.size(), false);
  for (bool multiples : {false, true})
    for (size_t k = 0; k < sizes.size(); ++k) {
      auto scaled = sizes[k].size.scaled_symbol();
      if (binds[k] || !scaled || (scaled->second != 1) != multiples || b.find(scaled->first) >= 0)
        continue;
      b.symbols.push_back({scaled->first, sizes[k], scaled->second});
      binds[k] = true;
    }
  for (size_t k = 0; k < sizes.size(); ++k)
    if (!binds[k]) b.checks.push_back(sizes[k]);
  for (const Node* n : graph.nodes()) {
    if (n->kind() == NodeKind::Output) continue;
    const ValueMeta& m = n->meta();
    std::string where = n->kind() == NodeKind::Placeholder ? "input '" + n->name() + "'"
                                                           : "node '" + n->name() + "'";
    if (m.kind == ValueMeta::Kind::SymInt) check_bound(b, m.sym, where);
    auto check_tensor = [&](const TensorMeta& t) {
      for (const SymInt& s : t.sizes) check_bound(b, s, where);
      for (const SymInt& s : t.strides) check_bound(b, s, where);
    };
    if (m.kind == ValueMeta::Kind::Tensor) check_tensor(m.tensor);
    if (m.kind == ValueMeta::Kind::Tuple)
      for (const ValueMeta& e : m.elems)
        if (e.kind == ValueMeta::Kind::Tensor) check_tensor(e.tensor);
  }
  return b;
}

}  // namespace aotgrad
