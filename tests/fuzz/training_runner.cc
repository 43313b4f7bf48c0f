// aotgrad training fuzzer: one case -- the program eagerly, then through aot_function in
// training with each configuration, on fresh inputs each time -- and the comparison.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cctype>
#include <sstream>

#include "aotgrad/aotgrad.h"
#include "aotgrad/runtime/compiler.h"
#include "aotgrad/support/error.h"
#include "training_fuzz.h"

namespace aotgrad::fuzz {
namespace {

at::Tensor randn(at::IntArrayRef shape, uint64_t seed) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return at::randn(shape, gen, at::TensorOptions().dtype(at::kDouble));
}

// What one run (eager, or compiled with one configuration) left behind.
struct Run {
  std::string error;  // the exception's message; empty when none
  bool aotgrad_error = false;
  std::string where;  // "call" or "backward"
  std::vector<at::Tensor> outs;
  std::vector<bool> out_requires_grad;
  std::vector<bool> requires_grad;       // per table value, after the call
  std::vector<std::string> out_aliases;  // per output: the arguments and earlier outputs it aliases
  std::vector<bool> advanced;            // per leaf and setup value: its version counter moved
  std::vector<at::Tensor> values;        // per leaf and setup value: after the call and backward
  std::vector<at::Tensor> grads;         // per leaf: .grad after backward (undefined: none)
};

Run execute(const Program& p, const TensorFunction& fn) {
  Run run;
  std::vector<at::Tensor> table = make_setup(p);
  std::vector<at::Tensor> args;
  for (int a : p.args) args.push_back(table[a]);
  std::vector<int64_t> before;
  for (const at::Tensor& t : table) before.push_back(t._version());
  std::vector<at::Tensor> outs;
  run.where = "call";
  try {
    at::manual_seed(4242);  // the body's random ops
    outs = fn(args);
    for (size_t i = 0; i < outs.size(); ++i) {
      run.outs.push_back(outs[i].detach().clone());
      run.out_requires_grad.push_back(outs[i].requires_grad());
      std::string aliases;
      for (size_t j = 0; j < args.size(); ++j)
        if (outs[i].is_alias_of(args[j])) aliases += " arg" + std::to_string(j);
      for (size_t k = 0; k < i; ++k)
        if (outs[i].is_alias_of(outs[k])) aliases += " out" + std::to_string(k);
      run.out_aliases.push_back(aliases);
    }
    for (size_t v = 0; v < table.size(); ++v) {
      run.advanced.push_back(table[v]._version() > before[v]);
      run.requires_grad.push_back(table[v].requires_grad());
    }
    // Backward of every output that requires grad and every non-leaf setup value (a written
    // base) that does, each against its own fixed random tangent (seeded by its place, so that
    // one value's requires_grad does not change the others' tangents).
    run.where = "backward";
    at::Tensor loss;
    auto add_term = [&](const at::Tensor& t, uint64_t seed) {
      if (!t.requires_grad()) return;
      at::Tensor term = (t * randn(t.sizes(), seed)).sum();
      loss = loss.defined() ? loss + term : term;
    };
    for (size_t i = 0; i < outs.size(); ++i) add_term(outs[i], 99 + i);
    for (size_t v = p.leaves.size(); v < table.size(); ++v) add_term(table[v], 10099 + v);
    if (loss.defined()) loss.backward();
  } catch (const Error& e) {
    run.error = e.what();
    run.aotgrad_error = true;
    return run;
  } catch (const std::exception& e) {
    run.error = e.what();
    run.error = run.error.substr(0, run.error.find('\n'));
    return run;
  }
  for (const at::Tensor& t : table) run.values.push_back(t.detach().clone());
  // A leaf written with a value that requires grad is one no longer: its .grad stays undefined.
  for (size_t i = 0; i < p.leaves.size(); ++i)
    run.grads.push_back(table[i].is_leaf() && table[i].grad().defined() ? table[i].grad().clone()
                                                                        : at::Tensor());
  return run;
}

// Compares two tensors; "" when equal within the tolerance. Clears `bitwise` when not identical.
std::string compare(const at::Tensor& want, const at::Tensor& got, bool& bitwise) {
  if (want.defined() != got.defined())
    return want.defined() ? "eager has a tensor, aotgrad none"
           : got.is_floating_point() && !got.any().item<bool>()
               ? "eager has none, aotgrad zeros"
               : "eager has none, aotgrad a tensor";
  if (!want.defined()) return "";
  if (want.sizes() != got.sizes()) {
    std::ostringstream os;
    os << "sizes " << want.sizes() << " vs " << got.sizes();
    return os.str();
  }
  if (want.dtype() != got.dtype()) return "dtype differs";
  if (at::equal(want, got) || (want.numel() == 0)) return "";
  bitwise = false;
  at::Tensor w = want.to(at::kDouble), g = got.to(at::kDouble);
  at::Tensor bad = ((w - g).abs() > kAtol + kRtol * w.abs()) | (w.isnan() != g.isnan());
  bad = bad & ~(w.isnan() & g.isnan());
  if (!bad.any().item<bool>()) return "";
  std::ostringstream os;
  os << "values differ (max |diff| " << (w - g).abs().nan_to_num().max().item<double>()
     << ")\neager:\n"
     << want << "\naotgrad:\n"
     << got;
  return os.str();
}

// The first difference between the eager run and the compiled one, or "".
std::string diff(const Program& p, const Run& want, const Run& got, bool& bitwise) {
  bitwise = true;
  std::string aliasing;
  if (want.outs.size() != got.outs.size()) return "number of outputs differs";
  for (size_t i = 0; i < want.outs.size(); ++i) {
    std::string d = compare(want.outs[i], got.outs[i], bitwise);
    if (!d.empty()) return "output " + std::to_string(i) + ": " + d;
    if (want.out_requires_grad[i] != got.out_requires_grad[i])
      return "output " + std::to_string(i) + ": requires_grad " +
             std::to_string(want.out_requires_grad[i]) + " vs " +
             std::to_string(got.out_requires_grad[i]);
    // Reported last, so that a value, grad or version difference is never hidden behind it.
    if (want.out_aliases[i] != got.out_aliases[i] && aliasing.empty())
      aliasing = "output " + std::to_string(i) + " aliases [" + want.out_aliases[i] +
                 " ] eagerly, [" + got.out_aliases[i] + " ] compiled";
  }
  for (size_t v = 0; v < want.values.size(); ++v) {
    const std::string name = "%" + std::to_string(v);
    std::string d = compare(want.values[v], got.values[v], bitwise);
    if (!d.empty()) return "value of " + name + " after the step: " + d;
    if (want.advanced[v] != got.advanced[v])
      return name + "'s version counter " + (want.advanced[v] ? "moved" : "stayed") +
             " eagerly but " + (got.advanced[v] ? "moved" : "stayed") + " compiled";
  }
  for (size_t i = 0; i < p.leaves.size(); ++i) {
    std::string d = compare(want.grads[i], got.grads[i], bitwise);
    if (!d.empty()) return "grad of leaf %" + std::to_string(i) + ": " + d;
  }
  // After the grads, which a known requires_grad difference must not hide.
  for (size_t v = 0; v < want.requires_grad.size() && v < got.requires_grad.size(); ++v)
    if (want.requires_grad[v] != got.requires_grad[v])
      return "%" + std::to_string(v) + " after the step: requires_grad " +
             std::to_string(want.requires_grad[v]) + " vs " + std::to_string(got.requires_grad[v]);
  return aliasing;
}

// The construct an aotgrad error names, or "" when it names none of the program's constructs.
std::string construct_of(const std::string& message) {
  std::string m = message;
  std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return std::tolower(c); });
  static const std::vector<std::pair<std::string, std::vector<std::string>>> kConstructs = {
      {"no_grad", {"no_grad", "grad mode", "no-grad"}},
      {"detach", {"detach"}},
      {"random", {"random", "rng", "dropout", "bernoulli"}},
      {"overlapping inputs", {"overlap", "synthetic base", "same storage", "share a storage"}},
      {"as_strided", {"as_strided"}},
      {"input mutation", {"mutat", "written", "writes", "in-place", "inplace"}},
      {"aliasing", {"alias"}},
      {"view", {"view"}},
      {"recompute", {"recompute"}},
  };
  for (const auto& [name, keys] : kConstructs)
    for (const std::string& k : keys)
      if (m.find(k) != std::string::npos) return name;
  return "";
}

}  // namespace

