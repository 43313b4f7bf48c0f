// aotgrad: normalization ops -- native_layer_norm, native_batch_norm and its functional form, their
// backward kernels and double backward, and the composite layer_norm / batch_norm -- with ATen
// 1.13's (CPU) output dtypes and layouts.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "aotgrad/ops/cost_util.h"
#include "aotgrad/ops/decomp_util.h"
#include "aotgrad/ops/derivative.h"
#include "aotgrad/ops/formula.h"
#include "aotgrad/ops/meta_util.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

using meta::check_dtype;
using meta::check_floating;
using meta::known_differ;
using meta::known_zero;
using meta::one;
std::string sizes_str(const SymIntVector& s) { return to_string(s); }
std::string c10_name(ScalarType t) { return std::string(meta::c10_type_name(t)); }
// A fresh tensor in memory format `fmt` (contiguous, or channels-last for rank 4/5).
TensorMeta fresh(const SymIntVector& sizes, ScalarType dtype, Device device, MemoryFormat fmt) {
  return meta::empty_in_format(sizes, dtype, device, fmt);
}

// --- layer norm ----------------------------------------------------------------------------------

// _check_layer_norm_inputs of layer_norm.h.
void check_layer_norm(const TensorMeta& input, const SymIntVector& normalized_shape,
                      const TensorMeta* weight, const TensorMeta* bias) {
  if (normalized_shape.empty())
    throw Error(
        "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
        "one element, but got normalized_shape = []");
  auto same_shape = [&](const SymIntVector& s) {
    if (s.size() != normalized_shape.size()) return false;
    for (size_t i = 0; i < s.size(); ++i)
      if (known_differ(s[i], normalized_shape[i])) return false;
    return true;
  };
  if (weight && !same_shape(weight->sizes))
    throw Error(
        "Expected weight to be of same shape as normalized_shape, but got weight of shape " +
        sizes_str(weight->sizes) + " and normalized_shape = " + sizes_str(normalized_shape));
  if (bias && !same_shape(bias->sizes))
    throw Error("Expected bias to be of same shape as normalized_shape, but got bias of shape " +
                sizes_str(bias->sizes) + " and normalized_shape = " + sizes_str(normalized_shape));
  int64_t n = input.dim(), k = static_cast<int64_t>(normalized_shape.size());
  if (n < k || !same_shape(SymIntVector(input.sizes.end() - k, input.sizes.end()))) {
    std::string expected = "[*";
    for (auto& s : normalized_shape) expected += ", " + s.to_string();
    throw Error("Given normalized_shape=" + sizes_str(normalized_shape) +
                ", expected input with shape " + expected + "], but got input of size" +
                sizes_str(input.sizes));
  }
  check_floating(input.dtype, "LayerNormKernelImpl");
  if (weight) check_dtype(input, *weight);
  if (bias) check_dtype(input, *bias);
}

// native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias,
//                   float eps) -> (out, mean, rstd): out contiguous; mean/rstd keep the batch dims
// and have size 1 in the normalized ones.
ValueMeta native_layer_norm_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  SymIntVector shape = a.int_list(1);
  check_layer_norm(x, shape, a.optional_tensor(2), a.optional_tensor(3));
  SymIntVector stat = x.sizes;
  for (size_t i = x.sizes.size() - shape.size(); i < stat.size(); ++i) stat[i] = 1;
  return meta::tuple_of({meta::empty(x.sizes, x.dtype, x.device),
                         meta::empty(stat, x.dtype, x.device),
                         meta::empty(stat, x.dtype, x.device)});
}

// native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape, Tensor mean,
//   Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask)
ValueMeta native_layer_norm_backward_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(1);
  const TensorMeta* weight = a.optional_tensor(5);
  const TensorMeta* bias = a.optional_tensor(6);
  check_layer_norm(x, a.int_list(2), weight, bias);
  std::vector<bool> mask = a.bool_list(7);
  if (mask.size() != 3) throw Error("output_mask must have 3 elements");
  std::vector<ValueMeta> out(3);
  if (mask[0]) out[0] = one(meta::empty(x.sizes, x.dtype, x.device));
  if (mask[1]) {
    if (!weight) throw Error("output_mask[1] (grad_weight) is set but weight is None");
    out[1] = one(meta::empty(weight->sizes, weight->dtype, weight->device));
  }
  if (mask[2]) {
    if (!bias) throw Error("output_mask[2] (grad_bias) is set but bias is None");
    out[2] = one(meta::empty(bias->sizes, bias->dtype, bias->device));
  }
  return ValueMeta::tuple(std::move(out));
}

// layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None,
//            float eps=1e-05, bool cudnn_enable=True): native_layer_norm's first result.
ValueMeta layer_norm_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  check_layer_norm(x, a.int_list(1), a.optional_tensor(2), a.optional_tensor(3));
  return one(meta::empty(x.sizes, x.dtype, x.device));
}

// --- batch norm ----------------------------------------------------------------------------------

// The dtype of batch norm's statistics: the input's, or float for a bfloat16 input with float
// parameters (1.13's CPU mixed-type batch norm), after its checks.
ScalarType batch_norm_param_dtype(const TensorMeta& input,
                                  const std::vector<const TensorMeta*>& params) {
  const TensorMeta* mixed = nullptr;
  for (auto* p : params)
    if (p && p->dtype != input.dtype) mixed = p;
  if (!mixed) return input.dtype;
  for (auto* p : params)
    if (p && p->dtype != mixed->dtype)
      throw Error("expected scalar type " + c10_name(p->dtype) + " but found " +
                  c10_name(mixed->dtype));
  if (mixed->dtype != ScalarType::Float32)
    throw Error("mixed dtype (CPU): expect parameter to have scalar type of Float");
  if (input.dtype != ScalarType::BFloat16)
    throw Error("mixed dtype (CPU): expect input to have scalar type of BFloat16");
  return ScalarType::Float32;
}

// Shared by native_batch_norm, _native_batch_norm_legit_functional and batch_norm: checks and the
// three results (output in the input's suggested memory format; save_mean/save_invstd [C] when
// training, [0] in evaluation).
std::vector<TensorMeta> batch_norm_results(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  const TensorMeta* weight = a.optional_tensor(1);
  const TensorMeta* bias = a.optional_tensor(2);
  const TensorMeta* running_mean = a.optional_tensor(3);
  const TensorMeta* running_var = a.optional_tensor(4);
  bool training = a.bool_value(5);
  meta::wrap_dim(1, x.dim());  // "Dimension out of range" for inputs below 2-d
  if (x.dim() < 2) throw Error("batch_norm expects an input of at least 2 dimensions");
  check_floating(x.dtype, "batch_norm");
  SymInt c = x.sizes[1];
  const TensorMeta* params[] = {weight, bias, running_mean, running_var};
  const char* names[] = {"weight", "bias", "running_mean", "running_var"};
  for (int i = 0; i < 4; ++i)
    if (params[i] && (params[i]->dim() != 1 || known_differ(params[i]->sizes[0], c)))
      throw Error(std::string("expected ") + names[i] + " of size [" + c.to_string() +
                  "], but got " + sizes_str(params[i]->sizes));
  if (!training && (!running_mean || !running_var))
    throw Error("running_mean and running_var must be defined in evaluation mode");
  ScalarType pdt = batch_norm_param_dtype(x, {weight, bias, running_mean, running_var});
  SymIntVector stat_shape = {training ? c : SymInt(0)};
  // batch_norm_cpu_transform_input_template: inputs and parameters all contiguous (the input in
  // any memory format) take the kernel path, whose output is contiguous unless the input is
  // channels-last contiguous; otherwise the TensorIterator path allocates in the suggested format.
  bool all_contiguous =
      !known_zero(x.numel()) && (x.is_contiguous() || meta::is_channels_last_contiguous(x));
  for (auto* p : {weight, bias, running_mean, running_var})
    all_contiguous = all_contiguous && (!p || p->is_contiguous());
  MemoryFormat fmt = meta::suggest_memory_format(x);
  if (all_contiguous)
    fmt = x.is_contiguous() ? MemoryFormat::Contiguous
          : x.dim() == 5    ? MemoryFormat::ChannelsLast3d
                            : MemoryFormat::ChannelsLast;
  return {fresh(x.sizes, x.dtype, x.device, fmt), meta::empty(stat_shape, pdt, x.device),
          meta::empty(stat_shape, pdt, x.device)};
}

