// aotgrad: derivative rules of the neural-network ops (tools/autograd/derivatives.yaml and
// torch/csrc/autograd/FunctionsManual.cpp, PyTorch 1.13), as the ATen graphs AOTAutograd traces.
#include "nn_grads.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "aotgrad/ir/error.h"
#include "aotgrad/ops/meta_util.h"

namespace aotgrad::nn_grads {
namespace {

// Conventions of these rules (as PyTorch's traces show them):
// - A backward function computes its inputs' gradients in the order of the formula keys
//   ("grad_output" before "output" / "self"), and GCC evaluates the operands of a C++ expression
//   right to left, so `a - b - c` traces c, then b, then a.
// - The formulas here refer to `grad` only, so only result 0 of a multi-output op is
//   differentiable; saved results 1.. (mean/rstd, indices, masks, total_weight) are read as the
//   forward's getitems, without the detach pair that differentiable saved outputs get.
// - `zeros_like(self)` on a backward input is autograd's TypeAndSize::zeros(): at::zeros(sizes,
//   options) with dtype, layout and device given.

// Saved result i of the forward node (a getitem of it, as the forward graph already has when
// the result was traced): not detached (see above). A missing getitem is added among the getitems
// that follow the forward node, in index order.
Node* saved_output(GradBuilder& b, int64_t i) {
  Node* fwd = const_cast<Node*>(&b.node());
  for (Node* u : fwd->users())
    if (u->kind() == NodeKind::GetItem && u->getitem_input() == fwd && u->getitem_index() == i)
      return u;
  Node* last = fwd;
  while (last->next() && last->next()->kind() == NodeKind::GetItem &&
         last->next()->getitem_input() == fwd && last->next()->getitem_index() < i)
    last = last->next();
  Graph& g = b.graph();
  Node* insertion = g.insertion_point();
  g.set_insertion_point(last->next());
  Node* r = g.add_getitem(fwd, i);
  g.set_insertion_point(insertion);
  return r;
}

// PyTorch's check_no_requires_grad for a tensor argument without a formula: the call is refused.
void no_requires_grad(const GradBuilder& b, size_t i) {
  if (!b.needs(i)) return;
  throw Error("The function '" + b.op().base_name +
              "' is not differentiable with respect to argument '" + b.op().schema.args.at(i).name +
              "'. This input cannot have requires_grad True.");
}

// A `not_implemented("what")` formula.
void not_implemented(const GradBuilder& b, size_t i, const std::string& what) {
  if (b.needs(i)) throw Error("the derivative for '" + what + "' is not implemented.");
}

// An int[N] argument as C++ receives it: a single int repeated N times, a list as given.
Arg int_array(const GradBuilder& b, size_t i) {
  const Arg& a = b.arg(i);
  if (a.kind != Arg::Kind::Int) return a;
  int n = b.op().schema.args.at(i).type.list_size;
  return Arg::of_list(std::vector<Arg>(static_cast<size_t>(n > 0 ? n : 1), a));
}

Arg bool_list(std::initializer_list<bool> v) {
  std::vector<Arg> l;
  for (bool x : v) l.push_back(Arg::of_bool(x));
  return Arg::of_list(std::move(l));
}

// Tensor options as a C++ formula passes them (t.options(): dtype, layout and device).
std::vector<std::pair<std::string, Arg>> options(ScalarType dtype, Device device) {
  return {{"dtype", Arg::of_dtype(dtype)},
          {"layout", Arg::of_layout(Layout::Strided)},
          {"device", Arg::of_device(device)}};
}

// `zeros_like(self)` for backward input i: TypeAndSize::zeros().
Node* zeros_of_input(GradBuilder& b, size_t i) {
  const TensorMeta& m = b.input_meta(i);
  return b.call("zeros.default", {b.sizes_arg(m.sizes, b.input(i))}, options(m.dtype, m.device));
}

// x.size(dim) as a formula reads it: an int, or sym_size for a symbolic size.
Arg size_at(GradBuilder& b, Node* x, int64_t dim) {
  const SymInt& s = x->tensor_meta().sizes.at(static_cast<size_t>(dim));
  if (s.is_concrete()) return Arg::of_int(s.value());
  return Arg(b.call("sym_size.int", {Arg(x), Arg::of_int(dim)}));
}

// x.reshape(sizes) as at::reshape traces: a view when the strides allow one, else a contiguous
// clone and _unsafe_view. `size_arg` is the sizes as the call passes them.
Node* reshape(GradBuilder& b, Node* x, const SymIntVector& sizes, const Arg& size_arg) {
  if (meta::compute_view_strides(x->tensor_meta(), sizes))
    return b.call("view.default", {Arg(x), size_arg});
  Node* c = b.call("clone.default", {Arg(x)},
                   {{"memory_format", Arg::of_memory_format(MemoryFormat::Contiguous)}});
  return b.call("_unsafe_view.default", {Arg(c), size_arg});
}

// The dim argument of a softmax kernel, for `.sum(dim, true)`.
Arg dims_of(const GradBuilder& b, size_t i) { return Arg::of_list({b.arg(i)}); }

Node* sum_keepdim(GradBuilder& b, Node* x, const Arg& dims) {
  return b.call("sum.dim_IntList", {Arg(x), dims, Arg::of_bool(true)});
}
Node* mul(GradBuilder& b, Node* x, Node* y) { return b.call("mul.Tensor", {Arg(x), Arg(y)}); }

}  // namespace

// --- forward ops ---------------------------------------------------------------------------------

void native_layer_norm_grad(GradBuilder& b) {
  Node* grad = b.grad(0);
  if (!grad) return;  // "grad.defined() ? ... : std::tuple<Tensor, Tensor, Tensor>()"
  bool m0 = b.needs(0), m1 = b.needs(2), m2 = b.needs(3);
  if (!m0 && !m1 && !m2) return;
  Node* mean = saved_output(b, 1);
  Node* rstd = saved_output(b, 2);
  Node* bw = b.call("native_layer_norm_backward.default",
                    {Arg(grad), b.arg(0), b.arg(1), Arg(mean), Arg(rstd), b.arg(2), b.arg(3),
                     bool_list({m0, m1, m2})});
  if (m0) b.set(0, b.getitem(bw, 0));
  if (m1) b.set(2, b.getitem(bw, 1));
  if (m2) b.set(3, b.getitem(bw, 2));
}

void native_batch_norm_grad(GradBuilder& b) {
  no_requires_grad(b, 3);  // running_mean
  no_requires_grad(b, 4);  // running_var
  Node* grad = b.grad(0);
  if (!grad) return;
  bool m0 = b.needs(0), m1 = b.needs(1), m2 = b.needs(2);
  if (!m0 && !m1 && !m2) return;
  Node* save_mean = saved_output(b, 1);
  Node* save_invstd = saved_output(b, 2);
  Node* bw = b.call("native_batch_norm_backward.default",
                    {Arg(grad), b.arg(0), b.arg(1), b.arg(3), b.arg(4), Arg(save_mean),
                     Arg(save_invstd), b.arg(5), b.arg(7), bool_list({m0, m1, m2})});
  if (m0) b.set(0, b.getitem(bw, 0));
  if (m1) b.set(1, b.getitem(bw, 1));
  if (m2) b.set(2, b.getitem(bw, 2));
}

void softmax_grad(GradBuilder& b) {
  b.set(0, b.call("_softmax_backward_data.default", {Arg(b.grad()), Arg(b.result()), b.arg(1),
                                                     Arg::of_dtype(b.input_meta(0).dtype)}));
}

void log_softmax_grad(GradBuilder& b) {
  b.set(0, b.call("_log_softmax_backward_data.default", {Arg(b.grad()), Arg(b.result()), b.arg(1),
                                                         Arg::of_dtype(b.input_meta(0).dtype)}));
}

void nll_loss_forward_grad(GradBuilder& b) {
  no_requires_grad(b, 2);  // weight
  Node* grad = b.grad(0);
  if (!grad || !b.needs(0)) return;
  Node* total_weight = saved_output(b, 1);
  b.set(0, b.call("nll_loss_backward.default", {Arg(grad), b.arg(0), b.arg(1), b.arg(2), b.arg(3),
                                                b.arg(4), Arg(total_weight)}));
}

void embedding_grad(GradBuilder& b) {
  // embedding_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq, sparse)
  if (b.arg(4).kind == Arg::Kind::Bool && b.arg(4).i)
    throw Error(
        "embedding with sparse=True: its gradient is a sparse tensor "
        "(embedding_sparse_backward), which aotgrad does not support");
  Node* weight = b.input(0);
  Arg num_weights = size_at(b, weight, 0);
  b.set(0, b.call("embedding_dense_backward.default",
                  {Arg(b.grad()), b.arg(1), num_weights, b.arg(2), b.arg(3)}));
}

void native_dropout_grad(GradBuilder& b) {
  Node* grad = b.grad(0);
  if (!grad) return;
  // (!train.has_value() || !train.value() ? 1 : (p == 1 ? 0.0 : 1.0 / (1.0 - p))): 1.13's formula
  // scales by 1 when train is None although the forward then drops (as eager autograd does).
  const Arg& train = b.arg(2);
  double p = b.arg(1).kind == Arg::Kind::Float ? b.arg(1).f : static_cast<double>(b.arg(1).i);
  bool training = train.kind == Arg::Kind::Bool && train.i;
  double scale = !training ? 1.0 : (p == 1 ? 0.0 : 1.0 / (1.0 - p));
  Node* mask = saved_output(b, 1);
  b.set(0, b.call("native_dropout_backward.default", {Arg(grad), Arg(mask), Arg::of_float(scale)}));
}

void max_pool2d_with_indices_grad(GradBuilder& b) {
  Node* grad = b.grad(0);
  if (!grad) return;
  Node* indices = saved_output(b, 1);
  b.set(0, b.call("max_pool2d_with_indices_backward.default",
                  {Arg(grad), b.arg(0), int_array(b, 1), int_array(b, 2), int_array(b, 3),
                   int_array(b, 4), b.arg(5), Arg(indices)}));
}

void avg_pool2d_grad(GradBuilder& b) {
  b.set(0, b.call("avg_pool2d_backward.default",
                  {Arg(b.grad()), b.arg(0), int_array(b, 1), int_array(b, 2), int_array(b, 3),
                   b.arg(4), b.arg(5), b.arg(6)}));
}

void adaptive_avg_pool2d_grad(GradBuilder& b) {
  b.set(0, b.call("_adaptive_avg_pool2d_backward.default", {Arg(b.grad()), b.arg(0)}));
}

// --- backward kernels ----------------------------------------------------------------------------

// grad_output: _softmax_backward_data(grad, output, dim, input_dtype)
// output: softmax_double_backward(grad, grad_output, dim, output) = grad_output * grad
//   - (output * grad_output).sum(dim, true) * grad - grad_output * (output * grad).sum(dim, true)
void softmax_backward_data_grad(GradBuilder& b) {
  Node* grad = b.grad();
  if (b.needs(0))
    b.set(0, b.call("_softmax_backward_data.default", {Arg(grad), b.arg(1), b.arg(2), b.arg(3)}));
  if (!b.needs(1)) return;
  Node* grad_output = b.input(0);
  Node* output = b.input(1);
  Arg dims = dims_of(b, 2);
  Node* c = mul(b, grad_output, sum_keepdim(b, mul(b, output, grad), dims));
  Node* bb = mul(b, sum_keepdim(b, mul(b, output, grad_output), dims), grad);
  Node* a = mul(b, grad_output, grad);
  Node* ab = b.call("sub.Tensor", {Arg(a), Arg(bb)});
  b.set(1, b.call("sub.Tensor", {Arg(ab), Arg(c)}));
}

// grad_output: grad - (grad * output.exp()).sum(dim, true)
// output: (-grad_output.sum(dim, true) * output.exp() * grad)
void log_softmax_backward_data_grad(GradBuilder& b) {
  Node* grad = b.grad();
  Arg dims = dims_of(b, 2);
  if (b.needs(0)) {
    Node* e = b.call("exp.default", {b.arg(1)});
    Node* s = sum_keepdim(b, mul(b, grad, e), dims);
    b.set(0, b.call("sub.Tensor", {Arg(grad), Arg(s)}));
  }
  if (b.needs(1)) {
    Node* e = b.call("exp.default", {b.arg(1)});
    Node* n = b.call("neg.default", {Arg(sum_keepdim(b, b.input(0), dims))});
    b.set(1, mul(b, mul(b, n, e), grad));
  }
}

// grad_output: nll_loss(grad, target, weight, reduction, ignore_index); self: zeros_like(grad);
// target: non_differentiable (weight, total_weight: no formula)
void nll_loss_backward_grad(GradBuilder& b) {
  no_requires_grad(b, 3);  // weight
  no_requires_grad(b, 6);  // total_weight
  Node* grad = b.grad();
  if (b.needs(0)) {
    Node* nll =
        b.call("nll_loss_forward.default", {Arg(grad), b.arg(2), b.arg(3), b.arg(4), b.arg(5)});
    b.set(0, b.getitem(nll, 0));
  }
  if (b.needs(1)) b.set(1, b.call("zeros_like.default", {Arg(grad)}));
}

// grad_output: embedding_dense_double_backward(grad, indices, padding_idx) =
//   grad.index_select(0, indices.reshape(-1)), its padding_idx rows zeroed
//   (masked_fill_((indices == padding_idx).reshape({-1, 1}), 0)), viewed as indices.sizes() + [-1]
void embedding_dense_backward_grad(GradBuilder& b) {
  if (!b.needs(0)) return;
  Node* indices = b.input(1);
  const TensorMeta& im = indices->tensor_meta();
  SymInt n = im.numel();
  // indices.reshape(-1) and .reshape({-1, 1}) with the size inferred: numel.
  Arg numel =
      n.is_concrete() ? Arg::of_int(n.value()) : Arg(b.call("sym_numel.default", {Arg(indices)}));
  Node* flat = reshape(b, indices, {n}, Arg::of_list({numel}));
  Node* gg = b.call("index_select.default", {Arg(b.grad()), Arg::of_int(0), Arg(flat)});
  const Arg& padding_idx = b.arg(3);
  if (padding_idx.kind == Arg::Kind::Int && padding_idx.i >= 0) {
    Node* eq = b.call("eq.Scalar", {Arg(indices), padding_idx});
    Node* m = reshape(b, eq, {n, SymInt(1)}, Arg::of_list({numel, Arg::of_int(1)}));
    gg = b.call("masked_fill.Scalar", {Arg(gg), Arg(m), Arg::of_int(0)});
  }
  Arg size = b.sizes_arg(im.sizes, indices);
  // indices.sizes() + [-1]; with symbolic sizes the last one is given (the view meta function
  // does not infer a -1 next to symbolic sizes).
  size.list.push_back(n.is_concrete() ? Arg::of_int(-1) : size_at(b, gg, 1));
  b.set(0, b.call("view.default", {Arg(gg), size}));
}

// grad_output: grad * (mask.type_as(grad) * scale) (1.13; 2.x's native_dropout_double_backward is
// the same graph); mask: not_implemented
void native_dropout_backward_grad(GradBuilder& b) {
  not_implemented(b, 1, "native_dropout_backward: mask");
  if (!b.needs(0)) return;
  Node* grad = b.grad();
  const TensorMeta& gm = grad->tensor_meta();
  Node* mask = b.input(1);
  if (mask->tensor_meta().dtype != gm.dtype)
    mask = b.call("_to_copy.default", {Arg(mask)}, options(gm.dtype, gm.device));
  Node* scaled = b.call("mul.Scalar", {Arg(mask), b.arg(2)});
  b.set(0, mul(b, grad, scaled));
}

// grad_output: max_pool_double_backward(grad, indices, 2); self: zeros_like(self);
// indices: non_differentiable
void max_pool2d_with_indices_backward_grad(GradBuilder& b) {
  if (b.needs(0)) {
    Node* grad = b.grad();
    Node* indices = b.input(7);
    const TensorMeta& im = indices->tensor_meta();
    const SymInt n = im.numel();
    if (n.is_concrete() && n.value() == 0) {
      const TensorMeta& gm = grad->tensor_meta();
      b.set(0, b.call("empty_like.default", {Arg(indices)}, options(gm.dtype, gm.device)));
    } else {
      // size = indices.sizes()[:-2] + [-1]
      std::vector<Arg> size;
      for (int64_t d = 0; d < im.dim() - 2; ++d) size.push_back(size_at(b, indices, d));
      size.push_back(Arg::of_int(-1));
      Node* indices_view = b.call("view.default", {Arg(indices), Arg::of_list(size)});
      MemoryFormat fmt = meta::suggest_memory_format(im);
      const TensorMeta& gm = grad->tensor_meta();
      bool contiguous = fmt == MemoryFormat::Contiguous ? gm.is_contiguous()
                                                        : meta::is_channels_last_contiguous(gm);
      Node* g = grad;
      if (!contiguous)
        g = b.call("clone.default", {Arg(grad)}, {{"memory_format", Arg::of_memory_format(fmt)}});
      Node* gv = b.call("view.default", {Arg(g), Arg::of_list(size)});
      Node* gathered = b.call("gather.default", {Arg(gv), Arg::of_int(-1), Arg(indices_view)});
      b.set(0, b.call("view.default", {Arg(gathered), b.sizes_arg(im.sizes, indices)}));
    }
  }
  if (b.needs(1)) b.set(1, zeros_of_input(b, 1));
}

// grad_output: avg_pool2d(grad, kernel_size, stride, padding, ceil_mode, count_include_pad,
// divisor_override); self: zeros_like(self)
void avg_pool2d_backward_grad(GradBuilder& b) {
  if (b.needs(0))
    b.set(0, b.call("avg_pool2d.default", {Arg(b.grad()), int_array(b, 2), int_array(b, 3),
                                           int_array(b, 4), b.arg(5), b.arg(6), b.arg(7)}));
  if (b.needs(1)) b.set(1, zeros_of_input(b, 1));
}

// grad_output: _adaptive_avg_pool2d(grad, { grad_output.size(-2), grad_output.size(-1) });
// self: zeros_like(self)
void adaptive_avg_pool2d_backward_grad(GradBuilder& b) {
  if (b.needs(0)) {
    Node* go = b.input(0);
    int64_t nd = go->tensor_meta().dim();
    Arg size = Arg::of_list({size_at(b, go, nd - 2), size_at(b, go, nd - 1)});
    b.set(0, b.call("_adaptive_avg_pool2d.default", {Arg(b.grad()), size}));
  }
  if (b.needs(1)) b.set(1, zeros_of_input(b, 1));
}

// --- the norms' double backward ------------------------------------------------------------------
// FunctionsManual's layer_norm_double_backward and batchnorm_double_backward compute every term
// whose incoming gradients (ggI, ggG, ggB) are defined, whatever the output mask says;
// AOTAutograd's joint graph then drops the dead ones. NormBackward mirrors that: it records the
// nodes it emits and erases the unused ones at the end, so the graph is the traced one after
// dead-code elimination (names included). In-place steps of the C++ (div_, sub_, add_, mul_) are
// their functional ops, as functionalization leaves them in the joint graph.
namespace {

class NormBackward {
 public:
  explicit NormBackward(GradBuilder& b) : b_(b) {}

