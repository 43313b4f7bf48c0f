// aotgrad: one symbolic graph from traces of a program at several sizes.
//
// Note [Unifying traces]: what the dynamic capture cannot trace once with symbolic sizes (Note [One
// symbolic trace] in frontend/dynamic_capture.cc: an op whose metadata only libtorch's Meta kernel
// gives, which refuses symbolic sizes from C++; a kernel or module that reads sizes as integers) it
// traces at three size points with concrete (fake) sizes, and reads the symbolic program off what
// varies. A value that depends on the sizes is fitted as
// c * m(s) + k, m a monomial with each symbol at most squared (sizes, strides and view
// arguments of ordinary programs: B*T, C*T, T*T, 2*s0 + 1). The points are chosen so that no two
// symbols are affinely related over them, which makes the fit unique; the monomials are tried
// from the lowest degree up. Each call's metadata is then re-inferred by the registry's meta
// functions over the symbols, which gives the canonical forms PyTorch prints and checks the meta
// functions against every trace.
#include "aotgrad/transforms/symbolize.h"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "aotgrad/ops/known_ops.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {

std::string symbol_name(size_t i) { return "s" + std::to_string(i); }

bool SizeFit::operator<(const SizeFit& o) const {
  return std::tie(c, mono, k) < std::tie(o.c, o.mono, o.k);
}

namespace {

using Fit = SizeFit;

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

class Unifier {
 public:
  Unifier(const std::vector<const Graph*>& traces, const TracePoints& p) : traces_(traces), p_(p) {
    const size_t n = p.sources.size();
    AOTGRAD_CHECK(traces.size() >= 3 && traces.size() == p.points.size(),
                  "symbolize: needs three or more traces, one per point; got ", traces.size(),
                  " traces and ", p.points.size(), " points");
    AOTGRAD_CHECK(n > 0 && n <= 6, "symbolize: ", n, " size symbols (1 to 6 are supported)");
    for (const auto& pt : p.points)
      AOTGRAD_CHECK(pt.size() == n, "symbolize: a point has ", pt.size(), " values for ", n,
                    " symbols");
    for (size_t i = 0; i < n; ++i) {
      syms_.push_back(SymInt::symbol(symbol_name(i), p.points[0][i]));
      index_[symbol_name(i)] = i;
    }
    // The monomials, lowest total degree first.
    std::vector<std::vector<int>> all{{}};
    for (size_t i = 0; i < n; ++i) {
      std::vector<std::vector<int>> next;
      for (const auto& m : all)
        for (int power = 0; power <= 2; ++power) {
          next.push_back(m);
          next.back().push_back(power);
        }
      all = std::move(next);
    }
    auto degree = [](const std::vector<int>& m) {
      int d = 0;
      for (int x : m) d += x;
      return d;
    };
    std::stable_sort(all.begin(), all.end(), [&](const auto& a, const auto& b) {
      return degree(a) != degree(b) ? degree(a) < degree(b) : a > b;
    });
    for (const auto& m : all) {
      if (degree(m) == 0) continue;
      std::vector<std::pair<size_t, int>> mono;
      for (size_t i = 0; i < n; ++i)
        if (m[i]) mono.emplace_back(i, m[i]);
      monomials_.push_back(std::move(mono));
    }
  }

  std::unique_ptr<Graph> run();

 private:
  int64_t value(const std::vector<std::pair<size_t, int>>& mono, size_t t) const {
    int64_t v = 1;
    for (auto [i, power] : mono)
      for (int e = 0; e < power; ++e) v *= p_.points[t][i];
    return v;
  }
  std::optional<Fit> fit(const std::vector<int64_t>& samples) const;
  SymInt symint(const Fit& f) const;
  std::string points_text() const;
  SymInt fit_or_throw(const std::vector<int64_t>& samples, const std::string& what) const;
  ValueMeta fit_meta(const std::vector<const ValueMeta*>& m, const std::string& what) const;
  bool agrees(const ValueMeta& sym, const ValueMeta& concrete, size_t t) const;
  Arg rewrite(const std::vector<const Arg*>& a, Node* user, const std::string& where);

