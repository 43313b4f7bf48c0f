// aotgrad: GradBuilder -- the graph-building side of derivative rules.
#include "aotgrad/ops/derivative.h"

#include <optional>

#include "aotgrad/ir/error.h"
#include "aotgrad/ops/op_call.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {

GradBuilder::GradBuilder(Graph& graph, const Node& forward, std::vector<Node*> grad_outputs,
                         std::vector<bool> needs_input_grad)
    : g_(graph),
      fwd_(forward),
      grad_outputs_(std::move(grad_outputs)),
      needs_(std::move(needs_input_grad)),
      input_grads_(forward.args().size(), nullptr),
      list_needs_(forward.args().size()),
      list_grads_(forward.args().size()) {}

Node* GradBuilder::input(size_t i) const {
  const Arg& a = fwd_.args().at(i);
  AOTGRAD_CHECK(a.is_node(), fwd_.describe(), ": derivative rule reads argument '",
                op().schema.args.at(i).name, "' as a value, but it is ", arg_to_string(a));
  return a.node;
}

const TensorMeta& GradBuilder::input_meta(size_t i) const { return input(i)->tensor_meta(); }

Node* GradBuilder::result(size_t i) {
  if (results_.size() <= i) results_.resize(i + 1, nullptr);
  if (results_[i]) return results_[i];
  Node* r = const_cast<Node*>(&fwd_);
  if (fwd_.meta().kind == ValueMeta::Kind::Tuple) {
    // Find the forward graph's getitem of output i, or make one.
    r = nullptr;
    for (Node* u : fwd_.users())
      if (u->kind() == NodeKind::GetItem && u->getitem_index() == static_cast<int64_t>(i)) r = u;
    if (!r) r = g_.add_getitem(const_cast<Node*>(&fwd_), static_cast<int64_t>(i));
  }
  // A saved output is unpacked detached, twice, as in the joint graphs PyTorch traces. Both are
  // marked is_backward: a double backward differentiates through them (Note [Double backward]).
  Node* d = call("detach.default", {Arg(r)});
  results_[i] = call("detach.default", {Arg(d)});
  d->info().is_backward = results_[i]->info().is_backward = true;
  return results_[i];
}

const TensorMeta& GradBuilder::result_meta(size_t i) const {
  const ValueMeta& m = fwd_.meta();
  if (m.kind == ValueMeta::Kind::Tuple) {
    AOTGRAD_CHECK(i < m.elems.size() && m.elems[i].is_tensor(), fwd_.describe(), ": result ", i,
                  " is not a tensor");
    return m.elems[i].tensor;
  }
  return fwd_.tensor_meta();
}

Node* GradBuilder::saved_output(size_t i) {
  Node* fwd = const_cast<Node*>(&fwd_);
  int64_t k = static_cast<int64_t>(i);
  for (Node* u : fwd->users())
    if (u->kind() == NodeKind::GetItem && u->getitem_input() == fwd && u->getitem_index() == k)
      return u;
  Node* last = fwd;
  while (last->next() && last->next()->kind() == NodeKind::GetItem &&
         last->next()->getitem_input() == fwd && last->next()->getitem_index() < k)
    last = last->next();
  Node* insertion = g_.insertion_point();
  g_.set_insertion_point(last->next());
  Node* r = g_.add_getitem(fwd, k);
  g_.set_insertion_point(insertion);
  return r;
}

Node* GradBuilder::grad_or_zeros(size_t i) {
  if (Node* g = grad(i)) return g;
  Node* r = const_cast<Node*>(&fwd_);
  if (fwd_.meta().kind == ValueMeta::Kind::Tuple) r = getitem(r, static_cast<int64_t>(i));
  return zeros_like(r);
}

void GradBuilder::set(size_t i, Node* g) {
  if (i >= input_grads_.size() || !needs(i)) return;
  input_grads_[i] = g;
}

bool GradBuilder::needs(size_t i, size_t k) const {
  return i < list_needs_.size() && k < list_needs_[i].size() && list_needs_[i][k];
}

void GradBuilder::set(size_t i, size_t k, Node* g) {
  if (!needs(i, k)) return;
  if (list_grads_[i].size() <= k) list_grads_[i].resize(list_needs_[i].size(), nullptr);
  list_grads_[i][k] = g;
}

void GradBuilder::set_list_needs(size_t i, std::vector<bool> needs) {
  if (i >= list_needs_.size()) return;
  bool any = false;
  for (bool n : needs) any = any || n;
  list_needs_[i] = std::move(needs);
  if (i >= needs_.size()) needs_.resize(i + 1, false);
  needs_[i] = any;
}

Node* GradBuilder::call(std::string_view op_name, std::vector<Arg> args,
                        std::vector<std::pair<std::string, Arg>> kwargs) {
  try {
    return append_call(g_, op_name, std::move(args), std::move(kwargs));
  } catch (const Error& e) {
    throw Error("derivative of " + fwd_.describe() + ": " + e.message());
  }
}

