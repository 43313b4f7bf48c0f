// aotgrad: randomized differential test -- random programs of views and mutations must give the
// same outputs, output aliasing and final argument values eagerly (Interpreter) and compiled
// (CompiledGraph).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <tuple>

#include "aotgrad/ir/printer.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/runtime/compiled_graph.h"
#include "aotgrad/runtime/interpreter.h"

namespace aotgrad {
namespace {

using Shape = std::vector<int64_t>;

// How the caller's arguments alias each other.
enum class AliasMode { kNone, kDuplicate, kOverlap, kDisjoint, kTransposed, kCrossing };

const char* mode_name(AliasMode m) {
  switch (m) {
    case AliasMode::kNone: return "none";
    case AliasMode::kDuplicate: return "duplicate";
    case AliasMode::kOverlap: return "overlapping slices";
    case AliasMode::kDisjoint: return "disjoint slices";
    case AliasMode::kTransposed: return "base and base.t()";
    case AliasMode::kCrossing: return "a row and a column of one base";
  }
  return "?";
}

// One random program and how to call it.
struct Case {
  uint64_t seed = 0;
  AliasMode mode = AliasMode::kNone;
  bool keep_mutations = false;
  std::vector<Shape> input_shapes;
  std::vector<bool> f64;  // per input: float64 instead of float32
  // Per input, the caller's layout: contiguous as its placeholder says, or another one.
  enum class Layout { kContiguous, kReversed, kStrided };
  std::vector<Layout> layouts;
  Shape base_shape;  // modes with a base: arguments 0 and 1 are views of it
  std::function<std::vector<at::Tensor>(const at::Tensor&)> views_of_base;
  std::shared_ptr<Graph> graph;
};

// A tensor value the generator can use.
struct Val {
  Node* node = nullptr;
  int obj = 0;                 // tensor identity: an in-place op's result is its argument
  int root = 0;                // storage group: values that may share memory at run time
  bool geometry_known = true;  // metadata strides/offset are the run-time ones, root extent known
  int64_t root_numel = 0;      // elements in the root's storage (when geometry_known)
};

class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  int64_t between(int64_t lo, int64_t hi) {  // inclusive; lo when the range is empty
    if (hi < lo) return lo;
    return lo + static_cast<int64_t>(gen_() % static_cast<uint64_t>(hi - lo + 1));
  }
  bool chance(double p) { return static_cast<double>(gen_() % 1000000) < p * 1e6; }
  double uniform(double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(gen_() % 1000000) / 1e6;
  }
  template <typename T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(between(0, static_cast<int64_t>(v.size()) - 1))];
  }

 private:
  std::mt19937_64 gen_;
};

Shape concrete(const SymIntVector& v) {
  Shape s;
  for (const SymInt& x : v) s.push_back(x.value());
  return s;
}

Arg ints(const Shape& v) { return Arg::of_ints(v); }

// Builds a random program over the inputs of `c`.
class ProgramGenerator {
 public:
  ProgramGenerator(Case& c, Rng& rng)
      : c_(c), rng_(rng), ops_(aten_ops()), g_(std::make_shared<Graph>()) {}

  bool base_mode() const { return c_.mode != AliasMode::kNone && c_.mode != AliasMode::kDuplicate; }
  // Whether every tensor's run-time strides are the ones its node's metadata says.
  bool layouts_exact() const {
    return !base_mode() && std::all_of(c_.layouts.begin(), c_.layouts.end(), [](Case::Layout l) {
      return l == Case::Layout::kContiguous;
    });
  }

  std::shared_ptr<Graph> build() {
    for (size_t i = 0; i < c_.input_shapes.size(); ++i) {
      TensorMeta m = make_tensor_meta(c_.f64[i] ? ScalarType::Float64 : ScalarType::Float32,
                                      symints(c_.input_shapes[i]));
      Val v;
      v.node = g_->add_placeholder("x" + std::to_string(i), ValueMeta::of(m));
      v.obj = next_obj_++;
      v.root = next_root_++;
      v.root_numel = numel(c_.input_shapes[i]);
      if (c_.mode == AliasMode::kDuplicate && i == 1) {  // the same tensor twice
        v.root = vals_[0].root;
        v.obj = vals_[0].obj;
      }
      if (c_.layouts[i] != Case::Layout::kContiguous) v.geometry_known = false;
      if (base_mode() && i < 2) {
        v.geometry_known = false;
        // Overlapping arguments share a storage group; disjoint ones never overlap at run time.
        if (i == 1 && c_.mode != AliasMode::kDisjoint) v.root = vals_[0].root;
      }
      vals_.push_back(v);
      inputs_.push_back(v.obj);
    }
    int steps = static_cast<int>(rng_.between(2, 10));
    for (int s = 0; s < steps; ++s) {
      for (int attempt = 0; attempt < 8; ++attempt) {
        try {
          if (step()) break;
        } catch (const Error&) {
          // The meta function rejected the call (as eager would): try another.
        }
      }
    }
    outputs();
    return g_;
  }

