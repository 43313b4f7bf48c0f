// aotgrad: the DebugAssertWrapper's checks of a training call's arguments.
#include "aotgrad/runtime/wrappers/debug_assert.h"

#include <c10/core/GradMode.h>

#include "aotgrad/ir/error.h"

namespace aotgrad {

void check_compiled_requires_grad(const std::vector<at::Tensor>& args,
                                  const std::vector<bool>& requires_grad, bool debug_assert) {
  const std::vector<bool>& rg = requires_grad;
  AOTGRAD_CHECK(args.size() == rg.size(), "expected ", rg.size(), " arguments, got ", args.size());
  const bool grad_mode = c10::GradMode::is_enabled();
  for (size_t i = 0; i < args.size(); ++i) {
    AOTGRAD_CHECK(args[i].defined(), "argument ", i, " is an undefined tensor");
    // Without debug_assert, only the case that would lose a gradient.
    AOTGRAD_CHECK(!grad_mode || !args[i].requires_grad() || rg[i], "argument ", i,
                  " requires grad but was compiled as not requiring grad: its gradient would be "
                  "missing; compile with requires_grad[",
                  i, "] = true");
    AOTGRAD_CHECK(!debug_assert || args[i].requires_grad() || !rg[i], "debug_assert: argument ", i,
                  " was compiled as requiring grad but does not require grad");
  }
}

}  // namespace aotgrad
