// aotgrad: SymInt arithmetic in a polynomial canonical form.
#include "aotgrad/ir/symint.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>
#include <map>

#include "aotgrad/ir/error.h"
#include "aotgrad/support/quote.h"

namespace aotgrad {

/// An atom: a named symbol, or an opaque floordiv/mod of two SymInts. Atoms compare by `key`.
struct SymAtom {
  enum class Kind { Symbol, FloorDiv, Mod } kind;
  std::string key;              // "s0", "(s0//2)", "(s0 % 3)"
  std::optional<int64_t> hint;  // symbols only
  SymInt lhs, rhs;              // floordiv/mod only
};

using AtomPtr = std::shared_ptr<const SymAtom>;
using Monomial = std::vector<AtomPtr>;  // sorted by key, with repetition for powers

/// sum(coeff * monomial) + constant; terms sorted by monomial key, no zero coefficients, and at
/// least one term (a bare constant is a concrete SymInt instead).
struct SymExpr {
  std::vector<std::pair<Monomial, int64_t>> terms;
  int64_t constant = 0;
};

namespace {

// Checked int64 arithmetic: sizes come from user text, and signed overflow is undefined.
int64_t checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw Error("integer overflow in size arithmetic");
  return r;
}
int64_t checked_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) throw Error("integer overflow in size arithmetic");
  return r;
}
int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw Error("integer overflow in size arithmetic");
  return r;
}

int64_t py_floordiv(int64_t a, int64_t b) {
  if (b == -1) return checked_sub(0, a);  // INT64_MIN / -1 traps
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t py_mod(int64_t a, int64_t b) {
  if (b == -1) return 0;  // INT64_MIN % -1 traps
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

int compare_monomials(const Monomial& a, const Monomial& b) {
  // Higher degree first, then lexicographic keys, as sympy prints: "s0*s1 + s0".
  if (a.size() != b.size()) return a.size() > b.size() ? -1 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    int c = a[i]->key.compare(b[i]->key);
    if (c != 0) return c;
  }
  return 0;
}

// "s0*s1", with repeated atoms as powers as sympy prints them: "s0**2*s1".
std::string monomial_text(const Monomial& m) {
  std::string s;
  for (size_t i = 0; i < m.size();) {
    size_t j = i + 1;
    while (j < m.size() && m[j]->key == m[i]->key) ++j;
    if (i) s += "*";
    s += m[i]->key;
    if (j - i > 1) s += "**" + std::to_string(j - i);
    i = j;
  }
  return s;
}

}  // namespace

struct SymExprOps {
  using Poly = SymExpr;

  static Poly as_poly(const SymInt& v) {
    if (v.is_concrete()) return Poly{{}, v.value_};
    return *v.expr_;
  }

  static SymInt from_poly(Poly p) {
    if (p.terms.empty()) return SymInt(p.constant);
    SymInt r;
    r.expr_ = std::make_shared<const SymExpr>(std::move(p));
    return r;
  }

  static SymInt from_atom(AtomPtr atom) {
    Poly p;
    p.terms.push_back({Monomial{std::move(atom)}, 1});
    return from_poly(std::move(p));
  }

  static Poly add(const Poly& a, const Poly& b, int64_t sign) {
    Poly r;
    r.constant =
        sign > 0 ? checked_add(a.constant, b.constant) : checked_sub(a.constant, b.constant);
    size_t i = 0, j = 0;
    while (i < a.terms.size() || j < b.terms.size()) {
      int c = i == a.terms.size()   ? 1
              : j == b.terms.size() ? -1
                                    : compare_monomials(a.terms[i].first, b.terms[j].first);
      if (c < 0) {
        r.terms.push_back(a.terms[i++]);
      } else if (c > 0) {
        r.terms.push_back({b.terms[j].first, checked_mul(sign, b.terms[j].second)});
        ++j;
      } else {
        int64_t coeff = sign > 0 ? checked_add(a.terms[i].second, b.terms[j].second)
                                 : checked_sub(a.terms[i].second, b.terms[j].second);
        if (coeff != 0) r.terms.push_back({a.terms[i].first, coeff});
        ++i, ++j;
      }
    }
    return r;
  }