// native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean,
//   Tensor? running_var, bool training, float momentum, float eps) -> (out, save_mean, save_invstd)
ValueMeta native_batch_norm_meta(const MetaArgs& a) {
  return meta::tuple_of(batch_norm_results(a));
}

// _native_batch_norm_legit_functional (PyTorch 2.x): native_batch_norm's results, then the updated
// running statistics as fresh tensors shaped like the old ones.
ValueMeta native_batch_norm_legit_functional_meta(const MetaArgs& a) {
  std::vector<TensorMeta> r = batch_norm_results(a);
  const TensorMeta &rm = a.tensor(3), &rv = a.tensor(4);
  r.push_back(meta::empty(rm.sizes, rm.dtype, rm.device));
  r.push_back(meta::empty(rv.sizes, rv.dtype, rv.device));
  return meta::tuple_of(std::move(r));
}

// batch_norm(..., bool cudnn_enabled): native_batch_norm's output on CPU.
ValueMeta batch_norm_meta(const MetaArgs& a) { return one(batch_norm_results(a)[0]); }

// native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, Tensor? running_mean,
//   Tensor? running_var, Tensor? save_mean, Tensor? save_invstd, bool train, float eps,
//   bool[3] output_mask)
ValueMeta native_batch_norm_backward_meta(const MetaArgs& a) {
  const TensorMeta& go = a.tensor(0);
  const TensorMeta& x = a.tensor(1);
  const TensorMeta* weight = a.optional_tensor(2);
  const TensorMeta* running_mean = a.optional_tensor(3);
  const TensorMeta* running_var = a.optional_tensor(4);
  const TensorMeta* save_mean = a.optional_tensor(5);
  const TensorMeta* save_invstd = a.optional_tensor(6);
  bool train = a.bool_value(7);
  std::vector<bool> mask = a.bool_list(9);
  if (mask.size() != 3) throw Error("output_mask must have 3 elements");
  meta::wrap_dim(1, x.dim());
  check_floating(x.dtype, "batch_norm_backward_cpu");
  if (go.sizes != x.sizes)
    throw Error("Expected grad_out of size " + sizes_str(x.sizes) + " but got " +
                sizes_str(go.sizes));
  check_dtype(x, go);
  if (train && (!save_mean || !save_invstd))
    throw Error("save_mean and save_invstd must be defined in training mode");
  if (!train && (!running_mean || !running_var))
    throw Error("running_mean and running_var must be defined in evaluation mode");
  ScalarType pdt =
      batch_norm_param_dtype(x, {weight, running_mean, running_var, save_mean, save_invstd});
  SymInt c = x.sizes[1];
  std::vector<ValueMeta> out(3);
  if (mask[0]) out[0] = one(fresh(x.sizes, x.dtype, x.device, meta::suggest_memory_format(x)));
  if (mask[1]) out[1] = one(meta::empty({c}, pdt, x.device));
  if (mask[2]) out[2] = one(meta::empty({c}, pdt, x.device));
  return ValueMeta::tuple(std::move(out));
}

// --- derivative helpers (FunctionsManual.cpp)
// ------------------------------------------------------ The formulas are at the declarations (see
// Note [Derivative formulas]).

using V = FormulaValue;
using Vs = std::vector<FormulaValue>;

// Tensor options as a C++ formula passes them (t.options(): dtype, layout and device).
std::vector<std::pair<std::string, Arg>> options(ScalarType dtype, Device device) {
  return {{"dtype", Arg::of_dtype(dtype)},
          {"layout", Arg::of_layout(Layout::Strided)},
          {"device", Arg::of_device(device)}};
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

void add_norm_grad_helpers() {
  add_grad_helper("layer_norm_double_backward", layer_norm_double_backward);
  add_grad_helper("batchnorm_double_backward", batchnorm_double_backward);
}

// native_batch_norm_backward(grad_out, input, ...) allocates a buffer of its input's size besides
// grad_input (measured with the tracking allocator on libtorch 1.13, 8-96 channels of 8x8 to
// 56x56 images, either thread count): the memory timeline's scratch.
double native_batch_norm_backward_scratch(const MetaArgs& a, const ValueMeta&) {
  const TensorMeta* input = cost::tensor_at(a, 1);
  return input ? cost::nbytes(*input) : 0;
}

}  // namespace

