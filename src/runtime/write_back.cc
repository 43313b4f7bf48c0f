// aotgrad: writing a mutated input's new value back into the caller's tensor.
#include "aotgrad/runtime/write_back.h"

#include <ATen/ATen.h>

#include <string>

#include "aotgrad/ir/error.h"

namespace aotgrad {

void write_back(at::Tensor& target, const at::Tensor& value, size_t input) {
  try {
    target.copy_(value);
  } catch (const c10::Error& e) {
    // A leaf that requires grad (or a view of one) can have been written only under no_grad,
    // where eagerly the write is allowed; the runtime does not know where the write was.
    const bool of_leaf = target.requires_grad() &&
                         (target.is_leaf() || (target.is_view() && target._base().is_leaf()));
    throw Error("input " + std::to_string(input) +
                " of the compiled graph is written by it, and writing it back failed: " +
                e.what_without_backtrace() +
                (of_leaf ? " (a leaf that requires grad, or a view of one, written under "
                           "torch.no_grad: aotgrad does not write such an argument back; write "
                           "it outside the compiled function)"
                         : ""));
  }
}

}  // namespace aotgrad
