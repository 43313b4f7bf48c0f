// aotgrad: aotgrad's SymInt as libtorch's c10::SymNodeImpl -- the sizes of a symbolic C++ trace.
#pragma once

#include <c10/core/SymInt.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aotgrad/ir/symint.h"
#include "aotgrad/ir/tensor_meta.h"

namespace aotgrad {
namespace meta {
class ScopedSizeAssumptions;
}

/// The least value of a size symbol in a symbolic trace: as PyTorch specializes 0 and 1, a symbol
/// stands for sizes 2 and up (a dynamic capture guards `2 <= s0`).
constexpr int64_t kLeastSymbolicSize = 2;

/// `s` as libtorch's SymInt: a plain integer when concrete, else a SymNodeImpl of aotgrad's that
/// carries the expression. libtorch's size arithmetic on it (`sym_size(0) * 2`, a composite
/// kernel's `numel / size`) gives aotgrad expressions; its comparisons are decided by
/// SymInt::lower_bound with every symbol at least kLeastSymbolicSize where they can be, and
/// otherwise by the symbols' hints, which takes a guard (ScopedShapeGuards).
c10::SymInt to_c10_symint(const SymInt& s);
/// The SymInt `s` stands for: its integer, or the expression of aotgrad's node. Nullopt for a
/// SymNodeImpl of someone else's (Python's).
std::optional<SymInt> from_c10_symint(const c10::SymInt& s);

/// Whether a size, stride or the storage offset of `m` is symbolic.
bool has_symbolic_sizes(const TensorMeta& m);

/// The symbols' values by name ("s0"); nullopt for a symbol without one.
using SymbolValues = std::function<std::optional<int64_t>(const std::string&)>;

/// A guard a symbolic trace took: a decision about its sizes that their range did not settle,
/// made by the hints, as PyTorch's ShapeEnv records it. The graph holds where every guard does.
struct ShapeGuard {
  /// As it held at the hints: "s0 > 4", "Eq(s0, 6)" (a size read as an integer), "Ne(s0, s1)".
  std::string text;
  /// Whether it holds at the symbols' values (nullopt: a symbol has no value).
  std::function<std::optional<bool>(const SymbolValues&)> holds;
  /// It fixes a size to a constant (Eq(s0, 6)): the graph serves one size, not a dynamic one.
  bool pins = false;
};

/// While alive, the guards taken on aotgrad's symbolic sizes on this thread are recorded: each
/// decision about the sizes that the symbols' range does not settle, as PyTorch prints guards
/// ("Eq(s0, s1)", "s0 > 4"), with the hints' answer -- libtorch's (a comparison, a concrete value,
/// a min) and the meta functions' (the equalities they assume by hints, meta::holds_by_hints).
/// A trace that took one holds only at sizes that give the same answers.
class ScopedShapeGuards {
 public:
  ScopedShapeGuards();
  ~ScopedShapeGuards();
  ScopedShapeGuards(const ScopedShapeGuards&) = delete;
  ScopedShapeGuards& operator=(const ScopedShapeGuards&) = delete;
  /// The guards taken so far, each once.
  const std::vector<ShapeGuard>& taken() const { return taken_; }
  /// Records `guard` in the innermost scope of this thread (none: dropped).
  static void note(ShapeGuard guard);

 private:
  std::vector<ShapeGuard> taken_;
  ScopedShapeGuards* outer_;
  std::unique_ptr<meta::ScopedSizeAssumptions> meta_sink_;
};

}  // namespace aotgrad