  Node* call(std::string_view op, std::vector<Arg> args,
             std::vector<std::pair<std::string, Arg>> kwargs = {}) {
    Node* n = b_.call(op, std::move(args), std::move(kwargs));
    made_.push_back(n);
    return n;
  }
  Node* mul(Node* x, Node* y) { return call("mul.Tensor", {Arg(x), Arg(y)}); }
  Node* mul(Node* x, const Arg& s) { return call("mul.Scalar", {Arg(x), s}); }
  Node* div(Node* x, const Arg& s) { return call("div.Scalar", {Arg(x), s}); }
  Node* add(Node* x, Node* y) { return call("add.Tensor", {Arg(x), Arg(y)}); }
  Node* sub(Node* x, Node* y) { return call("sub.Tensor", {Arg(x), Arg(y)}); }
  Node* pow(Node* x, const Arg& e) { return call("pow.Tensor_Scalar", {Arg(x), e}); }
  Node* sum(Node* x, int64_t dim, bool keepdim) {
    return call("sum.dim_IntList",
                {Arg(x), Arg::of_list({Arg::of_int(dim)}), Arg::of_bool(keepdim)});
  }
  Node* unsqueeze(Node* x, int64_t dim) {
    return call("unsqueeze.default", {Arg(x), Arg::of_int(dim)});
  }
  Node* expand(Node* x, const SymIntVector& sizes) {
    return call("expand.default", {Arg(x), Arg::of_symints(sizes)});
  }
  // x.reshape(sizes) (concrete sizes): a view, or a contiguous clone and _unsafe_view.
  Node* reshape(Node* x, const SymIntVector& sizes) {
    if (meta::compute_view_strides(x->tensor_meta(), sizes))
      return call("view.default", {Arg(x), Arg::of_symints(sizes)});
    Node* c = call("clone.default", {Arg(x)},
                   {{"memory_format", Arg::of_memory_format(MemoryFormat::Contiguous)}});
    return call("_unsafe_view.default", {Arg(c), Arg::of_symints(sizes)});
  }
  // x.to(dtype): x itself when it has that dtype.
  Node* to(Node* x, ScalarType dtype) {
    if (x->tensor_meta().dtype == dtype) return x;
    return call("_to_copy.default", {Arg(x)}, {{"dtype", Arg::of_dtype(dtype)}});
  }
  // at::ones(sizes, like.options())
  Node* ones(const SymIntVector& sizes, const TensorMeta& like) {
    return call("ones.default", {Arg::of_symints(sizes)}, options(like.dtype, like.device));
  }

