// aotgrad: the registry's gradient sweep -- every derivative rule against libtorch's eager autograd
// and float64 finite differences, on the op samples of tests/data/op_samples/*.txt.
//
// For each valid sample of a differentiable op (one with a derivative rule, or a composite op with
// a decomposition; in-place, random, non-differentiable and `@skip` ops are left out) with a
// floating-point tensor input:
//   1. the one-node forward graph is parsed (multi-output ops project their results with getitems);
//      every floating tensor input the op does not write and PyTorch can differentiate (probed
//      with eager autograd: nll_loss_forward's weight is not) is marked as requiring grad;
//   2. build_joint gives the joint graph, which must verify; it runs on the interpreter with the
//      sample's inputs and random tangents, and every gradient must have its input's sizes/dtype;
//   3. f32 samples: the gradients are compared with torch::autograd::grad over the op called
//      through the dispatcher on requires_grad copies of the same inputs (bf16/f16 samples are
//      checked in float64 only);
//   4. every sample in float64 (floating tensors and dtype arguments converted): the joint graph's
//      gradients are compared with libtorch eager in float64 and with central finite differences
//      of L(x) = sum_k <tangent_k, output_k(x)> on up to kFdElements elements per input. Output
//      elements that are not finite at the sample point, and outputs PyTorch does not
//      differentiate (native_layer_norm's mean/rstd), get a zero tangent. Eager decides; where
//      eager disagrees with aotgrad, finite differences break the tie (libtorch 1.13's own
//      as_strided_scatter backward is wrong). Where PyTorch's formula is not the true derivative
//      (embedding with scale_grad_by_freq) and aotgrad matches PyTorch, that is a note, not a
//      failure.
//   5. the op world's traced backward (providers/traced_rules.h): the same forward graph read
//   against
//      a table whose every op is libtorch's provider's (derivative traced through libtorch's
//      autograd on fake tensors) must give the declared rule's gradients for the same inputs and
//      tangents (issue 20: the declared rule and the traced backward agree). Ops libtorch
//      differentiates through their CompositeImplicitAutograd kernel have no traced rule.
// One test per family file (GradSweep.Pointwise, ...) reports every failing line with its
// file:line, and each op of the file that has no derivative rule once, then a summary.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/providers/aten_call.h"
#include "aotgrad/providers/dispatcher_ops.h"
#include "aotgrad/runtime/interpreter.h"
#include "aotgrad/transforms/autograd.h"
#include "aotgrad/transforms/passes/decompose.h"
#include "op_samples.h"
#include "sample_inputs.h"

