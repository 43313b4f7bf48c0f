// aotgrad: randomized differential test of the graph passes -- random graphs (pointwise ops with
// constants 0 and 1, factories of uniform values, views, t, detach, clone, duplicate
// subexpressions, unused and random nodes, a few in-place writes) must give the same outputs
// (values, dtype, sizes, strides), output aliasing and final argument values through the
// Interpreter before and after each pass and the whole pipeline. sym_size folding is left to the
// text tests: libtorch 1.13 has no aten::sym_size.int operator for the Interpreter to call.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "aotgrad/driver/pass_pipeline.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/runtime/interpreter.h"

namespace aotgrad {
namespace {

using Shape = std::vector<int64_t>;

class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  int64_t between(int64_t lo, int64_t hi) {  // inclusive; lo when the range is empty
    if (hi < lo) return lo;
    return lo + static_cast<int64_t>(gen_() % static_cast<uint64_t>(hi - lo + 1));
  }
  bool chance(double p) { return static_cast<double>(gen_() % 1000000) < p * 1e6; }
  template <typename T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(between(0, static_cast<int64_t>(v.size()) - 1))];
  }

 private:
  std::mt19937_64 gen_;
};

Shape sizes_of(const Node* n) {
  Shape s;
  for (const SymInt& x : n->tensor_meta().sizes) s.push_back(x.value());
  return s;
}

// One random graph and the dtype of each input.
struct Case {
  uint64_t seed = 0;
  std::shared_ptr<Graph> graph;
  std::vector<Shape> shapes;
  std::vector<ScalarType> dtypes;
  bool duplicate_args = false;  // inputs 0 and 1 are one tensor at run time
  bool writes = false;          // the generator may add in-place writes
  bool has_mutations = false;   // it did
};

// A tensor value the generator may use.
struct Val {
  Node* node = nullptr;
  bool input_storage = false;  // a placeholder or a view of one
  // Not written by the generator: _unsafe_view and reshape results (and their views), which share
  // their input's storage in ATen although the schema says _unsafe_view's result is fresh.
  bool readonly = false;
};

class GraphGenerator {
 public:
  GraphGenerator(Case& c, Rng& rng)
      : c_(c), rng_(rng), ops_(aten_ops()), g_(std::make_shared<Graph>()) {}

  std::shared_ptr<Graph> build() {
    int inputs = static_cast<int>(rng_.between(c_.duplicate_args ? 2 : 1, 3));
    for (int i = 0; i < inputs; ++i) {
      Shape s = random_shape();
      ScalarType t = rng_.chance(0.7)   ? ScalarType::Float32
                     : rng_.chance(0.5) ? ScalarType::Float64
                                        : ScalarType::Int64;
      if (i == 1 && c_.duplicate_args) {
        s = c_.shapes[0];
        t = c_.dtypes[0];
      }
      c_.shapes.push_back(s);
      c_.dtypes.push_back(t);
      Node* p =
          g_->add_placeholder("x" + std::to_string(i),
                              ValueMeta::of(make_tensor_meta(t, SymIntVector(s.begin(), s.end()))));
      vals_.push_back({p, true});
    }
    int steps = static_cast<int>(rng_.between(3, 16));
    for (int s = 0; s < steps; ++s) {
      for (int attempt = 0; attempt < 8; ++attempt) {
        try {
          if (step()) break;
        } catch (const Error&) {
          // The meta function rejected the call, as eager would: try another.
        }
      }
    }
    outputs();
    return g_;
  }

 private:
  Shape random_shape() {
    Shape s(static_cast<size_t>(rng_.between(0, 3)));
    for (int64_t& d : s) d = rng_.between(1, 4);
    return s;
  }

  const Val& any_val() {
    if (vals_.size() > 3 && rng_.chance(0.6)) return vals_[vals_.size() - 1 - rng_.between(0, 2)];
    return rng_.pick(vals_);
  }

  Node* call(const std::string& op, std::vector<Arg> args,
             std::vector<std::pair<std::string, Arg>> kwargs = {}) {
    return g_->add_call(ops_.get(op), std::move(args), std::move(kwargs));
  }
  void push(Node* n, bool input_storage, bool readonly = false) {
    vals_.push_back({n, input_storage, readonly});
  }