  const std::vector<const Graph*>& traces_;
  const TracePoints& p_;
  std::vector<SymInt> syms_;
  std::map<std::string, size_t> index_;
  std::vector<std::vector<std::pair<size_t, int>>> monomials_;
  Graph* g_ = nullptr;
  std::vector<Node*> placeholders_;
  std::unique_ptr<SizeNodes> sizes_;
};

std::optional<Fit> Unifier::fit(const std::vector<int64_t>& s) const {
  bool constant = true;
  for (int64_t v : s) constant = constant && v == s[0];
  if (constant) return Fit{0, {}, s[0]};
  for (const auto& m : monomials_) {
    int64_t x1 = value(m, 1), x2 = value(m, 2);
    if (x1 == x2 || (s[1] - s[2]) % (x1 - x2) != 0) continue;
    int64_t c = (s[1] - s[2]) / (x1 - x2);
    int64_t k = s[1] - c * x1;
    bool all = c != 0;
    for (size_t t = 0; all && t < s.size(); ++t) all = c * value(m, t) + k == s[t];
    if (all) return Fit{c, m, k};
  }
  return std::nullopt;
}

SymInt Unifier::symint(const Fit& f) const {
  if (f.c == 0) return f.k;
  SymInt r = f.c;
  for (auto [i, power] : f.mono)
    for (int e = 0; e < power; ++e) r = r * syms_[i];
  return r + f.k;
}

std::string Unifier::points_text() const {
  std::string s;
  for (size_t t = 0; t < p_.points.size(); ++t) {
    s += t ? "; " : "";
    for (size_t i = 0; i < syms_.size(); ++i)
      s += (i ? ", " : "") + symbol_name(i) + "=" + std::to_string(p_.points[t][i]);
  }
  return s;
}

SymInt Unifier::fit_or_throw(const std::vector<int64_t>& samples, const std::string& what) const {
  if (auto f = fit(samples)) return symint(*f);
  throw Error(what + " takes the values " + join(samples) + " at the sizes " + points_text() +
              ": not an expression c*m + k of the size symbols (m a product of symbols, each at "
              "most squared) that a dynamic graph can write");
}

ValueMeta Unifier::fit_meta(const std::vector<const ValueMeta*>& m, const std::string& what) const {
  ValueMeta out = *m[0];
  for (const ValueMeta* x : m)
    AOTGRAD_CHECK(x->kind == out.kind && x->elems.size() == out.elems.size() &&
                      (!out.is_tensor() || (x->tensor.dim() == out.tensor.dim() &&
                                            x->tensor.dtype == out.tensor.dtype)),
                  what, " is ", out.describe(), " in one trace and ", x->describe(),
                  " in another: the traced graph changes with the dynamic sizes");
  if (out.kind == ValueMeta::Kind::Tuple) {
    for (size_t e = 0; e < out.elems.size(); ++e) {
      std::vector<const ValueMeta*> em;
      for (const ValueMeta* x : m) em.push_back(&x->elems[e]);
      out.elems[e] = fit_meta(em, what + "[" + std::to_string(e) + "]");
    }
    return out;
  }
  if (out.kind == ValueMeta::Kind::SymInt) {
    std::vector<int64_t> s;
    for (const ValueMeta* x : m) s.push_back(x->sym.value());
    out.sym = fit_or_throw(s, what);
    return out;
  }
  if (!out.is_tensor()) return out;
  auto field = [&](auto get, const std::string& name) {
    std::vector<int64_t> s;
    for (const ValueMeta* x : m) s.push_back(get(x->tensor).value());
    return fit_or_throw(s, what + "'s " + name);
  };
  TensorMeta& t = out.tensor;
  for (int64_t d = 0; d < t.dim(); ++d) {
    const std::string ds = std::to_string(d);
    t.sizes[d] = field([d](const TensorMeta& x) { return x.sizes[d]; }, "size " + ds);
    t.strides[d] = field([d](const TensorMeta& x) { return x.strides[d]; }, "stride " + ds);
  }
  t.storage_offset = field([](const TensorMeta& x) { return x.storage_offset; }, "storage offset");
  return out;
}

bool Unifier::agrees(const ValueMeta& sym, const ValueMeta& concrete, size_t t) const {
  auto value_of = [&](const std::string& name) -> std::optional<int64_t> {
    auto it = index_.find(name);
    if (it == index_.end()) return std::nullopt;
    return p_.points[t][it->second];
  };
  auto eq = [&](const SymInt& a, const SymInt& b) { return a.evaluate(value_of) == b.value(); };
  if (sym.kind != concrete.kind || sym.elems.size() != concrete.elems.size()) return false;
  switch (sym.kind) {
    case ValueMeta::Kind::Tuple:
      for (size_t e = 0; e < sym.elems.size(); ++e)
        if (!agrees(sym.elems[e], concrete.elems[e], t)) return false;
      return true;
    case ValueMeta::Kind::SymInt: return eq(sym.sym, concrete.sym);
    case ValueMeta::Kind::Tensor: {
      const TensorMeta &a = sym.tensor, &b = concrete.tensor;
      if (a.dtype != b.dtype || a.dim() != b.dim() || !(a.device == b.device) ||
          !eq(a.storage_offset, b.storage_offset))
        return false;
      for (int64_t d = 0; d < a.dim(); ++d)
        if (!eq(a.sizes[d], b.sizes[d]) || !eq(a.strides[d], b.strides[d])) return false;
      return true;
    }
    default: return true;
  }
}

Arg Unifier::rewrite(const std::vector<const Arg*>& a, Node* user, const std::string& where) {
  const Arg& base = *a[0];
  if (base.is_list()) {
    Arg out = base;
    for (size_t e = 0; e < base.list.size(); ++e) {
      std::vector<const Arg*> elems;
      for (const Arg* x : a) elems.push_back(&x->list[e]);
      out.list[e] = rewrite(elems, user, where + "[" + std::to_string(e) + "]");
    }
    return out;
  }
  if (base.kind == Arg::Kind::Float) {
    for (const Arg* x : a)
      AOTGRAD_CHECK(x->f == base.f, user->describe(), ": its float argument ", where,
                    " changes with the dynamic sizes (", points_text(),
                    "): a dynamic graph cannot compute it");
    return base;
  }
  if (base.kind != Arg::Kind::Int) return base;
  std::vector<int64_t> s;
  for (const Arg* x : a) s.push_back(x->i);
  std::optional<Fit> f = fit(s);
  if (!f) fit_or_throw(s, user->describe() + "'s argument " + where);
  if (f->c == 0) return base;
  return Arg(sizes_->node_for(*f, user));
}

// The traces have the same ops in the same order with the same argument structure: nodes
// referenced by name, lists of one length, equal constants except ints and floats.
void check_same(const Arg& a, const Arg& b, const Node& n, const std::string& where) {
  auto differ = [&] {
    throw Error(n.describe() + ": its argument " + where + " is " + arg_to_string(a) +
                " in one trace and " + arg_to_string(b) +
                " in another: the traced graph changes with the dynamic sizes (control flow on "
                "a size?)");
  };
  if (a.kind != b.kind) differ();
  switch (a.kind) {
    case Arg::Kind::Node:
      if (a.node->name() != b.node->name()) differ();
      return;
    case Arg::Kind::List:
    case Arg::Kind::Tuple:
      if (a.list.size() != b.list.size()) differ();
      for (size_t e = 0; e < a.list.size(); ++e)
        check_same(a.list[e], b.list[e], n, where + "[" + std::to_string(e) + "]");
      return;
    case Arg::Kind::Int:
    case Arg::Kind::Float: return;
    default:
      if (!(a == b)) differ();
  }
}

std::unique_ptr<Graph> Unifier::run() {
  std::vector<std::vector<const Node*>> nodes(traces_.size());
  for (size_t t = 0; t < traces_.size(); ++t)
    for (const Node* n : traces_[t]->nodes()) nodes[t].push_back(n);
  for (size_t t = 1; t < traces_.size(); ++t) {
    AOTGRAD_CHECK(nodes[t].size() == nodes[0].size(), "the traced graph changes with the dynamic ",
                  "sizes: ", nodes[0].size(), " nodes at one size, ", nodes[t].size(),
                  " at another (control flow on a size?)");
    for (size_t k = 0; k < nodes[0].size(); ++k) {
      const Node &a = *nodes[0][k], &b = *nodes[t][k];
      AOTGRAD_CHECK(a.kind() == b.kind() && a.op() == b.op() && a.name() == b.name() &&
                        a.args().size() == b.args().size(),
                    "the traced graph changes with the dynamic sizes: ", a.describe(),
                    " in one trace, ", b.describe(), " in another (control flow on a size?)");
      for (size_t i = 0; i < a.args().size(); ++i)
        check_same(a.arg(i), b.arg(i), a,
                   a.kind() == NodeKind::Call ? a.op()->schema.args[i].name : std::to_string(i));
    }
  }
  std::unique_ptr<Graph> out = traces_[0]->clone();
  g_ = out.get();
  placeholders_ = out->placeholders();
  sizes_ = std::make_unique<SizeNodes>(*out, p_.sources);
  for (size_t i = 0; i < p_.sources.size(); ++i) {
    const SymbolSource& src = p_.sources[i];
    AOTGRAD_CHECK(src.input < placeholders_.size() && placeholders_[src.input]->meta().is_tensor(),
                  "symbolize: symbol ", symbol_name(i), " is read from input ", src.input,
                  ", which is not a tensor input");
    for (size_t t = 0; t < traces_.size(); ++t) {
      const TensorMeta& m = traces_[t]->placeholders()[src.input]->tensor_meta();
      AOTGRAD_CHECK(src.divisor >= 1 && src.dim >= 0 && src.dim < m.dim() &&
                        m.sizes[src.dim] == src.divisor * p_.points[t][i],
                    "symbolize: symbol ", symbol_name(i), " is ", p_.points[t][i], " in trace ", t,
                    " but its input dimension ", src.input, ".", src.dim, " does not have size ",
                    src.divisor == 1 ? "" : std::to_string(src.divisor) + " * ", p_.points[t][i]);
    }
  }
  std::vector<Node*> order;
  for (Node* n : out->nodes()) order.push_back(n);
  for (size_t k = 0; k < order.size(); ++k) {
    Node* n = order[k];
    std::vector<const ValueMeta*> metas;
    for (const auto& tn : nodes) metas.push_back(&tn[k]->meta());
    const std::string what = n->describe();
    if (n->kind() == NodeKind::Output) continue;
    if (n->kind() == NodeKind::Placeholder) {
      ValueMeta m = fit_meta(metas, what);
      if (n->info().lifted_constant)
        AOTGRAD_CHECK(m.annotation() == n->meta().annotation(), what,
                      " is a tensor constant whose size changes with the dynamic sizes");
      n->mutable_meta() = std::move(m);
      continue;
    }
    if (n->kind() == NodeKind::Call) {
      for (size_t i = 0; i < n->args().size(); ++i) {
        // The clone's argument (its nodes are this graph's) stands for the first trace's.
        std::vector<const Arg*> as{&n->arg(i)};
        for (size_t t = 1; t < nodes.size(); ++t) as.push_back(&nodes[t][k]->arg(i));
        Arg r = rewrite(as, n, n->op()->schema.args[i].name);
        if (!(r == n->arg(i))) n->set_arg(i, std::move(r), n->arg_given(i));
      }
    }
    // The registry's inference over the symbols where it agrees with every trace, else the fit.
    std::optional<ValueMeta> inferred;
    try {
      if (n->kind() == NodeKind::Call)
        inferred = infer_meta(*n->op(), n->args());
      else
        inferred = n->getitem_input()->meta().elems.at(n->getitem_index());
    } catch (const std::exception&) {
      inferred.reset();
    }
    bool ok = inferred.has_value();
    for (size_t t = 0; ok && t < nodes.size(); ++t) ok = agrees(*inferred, *metas[t], t);
    ValueMeta m = ok ? std::move(*inferred) : fit_meta(metas, what);
    if (n->kind() == NodeKind::Call && m.is_tensor())
      m.tensor.requires_grad = n->meta().is_tensor() && n->meta().tensor.requires_grad;
    n->mutable_meta() = std::move(m);
  }
  return out;
}

}  // namespace

