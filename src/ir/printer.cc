// aotgrad: prints a Graph as the readable GraphModule code PyTorch 2.x prints.
#include "aotgrad/ir/printer.h"

#include <array>
#include <cstdint>
#include <vector>

#include "aotgrad/support/logging.h"
#include "text_tables.h"

namespace aotgrad {
namespace {

using text::NodeIndex;

// Annotation texts by what they show (dtype, sizes, strides, device), for tensors with concrete
// sizes: graphs repeat a few shapes, and hashing a shape costs less than formatting it. A direct-
// mapped table; a collision just formats again.
class AnnotationCache {
 public:
  void append(std::string& out, const TensorMeta& t) {
    uint64_t h = static_cast<uint64_t>(t.dtype) * 0x9e3779b97f4a7c15ull ^
                 (static_cast<uint64_t>(t.device.type) << 8 | static_cast<uint8_t>(t.device.index));
    for (const SymIntVector* v : {&t.sizes, &t.strides}) {
      h = (h ^ v->size()) * 0x100000001b3ull;
      for (const SymInt& x : *v) {
        auto c = x.maybe_value();
        if (!c) {  // symbolic: not cached
          t.append_annotation(out);
          return;
        }
        h = (h ^ static_cast<uint64_t>(*c)) * 0x100000001b3ull;
      }
    }
    Entry& e = entries_[(h ^ (h >> 29)) % entries_.size()];
    if (!e.used || e.hash != h || !matches(e.meta, t)) {
      e.hash = h;
      e.meta.dtype = t.dtype;
      e.meta.device = t.device;
      e.meta.sizes = t.sizes;
      e.meta.strides = t.strides;
      e.text.clear();
      t.append_annotation(e.text);
      e.used = true;
    }
    out += e.text;
  }

 private:
  struct Entry {
    uint64_t hash = 0;
    TensorMeta meta;
    std::string text;
    bool used = false;
  };
  static bool same(const SymIntVector& a, const SymIntVector& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].maybe_value() != b[i].maybe_value()) return false;  // both concrete here
    return true;
  }
  static bool matches(const TensorMeta& a, const TensorMeta& b) {
    return a.dtype == b.dtype && a.device == b.device && same(a.sizes, b.sizes) &&
           same(a.strides, b.strides);
  }
  std::array<Entry, 128> entries_;
};

// `name: "ann"` when the value has an annotation (tensors and symbolic scalars; not tuples).
void append_annotation(std::string& out, const ValueMeta& m, AnnotationCache& cache) {
  switch (m.kind) {
    case ValueMeta::Kind::Tensor:
      out += ": \"";
      cache.append(out, m.tensor);
      out += '"';
      return;
    case ValueMeta::Kind::SymInt:
      out += ": \"Sym(";
      m.sym.append_to(out);
      out += ")\"";
      return;
    case ValueMeta::Kind::SymFloat:
    case ValueMeta::Kind::SymBool:
      out += ": \"Sym(";
      out += m.sym_text;
      out += ")\"";
      return;
    default: return;
  }
}

// The inline form of a SymInt operator (operator::mul -> " * "), or nullptr.
const char* sym_operator(const OpDef& op) {
  static const std::pair<const char*, const char*> kOps[] = {
      {"operator::add", " + "},       {"operator::sub", " - "}, {"operator::mul", " * "},
      {"operator::floordiv", " // "}, {"operator::mod", " % "}, {"operator::neg", "-"}};
  if (op.name.rfind("operator::", 0) != 0) return nullptr;
  for (auto& [name, text] : kOps)
    if (op.name == name) return text;
  return nullptr;
}

