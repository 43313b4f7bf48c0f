// aotgrad: aotgrad's SymInt as libtorch's c10::SymNodeImpl.
#include "aotgrad/providers/sym_node.h"

#include <c10/core/SymNodeImpl.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <numeric>

#include "aotgrad/ops/meta_util.h"

namespace aotgrad {
namespace {

thread_local ScopedShapeGuards* g_guards = nullptr;

enum class Rel { Eq, Ne, Lt, Le, Gt, Ge };

// The relation decided from the range of a - b with every symbol at least kLeastSymbolicSize, or
// nullopt when that range does not settle it.
std::optional<bool> decide(const SymInt& a, Rel r, const SymInt& b) {
  const SymInt d = a - b;
  std::optional<int64_t> lo = d.lower_bound(kLeastSymbolicSize);
  std::optional<int64_t> neg_lo = (-d).lower_bound(kLeastSymbolicSize);
  std::optional<int64_t> hi;
  if (neg_lo) hi = -*neg_lo;
  switch (r) {
    case Rel::Eq:
    case Rel::Ne: {
      std::optional<bool> eq;
      if (d.is_concrete()) eq = d.value() == 0;
      if ((lo && *lo > 0) || (hi && *hi < 0)) eq = false;
      if (!eq) return std::nullopt;
      return r == Rel::Eq ? *eq : !*eq;
    }
    case Rel::Lt:
      if (hi && *hi < 0) return true;
      if (lo && *lo >= 0) return false;
      return std::nullopt;
    case Rel::Le:
      if (hi && *hi <= 0) return true;
      if (lo && *lo > 0) return false;
      return std::nullopt;
    case Rel::Gt:
      if (lo && *lo > 0) return true;
      if (hi && *hi <= 0) return false;
      return std::nullopt;
    case Rel::Ge:
      if (lo && *lo >= 0) return true;
      if (hi && *hi < 0) return false;
      return std::nullopt;
  }
  return std::nullopt;
}

// The relation that holds where `r` does not: Lt for Ge, Ne for Eq.
Rel negate(Rel r) {
  switch (r) {
    case Rel::Eq: return Rel::Ne;
    case Rel::Ne: return Rel::Eq;
    case Rel::Lt: return Rel::Ge;
    case Rel::Le: return Rel::Gt;
    case Rel::Gt: return Rel::Le;
    case Rel::Ge: return Rel::Lt;
  }
  return r;
}

bool holds(int64_t a, Rel r, int64_t b) {
  switch (r) {
    case Rel::Eq: return a == b;
    case Rel::Ne: return a != b;
    case Rel::Lt: return a < b;
    case Rel::Le: return a <= b;
    case Rel::Gt: return a > b;
    case Rel::Ge: return a >= b;
  }
  return false;
}

// As sympy prints a relation: "Eq(s0, 8)", "Ne(s0, s1)", "s0 < 8".
std::string relation_text(const SymInt& a, Rel r, const SymInt& b) {
  switch (r) {
    case Rel::Eq: return "Eq(" + a.to_string() + ", " + b.to_string() + ")";
    case Rel::Ne: return "Ne(" + a.to_string() + ", " + b.to_string() + ")";
    case Rel::Lt: return a.to_string() + " < " + b.to_string();
    case Rel::Le: return a.to_string() + " <= " + b.to_string();
    case Rel::Gt: return a.to_string() + " > " + b.to_string();
    case Rel::Ge: return a.to_string() + " >= " + b.to_string();
  }
  return "";
}

using Eval = std::function<std::optional<bool>(const SymbolValues&)>;

Eval relation_eval(const SymInt& a, Rel r, const SymInt& b) {
  return [a, r, b](const SymbolValues& v) -> std::optional<bool> {
    std::optional<int64_t> x = a.evaluate(v), y = b.evaluate(v);
    if (!x || !y) return std::nullopt;
    return holds(*x, r, *y);
  };
}

Eval constant_eval(bool b) {
  return [b](const SymbolValues&) -> std::optional<bool> { return b; };
}

// Whether a layout is dense with its dimensions in `order` (innermost first), at integer sizes.
bool dense(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
           const std::vector<int64_t>& order) {
  int64_t expected = 1;
  for (int64_t d : order) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

[[noreturn]] void unsupported(const std::string& what) {
  TORCH_CHECK(false, "aotgrad's symbolic sizes: ", what, " is not supported");
}

// A value of a symbolic trace: an integer expression, or a boolean that is either decided or
// known only by its hint (deciding it by the hint takes a guard).
class SizeNode final : public c10::SymNodeImpl {
 public:
  explicit SizeNode(SymInt v) : is_bool_(false), value_(std::move(v)) {}
  SizeNode(std::optional<bool> known, bool hint, std::string text, Eval eval)
      : is_bool_(true),
        known_(known),
        hint_(known.value_or(hint)),
        text_(std::move(text)),
        eval_(known ? constant_eval(*known) : std::move(eval)) {}

  static c10::SymNode of_int(SymInt v) { return c10::make_intrusive<SizeNode>(std::move(v)); }
  static c10::SymNode of_bool(std::optional<bool> known, bool hint, std::string text, Eval eval) {
    return c10::make_intrusive<SizeNode>(known, hint, std::move(text), std::move(eval));
  }
  static c10::SymNode of_constant(bool b) {
    return of_bool(b, b, b ? "True" : "False", constant_eval(b));
  }
  static c10::SymNode relation(const SymInt& a, Rel r, const SymInt& b) {
    std::optional<int64_t> ha = a.hint(), hb = b.hint();
    bool hint = ha && hb && holds(*ha, r, *hb);
    c10::SymNode n = of_bool(decide(a, r, b), hint, relation_text(a, r, b), relation_eval(a, r, b));
    // Its negation as sympy prints it (s0 <= 64 for Not(s0 > 64)).
    static_cast<SizeNode&>(*n).neg_text_ = relation_text(a, negate(r), b);
    // Eq(s0, 6) holding, or Ne(s0, 6) failing, fixes a size.
    if (a.is_concrete() != b.is_concrete()) {
      static_cast<SizeNode&>(*n).pins_if_true_ = r == Rel::Eq;
      static_cast<SizeNode&>(*n).pins_if_false_ = r == Rel::Ne;
    }
    return n;
  }
  static SizeNode& of(const c10::SymNode& n) {
    auto* s = dynamic_cast<SizeNode*>(n.get());
    TORCH_CHECK(s, "aotgrad's symbolic sizes: an operand of another kind of SymNode (", n->str(),
                ")");
    return *s;
  }
  const SymInt& value() const { return value_; }

  bool is_int() override { return !is_bool_; }
  bool is_bool() override { return is_bool_; }
  bool is_float() override { return false; }
  bool is_nested_int() const override { return false; }

  c10::SymNode add(const c10::SymNode& o) override { return of_int(value_ + of(o).value_); }
  c10::SymNode sub(const c10::SymNode& o) override { return of_int(value_ - of(o).value_); }
  c10::SymNode mul(const c10::SymNode& o) override { return of_int(value_ * of(o).value_); }
  c10::SymNode floordiv(const c10::SymNode& o) override {
    return of_int(aotgrad::floordiv(value_, of(o).value_));
  }
  c10::SymNode int_floordiv(const c10::SymNode& o) override { return floordiv(o); }
  c10::SymNode mod(const c10::SymNode& o) override {
    return of_int(aotgrad::mod(value_, of(o).value_));
  }
  c10::SymNode pow_by_natural(const c10::SymNode& o) override {
    const SymInt& e = of(o).value_;
    if (!e.is_concrete() || e.value() < 0 || e.value() > 8) unsupported("a power " + e.to_string());
    SymInt r = 1;
    for (int64_t i = 0; i < e.value(); ++i) r = r * value_;
    return of_int(r);
  }
  c10::SymNode neg() override { return of_int(-value_); }

  c10::SymNode eq(const c10::SymNode& o) override {
    return relation(value_, Rel::Eq, of(o).value_);
  }
  c10::SymNode ne(const c10::SymNode& o) override {
    return relation(value_, Rel::Ne, of(o).value_);
  }
  c10::SymNode lt(const c10::SymNode& o) override {
    return relation(value_, Rel::Lt, of(o).value_);
  }
  c10::SymNode le(const c10::SymNode& o) override {
    return relation(value_, Rel::Le, of(o).value_);
  }
  c10::SymNode gt(const c10::SymNode& o) override {
    return relation(value_, Rel::Gt, of(o).value_);
  }
  c10::SymNode ge(const c10::SymNode& o) override {
    return relation(value_, Rel::Ge, of(o).value_);
  }

  c10::SymNode sym_min(const c10::SymNode& o) override {
    return of_int(pick(value_, Rel::Le, of(o).value_) ? value_ : of(o).value_);
  }
  c10::SymNode sym_max(const c10::SymNode& o) override {
    return of_int(pick(value_, Rel::Ge, of(o).value_) ? value_ : of(o).value_);
  }

  c10::SymNode sym_and(const c10::SymNode& o) override {
    const SizeNode& b = of(o);
    if ((known_ && !*known_) || (b.known_ && !*b.known_)) return of_constant(false);
    if (known_) return o;  // true & b
    if (b.known_) return clone();
    Eval x = eval_, y = b.eval_;
    return of_bool(std::nullopt, hint_ && b.hint_, "(" + text_ + ") & (" + b.text_ + ")",
                   [x, y](const SymbolValues& v) -> std::optional<bool> {
                     std::optional<bool> p = x(v), q = y(v);
                     if ((p && !*p) || (q && !*q)) return false;
                     if (!p || !q) return std::nullopt;
                     return true;
                   });
  }
  c10::SymNode sym_or(const c10::SymNode& o) override {
    const SizeNode& b = of(o);
    if ((known_ && *known_) || (b.known_ && *b.known_)) return of_constant(true);
    if (known_) return o;  // false | b
    if (b.known_) return clone();
    Eval x = eval_, y = b.eval_;
    return of_bool(std::nullopt, hint_ || b.hint_, "(" + text_ + ") | (" + b.text_ + ")",
                   [x, y](const SymbolValues& v) -> std::optional<bool> {
                     std::optional<bool> p = x(v), q = y(v);
                     if ((p && *p) || (q && *q)) return true;
                     if (!p || !q) return std::nullopt;
                     return false;
                   });
  }
  c10::SymNode sym_not() override {
    if (known_) return of_constant(!*known_);
    Eval x = eval_;
    c10::SymNode n = of_bool(std::nullopt, !hint_, negated_text(),
                             [x](const SymbolValues& v) -> std::optional<bool> {
                               std::optional<bool> p = x(v);
                               if (!p) return std::nullopt;
                               return !*p;
                             });
    SizeNode& neg = static_cast<SizeNode&>(*n);
    neg.neg_text_ = text_;
    neg.pins_if_true_ = pins_if_false_;
    neg.pins_if_false_ = pins_if_true_;
    return n;
  }
  c10::SymNode sym_ite(const c10::SymNode& then_val, const c10::SymNode& else_val) override {
    return guard_bool(__FILE__, __LINE__) ? then_val : else_val;
  }

  c10::SymNode is_contiguous(at::ArrayRef<c10::SymNode> sizes,
                             at::ArrayRef<c10::SymNode> strides) override {
    std::vector<int64_t> order(sizes.size());
    std::iota(order.rbegin(), order.rend(), 0);  // innermost first
    return dense_in_order(sizes, strides, order, "is_contiguous");
  }
  c10::SymNode is_channels_last_contiguous_2d(at::ArrayRef<c10::SymNode> sizes,
                                              at::ArrayRef<c10::SymNode> strides) override {
    return channels_last(sizes, strides, 4, "is_channels_last_contiguous");
  }
  c10::SymNode is_channels_last_contiguous_3d(at::ArrayRef<c10::SymNode> sizes,
                                              at::ArrayRef<c10::SymNode> strides) override {
    return channels_last(sizes, strides, 5, "is_channels_last_3d_contiguous");
  }
  // Strides like channels-last: taken as dense in that order, which is stricter (a sparser
  // layout in that order answers false, and libtorch then keeps the contiguous format).
  c10::SymNode is_channels_last_strides_2d(at::ArrayRef<c10::SymNode> sizes,
                                           at::ArrayRef<c10::SymNode> strides) override {
    return channels_last(sizes, strides, 4, "is_channels_last_strides");
  }
  c10::SymNode is_channels_last_strides_3d(at::ArrayRef<c10::SymNode> sizes,
                                           at::ArrayRef<c10::SymNode> strides) override {
    return channels_last(sizes, strides, 5, "is_channels_last_3d_strides");
  }
  c10::SymNode is_non_overlapping_and_dense(at::ArrayRef<c10::SymNode> sizes,
                                            at::ArrayRef<c10::SymNode> strides) override {
    // Dense in the order of the strides' hints (innermost first).
    std::vector<int64_t> order(sizes.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return of(strides[a]).value_.hint_or(0) < of(strides[b]).value_.hint_or(0);
    });
    return dense_in_order(sizes, strides, order, "is_non_overlapping_and_dense");
  }

  c10::SymNode clone() override {
    return is_bool_ ? of_bool(known_, hint_, text_, eval_) : of_int(value_);
  }
  c10::SymNode sym_float() override { unsupported("a float of a size"); }
  c10::SymNode truediv(const c10::SymNode&) override { unsupported("true division of a size"); }
  c10::SymNode wrap_int(int64_t n) override { return of_int(n); }
  c10::SymNode wrap_bool(bool b) override { return of_constant(b); }
  c10::SymNode wrap_float(double) override { unsupported("a float"); }

  int64_t guard_int(const char*, int64_t) override {
    if (value_.is_concrete()) return value_.value();
    std::optional<int64_t> h = value_.hint();
    TORCH_CHECK(h, "aotgrad's symbolic sizes: ", value_.to_string(), " has no hint");
    ScopedShapeGuards::note({"Eq(" + value_.to_string() + ", " + std::to_string(*h) + ")",
                             relation_eval(value_, Rel::Eq, *h), /*pins=*/true});
    return *h;
  }
  bool guard_bool(const char*, int64_t) override {
    if (known_) return *known_;
    Eval x = eval_;
    const bool want = hint_;
    ScopedShapeGuards::note({hint_ ? text_ : negated_text(),
                             [x, want](const SymbolValues& v) -> std::optional<bool> {
                               std::optional<bool> p = x(v);
                               if (!p) return std::nullopt;
                               return *p == want;
                             },
                             hint_ ? pins_if_true_ : pins_if_false_});
    return hint_;
  }
  bool guard_or_false(const char*, int64_t) override { return known_.value_or(false); }
  bool guard_or_true(const char*, int64_t) override { return known_.value_or(true); }
  bool statically_known_true(const char*, int64_t) override { return known_.value_or(false); }
  double guard_float(const char*, int64_t) override { unsupported("a float"); }
  int64_t int_() override { return guard_int(__FILE__, __LINE__); }
  bool bool_() override { return guard_bool(__FILE__, __LINE__); }
  bool has_hint() override { return true; }
  std::string str() override { return is_bool_ ? text_ : value_.to_string(); }
  std::optional<int64_t> constant_int() override { return value_.maybe_value(); }
  std::optional<bool> constant_bool() override { return is_bool_ ? known_ : std::nullopt; }
  std::optional<int64_t> maybe_as_int() override {
    return is_bool_ ? std::nullopt : value_.maybe_value();
  }
  bool is_constant() override { return is_bool_ ? known_.has_value() : value_.is_concrete(); }
  bool is_symbolic() override { return !is_constant(); }

 private:
  std::string negated_text() const { return neg_text_.empty() ? "Not(" + text_ + ")" : neg_text_; }
  // Whether `a r b` holds: decided, or by the hints with a guard.
  static bool pick(const SymInt& a, Rel r, const SymInt& b) {
    c10::SymNode n = relation(a, r, b);
    return n->guard_bool(__FILE__, __LINE__);
  }
  // Dense in the channels-last order of a rank-4 (N, C, H, W: C innermost, then W, H, N) or rank-5
  // layout; false for another rank.
  c10::SymNode channels_last(at::ArrayRef<c10::SymNode> sizes, at::ArrayRef<c10::SymNode> strides,
                             size_t rank, const std::string& what) {
    if (sizes.size() != rank) return of_constant(false);
    return dense_in_order(
        sizes, strides,
        rank == 4 ? std::vector<int64_t>{1, 3, 2, 0} : std::vector<int64_t>{1, 4, 3, 2, 0}, what);
  }
  // Whether the layout is dense with its dimensions in `order` (innermost first): each stride the
  // product of the inner sizes, a size-1 dimension's stride free.
  c10::SymNode dense_in_order(at::ArrayRef<c10::SymNode> sizes, at::ArrayRef<c10::SymNode> strides,
                              const std::vector<int64_t>& order, const std::string& what) {
    // Decided where the range settles each dimension; else by the hints.
    std::optional<bool> known = true;
    SymInt expected = 1;
    for (int64_t d : order) {
      const SymInt& size = of(sizes[d]).value_;
      const SymInt& stride = of(strides[d]).value_;
      std::optional<bool> one = decide(size, Rel::Eq, 1);
      if (one == true) continue;
      std::optional<bool> fits = decide(stride, Rel::Eq, expected);
      if (fits == true) {
        expected = expected * size;
        continue;
      }
      if (known == true && one == false && fits == false) known = false;
      if (known == true) known.reset();
      expected = expected * size;
    }
    bool hint = true;
    int64_t expected_hint = 1;
    for (int64_t d : order) {
      const int64_t size = of(sizes[d]).value_.hint_or(0);
      if (size == 1) continue;
      hint = hint && of(strides[d]).value_.hint_or(-1) == expected_hint;
      expected_hint *= size;
    }
    std::string text = what + "(";
    for (size_t d = 0; d < sizes.size(); ++d) text += (d ? ", " : "") + of(sizes[d]).str();
    std::vector<SymInt> sz, st;
    for (size_t d = 0; d < sizes.size(); ++d) {
      sz.push_back(of(sizes[d]).value_);
      st.push_back(of(strides[d]).value_);
    }
    return of_bool(known, hint, text + ")",
                   [sz, st, order](const SymbolValues& v) -> std::optional<bool> {
                     std::vector<int64_t> a, b;
                     for (size_t d = 0; d < sz.size(); ++d) {
                       std::optional<int64_t> x = sz[d].evaluate(v), y = st[d].evaluate(v);
                       if (!x || !y) return std::nullopt;
                       a.push_back(*x);
                       b.push_back(*y);
                     }
                     return dense(a, b, order);
                   });
  }

  bool is_bool_;
  SymInt value_;
  std::optional<bool> known_;
  bool hint_ = false;
  std::string text_;
  Eval eval_;  // the boolean at other values of the symbols
  bool pins_if_true_ = false, pins_if_false_ = false;
  std::string neg_text_;  // a relation's negation ("s0 <= 64"); empty: Not(text_)
};

}  // namespace

c10::SymInt to_c10_symint(const SymInt& s) {
  if (s.is_concrete()) return c10::SymInt(s.value());
  return c10::SymInt(SizeNode::of_int(s));
}

std::optional<SymInt> from_c10_symint(const c10::SymInt& s) {
  if (auto v = s.maybe_as_int()) return SymInt(*v);
  const auto* n = dynamic_cast<const SizeNode*>(s.toSymNodeImplUnowned());
  if (!n) return std::nullopt;
  return n->value();
}

namespace {

// A meta function's assumption (meta::holds_by_hints) as a guard, where the symbols' range does
// not settle it.
void note_assumption(const SymInt& a, meta::SizeAssumption rel, const SymInt& b) {
  const Rel r = rel == meta::SizeAssumption::Equal ? Rel::Eq : Rel::Ge;
  if (decide(a, r, b) == true) return;
  ScopedShapeGuards::note({relation_text(a, r, b), relation_eval(a, r, b),
                           r == Rel::Eq && a.is_concrete() != b.is_concrete()});
}

}  // namespace

bool has_symbolic_sizes(const TensorMeta& m) {
  for (const SymInt& s : m.sizes)
    if (!s.is_concrete()) return true;
  for (const SymInt& s : m.strides)
    if (!s.is_concrete()) return true;
  return !m.storage_offset.is_concrete();
}

ScopedShapeGuards::ScopedShapeGuards() : outer_(g_guards) {
  g_guards = this;
  meta_sink_ = std::make_unique<meta::ScopedSizeAssumptions>(&note_assumption);
}
ScopedShapeGuards::~ScopedShapeGuards() {
  meta_sink_.reset();
  g_guards = outer_;
}

void ScopedShapeGuards::note(ShapeGuard guard) {
  if (!g_guards) return;
  auto& t = g_guards->taken_;
  for (const ShapeGuard& g : t)
    if (g.text == guard.text) return;
  t.push_back(std::move(guard));
}

}  // namespace aotgrad