 private:
  static SymIntVector symints(const Shape& s) { return SymIntVector(s.begin(), s.end()); }
  static int64_t numel(const Shape& s) {
    int64_t n = 1;
    for (int64_t x : s) n *= x;
    return n;
  }

  const Val& any_val() {
    // Recent values are more interesting (chains of views, mutations of fresh results).
    if (vals_.size() > 3 && rng_.chance(0.5)) return vals_[vals_.size() - 1 - rng_.between(0, 2)];
    return rng_.pick(vals_);
  }
  static Shape sizes(const Val& v) { return concrete(v.node->tensor_meta().sizes); }

  Node* call(const std::string& op, std::vector<Arg> args,
             std::vector<std::pair<std::string, Arg>> kwargs = {}) {
    return g_->add_call(ops_.get(op), std::move(args), std::move(kwargs));
  }

  Val derived(const Val& from, Node* n, bool same_tensor) {
    Val v = from;
    v.node = n;
    if (!same_tensor) v.obj = next_obj_++;
    return v;
  }
  Val fresh(Node* n) {
    Val v;
    v.node = n;
    v.obj = next_obj_++;
    v.root = next_root_++;
    v.root_numel = numel(concrete(n->tensor_meta().sizes));
    return v;
  }

  bool step() {
    int64_t r = rng_.between(0, 99);
    if (r < 34) return view_step();
    if (r < 52) return compute_step();
    if (r < 90) return inplace_step();
    if (r < 95) {
      if (!lists_.empty() && rng_.chance(0.4)) {
        take_from_list(
            lists_[static_cast<size_t>(rng_.between(0, static_cast<int64_t>(lists_.size()) - 1))]);
        return true;
      }
      return list_view_step();
    }
    return metadata_step();
  }

  // --- views -------------------------------------------------------------------------------------

  bool view_step() {
    const Val& v = any_val();
    Node* n = make_view(v);
    if (!n) return false;
    vals_.push_back(derived(v, n, false));
    return true;
  }

  Node* make_view(const Val& v) {
    Shape s = sizes(v);
    int64_t d = static_cast<int64_t>(s.size());
    Arg self(v.node);
    switch (rng_.between(0, 13)) {
      case 0: {
        if (d == 0) return nullptr;
        int64_t dim = rng_.between(0, d - 1);
        int64_t start = rng_.between(0, std::max<int64_t>(0, s[dim] - 1));
        int64_t end = rng_.between(start, s[dim]);
        int64_t step = rng_.chance(0.25) ? 2 : 1;
        if (rng_.chance(0.2))
          return call("aten::slice.Tensor", {self, Arg::of_int(dim), Arg::of_int(start - s[dim])});
        return call("aten::slice.Tensor", {self, Arg::of_int(dim), Arg::of_int(start),
                                           Arg::of_int(end), Arg::of_int(step)});
      }
      case 1: {
        if (d == 0) return nullptr;
        int64_t dim = rng_.between(-d, d - 1);
        int64_t size = s[dim < 0 ? dim + d : dim];
        if (size == 0) return nullptr;
        return call("aten::select.int",
                    {self, Arg::of_int(dim), Arg::of_int(rng_.between(-size, size - 1))});
      }
      case 2: return call("aten::t", {self});
      case 3: {
        if (d == 0) return nullptr;
        return call("aten::transpose.int", {self, Arg::of_int(rng_.between(-d, d - 1)),
                                            Arg::of_int(rng_.between(0, d - 1))});
      }
      case 4: {
        Shape perm(d);
        for (int64_t i = 0; i < d; ++i) perm[i] = i;
        for (int64_t i = d - 1; i > 0; --i) std::swap(perm[i], perm[rng_.between(0, i)]);
        return call("aten::permute", {self, ints(perm)});
      }
      case 5: return call("aten::view", {self, ints(reshaped(s))});
      case 6: return call("aten::unsqueeze", {self, Arg::of_int(rng_.between(-d - 1, d))});
      case 7: {
        if (d == 0) return nullptr;
        int64_t dim = rng_.between(0, d - 1);
        for (int64_t i = 0; i < d; ++i)
          if (s[i] == 1 && rng_.chance(0.7)) dim = i;
        return call("aten::squeeze.dim", {self, Arg::of_int(dim)});
      }
      case 8: return call(rng_.chance(0.7) ? "aten::alias" : "aten::detach", {self});
      case 11: return call("aten::squeeze", {self});
      case 12: {
        // As traced: the tensor's own strides. Arguments that are views of a base may have other
        // strides at run time than their placeholders say, and so may values computed from them.
        if (d == 0 || !v.geometry_known || !layouts_exact()) return nullptr;
        return call("aten::_reshape_alias",
                    {self, ints(s), ints(concrete(v.node->tensor_meta().strides))});
      }
      case 9: return as_strided(v);
      case 10: {
        // expand: a new leading dim, or size-1 dims grown (read-only in eager).
        Shape e = s;
        bool grew = false;
        for (auto& x : e)
          if (x == 1 && rng_.chance(0.7)) x = 3, grew = true;
        if (!grew || rng_.chance(0.3)) e.insert(e.begin(), 2);
        if (!e.empty() && rng_.chance(0.3)) e.back() = -1;
        return call("aten::expand", {self, ints(e)});
      }
      default: {
        if (d < 2) return nullptr;
        return call("aten::diagonal",
                    {self, Arg::of_int(rng_.between(-1, 1)), Arg::of_int(0), Arg::of_int(d - 1)});
      }
    }
  }

