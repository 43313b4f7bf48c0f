// aotgrad: the table of ATen ops aotgrad knows, declared one statement per op by family.
#pragma once

#include "aotgrad/ir/op.h"

namespace aotgrad {
class Graph;
}

namespace aotgrad {

/// All ATen ops aotgrad knows, built once (thread-safe) and immutable afterwards: the declared
/// ones, then whatever the installed op provider gives for names the registry does not declare.
const OpTable& aten_ops();

/// Installs the provider aten_ops() asks for ops the registry does not declare (the runtime
/// layer's libtorch provider, providers/dispatcher_ops.h); nullptr removes it. Process-wide and
/// thread-safe; `provider` must stay alive while installed. Ops given before a change stay in the
/// table.
void install_op_provider(const OpProvider* provider);
/// The installed provider, or nullptr.
const OpProvider* installed_op_provider();

// One registration function per op family (src/ops/<family>.cc).
void register_pointwise_ops(OpTable& t);
void register_reduction_ops(OpTable& t);
void register_linalg_ops(OpTable& t);
void register_view_ops(OpTable& t);
void register_copy_ops(OpTable& t);
void register_nn_ops(OpTable& t);
void register_norm_ops(OpTable& t);
void register_factory_ops(OpTable& t);
void register_misc_ops(OpTable& t);
void register_loss_ops(OpTable& t);
void register_higher_order_ops(OpTable& t);
/// _c10d_functional's collectives (src/ops/collective_ops.cc, Note [Functional collectives]).
void register_collective_ops(OpTable& t);
/// Facts about ops the registry does not declare (OpTable::tag_provided): PyTorch's partitioner
/// classes for them (src/ops/provided_op_facts.cc).
void register_provided_op_facts(OpTable& t);

/// torch.ops.higher_order.run_and_save_rng_state(op, *args): (the CPU generator's state,
/// op(*args)), and run_with_rng_state(rng_state, op, *args): op(*args) drawn from that state, the
/// generator left as it was (torch/_prims/rng_prims.py). See OpTable::higher_order.
inline constexpr const char* kRunAndSaveRngState = "higher_order::run_and_save_rng_state";
inline constexpr const char* kRunWithRngState = "higher_order::run_with_rng_state";
/// torch.ops.higher_order.eager_backward(grads, needs, op, *args): the gradients of op(*args)'s
/// tensor arguments at positions `needs` (of op's schema), given the gradients `grads` of its
/// results (None: no gradient flows), computed at run time by libtorch's autograd -- for an op
/// whose backward cannot be traced ahead of time because libtorch's formula reads data (prod's
/// zeros, cumprod's, median's index). One result per position in `needs`, as a list.
inline constexpr const char* kEagerBackward = "higher_order::eager_backward";
/// torch.ops.higher_order.with_effects(token, op, *args): (a new token, *op(*args)) -- an
/// effectful op's call made functional by an explicit order (torch/_higher_order_ops/effects.py;
/// Note [Effect tokens] in src/ops/higher_order_ops.cc). A token is an empty f32[0] tensor; an
/// op with no result gives a one-element tuple (the token).
inline constexpr const char* kWithEffects = "higher_order::with_effects";
/// torch.ops.higher_order.cond(pred, true_fn, false_fn, operands) -> Tensor[]: the branch
/// subgraph (Arg::Kind::Graph) the one-element bool tensor `pred` selects, called on `operands`
/// (Note [cond] in src/ops/cond_op.cc).
inline constexpr const char* kCond = "higher_order::cond";
void register_cond_op(OpTable& t);
/// The metadata of the tensors subgraph `g` (named `name` in messages) returns, in order; throws
/// Error naming it when it returns anything but a tensor or a tuple of tensors.
std::vector<const ValueMeta*> subgraph_result_metas(const Graph& g, const std::string& name);
/// The first N for which neither true_graph_N nor false_graph_N names a node of `g` or one of its
/// subgraph arguments: the names of a new cond's branches (PyTorch's numbering).
int free_cond_index(const Graph& g);
/// An effect token's metadata: f32[0][1]cpu (torch.tensor([])).
TensorMeta effect_token_meta();
/// Bytes of libtorch 1.13's CPU generator state (CPUGeneratorImpl::get_state(): a u8 tensor; a
/// runtime test checks it against libtorch).
inline constexpr int64_t kCpuRngStateBytes = 5056;
/// Its metadata: u8[5056][1]cpu.
TensorMeta cpu_rng_state_meta();

}  // namespace aotgrad
