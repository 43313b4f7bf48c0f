// aotgrad: the functional collectives (_c10d_functional::all_reduce, ...) on libtorch's own
// kernels, with aotgrad's checks, logs and errors, on the named process groups of
// runtime/distributed/process_group.h.
#pragma once

#include <ATen/core/ivalue.h>

#include <cstddef>
#include <vector>

namespace aotgrad {

class AtenOp;

/// Calls a _c10d_functional op (`stack`: one value per argument of its IR schema; Note [Functional
/// collectives], src/ops/collective_ops.cc) on libtorch's own kernels, which issue the work on
/// the group c10d's registry names and wait_tensor waits for: a group_size that is not the group's
/// size is an Error, AOTGRAD_LOGS=collectives logs each issue and wait, and a collective that
/// cannot start or fails (a peer gone, the group's timeout passed) is an Error naming it, the
/// group, the rank and the cause. The interpreter calls it for every collective.
std::vector<c10::IValue> call_collective(const AtenOp& op, std::vector<c10::IValue> stack);

/// Collectives issued and not yet waited for (in this process).
size_t pending_collectives();

}  // namespace aotgrad
