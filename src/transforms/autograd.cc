// aotgrad: building the joint forward+backward graph by reverse-mode AD with derivative rules.
#include "aotgrad/transforms/autograd.h"

#include <unordered_map>

#include "aotgrad/ir/error.h"
#include "aotgrad/ops/derivative.h"
#include "aotgrad/ops/known_ops.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/transforms/cond_autograd.h"
#include "aotgrad/transforms/requires_grad.h"
#include "passes/arg_remap.h"

namespace aotgrad {
namespace {

void flatten_output(const Arg& a, std::vector<Arg>& out) {
  if (a.is_list()) {
    for (auto& e : a.list) flatten_output(e, out);
  } else {
    out.push_back(a);
  }
}

bool floating(const ValueMeta& m) {
  return m.is_tensor() && (is_floating(m.tensor.dtype) || is_complex(m.tensor.dtype));
}

// The gradient accumulated for each value: summed with add.Tensor as autograd's InputBuffer does.
class GradTable {
 public:
  explicit GradTable(Graph& g) : g_(g) {}
  void add(Node* value, Node* grad) {
    Node*& slot = grads_[value];
    if (!slot) {
      slot = grad;
      return;
    }
    slot = g_.add_call(ops::add_Tensor(), {Arg(slot), Arg(grad)});
  }
  Node* get(const Node* value) const {
    auto it = grads_.find(value);
    return it == grads_.end() ? nullptr : it->second;
  }