Node* GradBuilder::call(const OpDef& op, std::vector<Arg> args,
                        std::vector<std::pair<std::string, Arg>> kwargs) {
  try {
    return append_call(g_, op, std::move(args), std::move(kwargs));
  } catch (const Error& e) {
    throw Error("derivative of " + fwd_.describe() + ": " + e.message());
  }
}

Node* GradBuilder::getitem(Node* tuple, int64_t index) { return g_.add_getitem(tuple, index); }

Arg GradBuilder::sizes_arg(const SymIntVector& sizes, Node* like) {
  std::vector<Arg> l;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d].is_concrete()) {
      l.push_back(Arg::of_int(sizes[d].value()));
      continue;
    }
    l.push_back(sym_arg(sizes[d], like, static_cast<int64_t>(d)));
  }
  return Arg::of_list(std::move(l));
}

// A symbolic size as a value of the graph, as PyTorch's proxies for SymInts are: a bare symbol
// from the first input (a SymInt input, or a dimension of a tensor input) that is it, so that every
// read of it is one node after CSE (and the partition saves one SymInt for it, not one per tensor
// read); an expression from `like` at dimension `dim` when that is the size, else from the first
// input whose size it is. A bare symbol that inputs have only as a multiple c*s is that size // c
// (before `like`, whose read the partitioner would have to save or recompute).
Arg GradBuilder::sym_arg(const SymInt& s, Node* like, int64_t dim) {
  if (s.is_concrete()) return Arg::of_int(s.value());
  auto read = [&](Node* t, int64_t d) {
    return Arg(call("sym_size.int", {Arg(t), Arg::of_int(d)}));
  };
  auto from_inputs = [&]() -> std::optional<Arg> {
    for (Node* p : g_.placeholders()) {
      const ValueMeta& m = p->meta();
      if (m.kind == ValueMeta::Kind::SymInt && m.sym == s) return Arg(p);
      if (!m.is_tensor()) continue;
      for (size_t d = 0; d < m.tensor.sizes.size(); ++d)
        if (m.tensor.sizes[d] == s) return read(p, static_cast<int64_t>(d));
    }
    return std::nullopt;
  };
  // A symbol that inputs have only as multiples c*s (a graph traced for sizes divisible by c).
  auto from_multiple = [&]() -> std::optional<Arg> {
    const std::string* name = s.symbol_name();
    for (Node* p : g_.placeholders()) {
      if (!p->meta().is_tensor()) continue;
      const SymIntVector& sizes = p->tensor_meta().sizes;
      for (size_t d = 0; d < sizes.size(); ++d)
        if (auto scaled = sizes[d].scaled_symbol(); scaled && scaled->first == *name)
          return Arg(call("operator::floordiv",
                          {read(p, static_cast<int64_t>(d)), Arg::of_int(scaled->second)}));
    }
    return std::nullopt;
  };
  if (s.symbol_name()) {
    if (std::optional<Arg> a = from_inputs()) return *a;
    if (std::optional<Arg> a = from_multiple()) return *a;
  }
  if (like && like->meta().is_tensor()) {
    const SymIntVector& ls = like->tensor_meta().sizes;
    if (dim >= 0 && dim < static_cast<int64_t>(ls.size()) && ls[dim] == s) return read(like, dim);
    for (size_t d = 0; d < ls.size(); ++d)
      if (ls[d] == s) return read(like, static_cast<int64_t>(d));
  }
  if (std::optional<Arg> a = from_inputs()) return *a;
  throw Error("derivative of " + fwd_.describe() + ": no input of the graph has the size " +
              s.to_string() + " to read it from");
}

Node* GradBuilder::sum_to(Node* x, const SymIntVector& shape) {
  const TensorMeta& m = x->tensor_meta();
  if (m.sizes == shape) return x;
  if (shape.empty()) return call("sum.default", {Arg(x)});  // at::sum_to's 0-dim case
  int64_t leading = m.dim() - static_cast<int64_t>(shape.size());
  std::vector<Arg> dims;
  for (int64_t d = 0; d < m.dim(); ++d) {
    if (d < leading) {
      dims.push_back(Arg::of_int(d));
      continue;
    }
    if (shape[d - leading] == 1 && !(m.sizes[d] == 1)) dims.push_back(Arg::of_int(d));
  }
  Node* r = x;
  if (!dims.empty())
    r = call("sum.dim_IntList", {Arg(x), Arg::of_list(std::move(dims)), Arg::of_bool(true)});
  if (leading > 0) {
    std::vector<Arg> l;
    for (size_t d = 0; d < shape.size(); ++d) l.push_back(sym_arg(shape[d], r, d + leading));
    r = call("view.default", {Arg(r), Arg::of_list(std::move(l))});
  }
  return r;
}

Node* GradBuilder::zeros_like(Node* x) {
  // at::zeros_like(x) as the C++ formulas call it (memory_format unset), as PyTorch traces it.
  return call("zeros_like.default", {Arg(x)});
}

Node* GradBuilder::scalar_mul(Node* x, double v) {
  if (v == 1.0) return x;
  return call("mul.Tensor", {Arg(x), Arg::of_float(v)});
}

}  // namespace aotgrad