  // 0, 1 (int, float, bool) and a few others, as Python numbers.
  Arg literal() {
    switch (rng_.between(0, 7)) {
      case 0: return Arg::of_int(0);
      case 1: return Arg::of_int(1);
      case 2: return Arg::of_float(0.0);
      case 3: return Arg::of_float(1.0);
      case 4: return Arg::of_float(-0.0);
      case 5: return Arg::of_bool(rng_.chance(0.5));
      case 6: return Arg::of_int(2);
      default: return Arg::of_float(0.5);
    }
  }

  Arg dtype_arg() {
    switch (rng_.between(0, 5)) {
      case 0: return Arg::of_dtype(ScalarType::Float64);
      case 1: return Arg::of_dtype(ScalarType::Int64);
      case 2: return Arg::of_dtype(ScalarType::Bool);
      default: return Arg::of_dtype(ScalarType::Float32);
    }
  }

  // A shape that broadcasts with `s`: s itself, a suffix, s with ones, a scalar, or a larger one.
  Shape broadcast_shape(const Shape& s) {
    Shape out = s;
    switch (rng_.between(0, 5)) {
      case 0:
      case 1: break;
      case 2:
        out.erase(out.begin(), out.begin() + rng_.between(0, static_cast<int64_t>(s.size())));
        break;
      case 3:
        for (int64_t& d : out)
          if (rng_.chance(0.5)) d = 1;
        break;
      case 4: out.clear(); break;
      default: out.insert(out.begin(), 2); break;
    }
    return out;
  }

  // A factory of a (mostly) uniform 0 or 1 broadcastable with `like`.
  Node* factory(const Val& like) {
    Node* x = like.node;
    Shape s = broadcast_shape(sizes_of(x));
    std::vector<std::pair<std::string, Arg>> dtype;
    if (rng_.chance(0.4)) dtype.push_back({"dtype", dtype_arg()});
    Arg v = literal();
    switch (rng_.between(0, 10)) {
      case 0: return call("ones", {Arg::of_ints(s)}, dtype);
      case 1: return call("zeros", {Arg::of_ints(s)}, dtype);
      case 2: return call("full", {Arg::of_ints(s), v}, dtype);
      case 3: return call("ones_like", {Arg(x)}, dtype);
      case 4: return call("zeros_like", {Arg(x)}, dtype);
      case 5: return call("full_like", {Arg(x), v}, dtype);
      case 6: return call("scalar_tensor", {v}, dtype);
      case 7: return call("new_ones", {Arg(x), Arg::of_ints(s)}, dtype);
      case 8: return call("new_full", {Arg(x), Arg::of_ints(s), v}, dtype);
      case 9: return call("fill.Scalar", {Arg(x), v});
      default: {
        Node* f = call("full", {Arg::of_ints({}), v}, dtype);
        return call("expand", {Arg(f), Arg::of_ints(s)});
      }
    }
  }

  bool step() {
    // One tensor for two arguments: writes to one of them are what a pass must not miss.
    if (c_.writes && c_.duplicate_args && rng_.chance(0.15)) return mutation_step();
    int64_t r = rng_.between(0, 99);
    if (r < 22) return binary_literal_step();
    if (r < 40) return binary_tensor_step();
    if (r < 48) return unary_step();
    if (r < 70) return view_step();
    if (r < 78) return clone_step();
    if (r < 90) return duplicate_step();
    if (r < 93) return random_step();
    if (r < 95) return multi_output_step();
    return mutation_step();
  }

  const char* binary_op(bool scalar) {
    static const char* kTensor[] = {"add.Tensor", "sub.Tensor", "mul.Tensor", "div.Tensor"};
    static const char* kScalar[] = {"add.Scalar", "sub.Scalar", "mul.Scalar", "div.Scalar"};
    int64_t i = rng_.between(0, 3);
    return scalar ? kScalar[i] : kTensor[i];
  }

  bool binary_literal_step() {
    const Val& v = any_val();
    bool scalar = rng_.chance(0.3);
    std::string op = binary_op(scalar);
    std::vector<Arg> args = {Arg(v.node), literal()};
    if (!scalar && rng_.chance(0.2)) std::swap(args[0], args[1]);  // 1 * x, 0 + x
    std::vector<std::pair<std::string, Arg>> kwargs;
    bool has_alpha = op.rfind("add", 0) == 0 || op.rfind("sub", 0) == 0;
    if (has_alpha && rng_.chance(0.3)) {
      Arg alpha = rng_.chance(0.5) ? Arg::of_int(rng_.between(-1, 3)) : Arg::of_float(2.5);
      if (scalar)
        args.push_back(alpha);
      else
        kwargs.push_back({"alpha", alpha});
    }
    push(call(op, args, kwargs), false);
    return true;
  }