 private:
  Graph& g_;
  std::unordered_map<const Node*, Node*> grads_;
};

}  // namespace

JointGraph build_joint(const Graph& fw, const std::vector<bool>& user_requires_grad,
                       size_t num_tokens, const std::vector<bool>& no_tangent) {
  JointGraph jg;
  jg.graph = std::make_unique<Graph>();
  Graph& g = *jg.graph;
  g.signature = Signature::Joint;
  jg.num_tokens = num_tokens;
  // Effect tokens lead the primals and need no gradient.
  std::vector<bool> requires_grad(num_tokens, false);
  requires_grad.insert(requires_grad.end(), user_requires_grad.begin(), user_requires_grad.end());

  // Which forward values require grad.
  std::vector<bool> rg_by_pos = propagate_requires_grad(fw, requires_grad);
  std::unordered_map<const Node*, bool> rg;
  {
    size_t i = 0;
    for (const Node* n : fw.nodes()) rg[n] = rg_by_pos[i++];
  }
  // with_effects is not differentiated: a differentiable effectful op given a tensor that
  // requires grad would silently lose its gradient (Note [Effect tokens]).
  for (const Node* n : fw.nodes()) {
    if (n->kind() != NodeKind::Call || !n->op()->wrapped || !n->op()->has_tag(kEffectful) ||
        n->op()->wrapped->non_differentiable)
      continue;
    bool any = false;
    for (const Arg& a : n->args()) a.for_each_node([&](Node* m) { any = any || rg[m]; });
    if (any)
      throw Error(n->describe() + ": a gradient flows through effectful op " +
                      n->op()->wrapped->name +
                      ", which aotgrad does not differentiate (detach its inputs, or give it no "
                      "tensor that requires grad)",
                  n->info().loc);
  }

  // Primals, then the forward nodes (copied), with the forward outputs flattened.
  std::unordered_map<const Node*, Node*> map;
  std::vector<Node*> primals;
  for (const Node* n : fw.placeholders()) {
    ValueMeta m = n->meta();
    if (m.is_tensor()) m.tensor.requires_grad = rg[n];
    Node* p = g.add_placeholder("primals_" + std::to_string(primals.size() + 1), m);
    map[n] = p;
    primals.push_back(p);
    jg.primal_requires_grad.push_back(rg[n]);
  }
  jg.num_primals = primals.size();
  std::vector<Arg> fw_outputs;
  if (fw.output()) flatten_output(fw.output()->args()[0], fw_outputs);
  jg.num_forward_outputs = fw_outputs.size();

  // Tangents for the outputs that can carry a gradient.
  for (size_t k = 0; k < fw_outputs.size(); ++k) {
    const Arg& o = fw_outputs[k];
    bool differentiable = o.is_node() && rg[o.node] && floating(o.node->meta()) &&
                          !(k < no_tangent.size() && no_tangent[k]);
    // A user output that is a view made under no_grad is eagerly a leaf of its own.
    const bool leaf =
        differentiable && k >= no_tangent.size() && o.node->info().no_grad_view_requires_grad;
    jg.leaf_output.push_back(leaf);
    if (!differentiable || leaf) {
      jg.tangent_of_output.push_back(-1);
      continue;
    }
    ValueMeta m = o.node->meta();
    m.tensor.strides = contiguous_strides(m.tensor.sizes);
    m.tensor.storage_offset = 0;
    m.tensor.requires_grad = false;
    g.add_placeholder("tangents_" + std::to_string(jg.num_tangents + 1), m);
    jg.tangent_of_output.push_back(static_cast<int>(jg.num_tangents++));
  }
  std::vector<Node*> all_placeholders = g.placeholders();

  std::vector<const Node*> forward_order;
  for (const Node* n : fw.nodes()) {
    if (n->kind() == NodeKind::Call) {
      std::vector<Arg> args;
      for (auto& a : n->args()) args.push_back(remap(a, map));
      Node* c = g.add_call_raw(*n->op(), std::move(args), n->given_mask(), n->meta(), n->name());
      c->info() = n->info();
      map[n] = c;
      forward_order.push_back(n);
    } else if (n->kind() == NodeKind::GetItem) {
      map[n] = g.add_getitem(map.at(n->getitem_input()), n->getitem_index(), n->name());
      forward_order.push_back(n);
    }
  }

  // Seed the output gradients with the tangents.
  GradTable grads(g);
  for (size_t k = 0; k < fw_outputs.size(); ++k) {
    int t = jg.tangent_of_output[k];
    if (t >= 0) grads.add(map.at(fw_outputs[k].node), all_placeholders[jg.num_primals + t]);
  }

  // Reverse pass: forward nodes in reverse order, as autograd's engine runs them.
  std::unordered_map<const Node*, std::vector<Node*>> tuple_grads;  // grads of multi-output nodes
  for (auto it = forward_order.rbegin(); it != forward_order.rend(); ++it) {
    const Node* fn = *it;
    Node* jn = map.at(fn);
    if (!rg[fn]) continue;
    if (fn->kind() == NodeKind::GetItem) {
      if (Node* gr = grads.get(jn)) {
        auto& v = tuple_grads[fn->getitem_input()];
        size_t k = static_cast<size_t>(fn->getitem_index());
        if (v.size() <= k) v.resize(k + 1, nullptr);
        if (v[k])
          v[k] = g.add_call(ops::add_Tensor(), {Arg(v[k]), Arg(gr)});
        else
          v[k] = gr;
      }
      continue;
    }
    std::vector<Node*> grad_outputs;
    if (fn->meta().kind == ValueMeta::Kind::Tuple) {
      grad_outputs = tuple_grads[fn];
      grad_outputs.resize(fn->meta().elems.size(), nullptr);
    } else {
      grad_outputs = {grads.get(jn)};
    }
    bool any = false;
    for (Node* gr : grad_outputs) any = any || gr;
    if (!any) continue;
    const OpDef& op = *fn->op();
    // A functional call made of an in-place one is differentiated as the in-place call would be.
    const DerivativeRule* rule = op.derivative.get();
    if (const OpDef* inplace = fn->info().inplace_derivative) rule = inplace->derivative.get();
    if (op.has_tag(kEffectful))
      throw Error(fn->describe() + ": a gradient flows through effectful op " +
                      (op.wrapped ? op.wrapped->name : op.name) +
                      ", which aotgrad does not differentiate (detach its inputs, or give it no "
                      "tensor that requires grad)",
                  fn->info().loc);
    if (op.non_differentiable) continue;
    const bool is_cond = op.name == kCond;  // differentiated per branch (Note [cond])
    if (!is_cond && !rule && op.has_tag(kCompositeImplicit))
      throw Error(
          fn->describe() + ": " + op.name +
              " is a composite op, differentiated through its decomposition: decompose the graph "
              "first (decompose_composites)",
          fn->info().loc);
    if (!is_cond && !rule)
      throw Error(fn->describe() + ": no derivative rule for " + op.name +
                      " (declare one, or mark the op non_differentiable)",
                  fn->info().loc);
    // A no_grad view that requires grad is a leaf of its own
    // (NodeInfo::no_grad_view_requires_grad): its gradient reaches nothing, so none is computed.
    auto needs_grad = [&](const Arg& a) {
      return a.is_node() && rg[a.node] && a.node->meta().is_tensor() &&
             !a.node->info().no_grad_view_requires_grad;
    };
    std::vector<bool> needs(fn->args().size());
    std::vector<std::vector<bool>> list_needs(fn->args().size());  // Tensor[] arguments
    for (size_t i = 0; i < fn->args().size(); ++i) {
      const Arg& a = fn->args()[i];
      needs[i] = needs_grad(a);
      if (a.is_list() && op.schema.args.at(i).type.base == BaseType::Tensor)
        for (const Arg& e : a.list) list_needs[i].push_back(needs_grad(e));
    }
    GradBuilder b(g, *jn, grad_outputs, needs);
    for (size_t i = 0; i < list_needs.size(); ++i)
      if (!list_needs[i].empty()) b.set_list_needs(i, list_needs[i]);
    try {
      if (is_cond)
        cond_backward(b);
      else
        rule->apply(b);
    } catch (const Error& e) {
      throw Error(fn->describe() + ": " + e.message(), fn->info().loc);
    }
    // validate_outputs: reduce broadcast gradients and cast them to the input's dtype.
    auto accumulate = [&](Node* input, Node* gi) {
      const TensorMeta& im = input->tensor_meta();
      gi = b.sum_to(gi, im.sizes);
      if (gi->tensor_meta().dtype != im.dtype)
        gi = b.call("_to_copy.default", {Arg(gi)}, {{"dtype", Arg::of_dtype(im.dtype)}});
      grads.add(input, gi);
    };
    for (size_t i = 0; i < fn->args().size(); ++i) {
      Node* gi = b.input_grads()[i];
      if (gi && needs[i]) accumulate(jn->args()[i].node, gi);
      const auto& lg = b.list_input_grads()[i];
      for (size_t k = 0; k < lg.size(); ++k)  // Tensor[] elements
        if (lg[k] && b.needs(i, k)) accumulate(jn->args()[i].list[k].node, lg[k]);
    }
  }

  // Outputs: forward outputs, then one gradient (or None) per primal.
  std::vector<Arg> outs;
  for (auto& o : fw_outputs) outs.push_back(remap(o, map));
  for (size_t i = num_tokens; i < primals.size(); ++i) {
    Node* gr = jg.primal_requires_grad[i] ? grads.get(primals[i]) : nullptr;
    outs.push_back(gr ? Arg(gr) : Arg());
  }
  g.set_output(Arg::of_list(std::move(outs)));
  return jg;
}

}  // namespace aotgrad
