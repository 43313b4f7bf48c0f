// aotgrad: every decomposition against the op it replaces, on the op samples of
// tests/data/op_samples/*.txt.
//
// DecompSweep.EveryDecompositionMatchesItsOp: for each valid sample of an op that has a
// decomposition, the one-node graph (multi-result ops project their tensor results with getitems)
// runs on the interpreter, which calls the op's ATen kernel; so does the graph decomposed
//   1. with a table of just that op (plus DecompositionTable::composite_implicit(), which always
//      applies first), and
//   2. with DecompositionTable::full(), so that decompositions that emit other decomposable ops
//      are checked end to end.
// Results must have the op's dtype, sizes and strides (strides of size-1 dims aside: they do not
// change the layout) and equal values: bit for bit for random ops, which run from the same
// generator state (at::manual_seed) and must draw the same numbers; else within
// torch.testing.assert_close's default tolerances for the dtype. Where the values are not that
// close, the op's float64 result on contiguous copies of the inputs referees: the decomposition
// passes (with a note) if it is within that tolerance of it: the kernel is the one that is off --
// a bf16 kernel that rounds its intermediates where the decomposition computes in f32, or a
// kernel whose values depend on the input strides (libtorch 1.13 had two: gelu_backward with a
// non-contiguous grad and a contiguous self, _softmax_backward_data with a non-contiguous output).
// kValuesOnly lists ops whose decomposition lays its result out differently from the kernel, as
// PyTorch's own decomposition does (none at present).
//
// DecompSweep.GradientsMatchThroughDecompositions: for each sample (f32/f64) of a differentiable
// non-composite op with a decomposition, the joint graph (build_joint) of the one-node graph -- the
// op's own derivative rule -- and the joint graph of the decomposed graph -- the derivative rules
// of the ops it decomposes into -- run with the same inputs, random tangents and generator state,
// and their gradients must agree (f32: rtol 1e-4, atol 1e-5 scaled by max(1, max |expected|) as in
// GradSweep; f64: rtol 1e-7, atol 1e-10), with the op's joint graph in float64 on contiguous
// inputs as the referee. Outputs the op's rule ignores (native_layer_norm's mean and rstd) get
// zero tangents in both; inputs the op's rule cannot differentiate (not_implemented:
// native_layer_norm_backward's mean and rstd) are left out. kGradExceptions lists, with the
// reason, where PyTorch's formula is not the derivative of the decomposed computation. Composite
// ops are differentiated through their decompositions in the first place (GradSweep checks them
// against libtorch eager), so they are not compared here.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "aotgrad/ir/error.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/decomposition.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/providers/aten_call.h"
#include "aotgrad/runtime/compiler.h"
#include "aotgrad/runtime/interpreter.h"
#include "aotgrad/transforms/autograd.h"
#include "aotgrad/transforms/passes/decompose.h"
#include "op_samples.h"
#include "sample_inputs.h"

