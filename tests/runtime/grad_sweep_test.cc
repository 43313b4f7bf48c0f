// aotgrad: the registry's gradient sweep -- every derivative rule against libtorch's eager autograd
// and float64 finite differences, on the op samples of tests/data/op_samples/*.txt.
//
// For each valid sample of a differentiable op (one with a derivative rule; in-place, random,
// non-differentiable and `@skip` ops are left out) with a floating-point tensor input:
//   1. the one-node forward graph is parsed (multi-output ops project their results with getitems)
//      and every floating tensor input the op does not write is marked as requiring grad;
//   2. build_joint gives the joint graph, which must verify;
//   3. the joint graph runs on the interpreter with the sample's inputs and random tangents;
//   4. f32/f64 samples: its gradients are compared with torch::autograd::grad over the op called
//      through the dispatcher on requires_grad copies of the same inputs (bf16/f16 samples are not
//      compared: their rounding makes the comparison meaningless);
//   5. every sample, converted to float64 (tensors and dtype arguments): the joint graph's
//      gradients are checked against central finite differences of
//      L(x) = sum_k <tangent_k, output_k(x)> for up to kFdElements elements per input.
// One test per family file (GradSweep.Pointwise, ...) reports every failing line with its
// file:line, and each op of the file that has no derivative rule once.
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
#include "aotgrad/runtime/aten_call.h"
#include "aotgrad/runtime/interpreter.h"
#include "aotgrad/transforms/autograd.h"
#include "op_samples.h"

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

// A tensor with the spec's sizes and strides (at::empty_strided), every storage element filled:
// floats ~ randn (uniform in [lo, hi) with a range), ints in [0, 10) or [lo, hi), bools random.
// Same values as the meta sweep's inputs for the same generator.
at::Tensor make_input(const os::TensorSpec& spec, ScalarType dtype, at::Generator& gen) {
  const TensorMeta& m = spec.meta;
  std::vector<int64_t> sizes, strides;
  for (auto& s : m.sizes) sizes.push_back(s.value());
  for (auto& s : m.strides) strides.push_back(s.value());
  at::Tensor t = at::empty_strided(sizes, strides, at::TensorOptions().dtype(to_c10(dtype)));
  int64_t n = static_cast<int64_t>(t.storage().nbytes()) / static_cast<int64_t>(t.element_size());
  if (n == 0) return t;
  at::Tensor flat = at::empty({0}, t.options()).set_(t.storage(), 0, {n}, {1});
  at::Tensor values;
  if (is_floating(dtype) || is_complex(dtype)) {
    values = at::empty({n}, at::kDouble);
    if (spec.range)
      values.uniform_(spec.range->first, spec.range->second, gen);
    else
      values.normal_(0, 1, gen);
  } else if (dtype == ScalarType::Bool) {
    values = at::empty({n}, at::kLong);
    if (spec.range)
      values.random_(static_cast<int64_t>(spec.range->first),
                     static_cast<int64_t>(spec.range->second), gen);
    else
      values.random_(0, 2, gen);
    values = values != 0;
  } else {
    values = at::empty({n}, at::kLong);
    int64_t lo = spec.range ? static_cast<int64_t>(spec.range->first) : 0;
    int64_t hi = spec.range ? static_cast<int64_t>(spec.range->second) : 10;
    values.random_(lo, hi, gen);
  }
  flat.copy_(values);
  return t;
}

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

