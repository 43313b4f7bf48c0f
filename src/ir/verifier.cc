// aotgrad: checks a Graph's structural invariants and its metadata against the op registry.
#include "aotgrad/ir/verifier.h"

#include <algorithm>
#include <cctype>
#include <new>
#include <vector>

#include "text_tables.h"

namespace aotgrad {
namespace {

// Metadata as text for messages: an annotation, "None", or "(a, b)" for tuples.
void append_meta_text(std::string& out, const ValueMeta& m) {
  switch (m.kind) {
    case ValueMeta::Kind::None: out += "None"; return;
    case ValueMeta::Kind::Tuple:
      out += m.is_list ? '[' : '(';
      for (size_t i = 0; i < m.elems.size(); ++i) {
        if (i) out += ", ";
        append_meta_text(out, m.elems[i]);
      }
      out += m.is_list ? ']' : ')';
      return;
    default: out += m.annotation();
  }
}
std::string meta_text(const ValueMeta& m) {
  std::string s;
  append_meta_text(s, m);
  return s;
}

// Recorded and inferred metadata agree where it is significant, as PyTorch's own meta checks
// (torch._prims_common.check_significant_strides): the stride of a dimension of size 1, and any
// stride of a tensor with no elements, addresses nothing, and libtorch's kernels choose it by the
// order of their operands' layouts (threshold_backward's output keeps its first operand's), so a
// decomposition that changes an operand's insignificant stride does not make its users wrong.
bool same_significant_meta(const ValueMeta& a, const ValueMeta& b) {
  if (a.kind != b.kind) return false;
  if (a.kind == ValueMeta::Kind::Tuple) {
    if (a.elems.size() != b.elems.size()) return false;
    for (size_t i = 0; i < a.elems.size(); ++i)
      if (!same_significant_meta(a.elems[i], b.elems[i])) return false;
    return true;
  }
  if (a.kind != ValueMeta::Kind::Tensor) return a.same_as(b);
  const TensorMeta &x = a.tensor, &y = b.tensor;
  if (x.dtype != y.dtype || x.device != y.device || x.sizes != y.sizes) return false;
  if (x.strides.size() != y.strides.size() || x.strides.size() != x.sizes.size()) return false;
  for (const SymInt& s : x.sizes)
    if (s == 0) return true;
  if (!(x.storage_offset == y.storage_offset)) return false;
  for (size_t i = 0; i < x.sizes.size(); ++i)
    if (!(x.sizes[i] == 1) && !(x.strides[i] == y.strides[i])) return false;
  return true;
}

class Verifier {
 public:
  Verifier(const Graph& g, VerifyLevel level) : g_(g), level_(level) {}

  void run() {
    index_nodes();
    check_order_and_names();
    check_uses();
    for (uint32_t i = 0; i < order_.size(); ++i) check_node(*order_[i], i);
  }

 private:
  [[noreturn]] static void fail(const Node& n, const std::string& message) {
    throw Error(n.describe() + ": " + message, n.info().loc);
  }

  void index_nodes() {
    for (Node* n : g_.nodes()) {
      if (order_.size() > g_.size())
        throw Error("the graph's node list is longer than its size (" + std::to_string(g_.size()) +
                    "): it is corrupt");
      order_.push_back(n);
    }
    index_ = text::NodeIndex(order_.size());
    for (uint32_t i = 0; i < order_.size(); ++i)
      if (!index_.insert(order_[i], i))
        throw Error("node list of the graph visits " + order_[i]->describe() + " twice");
  }

  // Placeholders, then calls and getitems, then exactly one output; unique names.
  void check_order_and_names() {
    if (order_.size() != g_.size())
      throw Error("the graph holds " + std::to_string(order_.size()) + " nodes but its size is " +
                  std::to_string(g_.size()));
    text::NameMap<bool> names(order_.size());
    bool seen_body = false;
    const Node* output = nullptr;
    for (const Node* n : order_) {
      if (n->graph() != &g_) fail(*n, "belongs to another graph");
      if (n->name().empty()) fail(*n, "has an empty name");
      if (names.contains(n->name())) fail(*n, "name '" + n->name() + "' is defined twice");
      names.insert(n->name(), true);
      if (g_.find(n->name()) != n)
        fail(*n, "the graph's name table does not map '" + n->name() + "' to this node");
      if (output) fail(*n, "comes after the output node (the output must be last)");
      switch (n->kind()) {
        case NodeKind::Placeholder:
          if (seen_body) fail(*n, "comes after a call (placeholders must come first)");
          break;
        case NodeKind::Output: output = n; break;
        default: seen_body = true;
      }
    }
    if (!output) throw Error("the graph has no output node");
    if (g_.output() != output) fail(*output, "is not the graph's registered output node");
  }