namespace aotgrad {
namespace {

namespace fs = std::filesystem;
namespace os = op_samples;

constexpr int kFdElements = 20;  // checked elements per input
constexpr double kFdEps = 1e-6;
constexpr double kFdAtol = 1e-5, kFdRtol = 1e-3;    // gradcheck's defaults
constexpr double kF32Atol = 1e-5, kF32Rtol = 1e-4;  // atol scaled by max(1, max |expected|)
constexpr double kF64Atol = 1e-10, kF64Rtol = 1e-7;

// --- inputs ------------------------------------------------------------------------------------

// A copy with the same sizes, strides, storage offset and whole storage contents.
at::Tensor clone_exact(const at::Tensor& t) {
  int64_t n = static_cast<int64_t>(t.storage().nbytes()) / static_cast<int64_t>(t.element_size());
  at::Tensor storage = at::empty({n}, t.options());
  if (n > 0) storage.copy_(at::empty({0}, t.options()).set_(t.storage(), 0, {n}, {1}));
  return storage.as_strided(t.sizes(), t.strides(), t.storage_offset());
}

// For each logical element of t, the index of its storage element (sizes of t).
at::Tensor storage_index(const at::Tensor& t) {
  int64_t n = static_cast<int64_t>(t.storage().nbytes()) / static_cast<int64_t>(t.element_size());
  return at::arange(std::max<int64_t>(n, 1), at::kLong)
      .as_strided(t.sizes(), t.strides(), t.storage_offset());
}

std::string fmt(double v) {
  std::ostringstream s;
  s.precision(3);
  s << v;
  return s.str();
}

// --- one sample's graphs -------------------------------------------------------------------------

// The forward graph of a sample and what the sweep needs about it.
struct ForwardGraph {
  std::shared_ptr<Graph> graph;
  const Node* node = nullptr;            // the op's call node
  std::vector<std::string> input_names;  // per placeholder: "t1 (other)"
  std::vector<bool> requires_grad;       // per placeholder
};

// The sample's one-node graph read against `table`; a multi-output op projects its results.
std::shared_ptr<Graph> sample_graph(const os::Sample& s, const OpDef& op, const OpTable& table) {
  std::shared_ptr<Graph> g = parse_graph(os::graph_text(s, op.short_name), table);
  const Node* n = g->find("result");
  if (n && n->meta().kind == ValueMeta::Kind::Tuple)
    g = parse_graph(os::graph_text(s, op.short_name, "", n->meta().elems.size()), table);
  return g;
}

// Parses the sample's graph; nullopt (with `why`) when aotgrad rejects the sample.
std::optional<ForwardGraph> forward_graph(const os::Sample& s, const OpDef& op, std::string& why) {
  ForwardGraph fg;
  try {
    fg.graph = sample_graph(s, op, aten_ops());
  } catch (const Error& e) {
    why = e.message();
    return std::nullopt;
  }
  fg.node = fg.graph->find("result");
  // Arguments the op writes (declared or not) are not differentiable inputs.
  std::set<int> written(op.undeclared_mutations.begin(), op.undeclared_mutations.end());
  for (int i : op.mutated_args()) written.insert(i);
  std::map<const Node*, std::pair<std::string, bool>> use;  // placeholder -> (arg name, written)
  for (size_t i = 0; i < fg.node->args().size(); ++i) {
    size_t k = 0;
    bool is_list = fg.node->arg(i).is_list();
    fg.node->arg(i).for_each_node([&](Node* p) {
      std::string name = op.schema.args[i].name;
      if (is_list) name += "[" + std::to_string(k++) + "]";
      use.emplace(p, std::make_pair(name, written.count(static_cast<int>(i)) > 0));
    });
  }
  for (const Node* p : fg.graph->placeholders()) {
    auto it = use.find(p);
    std::string arg = it == use.end() ? "?" : it->second.first;
    bool is_written = it != use.end() && it->second.second;
    fg.input_names.push_back(p->name() + " (" + arg + ")");
    fg.requires_grad.push_back(p->meta().is_tensor() && is_floating(p->tensor_meta().dtype) &&
                               !is_written);
  }
  return fg;
}

// The f64 form of a sample: floating tensors and floating dtype arguments become float64.
os::Sample to_f64(const os::Sample& s) {
  os::Sample out = s;
  for (auto& t : out.tensors)
    if (is_floating(t.meta.dtype)) t.meta.dtype = ScalarType::Float64;
  static const std::regex kDtype(R"(torch\.(float32|float16|bfloat16|half|float)\b)");
  out.args = std::regex_replace(out.args, kDtype, "torch.float64");
  return out;
}

bool floating_output(const Graph& g, size_t k, ScalarType* dtype) {
  const Arg& o = g.output()->arg(0);
  std::vector<Arg> flat = o.is_list() ? o.list : std::vector<Arg>{o};
  if (k >= flat.size() || !flat[k].is_node() || !flat[k].node->meta().is_tensor()) return false;
  *dtype = flat[k].node->tensor_meta().dtype;
  return is_floating(*dtype);
}

// A built, verified joint graph with its interpreter.
struct Joint {
  JointGraph jg;
  std::shared_ptr<const Graph> graph;
  std::unique_ptr<Interpreter> interp;
};

// build_joint + verify + Interpreter; returns the problem text, or "" on success.
std::string make_joint(const ForwardGraph& fg, Joint& j) {
  try {
    // Composite ops are differentiated through their decomposition, as in PyTorch.
    std::shared_ptr<const Graph> source = decompose_composites(fg.graph->clone());
    j.jg = build_joint(*source, fg.requires_grad);
  } catch (const Error& e) {
    return "build_joint: " + e.message();
  }
  try {
    verify(*j.jg.graph);
  } catch (const Error& e) {
    return "the joint graph does not verify: " + e.message();
  }
  j.graph = std::shared_ptr<const Graph>(std::move(j.jg.graph));
  try {
    j.interp = std::make_unique<Interpreter>(j.graph);
  } catch (const Error& e) {
    return "the interpreter rejects the joint graph: " + e.message();
  }
  return "";
}

// --- running the graphs and libtorch -------------------------------------------------------------

// The sample's inputs, one per placeholder (the same values whatever the floating dtype).
std::vector<at::Tensor> make_inputs(const os::Sample& s, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  std::vector<at::Tensor> out;
  for (const auto& spec : s.tensors) out.push_back(make_input(spec, spec.meta.dtype, gen));
  return out;
}

// Random tangents, one per joint tangent placeholder.
std::vector<at::Tensor> make_tangents(const Joint& j, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed ^ 0x5bd1e995u);
  std::vector<Node*> ph = j.graph->placeholders();
  std::vector<at::Tensor> out;
  for (size_t t = 0; t < j.jg.num_tangents; ++t) {
    const TensorMeta& m = ph[j.jg.num_primals + t]->tensor_meta();
    std::vector<int64_t> sizes;
    for (auto& d : m.sizes) sizes.push_back(d.value());
    at::Tensor x = at::empty(sizes, at::TensorOptions().dtype(to_c10(m.dtype)));
    x.copy_(at::empty(sizes, at::kDouble).normal_(0, 1, gen));
    out.push_back(x);
  }
  return out;
}

// Runs the joint graph; returns the gradient per primal (undefined where None).
std::vector<at::Tensor> run_joint(const Joint& j, const std::vector<at::Tensor>& inputs,
                                  const std::vector<at::Tensor>& tangents) {
  std::vector<c10::IValue> in;
  for (auto& t : inputs) in.emplace_back(clone_exact(t));
  for (auto& t : tangents) in.emplace_back(t);
  std::vector<c10::IValue> out = j.interp->run(std::move(in));
  std::vector<at::Tensor> grads;
  for (size_t i = 0; i < j.jg.num_primals; ++i) {
    const c10::IValue& g = out.at(j.jg.num_forward_outputs + i);
    grads.push_back(g.isTensor() ? g.toTensor() : at::Tensor());
  }
  return grads;
}

void flatten(const c10::IValue& v, std::vector<c10::IValue>& out) {
  if (v.isList()) {
    for (const c10::IValue& e : v.toListRef()) out.push_back(e);
  } else if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements()) flatten(e, out);
  } else {
    out.push_back(v);
  }
}

// The op called eagerly through the dispatcher (autograd on) on copies of `inputs`; the copies
// marked in `requires_grad` are autograd leaves.
struct EagerCall {
  std::vector<at::Tensor> leaves;    // one per placeholder
  std::vector<c10::IValue> outputs;  // flattened like the forward graph's outputs
};

EagerCall eager_call(const ForwardGraph& fg, const std::vector<at::Tensor>& inputs,
                     const std::vector<bool>& requires_grad) {
  EagerCall c;
  std::map<const Node*, c10::IValue> values;
  std::vector<Node*> ph = fg.graph->placeholders();
  for (size_t i = 0; i < ph.size(); ++i) {
    at::Tensor t = clone_exact(inputs[i]);
    if (requires_grad[i]) t.requires_grad_(true);
    c.leaves.push_back(t);
    values[ph[i]] = t;
  }
  std::vector<c10::IValue> results =
      aten_op(*fg.node->op()).call(fg.node->args(), [&](const Node& n) { return values.at(&n); });
  for (auto& r : results) flatten(r, c.outputs);
  return c;
}

// PyTorch's verdict that an input is not differentiable: raised at the call or at backward.
bool says_not_differentiable(const std::string& msg) {
  return msg.find("is not differentiable with respect to argument") != std::string::npos ||
         (msg.find("the derivative for") != std::string::npos &&
          msg.find("is not implemented") != std::string::npos);
}