// Parses the sample's graph; nullopt (with `why`) when aotgrad rejects the sample.
std::optional<ForwardGraph> forward_graph(const os::Sample& s, const OpDef& op, std::string& why) {
  ForwardGraph fg;
  try {
    std::shared_ptr<Graph> g = parse_graph(os::graph_text(s, op.short_name), aten_ops());
    const Node* n = g->find("result");
    if (n && n->meta().kind == ValueMeta::Kind::Tuple)
      g = parse_graph(os::graph_text(s, op.short_name, "", n->meta().elems.size()), aten_ops());
    fg.graph = std::move(g);
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
    j.jg = build_joint(*fg.graph, fg.requires_grad);
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

// The sample's inputs (one per placeholder) and tangents (one per joint tangent), seeded by line.
struct Values {
  std::vector<at::Tensor> inputs;
  std::vector<at::Tensor> tangents;
};

Values make_values(const os::Sample& s, const Joint& j, uint64_t seed) {
  Values v;
  at::Generator gen = at::detail::createCPUGenerator(seed);
  for (const auto& spec : s.tensors) v.inputs.push_back(make_input(spec, spec.meta.dtype, gen));
  std::vector<Node*> ph = j.graph->placeholders();
  for (size_t t = 0; t < j.jg.num_tangents; ++t) {
    const TensorMeta& m = ph[j.jg.num_primals + t]->tensor_meta();
    std::vector<int64_t> sizes;
    for (auto& d : m.sizes) sizes.push_back(d.value());
    at::Tensor x = at::empty(sizes, at::TensorOptions().dtype(to_c10(m.dtype)));
    x.copy_(at::empty(sizes, at::kDouble).normal_(0, 1, gen));
    v.tangents.push_back(x);
  }
  return v;
}

// Runs the joint graph; returns the gradient per primal (undefined where None).
std::vector<at::Tensor> run_joint(const Joint& j, const Values& v) {
  std::vector<c10::IValue> in;
  for (auto& t : v.inputs) in.emplace_back(clone_exact(t));
  for (auto& t : v.tangents) in.emplace_back(t);
  std::vector<c10::IValue> out = j.interp->run(std::move(in));
  std::vector<at::Tensor> grads;
  for (size_t i = 0; i < j.jg.num_primals; ++i) {
    const c10::IValue& g = out.at(j.jg.num_forward_outputs + i);
    grads.push_back(g.isTensor() ? g.toTensor() : at::Tensor());
  }
  return grads;
}

void flatten(const c10::IValue& v, std::vector<c10::IValue>& out) {
  if (v.isTensorList() || v.isList()) {
    for (const c10::IValue& e : v.toListRef()) out.push_back(e);
  } else if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements()) flatten(e, out);
  } else {
    out.push_back(v);
  }
}

// libtorch's eager gradients of the op at the same inputs and tangents (undefined: not used).
std::vector<at::Tensor> eager_grads(const ForwardGraph& fg, const Joint& j, const Values& v) {
  std::vector<at::Tensor> leaves;
  std::map<const Node*, c10::IValue> values;
  std::vector<Node*> ph = fg.graph->placeholders();
  std::vector<at::Tensor> grad_inputs;
  for (size_t i = 0; i < ph.size(); ++i) {
    at::Tensor t = clone_exact(v.inputs[i]);
    if (fg.requires_grad[i]) {
      t.requires_grad_(true);
      grad_inputs.push_back(t);
    }
    leaves.push_back(t);
    values[ph[i]] = t;
  }
  std::vector<c10::IValue> results =
      aten_op(*fg.node->op()).call(fg.node->args(), [&](const Node& n) { return values.at(&n); });
  std::vector<c10::IValue> flat;
  for (auto& r : results) flatten(r, flat);
  std::vector<at::Tensor> outs, tangents;
  for (size_t k = 0; k < j.jg.tangent_of_output.size() && k < flat.size(); ++k) {
    int t = j.jg.tangent_of_output[k];
    if (t < 0 || !flat[k].isTensor()) continue;
    at::Tensor o = flat[k].toTensor();
    if (!o.defined() || !o.requires_grad()) continue;
    outs.push_back(o);
    tangents.push_back(v.tangents[t]);
  }
  std::vector<at::Tensor> got;
  if (!outs.empty())
    got = torch::autograd::grad(outs, grad_inputs, tangents, /*retain_graph=*/false,
                                /*create_graph=*/false, /*allow_unused=*/true);
  std::vector<at::Tensor> grads(ph.size());
  size_t g = 0;
  for (size_t i = 0; i < ph.size(); ++i)
    if (fg.requires_grad[i]) grads[i] = g < got.size() ? got[g++] : at::Tensor();
  return grads;
}

