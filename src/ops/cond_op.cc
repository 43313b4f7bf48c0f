// aotgrad: torch.ops.higher_order.cond(pred, true_fn, false_fn, operands), the control-flow
// higher-order op whose branches are subgraph arguments (torch/_higher_order_ops/cond.py).
#include "aotgrad/ir/graph.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {

// Note [cond]
// cond(pred, true_fn, false_fn, operands) -> Tensor[] calls true_fn(*operands) when the one
// element of the bool tensor `pred` is true, else false_fn(*operands). The branches are subgraph
// arguments (Arg::Kind::Graph): closed graphs whose placeholders take the operands, printed as
// PyTorch prints a GraphModule attribute (`true_graph_0 = self.true_graph_0`) and the attribute's
// own `class true_graph_0(torch.nn.Module):` block nested after the forward. Both branches take
// the operands' metadata and must return tensors of the same metadata (dtype, sizes, strides,
// device), as torch.cond requires; the result is that list, read with getitems (`cond[0]`).
// A branch is pure: a branch that writes an input or returns one of its inputs' storages is an
// error (torch.cond's "One of torch.cond branch might be modifying the input!"). The subgraphs
// use no node of the calling graph, so every pass that reads a node's arguments sees all its
// uses; DCE and CSE treat a cond like any pure call.

std::vector<const ValueMeta*> subgraph_result_metas(const Graph& g, const std::string& name) {
  std::vector<const ValueMeta*> out;
  if (!g.output() || g.output()->args().empty()) throw Error("subgraph " + name + " has no output");
  const Arg& v = g.output()->arg(0);
  std::vector<const Arg*> leaves;
  if (v.is_list()) {
    for (const Arg& e : v.list) leaves.push_back(&e);
  } else {
    leaves.push_back(&v);
  }
  for (size_t i = 0; i < leaves.size(); ++i) {
    const Arg& a = *leaves[i];
    if (!a.is_node() || !a.node->meta().is_tensor())
      throw Error("subgraph " + name + " returns " + arg_to_string(a) + " as output " +
                  std::to_string(i) + ": a cond branch returns tensors only");
    out.push_back(&a.node->meta());
  }
  return out;
}

int free_cond_index(const Graph& g) {
  std::vector<const std::string*> used;
  for (const Node* n : g.nodes())
    for (const Arg& a : n->args())
      if (a.kind == Arg::Kind::Graph) used.push_back(&a.str);
  for (int k = 0;; ++k) {
    std::string t = "true_graph_" + std::to_string(k), f = "false_graph_" + std::to_string(k);
    bool taken = g.has_name(t) || g.has_name(f);
    for (const std::string* u : used) taken = taken || *u == t || *u == f;
    if (!taken) return k;
  }
}

