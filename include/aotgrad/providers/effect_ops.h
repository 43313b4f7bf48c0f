// aotgrad: effectful ops at run time (Note [Effect tokens] in src/ops/higher_order_ops.cc) --
// aten::_print's kernel and the stream it writes to, and effect tokens. The EffectTokensWrapper
// that threads tokens through a compiled graph is runtime/wrappers/effect_tokens.h.
#pragma once

#include <ATen/core/Tensor.h>

#include <ostream>
#include <string>

namespace aotgrad {

/// torch.ops.aten._print(s) for C++ code: calls aten::_print through libtorch's dispatcher, which
/// writes `s` and a newline to the print stream; inside a capture the call is recorded instead (as
/// make_fx records it), so a compiled function prints when it runs.
void print(const std::string& s);

/// The stream aten::_print writes to (std::cout by default; nullptr restores it). Returns the
/// previous one. Writes and changes are serialized; the stream must outlive its use.
std::ostream* set_print_stream(std::ostream* stream);

/// A fresh effect token: an empty f32 tensor on the CPU (torch.tensor([])).
at::Tensor new_effect_token();

/// Adds aotgrad's kernel for aten::_print at BackendSelect, which records the call inside a
/// capture and makes libtorch's kernel write to the print stream. Once per process
/// (runtime's register_compat_ops calls it; print() does too).
void register_effect_ops();

}  // namespace aotgrad