  bool binary_tensor_step() {
    const Val& v = any_val();
    Node* other = rng_.chance(0.7) ? factory(v) : any_val().node;
    std::vector<Arg> args = {Arg(v.node), Arg(other)};
    if (rng_.chance(0.3)) std::swap(args[0], args[1]);
    std::vector<std::pair<std::string, Arg>> kwargs;
    std::string op = binary_op(false);
    if ((op[0] == 'a' || op[0] == 's') && rng_.chance(0.2))
      kwargs.push_back({"alpha", Arg::of_int(2)});
    push(call(op, args, kwargs), false);
    return true;
  }

  bool unary_step() {
    static const std::vector<std::string> kOps = {"exp.default", "neg.default", "relu.default",
                                                  "sin.default", "abs.default"};
    push(call(rng_.pick(kOps), {Arg(any_val().node)}), false);
    return true;
  }

  bool view_step() {
    const Val& v = any_val();
    Node* x = v.node;
    Shape s = sizes_of(x);
    int64_t d = static_cast<int64_t>(s.size());
    Node* n = nullptr;
    switch (rng_.between(0, 13)) {
      case 0: n = call("view", {Arg(x), Arg::of_ints(s)}); break;
      case 1: {
        int64_t numel = 1;
        for (int64_t e : s) numel *= e;
        n = call("view", {Arg(x), Arg::of_ints({numel})});
        break;
      }
      case 2: n = call("reshape", {Arg(x), Arg::of_ints(s)}); break;
      case 3:
        // _unsafe_view shares its input's storage in ATen, but its schema says its result is
        // fresh: functionalization (as PyTorch's) does not follow writes to the input through it.
        if (c_.writes) return false;
        n = call("_unsafe_view", {Arg(x), Arg::of_ints(s)});
        break;
      case 4:
        n = call("expand", {Arg(x), Arg::of_ints(rng_.chance(0.6) ? s : broadcast_shape(s))});
        break;
      case 5:
      case 6:
        if (d > 2) return false;
        n = call("t", {Arg(x)});
        break;
      case 7:
        if (d == 0) return false;
        n = call("transpose.int", {Arg(x), Arg::of_int(rng_.between(0, d - 1)),
                                   Arg::of_int(rng_.between(0, d - 1))});
        break;
      case 8:
      case 9: n = call("detach", {Arg(x)}); break;
      case 10: n = call("unsqueeze", {Arg(x), Arg::of_int(rng_.between(0, d))}); break;
      case 11:
        if (d == 0) return false;
        n = call("squeeze.dim", {Arg(x), Arg::of_int(rng_.between(0, d - 1))});
        break;
      case 12:
        if (d == 0) return false;
        // Never empty: 1.13's native_dropout returns an empty input itself (an alias).
        n = call("slice.Tensor", {Arg(x), Arg::of_int(0), Arg::of_int(rng_.between(0, s[0] - 1)),
                                  Arg::of_int(s[0])});
        break;
      default: n = call("alias", {Arg(x)}); break;
    }
    // reshape/_unsafe_view may copy: a copy of an input is not the input's storage.
    bool alias = n->op()->return_alias_of(0) == 0 && n->op()->name != "aten::reshape";
    bool shares = n->op()->name == "aten::reshape" || n->op()->name == "aten::_unsafe_view";
    push(n, v.input_storage && alias, (v.readonly && alias) || shares);
    return true;
  }

  bool clone_step() {
    push(call("clone", {Arg(any_val().node)}), false);
    return true;
  }

  // The same call again: a common subexpression.
  bool duplicate_step() {
    std::vector<Node*> calls;
    for (const Val& v : vals_)
      if (v.node->kind() == NodeKind::Call) calls.push_back(v.node);
    if (calls.empty()) return false;
    Node* n = rng_.pick(calls);
    if (n->op()->has_tag(kInplace)) return false;
    Node* copy = g_->add_call_raw(*n->op(), n->args(), n->given_mask(), n->meta(), "");
    for (const Val& v : vals_)
      if (v.node == n) {
        push(copy, v.input_storage, v.readonly);
        return true;
      }
    push(copy, false);
    return true;
  }