// Clears requires_grad of the inputs PyTorch refuses to differentiate (nll_loss_forward's
// weight, ...): they are not differentiable inputs of the op, so the joint graph need not handle
// them. Each input is probed alone: call, then backward with ones.
void probe_differentiable(ForwardGraph& fg, const std::vector<at::Tensor>& inputs) {
  for (size_t i = 0; i < fg.requires_grad.size(); ++i) {
    if (!fg.requires_grad[i]) continue;
    std::vector<bool> only(fg.requires_grad.size(), false);
    only[i] = true;
    try {
      EagerCall c = eager_call(fg, inputs, only);
      std::vector<at::Tensor> outs, ones;
      for (auto& o : c.outputs)
        if (o.isTensor() && o.toTensor().defined() && o.toTensor().requires_grad()) {
          outs.push_back(o.toTensor());
          ones.push_back(at::ones_like(o.toTensor()));
        }
      if (!outs.empty())
        torch::autograd::grad(outs, {c.leaves[i]}, ones, /*retain_graph=*/false,
                              /*create_graph=*/false, /*allow_unused=*/true);
    } catch (const std::exception& e) {
      if (says_not_differentiable(e.what())) fg.requires_grad[i] = false;
    }
  }
}

// libtorch's eager gradients for the joint graph's tangents (undefined: none flows).
std::vector<at::Tensor> eager_grads(const ForwardGraph& fg, const Joint& j,
                                    const std::vector<at::Tensor>& inputs,
                                    const std::vector<at::Tensor>& tangents) {
  EagerCall c = eager_call(fg, inputs, fg.requires_grad);
  std::vector<at::Tensor> leaves, outs, tans;
  for (size_t i = 0; i < c.leaves.size(); ++i)
    if (fg.requires_grad[i]) leaves.push_back(c.leaves[i]);
  for (size_t k = 0; k < j.jg.tangent_of_output.size() && k < c.outputs.size(); ++k) {
    int t = j.jg.tangent_of_output[k];
    if (t < 0 || !c.outputs[k].isTensor()) continue;
    at::Tensor o = c.outputs[k].toTensor();
    if (!o.defined() || !o.requires_grad()) continue;
    outs.push_back(o);
    tans.push_back(tangents[t]);
  }
  std::vector<at::Tensor> got;
  if (!outs.empty())
    got = torch::autograd::grad(outs, leaves, tans, /*retain_graph=*/false,
                                /*create_graph=*/false, /*allow_unused=*/true);
  std::vector<at::Tensor> grads(c.leaves.size());
  size_t g = 0;
  for (size_t i = 0; i < c.leaves.size(); ++i)
    if (fg.requires_grad[i]) grads[i] = g < got.size() ? got[g++] : at::Tensor();
  return grads;
}

// Per joint tangent: whether PyTorch propagates a gradient from that output (native_layer_norm's
// mean and rstd, a loss's total_weight: no). Such outputs get a zero tangent in the float64 check,
// since finite differences of L would count them.
std::vector<bool> eager_used_outputs(const ForwardGraph& fg, const Joint& j,
                                     const std::vector<at::Tensor>& inputs,
                                     const std::vector<at::Tensor>& tangents) {
  std::vector<bool> used(j.jg.num_tangents, true);
  if (j.jg.num_tangents <= 1) return used;
  try {
    EagerCall c = eager_call(fg, inputs, fg.requires_grad);
    std::vector<at::Tensor> leaves;
    for (size_t i = 0; i < c.leaves.size(); ++i)
      if (fg.requires_grad[i]) leaves.push_back(c.leaves[i]);
    for (size_t k = 0; k < j.jg.tangent_of_output.size() && k < c.outputs.size(); ++k) {
      int t = j.jg.tangent_of_output[k];
      if (t < 0) continue;
      at::Tensor o = c.outputs[k].isTensor() ? c.outputs[k].toTensor() : at::Tensor();
      if (!o.defined() || !o.requires_grad()) {
        used[t] = false;
        continue;
      }
      std::vector<at::Tensor> g = torch::autograd::grad({o}, leaves, {tangents[t]},
                                                        /*retain_graph=*/true,
                                                        /*create_graph=*/false,
                                                        /*allow_unused=*/true);
      used[t] = std::any_of(g.begin(), g.end(), [](const at::Tensor& x) {
        return x.defined() && x.numel() > 0 && x.ne(0).any().item<bool>();
      });
    }
  } catch (const std::exception&) {
    std::fill(used.begin(), used.end(), true);
  }
  return used;
}

// libtorch's error when its eager autograd cannot differentiate the sample either (backward with
// ones for every output that requires grad), or "" when it can.
std::string eager_error(const ForwardGraph& fg, const std::vector<at::Tensor>& inputs) {
  try {
    EagerCall c = eager_call(fg, inputs, fg.requires_grad);
    std::vector<at::Tensor> leaves, outs, ones;
    for (size_t i = 0; i < c.leaves.size(); ++i)
      if (fg.requires_grad[i]) leaves.push_back(c.leaves[i]);
    for (auto& o : c.outputs)
      if (o.isTensor() && o.toTensor().defined() && o.toTensor().requires_grad()) {
        outs.push_back(o.toTensor());
        ones.push_back(at::ones_like(o.toTensor()));
      }
    if (!outs.empty())
      torch::autograd::grad(outs, leaves, ones, /*retain_graph=*/false, /*create_graph=*/false,
                            /*allow_unused=*/true);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    msg = msg.substr(0, msg.find('\n'));
    return msg.empty() ? "(no message)" : msg;
  }
  return "";
}

// --- comparisons ---------------------------------------------------------------------------------