  Shape reshaped(const Shape& s) {
    int64_t n = numel(s);
    int64_t d = static_cast<int64_t>(s.size());
    switch (rng_.between(0, 3)) {
      case 0: return {rng_.chance(0.5) ? -1 : n};
      case 1: {  // merge two adjacent dims
        if (d < 2) return {n, 1};
        int64_t i = rng_.between(0, d - 2);
        Shape r(s.begin(), s.begin() + i);
        r.push_back(s[i] * s[i + 1]);
        r.insert(r.end(), s.begin() + i + 2, s.end());
        return r;
      }
      case 2: {  // split a dim
        for (int64_t i = 0; i < d; ++i)
          for (int64_t f : {2, 3})
            if (s[i] % f == 0 && s[i] > f) {
              Shape r(s.begin(), s.begin() + i);
              r.push_back(f);
              r.push_back(rng_.chance(0.5) ? -1 : s[i] / f);
              r.insert(r.end(), s.begin() + i + 1, s.end());
              return r;
            }
        return s;
      }
      default: {
        Shape r = s;
        r.insert(r.begin() + rng_.between(0, d), 1);
        return r;
      }
    }
  }

  // A non-overlapping as_strided view inside the root's storage (offsets are absolute).
  Node* as_strided(const Val& v) {
    auto geometry = strided_geometry(v);
    if (!geometry) return nullptr;
    auto [size, stride, offset] = *geometry;
    return call("aten::as_strided", {Arg(v.node), ints(size), ints(stride), Arg::of_int(offset)});
  }

  std::optional<std::tuple<Shape, Shape, int64_t>> strided_geometry(const Val& v) {
    if (!v.geometry_known) return std::nullopt;
    Shape size, stride;
    int64_t k = rng_.between(1, 2);
    if (rng_.chance(0.5)) {
      size = {rng_.between(1, 4)};
      stride = {k};
    } else {
      int64_t a = rng_.between(1, 3), b = rng_.between(1, 3);
      size = {a, b};
      stride = rng_.chance(0.5) ? Shape{b * k, k} : Shape{k, a * k};
    }
    int64_t extent = 0;
    for (size_t i = 0; i < size.size(); ++i) extent += (size[i] - 1) * stride[i];
    if (extent + 1 > v.root_numel) return std::nullopt;
    return std::make_tuple(size, stride, rng_.between(0, v.root_numel - 1 - extent));
  }

  bool list_view_step() {
    const Val& v = any_val();
    Shape s = sizes(v);
    int64_t d = static_cast<int64_t>(s.size());
    if (d == 0) return false;
    int64_t dim = rng_.between(0, d - 1);
    Node* list = nullptr;
    if (rng_.chance(0.4)) {
      list = call("aten::unbind.int", {Arg(v.node), Arg::of_int(dim)});
    } else if (rng_.chance(0.6) || s[dim] < 2) {
      list = call("aten::split.Tensor",
                  {Arg(v.node), Arg::of_int(rng_.between(1, 3)), Arg::of_int(dim)});
    } else {
      int64_t first = rng_.between(1, s[dim] - 1);
      list = call("aten::split_with_sizes",
                  {Arg(v.node), ints({first, s[dim] - first}), Arg::of_int(dim)});
    }
    if (list->meta().elems.empty()) return false;
    lists_.push_back({list, v, {}});
    take_from_list(lists_.back());
    return true;
  }

  // A split/unbind result and the value split.
  struct ListVal {
    Node* list;
    Val source;
    std::map<int64_t, int> taken;  // element -> obj: list[i] twice is one tensor
  };

