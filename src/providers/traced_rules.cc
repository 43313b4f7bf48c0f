// aotgrad: derivatives and decompositions of provided ops, traced through libtorch on fake tensors.
#include "aotgrad/providers/traced_rules.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>

#include <mutex>
#include <set>
#include <unordered_map>

#include "aotgrad/ir/error.h"
#include "aotgrad/ops/op_call.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/providers/aten_call.h"
#include "aotgrad/providers/dispatcher_ops.h"
#include "aotgrad/providers/fake_tensor.h"
#include "aotgrad/transforms/functionalize.h"
#include "aotgrad/transforms/passes/dce.h"

namespace aotgrad {
namespace {

// A tensor argument of a call, or element `elem` of a Tensor[] argument.
struct Slot {
  size_t arg = 0;
  int64_t elem = -1;
};

// A traced rule per call key (op and argument metadata), shared by the process's compilations.
template <typename T>
class RuleCache {
 public:
  std::shared_ptr<const T> find(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    return it == map_.end() ? nullptr : it->second;
  }
  void insert(const std::string& key, std::shared_ptr<const T> value) {
    std::lock_guard<std::mutex> lock(mu_);
    map_.emplace(key, std::move(value));
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const T>> map_;
};

// `shape` with its leaves, in order, replaced by `leaves` from `next` on.
Arg renest(const Arg& shape, const std::vector<Arg>& leaves, size_t& next) {
  if (!shape.is_list()) return leaves.at(next++);
  std::vector<Arg> l;
  for (const Arg& e : shape.list) l.push_back(renest(e, leaves, next));
  return Arg::of_tuple(std::move(l));
}

// Whether the call writes a value the template made (not one of its placeholders: the forward's
// writes into the op's arguments, as native_batch_norm's running stats, are the outer call's).
bool writes_intermediates(const Node& n) {
  if (n.kind() != NodeKind::Call || !has_mutations(n)) return false;
  for (int i : n.op()->written_args(n.args())) {
    bool into_placeholder = true;
    n.args()[static_cast<size_t>(i)].for_each_node([&](const Node* w) {
      if (w->kind() != NodeKind::Placeholder) into_placeholder = false;
    });
    if (!into_placeholder) return true;
  }
  return false;
}

// What libtorch's kernels record is not functional: a backward formula writes into the tensors it
// makes (fft_r2c_backward copies the gradient into a slice of zeros, svd_backward fills a
// diagonal), and a composite kernel may too. The template is functionalized before it is spliced
// into a functional graph, or those writes would be lost. The forward's writes into the op's
// arguments (`forward`: native_batch_norm's running stats) are the outer call's and are dropped;
// any other write into a placeholder (an argument, a result, a gradient) is an error.
std::unique_ptr<Graph> functional_template(std::unique_ptr<Graph> g, const std::string& what,
                                           const std::set<const Node*>& forward = {}) {
  bool mutates = false;
  for (const Node* n : g->nodes()) {
    if (n->kind() != NodeKind::Call || !has_mutations(*n)) continue;
    mutates = true;
    if (forward.count(n)) continue;
    for (int i : n->op()->written_args(n->args()))
      n->args()[static_cast<size_t>(i)].for_each_node([&](const Node* w) {
        if (w->kind() == NodeKind::Placeholder)
          throw Error(what + " writes its input " + w->name() +
                      ", which a graph of aotgrad cannot express");
      });
  }
  if (!mutates) return g;
  FunctionalizeResult f = functionalize(*g);
  const Arg& out = f.graph->output()->args()[0];
  size_t next = static_cast<size_t>(f.meta.num_mutated_outputs());
  Arg nested = renest(g->output()->args()[0], out.list, next);
  f.graph->output()->set_arg(0, nested);
  eliminate_dead_code(*f.graph);
  return std::move(f.graph);
}

std::vector<Slot> tensor_slots(const Node& call) {
  std::vector<Slot> slots;
  for (size_t i = 0; i < call.args().size(); ++i) {
    const Arg& a = call.args()[i];
    if (a.is_node() && a.node->meta().is_tensor()) {
      slots.push_back({i, -1});
    } else if (a.is_list()) {
      for (size_t k = 0; k < a.list.size(); ++k)
        if (a.list[k].is_node() && a.list[k].node->meta().is_tensor())
          slots.push_back({i, static_cast<int64_t>(k)});
    }
  }
  return slots;
}

const Node* slot_node(const Node& call, const Slot& s) {
  const Arg& a = call.args()[s.arg];
  return s.elem < 0 ? a.node : a.list[static_cast<size_t>(s.elem)].node;
}

Device call_device(const Node& call, const std::vector<Slot>& slots) {
  return slots.empty() ? Device{} : slot_node(call, slots[0])->meta().tensor.device;
}

// The call's op and arguments, with tensors by their metadata: what a traced rule depends on.
std::string call_key(const Node& call) {
  std::string key = call.op()->name;
  std::function<void(const Arg&)> add = [&](const Arg& a) {
    if (a.is_node()) {
      const ValueMeta& m = a.node->meta();
      key += m.annotation();
      if (m.is_tensor()) key += "@" + m.tensor.storage_offset.to_string();
    } else if (a.is_list()) {
      key += '[';
      for (const Arg& e : a.list) {
        add(e);
        key += ',';
      }
      key += ']';
    } else {
      append_arg(key, a);
    }
  };
  for (const Arg& a : call.args()) {
    key += '|';
    add(a);
  }
  return key;
}

std::string libtorch_message(const std::exception& e) {
  if (auto* ce = dynamic_cast<const c10::Error*>(&e)) return ce->what_without_backtrace();
  return e.what();
}

c10::OperatorHandle handle_of(const OpDef& op) {
  auto h = c10::Dispatcher::singleton().findSchema({op.schema.name, op.schema.overload});
  if (!h) throw Error(op.name + ": libtorch has no such operator overload");
  return *h;
}

// The template of a rule: a graph whose first placeholders stand for the call's tensor slots.
// `fakes` are their fakes, in slot order.
struct TraceSetup {
  std::vector<Slot> slots;
  std::vector<Node*> slot_placeholders;
  std::vector<at::Tensor> fakes;
  std::vector<c10::IValue> stack;
};

// Placeholders and fakes for the call's tensor slots in `tmpl`, and the call's arguments as a
// stack of fakes and constants.
TraceSetup setup_trace(FakeTrace& trace, Graph& tmpl, const Node& call,
                       const std::function<bool(const Node&, const Slot&)>& requires_grad) {
  TraceSetup s;
  s.slots = tensor_slots(call);
  std::unordered_map<const Node*, std::vector<size_t>> slot_of_node;  // a node may fill two slots
  for (size_t k = 0; k < s.slots.size(); ++k) {
    const Node* n = slot_node(call, s.slots[k]);
    ValueMeta m = n->meta();
    m.tensor.requires_grad = false;
    Node* p = tmpl.add_placeholder("input_" + std::to_string(k), m);
    s.slot_placeholders.push_back(p);
    bool rg = requires_grad(*n, s.slots[k]) &&
              (is_floating(m.tensor.dtype) || is_complex(m.tensor.dtype));
    s.fakes.push_back(trace.fake(p, rg));
    slot_of_node[n].push_back(k);
  }
  // Each slot's argument gets its own fake, even when a node fills two slots.
  std::unordered_map<const Node*, size_t> next_use;
  NodeValueFn lookup = [&](const Node& n) -> c10::IValue {
    auto it = slot_of_node.find(&n);
    if (it != slot_of_node.end()) {
      size_t& use = next_use[&n];
      size_t k = it->second[std::min(use, it->second.size() - 1)];
      ++use;
      return s.fakes[k];
    }
    if (n.meta().kind == ValueMeta::Kind::SymInt && n.meta().sym.is_concrete())
      return c10::IValue(n.meta().sym.value());
    throw Error(call.describe() + ": argument " + n.describe() + " (" + n.meta().describe() +
                ") has no value a traced rule can use");
  };
  const auto& sargs = call.op()->schema.args;
  for (size_t i = 0; i < sargs.size(); ++i) {
    const Arg& a = call.args()[i];
    if (sargs[i].type.base == BaseType::Device && !sargs[i].type.list &&
        a.kind == Arg::Kind::Device)
      s.stack.emplace_back(FakeTrace::fake_device());  // factories make fakes
    else
      s.stack.push_back(to_ivalue(sargs[i].type, a, lookup));
  }
  return s;
}

// Every tensor among a call's results, flattened one level (multi-result ops, Tensor[] results).
std::vector<at::Tensor> result_tensors(const std::vector<c10::IValue>& stack) {
  std::vector<at::Tensor> out;
  for (const c10::IValue& v : stack) {
    if (v.isTensor()) {
      out.push_back(v.toTensor());
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorVector()) out.push_back(t);
    } else if (v.isList()) {
      for (const c10::IValue& e : v.toListRef())
        out.push_back(e.isTensor() ? e.toTensor() : at::Tensor());
    } else {
      out.emplace_back();
    }
  }
  return out;
}

FakeTrace::Options rule_options(const Node& call, Device device, Graph& tmpl) {
  FakeTrace::Options o;
  o.device = device;
  o.on_real_tensor = [&call, &tmpl](const at::Tensor& t, const std::string& where) -> Arg {
    // A 0-dim tensor a formula makes from a number (`grad * other` for mul.Scalar's other, as
    // scalar_to_tensor) is made again by the template, with that value and dtype.
    if (t.dim() == 0 && t.device().is_cpu() && !t.is_complex()) {
      Arg v = t.scalar_type() == at::kBool ? Arg::of_bool(t.item<bool>())
              : at::isIntegralType(t.scalar_type(), /*includeBool=*/false)
                  ? Arg::of_int(t.item<int64_t>())
                  : Arg::of_float(t.item<double>());
      return Arg(append_call(tmpl, "aten::scalar_tensor", {v},
                             {{"dtype", Arg::of_dtype(from_c10(t.scalar_type()))}}));
    }
    throw Error(call.describe() + ": tracing its rule through libtorch, " + where +
                " is a real tensor made by the kernel (" + t.toString() +
                "), which a traced rule cannot hold");
  };
  return o;
}

// --- derivatives --------------------------------------------------------------------------------

struct Backward {
  std::shared_ptr<const Graph> graph;  // placeholders: slots, then results, then gradients
  size_t num_slots = 0, num_results = 0;
  std::vector<Slot> slots;
};

std::string needs_text(const GradBuilder& b, const std::vector<Slot>& slots) {
  std::string s;
  for (const Slot& sl : slots) {
    if (!s.empty()) s += ", ";
    s += "'" + b.op().schema.args[sl.arg].name + "'" +
         (sl.elem >= 0 ? "[" + std::to_string(sl.elem) + "]" : "");
  }
  return s;
}

bool slot_needs(const GradBuilder& b, const Slot& s) {
  return s.elem < 0 ? b.needs(s.arg) : b.needs(s.arg, static_cast<size_t>(s.elem));
}

Backward trace_backward(GradBuilder& b, const std::vector<bool>& grad_defined) {
  const Node& call = b.node();
  const OpDef& op = b.op();
  auto tmpl = std::make_unique<Graph>();
  std::vector<Slot> slots = tensor_slots(call);
  FakeTrace trace(*tmpl, rule_options(call, call_device(call, slots), *tmpl));
  TraceSetup s = setup_trace(trace, *tmpl, call,
                             [&](const Node&, const Slot& sl) { return slot_needs(b, sl); });
  std::vector<Slot> needed;
  for (const Slot& sl : s.slots)
    if (slot_needs(b, sl)) needed.push_back(sl);
  c10::OperatorHandle handle = handle_of(op);
  std::vector<Node*> placeholders = tmpl->placeholders();
  Node* before_forward = placeholders.empty() ? nullptr : placeholders.back();
  {
    c10::AutoGradMode grad(true);
    try {
      handle.callBoxed(s.stack);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw Error(op.name +
                  ": running it on fake tensors to trace its derivative: " + libtorch_message(e));
    }
  }
  // What the forward recorded (the call itself, and whatever its autograd kernel computed).
  std::vector<Node*> forward_nodes;
  for (Node* n = before_forward ? before_forward->next() : *tmpl->nodes().begin();
       n && n->kind() != NodeKind::Output; n = n->next())
    forward_nodes.push_back(n);
  std::vector<at::Tensor> outs = result_tensors(s.stack);
  // The results stand for the forward call's results; the call itself is left dead.
  for (size_t r = 0; r < outs.size(); ++r) {
    const ValueMeta& m =
        call.meta().kind == ValueMeta::Kind::Tuple ? call.meta().elems.at(r) : call.meta();
    if (!outs[r].defined() || !m.is_tensor()) continue;
    ValueMeta pm = m;
    pm.tensor.requires_grad = false;
    Node* p = tmpl->add_placeholder("result_" + std::to_string(r), pm);
    trace.bind(outs[r], p);
  }
  std::shared_ptr<torch::autograd::Node> grad_fn;
  for (const at::Tensor& o : outs)
    if (o.defined() && o.grad_fn()) grad_fn = o.grad_fn();
  std::vector<Arg> grads_out(s.slots.size());
  if (!grad_fn && !needed.empty())
    throw Error(op.name + " (" + op.schema.text +
                "): libtorch's autograd does not differentiate "
                "it (its results have no grad_fn); the inputs " +
                needs_text(b, needed) + " need a gradient");
  if (grad_fn) {
    std::string fn_name = grad_fn->name();
    // NotImplemented; libtorch 2's autograd fallback for an op without an autograd kernel gives
    // a WarnNotImplemented, whose backward only warns.
    if (fn_name.find("NotImplemented") != std::string::npos)
      throw Error(op.name + " (" + op.schema.text +
                  "): libtorch has no derivative for it; the "
                  "inputs " +
                  needs_text(b, needed) + " need a gradient");
    torch::autograd::variable_list grads(grad_fn->num_inputs());
    for (size_t r = 0; r < outs.size(); ++r) {
      if (!outs[r].defined() || outs[r].grad_fn() != grad_fn) continue;
      if (r >= grad_defined.size() || !grad_defined[r]) continue;
      ValueMeta gm = b.grad(r)->meta();
      gm.tensor.requires_grad = false;
      Node* p = tmpl->add_placeholder("grad_" + std::to_string(r), gm);
      grads.at(outs[r].output_nr()) = trace.fake(p);
    }
    torch::autograd::variable_list gin;
    {
      c10::NoGradGuard no_grad;
      try {
        gin = (*grad_fn)(torch::autograd::variable_list(grads));
      } catch (const Error&) {
        throw;
      } catch (const std::exception& e) {
        // A formula that reads every output's gradient (a double backward) gets zeros for the
        // ones that have none, as the autograd engine's materialized gradients.
        bool filled = false;
        for (size_t r = 0; r < outs.size(); ++r) {
          if (!outs[r].defined() || outs[r].grad_fn() != grad_fn) continue;
          at::Tensor& g = grads.at(outs[r].output_nr());
          if (g.defined() || !outs[r].is_floating_point()) continue;
          g = at::zeros_like(outs[r]);
          filled = true;
        }
        try {
          if (!filled) throw;
          gin = (*grad_fn)(torch::autograd::variable_list(grads));
        } catch (const Error&) {
          throw;
        } catch (const std::exception&) {
          throw Error(op.name + " (" + op.schema.text +
                      "): libtorch's derivative failed for the "
                      "inputs " +
                      needs_text(b, needed) + ": " + libtorch_message(e));
        }
      }
    }
    // Input k's gradient is the one flowing along the edge to its fake's grad accumulator.
    for (size_t k = 0; k < s.slots.size(); ++k) {
      if (!s.fakes[k].requires_grad()) continue;
      torch::autograd::Edge to = torch::autograd::impl::gradient_edge(s.fakes[k]);
      for (size_t e = 0; e < grad_fn->num_outputs() && e < gin.size(); ++e) {
        const torch::autograd::Edge& edge = grad_fn->next_edge(e);
        if (edge.function != to.function || !gin[e].defined()) continue;
        Node* gn = trace.node_of(gin[e]);
        if (!gn)
          throw Error(op.name + ": the gradient libtorch computed for input " +
                      needs_text(b, {s.slots[k]}) + " is not made from the traced values");
        grads_out[k] = Arg(gn);
      }
    }
  }
  tmpl->set_output(Arg::of_tuple(grads_out));
  // The forward's nodes go when no gradient reads them (random ones too: the backward reads the
  // forward's results, it does not run the op again); then whatever else is dead.
  std::set<const Node*> kept_forward;
  for (auto it = forward_nodes.rbegin(); it != forward_nodes.rend(); ++it) {
    if ((*it)->users().empty() && !writes_intermediates(**it))
      tmpl->erase(*it);
    else
      kept_forward.insert(*it);
  }
  tmpl = functional_template(std::move(tmpl), op.name + "'s derivative, traced through libtorch",
                             kept_forward);
  eliminate_dead_code(*tmpl);
  Backward bw;
  bw.slots = s.slots;
  bw.num_slots = s.slots.size();
  bw.num_results = outs.size();
  bw.graph = std::shared_ptr<const Graph>(std::move(tmpl));
  return bw;
}

// Whether a tracing error says libtorch's formula needs the data (a value read, a shape from
// values): then the backward is left to libtorch's autograd at run time.
bool reads_data(const std::string& msg) {
  return msg.find("data_dependent_output") != std::string::npos ||
         msg.find("dynamic_output_shape") != std::string::npos;
}

// Note [Eager backward]
// Some of libtorch's formulas read their inputs' values: prod's and cumprod's count zeros,
// max/min/median of a whole tensor find the selected element with a mask, masked_fill's value
// gradient selects by its mask, index_reduce and scatter_reduce(prod) test for zeros. On fake
// tensors there are no values, so their backward cannot be traced ahead of time (PyTorch's
// make_fx fails on them too, without real tensors). The backward node is then
// higher_order.eager_backward(grads, needs, op, *args): at run time it runs the op once more
// under libtorch's autograd on the saved inputs and returns the gradients of the inputs that
// need one -- correct for any values, at the price of the op's forward run again in the backward.
void eager_backward_call(GradBuilder& b) {
  const Node& call = b.node();
  const OpDef& op = *call.op();
  std::vector<Arg> grads;
  size_t n_results = call.meta().kind == ValueMeta::Kind::Tuple ? call.meta().elems.size() : 1;
  for (size_t r = 0; r < n_results; ++r) grads.push_back(b.grad(r) ? Arg(b.grad(r)) : Arg::none());
  std::vector<int64_t> needs;
  for (const Slot& s : tensor_slots(call)) {
    if (!slot_needs(b, s)) continue;
    if (s.elem >= 0)
      throw Error(op.name + ": its backward reads data, and a Tensor[] argument's gradient (" +
                  op.schema.args[s.arg].name + ") cannot be left to libtorch at run time");
    needs.push_back(static_cast<int64_t>(s.arg));
  }
  if (needs.empty()) return;
  // The higher-order op wraps the op of aten_ops() by that name (the call may come from another
  // table of the same ops, as the gradient sweep's).
  const OpDef& wrapped = aten_ops().get(op.name);
  std::vector<Arg> args = {Arg::of_list(std::move(grads)), Arg::of_ints(needs),
                           Arg::of_op(wrapped)};
  // The wrapped op's keyword-only arguments (cumprod's dtype, index_reduce's include_self) stay
  // keyword-only in the higher-order op's schema.
  std::vector<std::pair<std::string, Arg>> kwargs;
  for (size_t i = 0; i < call.args().size(); ++i) {
    if (i < op.schema.args.size() && op.schema.args[i].kwarg_only)
      kwargs.emplace_back(op.schema.args[i].name, call.args()[i]);
    else
      args.push_back(call.args()[i]);
  }
  const OpDef& eager = aten_ops().higher_order(kEagerBackward, wrapped);
  Node* node = b.call(eager, std::move(args), std::move(kwargs));
  for (size_t k = 0; k < needs.size(); ++k)
    b.set(static_cast<size_t>(needs[k]), b.getitem(node, static_cast<int64_t>(k)));
  count_provider_event(ProviderEvent::kEagerBackward);
}

void apply_traced_backward(GradBuilder& b) {
  const Node& call = b.node();
  std::vector<bool> grad_defined;
  size_t n_results = call.meta().kind == ValueMeta::Kind::Tuple ? call.meta().elems.size() : 1;
  for (size_t r = 0; r < n_results; ++r) grad_defined.push_back(b.grad(r) != nullptr);
  std::string key = call_key(call) + "|needs";
  // The incoming gradients' layouts too: the copied nodes' metadata must be theirs.
  for (size_t r = 0; r < n_results; ++r)
    if (Node* g = b.grad(r)) key += "|g" + std::to_string(r) + g->meta().annotation();
  for (const Slot& s : tensor_slots(call)) key += slot_needs(b, s) ? '1' : '0';
  key += "|grads";
  for (bool d : grad_defined) key += d ? '1' : '0';

  static RuleCache<Backward> cache;
  std::shared_ptr<const Backward> bw = cache.find(key);
  if (bw) {
    count_provider_event(ProviderEvent::kDerivativeCacheHit);
  } else {
    try {
      bw = std::make_shared<const Backward>(trace_backward(b, grad_defined));
      count_provider_event(ProviderEvent::kTracedDerivative);
    } catch (const Error& e) {
      if (!reads_data(e.message())) throw;
      bw = std::make_shared<const Backward>();  // no graph: libtorch's autograd at run time
    }
    cache.insert(key, bw);
  }
  if (!bw->graph) return eager_backward_call(b);

  // The template's placeholders take the call's inputs, its results (read as saved values, only
  // where the backward uses them) and its incoming gradients.
  std::vector<Arg> inputs;
  for (const Node* p : bw->graph->placeholders()) {
    const std::string& name = p->name();
    size_t idx = static_cast<size_t>(std::stoul(name.substr(name.find('_') + 1)));
    if (name.rfind("input_", 0) == 0) {
      inputs.push_back(Arg(const_cast<Node*>(slot_node(call, bw->slots[idx]))));
    } else if (name.rfind("result_", 0) == 0) {
      inputs.push_back(p->users().empty() ? Arg() : Arg(b.result(idx)));
    } else {
      inputs.push_back(p->users().empty() ? Arg() : Arg(b.grad(idx)));
    }
  }
  Arg grads = inline_graph(b.graph(), *bw->graph, inputs);
  for (size_t k = 0; k < bw->slots.size(); ++k) {
    const Arg& g = grads.list.at(k);
    if (!g.is_node()) continue;
    const Slot& s = bw->slots[k];
    // libtorch's engine sums a gradient to its input's sizes when the input expands to it, and
    // rejects any other (validate_outputs); so does aotgrad, before the graph runs.
    const TensorMeta& in = slot_node(call, s)->meta().tensor;
    const TensorMeta& gm = g.node->meta().tensor;
    bool expandable = in.dim() <= gm.dim();
    for (int64_t d = 1; expandable && d <= in.dim(); ++d) {
      const SymInt& gs = gm.sizes[static_cast<size_t>(gm.dim() - d)];
      const SymInt& is = in.sizes[static_cast<size_t>(in.dim() - d)];
      if (!(gs == is) && !(is == 1)) expandable = false;
    }
    if (!expandable)
      throw Error(call.op()->name + ": libtorch's derivative gives " + needs_text(b, {s}) +
                  " a gradient of sizes " + gm.annotation() + ", to which its sizes " +
                  in.annotation() + " do not expand (libtorch's autograd rejects it too)");
    if (s.elem < 0)
      b.set(s.arg, g.node);
    else
      b.set(s.arg, static_cast<size_t>(s.elem), g.node);
  }
}

// --- decompositions -----------------------------------------------------------------------------

std::shared_ptr<const Graph> trace_decomposition(const Node& call) {
  const OpDef& op = *call.op();
  auto tmpl = std::make_unique<Graph>();
  std::vector<Slot> slots = tensor_slots(call);
  FakeTrace trace(*tmpl, rule_options(call, call_device(call, slots), *tmpl));
  // Floating inputs require grad, so that the kernel takes its differentiable path (an aotgrad
  // graph is decomposed before it is differentiated).
  TraceSetup s = setup_trace(trace, *tmpl, call, [](const Node&, const Slot&) { return true; });
  c10::OperatorHandle handle = handle_of(op);
  {
    c10::AutoGradMode grad(true);
    try {
      handle.callBoxed(s.stack);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw Error(op.name + ": running its CompositeImplicitAutograd kernel on fake tensors: " +
                  libtorch_message(e));
    }
  }
  auto result_node = [&](const at::Tensor& t) -> Arg {
    if (!t.defined()) return Arg();
    Node* n = trace.node_of(t);
    if (!n)
      throw Error(op.name +
                  ": its composite kernel returns a tensor that is not made from its "
                  "inputs (" +
                  t.toString() + ")");
    return Arg(n);
  };
  std::vector<Arg> outs;
  for (const c10::IValue& v : s.stack) {
    if (v.isTensor()) {
      outs.push_back(result_node(v.toTensor()));
    } else if (v.isTensorList()) {
      std::vector<Arg> l;
      for (const at::Tensor& t : v.toTensorVector()) l.push_back(result_node(t));
      outs.push_back(Arg::of_tuple(std::move(l)));
    } else {
      throw Error(op.name + ": its composite kernel returns " + v.tagKind() +
                  ", which a decomposition cannot give");
    }
  }
  tmpl->set_output(outs.size() == 1 ? outs[0] : Arg::of_tuple(std::move(outs)));
  tmpl = functional_template(std::move(tmpl), op.name + "'s composite kernel, traced");
  eliminate_dead_code(*tmpl);
  return std::shared_ptr<const Graph>(std::move(tmpl));
}

Arg decomposition_fn(DecompBuilder& b) {
  const Node& call = b.node();
  std::string key = call_key(call);
  static RuleCache<Graph> cache;
  std::shared_ptr<const Graph> g = cache.find(key);
  if (g) {
    count_provider_event(ProviderEvent::kDecompositionCacheHit);
  } else {
    g = trace_decomposition(call);
    count_provider_event(ProviderEvent::kTracedDecomposition);
    cache.insert(key, g);
  }
  std::vector<Arg> inputs;
  std::vector<Slot> slots = tensor_slots(call);
  for (const Slot& s : slots) inputs.push_back(Arg(const_cast<Node*>(slot_node(call, s))));
  return inline_graph(b.graph(), *g, inputs);
}

}  // namespace

std::shared_ptr<const DerivativeRule> traced_derivative() {
  static const auto r = derivative_fn(apply_traced_backward, "traced through libtorch's autograd");
  return r;
}

std::shared_ptr<const Decomposition> traced_decomposition() {
  static const auto d = decomp(decomposition_fn, kCoreTable | kFullTable,
                               "CompositeImplicitAutograd kernel, traced through libtorch");
  return d;
}

}  // namespace aotgrad