// "" when `got` (aotgrad) matches `want` within rtol/atol (atol scaled by max(1, max |want|));
// else what differs. None matches zeros.
std::string compare_grad(const at::Tensor& got, const at::Tensor& want, const std::string& against,
                         double rtol, double atol) {
  if (!got.defined() && !want.defined()) return "";
  if (!got.defined() || !want.defined()) {
    const at::Tensor& d = got.defined() ? got : want;
    double m = d.numel() ? d.abs().max().item<double>() : 0.0;
    if (m == 0) return "";
    return got.defined()
               ? "aotgrad gives a gradient (max |g| " + fmt(m) + ") but " + against + " gives none"
               : "aotgrad gives no gradient but " + against + "'s has max |g| " + fmt(m);
  }
  if (got.sizes() != want.sizes())
    return "aotgrad's gradient has sizes " + c10::str(got.sizes()) + ", " + against + "'s " +
           c10::str(want.sizes());
  if (got.scalar_type() != want.scalar_type())
    return "aotgrad's gradient is " + std::string(c10::toString(got.scalar_type())) + ", " +
           against + "'s " + c10::toString(want.scalar_type());
  if (got.numel() == 0) return "";
  at::Tensor g = got.to(at::kDouble), w = want.to(at::kDouble);
  at::Tensor diff = (g - w).abs();
  double scale = std::max(1.0, w.abs().nan_to_num(0, 0, 0).max().item<double>());
  at::Tensor same_nonfinite = (g.isnan() & w.isnan()) | (g.isinf() & (g == w));
  at::Tensor bad = (~(diff <= atol * scale + rtol * w.abs())) & ~same_nonfinite;
  if (!bad.any().item<bool>()) return "";
  at::Tensor masked = at::where(bad, diff.nan_to_num(1e300, 1e300, 1e300), at::zeros_like(diff));
  int64_t e = masked.flatten().argmax().item<int64_t>();
  return "max abs diff " + fmt(diff.flatten()[e].item<double>()) + " vs " + against + " (" +
         std::to_string(bad.sum().item<int64_t>()) + " of " + std::to_string(got.numel()) +
         " elements off; e.g. element " + std::to_string(e) + ": aotgrad " +
         fmt(g.flatten()[e].item<double>()) + ", " + against + " " +
         fmt(w.flatten()[e].item<double>()) + ")";
}

// A central difference of L at one storage element of an input.
struct FdPoint {
  int64_t offset = 0;
  double fd = 0;
};

// L(x) = sum_k <tangent_k, output_k(x)> over the output elements in mask_k.
double objective(const Interpreter& fw, const std::vector<int>& tangent_of_output,
                 const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& tangents,
                 const std::vector<at::Tensor>& masks) {
  std::vector<c10::IValue> in(inputs.begin(), inputs.end());
  std::vector<c10::IValue> out = fw.run(std::move(in));
  double l = 0;
  for (size_t k = 0; k < tangent_of_output.size() && k < out.size(); ++k) {
    int t = tangent_of_output[k];
    if (t < 0) continue;
    at::Tensor prod = out[k].toTensor().to(at::kDouble) * tangents[t].to(at::kDouble);
    l += at::where(masks[t], prod, at::zeros_like(prod)).sum().item<double>();
  }
  return l;
}

// Central differences of L on up to kFdElements storage elements of input i (all of them for
// small inputs), perturbing the storage so that overlapping (stride-0) inputs are handled;
// non-finite differences are dropped.
std::vector<FdPoint> finite_differences(const Interpreter& fw,
                                        const std::vector<int>& tangent_of_output,
                                        const std::vector<at::Tensor>& inputs,
                                        const std::vector<at::Tensor>& tangents,
                                        const std::vector<at::Tensor>& masks, size_t i,
                                        at::Generator& gen) {
  const at::Tensor& x = inputs[i];
  std::vector<FdPoint> out;
  if (x.numel() == 0 || x.scalar_type() != at::kDouble) return out;
  at::Tensor sidx = storage_index(x).flatten();
  std::vector<int64_t> picks;
  if (x.numel() <= kFdElements) {
    for (int64_t e = 0; e < x.numel(); ++e) picks.push_back(e);
  } else {
    at::Tensor perm = at::randperm(x.numel(), gen, at::kLong);
    for (int64_t e = 0; e < kFdElements; ++e) picks.push_back(perm[e].item<int64_t>());
  }
  std::set<int64_t> offsets;
  for (int64_t e : picks) offsets.insert(sidx[e].item<int64_t>());
  double* data = static_cast<double*>(x.storage().data_ptr().get());
  for (int64_t off : offsets) {
    double saved = data[off];
    data[off] = saved + kFdEps;
    double lp = objective(fw, tangent_of_output, inputs, tangents, masks);
    data[off] = saved - kFdEps;
    double lm = objective(fw, tangent_of_output, inputs, tangents, masks);
    data[off] = saved;
    double fd = (lp - lm) / (2 * kFdEps);
    if (std::isfinite(fd)) out.push_back({off, fd});
  }
  return out;
}

// How a gradient agrees with finite differences at their points.
struct FdCheck {
  int checked = 0;
  int bad = 0;
  double worst = 0;
  std::string example;
  std::string describe() const {
    return "float64 finite differences disagree at " + std::to_string(bad) + " of " +
           std::to_string(checked) + " checked elements, max abs diff " + fmt(worst) + " (" +
           example + ")";
  }
};

// Compares the gradient of `input` (None: zeros) with `points`. Points where the gradient is not
// finite are not counted.
FdCheck against_fd(const at::Tensor& grad, const at::Tensor& input,
                   const std::vector<FdPoint>& points) {
  FdCheck c;
  if (points.empty()) return c;
  at::Tensor g =
      grad.defined() ? grad.to(at::kDouble).flatten() : at::zeros({input.numel()}, at::kDouble);
  if (g.numel() != input.numel()) return c;  // reported by the layout check
  at::Tensor sidx = storage_index(input).flatten();
  for (const FdPoint& p : points) {
    double an = g.masked_select(sidx == p.offset).sum().item<double>();
    if (!std::isfinite(an)) continue;
    ++c.checked;
    double err = std::abs(p.fd - an);
    if (err <= kFdAtol + kFdRtol * std::abs(p.fd)) continue;
    ++c.bad;
    if (err > c.worst) {
      c.worst = err;
      c.example = "storage element " + std::to_string(p.offset) + ": gradient " + fmt(an) +
                  ", finite difference " + fmt(p.fd);
    }
  }
  return c;
}