  bool random_step() {
    const Val& v = any_val();
    if (!is_floating(v.node->tensor_meta().dtype)) return false;
    if (rng_.chance(0.5)) {
      push(call("bernoulli.p", {Arg(v.node), Arg::of_float(0.5)}), false);
    } else {
      Node* d = call("native_dropout", {Arg(v.node), Arg::of_float(0.5), Arg::of_bool(true)});
      push(g_->add_getitem(d, rng_.between(0, 1)), false);
    }
    return true;
  }

  bool multi_output_step() {
    const Val& v = any_val();
    Shape s = sizes_of(v.node);
    if (s.empty()) return false;
    Node* m = call("max.dim",
                   {Arg(v.node), Arg::of_int(rng_.between(0, static_cast<int64_t>(s.size()) - 1))});
    push(g_->add_getitem(m, rng_.between(0, 1)), false);
    if (rng_.chance(0.5)) push(g_->add_getitem(m, 0), false);
    return true;
  }

  // A write: x.add_(c) / x.mul_(c) on any value (an input, a view, a fresh one).
  bool mutation_step() {
    if (!c_.writes) return false;
    const Val& v = c_.duplicate_args && rng_.chance(0.5) ? vals_[rng_.between(0, 1)] : any_val();
    if (v.readonly) return false;
    static const std::vector<std::string> kOps = {"add_.Tensor", "mul_.Tensor", "add_.Scalar",
                                                  "mul_.Scalar"};
    Node* n = call(rng_.pick(kOps), {Arg(v.node), literal()});
    c_.has_mutations = true;
    push(n, v.input_storage);
    return true;
  }

  void outputs() {
    std::vector<Arg> outs;
    int64_t count = rng_.between(1, 4);
    for (int64_t i = 0; i < count; ++i) outs.push_back(Arg(any_val().node));
    g_->set_output(Arg::of_tuple(std::move(outs)));
  }

  Case& c_;
  Rng& rng_;
  const OpTable& ops_;
  std::shared_ptr<Graph> g_;
  std::vector<Val> vals_;
};

Case make_case(uint64_t seed) {
  Rng rng(seed * 0x9E3779B97F4A7C15ull + 7);
  Case c;
  c.seed = seed;
  c.duplicate_args = rng.chance(0.1);
  c.writes = rng.chance(0.5);
  c.graph = GraphGenerator(c, rng).build();
  return c;
}

// Arguments of a case: the same values for every run with the same seed; some -0.0, inf and nan.
std::vector<at::Tensor> make_args(const Case& c) {
  Rng rng(c.seed ^ 0x5DEECE66Dull);
  std::vector<at::Tensor> args;
  for (size_t i = 0; i < c.shapes.size(); ++i) {
    at::Tensor t = at::empty(c.shapes[i], at::kDouble);
    double* p = t.data_ptr<double>();
    for (int64_t k = 0; k < t.numel(); ++k) {
      int64_t r = rng.between(0, 39);
      p[k] = r == 0   ? -0.0
             : r == 1 ? 0.0
             : r == 2 ? 1.0
                      : static_cast<double>(rng.between(-300, 300)) / 64;
      if (c.dtypes[i] != ScalarType::Int64 && r == 3)
        p[k] = std::numeric_limits<double>::infinity();
      if (c.dtypes[i] != ScalarType::Int64 && r == 4) p[k] = std::nan("");
    }
    at::ScalarType st = c.dtypes[i] == ScalarType::Float32   ? at::kFloat
                        : c.dtypes[i] == ScalarType::Float64 ? at::kDouble
                                                             : at::kLong;
    args.push_back(t.to(st));
  }
  if (c.duplicate_args) args[1] = args[0];
  return args;
}

struct Run {
  std::vector<c10::IValue> outputs;
  std::vector<at::Tensor> args;  // after the run
};

Run run_graph(const std::shared_ptr<const Graph>& g, const Case& c) {
  Run r;
  r.args = make_args(c);
  at::manual_seed(static_cast<uint64_t>(c.seed));
  Interpreter interp(g);
  r.outputs = interp.run({r.args.begin(), r.args.end()});
  return r;
}

