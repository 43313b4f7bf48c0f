// aotgrad: PyTorch's EffectTokensWrapper (§13.7, R8), the innermost wrapper of a compiled forward
// (Note [Effect tokens] in src/ops/higher_order_ops.cc).
#pragma once

#include "aotgrad/runtime/compiler.h"

namespace aotgrad {

/// `fn`, a compiled graph that takes `num_tokens` effect tokens before its inputs and returns the
/// final tokens before its outputs, as a function of the other inputs that returns the other
/// outputs; fresh tokens go in on every call. `fn` itself when `num_tokens` is 0.
CompiledFn with_effect_tokens(CompiledFn fn, int num_tokens);

}  // namespace aotgrad
