// aotgrad: requires_grad propagation and the autograd/inference decision.
#include "aotgrad/transforms/requires_grad.h"

#include <unordered_map>
#include <unordered_set>

#include "aotgrad/transforms/input_mutations.h"

namespace aotgrad {
namespace {

bool differentiable_dtype(const ValueMeta& m) {
  if (m.kind == ValueMeta::Kind::Tensor)
    return is_floating(m.tensor.dtype) || is_complex(m.tensor.dtype);
  if (m.kind == ValueMeta::Kind::Tuple)
    for (auto& e : m.elems)
      if (differentiable_dtype(e)) return true;
  return false;
}

}  // namespace

std::vector<bool> propagate_requires_grad(const Graph& g,
                                          const std::vector<bool>& input_requires_grad) {
  std::unordered_map<const Node*, bool> rg;
  std::vector<bool> out;
  size_t ph = 0;
  auto arg_rg = [&](const Arg& a) {
    bool any = false;
    a.for_each_node([&](Node* n) {
      auto it = rg.find(n);
      any = any || (it != rg.end() && it->second);
    });
    return any;
  };
  for (const Node* n : g.nodes()) {
    bool r = false;
    switch (n->kind()) {
      case NodeKind::Placeholder:
        r = ph < input_requires_grad.size() && input_requires_grad[ph] &&
            differentiable_dtype(n->meta());
        ++ph;
        break;
      case NodeKind::GetItem: {
        const Node* src = n->getitem_input();
        r = rg[src] && differentiable_dtype(n->meta()) &&
            (src->kind() != NodeKind::Call ||
             src->op()->output_differentiable(static_cast<size_t>(n->getitem_index())));
        break;
      }
      case NodeKind::Call: {
        const OpDef& op = *n->op();
        bool any_input = false;
        for (auto& a : n->args()) any_input = any_input || arg_rg(a);
        r = any_input && !op.non_differentiable && differentiable_dtype(n->meta());
        // Eagerly a view made under no_grad of a tensor that requires grad: a leaf that does.
        if (n->info().no_grad_view_requires_grad) r = any_input && differentiable_dtype(n->meta());
        // An in-place write makes the written value require grad (and everything aliasing it is
        // tracked through the written node itself). Declared writes only, not written_args():
        // an undeclared mutation (1.13's native_batch_norm updating running_mean/running_var) is
        // the kernel's own write outside autograd, and in eager the running statistics stay
        // requires_grad=False however the input requires grad.
        for (int i : op.mutated_args())
          if (r) n->args()[i].for_each_node([&](Node* m) { rg[m] = true; });
        break;
      }
      case NodeKind::Output: break;
    }
    rg[n] = r;
    out.push_back(r);
  }
  return out;
}

bool needs_autograd(const Graph& g, const std::vector<bool>& input_requires_grad) {
  bool any_input = false;
  for (bool b : input_requires_grad) any_input = any_input || b;
  if (!any_input) return false;
  std::vector<bool> rg = propagate_requires_grad(g, input_requires_grad);
  std::unordered_map<const Node*, bool> by_node;
  size_t i = 0;
  for (const Node* n : g.nodes()) by_node[n] = rg[i++];
  bool output_rg = false;
  if (g.output())
    g.output()->args()[0].for_each_node([&](Node* n) { output_rg = output_rg || by_node[n]; });
  if (output_rg) return true;
  // The storages written with a value that requires grad (one walk of the storage roots, for the
  // two cases below).
  std::vector<const Node*> storage = storage_roots(g);
  std::unordered_map<const Node*, const Node*> storage_of;
  i = 0;
  for (const Node* n : g.nodes()) storage_of[n] = storage[i++];
  std::unordered_set<const Node*> written;
  for (const Node* n : g.nodes())
    if (n->kind() == NodeKind::Call && by_node[n])
      for (int a : n->op()->mutated_args())
        n->args()[static_cast<size_t>(a)].for_each_node(
            [&](Node* w) { written.insert(storage_of[w]); });
  // An input that does not require grad, written with a value that does: eagerly it gains the
  // write's history, and the runtime writes it back under autograd.
  for (const Node* s : written)
    if (s->kind() == NodeKind::Placeholder) return true;
  // An output that views a storage written with a value that requires grad: eagerly a view follows
  // its base, and requires grad, though taken before the write (Note [Views of a value made
  // under no_grad, written] in functionalize.cc).
  bool views_written = false;
  if (g.output() && !written.empty())
    g.output()->args()[0].for_each_node(
        [&](Node* n) { views_written = views_written || written.count(storage_of[n]); });
  if (views_written) return true;
  InputMutations m = analyze_input_mutations(g);
  std::vector<Node*> phs = g.placeholders();
  for (size_t k = 0; k < phs.size(); ++k)
    if (k < input_requires_grad.size() && input_requires_grad[k] &&
        (m.data_mutated[k] || m.metadata_mutated[k]))
      return true;
  return false;
}

}  // namespace aotgrad