  static Poly mul(const Poly& a, const Poly& b) {
    std::vector<std::pair<Monomial, int64_t>> acc;
    auto add_term = [&](Monomial m, int64_t c) {
      if (c == 0) return;
      acc.push_back({std::move(m), c});
    };
    for (auto& [ma, ca] : a.terms) {
      for (auto& [mb, cb] : b.terms) {
        Monomial m = ma;
        m.insert(m.end(), mb.begin(), mb.end());
        std::sort(m.begin(), m.end(),
                  [](const AtomPtr& x, const AtomPtr& y) { return x->key < y->key; });
        add_term(std::move(m), checked_mul(ca, cb));
      }
      add_term(ma, checked_mul(ca, b.constant));
    }
    for (auto& [mb, cb] : b.terms) add_term(mb, checked_mul(cb, a.constant));
    std::sort(acc.begin(), acc.end(),
              [](const auto& x, const auto& y) { return compare_monomials(x.first, y.first) < 0; });
    Poly r;
    r.constant = checked_mul(a.constant, b.constant);
    for (auto& t : acc) {
      if (!r.terms.empty() && compare_monomials(r.terms.back().first, t.first) == 0) {
        r.terms.back().second = checked_add(r.terms.back().second, t.second);
        if (r.terms.back().second == 0) r.terms.pop_back();
      } else {
        r.terms.push_back(std::move(t));
      }
    }
    return r;
  }

  // The value of `e` with each symbol's value from `value_of` (nullopt: unknown); floordiv and
  // mod atoms evaluate their operands the same way. Nullopt on an unknown symbol, a zero divisor
  // or overflow.
  static std::optional<int64_t> eval(const SymExpr& e, const SymbolValueFn& value_of) {
    int64_t total = e.constant;
    for (auto& [m, c] : e.terms) {
      int64_t prod = c;
      for (auto& atom : m) {
        std::optional<int64_t> h;
        switch (atom->kind) {
          case SymAtom::Kind::Symbol: h = value_of(*atom); break;
          case SymAtom::Kind::FloorDiv: {
            auto l = atom->lhs.evaluate_with(value_of), r = atom->rhs.evaluate_with(value_of);
            if (l && r && *r != 0) h = py_floordiv(*l, *r);
            break;
          }
          case SymAtom::Kind::Mod: {
            auto l = atom->lhs.evaluate_with(value_of), r = atom->rhs.evaluate_with(value_of);
            if (l && r && *r != 0) h = py_mod(*l, *r);
            break;
          }
        }
        if (!h || __builtin_mul_overflow(prod, *h, &prod)) return std::nullopt;
      }
      if (__builtin_add_overflow(total, prod, &total)) return std::nullopt;
    }
    return total;
  }

  static void symbols(const SymExpr& e, std::vector<std::string>& out) {
    for (auto& [m, c] : e.terms)
      for (auto& atom : m) {
        if (atom->kind == SymAtom::Kind::Symbol) {
          if (std::find(out.begin(), out.end(), atom->key) == out.end()) out.push_back(atom->key);
        } else {
          atom->lhs.collect_symbols(out);
          atom->rhs.collect_symbols(out);
        }
      }
  }

  // `e` with every symbol replaced by `replace(atom)` (the atom itself when that gives nullopt).
  static SymInt substitute(const SymExpr& e,
                           const std::function<std::optional<SymInt>(const SymAtom&)>& replace) {
    SymInt total(e.constant);
    for (auto& [m, c] : e.terms) {
      SymInt prod(c);
      for (auto& atom : m) {
        switch (atom->kind) {
          case SymAtom::Kind::Symbol: {
            std::optional<SymInt> r = replace(*atom);
            prod = prod * (r ? *r : from_atom(atom));
            break;
          }
          case SymAtom::Kind::FloorDiv:
            prod = prod * floordiv(sub(atom->lhs, replace), sub(atom->rhs, replace));
            break;
          case SymAtom::Kind::Mod:
            prod = prod * mod(sub(atom->lhs, replace), sub(atom->rhs, replace));
            break;
        }
      }
      total = total + prod;
    }
    return total;
  }
  static SymInt sub(const SymInt& v,
                    const std::function<std::optional<SymInt>(const SymAtom&)>& replace) {
    return v.is_concrete() ? v : substitute(*v.expr_, replace);
  }
};

namespace {
thread_local const SymbolHints* g_parse_hints = nullptr;
}  // namespace

ScopedSymbolHints::ScopedSymbolHints(const SymbolHints* hints) : saved_(g_parse_hints) {
  g_parse_hints = hints;
}
ScopedSymbolHints::~ScopedSymbolHints() { g_parse_hints = saved_; }
const SymbolHints* ScopedSymbolHints::current() { return g_parse_hints; }

SymInt SymInt::symbol(const std::string& name, std::optional<int64_t> hint) {
  auto atom = std::make_shared<SymAtom>();
  atom->kind = SymAtom::Kind::Symbol;
  atom->key = name;
  atom->hint = hint;
  return SymExprOps::from_atom(std::move(atom));
}