namespace aotgrad {
namespace {

namespace os = op_samples;

// Ops whose decomposition gives a result laid out differently from the ATen kernel's, as
// PyTorch's decomposition does too: values (and dtype, sizes) are compared, strides are not.
// Empty: where PyTorch's decomposition gives other strides (_log_softmax_backward_data,
// mse_loss_backward on non-contiguous operands), aotgrad's adds a contiguous clone instead.
const std::map<std::string, std::string> kValuesOnly = {};

// Where gradients through the decomposition legitimately differ from the op's own derivative
// rule: the op, the input, a text the sample's arguments contain ("" for every sample), why.
struct GradException {
  std::string op, input, when, reason;
};
const std::vector<GradException> kGradExceptions = {
    {"native_layer_norm_backward.default", "input", "",
     "layer_norm_double_backward differentiates mean and rstd as the statistics of input (as "
     "saved by the forward); the decomposition takes them as the independent arguments they are, "
     "and a sample's random mean and rstd are not input's statistics. "
     "LayerNormDoubleBackwardWithConsistentStatistics checks the consistent case"},
    {"native_dropout.default", "input", "None",
     "train=None: the CPU kernel drops and scales by 1 / (1 - p), but derivatives.yaml scales the "
     "gradient by 1 when train has no value; the decomposition's gradient is the true one"},
};

// --- running graphs ------------------------------------------------------------------------------

// A copy with the same sizes, strides, storage offset and storage contents.
at::Tensor clone_exact(const at::Tensor& t) {
  int64_t n = static_cast<int64_t>(t.storage().nbytes()) / static_cast<int64_t>(t.element_size());
  at::Tensor storage = at::empty({n}, t.options());
  if (n > 0) storage.copy_(at::empty({0}, t.options()).set_(t.storage(), 0, {n}, {1}));
  return storage.as_strided(t.sizes(), t.strides(), t.storage_offset());
}

std::vector<c10::IValue> run(const Interpreter& interp, const std::vector<at::Tensor>& inputs,
                             uint64_t seed) {
  std::vector<c10::IValue> in;
  for (const at::Tensor& t : inputs) in.emplace_back(clone_exact(t));
  at::manual_seed(seed);
  return interp.run(std::move(in));
}

std::vector<c10::IValue> run(const std::shared_ptr<const Graph>& g,
                             const std::vector<at::Tensor>& inputs, uint64_t seed) {
  return run(Interpreter(g), inputs, seed);
}

// The sample's one-node graph; an op with several results returns its tensor results through
// getitems (a whole tuple cannot be replaced by a decomposition's elements). Throws Error when
// aotgrad rejects the sample.
std::shared_ptr<Graph> sample_graph(const os::Sample& s, const OpDef& op) {
  std::shared_ptr<Graph> g = parse_graph(os::graph_text(s, op.short_name), aten_ops());
  Node* result = g->find("result");
  if (!result || result->meta().kind != ValueMeta::Kind::Tuple) return g;
  g->set_insertion_point(nullptr);
  std::vector<Arg> outs;
  for (size_t k = 0; k < result->meta().elems.size(); ++k)
    if (result->meta().elems[k].is_tensor())
      outs.emplace_back(g->add_getitem(result, static_cast<int64_t>(k)));
  g->set_output(Arg::of_tuple(std::move(outs)));
  verify(*g);
  return g;
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

// Contiguous copies of `ts`, floating ones in float64: the referee's inputs.
std::vector<at::Tensor> f64_contiguous(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& t : ts)
    out.push_back((t.is_floating_point() ? t.to(at::kDouble) : t).contiguous());
  return out;
}

// The table that decomposes `op` alone (after the composite ops).
DecompositionTable single_op_table(const OpDef& op) {
  DecompositionTable t = DecompositionTable::composite_implicit();
  t.ops.insert(op.name);
  return t;
}

// Decomposes a copy of `g` with `table`; the copy must verify and call no op of the table.
std::shared_ptr<const Graph> decomposed(const Graph& g, const DecompositionTable& table) {
  std::unique_ptr<Graph> d = g.clone();
  decompose(*d, table);
  verify(*d);
  for (const Node* n : d->nodes())
    AOTGRAD_CHECK(n->kind() != NodeKind::Call || !table.contains(*n->op()),
                  "the decomposed graph still calls ", n->op()->name);
  return std::shared_ptr<const Graph>(std::move(d));
}

// --- comparisons ---------------------------------------------------------------------------------

std::string fmt(double v) {
  std::ostringstream s;
  s.precision(3);
  s << v;
  return s.str();
}

// torch.testing.assert_close's default (rtol, atol) for a dtype.
std::pair<double, double> default_tolerance(at::ScalarType t) {
  switch (t) {
    case at::kHalf: return {1e-3, 1e-5};
    case at::kBFloat16: return {1.6e-2, 1e-5};
    case at::kFloat: return {1.3e-6, 1e-5};
    case at::kDouble: return {1e-7, 1e-7};
    default: return {0, 0};
  }
}

// "" when `got` (the decomposition) has `want`'s (the op's) dtype, sizes and (if `strides`)
// strides; else what differs.
std::string layout_problem(const at::Tensor& want, const at::Tensor& got, bool strides) {
  if (want.scalar_type() != got.scalar_type())
    return std::string("dtype ") + c10::toString(got.scalar_type()) + ", the op gives " +
           c10::toString(want.scalar_type());
  if (want.sizes() != got.sizes())
    return "sizes " + c10::str(got.sizes()) + ", the op gives " + c10::str(want.sizes());
  for (int64_t d = 0; strides && d < want.dim(); ++d)
    if (want.size(d) > 1 && want.stride(d) != got.stride(d))
      return "strides " + c10::str(got.strides()) + ", the op gives " + c10::str(want.strides());
  return "";
}

// "" when the values are equal (bit for bit if `exact` or not floating; NaN equals NaN) or, for
// floating values, within the dtype's default tolerance; else how they differ.
std::string values_problem(const at::Tensor& want, const at::Tensor& got, bool exact) {
  if (exact || !want.is_floating_point()) {
    at::Tensor same = (want == got) | (want.isnan() & got.isnan());
    if (same.all().item<bool>()) return "";
    return std::string(exact && want.is_floating_point() ? "not bit-identical" : "values differ") +
           " (" + std::to_string((~same).sum().item<int64_t>()) + " of " +
           std::to_string(want.numel()) + " elements)";
  }
  auto [rtol, atol] = default_tolerance(want.scalar_type());
  if (at::allclose(want, got, rtol, atol, /*equal_nan=*/true)) return "";
  at::Tensor diff =
      (want.to(at::kDouble) - got.to(at::kDouble)).abs().nan_to_num(1e300, 1e300, 1e300);
  return "values differ (max abs diff " + fmt(diff.max().item<double>()) + ", rtol " + fmt(rtol) +
         ", atol " + fmt(atol) + ")";
}

// The referee: "" when `got` (the decomposition) is, element by element, within `tol` of the
// float64 reference `ref` (`tol` maps the reference to the allowed error); else how far off it
// is, and how far the op's own result `want` is.
template <typename Tol>
std::string refereed(const at::Tensor& want, const at::Tensor& got, const at::Tensor& ref,
                     Tol tol) {
  at::Tensor r = ref.to(at::kDouble);
  at::Tensor err_op = (want.to(at::kDouble) - r).abs().nan_to_num(1e300, 1e300, 1e300);
  at::Tensor err_dec = (got.to(at::kDouble) - r).abs().nan_to_num(1e300, 1e300, 1e300);
  at::Tensor same_nonfinite =
      (got.isnan() & ref.isnan()) | (got.isinf() & (got.to(at::kDouble) == r));
  at::Tensor bad = (err_dec > tol(r.abs().nan_to_num(0, 0, 0))) & ~same_nonfinite;
  if (!bad.any().item<bool>()) return "";
  return "the float64 result refutes it (max error " + fmt(err_dec.max().item<double>()) +
         ", the op's " + fmt(err_op.max().item<double>()) + ")";
}

// GradSweep's gradient comparison: "" when `got` matches `want` within rtol and atol scaled by
// max(1, max |want|); an undefined gradient (None) matches zeros.
std::string compare_grad(const at::Tensor& got, const at::Tensor& want, double rtol, double atol) {
  if (!got.defined() && !want.defined()) return "";
  if (!got.defined() || !want.defined()) {
    const at::Tensor& d = got.defined() ? got : want;
    double m = d.numel() ? d.abs().max().item<double>() : 0.0;
    if (m == 0) return "";
    return got.defined()
               ? "the decomposed graph gives a gradient (max |g| " + fmt(m) +
                     "), the op's rule none"
               : "the decomposed graph gives no gradient, the op's rule one with max |g| " + fmt(m);
  }
  if (got.sizes() != want.sizes())
    return "gradient sizes " + c10::str(got.sizes()) + ", the op's rule gives " +
           c10::str(want.sizes());
  if (got.scalar_type() != want.scalar_type())
    return std::string("gradient dtype ") + c10::toString(got.scalar_type()) +
           ", the op's rule gives " + c10::toString(want.scalar_type());
  if (got.numel() == 0) return "";
  at::Tensor g = got.to(at::kDouble), w = want.to(at::kDouble);
  at::Tensor diff = (g - w).abs();
  double scale = std::max(1.0, w.abs().nan_to_num(0, 0, 0).max().item<double>());
  at::Tensor same_nonfinite = (g.isnan() & w.isnan()) | (g.isinf() & (g == w));
  at::Tensor bad = (~(diff <= atol * scale + rtol * w.abs())) & ~same_nonfinite;
  if (!bad.any().item<bool>()) return "";
  at::Tensor masked = at::where(bad, diff.nan_to_num(1e300, 1e300, 1e300), at::zeros_like(diff));
  int64_t e = masked.flatten().argmax().item<int64_t>();
  return "max abs diff " + fmt(diff.flatten()[e].item<double>()) + " (" +
         std::to_string(bad.sum().item<int64_t>()) + " of " + std::to_string(got.numel()) +
         " elements off; e.g. element " + std::to_string(e) + ": decomposed " +
         fmt(g.flatten()[e].item<double>()) + ", the op's rule " +
         fmt(w.flatten()[e].item<double>()) + ")";
}

// --- samples -------------------------------------------------------------------------------------

struct SampleRef {
  std::string where;  // "nn.txt:12: <sample>"
  uint64_t seed = 0;
  const OpDef* op = nullptr;
  os::Sample sample;
};

// The valid samples of ops with a decomposition, in file order.
std::vector<SampleRef> decomposable_samples() {
  std::vector<SampleRef> out;
  for (const auto& path : os::sample_files()) {
    os::SampleFile file = os::read_sample_file(path);
    std::string fname = path.filename().string();
    for (const os::Sample& s : file.samples) {
      if (s.must_fail) continue;
      const OpDef* op = aten_ops().find(s.op_name);
      if (!op || !op->decomposition) continue;
      out.push_back({fname + ":" + std::to_string(s.line) + ": " + s.text,
                     os::fnv1a(fname) ^ static_cast<uint64_t>(s.line), op, s});
    }
  }
  return out;
}

std::vector<at::Tensor> make_inputs(const os::Sample& s, uint64_t seed) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  std::vector<at::Tensor> inputs;
  for (const auto& spec : s.tensors) inputs.push_back(os::make_input(spec, spec.meta.dtype, gen));
  return inputs;
}

// --- forward values ------------------------------------------------------------------------------

TEST(DecompSweep, EveryDecompositionMatchesItsOp) {
  register_compat_ops();
  const DecompositionTable full = DecompositionTable::full();
  std::map<std::string, int> checked;  // op -> samples checked alone
  int full_checked = 0, refereed_samples = 0;
  std::vector<std::string> failures, notes;
  for (const SampleRef& r : decomposable_samples()) {
    std::shared_ptr<Graph> g;
    try {
      g = sample_graph(r.sample, *r.op);
    } catch (const Error&) {
      continue;  // aotgrad rejects the sample (MetaSweep reports disagreements)
    }
    std::vector<at::Tensor> inputs = make_inputs(r.sample, r.seed);
    std::vector<c10::IValue> want;
    try {
      want = run(g, inputs, r.seed);
    } catch (const std::exception&) {
      continue;  // libtorch rejects the values (MetaSweep checks validity)
    }
    bool exact = r.op->has_tag(kRandom);
    bool strides = !kValuesOnly.count(r.op->short_name);
    // The op's float64 result on contiguous inputs, made when first needed.
    std::optional<std::vector<c10::IValue>> ref;
    auto reference = [&]() -> const std::vector<c10::IValue>& {
      if (!ref) ref = run(sample_graph(to_f64(r.sample), *r.op), f64_contiguous(inputs), r.seed);
      return *ref;
    };
    bool alone_ok = true;
    for (bool alone : {true, false}) {
      std::string label = alone ? "" : "full table: ";
      std::vector<std::string> problems, referee_notes;
      try {
        std::shared_ptr<const Graph> d = decomposed(*g, alone ? single_op_table(*r.op) : full);
        std::vector<c10::IValue> got = run(d, inputs, r.seed);
        if (got.size() != want.size()) problems.push_back("different number of results");
        for (size_t k = 0; problems.empty() && k < want.size(); ++k) {
          std::string result = want.size() > 1 ? "result " + std::to_string(k) + ": " : "";
          const at::Tensor& w = want[k].toTensor();
          const at::Tensor& o = got[k].toTensor();
          std::string p = layout_problem(w, o, strides);
          if (p.empty()) p = values_problem(w, o, exact);
          if (!p.empty() && !exact && w.is_floating_point()) {
            auto [rtol, atol] = default_tolerance(w.scalar_type());
            std::string why = refereed(w, o, reference().at(k).toTensor(),
                                       [&](const at::Tensor& x) { return atol + rtol * x.abs(); });
            if (why.empty()) {
              referee_notes.push_back(result + p + "; the float64 referee accepts it");
              p = "";
            } else {
              p += "; " + why;
            }
          }
          if (!p.empty()) problems.push_back(result + p);
        }
      } catch (const std::exception& e) {
        problems.push_back(std::string("decompose / run: ") + e.what());
      }
      for (auto& n : referee_notes) notes.push_back(r.where + "\n    " + label + n);
      if (!referee_notes.empty() && alone) ++refereed_samples;
      if (!problems.empty()) {
        std::string msg = r.where;
        for (auto& p : problems) msg += "\n    " + label + p;
        failures.push_back(msg);
        if (alone) alone_ok = false;
      } else if (!alone) {
        ++full_checked;
      }
    }
    if (alone_ok) checked[r.op->short_name]++;
  }
  std::string list;
  for (auto& f : failures) list += "\n  " + f;
  EXPECT_TRUE(failures.empty()) << failures.size()
                                << " samples where the decomposition differs from the op:" << list;
  std::vector<std::string> unchecked;
  for (const OpDef* op : aten_ops().all())
    if (op->decomposition && !checked.count(op->short_name)) unchecked.push_back(op->short_name);
  EXPECT_TRUE(unchecked.empty()) << "ops whose decomposition no sample checks: "
                                 << ::testing::PrintToString(unchecked);
  int total = 0;
  for (auto& [op, n] : checked) total += n;
  std::cout << "[ decomp   ] " << total << " samples of " << checked.size()
            << " ops checked alone (" << refereed_samples << " by the float64 referee), "
            << full_checked << " with the full table; " << failures.size() << " failing\n";
  for (auto& n : notes) std::cout << "[ note     ] " << n << "\n";
}

// --- gradients -----------------------------------------------------------------------------------

// A built joint graph with its interpreter.
struct Joint {
  JointGraph jg;
  std::shared_ptr<const Graph> graph;
  std::unique_ptr<Interpreter> interp;
};

Joint make_joint(const Graph& fw, const std::vector<bool>& requires_grad) {
  Joint j;
  j.jg = build_joint(fw, requires_grad);
  verify(*j.jg.graph);
  j.graph = std::shared_ptr<const Graph>(std::move(j.jg.graph));
  j.interp = std::make_unique<Interpreter>(j.graph);
  return j;
}

// Per tangent: whether the joint graph reads it (the op's rule ignores some outputs).
std::vector<bool> used_tangents(const Joint& j) {
  std::vector<Node*> ph = j.graph->placeholders();
  std::vector<bool> used;
  for (size_t t = 0; t < j.jg.num_tangents; ++t)
    used.push_back(!ph[j.jg.num_primals + t]->users().empty());
  return used;
}

// Random tangents for `j` (zeros where `used` says the op's rule ignores the output).
std::vector<at::Tensor> make_tangents(const Joint& j, const std::vector<bool>& used,
                                      uint64_t seed) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed ^ 0x5bd1e995u);
  std::vector<Node*> ph = j.graph->placeholders();
  std::vector<at::Tensor> out;
  for (size_t t = 0; t < j.jg.num_tangents; ++t) {
    const TensorMeta& m = ph[j.jg.num_primals + t]->tensor_meta();
    std::vector<int64_t> sizes;
    for (auto& d : m.sizes) sizes.push_back(d.value());
    at::Tensor x = at::empty(sizes, at::TensorOptions().dtype(to_c10(m.dtype)));
    x.copy_(at::empty(sizes, at::kDouble).normal_(0, 1, gen));
    out.push_back(used[t] ? x : at::zeros_like(x));
  }
  return out;
}