SizeNodes::SizeNodes(Graph& graph, std::vector<SymbolSource> sources, bool deferred_names)
    : g_(graph),
      sources_(std::move(sources)),
      placeholders_(graph.placeholders()),
      deferred_names_(deferred_names) {}

Node* SizeNodes::add(const OpDef& op, std::vector<Arg> args, std::string base) {
  if (base.empty()) base = op.base_name;
  if (!deferred_names_) return g_.add_call(op, std::move(args), {}, g_.unique_name(base));
  Node* n = g_.add_call(op, std::move(args), {}, g_.unique_name("_aotgrad_size_node"));
  pending_[n] = base;
  return n;
}

void SizeNodes::assign_names() {
  for (Node* n : g_.nodes()) {
    auto it = pending_.find(n);
    if (it == pending_.end()) continue;
    g_.rename(n, g_.unique_name(it->second));
    pending_.erase(it);
  }
}

Node* SizeNodes::node_for(const Fit& f, Node* user) {
  if (auto it = made_.find(f); it != made_.end()) return it->second;
  Node* saved = g_.insertion_point();
  if (user) g_.set_insertion_point(user);
  Node* acc = nullptr;
  std::vector<std::pair<size_t, int>> prefix;
  for (auto [i, power] : f.mono) {
    Fit bare{1, {{i, 1}}, 0};
    if (!made_.count(bare)) {
      const SymbolSource& src = sources_.at(i);
      // Named as PyTorch 2.x names the node: sym_size_int, sym_size_int_1, ...
      Node* size = add(ops::sym_size_int(), {Arg(placeholders_[src.input]), Arg::of_int(src.dim)},
                       "sym_size_int");
      if (src.divisor != 1)
        size = add(ops::sym_floordiv(), {Arg(size), Arg::of_int(src.divisor)}, "floordiv");
      made_[bare] = size;
    }
    for (int e = 0; e < power; ++e) {
      if (!prefix.empty() && prefix.back().first == i)
        ++prefix.back().second;
      else
        prefix.emplace_back(i, 1);
      Fit partial{1, prefix, 0};
      if (auto it = made_.find(partial); it != made_.end()) {
        acc = it->second;
        continue;
      }
      acc = acc ? add(ops::sym_mul(), {Arg(acc), Arg(made_[bare])}) : made_[bare];
      made_[partial] = acc;
    }
  }
  if (f.c != 1) {
    Fit scaled{f.c, f.mono, 0};
    if (auto it = made_.find(scaled); it != made_.end())
      acc = it->second;
    else
      acc = made_[scaled] = add(ops::sym_mul(), {Arg(acc), Arg::of_int(f.c)});
  }
  if (f.k > 0) acc = add(ops::sym_add(), {Arg(acc), Arg::of_int(f.k)});
  if (f.k < 0) acc = add(ops::sym_sub(), {Arg(acc), Arg::of_int(-f.k)});
  g_.set_insertion_point(saved);
  return made_[f] = acc;
}