namespace {

const Graph& branch(const MetaArgs& a, size_t i, const char* what) {
  const Arg& g = a.arg(i);
  if (g.kind != Arg::Kind::Graph || !g.graph)
    throw Error(std::string("argument '") + what +
                "' must be a subgraph (a graph module attribute such as true_graph_0), got " +
                arg_to_string(g));
  return *g.graph;
}

bool same_meta(const TensorMeta& x, const TensorMeta& y) {
  return x.dtype == y.dtype && x.device == y.device && x.sizes == y.sizes && x.strides == y.strides;
}

// The branch's placeholders take the operands: same count, dtype, sizes and device.
void check_inputs(const Graph& g, const std::string& name,
                  const std::vector<const TensorMeta*>& operands) {
  std::vector<Node*> ps = g.placeholders();
  if (ps.size() != operands.size())
    throw Error("subgraph " + name + " takes " + std::to_string(ps.size()) +
                " inputs, but operands has " + std::to_string(operands.size()));
  for (size_t i = 0; i < ps.size(); ++i) {
    const ValueMeta& m = ps[i]->meta();
    const TensorMeta* o = operands[i];
    if (!o) throw Error("operand " + std::to_string(i) + " is None");
    if (!m.is_tensor() || m.tensor.dtype != o->dtype || !(m.tensor.sizes == o->sizes) ||
        !(m.tensor.device == o->device))
      throw Error("input '" + ps[i]->name() + "' of subgraph " + name + " is " + m.annotation() +
                  ", but operand " + std::to_string(i) + " is " + o->annotation());
  }
}

// The placeholder whose storage `n`'s value lives in (through views), or nullptr for a fresh one.
const Node* input_root(const Node* n) {
  while (n) {
    if (n->kind() == NodeKind::Placeholder) return n;
    if (n->kind() == NodeKind::GetItem) {
      const Node* in = n->getitem_input();
      if (!in || in->kind() != NodeKind::Call) return nullptr;
      int alias = in->op()->storage_alias_of(static_cast<size_t>(n->getitem_index()));
      if (alias < 0 || !in->arg(static_cast<size_t>(alias)).is_node()) return nullptr;
      n = in->arg(static_cast<size_t>(alias)).node;
      continue;
    }
    if (n->kind() != NodeKind::Call || n->meta().kind != ValueMeta::Kind::Tensor) return nullptr;
    int alias = n->op()->storage_alias_of(0);
    if (alias < 0 || !n->arg(static_cast<size_t>(alias)).is_node()) return nullptr;
    n = n->arg(static_cast<size_t>(alias)).node;
  }
  return nullptr;
}

// A branch is pure: it writes no input and returns no input's storage (torch.cond's
// UnsupportedAliasMutationException).
void check_pure(const Graph& g, const std::string& name) {
  for (const Node* n : g.nodes()) {
    if (n->kind() != NodeKind::Call) continue;
    for (int w : n->op()->written_args(n->args())) {
      const Arg& arg = n->arg(static_cast<size_t>(w));
      const Node* root = arg.is_node() ? input_root(arg.node) : nullptr;
      if (root)
        throw Error("subgraph " + name + " mutates its input '" + root->name() + "' (" +
                    n->describe() + "): One of torch.cond branch might be modifying the input!");
    }
  }
  const Arg& v = g.output()->arg(0);
  std::vector<Arg> leaves = v.is_list() ? v.list : std::vector<Arg>{v};
  for (const Arg& l : leaves)
    if (const Node* root = l.is_node() ? input_root(l.node) : nullptr)
      throw Error("subgraph " + name + " returns its input '" + root->name() +
                  "' or a view of it: One of torch.cond branch might be aliasing the input!");
}

ValueMeta cond_meta(const MetaArgs& a) {
  const Arg& p = a.arg(0);
  const TensorMeta* pred =
      p.is_node() && p.node->meta().is_tensor() ? &p.node->meta().tensor : nullptr;
  if (!pred || pred->dtype != ScalarType::Bool || !(pred->numel() == 1))
    throw Error(
        "argument 'pred' must be a bool tensor with one element (torch.cond: Expected "
        "pred to be bool or single-element tensor), got " +
        (pred ? pred->annotation() : arg_to_string(p)));
  const Graph& t = branch(a, 1, "true_fn");
  const Graph& f = branch(a, 2, "false_fn");
  const std::string& tn = a.arg(1).str;
  const std::string& fn = a.arg(2).str;
  std::vector<const TensorMeta*> operands = a.tensor_list(3);
  check_inputs(t, tn, operands);
  check_inputs(f, fn, operands);
  std::vector<const ValueMeta*> tr = subgraph_result_metas(t, tn);
  std::vector<const ValueMeta*> fr = subgraph_result_metas(f, fn);
  check_pure(t, tn);
  check_pure(f, fn);
  if (tr.size() != fr.size())
    throw Error("true_fn and false_fn must return the same number of tensors, but " + tn +
                " returns " + std::to_string(tr.size()) + " and " + fn + " returns " +
                std::to_string(fr.size()));
  std::vector<ValueMeta> out;
  for (size_t i = 0; i < tr.size(); ++i) {
    if (!same_meta(tr[i]->tensor, fr[i]->tensor))
      throw Error("true_fn and false_fn must return tensors of the same metadata, but output " +
                  std::to_string(i) + " is " + tr[i]->annotation() + " in " + tn + " and " +
                  fr[i]->annotation() + " in " + fn);
    TensorMeta m = tr[i]->tensor;
    m.requires_grad = false;
    m.storage_offset = 0;
    out.push_back(ValueMeta::of(std::move(m)));
  }
  return ValueMeta::tuple(std::move(out), /*is_list=*/true);
}

}  // namespace

void register_cond_op(OpTable& t) {
  OpDefBuilder b =
      t.def(
           "higher_order::cond(Tensor pred, Any true_fn, Any false_fn, Tensor[] operands) -> "
           "Tensor[]")
          .meta(cond_meta);
  b.op().short_name = "cond";  // printed torch.ops.higher_order.cond, as PyTorch
}

}  // namespace aotgrad
