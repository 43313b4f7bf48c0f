// aotgrad: writing a mutated input's new value back into the caller's tensor.
#include "aotgrad/runtime/write_back.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <string>

#include "aotgrad/ir/error.h"

namespace aotgrad {

void write_back(at::Tensor& target, const at::Tensor& value, size_t input) {
  try {
    target.copy_(value);
  } catch (const c10::Error& e) {
    // Writes autograd does not see (under torch.no_grad, through a detach) are written back
    // under no_grad: a leaf that requires grad (or a view of one) gets here only written with
    // grad mode on, which eagerly raises too.
    const bool of_leaf = c10::GradMode::is_enabled() && target.requires_grad() &&
                         (target.is_leaf() || (target.is_view() && target._base().is_leaf()));
    throw Error("input " + std::to_string(input) +
                " of the compiled graph is written by it, and writing it back failed: " +
                e.what_without_backtrace() +
                (of_leaf ? " (a leaf that requires grad, or a view of one, written with grad "
                           "mode on: write it under torch.no_grad)"
                         : ""));
  }
}

}  // namespace aotgrad
