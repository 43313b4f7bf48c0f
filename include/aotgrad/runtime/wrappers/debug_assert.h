// aotgrad: PyTorch's DebugAssertWrapper (§13.7; between the synthetic base and the RuntimeWrapper
// when config.debug_assert is on) -- the training call's arguments against what was compiled.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace aotgrad {

/// Checks a training call's `args` against the requires_grad flags it was compiled for: every
/// argument is defined, and with grad mode on none that requires grad was compiled without (its
/// gradient would be silently missing). With `debug_assert`, also none compiled as requiring grad
/// comes without. An Error names the argument.
void check_compiled_requires_grad(const std::vector<at::Tensor>& args,
                                  const std::vector<bool>& requires_grad, bool debug_assert);

}  // namespace aotgrad