std::string describe(const at::Tensor& t) {
  std::ostringstream s;
  s << t.scalar_type() << " sizes " << t.sizes() << " strides " << t.strides();
  return s.str();
}

bool same_strides(const at::Tensor& a, const at::Tensor& b) {
  for (int64_t d = 0; d < a.dim(); ++d)
    if (a.size(d) > 1 && a.stride(d) != b.stride(d)) return false;
  return true;
}

// Exact equality: nan equals nan, -0.0 does not equal 0.0 (1 / x tells them apart).
bool same_values(const at::Tensor& a, const at::Tensor& b) {
  at::Tensor eq = a.eq(b);
  if (at::isFloatingType(a.scalar_type()))
    eq = eq.logical_and(a.signbit().eq(b.signbit())).logical_or(a.isnan().logical_and(b.isnan()));
  return eq.all().item<bool>();
}

void compare_tensor(const std::string& what, const at::Tensor& e, const at::Tensor& k,
                    std::string& why) {
  if (e.scalar_type() != k.scalar_type() || e.sizes() != k.sizes() || !same_strides(e, k)) {
    why += what + ": before " + describe(e) + ", after " + describe(k) + "\n";
    return;
  }
  if (!same_values(e, k)) {
    std::ostringstream s;
    s << what << ": values differ\n  before: " << e << "\n  after:  " << k << "\n";
    why += s.str();
  }
}

// Compares a run of the optimized graph with the unoptimized one; with `aliasing`, also which
// outputs are (or alias) arguments or other outputs.
std::string compare_runs(const Run& e, const Run& k, bool aliasing) {
  std::string why;
  if (e.outputs.size() != k.outputs.size()) return "output count differs\n";
  for (size_t i = 0; i < e.outputs.size(); ++i) {
    std::string what = "output " + std::to_string(i);
    const c10::IValue &a = e.outputs[i], &b = k.outputs[i];
    if (a.isInt() || b.isInt()) {
      if (!a.isInt() || !b.isInt() || a.toInt() != b.toInt()) why += what + ": ints differ\n";
      continue;
    }
    const at::Tensor &et = a.toTensor(), &kt = b.toTensor();
    compare_tensor(what, et, kt, why);
    if (!aliasing) continue;
    for (size_t j = 0; j < e.args.size(); ++j) {
      if (et.is_same(e.args[j]) != kt.is_same(k.args[j]))
        why += what + ": is argument " + std::to_string(j) + " in one run only\n";
      if (et.is_alias_of(e.args[j]) != kt.is_alias_of(k.args[j]))
        why += what + ": aliases argument " + std::to_string(j) + " in one run only\n";
    }
    for (size_t j = 0; j < i; ++j) {
      if (!e.outputs[j].isTensor() || !k.outputs[j].isTensor()) continue;
      const at::Tensor &ej = e.outputs[j].toTensor(), &kj = k.outputs[j].toTensor();
      if (et.is_same(ej) != kt.is_same(kj))
        why += what + ": is output " + std::to_string(j) + " in one run only\n";
      if (et.is_alias_of(ej) != kt.is_alias_of(kj))
        why += what + ": aliases output " + std::to_string(j) + " in one run only\n";
    }
  }
  for (size_t j = 0; j < e.args.size(); ++j)
    compare_tensor("argument " + std::to_string(j) + " after the call", e.args[j], k.args[j], why);
  return why;
}