// Compares gradient `got` (aotgrad's joint graph) with `want`; appends a problem line on mismatch.
void compare_grad(const at::Tensor& got, const at::Tensor& want, const std::string& input,
                  const std::string& against, double rtol, double atol,
                  std::vector<std::string>& problems) {
  if (!got.defined() && !want.defined()) return;
  if (!got.defined() || !want.defined()) {
    const at::Tensor& d = got.defined() ? got : want;
    double m = d.numel() ? d.abs().max().item<double>() : 0.0;
    if (m == 0) return;  // None and zeros agree
    problems.push_back(
        input + ": " +
        (got.defined()
             ? "aotgrad gives a gradient (max |g| " + fmt(m) + ") but " + against + " gives none"
             : "aotgrad gives no gradient but " + against + "'s has max |g| " + fmt(m)));
    return;
  }
  if (got.sizes() != want.sizes()) {
    problems.push_back(input + ": aotgrad's gradient has sizes " + c10::str(got.sizes()) + ", " +
                       against + "'s " + c10::str(want.sizes()));
    return;
  }
  if (got.scalar_type() != want.scalar_type()) {
    problems.push_back(input + ": aotgrad's gradient is " +
                       std::string(c10::toString(got.scalar_type())) + ", " + against + "'s " +
                       c10::toString(want.scalar_type()));
    return;
  }
  if (got.numel() == 0) return;
  at::Tensor g = got.to(at::kDouble), w = want.to(at::kDouble);
  at::Tensor diff = (g - w).abs();
  double scale = std::max(1.0, w.abs().max().item<double>());
  at::Tensor bad = diff > (atol * scale + rtol * w.abs());
  bad = bad | (g.isnan() != w.isnan());
  bad = bad & ~(g.isnan() & w.isnan());
  if (!bad.any().item<bool>()) return;
  at::Tensor masked = at::where(bad, diff, at::zeros_like(diff)).nan_to_num(1e300);
  int64_t at_flat = masked.flatten().argmax().item<int64_t>();
  problems.push_back(input + ": max abs diff " + fmt(masked.max().item<double>()) + " vs " +
                     against + " (" + std::to_string(bad.sum().item<int64_t>()) + " of " +
                     std::to_string(got.numel()) + " elements off; e.g. element " +
                     std::to_string(at_flat) + ": aotgrad " +
                     fmt(g.flatten()[at_flat].item<double>()) + ", " + against + " " +
                     fmt(w.flatten()[at_flat].item<double>()) + ")");
}

// L(x) = sum_k <tangent_k, output_k(x)> of the forward graph at `inputs`.
double objective(const Interpreter& fw, const Joint& j, const std::vector<at::Tensor>& inputs,
                 const std::vector<at::Tensor>& tangents) {
  std::vector<c10::IValue> in(inputs.begin(), inputs.end());
  std::vector<c10::IValue> out = fw.run(std::move(in));
  double l = 0;
  for (size_t k = 0; k < j.jg.tangent_of_output.size() && k < out.size(); ++k) {
    int t = j.jg.tangent_of_output[k];
    if (t < 0) continue;
    l += (out[k].toTensor().to(at::kDouble) * tangents[t].to(at::kDouble)).sum().item<double>();
  }
  return l;
}