const std::vector<KnownIssue>& known_issues() {
  // None open. The last, as_strided_argument_written, was fixed by a synthetic base
  // (strided_past_its_view, runtime/wrappers/synthetic_base.h); its program is
  // training_regressions/as_strided_argument_written.txt.
  static const std::vector<KnownIssue> issues;
  return issues;
}

at::Tensor make_leaf(const Leaf& l, size_t index) {
  at::Tensor t = randn(l.shape, 1000 + index);
  if (l.pregrad) t.mutable_grad() = randn(l.shape, 2000 + index);
  return t.requires_grad_(l.requires_grad);
}

std::vector<at::Tensor> make_setup(const Program& p) {
  std::vector<at::Tensor> table;
  for (size_t i = 0; i < p.leaves.size(); ++i) table.push_back(make_leaf(p.leaves[i], i));
  for (const Instr& ins : p.setup) apply(ins, table);
  return table;
}

std::string config_name(const Config& c) {
  std::ostringstream os;
  os << "budget=" << c.budget << ",schedule=" << (c.schedule ? "memory" : "none")
     << ",reinplace=" << (c.reinplace ? "on" : "off");
  return os.str();
}

std::vector<Config> all_configs() {
  std::vector<Config> out;
  for (double b : {1.0, 0.5, 0.0})
    for (bool s : {true, false})
      for (bool r : {true, false}) out.push_back({b, s, r});
  return out;
}