  // getitem of a split/unbind list: right after it, or some steps later (maybe after a write).
  // An element whose metadata was mutated is not taken again (its node's metadata would be stale).
  void take_from_list(ListVal& list) {
    int64_t count = static_cast<int64_t>(list.list->meta().elems.size());
    int taken = static_cast<int>(rng_.between(0, 2));
    for (int i = 0; i < taken; ++i) {
      int64_t k = rng_.between(0, count - 1);
      auto it = list.taken.find(k);
      if (it != list.taken.end() && metadata_mutated_.count(it->second)) continue;
      Val v = derived(list.source, g_->add_getitem(list.list, k), false);
      if (it != list.taken.end()) v.obj = it->second;
      list.taken[k] = v.obj;
      vals_.push_back(v);
    }
  }

  // --- out-of-place computations -----------------------------------------------------------------

  bool compute_step() {
    const Val& v = any_val();
    Arg self(v.node);
    Node* n = nullptr;
    switch (rng_.between(0, 4)) {
      case 0:
      case 1: {
        static const std::vector<std::string> unary = {"aten::relu",  "aten::neg", "aten::sin",
                                                       "aten::clone", "aten::abs", "aten::tanh"};
        n = call(rng_.pick(unary), {self});
        break;
      }
      case 2:
      case 3: {
        static const std::vector<std::string> binary = {"aten::add.Tensor", "aten::mul.Tensor",
                                                        "aten::sub.Tensor"};
        const std::string& op = rng_.pick(binary);
        Arg other = rng_.chance(0.3) ? Arg::of_float(rng_.uniform(-2, 2)) : Arg(any_val().node);
        if (op != "aten::mul.Tensor" && rng_.chance(0.3))
          n = call(op, {self, other}, {{"alpha", Arg::of_int(2)}});
        else
          n = call(op, {self, other});
        break;
      }
      default: {
        int64_t d = v.node->tensor_meta().dim();
        if (d == 0 || rng_.chance(0.15)) {
          n = call("aten::sum", {self});
          break;
        }
        n = call("aten::sum.dim_IntList",
                 {self, ints({rng_.between(0, d - 1)}), Arg::of_bool(rng_.chance(0.5))});
      }
    }
    vals_.push_back(fresh(n));
    return true;
  }

  // --- in-place data mutations -------------------------------------------------------------------

  // Whether `w` may be read by an in-place op writing `v`: eager's answer would depend on the order
  // elements are visited when the two partially overlap, so such pairs are not generated.
  static bool can_read_while_writing(const Val& v, const Val& w) {
    if (w.root != v.root || w.obj == v.obj) return true;
    if (!v.geometry_known || !w.geometry_known) return false;
    const TensorMeta &a = v.node->tensor_meta(), &b = w.node->tensor_meta();
    if (a.sizes == b.sizes && a.strides == b.strides && a.storage_offset == b.storage_offset)
      return true;
    auto range = [](const TensorMeta& t) {
      int64_t lo = t.storage_offset.value(), hi = lo;
      for (int64_t i = 0; i < t.dim(); ++i) {
        if (t.sizes[i].value() == 0) return std::pair<int64_t, int64_t>{0, -1};
        hi += (t.sizes[i].value() - 1) * t.strides[i].value();
      }
      return std::pair<int64_t, int64_t>{lo, hi};
    };
    auto [a0, a1] = range(a);
    auto [b0, b1] = range(b);
    return a1 < b0 || b1 < a0 || a1 < a0 || b1 < b0;
  }