// --- decompositions (torch/_decomp, torch/_refs, CompositeImplicitAutograd kernels) ----------

namespace decomps {
namespace {

// torch/_refs native_layer_norm (and _normalize): contiguous input, weight and bias; var_mean in
// the computation dtype over the normalized dims (correction 0, keepdim); rstd = rsqrt(var + eps);
// out = (x - mean) * rstd, times weight, plus bias; out converted back to the input's dtype, and
// on CPU mean and rstd too.
Arg native_layer_norm_full_decomp(DecompBuilder& b) {
  Ops o(b);
  Node* x = o.contiguous(b.input(0));
  Node* weight = optional_input(b, 2);
  Node* bias = optional_input(b, 3);
  if (weight) weight = o.contiguous(weight);
  if (bias) bias = o.contiguous(bias);
  double eps = b.float_arg(4);
  const TensorMeta& xm = x->tensor_meta();
  int64_t ndim = xm.dim();
  int64_t axis = ndim - static_cast<int64_t>(MetaArgs(b.op(), b.node().args()).int_list(1).size());
  std::vector<int64_t> dims;
  for (int64_t d = axis; d < ndim; ++d) dims.push_back(d);
  ScalarType dtype = xm.dtype;
  Node* x_acc = o.to(x, opmath(dtype));
  Node* var_mean = b.call("var_mean.correction", {Arg(x_acc), Arg::of_ints(dims)},
                          {{"correction", i(0)}, {"keepdim", Arg::of_bool(true)}});
  Node* var = b.getitem(var_mean, 0);
  Node* mean = b.getitem(var_mean, 1);
  Node* rstd = o.unary("rsqrt.default", o.add(Arg(var), f(eps)));
  Node* out = o.mul(Arg(o.sub(Arg(x_acc), Arg(mean))), Arg(rstd));
  if (weight) out = o.mul(Arg(out), Arg(weight));
  if (bias) out = o.add(Arg(out), Arg(bias));
  out = o.to(out, dtype);
  if (xm.device.type == DeviceType::CPU) {
    mean = o.to(mean, dtype);
    rstd = o.to(rstd, dtype);
  }
  return Arg::of_tuple({Arg(out), Arg(mean), Arg(rstd)});
}

// torch/_decomp native_layer_norm_backward: grad_out, input, weight and bias in the computation
// dtype and contiguous; x_hat = (input - mean) * rstd; with grad_x_hat = grad_out * weight,
//   d_input  = rstd / N * (N * grad_x_hat - sum(grad_x_hat) - x_hat * sum(grad_x_hat * x_hat))
//   d_weight = sum over the outer dims of grad_out * x_hat,  d_bias = sum of grad_out there
// (sums over the normalized dims keep them); each converted to its argument's dtype. An empty
// input gives zeros.
Arg native_layer_norm_backward_full_decomp(DecompBuilder& b) {
  Ops o(b);
  Node* grad_out = b.input(0);
  Node* input = b.input(1);
  Node* mean = b.input(3);
  Node* rstd = b.input(4);
  Node* weight = optional_input(b, 5);
  Node* bias = optional_input(b, 6);
  std::vector<bool> mask = MetaArgs(b.op(), b.node().args()).bool_list(7);
  const TensorMeta& im = input->tensor_meta();
  ScalarType compute = opmath(im.dtype);
  Node* grad_out_cast = o.to_contiguous(grad_out, compute);
  Node* input_cast = o.to_contiguous(input, compute);
  Node* weight_cast = weight ? o.to_contiguous(weight, compute) : nullptr;
  Node* bias_cast = bias ? o.to_contiguous(bias, compute) : nullptr;
  int64_t ndim = im.dim();
  int64_t axis = ndim - static_cast<int64_t>(MetaArgs(b.op(), b.node().args()).int_list(2).size());
  std::vector<int64_t> inner_dims, outer_dims;
  SymInt n(1), m(1);
  for (int64_t d = 0; d < ndim; ++d) {
    if (d >= axis) {
      inner_dims.push_back(d);
      n = n * im.sizes[static_cast<size_t>(d)];
    } else {
      outer_dims.push_back(d);
      m = m * im.sizes[static_cast<size_t>(d)];
    }
  }
  auto cast = [&](Node* v, Node* like) { return v ? o.to(v, like->tensor_meta().dtype) : nullptr; };
  if (n == SymInt(0) || m == SymInt(0)) {
    SymIntVector inner_shape(im.sizes.begin() + axis, im.sizes.end());
    auto zeros = [&](const SymIntVector& s) {
      return b.call("new_zeros.default", {Arg(input), Arg::of_symints(s)});
    };
    return Arg::of_tuple({mask[0] ? Arg(zeros(im.sizes)) : Arg(),
                          mask[1] && weight ? Arg(zeros(inner_shape)) : Arg(),
                          mask[2] && bias ? Arg(zeros(inner_shape)) : Arg()});
  }
  AOTGRAD_CHECK(n.is_concrete(), b.node().describe(),
                ": symbolic normalized sizes are not supported");
  // _unsqueeze_to_dim(mean / rstd, input.dim())
  for (int64_t d = mean->tensor_meta().dim(); d < ndim; ++d)
    mean = b.call("unsqueeze.default", {Arg(mean), i(-1)});
  for (int64_t d = rstd->tensor_meta().dim(); d < ndim; ++d)
    rstd = b.call("unsqueeze.default", {Arg(rstd), i(-1)});
  Node* x_hat = o.mul(Arg(o.sub(Arg(input_cast), Arg(mean))), Arg(rstd));
  Node* grad_x_hat = weight_cast ? o.mul(Arg(grad_out_cast), Arg(weight_cast)) : grad_out_cast;
  Node* a = o.mul(Arg(grad_x_hat), i(n.value()));
  Node* bsum = o.sum(grad_x_hat, inner_dims, true);
  Node* c1 = o.mul(Arg(grad_x_hat), Arg(x_hat));
  Node* c2 = o.sum(c1, inner_dims, true);
  Node* c3 = o.mul(Arg(x_hat), Arg(c2));
  Node* inner = o.sub(Arg(o.sub(Arg(a), Arg(bsum))), Arg(c3));
  Node* d_input = nullptr;
  Node* d_weight = nullptr;
  Node* d_bias = nullptr;
  if (mask[0]) d_input = o.mul(Arg(o.div(Arg(rstd), i(n.value()))), Arg(inner));
  if (mask[1] && weight_cast) {
    Node* prod = o.mul(Arg(grad_out_cast), Arg(x_hat));
    d_weight = outer_dims.empty() ? prod : o.sum(prod, outer_dims, false);
  }
  if (mask[2] && bias_cast) {
    d_bias = outer_dims.empty() ? b.call("clone.default", {Arg(grad_out_cast)})
                                : o.sum(grad_out_cast, outer_dims, false);
  }
  return Arg::of_tuple(
      {Arg(cast(d_input, input)), Arg(cast(d_weight, weight)), Arg(cast(d_bias, bias))});
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

}  // namespace
}  // namespace decomps

void register_norm_ops(OpTable& t) {
  add_norm_grad_helpers();
  // The formulas are derivatives.yaml's (1.13), except that `grad.defined() ? f(grad, ...) :
  // std::tuple<...>()` is f(grad, ...), an undefined grad giving no gradients.
  t.def(
       "native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, "
       "float eps) -> (Tensor, Tensor, Tensor)")
      .tags(kNormalization | kCore)
      .meta(native_layer_norm_meta)
      .derivative(formula(
          "input, weight, bias: native_layer_norm_backward_symint(grad, input, normalized_shape, "
          "result1, result2, weight, bias, grad_input_mask)"))
      .decomposition(decomp(decomps::native_layer_norm_full_decomp, kFullTable,
                            "torch/_refs: native_layer_norm"));
  t.def(
       "native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape, "
       "Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask) -> "
       "(Tensor, Tensor, Tensor)")
      .tags(kCore | kBackward)
      .meta(native_layer_norm_backward_meta)
      .derivative(
          formula("input, weight, grad_out: layer_norm_double_backward(input, weight, "
                  "grads[0], grads[1], grads[2], grad_out, mean, rstd, normalized_shape, "
                  "grad_input_mask); bias: Tensor(); mean: not_implemented(\"native_layer_"
                  "norm_backward mean\"); rstd: not_implemented(\"native_layer_norm_backward "
                  "rstd\")"))
      .decomposition(decomp(decomps::native_layer_norm_backward_full_decomp, kFullTable,
                            "torch/_decomp: native_layer_norm_backward"));
  // 1.13 updates running_mean/running_var (args 3, 4) in training mode (arg 5) although the
  // schema does not say so.
  t.def(
       "native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
       "Tensor? running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)")
      .tags(kNormalization)
      .meta(native_batch_norm_meta)
      .undeclared_mutations({3, 4}, /*if_bool_arg=*/5)
      .derivative(formula(
          "input, weight, bias: native_batch_norm_backward(grad, input, weight, running_mean, "
          "running_var, result1, result2, training, eps, grad_input_mask)"));
  t.def(
       "native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, "
       "Tensor? running_mean, Tensor? running_var, Tensor? save_mean, Tensor? save_invstd, "
       "bool train, float eps, bool[3] output_mask) -> (Tensor, Tensor, Tensor)")
      .scratch_bytes(native_batch_norm_backward_scratch)
      .tags(kBackward)
      .meta(native_batch_norm_backward_meta)
      .derivative(
          formula("input, weight, grad_out: batchnorm_double_backward(input, weight, "
                  "grads[0], grads[1], grads[2], grad_out, running_mean, running_var, train, "
                  "eps, save_mean, save_invstd, grad_input_mask); save_mean: not_implemented("
                  "\"native_batch_norm_backward save_mean\"); save_invstd: not_implemented("
                  "\"native_batch_norm_backward save_invstd\")"));
  // PyTorch 2.x's functional batch norm (absent from 1.13): the updated running stats are results.
  t.def(
       "_native_batch_norm_legit_functional(Tensor input, Tensor? weight, Tensor? bias, "
       "Tensor running_mean, Tensor running_var, bool training, float momentum, float eps) -> "
       "(Tensor, Tensor, Tensor, Tensor running_mean_out, Tensor running_var_out)")
      .tags(kNormalization | kOutOfPlaceMutation)
      .meta(native_batch_norm_legit_functional_meta)
      // Functionalization's replacement for native_batch_norm in training (its undeclared writes).
      .inplace("native_batch_norm")
      // _native_batch_norm_legit's formula; the running-stat results are not differentiable.
      .output_differentiability({true, true, true, false, false})
      .derivative(formula(
          "input, weight, bias: native_batch_norm_backward(grad, input, weight, running_mean, "
          "running_var, result1, result2, training, eps, grad_input_mask)"));

  // CompositeImplicitAutograd: they decompose before autograd sees them, as in PyTorch.
  const uint32_t kCoreFull = kCoreTable | kFullTable;
  t.def(
       "layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None, "
       "float eps=1e-05, bool cudnn_enable=True) -> Tensor")
      .tags(kCompositeImplicit)
      .meta(layer_norm_meta)
      .decomposition(decomp(decomps::layer_norm_decomp, kCoreFull, "at::native::layer_norm"));
  t.def(
       "batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
       "Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) -> "
       "Tensor")
      .tags(kCompositeImplicit)
      .meta(batch_norm_meta)
      .undeclared_mutations({3, 4}, /*if_bool_arg=*/5)
      .decomposition(decomp(decomps::batch_norm_decomp, kCoreFull,
                            "at::native::batch_norm (_batch_norm_impl_index)"));
}

}  // namespace aotgrad