std::vector<ConfigResult> run_case(const Program& p, const std::vector<Config>& configs) {
  at::AutoGradMode grad_on(true);
  TensorFunction body = [&p](const std::vector<at::Tensor>& args) { return run_body(p, args); };
  const Run eager = execute(p, body);
  std::vector<ConfigResult> results;
  for (const Config& c : configs) {
    ConfigResult res;
    res.config = c;
    if (!eager.error.empty()) {
      res.verdict = Verdict::kEagerInvalid;
      res.detail = eager.where + ": " + eager.error;
      results.push_back(res);
      continue;
    }
    AOTConfig config;
    config.min_cut.activation_memory_budget = c.budget;
    config.schedule = c.schedule ? ScheduleKind::kMemory : ScheduleKind::kNone;
    if (!c.reinplace) {
      config.fw_compiler = std::make_shared<InterpreterCompiler>(/*reinplace=*/false);
      config.bw_compiler = config.fw_compiler;
    }
    config.cache_dir = "off";
    AOTFunction compiled = aot_function(body, config);
    const Run got =
        execute(p, [&compiled](const std::vector<at::Tensor>& args) { return compiled(args); });
    if (!got.error.empty()) {
      res.category = got.aotgrad_error ? construct_of(got.error) : "";
      if (res.category.empty()) {
        res.verdict = Verdict::kMismatch;
        res.detail = std::string(got.aotgrad_error ? "an aotgrad error naming no construct"
                                                   : "a non-aotgrad exception") +
                     " in the " + got.where + ": " + got.error;
      } else {
        res.verdict = Verdict::kRaised;
        res.detail = got.where + ": " + got.error;
      }
    } else {
      res.detail = diff(p, eager, got, res.bitwise);
      res.verdict = res.detail.empty() ? Verdict::kMatch : Verdict::kMismatch;
    }
    if (res.verdict == Verdict::kMismatch)
      for (const KnownIssue& k : known_issues())
        if (k.matches(p, res.detail)) {
          res.known = k.name;
          break;
        }
    results.push_back(res);
  }
  return results;
}

}  // namespace aotgrad::fuzz
