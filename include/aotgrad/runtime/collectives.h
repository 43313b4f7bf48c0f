// aotgrad: libtorch kernels of the functional collectives (_c10d_functional::all_reduce, ...) on
// the named process groups of runtime/process_group.h.
#pragma once

#include <ATen/core/ivalue.h>

#include <cstddef>
#include <vector>

namespace aotgrad {

/// Registers the _c10d_functional ops (Note [Functional collectives], src/ops/collective_ops.cc)
/// with libtorch's dispatcher, as PyTorch 2.x's Functional.cpp defines them: each collective
/// issues its work asynchronously on resolve_process_group(group_name) and returns its result
/// tensor; wait_tensor waits for the work that writes its argument (a tensor no collective is
/// writing passes through) and fails with an Error naming the collective, the group and the rank
/// when a peer is gone or the group's timeout passes. Gloo in libtorch 1.13 has no
/// reduce_scatter or _allgather_base: reduce_scatter_tensor is an all-to-all and a local reduction,
/// all_gather_into_tensor an allgather into views of the output, avg a sum divided by the group
/// size. Idempotent and thread-safe; the interpreter calls it.
void register_collective_kernels();

class AtenOp;

/// Calls a _c10d_functional op (`stack`: one value per argument of its IR schema) the way
/// register_collective_kernels' kernels behave, around libtorch 2's own kernels: a group_size that
/// is not the group's size is an Error, AOTGRAD_LOGS=collectives logs each issue and wait, and a
/// collective that cannot start or fails is an Error naming it, the group, the rank and the cause.
/// Where the kernels are aotgrad's (libtorch 1.13) it only calls the op. The interpreter calls it
/// for every collective.
std::vector<c10::IValue> call_collective(const AtenOp& op, std::vector<c10::IValue> stack);

/// Collectives issued and not yet waited for (in this process).
size_t pending_collectives();

}  // namespace aotgrad