// Each gradient the joint graph returns has its input's sizes and dtype.
void check_grad_layout(const ForwardGraph& fg, const std::vector<at::Tensor>& inputs,
                       const std::vector<at::Tensor>& grads, std::vector<std::string>& problems) {
  for (size_t i = 0; i < grads.size() && i < inputs.size(); ++i) {
    if (!grads[i].defined()) continue;
    if (!fg.requires_grad[i]) {
      problems.push_back(fg.input_names[i] +
                         ": the joint graph returns a gradient for an input "
                         "that does not require grad");
      continue;
    }
    if (grads[i].sizes() != inputs[i].sizes())
      problems.push_back(fg.input_names[i] + ": the joint graph's gradient has sizes " +
                         c10::str(grads[i].sizes()) + ", the input " + c10::str(inputs[i].sizes()));
    else if (grads[i].scalar_type() != inputs[i].scalar_type())
      problems.push_back(fg.input_names[i] + ": the joint graph's gradient is " +
                         c10::toString(grads[i].scalar_type()) + ", the input " +
                         c10::toString(inputs[i].scalar_type()));
  }
}

// --- the sweep -----------------------------------------------------------------------------------

struct FileReport {
  int samples = 0;         // valid (non-`!`) sample lines
  int differentiable = 0;  // of differentiable ops with a differentiable floating input
  int eager_checked = 0;
  int traced_checked = 0;  // against the traced backward
  int fd_checked = 0;
  std::map<std::string, int> skipped;                 // reason -> count
  std::map<std::string, std::vector<int>> no_rule;    // op -> lines
  std::vector<std::pair<int, std::string>> failures;  // line -> message
  std::vector<std::string> notes;                     // not failures
};

bool low_precision(const os::Sample& s) {
  for (const auto& t : s.tensors)
    if (t.meta.dtype == ScalarType::BFloat16 || t.meta.dtype == ScalarType::Float16) return true;
  return s.args.find("torch.bfloat16") != std::string::npos ||
         s.args.find("torch.float16") != std::string::npos ||
         s.args.find("torch.half") != std::string::npos;
}

bool same_sample(const os::Sample& a, const os::Sample& b) {
  if (a.args != b.args || a.tensors.size() != b.tensors.size()) return false;
  for (size_t i = 0; i < a.tensors.size(); ++i)
    if (a.tensors[i].meta.dtype != b.tensors[i].meta.dtype) return false;
  return true;
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// Every op as libtorch's provider gives it (none declared): its derivative is traced.
const OpTable& traced_ops() {
  static OpTable* t = [] {
    auto* table = new OpTable;
    table->set_provider(&libtorch_op_provider());
    return table;
  }();
  return *t;
}

bool data_dependent(const std::string& msg) {
  return msg.find("dynamic_output_shape") != std::string::npos ||
         msg.find("data_dependent_output") != std::string::npos;
}

// Step 5: the declared rule's gradients `grads` against the traced backward's, for the same
// inputs and the same tangents (an output the declared rule does not differentiate gets zeros).
// The traced backward is libtorch's own formula: where it differs from the declared rule but agrees
// with libtorch eager, or fails where eager fails too, the declared rule's checks against eager
// and finite differences decide (libtorch 1.13's as_strided_scatter backward is wrong; its
// scatter_add backward gives a larger src a gradient of the index's sizes). A traced backward
// that needs a data-dependent shape (masked_fill's value) cannot be traced: a note.
void check_traced(const os::Sample& s, const ForwardGraph& fg, const Joint& joint,
                  const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& tangents,
                  const std::vector<at::Tensor>& grads, FileReport& rep,
                  std::vector<std::string>& problems, std::vector<std::string>& notes) {
  const OpDef* traced = traced_ops().find(fg.node->op()->name);
  if (!traced || !traced->derivative) {
    rep.skipped["no traced backward (libtorch differentiates its composite kernel)"]++;
    return;
  }
  // libtorch 1.13's own as_strided_scatter backward is wrong (finite differences say so; see the
  // float64 check), and reads memory it never writes: nothing to compare with.
  if (traced->name == "aten::as_strided_scatter") {
    rep.skipped["traced backward not compared: libtorch's own formula is wrong"]++;
    return;
  }
  std::optional<std::vector<at::Tensor>> eager;
  std::string eager_err;
  try {
    eager = eager_grads(fg, joint, inputs, tangents);
  } catch (const std::exception& e) {
    eager_err = first_line(e.what());
  }
  auto failed = [&](const std::string& what) {
    if (!eager)
      notes.push_back("the traced backward fails as libtorch eager does: " + first_line(what));
    else if (data_dependent(what))
      notes.push_back("the traced backward needs a data-dependent shape: " + first_line(what));
    else
      problems.push_back("traced backward: " + what);
  };
  ForwardGraph tg;
  try {
    tg.graph = sample_graph(s, *traced, traced_ops());
  } catch (const Error& e) {
    notes.push_back("the op world's OpDef rejects the sample: " + first_line(e.message()));
    return;
  }
  tg.node = tg.graph->find("result");
  tg.requires_grad = fg.requires_grad;
  tg.input_names = fg.input_names;
  Joint tj;
  std::string err = make_joint(tg, tj);
  if (!err.empty()) return failed(err);
  std::vector<at::Tensor> tt = make_tangents(tj, 0);
  const auto& mine = joint.jg.tangent_of_output;
  const auto& theirs = tj.jg.tangent_of_output;
  for (size_t k = 0; k < theirs.size(); ++k) {
    if (theirs[k] < 0) continue;
    at::Tensor& t = tt[theirs[k]];
    // Metadata of an output without elements may differ (kernels disagree there): zeros.
    if (k < mine.size() && mine[k] >= 0 && tangents[mine[k]].sizes() == t.sizes())
      t = tangents[mine[k]];
    else
      t = at::zeros_like(t);
  }
  std::vector<at::Tensor> got;
  try {
    got = run_joint(tj, inputs, tt);
  } catch (const Error& e) {
    return failed("running the joint graph: " + first_line(e.message()));
  }
  rep.traced_checked++;
  bool f64 = true;
  for (const auto& t : s.tensors)
    if (t.meta.dtype != ScalarType::Float64 && is_floating(t.meta.dtype)) f64 = false;
  double rtol = f64 ? kF64Rtol : kF32Rtol, atol = f64 ? kF64Atol : kF32Atol;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!fg.requires_grad[i]) continue;
    std::string d = compare_grad(grads[i], got[i], "the traced backward", rtol, atol);
    if (d.empty()) continue;
    if (!eager)
      notes.push_back(fg.input_names[i] + ": the traced backward differs (" + d +
                      "); libtorch eager fails: " + eager_err);
    else if (compare_grad(got[i], (*eager)[i], "libtorch eager", rtol, atol).empty())
      notes.push_back(fg.input_names[i] + ": the traced backward is libtorch eager's; " + d);
    else
      problems.push_back(fg.input_names[i] + ": " + d);
  }
}

