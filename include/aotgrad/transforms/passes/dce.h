// aotgrad: dead code elimination, and the purity predicates the other passes share.
#pragma once

#include <cstdint>
#include <string_view>

#include "aotgrad/ir/graph.h"
#include "aotgrad/transforms/passes/pass.h"

namespace aotgrad {

/// Whether the call writes one of its arguments: a `Tensor(a!)` argument in its schema
/// (in-place ops, copy_, t_, ...), or an undeclared mutation that applies to this call
/// (native_batch_norm writes its running stats when `training` is true or not a constant).
bool has_mutations(const Node& n);
/// Whether the op draws from the random number generator (tags `random` or
/// `nondeterministic_seeded`): bernoulli, native_dropout, ...
bool is_random(const OpDef& op);
/// Whether the op is a functional collective or its wait (tag `collective`, _c10d_functional):
/// every rank must issue the same ones in the same order (Note [Functional collectives]).
bool is_collective(const OpDef& op);
/// Whether the op has an ordered side effect (tag `effectful`: aten::_print, ops registered with
/// register_effectful_op, and with_effects, which threads their effect token): never removed,
/// merged, recomputed or reordered against another (Note [Effect tokens]).
bool is_effectful(const OpDef& op);
/// fx's Node.is_impure (torch 2.7+): placeholders, the output, calls with mutations, random
/// calls, effectful calls, and collectives (fx keeps wait_tensor as side-effectful; aotgrad keeps
/// the collective too, so that no rank drops one another rank issues). An impure node is never
/// removed or merged by a pass.
bool is_impure(const Node& n);
/// Whether no call of `g` has mutations (a functionalized graph).
bool is_functional(const Graph& g);

/// Dead code elimination, as torch.fx.Graph.eliminate_dead_code: removes every call and getitem
/// whose value is unused and that is not impure (see is_impure), to a fixed point in one reverse
/// sweep. Kept: calls with mutations (in-place ops, an input-mutating copy_ at the end, ops with
/// undeclared mutations), random ops even when unused, since their order fixes the RNG stream, and
/// collectives, which every rank must issue alike;
/// unused getitems of a kept multi-output op go. Placeholders are never removed (they are the
/// signature). changes(): nodes removed. Run it after passes that leave unused nodes behind.
class DeadCodeElimination : public Pass {
 public:
  std::string_view name() const override { return "dce"; }
  bool run(Graph& g) override;
};

/// Whether DeadCodeElimination would remove a node of `g`.
bool has_dead_code(const Graph& g);

/// DeadCodeElimination on `g`; returns the number of nodes removed.
int eliminate_dead_code(Graph& g);

}  // namespace aotgrad