int64_t SymInt::value() const {
  AOTGRAD_CHECK(is_concrete(), "expected a concrete integer, got symbolic '", to_string(), "'");
  return value_;
}

std::optional<int64_t> SymInt::hint() const {
  if (is_concrete()) return value_;
  return SymExprOps::eval(*expr_, [](const SymAtom& a) { return a.hint; });
}

std::optional<int64_t> SymInt::evaluate_with(const SymbolValueFn& value_of) const {
  if (is_concrete()) return value_;
  return SymExprOps::eval(*expr_, value_of);
}

std::optional<int64_t> SymInt::evaluate(
    const std::function<std::optional<int64_t>(const std::string&)>& value_of) const {
  return evaluate_with([&](const SymAtom& a) { return value_of(a.key); });
}

const std::string* SymInt::symbol_name() const {
  if (is_concrete() || expr_->constant != 0 || expr_->terms.size() != 1) return nullptr;
  const auto& [m, c] = expr_->terms[0];
  if (c != 1 || m.size() != 1 || m[0]->kind != SymAtom::Kind::Symbol) return nullptr;
  return &m[0]->key;
}

std::optional<std::pair<std::string, int64_t>> SymInt::scaled_symbol() const {
  if (is_concrete() || expr_->constant != 0 || expr_->terms.size() != 1) return std::nullopt;
  const auto& [m, c] = expr_->terms[0];
  if (c < 1 || m.size() != 1 || m[0]->kind != SymAtom::Kind::Symbol) return std::nullopt;
  return std::make_pair(m[0]->key, c);
}

std::optional<SymInt::MonomialForm> SymInt::monomial_form() const {
  if (is_concrete() || expr_->terms.size() != 1) return std::nullopt;
  const auto& [m, c] = expr_->terms[0];
  MonomialForm f;
  f.c = c;
  f.k = expr_->constant;
  for (const AtomPtr& a : m) {
    if (a->kind != SymAtom::Kind::Symbol) return std::nullopt;
    if (!f.powers.empty() && f.powers.back().first == a->key)
      ++f.powers.back().second;
    else
      f.powers.emplace_back(a->key, 1);
  }
  return f;
}

namespace {

// The least value of an atom when symbols are at least `least` (floordiv / mod of a value bounded
// below by 0 and a positive constant are at least 0), or nullopt.
std::optional<int64_t> atom_lower_bound(const SymAtom& a, int64_t least) {
  if (a.kind == SymAtom::Kind::Symbol) return least;
  if (!a.rhs.is_concrete() || a.rhs.value() <= 0) return std::nullopt;
  if (a.kind == SymAtom::Kind::Mod) return 0;
  std::optional<int64_t> l = a.lhs.lower_bound(least);
  if (!l || *l < 0) return std::nullopt;
  return py_floordiv(*l, a.rhs.value());
}

}  // namespace

std::optional<int64_t> SymInt::lower_bound(int64_t least_symbol) const {
  if (is_concrete()) return value_;
  int64_t total = expr_->constant;
  for (const auto& [m, c] : expr_->terms) {
    if (c < 0) return std::nullopt;  // unbounded below: atoms have no upper bound
    int64_t prod = c;
    for (const AtomPtr& a : m) {
      std::optional<int64_t> l = atom_lower_bound(*a, least_symbol);
      if (!l || __builtin_mul_overflow(prod, *l, &prod)) return std::nullopt;
    }
    if (__builtin_add_overflow(total, prod, &total)) return std::nullopt;
  }
  return total;
}

void SymInt::collect_symbols(std::vector<std::string>& out) const {
  if (!is_concrete()) SymExprOps::symbols(*expr_, out);
}

SymInt SymInt::with_hints(
    const std::function<std::optional<int64_t>(const std::string&)>& hint_of) const {
  if (is_concrete()) return *this;
  return SymExprOps::substitute(*expr_, [&](const SymAtom& a) -> std::optional<SymInt> {
    std::optional<int64_t> h = hint_of(a.key);
    if (!h || h == a.hint) return std::nullopt;
    return SymInt::symbol(a.key, h);
  });
}

SymInt operator+(const SymInt& a, const SymInt& b) {
  if (a.is_concrete() && b.is_concrete()) return SymInt(checked_add(a.value_, b.value_));
  return SymExprOps::from_poly(SymExprOps::add(SymExprOps::as_poly(a), SymExprOps::as_poly(b), 1));
}
SymInt operator-(const SymInt& a, const SymInt& b) {
  if (a.is_concrete() && b.is_concrete()) return SymInt(checked_sub(a.value_, b.value_));
  return SymExprOps::from_poly(SymExprOps::add(SymExprOps::as_poly(a), SymExprOps::as_poly(b), -1));
}
SymInt operator*(const SymInt& a, const SymInt& b) {
  if (a.is_concrete() && b.is_concrete()) return SymInt(checked_mul(a.value_, b.value_));
  return SymExprOps::from_poly(SymExprOps::mul(SymExprOps::as_poly(a), SymExprOps::as_poly(b)));
}