// Checks one sample; problems are failures, notes are reported in the file summary.
void check_sample(const os::Sample& s, const OpDef& op, uint64_t seed, FileReport& rep,
                  std::vector<std::string>& problems, std::vector<std::string>& notes) {
  std::string why;
  std::optional<ForwardGraph> fg = forward_graph(s, op, why);
  if (!fg) {
    rep.skipped["aotgrad rejects the sample (MetaSweep reports it)"]++;
    return;
  }
  std::vector<at::Tensor> inputs = make_inputs(s, seed);
  probe_differentiable(*fg, inputs);
  if (std::none_of(fg->requires_grad.begin(), fg->requires_grad.end(), [](bool b) { return b; })) {
    rep.skipped["no differentiable floating tensor input"]++;
    return;
  }
  rep.differentiable++;

  // The sample's own dtypes: run the joint graph, compare with libtorch eager (f32 samples).
  Joint joint;
  std::string err = make_joint(*fg, joint);
  if (!err.empty()) {
    // Where PyTorch cannot differentiate the sample either (an empty adaptive pooling output),
    // failing to build the joint graph is what PyTorch does, a step earlier.
    std::string theirs = eager_error(*fg, inputs);
    if (theirs.empty())
      problems.push_back(err);
    else
      notes.push_back("aotgrad and libtorch eager both fail: " + first_line(err) +
                      "; libtorch: " + theirs);
    return;
  }
  if (joint.jg.num_tangents == 0) {
    rep.skipped["no differentiable output"]++;
    return;
  }
  std::vector<at::Tensor> tangents = make_tangents(joint, seed);
  std::vector<at::Tensor> grads;
  try {
    grads = run_joint(joint, inputs, tangents);
  } catch (const Error& e) {
    std::string theirs = eager_error(*fg, inputs);
    if (theirs.empty())
      problems.push_back("running the joint graph: " + e.message());
    else
      notes.push_back("aotgrad and libtorch eager both fail: running the joint graph: " +
                      first_line(e.message()) + "; libtorch: " + theirs);
    return;
  }
  check_grad_layout(*fg, inputs, grads, problems);
  if (op.derivative && !low_precision(s))
    check_traced(s, *fg, joint, inputs, tangents, grads, rep, problems, notes);
  os::Sample s64 = to_f64(s);
  bool is_f64 = same_sample(s, s64);
  std::map<size_t, std::string> eager_bad;  // input -> mismatch at the sample's dtypes
  bool eager_raised = false;
  if (!is_f64) {
    if (low_precision(s)) {
      rep.skipped["bf16/f16: compared in float64 only"]++;
    } else {
      try {
        std::vector<at::Tensor> want = eager_grads(*fg, joint, inputs, tangents);
        rep.eager_checked++;
        for (size_t i = 0; i < grads.size(); ++i) {
          if (!fg->requires_grad[i]) continue;
          std::string d = compare_grad(grads[i], want[i], "libtorch eager", kF32Rtol, kF32Atol);
          if (!d.empty()) eager_bad[i] = d;
        }
      } catch (const std::exception& e) {
        notes.push_back("libtorch eager autograd raised: " + first_line(e.what()));
        eager_raised = true;
      }
    }
  }
  auto report_eager_bad = [&]() {
    for (auto& [i, d] : eager_bad) problems.push_back(fg->input_names[i] + ": " + d);
  };

  // The float64 form: the joint graph against libtorch eager and finite differences.
  std::optional<ForwardGraph> fg64_own;
  Joint joint64_own;
  const ForwardGraph* fg64 = &*fg;
  const Joint* joint64 = &joint;
  std::vector<at::Tensor> inputs64 = inputs, tangents64 = tangents;
  if (!is_f64) {
    fg64_own = forward_graph(s64, op, why);
    if (!fg64_own) {
      rep.skipped["float64 form rejected by aotgrad (no float64 check)"]++;
      return report_eager_bad();
    }
    fg64_own->requires_grad = fg->requires_grad;
    err = make_joint(*fg64_own, joint64_own);
    if (!err.empty()) {
      problems.push_back("float64 form: " + err);
      return report_eager_bad();
    }
    for (size_t k = 0; k < joint64_own.jg.tangent_of_output.size(); ++k) {
      ScalarType dt;
      if (joint64_own.jg.tangent_of_output[k] >= 0 && floating_output(*fg64_own->graph, k, &dt) &&
          dt != ScalarType::Float64) {
        rep.skipped["float64 form has a non-f64 output (no float64 check)"]++;
        return report_eager_bad();
      }
    }
    fg64 = &*fg64_own;
    joint64 = &joint64_own;
    inputs64 = make_inputs(s64, seed);
    tangents64 = make_tangents(joint64_own, seed);
  }
  const std::vector<int>& tangent_of_output = joint64->jg.tangent_of_output;
  Interpreter fw(fg64->graph);
  // Output elements that are not finite at the sample point (log of a negative input, ...) and
  // outputs PyTorch does not differentiate get no tangent.
  std::vector<at::Tensor> masks(tangents64.size());
  std::vector<bool> used = eager_used_outputs(*fg64, *joint64, inputs64, tangents64);
  {
    std::vector<c10::IValue> in;
    for (auto& t : inputs64) in.emplace_back(clone_exact(t));
    std::vector<c10::IValue> out = fw.run(std::move(in));
    for (size_t k = 0; k < tangent_of_output.size(); ++k) {
      int t = tangent_of_output[k];
      if (t < 0) continue;
      at::Tensor finite = out[k].toTensor().isfinite();
      masks[t] = used[t] ? finite : at::zeros_like(finite);
      tangents64[t] = at::where(masks[t], tangents64[t], at::zeros_like(tangents64[t]));
    }
  }
  std::vector<at::Tensor> grads64;
  try {
    grads64 = run_joint(*joint64, inputs64, tangents64);
  } catch (const Error& e) {
    problems.push_back("float64 form: running the joint graph: " + e.message());
    return report_eager_bad();
  }
  std::optional<std::vector<at::Tensor>> eager64;
  try {
    eager64 = eager_grads(*fg64, *joint64, inputs64, tangents64);
    if (is_f64) rep.eager_checked++;
  } catch (const std::exception& e) {
    if (!eager_raised)
      notes.push_back("libtorch eager autograd raised (float64): " + first_line(e.what()));
  }
  rep.fd_checked++;
  at::Generator gen = at::detail::createCPUGenerator(seed ^ 0x9e3779b97f4a7c15ull);
  for (size_t i = 0; i < inputs64.size(); ++i) {
    if (!fg64->requires_grad[i]) continue;
    const std::string& name = fg64->input_names[i];
    std::vector<FdPoint> points =
        finite_differences(fw, tangent_of_output, inputs64, tangents64, masks, i, gen);
    FdCheck ours = against_fd(grads64[i], inputs64[i], points);
    // libtorch eager decides; finite differences break the tie when eager disagrees with both.
    bool eager_wrong = false;
    if (eager64) {
      FdCheck theirs = against_fd((*eager64)[i], inputs64[i], points);
      eager_wrong = theirs.bad > 0 && ours.bad == 0 && ours.checked > 0;
      std::string d = compare_grad(grads64[i], (*eager64)[i], "libtorch eager", kF64Rtol, kF64Atol);
      if (d.empty()) {
        if (theirs.bad)
          notes.push_back(name + ": PyTorch's own gradient is not the finite difference (" +
                          theirs.describe() + "); aotgrad matches PyTorch");
      } else if (eager_wrong) {
        notes.push_back(name + ": libtorch eager disagrees with finite differences (" +
                        theirs.describe() + "), aotgrad agrees with them; eager: " + d);
      } else {
        problems.push_back(name + ": float64: " + d + (ours.bad ? "; " + ours.describe() : ""));
      }
    } else if (ours.bad) {
      // Without eager, finite differences decide -- except for the derivative kernels (kBackward):
      // PyTorch's double-backward formulas treat saved statistics (mean, rstd, total_weight, ...)
      // as consistent with the input, which random samples are not.
      if (op.has_tag(kBackward))
        notes.push_back(name + ": no libtorch eager reference for this backward kernel; " +
                        ours.describe());
      else
        problems.push_back(name + ": " + ours.describe());
    }
    auto it = eager_bad.find(i);
    if (it != eager_bad.end()) {
      if (!eager_wrong) problems.push_back(name + ": " + it->second);
      eager_bad.erase(it);
    }
  }
  report_eager_bad();
}

