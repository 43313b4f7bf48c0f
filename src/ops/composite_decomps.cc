// aotgrad: decompositions of CompositeImplicitAutograd ops, checked against what torch 1.13's
// make_fx records for each (shapes that take different paths in the C++ kernel are noted).
#include "composite_decomps.h"

#include <string>

#include "aotgrad/ir/error.h"
#include "aotgrad/ops/meta_util.h"

namespace aotgrad {
namespace {

SymIntVector sizes_of(const Node* x) { return x->tensor_meta().sizes; }
int64_t dim_of(const Node* x) { return x->tensor_meta().dim(); }

Arg int_arg(int64_t v) { return Arg::of_int(v); }

SymInt product(const SymIntVector& v, size_t begin, size_t end) {
  SymInt p(1);
  for (size_t i = begin; i < end; ++i) p = p * v[i];
  return p;
}

Node* transpose(DecompBuilder& b, Node* x, int64_t d0, int64_t d1) {
  return b.call("transpose.int", {Arg(x), int_arg(d0), int_arg(d1)});
}

Node* contiguous_clone(DecompBuilder& b, Node* x) {
  return b.call("clone.default", {Arg(x)},
                {{"memory_format", Arg::of_memory_format(MemoryFormat::Contiguous)}});
}

// at::native::_matmul_impl (1.13, LinearAlgebra.cpp): dot / mv / mm for 1-d and 2-d operands; a
// >=3-d left operand against a matrix or vector is folded into one mm/mv; a 1-d or 2-d left
// operand against a >=3-d right one is the transposed fold; otherwise both are expanded to the
// broadcast batch shape and multiplied with bmm.
Node* matmul(DecompBuilder& b, Node* x, Node* y) {
  int64_t d1 = dim_of(x), d2 = dim_of(y);
  AOTGRAD_CHECK(d1 >= 1 && d2 >= 1, b.node().describe(),
                ": both arguments to matmul need to be at least 1D, but they are ", d1, "D and ",
                d2, "D");
  if (d1 == 1 && d2 == 1) return b.call("dot.default", {Arg(x), Arg(y)});
  if (d1 == 2 && d2 == 1) return b.call("mv.default", {Arg(x), Arg(y)});
  if (d1 == 1 && d2 == 2) {
    Node* u = b.call("unsqueeze.default", {Arg(x), int_arg(0)});
    Node* mm = b.call("mm.default", {Arg(u), Arg(y)});
    return b.call("squeeze.dim", {Arg(mm), int_arg(0)});  // 1.13 uses squeeze_ on the fresh result
  }
  if (d1 == 2 && d2 == 2) return b.call("mm.default", {Arg(x), Arg(y)});
  auto fold = [&](Node* t1, Node* t2) {  // t1: >= 3-d, t2: 1-d or 2-d
    SymIntVector s1 = sizes_of(t1);
    SymIntVector out(s1.begin(), s1.end() - 1);
    if (dim_of(t2) == 2) out.push_back(sizes_of(t2)[1]);
    Node* flat = b.reshape(t1, {product(s1, 0, s1.size() - 1), s1.back()});
    Node* r = dim_of(t2) == 2 ? b.call("mm.default", {Arg(flat), Arg(t2)})
                              : b.call("mv.default", {Arg(flat), Arg(t2)});
    return b.call("_unsafe_view.default", {Arg(r), Arg::of_symints(out)});
  };
  if (d1 >= 3 && d2 <= 2) return fold(x, y);
  if (d1 <= 2 && d2 >= 3) {
    Node* yt = transpose(b, y, -2, -1);
    Node* xt = d1 == 2 ? b.call("t.default", {Arg(x)}) : x;
    Node* r = fold(yt, xt);
    if (d1 == 1) return r;
    return contiguous_clone(b, transpose(b, r, -2, -1));
  }
  SymIntVector s1 = sizes_of(x), s2 = sizes_of(y);
  SymIntVector batch1(s1.begin(), s1.end() - 2), batch2(s2.begin(), s2.end() - 2);
  SymIntVector batch = meta::broadcast_shapes(batch1, batch2);
  SymInt n = s1[s1.size() - 2], m1 = s1.back(), m2 = s2[s2.size() - 2], p = s2.back();
  SymIntVector e1 = batch, e2 = batch;
  e1.push_back(n);
  e1.push_back(m1);
  e2.push_back(m2);
  e2.push_back(p);
  SymInt nb = product(batch, 0, batch.size());
  Node* xe = b.reshape(b.call("expand.default", {Arg(x), Arg::of_symints(e1)}), {nb, n, m1});
  Node* ye = b.reshape(b.call("expand.default", {Arg(y), Arg::of_symints(e2)}), {nb, m2, p});
  Node* r = b.call("bmm.default", {Arg(xe), Arg(ye)});
  SymIntVector out = batch;
  out.push_back(n);
  out.push_back(p);
  return b.call("_unsafe_view.default", {Arg(r), Arg::of_symints(out)});
}

// An int[2] argument as written (an int, a one-element list or a list) -> a two-element list.
Arg pair_arg(const Arg& a) {
  if (a.kind == Arg::Kind::Int) return Arg::of_list({a, a});
  if (a.is_list() && a.list.size() == 1) return Arg::of_list({a.list[0], a.list[0]});
  return a;
}

}  // namespace

Arg matmul_decomp(DecompBuilder& b) { return Arg(matmul(b, b.input(0), b.input(1))); }

// at::native::linear (1.13): addmm for a 2-d input with bias; a contiguous 3-d input with bias is
// flattened to 2-d for addmm (_flatten_3d_linear); otherwise matmul, then the bias added.
Arg linear_decomp(DecompBuilder& b) {
  Node* x = b.input(0);
  Node* w = b.input(1);
  bool has_bias = !b.is_none(2);
  int64_t d = dim_of(x);
  Node* wt = b.call("t.default", {Arg(w)});
  if (d == 2 && has_bias) return Arg(b.call("addmm.default", {Arg(b.input(2)), Arg(x), Arg(wt)}));
  if (has_bias && d == 3 && x->tensor_meta().is_contiguous()) {
    SymIntVector s = sizes_of(x);
    Node* flat = b.call("view.default", {Arg(x), Arg::of_symints({s[0] * s[1], s[2]})});
    Node* mm = b.call("addmm.default", {Arg(b.input(2)), Arg(flat), Arg(wt)});
    return Arg(b.call("view.default", {Arg(mm), Arg::of_symints({s[0], s[1], sizes_of(w)[0]})}));
  }
  Node* out = matmul(b, x, wt);
  if (has_bias)
    out = b.call("add.Tensor", {Arg(out), Arg(b.input(2))});  // 1.13 uses add_ on a fresh result
  return Arg(out);
}

// at::native::conv2d: convolution (not transposed); an unbatched 3-d input gets a batch dim.
Arg conv2d_decomp(DecompBuilder& b) {
  Node* x = b.input(0);
  bool unbatched = dim_of(x) == 3;
  if (unbatched) x = b.call("unsqueeze.default", {Arg(x), int_arg(0)});
  Node* out =
      b.call("convolution.default", {Arg(x), b.arg(1), b.arg(2), pair_arg(b.arg(3)),
                                     pair_arg(b.arg(4)), pair_arg(b.arg(5)), Arg::of_bool(false),
                                     Arg::of_list({int_arg(0), int_arg(0)}), b.arg(6)});
  if (unbatched) out = b.call("squeeze.dim", {Arg(out), int_arg(0)});
  return Arg(out);
}

// _convolution, as the tracer records conv2d: convolution with the first nine arguments.
Arg underscore_convolution_decomp(DecompBuilder& b) {
  std::vector<Arg> args;
  for (int i = 0; i < 9; ++i) args.push_back(b.arg(i));
  return Arg(b.call("convolution.default", std::move(args)));
}

// at::native::narrow: slice(self, dim, start, start + length), a negative start counted from the
// end.
Arg narrow_decomp(DecompBuilder& b) {
  Node* x = b.input(0);
  int64_t dim = meta::wrap_dim(b.int_arg(1), dim_of(x));
  int64_t start = b.int_arg(2);
  if (start < 0) start += sizes_of(x)[static_cast<size_t>(dim)].value();
  return Arg(b.call("slice.Tensor",
                    {Arg(x), int_arg(dim), int_arg(start), int_arg(start + b.int_arg(3))}));
}

// at::native::layer_norm: native_layer_norm's output.
Arg layer_norm_decomp(DecompBuilder& b) {
  Node* r = b.call("native_layer_norm.default", {b.arg(0), b.arg(1), b.arg(2), b.arg(3), b.arg(4)});
  return Arg(b.getitem(r, 0));
}

// at::native::batch_norm -> _batch_norm_impl_index -> native_batch_norm on CPU (1.13), which
// updates running_mean/running_var in training mode.
Arg batch_norm_decomp(DecompBuilder& b) {
  Node* r = b.call("native_batch_norm.default", {b.arg(0), b.arg(1), b.arg(2), b.arg(3), b.arg(4),
                                                 b.arg(5), b.arg(6), b.arg(7)});
  return Arg(b.getitem(r, 0));
}

namespace {
Arg softmax_like(DecompBuilder& b, const char* op) {
  Node* x = b.input(0);
  if (!b.is_none(2)) x = b.call("_to_copy.default", {Arg(x)}, {{"dtype", b.arg(2)}});
  return Arg(b.call(op, {Arg(x), b.arg(1), Arg::of_bool(false)}));
}
}  // namespace

// at::native::softmax / log_softmax: convert to dtype if given, then _softmax / _log_softmax.
Arg softmax_int_decomp(DecompBuilder& b) { return softmax_like(b, "_softmax.default"); }
Arg log_softmax_int_decomp(DecompBuilder& b) { return softmax_like(b, "_log_softmax.default"); }

// at::native::cross_entropy_loss: log_softmax over the class dim, then nll_loss for class-index
// targets (with label smoothing: (1 - s) * nll + s / C * the mean of -sum(log_softmax) over the
// targets not ignored), or -(log_softmax * target) summed for class-probability targets. Inputs
// with spatial dims ([N, C, d1, ...]) are moved to [N * d1 * ..., C] for nll_loss_forward where
// 1.13 calls nll_loss2d: the same sums and the same mean over the targets not ignored.
Arg cross_entropy_loss_decomp(DecompBuilder& b) {
  Node* x = b.input(0);
  Node* target = b.input(1);
  int64_t d = dim_of(x);
  int64_t class_dim = d == 1 ? 0 : 1;
  int64_t reduction = b.int_arg(3);
  double smoothing = b.float_arg(5);
  SymInt classes = sizes_of(x)[static_cast<size_t>(class_dim)];
  Node* lsm = b.call("_log_softmax.default", {Arg(x), int_arg(class_dim), Arg::of_bool(false)});
  if (is_floating(target->tensor_meta().dtype)) {  // class probabilities
    AOTGRAD_CHECK(b.is_none(2) && smoothing == 0.0, b.node().describe(),
                  ": cross_entropy with probability targets and a weight or label smoothing is not "
                  "supported");
    Node* prod = b.call("mul.Tensor", {Arg(lsm), Arg(target)});
    if (reduction == 0)
      return Arg(b.call(
          "neg.default",
          {Arg(b.call("sum.dim_IntList", {Arg(prod), Arg::of_list({int_arg(class_dim)})}))}));
    Node* neg = b.call("neg.default", {Arg(b.call("sum.default", {Arg(prod)}))});
    if (reduction == 1) {
      SymInt n = d == 1 ? SymInt(1) : sizes_of(x)[0];
      return Arg(b.call("div.Scalar", {Arg(neg), Arg::of_int(n.value())}));
    }
    return Arg(neg);
  }
  AOTGRAD_CHECK(smoothing == 0.0 || b.is_none(2), b.node().describe(),
                ": cross_entropy with label smoothing and a class weight is not supported");
  Node* scores = lsm;
  Node* t = target;
  if (d > 2) {  // [N, C, d1, ...] -> [N * d1 * ..., C]; targets [N, d1, ...] -> [N * d1 * ...]
    std::vector<Arg> perm{int_arg(0)};
    for (int64_t k = 2; k < d; ++k) perm.push_back(int_arg(k));
    perm.push_back(int_arg(1));
    Node* moved = b.call("permute.default", {Arg(lsm), Arg::of_list(perm)});
    SymIntVector ts = sizes_of(target);
    SymInt rows = product(ts, 0, ts.size());
    scores = b.reshape(moved, {rows, classes});
    t = b.reshape(target, {rows});
  }
  Node* nll = b.getitem(
      b.call("nll_loss_forward.default", {Arg(scores), Arg(t), b.arg(2), b.arg(3), b.arg(4)}), 0);
  auto unflatten = [&](Node* v) {  // reduction none: back to the targets' shape
    return d > 2 && reduction == 0 ? b.reshape(v, sizes_of(target)) : v;
  };
  if (smoothing == 0.0) return Arg(unflatten(nll));
  int64_t score_class_dim = d == 1 ? 0 : 1;
  Node* smooth = b.call(
      "neg.default",
      {Arg(b.call("sum.dim_IntList", {Arg(scores), Arg::of_list({int_arg(score_class_dim)})}))});
  Node* ignored = b.call("eq.Scalar", {Arg(t), b.arg(4)});
  smooth = b.call("masked_fill.Scalar", {Arg(smooth), Arg(ignored), Arg::of_float(0.0)});
  Node* ret = smooth;
  if (reduction == 1) {
    Node* kept = b.call("sum.default", {Arg(b.call("bitwise_not.default", {Arg(ignored)}))});
    ret = b.call("div.Tensor", {Arg(b.call("sum.default", {Arg(smooth)})), Arg(kept)});
  } else if (reduction == 2) {
    ret = b.call("sum.default", {Arg(smooth)});
  }
  Node* a = b.call("mul.Tensor", {Arg(nll), Arg::of_float(1 - smoothing)});
  Node* c = b.call("mul.Tensor",
                   {Arg(ret), Arg::of_float(smoothing / static_cast<double>(classes.value()))});
  return Arg(unflatten(b.call("add.Tensor", {Arg(a), Arg(c)})));
}

// at::native::dropout on CPU (1.13 _dropout_impl): the input itself when not training or p == 0;
// else input * (bernoulli(1 - p) / (1 - p)), drawing from the generator as eager does. 1.13 writes
// the noise with empty_like().bernoulli_() and div_; this is their functional form.
Arg dropout_decomp(DecompBuilder& b) {
  double p = b.float_arg(1);
  bool train = b.bool_arg(2);
  Node* x = b.input(0);
  if (!train || p == 0 || x->tensor_meta().numel() == SymInt(0)) return Arg(x);
  if (p == 1) return Arg(b.call("mul.Tensor", {Arg(x), Arg::of_float(0.0)}));
  Node* e = b.call("empty_like.default", {Arg(x)},
                   {{"memory_format", Arg::of_memory_format(MemoryFormat::Contiguous)}});
  Node* noise = b.call("bernoulli.p", {Arg(e), Arg::of_float(1 - p)});
  Node* scaled = b.call("div.Scalar", {Arg(noise), Arg::of_float(1 - p)});
  return Arg(b.call("mul.Tensor", {Arg(x), Arg(scaled)}));
}

// at::native::max_pool2d on CPU: max_pool2d_with_indices' values.
Arg max_pool2d_decomp(DecompBuilder& b) {
  std::vector<Arg> args;
  for (size_t i = 0; i < b.node().args().size(); ++i) args.push_back(b.arg(i));
  return Arg(b.getitem(b.call("max_pool2d_with_indices.default", std::move(args)), 0));
}

// at::native::adaptive_avg_pool2d: a mean over the spatial dims for output size 1x1 (laid out
// channels-last for a channels-last input), else _adaptive_avg_pool2d.
Arg adaptive_avg_pool2d_decomp(DecompBuilder& b) {
  Arg size = pair_arg(b.arg(1));
  bool ones = size.is_list() && size.list.size() == 2 && size.list[0] == Arg::of_int(1) &&
              size.list[1] == Arg::of_int(1);
  if (ones) {
    Node* x = b.input(0);
    Node* out =
        b.call("mean.dim", {Arg(x), Arg::of_list({int_arg(-1), int_arg(-2)}), Arg::of_bool(true)});
    if (meta::suggest_memory_format(x->tensor_meta()) != MemoryFormat::ChannelsLast)
      return Arg(out);
    // 1.13 restrides the result channels-last with as_strided_ on the fresh mean.
    SymIntVector s = sizes_of(x);
    return Arg(
        b.call("as_strided.default", {Arg(out), Arg::of_symints({s[0], s[1], SymInt(1), SymInt(1)}),
                                      Arg::of_symints({s[1], SymInt(1), s[1], s[1]})}));
  }
  return Arg(b.call("_adaptive_avg_pool2d.default", {b.arg(0), size}));
}

// at::native::reshape: a view when the strides allow one, else a contiguous copy.
Arg reshape_decomp(DecompBuilder& b) {
  return Arg(b.reshape(b.input(0), b.node().tensor_meta().sizes));
}

// at::native::flatten: the input itself when there is nothing to merge, else reshape.
Arg flatten_decomp(DecompBuilder& b) {
  Node* x = b.input(0);
  const SymIntVector& out = b.node().tensor_meta().sizes;
  if (dim_of(x) > 0 && out == sizes_of(x)) return Arg(x);
  return Arg(b.reshape(x, out));
}

// at::native::contiguous: the input itself when it is contiguous in the format, else a clone.
Arg contiguous_decomp(DecompBuilder& b) {
  Node* x = b.input(0);
  MemoryFormat fmt = b.is_none(1) || b.arg(1).kind != Arg::Kind::MemoryFormat
                         ? MemoryFormat::Contiguous
                         : static_cast<MemoryFormat>(b.arg(1).i);
  const TensorMeta& m = x->tensor_meta();
  bool already =
      fmt == MemoryFormat::Contiguous ? m.is_contiguous() : meta::is_channels_last_contiguous(m);
  if (already) return Arg(x);
  return Arg(b.call("clone.default", {Arg(x)}, {{"memory_format", Arg::of_memory_format(fmt)}}));
}

}  // namespace aotgrad