std::optional<Arg> SizeNodes::arg_for(const SymInt& e, Node* user) {
  if (e.is_concrete()) return Arg::of_int(e.value());
  std::optional<SymInt::MonomialForm> m = e.monomial_form();
  if (!m) return std::nullopt;
  SizeFit f{m->c, {}, m->k};
  for (const auto& [name, power] : m->powers) {
    size_t i = 0;
    while (i < sources_.size() && symbol_name(i) != name) ++i;
    if (i == sources_.size()) return std::nullopt;
    f.mono.emplace_back(i, power);
  }
  std::sort(f.mono.begin(), f.mono.end());
  return Arg(node_for(f, user));
}

std::unique_ptr<Graph> symbolize(const std::vector<const Graph*>& traces, const TracePoints& p) {
  return Unifier(traces, p).run();
}

std::unique_ptr<Graph> without_layouts(const Graph& g) {
  using ops::is_call;
  // clone(x) whose one user is _unsafe_view: folded into that reshape.
  auto folded = [&](const Node* n) {
    return is_call(n, ops::clone()) && n->users().size() == 1 &&
           is_call(n->users()[0], ops::unsafe_view());
  };
  auto reshape_of = [&](const Node* n) {
    return is_call(n, ops::view()) || is_call(n, ops::reshape_alias()) ||
           is_call(n, ops::unsafe_view());
  };
  // Values whose in-place writes a view and a copy would see differently: a view (or reshape)
  // and its input, when the input is seen elsewhere (an input of the graph, or used again).
  std::set<const Node*> hazard;
  for (const Node* n : g.nodes()) {
    if (n->kind() != NodeKind::Call || n->args().empty() || !n->arg(0).is_node()) continue;
    if (!reshape_of(n) && n->op()->storage_alias_of(0) < 0) continue;
    const Node* x = n->arg(0).node;
    if (folded(x)) x = x->arg(0).node;
    if (x->kind() == NodeKind::Placeholder || x->users().size() > 1) {
      hazard.insert(n);
      hazard.insert(x);
    }
  }
  for (const Node* n : g.nodes())
    if (n->kind() == NodeKind::Call)
      for (int i : n->op()->written_args(n->args()))
        if (n->arg(i).is_node() && hazard.count(n->arg(i).node)) return nullptr;

  auto out = std::make_unique<Graph>();
  std::unordered_map<const Node*, Node*> map;
  std::function<Arg(const Arg&)> mapped = [&](const Arg& a) -> Arg {
    if (a.is_node()) return Arg(map.at(a.node));
    if (!a.is_list()) return a;
    Arg r = a;
    for (Arg& e : r.list) e = mapped(e);
    return r;
  };
  auto strip = [](ValueMeta m) {
    std::function<void(ValueMeta&)> go = [&](ValueMeta& v) {
      if (v.is_tensor()) {
        v.tensor.strides.assign(v.tensor.strides.size(), 0);
        v.tensor.storage_offset = 0;
      }
      for (ValueMeta& e : v.elems) go(e);
    };
    go(m);
    return m;
  };
  const OpDef& reshape = ops::reshape();
  size_t k = 0;
  auto fresh = [&] { return "n" + std::to_string(k++); };
  for (const Node* n : g.nodes()) {
    switch (n->kind()) {
      case NodeKind::Placeholder: {
        Node* p = out->add_placeholder(n->name(), strip(n->meta()));
        p->info() = n->info();
        map[n] = p;
        break;
      }
      case NodeKind::GetItem: {
        Node* x = out->add_getitem(map.at(n->getitem_input()), n->getitem_index(), fresh());
        x->mutable_meta() = strip(n->meta());
        map[n] = x;
        break;
      }
      case NodeKind::Output: out->set_output(mapped(n->arg(0))); break;
      case NodeKind::Call:
        if (folded(n)) {
          map[n] = map.at(n->arg(0).node);
        } else if (reshape_of(n)) {
          map[n] = out->add_call_raw(reshape, {mapped(n->arg(0)), mapped(n->arg(1))}, 0b11,
                                     strip(n->meta()), fresh());
        } else {
          std::vector<Arg> args;
          for (const Arg& a : n->args()) args.push_back(mapped(a));
          map[n] = out->add_call_raw(*n->op(), std::move(args), n->given_mask(), strip(n->meta()),
                                     fresh());
        }
        break;
    }
  }
  return out;
}

}  // namespace aotgrad