std::set<std::string> all_skipped_ops() {
  std::set<std::string> out;
  for (const auto& p : os::sample_files())
    for (const auto& sk : os::read_sample_file(p).skips)
      if (const OpDef* op = aten_ops().find(sk.op_name)) out.insert(op->name);
  return out;
}

void check_family_file(const fs::path& path) {
  os::SampleFile f = os::read_sample_file(path);
  std::string file = path.string();
  std::string name = path.filename().string();
  std::set<std::string> skipped_ops = all_skipped_ops();
  FileReport rep;
  for (const os::Sample& s : f.samples) {
    if (s.must_fail) continue;
    rep.samples++;
    const OpDef* op = aten_ops().find(s.op_name);
    if (!op) {
      rep.skipped["unknown op (MetaSweep reports it)"]++;
      continue;
    }
    if (skipped_ops.count(op->name)) {
      rep.skipped["@skip op"]++;
      continue;
    }
    if (op->has_tag(kInplace)) {
      rep.skipped["in-place op"]++;
      continue;
    }
    if (op->has_tag(kRandom | kNondeterministicSeeded)) {
      rep.skipped["random op"]++;
      continue;
    }
    if (op->non_differentiable) {
      rep.skipped["non-differentiable op"]++;
      continue;
    }
    if (!op->derivative && !(op->has_tag(kCompositeImplicit) && op->decomposition)) {
      bool float_input =
          std::any_of(s.tensors.begin(), s.tensors.end(),
                      [](const os::TensorSpec& t) { return is_floating(t.meta.dtype); });
      if (float_input)
        rep.no_rule[op->short_name].push_back(s.line);
      else
        rep.skipped["no floating tensor input"]++;
      continue;
    }
    uint64_t seed = os::fnv1a(file) ^ static_cast<uint64_t>(s.line);
    std::vector<std::string> problems, notes;
    try {
      check_sample(s, *op, seed, rep, problems, notes);
    } catch (const std::exception& e) {
      problems.push_back("unexpected exception: " + first_line(e.what()));
    }
    std::string where = name + ":" + std::to_string(s.line) + ": " + s.text;
    for (auto& n : notes) rep.notes.push_back(where + "\n             " + n);
    if (problems.empty()) continue;
    std::string msg = where;
    for (auto& p : problems) msg += "\n    " + p;
    rep.failures.push_back({s.line, msg});
  }
  for (const auto& [line, msg] : rep.failures) ADD_FAILURE_AT(file.c_str(), line) << msg;
  int no_rule_samples = 0;
  for (const auto& [op, lines] : rep.no_rule) {
    no_rule_samples += static_cast<int>(lines.size());
    std::string where;
    for (size_t i = 0; i < lines.size() && i < 8; ++i)
      where += (i ? ", " : "") + std::to_string(lines[i]);
    if (lines.size() > 8) where += ", ...";
    ADD_FAILURE_AT(file.c_str(), lines.front())
        << name << ": " << op << ": no derivative rule (" << lines.size()
        << " samples with a floating input, lines " << where << ")";
  }
  std::ostringstream summary;
  summary << name << ": " << rep.samples << " samples; " << rep.differentiable
          << " of differentiable ops checked (" << rep.eager_checked << " against libtorch eager, "
          << rep.traced_checked << " against the traced backward, " << rep.fd_checked
          << " in float64 against eager and finite differences); " << rep.failures.size()
          << " failing; " << rep.no_rule.size() << " ops without a derivative rule ("
          << no_rule_samples << " samples)";
  for (const auto& [reason, n] : rep.skipped)
    summary << "\n             skipped " << n << ": " << reason;
  std::cout << "[ grad     ] " << summary.str() << "\n";
  for (const auto& n : rep.notes) std::cout << "[ note     ] " << n << "\n";
  if (!rep.failures.empty() || !rep.no_rule.empty())
    ADD_FAILURE() << rep.failures.size() << " failing samples and " << rep.no_rule.size()
                  << " ops without a derivative rule in " << name << " (see above)";
}