  // Sets the gradients and erases the emitted nodes nothing uses.
  void finish(std::initializer_list<std::pair<size_t, Node*>> grads) {
    std::vector<Node*> keep;
    for (auto& [i, g] : grads) {
      if (!g || !b_.needs(i)) continue;
      b_.set(i, g);
      keep.push_back(g);
    }
    for (auto it = made_.rbegin(); it != made_.rend(); ++it) {
      Node* n = *it;
      if (n->users().empty() && std::find(keep.begin(), keep.end(), n) == keep.end())
        b_.graph().erase(n);
    }
  }

 private:
  GradBuilder& b_;
  std::vector<Node*> made_;
};

int64_t concrete_product(const GradBuilder& b, const SymIntVector& sizes, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) {
    if (!sizes[i].is_concrete())
      throw Error(b.node().describe() +
                  ": the double backward of a norm needs concrete sizes (PyTorch's formula "
                  "multiplies them as integers)");
    p *= sizes[i].value();
  }
  return p;
}

SymIntVector sizes2(int64_t a, int64_t b) { return {SymInt(a), SymInt(b)}; }

}  // namespace

// input, weight, grad_out: layer_norm_double_backward(input, weight, grads[0], grads[1], grads[2],
//   grad_out, mean, rstd, normalized_shape, grad_input_mask); bias: Tensor();
// mean, rstd: not_implemented
void native_layer_norm_backward_grad(GradBuilder& b) {
  not_implemented(b, 3, "native_layer_norm_backward mean");
  not_implemented(b, 4, "native_layer_norm_backward rstd");
  Node* ggI = b.grad(0);
  Node* ggG = b.grad(1);
  Node* ggB = b.grad(2);
  NormBackward e(b);
  Node* input_t = b.input(1);
  const TensorMeta& im = input_t->tensor_meta();
  size_t axis = im.sizes.size() - MetaArgs(b.op(), b.node().args()).int_list(2).size();
  int64_t M = concrete_product(b, im.sizes, 0, axis);
  int64_t N = concrete_product(b, im.sizes, axis, im.sizes.size());
  Arg n = Arg::of_int(N), neg_n = Arg::of_int(-N);
  auto sum1 = [&](Node* x) { return e.sum(x, 1, true); };

  Node* input = e.reshape(input_t, sizes2(M, N));
  Node* gO = e.reshape(b.input(0), sizes2(M, N));
  Node* save_mean = e.reshape(b.input(3), sizes2(M, 1));
  Node* save_invstd = e.reshape(b.input(4), sizes2(M, 1));
  bool affine = b.arg(5).is_node();
  Node *gamma_expanded, *ggG_expanded = nullptr, *ggB_expanded = nullptr;
  if (affine) {
    gamma_expanded = e.reshape(b.input(5), sizes2(1, N));
    if (ggG) ggG_expanded = e.reshape(ggG, sizes2(1, N));
    if (ggB) ggB_expanded = e.reshape(ggB, sizes2(1, N));
  } else {
    gamma_expanded = e.ones({SymInt(1)}, input->tensor_meta());
  }
  Node* ggI_expanded = ggI ? e.reshape(ggI, sizes2(M, N)) : nullptr;

  ScalarType dt = input->tensor_meta().dtype;
  Node* input_sub_mu = e.sub(input, e.to(save_mean, dt));
  Node* s12 = e.to(save_invstd, dt);  // sigma2_eps_neg_1_2
  Node* s1 = e.pow(s12, Arg::of_int(2));
  Node* s32 = e.pow(s12, Arg::of_int(3));
  Node* input_mu_sigma2_neg_3_2 = e.mul(input_sub_mu, s32);

  Node* gI = nullptr;
  if (ggI) {
    Node* gxhat = e.mul(gO, gamma_expanded);
    Node* gxhat_mu_sum = sum1(e.mul(gxhat, input_sub_mu));
    Node* gxhat_sum = sum1(gxhat);
    Node* ggI_sum = sum1(ggI_expanded);
    Node* ggI_mu_sum = sum1(e.mul(ggI_expanded, input_sub_mu));
    Node* all_sub = e.div(e.mul(ggI_sum, gxhat_sum), n);
    all_sub = e.sub(all_sub, sum1(e.mul(ggI_expanded, gxhat)));
    all_sub = e.add(all_sub, e.mul(e.mul(e.mul(s1, gxhat_mu_sum), ggI_mu_sum),
                                   Arg::of_float(3. / static_cast<double>(N))));
    Node* gI_0t = e.div(e.mul(input_mu_sigma2_neg_3_2, all_sub), n);
    Node* r1 = e.sub(e.div(gxhat_sum, n), gxhat);
    Node* gI_1t = e.mul(e.div(e.mul(ggI_mu_sum, s32), n), r1);
    Node* r2 = e.sub(e.div(ggI_sum, n), ggI_expanded);
    Node* gI_2t = e.mul(e.div(e.mul(gxhat_mu_sum, s32), n), r2);
    gI = e.add(e.add(gI_0t, gI_1t), gI_2t);
  }
  if (affine && ggG) {
    Node* t0 = e.mul(e.mul(gO, ggG_expanded), s12);
    Node* t1 = e.div(e.mul(s12, sum1(e.mul(gO, ggG_expanded))), neg_n);
    Node* t2s = sum1(e.mul(e.mul(gO, ggG_expanded), input_sub_mu));
    Node* t2 = e.div(e.mul(input_mu_sigma2_neg_3_2, t2s), neg_n);
    Node* term = e.add(e.add(t0, t1), t2);
    gI = gI ? e.add(gI, term) : term;
  }
  if (gI) gI = e.reshape(gI, im.sizes);

  // The first backward's grad_input.
  auto first_bwd_fn_grad_input = [&](Node* gO_local, Node* gamma_local) {
    Node* h0 = e.div(e.mul(gamma_local, s12), n);
    Node* h1 = e.mul(gO_local, n);  // (N * gO).sub_(gO.sum(1, true)): the object first
    h1 = e.sub(h1, sum1(gO_local));
    Node* s = sum1(e.mul(gO_local, input_sub_mu));
    h1 = e.sub(h1, e.mul(e.mul(input_sub_mu, s1), s));
    return e.mul(h0, h1);
  };
  Node* gG = nullptr;
  if (affine && ggI) {
    gG = first_bwd_fn_grad_input(ggI_expanded, e.ones({}, s12->tensor_meta()));
    gG = e.call("sum.dim_IntList", {Arg(e.mul(gO, gG)), Arg::of_list({Arg::of_int(0)})});
    gG = e.reshape(gG, b.input_meta(5).sizes);
  }
  Node* ggO = nullptr;
  if (ggI) ggO = first_bwd_fn_grad_input(ggI_expanded, gamma_expanded);
  if (affine && ggG) {
    Node* term = e.mul(e.mul(ggG_expanded, input_sub_mu), s12);
    ggO = ggO ? e.add(ggO, term) : term;
  }
  if (affine && ggB) ggO = ggO ? e.add(ggO, ggB_expanded) : ggB_expanded;
  if (ggO) ggO = e.reshape(e.expand(ggO, sizes2(M, N)), im.sizes);
  e.finish({{1, gI}, {5, gG}, {0, ggO}});
}