namespace {
SymInt opaque(SymAtom::Kind kind, const SymInt& a, const SymInt& b) {
  auto atom = std::make_shared<SymAtom>();
  atom->kind = kind;
  atom->lhs = a;
  atom->rhs = b;
  // Operands that are sums or products are parenthesized so the key parses back: ((s1 - 1)//2).
  auto operand = [](const SymInt& v) {
    std::string s = v.to_string();
    bool simple = v.is_concrete() ? s[0] != '-' : s.find_first_of(" *") == std::string::npos;
    return simple ? s : "(" + s + ")";
  };
  atom->key =
      "(" + operand(a) + (kind == SymAtom::Kind::FloorDiv ? "//" : " % ") + operand(b) + ")";
  return SymExprOps::from_atom(std::move(atom));
}
}  // namespace

SymInt floordiv(const SymInt& a, const SymInt& b) {
  AOTGRAD_CHECK(!(b == 0), "integer division by zero");
  if (a.is_concrete() && b.is_concrete()) return SymInt(py_floordiv(a.value_, b.value_));
  if (b == 1) return a;
  if (b == -1) return -a;
  if (a == b) return SymInt(1);
  // (c*m)/k where k divides every coefficient and the constant: divide exactly.
  if (b.is_concrete() && !a.is_concrete()) {
    int64_t k = b.value_;
    const SymExpr& e = *a.expr_;
    bool divisible = e.constant % k == 0;
    for (auto& t : e.terms) divisible = divisible && t.second % k == 0;
    if (divisible) {
      SymExpr r = e;
      r.constant /= k;
      for (auto& t : r.terms) t.second /= k;
      return SymExprOps::from_poly(std::move(r));
    }
  }
  // A polynomial over a monomial divisor c*m that divides every term exactly (s0*s1*64 // s0*s1
  // = 64, as sympy simplifies): the quotient polynomial.
  if (!b.is_concrete() && !a.is_concrete() && b.expr_->constant == 0 &&
      b.expr_->terms.size() == 1 && a.expr_->constant == 0) {
    const auto& [bm, bc] = b.expr_->terms[0];
    SymInt q(0);
    bool exact = true;
    for (auto& [am, ac] : a.expr_->terms) {
      if (ac % bc != 0) {
        exact = false;
        break;
      }
      // am minus bm as multisets of atoms (both sorted by key).
      Monomial rest;
      size_t j = 0;
      for (const AtomPtr& atom : am) {
        if (j < bm.size() && bm[j]->key == atom->key)
          ++j;
        else
          rest.push_back(atom);
      }
      if (j != bm.size()) {
        exact = false;
        break;
      }
      SymInt term(ac / bc);
      for (const AtomPtr& atom : rest) term = term * SymExprOps::from_atom(atom);
      q = q + term;
    }
    if (exact) return q;
  }
  return opaque(SymAtom::Kind::FloorDiv, a, b);
}

SymInt mod(const SymInt& a, const SymInt& b) {
  AOTGRAD_CHECK(!(b == 0), "integer modulo by zero");
  if (a.is_concrete() && b.is_concrete()) return SymInt(py_mod(a.value_, b.value_));
  if (b == 1 || b == -1 || a == b) return SymInt(0);
  // A divisor that divides exactly (8*s0*s1 % 8*s1, as sympy simplifies): 0.
  if (floordiv(a, b) * b == a) return SymInt(0);
  return opaque(SymAtom::Kind::Mod, a, b);
}

bool SymInt::operator==(const SymInt& o) const {
  if (is_concrete() || o.is_concrete())
    return is_concrete() && o.is_concrete() && value_ == o.value_;
  if (expr_ == o.expr_) return true;
  const SymExpr &a = *expr_, &b = *o.expr_;
  if (a.constant != b.constant || a.terms.size() != b.terms.size()) return false;
  for (size_t i = 0; i < a.terms.size(); ++i)
    if (a.terms[i].second != b.terms[i].second ||
        compare_monomials(a.terms[i].first, b.terms[i].first) != 0)
      return false;
  return true;
}