  bool inplace_step() {
    const Val v = any_val();
    Arg self(v.node);
    auto other = [&]() -> std::optional<Arg> {
      if (rng_.chance(0.25)) return Arg::of_float(rng_.uniform(-2, 2));
      const Val& w = any_val();
      if (!can_read_while_writing(v, w)) return std::nullopt;
      return Arg(w.node);
    };
    Node* n = nullptr;
    switch (rng_.between(0, 13)) {
      case 0:
      case 1: {
        auto o = other();
        if (!o) return false;
        n = rng_.chance(0.3)
                ? call("aten::add_.Tensor", {self, *o}, {{"alpha", Arg::of_float(0.5)}})
                : call("aten::add_.Tensor", {self, *o});
        break;
      }
      case 2: {
        auto o = other();
        if (!o) return false;
        n = call("aten::sub_.Tensor", {self, *o});
        break;
      }
      case 3: {
        auto o = other();
        if (!o) return false;
        n = call("aten::mul_.Tensor", {self, *o});
        break;
      }
      case 4: n = call("aten::mul_.Scalar", {self, Arg::of_float(rng_.uniform(0.5, 2))}); break;
      case 5: n = call("aten::div_.Scalar", {self, Arg::of_float(rng_.uniform(0.5, 2))}); break;
      case 6:
      case 7: {
        const Val& w = any_val();
        if (!can_read_while_writing(v, w)) return false;
        n = call("aten::copy_", {self, Arg(w.node)});
        break;
      }
      case 8: n = call("aten::fill_.Scalar", {self, Arg::of_float(rng_.uniform(-2, 2))}); break;
      case 9:
        n = rng_.chance(0.3)
                ? call("aten::zero_", {self})
                : call("aten::clamp_", {self, Arg::of_float(-0.5), Arg::of_float(0.75)});
        break;
      case 10: n = call(rng_.chance(0.5) ? "aten::relu_" : "aten::neg_", {self}); break;
      case 11: n = call("aten::sin_", {self}); break;
      case 12:
        n = rng_.chance(0.5) ? call("aten::add_.Scalar", {self, Arg::of_float(rng_.uniform(-2, 2))})
                             : call("aten::clamp_min_", {self, Arg::of_float(rng_.uniform(-1, 1))});
        break;
      default: {  // two tensor reads
        const Val &w1 = any_val(), &w2 = any_val();
        if (!can_read_while_writing(v, w1) || !can_read_while_writing(v, w2)) return false;
        n = rng_.chance(0.5)
                ? call("aten::addcmul_", {self, Arg(w1.node), Arg(w2.node)},
                       {{"value", Arg::of_float(0.5)}})
                : call("aten::lerp_.Scalar", {self, Arg(w1.node), Arg::of_float(0.25)});
      }
    }
    vals_.push_back(derived(v, n, true));
    return true;
  }

  // --- metadata mutations ------------------------------------------------------------------------

  bool metadata_step() {
    const Val v = any_val();
    int64_t d = v.node->tensor_meta().dim();
    Arg self(v.node);
    Node* n = nullptr;
    switch (rng_.between(0, 5)) {
      case 0: n = call("aten::t_", {self}); break;
      case 1:
        if (d == 0) return false;
        n = call("aten::transpose_",
                 {self, Arg::of_int(rng_.between(0, d - 1)), Arg::of_int(rng_.between(0, d - 1))});
        break;
      case 2: n = call("aten::unsqueeze_", {self, Arg::of_int(rng_.between(0, d))}); break;
      case 3:
        if (d == 0) return false;
        n = call("aten::squeeze_.dim", {self, Arg::of_int(rng_.between(0, d - 1))});
        break;
      case 4: n = call("aten::squeeze_", {self}); break;
      default: {
        auto geometry = strided_geometry(v);
        if (!geometry) return false;
        auto [size, stride, offset] = *geometry;
        n = call("aten::as_strided_", {self, ints(size), ints(stride), Arg::of_int(offset)});
      }
    }
    // Every node of this tensor now has stale metadata: later uses go through the new node.
    std::erase_if(vals_, [&](const Val& x) { return x.obj == v.obj; });
    metadata_mutated_.insert(v.obj);
    vals_.push_back(derived(v, n, true));
    return true;
  }

  // --- outputs -----------------------------------------------------------------------------------

  void outputs() {
    std::vector<Arg> outs;
    int64_t count = rng_.between(1, 3);
    for (int64_t i = 0; i < count; ++i) {
      if (rng_.chance(0.05)) {
        outs.push_back(Arg());
        continue;
      }
      const Val* v = &any_val();
      if (rng_.chance(0.2)) {  // an input itself (its latest node)
        int obj = rng_.pick(inputs_);
        for (const Val& x : vals_)
          if (x.obj == obj) v = &x;
      }
      outs.push_back(Arg(v->node));
    }
    g_->set_output(Arg::of_tuple(std::move(outs)));
  }

  Case& c_;
  Rng& rng_;
  const OpTable& ops_;
  std::shared_ptr<Graph> g_;
  std::vector<Val> vals_;
  std::vector<int> inputs_;  // obj ids of the inputs
  std::vector<ListVal> lists_;
  std::set<int> metadata_mutated_;  // objs whose metadata a t_/transpose_/... changed
  int next_obj_ = 0;
  int next_root_ = 0;
};