// Checks the gradients `grads` of the float64 joint graph against central differences of the
// forward graph, on up to kFdElements storage elements per differentiable input.
void check_finite_differences(const Interpreter& fw, const Joint& j, const ForwardGraph& fg,
                              std::vector<at::Tensor> inputs,
                              const std::vector<at::Tensor>& tangents,
                              const std::vector<at::Tensor>& grads, uint64_t seed,
                              std::vector<std::string>& problems) {
  at::Generator gen = at::detail::createCPUGenerator(seed ^ 0x9e3779b97f4a7c15ull);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!fg.requires_grad[i] || inputs[i].numel() == 0) continue;
    at::Tensor x = inputs[i];
    if (x.scalar_type() != at::kDouble) continue;
    at::Tensor sidx = storage_index(x).flatten();
    at::Tensor grad = grads[i].defined() ? grads[i].to(at::kDouble).flatten()
                                         : at::zeros({x.numel()}, at::kDouble);
    if (grad.numel() != x.numel()) {
      problems.push_back(fg.input_names[i] + ": the gradient has " + std::to_string(grad.numel()) +
                         " elements, the input " + std::to_string(x.numel()));
      continue;
    }
    // The elements to check: all, or kFdElements random ones; by storage element, so that
    // overlapping (stride-0) inputs sum the gradient of every element sharing the storage.
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
    double worst = 0;
    std::string example;
    int off_count = 0;
    for (int64_t off : offsets) {
      double saved = data[off];
      data[off] = saved + kFdEps;
      double lp = objective(fw, j, inputs, tangents);
      data[off] = saved - kFdEps;
      double lm = objective(fw, j, inputs, tangents);
      data[off] = saved;
      double fd = (lp - lm) / (2 * kFdEps);
      double an = grad.masked_select(sidx == off).sum().item<double>();
      double err = std::abs(fd - an);
      bool ok = err <= kFdAtol + kFdRtol * std::abs(fd) || (std::isnan(fd) && std::isnan(an));
      if (ok) continue;
      ++off_count;
      if (!(err <= worst)) {
        worst = err;
        example = "storage element " + std::to_string(off) + ": aotgrad " + fmt(an) +
                  ", finite difference " + fmt(fd);
      }
    }
    if (off_count)
      problems.push_back(fg.input_names[i] + ": float64 finite differences disagree at " +
                         std::to_string(off_count) + " of " + std::to_string(offsets.size()) +
                         " checked elements, max abs diff " + fmt(worst) + " (" + example + ")");
  }
}

// --- the sweep -----------------------------------------------------------------------------------

struct FileReport {
  int samples = 0;         // valid (non-`!`) sample lines
  int differentiable = 0;  // of differentiable ops with a floating input
  int eager_checked = 0;
  int fd_checked = 0;
  std::map<std::string, int> skipped;                 // reason -> count
  std::map<std::string, std::vector<int>> no_rule;    // op -> lines
  std::vector<std::pair<int, std::string>> failures;  // line -> message
};

bool low_precision(const os::Sample& s) {
  for (const auto& t : s.tensors)
    if (t.meta.dtype == ScalarType::BFloat16 || t.meta.dtype == ScalarType::Float16) return true;
  return s.args.find("torch.bfloat16") != std::string::npos ||
         s.args.find("torch.float16") != std::string::npos ||
         s.args.find("torch.half") != std::string::npos;
}

bool has_f32(const os::Sample& s) {
  for (const auto& t : s.tensors)
    if (t.meta.dtype == ScalarType::Float32) return true;
  return s.args.find("torch.float32") != std::string::npos;
}

