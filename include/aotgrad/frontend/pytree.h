// aotgrad: nested values as tensor leaves and a structure (PyTorch's pytree, §13.22).
#pragma once

#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

namespace aotgrad {

/// The structure of a nested value with its tensors taken out (PyTorch's TreeSpec): tensors are
/// leaves; lists, tuples and string-keyed dicts (in insertion order) are nodes; everything else --
/// None, an undefined tensor (as None), ints, floats, bools, strings, int lists -- is a constant
/// kept in the structure, so that two values with the same structure differ only in their tensors.
struct TreeSpec {
  enum class Kind : uint8_t { kTensor, kConstant, kList, kTuple, kDict };
  Kind kind = Kind::kConstant;
  c10::IValue constant;           // kConstant
  bool tensor_list = false;       // kList: a Tensor[] (else a generic list)
  std::vector<std::string> keys;  // kDict, one per child
  std::vector<TreeSpec> children;

  size_t num_leaves() const;
  /// As Python would print the value with each tensor as `T`: `(T, [T, T], {'a': T}, 3, None)`.
  std::string str() const;
  bool operator==(const TreeSpec& o) const { return str() == o.str(); }
};

/// The tensors of `value`, depth first, and its structure in `spec`. Throws Error (naming the
/// place) for a dict whose keys are not strings, and for values that are neither tensors,
/// containers nor constants (objects, futures, ...).
std::vector<at::Tensor> tree_flatten(const c10::IValue& value, TreeSpec* spec);

/// The value of structure `spec` with `leaves` (spec.num_leaves() of them) as its tensors.
c10::IValue tree_unflatten(const std::vector<at::Tensor>& leaves, const TreeSpec& spec);

}  // namespace aotgrad
