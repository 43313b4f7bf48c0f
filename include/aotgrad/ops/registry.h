// aotgrad: the table of ATen ops aotgrad knows, declared one statement per op by family.
#pragma once

#include "aotgrad/ir/op.h"

namespace aotgrad {

/// All ATen ops aotgrad knows, built once (thread-safe) and immutable afterwards.
const OpTable& aten_ops();

// One registration function per op family (src/ops/<family>.cc).
void register_pointwise_ops(OpTable& t);
void register_reduction_ops(OpTable& t);
void register_linalg_ops(OpTable& t);
void register_view_ops(OpTable& t);
void register_copy_ops(OpTable& t);
void register_nn_ops(OpTable& t);
void register_factory_ops(OpTable& t);
void register_misc_ops(OpTable& t);
void register_loss_ops(OpTable& t);

}  // namespace aotgrad
