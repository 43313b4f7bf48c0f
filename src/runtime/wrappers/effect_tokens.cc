// aotgrad: the EffectTokensWrapper -- fresh effect tokens in, the final ones dropped.
#include "aotgrad/runtime/wrappers/effect_tokens.h"

#include <ATen/core/Tensor.h>

#include "aotgrad/ir/error.h"
#include "aotgrad/providers/effect_ops.h"

namespace aotgrad {

CompiledFn with_effect_tokens(CompiledFn fn, int num_tokens) {
  if (num_tokens == 0) return fn;
  return [fn = std::move(fn), num_tokens](std::vector<c10::IValue> args) {
    std::vector<c10::IValue> in;
    in.reserve(args.size() + static_cast<size_t>(num_tokens));
    for (int k = 0; k < num_tokens; ++k) in.emplace_back(new_effect_token());
    for (c10::IValue& a : args) in.push_back(std::move(a));
    std::vector<c10::IValue> outs = fn(std::move(in));
    AOTGRAD_CHECK(outs.size() >= static_cast<size_t>(num_tokens), "the compiled graph returned ",
                  outs.size(), " values, fewer than its ", num_tokens, " effect tokens");
    outs.erase(outs.begin(), outs.begin() + num_tokens);
    return outs;
  };
}

}  // namespace aotgrad