  // Every argument is defined earlier in this graph; use lists match the arguments exactly.
  // Linear: the uses implied by arguments are bucketed by the used node (each bucket comes out in
  // ascending user order), and each use list, sorted, must equal its bucket.
  void check_uses() {
    const size_t n_nodes = order_.size();
    std::vector<uint32_t> start(n_nodes + 1, 0);
    std::vector<uint32_t> refs;  // (used) for each argument reference, in user order
    std::vector<uint32_t> ref_users;
    for (uint32_t i = 0; i < n_nodes; ++i) {
      const Node& n = *order_[i];
      for (const Arg& a : n.args())
        a.for_each_node([&](const Node* used) {
          uint32_t at = index_.find(used);
          if (at == text::NodeIndex::kAbsent) fail(n, "uses a value that is not in this graph");
          if (at >= i) fail(n, "'" + used->name() + "' used before it is defined");
          refs.push_back(at);
          ref_users.push_back(i);
          ++start[at + 1];
        });
    }
    for (size_t i = 0; i < n_nodes; ++i) start[i + 1] += start[i];
    std::vector<uint32_t> expected(refs.size());
    std::vector<uint32_t> fill(start.begin(), start.end() - 1);
    for (size_t k = 0; k < refs.size(); ++k) expected[fill[refs[k]]++] = ref_users[k];
    std::vector<uint32_t> actual;
    for (uint32_t i = 0; i < n_nodes; ++i) {
      const Node& n = *order_[i];
      actual.clear();
      for (const Node* u : n.users()) {
        uint32_t at = index_.find(u);
        if (at == text::NodeIndex::kAbsent)
          fail(n, "its use list holds a node that is not in this graph");
        actual.push_back(at);
      }
      std::sort(actual.begin(), actual.end());
      const uint32_t* want = expected.data() + start[i];
      size_t n_want = start[i + 1] - start[i];
      if (actual.size() == n_want && std::equal(actual.begin(), actual.end(), want)) continue;
      // Report a user whose count differs.
      std::vector<uint32_t> w(want, want + n_want);
      size_t k = 0;
      while (k < actual.size() && k < w.size() && actual[k] == w[k]) ++k;
      uint32_t user = k < w.size() && (k >= actual.size() || w[k] < actual[k]) ? w[k] : actual[k];
      auto count = [&](const std::vector<uint32_t>& v) {
        return std::count(v.begin(), v.end(), user);
      };
      fail(n, "its use list has " + order_[user]->describe() + " " + std::to_string(count(actual)) +
                  " times but that node uses it " + std::to_string(count(w)) + " times");
    }
  }

  void check_node(const Node& n, uint32_t pos) {
    switch (n.kind()) {
      case NodeKind::Placeholder:
        if (!n.args().empty()) fail(n, "a placeholder has no arguments");
        return;
      case NodeKind::Output:
        if (n.args().size() != 1)
          fail(n,
               "expected 1 argument (the returned value), got " + std::to_string(n.args().size()));
        return;
      case NodeKind::GetItem: check_getitem(n); return;
      case NodeKind::Call: check_call(n); return;
    }
  }

  void check_getitem(const Node& n) {
    if (n.args().size() != 2 || !n.args()[0].is_node() || n.args()[1].kind != Arg::Kind::Int)
      fail(n, "expected arguments (node, int index)");
    const Node& in = *n.getitem_input();
    const ValueMeta& m = in.meta();
    if (m.kind != ValueMeta::Kind::Tuple)
      fail(n, "indexes " + in.describe() + ", which is not a tuple (" + m.describe() + ")");
    int64_t idx = n.getitem_index();
    if (idx < 0 || idx >= static_cast<int64_t>(m.elems.size()))
      fail(n, "index " + std::to_string(idx) + " is out of range for " + in.describe() + " with " +
                  std::to_string(m.elems.size()) + " results");
    if (!n.meta().same_as(m.elems[idx]))
      fail(n, "recorded metadata " + meta_text(n.meta()) + " differs from element " +
                  std::to_string(idx) + " of " + in.name() + ", " + meta_text(m.elems[idx]));
  }