void SymInt::append_to(std::string& out) const {
  if (is_concrete()) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, value_);
    out.append(buf, static_cast<size_t>(r.ptr - buf));
    return;
  }
  bool first = true;
  for (auto& [m, c] : expr_->terms) {
    if (!first)
      out += c < 0 ? " - " : " + ";
    else if (c < 0)
      out += "-";
    uint64_t ac = c < 0 ? 0 - static_cast<uint64_t>(c) : static_cast<uint64_t>(c);
    if (ac != 1) out += std::to_string(ac) + "*";
    out += monomial_text(m);
    first = false;
  }
  if (expr_->constant != 0) {
    out += expr_->constant < 0 ? " - " : " + ";
    int64_t k = expr_->constant;
    out += std::to_string(k < 0 ? 0 - static_cast<uint64_t>(k) : static_cast<uint64_t>(k));
  }
}

std::string SymInt::to_string() const {
  std::string s;
  append_to(s);
  return s;
}

SymInt product(const SymIntVector& v) {
  SymInt p(1);
  for (auto& x : v) p = p * x;
  return p;
}

std::string to_string(const SymIntVector& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    v[i].append_to(s);
  }
  return s + "]";
}

namespace {

// Recursive-descent parser: expr := term (('+'|'-') term)*; term := unary (('*'|'//'|'%') unary)*;
// unary := '-' unary | power; power := atom ['**' unary]; atom := INT | NAME | '(' expr ')'.
// Nesting is limited so that hostile text cannot overflow the stack.
class ExprParser {
 public:
  explicit ExprParser(const std::string& s) : s_(s) {}
  std::optional<SymInt> parse(std::string* error) {
    try {
      SymInt v = expr();
      skip_ws();
      if (pos_ != s_.size())
        fail("unexpected '" + escape_bytes(std::string_view(&s_[pos_], 1)) + "'");
      return v;
    } catch (const Error& e) {
      if (error) *error = e.message();
      return std::nullopt;
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    throw Error("in size expression '" + escape_bytes(s_) + "': " + what);
  }
  void skip_ws() {
    while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
  }
  bool eat(const char* tok) {
    skip_ws();
    size_t n = std::char_traits<char>::length(tok);
    if (s_.compare(pos_, n, tok) == 0) {
      pos_ += n;
      return true;
    }
    return false;
  }
  SymInt expr() {
    SymInt v = term();
    while (true) {
      if (eat("+"))
        v = v + term();
      else if (eat("-"))
        v = v - term();
      else
        return v;
    }
  }
  SymInt term() {
    SymInt v = unary();
    while (true) {
      if (eat("//"))
        v = floordiv(v, unary());
      else if (s_.compare(pos_, 2, "**") == 0)
        fail("unexpected '**'");
      else if (eat("*"))
        v = v * unary();
      else if (eat("%"))
        v = mod(v, unary());
      else
        return v;
    }
  }
  SymInt unary() {
    if (++depth_ > kMaxDepth) fail("expression nests too deeply");
    SymInt v = eat("-") ? -unary() : power();
    --depth_;
    return v;
  }
  SymInt power() {
    SymInt base = atom();
    if (!eat("**")) return base;
    SymInt e = unary();
    if (!e.is_concrete() || e.value() < 0 || e.value() > 64)
      fail("expected a constant exponent between 0 and 64 after '**'");
    SymInt r = 1;
    for (int64_t i = 0; i < e.value(); ++i) r = r * base;
    return r;
  }
  SymInt atom() {
    skip_ws();
    if (eat("(")) {
      SymInt v = expr();
      if (!eat(")")) fail("expected ')'");
      return v;
    }
    if (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      int64_t v = 0;
      size_t digits = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        if (++digits > 18) fail("integer too large");
        v = v * 10 + (s_[pos_++] - '0');
      }
      return SymInt(v);
    }
    if (pos_ < s_.size() &&
        (std::isalpha(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) {
      size_t start = pos_;
      while (pos_ < s_.size() &&
             (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
        ++pos_;
      std::string name = s_.substr(start, pos_ - start);
      std::optional<int64_t> hint;
      if (const SymbolHints* hints = ScopedSymbolHints::current()) {
        auto it = hints->find(name);
        if (it != hints->end()) hint = it->second;
      }
      return SymInt::symbol(name, hint);
    }
    fail(pos_ < s_.size() ? "unexpected '" + escape_bytes(std::string_view(&s_[pos_], 1)) + "'"
                          : "unexpected end");
  }

  static constexpr int kMaxDepth = 200;
  const std::string& s_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

std::optional<SymInt> parse_sym_expr(const std::string& text, std::string* error) {
  return ExprParser(text).parse(error);
}

}  // namespace aotgrad
