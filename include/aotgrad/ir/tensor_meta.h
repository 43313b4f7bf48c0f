// aotgrad: metadata carried by every value (tensor dtype/shape/strides/device, symbolic scalars).
#pragma once

#include <string>
#include <vector>

#include "aotgrad/ir/dtype.h"
#include "aotgrad/ir/symint.h"

namespace aotgrad {

/// What a tensor value is, without its data: dtype, sizes, strides, storage offset, device.
struct TensorMeta {
  ScalarType dtype = ScalarType::Float32;
  SymIntVector sizes;
  SymIntVector strides;
  SymInt storage_offset = 0;
  Device device;
  bool requires_grad = false;  // meaningful on placeholders
  /// A Python number passed where a Tensor is expected (`mul.Tensor(x, 2)`): a 0-dim tensor that
  /// type promotion treats like a scalar, as ATen's wrapped numbers. Never printed.
  bool wrapped_number = false;

  int64_t dim() const { return static_cast<int64_t>(sizes.size()); }
  SymInt numel() const { return product(sizes); }
  /// numel * element size, from hints (4096 elements where a size has no hint, as PyTorch does).
  int64_t nbytes_hint() const;
  bool is_contiguous() const;

  /// Equal dtype, device, sizes and strides (and storage offset); requires_grad is not compared.
  bool same_layout(const TensorMeta& o) const;
  /// PyTorch's annotation text: `f32[4, 8][8, 1]cpu`.
  std::string annotation() const;
  void append_annotation(std::string& out) const;
};

/// Strides of a contiguous (row-major) tensor of these sizes.
SymIntVector contiguous_strides(const SymIntVector& sizes);
/// Strides of a channels-last tensor (4-d: NHWC order; 5-d: NDHWC).
SymIntVector channels_last_strides(const SymIntVector& sizes);

TensorMeta make_tensor_meta(ScalarType dtype, SymIntVector sizes, Device device = {});

/// The metadata of a node's result: nothing, a tensor, a symbolic scalar, or a tuple/list of
/// these (multi-result ops, Tensor[] results; a None element is an absent optional result).
struct ValueMeta {
  enum class Kind : uint8_t { None, Tensor, SymInt, SymFloat, SymBool, Tuple };
  Kind kind = Kind::None;
  TensorMeta tensor;             // Kind::Tensor
  SymInt sym;                    // Kind::SymInt (SymFloat/SymBool: text only, in `sym_text`)
  std::string sym_text;          // SymFloat / SymBool expression text
  std::vector<ValueMeta> elems;  // Kind::Tuple
  bool is_list = false;          // Tuple that came from a `Tensor[]` return

  static ValueMeta none() { return {}; }
  static ValueMeta of(TensorMeta t) {
    ValueMeta v;
    v.kind = Kind::Tensor;
    v.tensor = std::move(t);
    return v;
  }
  static ValueMeta of_sym(SymInt s) {
    ValueMeta v;
    v.kind = Kind::SymInt;
    v.sym = std::move(s);
    return v;
  }
  static ValueMeta tuple(std::vector<ValueMeta> elems, bool is_list = false) {
    ValueMeta v;
    v.kind = Kind::Tuple;
    v.elems = std::move(elems);
    v.is_list = is_list;
    return v;
  }
  bool is_tensor() const { return kind == Kind::Tensor; }
  /// A SymInt, SymFloat or SymBool.
  bool is_sym_scalar() const {
    return kind == Kind::SymInt || kind == Kind::SymFloat || kind == Kind::SymBool;
  }
  /// Same kind and, for tensors, same_layout; tuples element-wise.
  bool same_as(const ValueMeta& o) const;
  /// Annotation text ("f32[4][1]cpu", "Sym(s0)"), empty for None and tuples.
  std::string annotation() const;
  /// A short description for error messages: "tensor f32[4][1]cpu", "tuple of 3", ...
  std::string describe() const;
};

/// Parses an annotation: `f32[4, s0][8, 1]cpu`, `f32[4, 8]` (contiguous strides, cpu),
/// `i64[][]cpu`, `Sym(s0)`. Throws Error with what was expected.
ValueMeta parse_annotation(const std::string& text);

}  // namespace aotgrad