  void check_call(const Node& n) {
    const OpDef* op = n.op();
    if (!op) fail(n, "a call node has no op");
    const auto& sargs = op->schema.args;
    if (n.args().size() != sargs.size())
      fail(n, "has " + std::to_string(n.args().size()) + " arguments but the schema has " +
                  std::to_string(sargs.size()));
    if (sargs.size() < 64 && (n.given_mask() >> sargs.size()) != 0)
      fail(n, "marks an argument given beyond the schema's " + std::to_string(sargs.size()));
    for (size_t i = 0; i < sargs.size(); ++i) {
      std::string err = check_arg_type(sargs[i].type, n.args()[i]);
      if (!err.empty()) fail(n, "argument '" + sargs[i].name + "': " + err);
    }
    if (op->wrapped) {  // a higher-order op: its op argument is the op it was derived for
      const Arg& ref = n.args()[op->wrapped_arg];
      if (ref.kind != Arg::Kind::Op || ref.op != op->wrapped)
        fail(n, "argument 'op' must be " + arg_to_string(Arg::of_op(*op->wrapped)) + ", got " +
                    arg_to_string(ref));
    }
    for (const Arg& a : n.args())
      if (a.kind == Arg::Kind::Graph) check_subgraph(n, a);
    if (level_ == VerifyLevel::kStructure) return;
    ValueMeta inferred;
    try {
      inferred = infer_meta(*op, n.args());
    } catch (const Error& e) {
      if (op->has_tag(kDynamicOutputShape)) return check_recorded(n);
      throw Error(n.describe() + ": cannot infer metadata: " + e.message(), n.info().loc);
    }
    if (!same_significant_meta(n.meta(), inferred))
      fail(n, "recorded metadata " + meta_text(n.meta()) + " differs from inferred " +
                  meta_text(inferred));
  }

  // Note [Recorded sizes]
  // The sizes of a dynamic_output_shape op's results come from its inputs' values: nonzero's rows
  // are the nonzero elements, _pack_padded_sequence's the sum of its lengths. No meta function can
  // infer them, and aotgrad has no unbacked sizes (PyTorch's u0). A graph traced on real values
  // (make_fx's "real" mode, torch.export of a model that packs by its lengths input) records
  // them: in the call's annotation, or in those of the getitems that unpack it. That recorded
  // metadata is kept, through every pass that copies the node, as a graph specialized to those
  // values; the interpreter checks each result against it when the op runs and names the node and
  // both sizes where the values give other sizes (runtime/interpreter.cc), so the graph never runs
  // on a shape it was not built for. What the recorded metadata must still be: a value for each
  // result the schema declares, a tensor where it declares a tensor.
  void check_recorded(const Node& n) {
    const auto& returns = n.op()->schema.returns;
    const ValueMeta& m = n.meta();
    auto check_one = [&](const ValueMeta& v, size_t i) {
      if (returns[i].type.base == BaseType::Tensor && !returns[i].type.list && !v.is_tensor())
        fail(n, "result " + std::to_string(i) +
                    " depends on its inputs' values (dynamic_output_shape) and has no recorded "
                    "metadata: annotate it");
    };
    if (returns.size() == 1) return check_one(m, 0);
    if (m.kind != ValueMeta::Kind::Tuple || m.elems.size() != returns.size())
      fail(n, "recorded metadata " + meta_text(m) + " is not a tuple of " +
                  std::to_string(returns.size()) + " results");
    for (size_t i = 0; i < returns.size(); ++i) check_one(m.elems[i], i);
  }

  // A subgraph argument: a graph, its attribute name naming no other subgraph of this graph, and
  // itself valid (each subgraph verified once).
  void check_subgraph(const Node& n, const Arg& a) {
    if (!a.graph) fail(n, "subgraph argument '" + a.str + "' has no graph");
    bool ident = !a.str.empty() && !std::isdigit(static_cast<unsigned char>(a.str[0]));
    for (char c : a.str) ident = ident && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    if (!ident) fail(n, "subgraph attribute name '" + a.str + "' is not an identifier");
    if (g_.has_name(a.str))
      fail(n, "subgraph attribute '" + a.str + "' has the name of a node of the graph");
    for (auto& [name, graph] : subgraphs_) {
      if (name != a.str) continue;
      if (graph != a.graph.get())
        fail(n, "subgraph attribute '" + a.str + "' names two different graphs");
      return;
    }
    subgraphs_.emplace_back(a.str, a.graph.get());
    try {
      verify(*a.graph, level_);
    } catch (const Error& e) {
      throw Error("subgraph " + a.str + " of " + n.describe() + ": " + e.message(), e.loc());
    }
  }

  const Graph& g_;
  std::vector<std::pair<std::string, const Graph*>> subgraphs_;
  VerifyLevel level_ = VerifyLevel::kFull;
  std::vector<const Node*> order_;
  text::NodeIndex index_{0};
};

}  // namespace

void verify(const Graph& g, VerifyLevel level) {
  try {
    Verifier(g, level).run();
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw Error("out of memory while verifying the graph");
  } catch (const std::exception& e) {
    throw Error(std::string("internal error while verifying: ") + e.what());
  }
}

}  // namespace aotgrad