// torch.ops.aten.add.Tensor(x, y, alpha = 2): schema-positional arguments up to the last one
// given (defaults in between printed), then the given keyword-only ones as FX prints kwargs.
void append_call(std::string& out, const Node& n) {
  const OpDef& op = *n.op();
  if (const char* infix = sym_operator(op)) {  // FX prints operator.mul & co. inline
    const auto& args = n.args();
    if (args.size() == 1) {
      out += infix;
      append_arg(out, args[0]);
    } else {
      append_arg(out, args[0]);
      out += infix;
      append_arg(out, args[1]);
    }
    return;
  }
  append_op_ref(out, op);
  out += '(';
  const auto& sargs = op.schema.args;
  const auto& args = n.args();
  size_t count = std::min(sargs.size(), args.size());
  size_t n_positional = 0;
  while (n_positional < count && !sargs[n_positional].kwarg_only) ++n_positional;
  size_t end_positional = 0;
  for (size_t i = 0; i < n_positional; ++i)
    if (n.arg_given(i)) end_positional = i + 1;
  bool first = true;
  for (size_t i = 0; i < end_positional; ++i) {
    if (!first) out += ", ";
    first = false;
    append_arg(out, args[i]);
  }
  for (size_t i = n_positional; i < count; ++i) {
    if (!n.arg_given(i)) continue;
    if (!first) out += ", ";
    first = false;
    out += sargs[i].name;
    out += " = ";
    append_arg(out, args[i]);
  }
  out += ')';
}

class Printer {
 public:
  Printer(const Graph& g, const PrintOptions& o) : g_(g), o_(o) {}

  std::string run() {
    index_nodes();
    out_.reserve(g_.size() * 100 + 256);
    const char* def_indent = o_.class_header ? "    " : "";
    body_indent_ = o_.class_header ? "        " : "    ";
    if (o_.class_header) out_ += "class " + o_.class_name + "(torch.nn.Module):\n";
    std::vector<const Node*> placeholders;
    for (const Node* n : order_)
      if (n->kind() == NodeKind::Placeholder) placeholders.push_back(n);
    out_ += def_indent;
    if (g_.signature == Signature::Joint) {
      print_joint_header(placeholders, def_indent);
    } else {
      out_ += "def forward(self";
      for (const Node* p : placeholders) {
        if (p->info().lifted_constant) continue;
        out_ += ", ";
        out_ += p->name();
        if (annotate_placeholders()) append_annotation(out_, p->meta(), annotations_);
      }
      out_ += "):\n";
      // Tensor constants, as the get_attr nodes FX prints: `c: "ann" = self.c`.
      for (const Node* p : placeholders) {
        if (!p->info().lifted_constant) continue;
        out_ += body_indent_;
        out_ += p->name();
        if (annotate_placeholders()) append_annotation(out_, p->meta(), annotations_);
        out_ += " = self.";
        out_ += p->name();
        out_ += '\n';
      }
    }
    for (uint32_t i = 0; i < order_.size(); ++i) {
      const Node* n = order_[i];
      switch (n->kind()) {
        case NodeKind::Placeholder: break;
        case NodeKind::Output: print_output(*n); break;
        default: print_node(*n, i); break;
      }
    }
    print_subgraphs(def_indent);
    return std::move(out_);
  }

 private:
  bool annotate_placeholders() const { return o_.annotations || o_.placeholder_annotations; }

  // The node order, and for each node the values whose last use it is, in argument order (FX's
  // register_last_uses: walking backwards, a value's first use seen is its last). A subgraph
  // attribute is a value too (FX's get_attr node).
  void index_nodes() {
    order_.reserve(g_.size());
    for (Node* n : g_.nodes()) order_.push_back(n);
    if (!o_.release_statements) return;
    NodeIndex seen(order_.size());
    std::vector<const std::string*> seen_graphs;
    release_start_.assign(order_.size(), 0);
    release_count_.assign(order_.size(), 0);
    releases_.reserve(order_.size());
    for (uint32_t i = static_cast<uint32_t>(order_.size()); i-- > 0;) {
      release_start_[i] = static_cast<uint32_t>(releases_.size());
      for (const Arg& a : order_[i]->args()) {
        if (a.kind == Arg::Kind::Graph) {
          bool dup = false;
          for (const std::string* s : seen_graphs) dup = dup || *s == a.str;
          if (!dup) {
            seen_graphs.push_back(&a.str);
            releases_.push_back(&a.str);
          }
          continue;
        }
        a.for_each_node([&](const Node* used) {
          if (seen.insert(used, 0)) releases_.push_back(&used->name());
        });
      }
      release_count_[i] = static_cast<uint32_t>(releases_.size()) - release_start_[i];
    }
  }

  // `true_graph_0 = self.true_graph_0` for each subgraph argument of `n` not printed yet.
  void print_graph_attributes(const Node& n) {
    for (const Arg& a : n.args()) {
      if (a.kind != Arg::Kind::Graph) continue;
      bool printed = false;
      for (const Arg* s : subgraphs_) printed = printed || s->str == a.str;
      if (printed) continue;
      subgraphs_.push_back(&a);
      out_ += body_indent_;
      out_ += a.str;
      out_ += " = self.";
      out_ += a.str;
      out_ += '\n';
    }
  }

