// aotgrad: constant folding of metadata queries and of uniform-value factories.
#pragma once

#include <string_view>

#include "aotgrad/transforms/passes/pass.h"

namespace aotgrad {

/// Constant folding, conservative and exact. (1) A call whose result is a SymInt that the
/// metadata knows as a number (sym_size.int, sym_stride.int, sym_numel, sym_storage_offset of a
/// static shape) becomes that int in the arguments of its users (not in the output, which keeps
/// returning the SymInt), where the user's schema accepts an int there; the call goes when unused.
/// The registry has no SymInt arithmetic ops (operator.mul, ...), so there is nothing more to fold.
/// (2) As Inductor's constant_fold_uniform_value feeding remove_no_ops: a pointwise add/sub/mul/div
/// whose other operand is a factory of a uniform 0 or 1 (zeros, ones, full, full_like, new_full,
/// scalar_tensor, fill.Scalar, and views, clones and copies of those) becomes its tensor operand:
/// x * ones, ones * x, x / ones, x - zeros (alpha > 0), and x + zeros only where no -0.0 can turn
/// into +0.0 (an integer or bool result, or a -0.0 fill; see identity_operand). Only when the
/// result's dtype, device, sizes, strides and offset are x's and no aliasing changes (Note
/// [Replacing a value by another]): the values users see are the same, bit for bit.
/// changes(): values folded. Unused factories stay: run dce after it.
class ConstantFolding : public Pass {
 public:
  std::string_view name() const override { return "constant_fold"; }
  bool run(Graph& g) override;
};

}  // namespace aotgrad
