// aotgrad: PyTorch's AOTDedupeWrapper (§13.7 R1, §13.24) for a function of tensors: an argument
// passed twice is one input of the graph.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <functional>
#include <vector>

namespace aotgrad {

/// Which of a call's arguments are the same tensor (one TensorImpl). aot_function captures its
/// function over the distinct arguments -- the function sees the one tensor at every position the
/// caller passed it -- so that a write through one position is seen at the others, as eagerly.
/// (A graph given as text merges its duplicates only where one is written: plan_aliasing.)
struct DedupedArgs {
  std::vector<size_t> unique;  // the distinct arguments: their first positions, in order
  std::vector<int> position;   // per argument: its index among the distinct ones

  static DedupedArgs of(const std::vector<at::Tensor>& args);
  /// The distinct arguments of a call with the same duplicates.
  std::vector<at::Tensor> distinct(const std::vector<at::Tensor>& args) const;

  using TensorFunction = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>&)>;
  /// `fn` as a function of the distinct arguments: it is called with every argument.
  TensorFunction on_distinct(TensorFunction fn) const;
};

}  // namespace aotgrad