// The checkers themselves: they pass mul's right gradients and catch wrong ones.
TEST(GradSweep, CheckersCatchWrongGradients) {
  const OpDef& mul = aten_ops().get("mul.Tensor");
  os::Sample s = os::parse_sample("mul.Tensor(f64[3, 4][1, 3], f64[4][0])");
  std::string why;
  std::optional<ForwardGraph> fg = forward_graph(s, mul, why);
  ASSERT_TRUE(fg) << why;
  EXPECT_EQ(fg->input_names, (std::vector<std::string>{"t0 (self)", "t1 (other)"}));
  EXPECT_EQ(fg->requires_grad, (std::vector<bool>{true, true}));
  std::vector<at::Tensor> in = make_inputs(s, 7);
  // Fixed and away from zero, so a 1% error is above the tolerances on every element (a random
  // tangent near zero made the 12-of-12 count below flaky).
  at::Tensor tangent = at::linspace(0.5, 2.0, 12, at::kDouble).reshape({3, 4});
  at::Tensor mask = at::ones({3, 4}, at::kBool);
  Interpreter fw(fg->graph);
  at::Generator gen = at::detail::createCPUGenerator(1);
  std::vector<FdPoint> p0 = finite_differences(fw, {0}, in, {tangent}, {mask}, 0, gen);
  std::vector<FdPoint> p1 = finite_differences(fw, {0}, in, {tangent}, {mask}, 1, gen);
  EXPECT_EQ(p0.size(), 12u);
  EXPECT_EQ(p1.size(), 1u);  // t1's four elements share one storage element
  at::Tensor right0 = tangent * in[1], right1 = (tangent * in[0]).sum(0);
  EXPECT_EQ(against_fd(right0, in[0], p0).bad, 0);
  EXPECT_EQ(against_fd(right1, in[1], p1).bad, 0);
  EXPECT_EQ(against_fd(right0 * 1.01, in[0], p0).bad, 12);
  EXPECT_EQ(against_fd(right1 + 0.1, in[1], p1).bad, 1);   // 0.4 on the shared element
  EXPECT_EQ(against_fd(at::Tensor(), in[0], p0).bad, 12);  // None is zeros

  EXPECT_EQ(compare_grad(right0, right0.clone(), "eager", kF32Rtol, kF32Atol), "");
  EXPECT_EQ(compare_grad(at::Tensor(), at::zeros({2}), "eager", kF32Rtol, kF32Atol), "");
  EXPECT_NE(compare_grad(right0, right0 * 1.001, "eager", kF32Rtol, kF32Atol), "");
  EXPECT_NE(compare_grad(at::Tensor(), right0, "eager", kF32Rtol, kF32Atol), "");
  EXPECT_NE(compare_grad(right0.to(at::kFloat), right0, "eager", kF32Rtol, kF32Atol), "");
  EXPECT_NE(compare_grad(right0.t(), right0, "eager", kF32Rtol, kF32Atol), "");
  at::Tensor with_nan = right0.clone();
  with_nan[0][0] = NAN;
  EXPECT_EQ(compare_grad(with_nan, with_nan.clone(), "eager", kF32Rtol, kF32Atol), "");
  EXPECT_NE(compare_grad(with_nan, right0, "eager", kF32Rtol, kF32Atol), "");

  // PyTorch's non-differentiable inputs are found by probing eager autograd.
  const OpDef& nll = aten_ops().get("nll_loss_forward");
  os::Sample ns = os::parse_sample("nll_loss_forward(f32[4, 5], i64[4]{0:5}, f32[5], 1, -100)");
  std::optional<ForwardGraph> nfg = forward_graph(ns, nll, why);
  ASSERT_TRUE(nfg) << why;
  probe_differentiable(*nfg, make_inputs(ns, 3));
  EXPECT_EQ(nfg->requires_grad, (std::vector<bool>{true, false, false}));
}

// One test per family file, registered from the directory listing: GradSweep.Pointwise, ...
class FamilyTest : public testing::Test {
 public:
  explicit FamilyTest(fs::path path) : path_(std::move(path)) {}
  void TestBody() override { check_family_file(path_); }

 private:
  fs::path path_;
};

const bool kRegistered = [] {
  for (const auto& p : os::sample_files()) {
    std::string test_name = os::camel(p.stem().string());
    testing::RegisterTest("GradSweep", test_name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                          [p]() -> testing::Test* { return new FamilyTest(p); });
  }
  return true;
}();

}  // namespace
}  // namespace aotgrad