Case make_case(uint64_t seed) {
  Case c;
  c.seed = seed;
  Rng rng(seed * 0x9E3779B97F4A7C15ull + 1);
  static const std::vector<Shape> shapes = {{4},    {3, 4}, {2, 3, 4}, {4, 4},   {1, 4},
                                            {3, 1}, {6},    {},        {2, 1, 3}};
  int64_t m = rng.between(0, 9);
  c.mode = m < 5 ? AliasMode::kNone
                 : static_cast<AliasMode>(
                       std::min<int64_t>(m - 4, static_cast<int64_t>(AliasMode::kCrossing)));
  c.keep_mutations = rng.chance(0.3);
  int64_t n = rng.between(1, 3);
  switch (c.mode) {
    case AliasMode::kNone:
      for (int64_t i = 0; i < n; ++i) c.input_shapes.push_back(rng.pick(shapes));
      break;
    case AliasMode::kDuplicate: {
      Shape s = rng.pick(shapes);
      c.input_shapes = {s, s};
      break;
    }
    case AliasMode::kOverlap:
    case AliasMode::kDisjoint: {
      // Two row ranges [a0, a0 + len) and [a1, a1 + len) of a [rows] or [rows, cols] base.
      bool overlap = c.mode == AliasMode::kOverlap;
      int64_t len = rng.between(2, 4);
      int64_t a0 = rng.between(0, 1);
      int64_t a1 = overlap ? a0 + rng.between(0, len - 1) : a0 + len + rng.between(0, 1);
      if (overlap && a1 == a0 && rng.chance(0.7)) a1 = a0 + 1;
      int64_t rows = std::max(a0, a1) + len + rng.between(0, 1);
      Shape arg = {len};
      c.base_shape = {rows};
      if (rng.chance(0.5)) {
        int64_t cols = rng.between(1, 3);
        arg.push_back(cols);
        c.base_shape.push_back(cols);
      }
      c.input_shapes = {arg, arg};
      c.views_of_base = [=](const at::Tensor& b) {
        return std::vector<at::Tensor>{b.slice(0, a0, a0 + len), b.slice(0, a1, a1 + len)};
      };
      break;
    }
    case AliasMode::kTransposed: {
      int64_t k = rng.between(2, 4);
      c.base_shape = {k, k};
      c.input_shapes = {{k, k}, {k, k}};
      c.views_of_base = [](const at::Tensor& b) { return std::vector<at::Tensor>{b, b.t()}; };
      break;
    }
    case AliasMode::kCrossing: {
      int64_t k = rng.between(2, 4);
      int64_t i = rng.between(0, k - 1), j = rng.between(0, k - 1);
      c.base_shape = {k, k};
      c.input_shapes = {{k}, {k}};
      c.views_of_base = [=](const at::Tensor& b) {
        return std::vector<at::Tensor>{b.select(0, i), b.select(1, j)};
      };
      break;
    }
  }
  if (c.mode != AliasMode::kNone && rng.chance(0.3)) c.input_shapes.push_back(rng.pick(shapes));
  // Arguments that are one tensor or views of one base share its dtype.
  for (size_t i = 0; i < c.input_shapes.size(); ++i)
    c.f64.push_back((c.mode == AliasMode::kNone || i >= 2) && rng.chance(0.15));
  // Sometimes a dense argument with reversed strides, or a non-dense one (every other element).
  for (size_t i = 0; i < c.input_shapes.size(); ++i) {
    Case::Layout l = Case::Layout::kContiguous;
    if (c.mode == AliasMode::kNone && !c.input_shapes[i].empty() && rng.chance(0.15))
      l = c.input_shapes[i].size() >= 2 && rng.chance(0.5) ? Case::Layout::kReversed
                                                           : Case::Layout::kStrided;
    c.layouts.push_back(l);
  }
  c.graph = ProgramGenerator(c, rng).build();
  return c;
}

// The caller's side of one call: its arguments and, for modes with a base, the base.
struct CallArgs {
  at::Tensor base;
  std::vector<at::Tensor> tensors;  // one per argument
  std::vector<c10::IValue> ivalues() const { return {tensors.begin(), tensors.end()}; }
};

at::Tensor random_tensor(const Shape& s, Rng& rng, bool f64 = false) {
  at::Tensor t = at::empty(s, at::kFloat);
  float* p = t.data_ptr<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(rng.uniform(-2, 2));
  return f64 ? t.to(at::kDouble) : t;
}

// Fresh arguments for `c`, the same values for every call with the same seed.
CallArgs make_args(const Case& c) {
  Rng rng(c.seed ^ 0x5DEECE66Dull);
  CallArgs a;
  for (size_t i = 0; i < c.input_shapes.size(); ++i) {
    const Shape& s = c.input_shapes[i];
    switch (c.layouts[i]) {
      case Case::Layout::kContiguous: a.tensors.push_back(random_tensor(s, rng, c.f64[i])); break;
      case Case::Layout::kReversed: {
        Shape reversed(s.rbegin(), s.rend()), dims;
        for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d) dims.push_back(d);
        a.tensors.push_back(random_tensor(reversed, rng, c.f64[i]).permute(dims));
        break;
      }
      case Case::Layout::kStrided: {
        Shape wide = s;
        wide.back() *= 2;
        a.tensors.push_back(random_tensor(wide, rng, c.f64[i]).slice(-1, 0, c10::nullopt, 2));
        break;
      }
    }
  }
  if (c.mode == AliasMode::kDuplicate) a.tensors[1] = a.tensors[0];
  if (c.views_of_base) {
    a.base = random_tensor(c.base_shape, rng);
    std::vector<at::Tensor> v = c.views_of_base(a.base);
    a.tensors[0] = v[0];
    a.tensors[1] = v[1];
  }
  return a;
}