// The gradient of primal k from a joint graph's outputs (undefined for None).
at::Tensor grad_of(const std::vector<c10::IValue>& out, const Joint& j, size_t k) {
  const c10::IValue& v = out.at(j.jg.num_forward_outputs + k);
  return v.isTensor() ? v.toTensor() : at::Tensor();
}

bool low_precision(const os::Sample& s) {
  for (const auto& t : s.tensors)
    if (t.meta.dtype == ScalarType::BFloat16 || t.meta.dtype == ScalarType::Float16) return true;
  return false;
}

// Compares the gradients of `g` (a sample's forward graph, or any graph) through the op's rules
// with those through `d` (its decomposition) for the placeholders in `requires_grad`; the op's
// joint graph in float64 on contiguous inputs (from `g64`, when given) referees mismatches.
// Returns one problem per mismatching input; `names` names the placeholders.
std::vector<std::string> compare_gradients(const Graph& g, const Graph& d, const Graph* g64,
                                           const std::vector<bool>& requires_grad,
                                           const std::vector<at::Tensor>& inputs,
                                           const std::vector<std::string>& names, uint64_t seed,
                                           std::vector<std::string>& referee_notes) {
  Joint own = make_joint(g, requires_grad);
  Joint dec = make_joint(d, requires_grad);
  if (own.jg.num_tangents != dec.jg.num_tangents ||
      own.jg.tangent_of_output != dec.jg.tangent_of_output)
    return {"the decomposed graph's joint graph takes other tangents (" +
            std::to_string(dec.jg.num_tangents) + ", the op's " +
            std::to_string(own.jg.num_tangents) + ")"};
  std::vector<bool> used = used_tangents(own);
  std::vector<at::Tensor> tangents = make_tangents(own, used, seed);
  std::vector<at::Tensor> all = inputs;
  all.insert(all.end(), tangents.begin(), tangents.end());
  std::vector<c10::IValue> want = run(*own.interp, all, seed);
  std::vector<c10::IValue> got = run(*dec.interp, all, seed);
  bool f64 = std::all_of(inputs.begin(), inputs.end(),
                         [](const at::Tensor& t) { return t.scalar_type() != at::kFloat; });
  double rtol = f64 ? 1e-7 : 1e-4, atol = f64 ? 1e-10 : 1e-5;
  std::optional<std::vector<c10::IValue>> ref;
  std::vector<std::string> problems;
  for (size_t k = 0; k < requires_grad.size(); ++k) {
    if (!requires_grad[k]) continue;
    at::Tensor w = grad_of(want, own, k), o = grad_of(got, dec, k);
    std::string p = compare_grad(o, w, rtol, atol);
    if (!p.empty() && g64 && w.defined() && o.defined() && w.sizes() == o.sizes()) {
      if (!ref) {
        Joint own64 = make_joint(*g64, requires_grad);
        ref = run(*own64.interp, f64_contiguous(all), seed);
      }
      double scale =
          std::max(1.0, w.to(at::kDouble).abs().nan_to_num(0, 0, 0).max().item<double>());
      std::string why = refereed(w, o, grad_of(*ref, own, k),
                                 [&](const at::Tensor& x) { return atol * scale + rtol * x; });
      if (why.empty()) {
        referee_notes.push_back(names[k] + ": " + p + "; the float64 referee accepts it");
        continue;
      }
      p += "; " + why;
    }
    if (!p.empty()) problems.push_back(names[k] + ": " + p);
  }
  return problems;
}