// The pipelines every case goes through: each pass alone, then all of them in order.
const std::vector<std::vector<std::string>>& pipelines() {
  static const std::vector<std::vector<std::string>> kPipelines = {
      {"dce"},
      {"cse"},
      {"constant_fold"},
      {"simplify"},
      {"functionalize"},
      {"functionalize", "simplify", "constant_fold", "cse", "dce", "simplify", "cse", "dce"},
  };
  return kPipelines;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

struct Stats {
  int cases = 0, eager_rejected = 0, runs = 0, unsupported = 0, fail = 0;
  std::map<std::string, int64_t> changes;     // per pass, summed
  int64_t nodes_before = 0, nodes_after = 0;  // full pipeline
  std::vector<std::string> failures;
};

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

void run_case(const Case& c, Stats& stats, bool print) {
  Run before;
  try {
    before = run_graph(c.graph, c);
  } catch (const std::exception&) {
    ++stats.eager_rejected;  // eager refuses the program (a write into an expanded view, ...)
    return;
  }
  ++stats.cases;
  for (const auto& names : pipelines()) {
    // Functionalization returns new values where eager returns a written argument (the runtime
    // puts the argument back, FunctionalizeResult::meta says which), and assumes arguments do not
    // alias each other when one is written (the runtime dedupes them first).
    bool functionalizes = names[0] == "functionalize" && c.has_mutations;
    if (functionalizes && c.duplicate_args) continue;
    std::string why, after_text;
    std::unique_ptr<Graph> g = c.graph->clone();
    PassPipelineOptions opts;
    opts.verify = true;
    PassPipeline p(opts);
    for (const std::string& n : names) p.add(n);
    ++stats.runs;
    try {
      p.run(*g);
      after_text = print_graph(*g);
      for (const PassStats& s : p.stats()) stats.changes[s.pass] += s.changes;
      if (names.size() > 1) {
        stats.nodes_before += static_cast<int64_t>(c.graph->size());
        stats.nodes_after += static_cast<int64_t>(g->size());
      }
      why = compare_runs(before, run_graph(std::shared_ptr<const Graph>(std::move(g)), c),
                         /*aliasing=*/!functionalizes);
    } catch (const Error& e) {
      if (e.message().find("pass 'functionalize'") == 0 &&
          e.message().find("cannot") != std::string::npos) {
        ++stats.unsupported;
        continue;
      }
      why = std::string("threw: ") + e.message() + "\n";
    } catch (const std::exception& e) {
      std::string what = e.what();
      why = "threw a non-aotgrad exception: " + what.substr(0, what.find('\n')) + "\n";
    }
    if (print) std::cout << "[passes] " << join(names) << ":\n" << after_text;
    if (why.empty()) continue;
    ++stats.fail;
    std::ostringstream msg;
    msg << "seed " << c.seed << ", passes " << join(names)
        << (c.duplicate_args ? ", arguments 0 and 1 one tensor" : "") << "\n"
        << why << "graph:\n"
        << print_graph(*c.graph) << "after the passes:\n"
        << after_text;
    stats.failures.push_back(msg.str());
    std::cout << "[passes] fail: seed " << c.seed << " (" << join(names)
              << "): " << why.substr(0, why.find('\n')) << "\n";
  }
}

// AOTGRAD_FUZZ_SEED=n starts at seed n and runs one graph (printing it and each result) unless
// AOTGRAD_FUZZ_CASES gives the count.
TEST(PassesRandom, OutputsUnchangedByEveryPass) {
  uint64_t first = env_or("AOTGRAD_FUZZ_SEED", 1);
  uint64_t count = env_or("AOTGRAD_FUZZ_CASES", std::getenv("AOTGRAD_FUZZ_SEED") ? 1 : 400);
  Stats stats;
  int with_mutations = 0, duplicate_args = 0;
  for (uint64_t seed = first; seed < first + count; ++seed) {
    Case c = make_case(seed);
    if (count == 1) std::cout << print_graph(*c.graph);
    with_mutations += c.has_mutations;
    duplicate_args += c.duplicate_args;
    run_case(c, stats, count == 1);
  }
  std::cout << "[passes] " << count << " graphs (" << with_mutations << " with writes, "
            << duplicate_args << " with one tensor for two arguments): " << stats.cases << " run, "
            << stats.eager_rejected << " rejected by eager; " << stats.runs << " pass runs, "
            << stats.unsupported << " unsupported, " << stats.fail << " fail\n[passes] changes:";
  for (auto& [pass, n] : stats.changes) std::cout << " " << pass << " " << n;
  std::cout << "; full pipeline: " << stats.nodes_before << " -> " << stats.nodes_after
            << " nodes\n";
  for (size_t i = 0; i < stats.failures.size() && i < 5; ++i) ADD_FAILURE() << stats.failures[i];
  EXPECT_EQ(stats.fail, 0);
  if (count >= 100) {
    EXPECT_GT(stats.cases, static_cast<int>(count * 3 / 4)) << "too few valid graphs";
    // Every pass must have had work to do, or the generator no longer exercises it.
    for (const char* pass : {"dce", "cse", "constant_fold", "simplify", "functionalize"})
      EXPECT_GT(stats.changes[pass], 0) << pass << " never changed a graph";
  }
}

}  // namespace
}  // namespace aotgrad