// input, weight, grad_out: batchnorm_double_backward(input, weight, grads[0], grads[1], grads[2],
//   grad_out, running_mean, running_var, train, eps, save_mean, save_invstd, grad_input_mask);
// save_mean, save_invstd: not_implemented (running_mean, running_var: no formula)
void native_batch_norm_backward_grad(GradBuilder& b) {
  no_requires_grad(b, 3);  // running_mean
  no_requires_grad(b, 4);  // running_var
  not_implemented(b, 5, "native_batch_norm_backward save_mean");
  not_implemented(b, 6, "native_batch_norm_backward save_invstd");
  Node* ggI = b.grad(0);
  Node* ggG = b.grad(1);
  Node* ggB = b.grad(2);
  NormBackward e(b);
  Node* input = b.input(1);
  Node* gO = b.input(0);
  const TensorMeta& im = input->tensor_meta();
  const int64_t nd = im.dim();
  concrete_product(b, im.sizes, 0, im.sizes.size());  // concrete sizes only
  bool training = b.arg(7).i != 0;
  // sum_exclude_dim1, unsqueeze_dim1 and expand_as_dim1 of FunctionsManual.
  auto sum_exclude_dim1 = [&](Node* x, bool keepdim) {
    Node* r = e.sum(x, 0, keepdim);
    int64_t stop = keepdim ? 1 : 0;
    for (int64_t d = r->tensor_meta().dim() - 1; d > stop; --d) r = e.sum(r, d, keepdim);
    return r;
  };
  auto unsqueeze_dim1 = [&](Node* src) {
    while (src->tensor_meta().dim() < nd - 1) src = e.unsqueeze(src, 1);
    if (src->tensor_meta().dim() == nd - 1) src = e.unsqueeze(src, 0);
    return src;
  };
  auto expand_as_dim1 = [&](Node* src) {
    while (src->tensor_meta().dim() < nd - 1) src = e.unsqueeze(src, 1);
    return e.expand(src, im.sizes);
  };

  bool affine = b.arg(2).is_node();
  // Without a weight, the CPU kernel still returns grad_weight and grad_bias when asked; PyTorch's
  // formula then multiplies (or adds) the undefined ggG_expanded (ggB_expanded) and raises.
  if (!affine && (ggG || (ggB && (ggI || ggG))))
    throw Error(
        "batchnorm_double_backward: Expected a proper Tensor but got None (or an undefined Tensor "
        "in C++) (a gradient flows into grad_weight or grad_bias of a batch norm without weight)");
  Node *gamma_expanded, *ggG_expanded = nullptr, *ggB_expanded = nullptr;
  if (affine) {
    gamma_expanded = expand_as_dim1(b.input(2));
    if (ggG) ggG_expanded = expand_as_dim1(ggG);
    if (ggB) ggB_expanded = expand_as_dim1(ggB);
  } else {
    gamma_expanded = e.ones({}, im);
  }
  int64_t m =
      concrete_product(b, im.sizes, 0, 1) * concrete_product(b, im.sizes, 2, im.sizes.size());
  Arg M = Arg::of_int(m), neg_M = Arg::of_int(-m);
  Node* mu = unsqueeze_dim1(training ? e.to(b.input(5), im.dtype) : b.input(3));
  Node* input_sub_mu = e.sub(input, mu);
  Node* s12 = unsqueeze_dim1(
      training ? e.to(b.input(6), im.dtype)
               : e.pow(e.call("add.Scalar", {b.arg(4), b.arg(8)}), Arg::of_float(-0.5)));
  Node* s1 = e.pow(s12, Arg::of_int(2));
  Node* s32 = e.pow(s12, Arg::of_int(3));

  Node* input_mu_sigma2_neg_3_2 = e.mul(input_sub_mu, s32);
  Node* gOinmu_sum = sum_exclude_dim1(e.mul(gO, input_sub_mu), true);
  Node* gO_sum = sum_exclude_dim1(gO, true);

  Node* gI = nullptr;
  if (ggI && training) {
    Node* ggI_sum = sum_exclude_dim1(ggI, true);
    Node* ggIinmu_sum = sum_exclude_dim1(e.mul(ggI, input_sub_mu), true);
    Node* all_sub = e.div(e.mul(ggI_sum, gO_sum), M);
    all_sub = e.sub(all_sub, sum_exclude_dim1(e.mul(gO, ggI), true));
    all_sub = e.add(all_sub, e.mul(e.mul(e.mul(s1, gOinmu_sum), ggIinmu_sum),
                                   Arg::of_float(3. / static_cast<double>(m))));
    Node* gI_0t = e.div(e.mul(input_mu_sigma2_neg_3_2, all_sub), M);
    Node* r1 = e.sub(e.div(gO_sum, M), gO);
    Node* gI_1t = e.mul(e.div(e.mul(ggIinmu_sum, s32), M), r1);
    Node* r2 = e.sub(e.div(ggI_sum, M), ggI);
    Node* gI_2t = e.mul(e.div(e.mul(gOinmu_sum, s32), M), r2);
    gI = e.mul(gamma_expanded, e.add(e.add(gI_0t, gI_1t), gI_2t));
  }
  if (affine && ggG) {
    Node* term;
    if (training) {
      Node* t0 = e.mul(gO, s12);
      Node* t1 = e.div(e.mul(s12, gO_sum), neg_M);
      Node* t2s = sum_exclude_dim1(e.mul(gO, input_sub_mu), true);
      Node* t2 = e.div(e.mul(input_mu_sigma2_neg_3_2, t2s), neg_M);
      term = e.mul(ggG_expanded, e.add(e.add(t0, t1), t2));
    } else {
      term = e.mul(e.mul(ggG_expanded, s12), gO);
    }
    gI = gI ? e.add(gI, term) : term;
  }

  // The first backward's grad_input.
  auto first_back_grad_input = [&](Node* gO_local, Node* gamma_local) {
    Node* h0 = e.div(e.mul(gamma_local, s12), M);
    Node* h1 = e.mul(gO_local, M);  // (M * gO).sub_(sum_exclude_dim1(gO)): the object first
    h1 = e.sub(h1, sum_exclude_dim1(gO_local, true));
    Node* s = sum_exclude_dim1(e.mul(gO_local, input_sub_mu), true);
    h1 = e.sub(h1, e.mul(e.mul(input_sub_mu, s1), s));
    return e.mul(h0, h1);
  };
  Node* gG = nullptr;
  if (affine && ggI) {
    if (training) {
      Node* f = first_back_grad_input(gO, e.ones({}, s12->tensor_meta()));
      gG = sum_exclude_dim1(e.mul(ggI, f), false);
    } else {
      gG = sum_exclude_dim1(e.mul(e.mul(ggI, gO), s12), false);
    }
  }
  Node* ggO = nullptr;
  if (ggI)
    ggO = training ? first_back_grad_input(ggI, gamma_expanded)
                   : e.mul(e.mul(ggI, s12), gamma_expanded);
  if (affine && ggG) {
    Node* term = e.mul(e.mul(ggG_expanded, input_sub_mu), s12);
    ggO = ggO ? e.add(ggO, term) : term;
  }
  if (affine && ggB) ggO = ggO ? e.add(ggO, ggB_expanded) : ggB_expanded;
  e.finish({{1, gI}, {2, gG}, {0, ggO}});
}

// --- composite shape ops -------------------------------------------------------------------------

void reshape_grad(GradBuilder& b) {
  const SymIntVector& sizes = b.input_meta(0).sizes;
  b.set(0, reshape(b, b.grad(), sizes, b.sizes_arg(sizes, b.input(0))));
}

void contiguous_grad(GradBuilder& b) { b.set(0, b.grad()); }

}  // namespace aotgrad::nn_grads