TEST(DecompSweep, GradientsMatchThroughDecompositions) {
  register_compat_ops();
  std::map<std::string, int> checked;        // op -> samples compared
  std::map<std::string, int> skipped;        // reason -> samples
  std::set<std::string> differentiable_ops;  // ops with a sample whose rule differentiates an input
  std::vector<std::string> failures, notes;
  for (const SampleRef& r : decomposable_samples()) {
    const OpDef& op = *r.op;
    if (op.has_tag(kCompositeImplicit) || op.has_tag(kInplace)) continue;
    if (op.non_differentiable || !op.derivative) {
      skipped["non-differentiable op"]++;
      continue;
    }
    if (low_precision(r.sample)) {
      skipped["bf16/f16 sample (forward only)"]++;
      continue;
    }
    std::shared_ptr<Graph> g;
    try {
      g = sample_graph(r.sample, op);
    } catch (const Error&) {
      continue;  // aotgrad rejects the sample
    }
    std::vector<at::Tensor> inputs = make_inputs(r.sample, r.seed);
    try {
      run(g, inputs, r.seed);
    } catch (const std::exception&) {
      continue;  // libtorch rejects the values
    }
    // Floating inputs the op does not write, named after their arguments.
    const Node* call = g->find("result");
    std::set<const Node*> written;
    for (int a : op.mutated_args())
      call->arg(static_cast<size_t>(a)).for_each_node([&](Node* n) { written.insert(n); });
    std::vector<Node*> ph = g->placeholders();
    std::vector<bool> requires_grad;
    std::vector<std::string> names;
    for (size_t k = 0; k < ph.size(); ++k) {
      requires_grad.push_back(is_floating(ph[k]->tensor_meta().dtype) && !written.count(ph[k]));
      std::string arg = "?";
      for (size_t a = 0; a < call->args().size(); ++a)
        call->arg(a).for_each_node([&](Node* n) {
          if (n == ph[k]) arg = op.schema.args[a].name;
        });
      names.push_back(arg);
    }
    if (std::none_of(requires_grad.begin(), requires_grad.end(), [](bool b) { return b; })) {
      skipped["no floating input"]++;
      continue;
    }
    // Inputs the op's own rule cannot differentiate (not_implemented) are left out.
    std::vector<std::string> left_out;
    for (size_t k = 0; k < ph.size(); ++k) {
      if (!requires_grad[k]) continue;
      std::vector<bool> only(ph.size(), false);
      only[k] = true;
      try {
        build_joint(*g, only);
      } catch (const Error& e) {
        requires_grad[k] = false;
        left_out.push_back(names[k] + " (" + e.message().substr(0, e.message().find('\n')) + ")");
      }
    }
    if (std::none_of(requires_grad.begin(), requires_grad.end(), [](bool b) { return b; })) {
      skipped["the op's rule differentiates none of its inputs"]++;
      notes.push_back(r.where + "\n    not compared: " + ::testing::PrintToString(left_out));
      continue;
    }
    differentiable_ops.insert(op.short_name);
    std::vector<std::string> problems, referee_notes;
    try {
      std::shared_ptr<Graph> g64 = sample_graph(to_f64(r.sample), op);
      problems = compare_gradients(*g, *decomposed(*g, single_op_table(op)), g64.get(),
                                   requires_grad, inputs, names, r.seed, referee_notes);
    } catch (const std::exception& e) {
      problems.push_back(std::string("building or running the joint graphs: ") +
                         std::string(e.what()).substr(0, 400));
    }
    for (auto& n : referee_notes) notes.push_back(r.where + "\n    " + n);
    if (!left_out.empty())
      notes.push_back(r.where + "\n    left out: " + ::testing::PrintToString(left_out));
    // Expected differences become notes.
    std::vector<std::string> remaining;
    for (const std::string& p : problems) {
      auto it =
          std::find_if(kGradExceptions.begin(), kGradExceptions.end(), [&](const GradException& x) {
            return x.op == op.short_name && p.rfind(x.input + ": ", 0) == 0 &&
                   r.sample.args.find(x.when) != std::string::npos;
          });
      if (it == kGradExceptions.end())
        remaining.push_back(p);
      else
        notes.push_back(r.where + "\n    " + p + "\n    expected: " + it->reason);
    }
    if (!remaining.empty()) {
      std::string msg = r.where;
      for (auto& p : remaining) msg += "\n    " + p;
      failures.push_back(msg);
      continue;
    }
    checked[op.short_name]++;
  }
  std::string list;
  for (auto& f : failures) list += "\n  " + f;
  EXPECT_TRUE(failures.empty())
      << failures.size()
      << " samples where gradients through the decomposition differ from the op's rule:" << list;
  std::vector<std::string> unchecked;
  for (const std::string& op : differentiable_ops)
    if (!checked.count(op)) unchecked.push_back(op);
  EXPECT_TRUE(unchecked.empty())
      << "differentiable ops whose decomposition no sample's gradients check: "
      << ::testing::PrintToString(unchecked);
  int total = 0;
  for (auto& [op, n] : checked) total += n;
  std::cout << "[ decomp   ] gradients: " << total << " samples of " << checked.size()
            << " ops compared, " << failures.size() << " failing";
  for (auto& [reason, n] : skipped) std::cout << "\n             skipped " << n << ": " << reason;
  std::cout << "\n";
  for (auto& n : notes) std::cout << "[ note     ] " << n << "\n";
}

