// aotgrad: one symbolic graph from traces of a program at several sizes (dynamic capture).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aotgrad/ir/graph.h"

namespace aotgrad {

/// The input dimension a symbol is read from: placeholder `input`'s size at `dim` is
/// `divisor` times the symbol (divisor > 1 for a size the program needs divisible, as
/// `view(B // 2, ...)`: the symbol is then B // 2, and every size stays a polynomial).
struct SymbolSource {
  size_t input = 0;
  int64_t dim = 0;
  int64_t divisor = 1;
};

/// Size symbols s0, s1, ... and where each is read from; `points[t][i]` is symbol i's value in
/// trace t. points[0] gives the hints.
struct TracePoints {
  std::vector<SymbolSource> sources;  // one per symbol
  std::vector<std::vector<int64_t>> points;
};

/// Three or more traces of one program (the same ops in the same order), traced with the size
/// symbols at `p.points[t]`, unified into the graph PyTorch 2.x prints for a dynamic trace:
///   - every size, stride and storage offset that changes with the symbols is an expression
///     c * (a product of symbols, each at most squared) + k over them, with the symbols' hints
///     (the first point);
///   - an int argument that changes becomes a SymInt node computed before its first user, from
///     `sym_size.int` of the input dimension a symbol is read from and `operator.mul` / `add` /
///     `sub` (`sym_size_int: "Sym(s0)" = torch.ops.aten.sym_size.int(x, 0)`), and
///     `operator.floordiv` by the source's divisor where it is not 1;
///   - each call's metadata is what the registry's meta function infers over the symbols where it
///     can and that agrees with every trace, else the fitted expressions.
/// The traces are not modified. Throws Error naming the node when the traces differ in structure
/// (control flow on a size), when a float argument or a constant changes with the sizes, or when
/// a size or int argument is no such expression.
std::unique_ptr<Graph> symbolize(const std::vector<const Graph*>& traces, const TracePoints& p);

/// The size symbol names: "s0", "s1", ...
std::string symbol_name(size_t i);

/// `c * prod(s_i ** p_i) + k` over the size symbols by index (c == 0: the constant k).
struct SizeFit {
  int64_t c = 0;
  std::vector<std::pair<size_t, int>> mono;  // (symbol index, power), by index
  int64_t k = 0;
  bool operator<(const SizeFit& o) const;
};

/// The nodes of `graph` that compute size expressions from its placeholders' sizes, as PyTorch 2.x
/// writes them: `sym_size.int` of the dimension a symbol is read from (named sym_size_int,
/// sym_size_int_1, ...), `operator.floordiv` by its divisor, then `operator.mul` / `add` / `sub`.
/// Each expression's node is made once, before its first user.
class SizeNodes {
 public:
  /// `deferred_names`: the nodes get their names only from assign_names(), so that the nodes a
  /// trace adds meanwhile are named first, as PyTorch's symbolic trace names them (a view's
  /// `mul_1: "Sym(s0*s1)"` before the attention's `mul`).
  SizeNodes(Graph& graph, std::vector<SymbolSource> sources, bool deferred_names = false);
  /// The node of `f` (c != 0), made before `user` (null: at the graph's insertion point).
  Node* node_for(const SizeFit& f, Node* user);
  /// `e` as an argument: its value when concrete, else the node of its SizeFit. Nullopt when `e`
  /// reads a symbol that is not s0, s1, ... of `sources`, or is no SizeFit (a floordiv, a sum of
  /// two monomials).
  std::optional<Arg> arg_for(const SymInt& e, Node* user);
  /// With deferred names: names the nodes made so far, in graph order (sym_size_int, mul_1, ...).
  void assign_names();

 private:
  /// A call of `op` named `base` (empty: the op's FX name), now or by assign_names().
  Node* add(const OpDef& op, std::vector<Arg> args, std::string base = "");
  Graph& g_;
  std::vector<SymbolSource> sources_;
  std::vector<Node*> placeholders_;
  std::map<SizeFit, Node*> made_;
  bool deferred_names_ = false;
  std::map<Node*, std::string> pending_;  // deferred: node -> its name's base
};

/// A copy of `g` that keeps its values and forgets its layouts: libtorch's reshape decisions are
/// undone (`view`, `_reshape_alias`, and `_unsafe_view` with the `clone` it alone uses become
/// `reshape(x, shape)`), every stride and storage offset is 0, and nodes are named by position
/// (placeholders keep their names). A trace at a size 0 or 1 differs from the others in such
/// decisions only (a reshape whose size-1 dimension makes its input viewable is a view, else a
/// copy), so the traces of a program agree in value when these copies unify. nullptr when `g`
/// writes a view's result, a reshape's result or a reshape's input in place, where a view and a
/// copy differ in value.
std::unique_ptr<Graph> without_layouts(const Graph& g);

}  // namespace aotgrad
