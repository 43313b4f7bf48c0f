// aotgrad: reading and writing tensor files in the safetensors format (no libtorch needed).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "aotgrad/ir/dtype.h"

namespace aotgrad {

/// One named tensor of a safetensors file: dtype, shape and raw little-endian bytes (row-major).
struct TensorRecord {
  std::string name;
  ScalarType dtype = ScalarType::Float32;
  std::vector<int64_t> shape;
  std::string data;  // exactly numel * element_size bytes
};

/// The contents of a safetensors file, tensors in file order (by data offset).
struct TensorFile {
  std::vector<TensorRecord> tensors;
  std::map<std::string, std::string> metadata;  // "__metadata__"
  const TensorRecord* find(const std::string& name) const;
};

/// Safetensors dtype names: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL.
const char* safetensors_dtype_name(ScalarType t);

/// Parses safetensors bytes. Every header field is validated (JSON shape, known dtype, shape of
/// non-negative ints, data_offsets in range, ordered, non-overlapping, covering the buffer, and
/// equal to dtype x shape). Throws Error "<what>: <field>: <problem>" where `what` names the
/// source.
TensorFile parse_safetensors(const std::string& bytes, const std::string& what);
/// Reads and parses a file; errors name the file.
TensorFile load_safetensors(const std::string& path);
/// Serializes to safetensors bytes (header padded to 8 bytes; names must be unique).
std::string serialize_safetensors(const TensorFile& file);
/// Writes atomically: to a temporary file beside `path`, then renamed into place; on any error
/// nothing is left at `path` that was not there before, and Error names the file.
void save_safetensors(const std::string& path, const TensorFile& file);

}  // namespace aotgrad