std::vector<std::string> check_sample(const os::Sample& s, const OpDef& op, uint64_t seed,
                                      FileReport& rep) {
  std::vector<std::string> problems;
  std::string why;
  std::optional<ForwardGraph> fg = forward_graph(s, op, why);
  if (!fg) {
    rep.skipped["aotgrad rejects the sample (MetaSweep reports it)"]++;
    return {};
  }
  if (std::none_of(fg->requires_grad.begin(), fg->requires_grad.end(), [](bool b) { return b; })) {
    rep.skipped["no floating tensor input"]++;
    return {};
  }
  rep.differentiable++;

  // 1. The sample's own dtypes: aotgrad's joint graph against libtorch's eager autograd.
  Joint joint;
  std::string err = make_joint(*fg, joint);
  if (!err.empty()) return {err};
  if (joint.jg.num_tangents == 0) {
    rep.skipped["no differentiable output"]++;
    return {};
  }
  Values vals = make_values(s, joint, seed);
  std::vector<at::Tensor> grads;
  try {
    grads = run_joint(joint, vals);
  } catch (const Error& e) {
    return {"running the joint graph: " + e.message()};
  }
  if (low_precision(s)) {
    rep.skipped["bf16/f16: no eager comparison (f64 form only)"]++;
  } else {
    std::vector<at::Tensor> want;
    bool eager_ok = true;
    try {
      want = eager_grads(*fg, joint, vals);
    } catch (const std::exception& e) {
      std::string msg = e.what();
      problems.push_back("libtorch's eager autograd failed: " + msg.substr(0, msg.find('\n')));
      eager_ok = false;
    }
    if (eager_ok) {
      rep.eager_checked++;
      bool f32 = has_f32(s);
      for (size_t i = 0; i < grads.size(); ++i) {
        if (!fg->requires_grad[i]) continue;
        compare_grad(grads[i], want[i], fg->input_names[i], "libtorch eager",
                     f32 ? kF32Rtol : kF64Rtol, f32 ? kF32Atol : kF64Atol, problems);
      }
    }
  }

  // 2. The float64 form: the joint graph's gradients against finite differences.
  os::Sample s64 = to_f64(s);
  std::optional<ForwardGraph> fg64 = forward_graph(s64, op, why);
  if (!fg64) {
    rep.skipped["float64 form rejected by aotgrad (no finite differences)"]++;
    return problems;
  }
  Joint joint64;
  err = make_joint(*fg64, joint64);
  if (!err.empty()) {
    problems.push_back("float64 form: " + err);
    return problems;
  }
  for (size_t k = 0; k < joint64.jg.tangent_of_output.size(); ++k) {
    ScalarType dt;
    if (joint64.jg.tangent_of_output[k] >= 0 && floating_output(*fg64->graph, k, &dt) &&
        dt != ScalarType::Float64) {
      rep.skipped["float64 form has a non-f64 output (no finite differences)"]++;
      return problems;
    }
  }
  Values vals64 = make_values(s64, joint64, seed);
  try {
    std::vector<at::Tensor> grads64 = run_joint(joint64, vals64);
    Interpreter fw(fg64->graph);
    check_finite_differences(fw, joint64, *fg64, vals64.inputs, vals64.tangents, grads64, seed,
                             problems);
    rep.fd_checked++;
  } catch (const Error& e) {
    problems.push_back("float64 form: " + e.message());
  }
  return problems;
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
    if (!op->derivative) {
      bool float_input =
          std::any_of(s.tensors.begin(), s.tensors.end(),
                      [](const os::TensorSpec& t) { return is_floating(t.meta.dtype); });
      if (float_input) {
        rep.no_rule[op->short_name].push_back(s.line);
      } else {
        rep.skipped["no floating tensor input"]++;
      }
      continue;
    }
    uint64_t seed = os::fnv1a(file) ^ static_cast<uint64_t>(s.line);
    std::vector<std::string> problems;
    try {
      problems = check_sample(s, *op, seed, rep);
    } catch (const std::exception& e) {
      problems.push_back(std::string("unexpected exception: ") + e.what());
    }
    if (problems.empty()) continue;
    std::string msg = name + ":" + std::to_string(s.line) + ": " + s.text;
    for (auto& p : problems) msg += "\n    " + p;
    rep.failures.push_back({s.line, msg});
  }
  for (const auto& [line, msg] : rep.failures) ADD_FAILURE_AT(file.c_str(), line) << msg;
  for (const auto& [op, lines] : rep.no_rule) {
    std::string where;
    for (size_t i = 0; i < lines.size() && i < 8; ++i)
      where += (i ? ", " : "") + std::to_string(lines[i]);
    if (lines.size() > 8) where += ", ...";
    ADD_FAILURE_AT(file.c_str(), lines.front())
        << name << ": " << op << ": no derivative rule (" << lines.size()
        << " samples with a floating input, lines " << where << ")";
  }
  int no_rule_samples = 0;
  for (const auto& [op, lines] : rep.no_rule) no_rule_samples += static_cast<int>(lines.size());
  std::ostringstream summary;
  summary << name << ": " << rep.samples << " samples; " << rep.differentiable
          << " of ops with rules checked: " << rep.eager_checked << " against libtorch eager, "
          << rep.fd_checked << " by float64 finite differences; " << rep.failures.size()
          << " failing; " << rep.no_rule.size() << " ops without a derivative rule ("
          << no_rule_samples << " samples)";
  for (const auto& [reason, n] : rep.skipped)
    summary << "\n             skipped " << n << ": " << reason;
  std::cout << "[ grad     ] " << summary.str() << "\n";
  if (!rep.failures.empty() || !rep.no_rule.empty()) ADD_FAILURE() << summary.str();
}

