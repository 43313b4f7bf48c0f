// aotgrad: the FakifiedOutWrapper -- a custom compiler's user outputs copied to the traced strides.
#include "aotgrad/runtime/wrappers/fakified_out.h"

#include <ATen/ATen.h>

#include <string>

#include "aotgrad/ir/error.h"

namespace aotgrad {
namespace {

// The traced sizes and strides of `m`, or false where one is symbolic.
bool concrete_layout(const TensorMeta& m, std::vector<int64_t>& sizes,
                     std::vector<int64_t>& strides) {
  for (size_t d = 0; d < m.sizes.size(); ++d) {
    if (!m.sizes[d].is_concrete() || !m.strides[d].is_concrete()) return false;
    sizes.push_back(m.sizes[d].value());
    strides.push_back(m.strides[d].value());
  }
  return true;
}

void restride(std::vector<c10::IValue>& outs, const TracedOutputs& traced) {
  for (size_t j = 0; j < traced.metas.size() && traced.first + j < outs.size(); ++j) {
    c10::IValue& out = outs[traced.first + j];
    if (!out.isTensor()) continue;
    const at::Tensor& t = out.toTensor();
    const TensorMeta& m = traced.metas[j];
    if (!t.defined() || static_cast<int64_t>(m.strides.size()) != t.dim()) continue;
    std::vector<int64_t> sizes, strides;
    if (!concrete_layout(m, sizes, strides) ||
        (t.sizes().vec() == sizes && t.strides().vec() == strides))
      continue;
    const std::string what = "forward compiler output " + std::to_string(j);
    AOTGRAD_CHECK(t.sizes().vec() == sizes, what, " has sizes ", t.sizes(),
                  ", but the traced graph gives ", to_string(m.sizes));
    AOTGRAD_CHECK(j >= traced.aliases_input.size() || !traced.aliases_input[j], what,
                  " is a view of an input with strides ", t.strides(),
                  ", but the traced graph gives ", to_string(m.strides),
                  "; a view cannot be copied to other strides");
    at::Tensor fixed = at::empty_strided(sizes, strides, t.options());
    fixed.copy_(t);
    out = fixed;
  }
}

}  // namespace

CompiledFn with_traced_strides(CompiledFn fn, TracedOutputs traced) {
  return [fn = std::move(fn), traced = std::move(traced)](std::vector<c10::IValue> args) {
    std::vector<c10::IValue> outs = fn(std::move(args));
    restride(outs, traced);
    return outs;
  };
}

}  // namespace aotgrad