// The kGradExceptions entry for native_layer_norm_backward's input, checked where it does not
// apply: when mean and rstd are the statistics of the same input, the gradient through the
// decomposition of both native_layer_norm and native_layer_norm_backward is the gradient
// layer_norm_double_backward gives. (The op's rule cannot take gradients into mean and rstd --
// not_implemented, as in PyTorch -- so its graph detaches them; the formula accounts for them.)
TEST(DecompSweep, LayerNormDoubleBackwardWithConsistentStatistics) {
  register_compat_ops();
  auto graph = [](const std::string& mean, const std::string& rstd) {
    return parse_graph(R"(
def forward(self, x: "f64[3, 2, 4]", w: "f64[2, 4]", b: "f64[2, 4]", gy: "f64[3, 2, 4]"):
    native_layer_norm = torch.ops.aten.native_layer_norm.default(x, [2, 4], w, b, 1e-05)
    getitem_1 = native_layer_norm[1]
    getitem_2 = native_layer_norm[2]
    detach = torch.ops.aten.detach.default(getitem_1)
    detach_1 = torch.ops.aten.detach.default(getitem_2)
    native_layer_norm_backward = torch.ops.aten.native_layer_norm_backward.default(gy, x, [2, 4], )" +
                           mean + ", " + rstd + R"(, w, b, [True, True, True])
    getitem_3 = native_layer_norm_backward[0]
    getitem_4 = native_layer_norm_backward[1]
    getitem_5 = native_layer_norm_backward[2]
    return (getitem_3, getitem_4, getitem_5)
)",
                       aten_ops());
  };
  std::shared_ptr<Graph> own = graph("detach", "detach_1");
  DecompositionTable t;
  t.ops = {"aten::native_layer_norm", "aten::native_layer_norm_backward"};
  std::shared_ptr<const Graph> dec = decomposed(*graph("getitem_1", "getitem_2"), t);
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(11);
  std::vector<at::Tensor> inputs;
  for (auto sizes : {std::vector<int64_t>{3, 2, 4}, {2, 4}, {2, 4}, {3, 2, 4}})
    inputs.push_back(at::empty(sizes, at::kDouble).normal_(0, 1, gen));
  std::vector<std::string> notes;
  std::vector<std::string> problems =
      compare_gradients(*own, *dec, nullptr, {true, true, true, true}, inputs,
                        {"x", "w", "b", "gy"}, /*seed=*/11, notes);
  EXPECT_TRUE(problems.empty()) << ::testing::PrintToString(problems);
  // Without the statistics' dependence on x, the input gradients differ (the sweep's exception).
  std::shared_ptr<const Graph> detached = decomposed(*own, t);
  problems = compare_gradients(*own, *detached, nullptr, {true, true, true, true}, inputs,
                               {"x", "w", "b", "gy"}, /*seed=*/11, notes);
  ASSERT_EQ(problems.size(), 1u) << ::testing::PrintToString(problems);
  EXPECT_EQ(problems[0].rfind("x: ", 0), 0u) << problems[0];
}

}  // namespace
}  // namespace aotgrad