// The checkers themselves: they pass the right gradients of mul and catch wrong ones.
TEST(GradSweep, CheckersCatchWrongGradients) {
  const OpDef& mul = aten_ops().get("mul.Tensor");
  os::Sample s = os::parse_sample("mul.Tensor(f64[3, 4][1, 3], f64[4][0])");
  std::string why;
  std::optional<ForwardGraph> fg = forward_graph(s, mul, why);
  ASSERT_TRUE(fg) << why;
  EXPECT_EQ(fg->input_names, (std::vector<std::string>{"t0 (self)", "t1 (other)"}));
  EXPECT_EQ(fg->requires_grad, (std::vector<bool>{true, true}));
  Joint j;  // only tangent_of_output is read by the checkers
  j.jg.tangent_of_output = {0};
  at::Generator gen = at::detail::createCPUGenerator(7);
  std::vector<at::Tensor> in = {make_input(s.tensors[0], ScalarType::Float64, gen),
                                make_input(s.tensors[1], ScalarType::Float64, gen)};
  at::Tensor tangent = at::randn({3, 4}, gen, at::kDouble);
  std::vector<at::Tensor> right = {tangent * in[1], (tangent * in[0]).sum(0)};
  Interpreter fw(fg->graph);
  std::vector<std::string> problems;
  check_finite_differences(fw, j, *fg, in, {tangent}, right, 1, problems);
  EXPECT_TRUE(problems.empty()) << problems.front();
  // Wrong: the broadcast input's gradient not reduced over its stride-0 storage sharing, and
  // self's gradient scaled.
  std::vector<at::Tensor> wrong = {right[0] * 1.01, right[1] + 1e-3};
  check_finite_differences(fw, j, *fg, in, {tangent}, wrong, 1, problems);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(problems[0].find("t0 (self): float64 finite differences disagree"), std::string::npos)
      << problems[0];
  EXPECT_NE(problems[1].find("t1 (other)"), std::string::npos) << problems[1];

  problems.clear();
  compare_grad(right[0], right[0].clone(), "t0", "libtorch eager", kF32Rtol, kF32Atol, problems);
  compare_grad(at::Tensor(), at::zeros({2}), "t0", "libtorch eager", kF32Rtol, kF32Atol, problems);
  EXPECT_TRUE(problems.empty());
  compare_grad(right[0], right[0] * 1.001, "t0", "libtorch eager", kF32Rtol, kF32Atol, problems);
  compare_grad(at::Tensor(), right[0], "t1", "libtorch eager", kF32Rtol, kF32Atol, problems);
  compare_grad(right[0].to(at::kFloat), right[0], "t1", "libtorch eager", kF32Rtol, kF32Atol,
               problems);
  compare_grad(right[0].t(), right[0], "t1", "libtorch eager", kF32Rtol, kF32Atol, problems);
  EXPECT_EQ(problems.size(), 4u);
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