std::string describe(const at::Tensor& t) {
  std::ostringstream s;
  s << "sizes " << t.sizes() << " strides " << t.strides() << " offset " << t.storage_offset();
  return s.str();
}

std::string tensor_text(const at::Tensor& t) {
  std::ostringstream s;
  s << t;
  return s.str();
}

bool same_values(const at::Tensor& a, const at::Tensor& b) {
  return a.sizes() == b.sizes() && at::allclose(a, b, 1e-4, 1e-5, /*equal_nan=*/true);
}

// Compares one tensor of the eager run with the compiled run's; appends what differs to `why`.
// Equal strides where they matter (dims of size 1 may have any stride).
bool same_strides(const at::Tensor& a, const at::Tensor& b) {
  for (int64_t d = 0; d < a.dim(); ++d)
    if (a.size(d) > 1 && a.stride(d) != b.stride(d)) return false;
  return true;
}

void compare_tensor(const std::string& what, const at::Tensor& e, const at::Tensor& c,
                    bool check_geometry, std::string& why) {
  if (e.sizes() != c.sizes() ||
      (check_geometry &&
       (!same_strides(e, c) || (e.numel() > 0 && e.storage_offset() != c.storage_offset())))) {
    why += what + ": eager " + describe(e) + ", compiled " + describe(c) + "\n";
    return;
  }
  if (!same_values(e, c))
    why += what + ": values differ\n  eager:    " + tensor_text(e) +
           "\n  compiled: " + tensor_text(c) + "\n";
}

enum class Outcome { kPass, kEagerRejected, kUnsupported, kFail };

struct Stats {
  int pass = 0, eager_rejected = 0, unsupported = 0, fail = 0;
  int aliased_calls = 0, keep_cases = 0;
  std::map<std::string, int> unsupported_reasons;
  std::vector<std::string> failures;
};

// The first line of an error, with node names and numbers left out, to group similar errors.
std::string reason_key(const std::string& msg) {
  std::string line = msg.substr(0, msg.find('\n'));
  size_t colon = line.find("): ");
  if (colon != std::string::npos && line.rfind("node '", 0) == 0) line = line.substr(colon + 3);
  std::string key;  // numbers as '#'
  for (char ch : line.substr(0, 120)) {
    if (!std::isdigit(static_cast<unsigned char>(ch)))
      key += ch;
    else if (key.empty() || key.back() != '#')
      key += '#';
  }
  return key;
}

bool is_limitation(const std::string& msg) {
  for (const char* known : {"cannot functionalize", "cannot write through", "not supported"})
    if (msg.find(known) != std::string::npos) return true;
  return false;
}

// Compares a compiled call's outputs and arguments with the eager run's; appends differences.
void compare_runs(const CallArgs& eager, const std::vector<c10::IValue>& eager_out,
                  const CallArgs& compiled, const std::vector<c10::IValue>& compiled_out,
                  const std::string& call, std::string& why) {
  if (eager_out.size() != compiled_out.size())
    why += call + "output count: eager " + std::to_string(eager_out.size()) + ", compiled " +
           std::to_string(compiled_out.size()) + "\n";
  for (size_t i = 0; i < eager_out.size() && i < compiled_out.size(); ++i) {
    std::string what = call + "output " + std::to_string(i);
    const c10::IValue &e = eager_out[i], &k = compiled_out[i];
    if (e.isNone() || k.isNone()) {
      if (e.isNone() != k.isNone()) why += what + ": None in only one run\n";
      continue;
    }
    const at::Tensor &et = e.toTensor(), &kt = k.toTensor();
    // Outputs that alias an argument in eager must alias the compiled call's argument too.
    bool aliases_input = false;
    for (size_t a = 0; a < eager.tensors.size(); ++a) {
      if (!et.is_alias_of(eager.tensors[a])) continue;
      aliases_input = true;
      if (!kt.is_alias_of(compiled.tensors[a]))
        why += what + ": aliases argument " + std::to_string(a) + " in eager but not compiled\n";
      if (et.is_same(eager.tensors[a]) && !kt.is_same(compiled.tensors[a]))
        why += what + ": is argument " + std::to_string(a) +
               " in eager but a different tensor compiled\n";
    }
    if (!aliases_input)
      for (size_t a = 0; a < compiled.tensors.size(); ++a)
        if (kt.is_alias_of(compiled.tensors[a]))
          why += what + ": a fresh tensor in eager but aliases argument " + std::to_string(a) +
                 " compiled\n";
    compare_tensor(what, et, kt, aliases_input, why);
  }
  for (size_t a = 0; a < eager.tensors.size(); ++a)
    compare_tensor(call + "argument " + std::to_string(a) + " after the call", eager.tensors[a],
                   compiled.tensors[a],
                   /*check_geometry=*/true, why);
  if (eager.base.defined())
    compare_tensor(call + "the arguments' base after the call", eager.base, compiled.base, true,
                   why);
}

