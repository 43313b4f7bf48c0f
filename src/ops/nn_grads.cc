// aotgrad: the neural-network ops' derivative helpers (torch/csrc/autograd/FunctionsManual.cpp,
// PyTorch 1.13), emitting the ATen graphs AOTAutograd traces for them.
#include "nn_grads.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "aotgrad/ir/error.h"
#include "aotgrad/ops/derivative.h"
#include "aotgrad/ops/formula.h"
#include "aotgrad/ops/meta_util.h"

namespace aotgrad::nn_grads {
namespace {

// Tensor options as a C++ formula passes them (t.options(): dtype, layout and device).
std::vector<std::pair<std::string, Arg>> options(ScalarType dtype, Device device) {
  return {{"dtype", Arg::of_dtype(dtype)},
          {"layout", Arg::of_layout(Layout::Strided)},
          {"device", Arg::of_device(device)}};
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

// --- helpers (FunctionsManual.cpp) ---------------------------------------------------------------
// The formulas are at the declarations in nn_ops.cc (see Note [Derivative formulas]).

using V = FormulaValue;
using Vs = std::vector<FormulaValue>;

// embedding_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq, sparse):
// embedding_dense_backward for a dense weight.
V embedding_backward(GradBuilder& b, Vs& a) {
  if (a[5].arg.kind == Arg::Kind::Bool && a[5].arg.i)
    throw Error(
        "embedding with sparse=True: its gradient is a sparse tensor "
        "(embedding_sparse_backward), which aotgrad does not support");
  return V::tensor(b.call("embedding_dense_backward.default",
                          {Arg(a[0].node()), a[1].arg, a[2].arg, a[3].arg, a[4].arg}));
}

// embedding_dense_double_backward(grad, indices, padding_idx) =
//   grad.index_select(0, indices.reshape(-1)), its padding_idx rows zeroed
//   (masked_fill_((indices == padding_idx).reshape({-1, 1}), 0)), viewed as indices.sizes() + [-1]
V embedding_dense_double_backward(GradBuilder& b, Vs& a) {
  Node* indices = a[1].node();
  const TensorMeta& im = indices->tensor_meta();
  SymInt n = im.numel();
  // indices.reshape(-1) and .reshape({-1, 1}) with the size inferred: numel.
  Arg numel =
      n.is_concrete() ? Arg::of_int(n.value()) : Arg(b.call("sym_numel.default", {Arg(indices)}));
  Node* flat = reshape(b, indices, {n}, Arg::of_list({numel}));
  Node* gg = b.call("index_select.default", {Arg(a[0].node()), Arg::of_int(0), Arg(flat)});
  const Arg& padding_idx = a[2].arg;
  if (padding_idx.kind == Arg::Kind::Int && padding_idx.i >= 0) {
    Node* eq = b.call("eq.Scalar", {Arg(indices), padding_idx});
    Node* m = reshape(b, eq, {n, SymInt(1)}, Arg::of_list({numel, Arg::of_int(1)}));
    gg = b.call("masked_fill.Scalar", {Arg(gg), Arg(m), Arg::of_int(0)});
  }
  Arg size = b.sizes_arg(im.sizes, indices);
  // indices.sizes() + [-1]; with symbolic sizes the last one is given (the view meta function
  // does not infer a -1 next to symbolic sizes).
  size.list.push_back(n.is_concrete() ? Arg::of_int(-1) : size_at(b, gg, 1));
  return V::tensor(b.call("view.default", {Arg(gg), size}));
}

// max_pool_double_backward(grad, indices, dim): grad gathered at the indices.
V max_pool_double_backward(GradBuilder& b, Vs& a) {
  Node* grad = a[0].node();
  Node* indices = a[1].node();
  const TensorMeta& im = indices->tensor_meta();
  const SymInt n = im.numel();
  if (n.is_concrete() && n.value() == 0) {
    const TensorMeta& gm = grad->tensor_meta();
    return V::tensor(b.call("empty_like.default", {Arg(indices)}, options(gm.dtype, gm.device)));
  }
  // size = indices.sizes()[:-2] + [-1]
  std::vector<Arg> size;
  for (int64_t d = 0; d < im.dim() - 2; ++d) size.push_back(size_at(b, indices, d));
  size.push_back(Arg::of_int(-1));
  Node* indices_view = b.call("view.default", {Arg(indices), Arg::of_list(size)});
  MemoryFormat fmt = meta::suggest_memory_format(im);
  const TensorMeta& gm = grad->tensor_meta();
  bool contiguous =
      fmt == MemoryFormat::Contiguous ? gm.is_contiguous() : meta::is_channels_last_contiguous(gm);
  Node* g = grad;
  if (!contiguous)
    g = b.call("clone.default", {Arg(grad)}, {{"memory_format", Arg::of_memory_format(fmt)}});
  Node* gv = b.call("view.default", {Arg(g), Arg::of_list(size)});
  Node* gathered = b.call("gather.default", {Arg(gv), Arg::of_int(-1), Arg(indices_view)});
  return V::tensor(b.call("view.default", {Arg(gathered), b.sizes_arg(im.sizes, indices)}));
}

// --- the norms' double backward ------------------------------------------------------------------
// FunctionsManual's layer_norm_double_backward and batchnorm_double_backward compute every term
// whose incoming gradients (ggI, ggG, ggB) are defined, whatever the output mask says;
// AOTAutograd's joint graph then drops the dead ones. NormBackward mirrors that: it records the
// nodes it emits and erases the unused ones at the end, so the graph is the traced one after
// dead-code elimination (names included). In-place steps of the C++ (div_, sub_, add_, mul_) are
// their functional ops, as functionalization leaves them in the joint graph.

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

  // Erases the emitted nodes that nothing uses but the gradients `mask` asks for; returns those
  // (none for the others).
  FormulaValue finish(const FormulaValue& mask, std::initializer_list<Node*> grads) {
    std::vector<Node*> keep;
    std::vector<FormulaValue> out;
    size_t k = 0;
    for (Node* g : grads) {
      bool want = mask.arg.list.at(k++).i != 0 && g;
      out.push_back(want ? FormulaValue::tensor(g) : FormulaValue::none());
      if (want) keep.push_back(g);
    }
    for (auto it = made_.rbegin(); it != made_.rend(); ++it) {
      Node* n = *it;
      if (n->users().empty() && std::find(keep.begin(), keep.end(), n) == keep.end())
        b_.graph().erase(n);
    }
    return FormulaValue::tuple(std::move(out));
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

// layer_norm_double_backward(input, gamma, ggI, ggG, ggB, gO, save_mean, save_invstd,
//   normalized_shape, output_mask): (gI, gG, ggO).
V layer_norm_double_backward(GradBuilder& b, Vs& a) {
  Node* ggI = a[2].is_tensor() ? a[2].node() : nullptr;
  Node* ggG = a[3].is_tensor() ? a[3].node() : nullptr;
  Node* ggB = a[4].is_tensor() ? a[4].node() : nullptr;
  NormBackward e(b);
  Node* input_t = a[0].node();
  const TensorMeta& im = input_t->tensor_meta();
  size_t axis = im.sizes.size() - a[8].sym_ints().size();
  int64_t M = concrete_product(b, im.sizes, 0, axis);
  int64_t N = concrete_product(b, im.sizes, axis, im.sizes.size());
  Arg n = Arg::of_int(N), neg_n = Arg::of_int(-N);
  auto sum1 = [&](Node* x) { return e.sum(x, 1, true); };

  Node* input = e.reshape(input_t, sizes2(M, N));
  Node* gO = e.reshape(a[5].node(), sizes2(M, N));
  Node* save_mean = e.reshape(a[6].node(), sizes2(M, 1));
  Node* save_invstd = e.reshape(a[7].node(), sizes2(M, 1));
  bool affine = a[1].is_tensor();
  Node *gamma_expanded, *ggG_expanded = nullptr, *ggB_expanded = nullptr;
  if (affine) {
    gamma_expanded = e.reshape(a[1].node(), sizes2(1, N));
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
    gG = e.reshape(gG, a[1].meta().sizes);
  }
  Node* ggO = nullptr;
  if (ggI) ggO = first_bwd_fn_grad_input(ggI_expanded, gamma_expanded);
  if (affine && ggG) {
    Node* term = e.mul(e.mul(ggG_expanded, input_sub_mu), s12);
    ggO = ggO ? e.add(ggO, term) : term;
  }
  if (affine && ggB) ggO = ggO ? e.add(ggO, ggB_expanded) : ggB_expanded;
  if (ggO) ggO = e.reshape(e.expand(ggO, sizes2(M, N)), im.sizes);
  return e.finish(a[9], {gI, gG, ggO});
}

// batchnorm_double_backward(input, gamma, ggI, ggG, ggB, gO, running_mean, running_var, train,
//   eps, save_mean, save_invstd, output_mask): (gI, gG, ggO).
V batchnorm_double_backward(GradBuilder& b, Vs& a) {
  Node* ggI = a[2].is_tensor() ? a[2].node() : nullptr;
  Node* ggG = a[3].is_tensor() ? a[3].node() : nullptr;
  Node* ggB = a[4].is_tensor() ? a[4].node() : nullptr;
  NormBackward e(b);
  Node* input = a[0].node();
  Node* gO = a[5].node();
  const TensorMeta& im = input->tensor_meta();
  const int64_t nd = im.dim();
  concrete_product(b, im.sizes, 0, im.sizes.size());  // concrete sizes only
  bool training = a[8].to_int() != 0;
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

  bool affine = a[1].is_tensor();
  // Without a weight, the CPU kernel still returns grad_weight and grad_bias when asked; PyTorch's
  // formula then multiplies (or adds) the undefined ggG_expanded (ggB_expanded) and raises.
  if (!affine && (ggG || (ggB && (ggI || ggG))))
    throw Error(
        "batchnorm_double_backward: Expected a proper Tensor but got None (or an undefined Tensor "
        "in C++) (a gradient flows into grad_weight or grad_bias of a batch norm without weight)");
  Node *gamma_expanded, *ggG_expanded = nullptr, *ggB_expanded = nullptr;
  if (affine) {
    gamma_expanded = expand_as_dim1(a[1].node());
    if (ggG) ggG_expanded = expand_as_dim1(ggG);
    if (ggB) ggB_expanded = expand_as_dim1(ggB);
  } else {
    gamma_expanded = e.ones({}, im);
  }
  int64_t m =
      concrete_product(b, im.sizes, 0, 1) * concrete_product(b, im.sizes, 2, im.sizes.size());
  Arg M = Arg::of_int(m), neg_M = Arg::of_int(-m);
  Node* mu = unsqueeze_dim1(training ? e.to(a[10].node(), im.dtype) : a[6].node());
  Node* input_sub_mu = e.sub(input, mu);
  Node* s12 = unsqueeze_dim1(
      training ? e.to(a[11].node(), im.dtype)
               : e.pow(e.call("add.Scalar", {a[7].arg, a[9].arg}), Arg::of_float(-0.5)));
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
  return e.finish(a[12], {gI, gG, ggO});
}

}  // namespace

void add_nn_grad_helpers() {
  add_grad_helper("embedding_backward", embedding_backward);
  add_grad_helper("embedding_dense_double_backward", embedding_dense_double_backward);
  add_grad_helper("max_pool_double_backward", max_pool_double_backward);
  add_grad_helper("layer_norm_double_backward", layer_norm_double_backward);
  add_grad_helper("batchnorm_double_backward", batchnorm_double_backward);
  // softmax_double_backward(grad, grad_output, dim, output)
  add_grad_helper("softmax_double_backward(grad, grad_output, dim, output)",
                  "grad_output * grad - (output * grad_output).sum(dim, true) * grad - "
                  "grad_output * (output * grad).sum(dim, true)");
}

}  // namespace aotgrad::nn_grads
