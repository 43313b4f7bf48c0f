// aotgrad: SymInt, a concrete integer or an integer expression over named size symbols.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace aotgrad {

struct SymExpr;
struct SymAtom;

/// A symbol's value (nullopt: unknown), given its atom.
using SymbolValueFn = std::function<std::optional<int64_t>(const SymAtom&)>;

/// A concrete int64 or a polynomial (in canonical form) over size symbols such as `s0`, with
/// floordiv/mod kept as opaque atoms. Arithmetic on two concrete values folds to a concrete value,
/// so code written over SymInt costs an int64 operation in the static case. A symbol may carry a
/// hint (the value it had when traced); expressions evaluate their hint from their symbols'.
class SymInt {
 public:
  SymInt(int64_t v = 0) : value_(v) {}  // NOLINT: implicit on purpose, like c10::SymInt
  /// A fresh symbol `name` (for example "s0") with an optional hint.
  static SymInt symbol(const std::string& name, std::optional<int64_t> hint = std::nullopt);

  bool is_concrete() const { return expr_ == nullptr; }
  /// The concrete value; throws Error if symbolic.
  int64_t value() const;
  std::optional<int64_t> maybe_value() const {
    return is_concrete() ? std::optional<int64_t>(value_) : std::nullopt;
  }
  /// The concrete value, or the value computed from the symbols' hints (nullopt if one has none).
  std::optional<int64_t> hint() const;
  int64_t hint_or(int64_t fallback) const { return hint().value_or(fallback); }
  /// The value with each symbol's value from `value_of` (by name); nullopt when a symbol has
  /// none (or a divisor is zero).
  std::optional<int64_t> evaluate(
      const std::function<std::optional<int64_t>(const std::string&)>& value_of) const;
  std::optional<int64_t> evaluate_with(const SymbolValueFn& value_of) const;
  /// The name when this is a bare symbol ("s0"), else nullptr.
  const std::string* symbol_name() const;
  /// {name, c} when this is `c*name` for a symbol `name` and c >= 1 (no constant, no other
  /// term): "s0" gives {s0, 1}, "4*s0" {s0, 4}; else nullopt.
  std::optional<std::pair<std::string, int64_t>> scaled_symbol() const;
  /// `c * s_a**p_a * s_b**p_b ... + k` over bare symbols, c != 0 (no floordiv or mod atom).
  struct MonomialForm {
    int64_t c = 1;
    std::vector<std::pair<std::string, int>> powers;  // by symbol name, each once
    int64_t k = 0;
  };
  /// This symbolic value as a MonomialForm, or nullopt (concrete, several terms, an atom).
  std::optional<MonomialForm> monomial_form() const;
  /// The least value this can take when every symbol is at least `least_symbol` (>= 0), or
  /// nullopt when that bounds it from below by no known value: the range reasoning that decides a
  /// size comparison without a guard (s0*s1 + 1 > 0 for sizes, 2*s0 != 1).
  std::optional<int64_t> lower_bound(int64_t least_symbol) const;
  /// Appends the names of the symbols this expression reads (each once) to `out`.
  void collect_symbols(std::vector<std::string>& out) const;
  /// The same expression with its symbols' hints replaced where `hint_of` gives one.
  SymInt with_hints(const std::function<std::optional<int64_t>(const std::string&)>& hint_of) const;

  friend SymInt operator+(const SymInt& a, const SymInt& b);
  friend SymInt operator-(const SymInt& a, const SymInt& b);
  friend SymInt operator*(const SymInt& a, const SymInt& b);
  SymInt operator-() const { return SymInt(0) - *this; }
  SymInt& operator+=(const SymInt& o) { return *this = *this + o; }
  SymInt& operator*=(const SymInt& o) { return *this = *this * o; }
  /// Python's floor division and modulo (rounding toward negative infinity).
  friend SymInt floordiv(const SymInt& a, const SymInt& b);
  friend SymInt mod(const SymInt& a, const SymInt& b);

  /// Structural equality of canonical forms: s0*2 == 2*s0, but s0 != 3 even if s0's hint is 3.
  bool operator==(const SymInt& o) const;
  bool operator!=(const SymInt& o) const { return !(*this == o); }
  bool operator==(int64_t v) const { return is_concrete() && value_ == v; }

  /// True when provably equal (structurally); used by shape checks that must hold for all values.
  bool known_eq(const SymInt& o) const { return *this == o; }
  /// Sympy-like text: "8", "s0", "2*s0", "s0*s1 + 1", "(s0//2)".
  std::string to_string() const;
  /// Appends to_string() to `out` (fast path for concrete values).
  void append_to(std::string& out) const;

  const std::shared_ptr<const SymExpr>& expr() const { return expr_; }

 private:
  int64_t value_ = 0;                    // valid when expr_ is null
  std::shared_ptr<const SymExpr> expr_;  // canonical polynomial, never a bare constant
  friend struct SymExprOps;
};

SymInt floordiv(const SymInt& a, const SymInt& b);
SymInt mod(const SymInt& a, const SymInt& b);

using SymIntVector = std::vector<SymInt>;

/// Product of all elements (1 for an empty list).
SymInt product(const SymIntVector& v);
std::string to_string(const SymIntVector& v);  // "[4, s0]"

/// Symbol hints by name (s0 -> 8): the sizes a symbolic graph was traced at.
using SymbolHints = std::map<std::string, int64_t>;

/// While alive, symbols that parse_sym_expr makes on this thread take their hints from `hints`
/// (the graph parser installs the hints of its text and options).
class ScopedSymbolHints {
 public:
  explicit ScopedSymbolHints(const SymbolHints* hints);
  ~ScopedSymbolHints();
  ScopedSymbolHints(const ScopedSymbolHints&) = delete;
  ScopedSymbolHints& operator=(const ScopedSymbolHints&) = delete;
  static const SymbolHints* current();

 private:
  const SymbolHints* saved_;
};

/// Parses a size expression such as "2*s0 + 1", "s0//2", "s1 % 3" (symbols get their hint from
/// the current ScopedSymbolHints, else none).
/// Returns nullopt on malformed input; `error` (if given) says what was expected.
std::optional<SymInt> parse_sym_expr(const std::string& text, std::string* error = nullptr);

}  // namespace aotgrad