Outcome run_case(const Case& c, Stats& stats) {
  // Eager: the graph as written on the caller's tensors.
  CallArgs eager = make_args(c);
  std::vector<c10::IValue> eager_out;
  try {
    Interpreter interp(c.graph);
    eager_out = interp.run(eager.ivalues());
  } catch (const std::exception&) {
    return Outcome::kEagerRejected;  // eager refuses the program (an overlapping write, ...)
  }

  // Compiled, called twice on fresh arguments: the second call reuses the specialization.
  std::string fw_text;
  std::string why;
  try {
    CompileOptions opts;
    opts.keep_inference_input_mutations = c.keep_mutations;
    CompiledGraph f(c.graph, opts);
    for (int call = 1; call <= 2 && why.empty(); ++call) {
      CallArgs compiled = make_args(c);
      std::vector<c10::IValue> args = compiled.ivalues();
      fw_text = print_graph(*f.specialization_for(args).fw);
      std::vector<c10::IValue> compiled_out = f(args);
      compare_runs(eager, eager_out, compiled, compiled_out, call == 1 ? "" : "second call: ", why);
    }
  } catch (const Error& e) {
    // A mutation the pass says it cannot express is a limitation; any other Error is a bug.
    if (is_limitation(e.message())) {
      ++stats.unsupported_reasons[reason_key(e.message())];
      return Outcome::kUnsupported;
    }
    why = "compilation or the compiled run threw: " + e.message() + "\n";
  } catch (const std::exception& e) {
    std::string what = e.what();
    why = "compiled run threw a non-aotgrad exception: " + what.substr(0, what.find('\n')) + "\n";
  }
  if (why.empty()) return Outcome::kPass;
  std::ostringstream msg;
  msg << "seed " << c.seed << ", aliasing: " << mode_name(c.mode)
      << ", keep_inference_input_mutations=" << c.keep_mutations << "\n"
      << why << "program:\n"
      << print_graph(*c.graph) << "functional graph:\n"
      << fw_text;
  stats.failures.push_back(msg.str());
  std::cout << "[fuzz] fail: seed " << c.seed << " (" << mode_name(c.mode)
            << (c.keep_mutations ? ", keep" : "") << "): " << why.substr(0, why.find('\n')) << "\n";
  return Outcome::kFail;
}

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

// AOTGRAD_FUZZ_SEED=n starts at seed n and runs one program (printing it) unless
// AOTGRAD_FUZZ_CASES gives the count.
TEST(FunctionalizeRandom, EagerAndCompiledAgree) {
  uint64_t first = env_or("AOTGRAD_FUZZ_SEED", 1);
  uint64_t count = env_or("AOTGRAD_FUZZ_CASES", std::getenv("AOTGRAD_FUZZ_SEED") ? 1 : 1000);
  Stats stats;
  for (uint64_t seed = first; seed < first + count; ++seed) {
    Case c = make_case(seed);
    if (count == 1) std::cout << print_graph(*c.graph);
    stats.aliased_calls += c.mode != AliasMode::kNone;
    stats.keep_cases += c.keep_mutations;
    switch (run_case(c, stats)) {
      case Outcome::kPass: ++stats.pass; break;
      case Outcome::kEagerRejected: ++stats.eager_rejected; break;
      case Outcome::kUnsupported: ++stats.unsupported; break;
      case Outcome::kFail: ++stats.fail; break;
    }
  }
  std::cout << "[fuzz] " << count << " programs (" << stats.aliased_calls
            << " with aliased arguments, " << stats.keep_cases
            << " keeping input mutations): " << stats.pass << " pass, " << stats.unsupported
            << " unsupported, " << stats.eager_rejected << " rejected by eager, " << stats.fail
            << " fail\n";
  for (auto& [reason, n] : stats.unsupported_reasons)
    std::cout << "[fuzz] unsupported x" << n << ": " << reason << "\n";
  for (size_t i = 0; i < stats.failures.size() && i < 5; ++i) ADD_FAILURE() << stats.failures[i];
  EXPECT_EQ(stats.fail, 0);
  if (count >= 100)
    EXPECT_GT(stats.pass, static_cast<int>(count / 2))
        << "the generator makes too few valid programs";
}

}  // namespace
}  // namespace aotgrad