  // The subgraphs' class blocks, one level inside this graph's class.
  void print_subgraphs(const char* def_indent) {
    for (const Arg* s : subgraphs_) {
      if (!s->graph) continue;
      PrintOptions o = o_;
      o.class_header = true;
      o.class_name = s->str;
      std::string text = print_graph(*s->graph, o);
      out_ += '\n';
      size_t pos = 0;
      while (pos < text.size()) {
        size_t eol = text.find('\n', pos);
        if (eol == std::string::npos) eol = text.size();
        if (eol > pos) out_ += def_indent;
        out_.append(text, pos, eol - pos);
        out_ += '\n';
        pos = eol + 1;
      }
    }
  }

  //     def forward(self, primals, tangents):
  //         primals_1: "f32[4]"; tangents_1: "f32[4]";
  //
  //         primals_1, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents],
  //         self._in_spec)
  void print_joint_header(const std::vector<const Node*>& placeholders, const char* def_indent) {
    out_ += "def forward(self, primals, tangents):\n";
    if (placeholders.empty()) return;
    if (annotate_placeholders()) {
      out_ += body_indent_;
      for (const Node* p : placeholders) {
        out_ += p->name();
        append_annotation(out_, p->meta(), annotations_);
        out_ += "; ";
      }
      out_ += '\n';
      out_ += def_indent;
      out_ += '\n';
    }
    out_ += body_indent_;
    for (const Node* p : placeholders) {
      out_ += p->name();
      out_ += ", ";
    }
    out_ += "= fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)\n";
  }

  void print_node(const Node& n, uint32_t pos) {
    if (n.kind() == NodeKind::Call) print_graph_attributes(n);
    out_ += body_indent_;
    out_ += n.name();
    if (o_.annotations) append_annotation(out_, n.meta(), annotations_);
    out_ += " = ";
    if (n.kind() == NodeKind::GetItem) {
      const Node* in = n.getitem_input();
      out_ += in ? in->name() : "None";
      out_ += '[';
      append_arg(out_, n.arg(1));
      out_ += ']';
    } else {
      append_call(out_, n);
    }
    if (o_.release_statements) append_release(n, pos);
    if (n.info().recompute != RecomputePolicy::None) {
      out_ += "  # recompute=";
      out_ += recompute_policy_name(n.info().recompute);
    }
    out_ += '\n';
  }

  // ";  a = b = None": the arguments whose last use is this node, in argument order, then the
  // node itself when nothing uses it (FX's delete_unused_values).
  void append_release(const Node& n, uint32_t pos) {
    bool unused = n.users().empty();
    if (release_count_[pos] == 0 && !unused) return;
    out_ += ";  ";
    for (uint32_t k = release_start_[pos], e = k + release_count_[pos]; k < e; ++k) {
      out_ += *releases_[k];
      out_ += " = ";
    }
    if (unused) {
      out_ += n.name();
      out_ += " = ";
    }
    out_ += "None";
  }

  void print_output(const Node& n) {
    out_ += body_indent_;
    out_ += "return ";
    const Arg& v = n.args().empty() ? none_ : n.args()[0];
    if (g_.signature == Signature::Joint) {
      out_ += "pytree.tree_unflatten(";
      append_arg(out_, v);
      out_ += ", self._out_spec)";
    } else {
      append_arg(out_, v);
    }
    out_ += '\n';
  }

  const Graph& g_;
  const PrintOptions& o_;
  std::string out_;
  const char* body_indent_ = "";
  std::vector<const Node*> order_;
  AnnotationCache annotations_;
  std::vector<const std::string*> releases_;  // names, grouped by node, argument order within one
  std::vector<const Arg*> subgraphs_;         // subgraph arguments, in order of first use
  std::vector<uint32_t> release_start_;
  std::vector<uint32_t> release_count_;
  Arg none_;
};

}  // namespace

std::string print_graph(const Graph& g, const PrintOptions& options) {
  return Printer(g, options).run();
}

void log_graph(const std::string& title, const Graph& g) {
  log_text("TRACED GRAPH\n ===== " + title + " =====\n" + print_graph(g));
}

}  // namespace aotgrad
