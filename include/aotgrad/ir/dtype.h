// aotgrad: dtypes, devices, layouts and memory formats, with ATen's names and promotion rules.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace aotgrad {

/// Tensor element types, in the order of c10::ScalarType's promotion lattice categories.
enum class ScalarType : uint8_t {
  UInt8,
  Int8,
  Int16,
  Int32,
  Int64,
  Float16,
  Float32,
  Float64,
  Complex64,
  Complex128,
  Bool,
  BFloat16,
};
inline constexpr int kNumScalarTypes = 12;

/// "f32", "i64", "b8", ... as in PyTorch's printed annotations.
std::string_view short_name(ScalarType t);
/// "float32", "int64", "bool", ... as in `torch.float32`.
std::string_view torch_name(ScalarType t);
std::optional<ScalarType> scalar_type_from_short_name(std::string_view s);
/// Accepts "float32" and the aliases torch has ("float", "long", "half", "double", "int", ...).
std::optional<ScalarType> scalar_type_from_torch_name(std::string_view s);
/// c10::ScalarType's integer code (Byte=0 ... BFloat16=15), used when talking to ATen.
int c10_code(ScalarType t);
std::optional<ScalarType> scalar_type_from_c10_code(int code);

int64_t element_size(ScalarType t);
bool is_floating(ScalarType t);  // f16 bf16 f32 f64
bool is_complex(ScalarType t);
bool is_integral(ScalarType t, bool include_bool);
/// c10::promoteTypes.
ScalarType promote_types(ScalarType a, ScalarType b);
/// The real counterpart of a complex type (c64 -> f32), identity otherwise.
ScalarType to_real_value_type(ScalarType t);
/// The complex counterpart of a real floating type (f32 -> c64).
ScalarType to_complex_type(ScalarType t);
inline constexpr ScalarType kDefaultFloat = ScalarType::Float32;

enum class DeviceType : uint8_t { CPU, CUDA, Meta };

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = -1;  // -1: no index
  bool operator==(const Device&) const = default;
};
/// "cpu", "cuda:0", "meta".
std::string to_string(const Device& d);
std::optional<Device> device_from_string(std::string_view s);

enum class Layout : uint8_t { Strided, Sparse };
enum class MemoryFormat : uint8_t { Contiguous, Preserve, ChannelsLast, ChannelsLast3d };

std::string_view torch_name(Layout l);        // "strided"
std::string_view torch_name(MemoryFormat m);  // "contiguous_format"
std::optional<Layout> layout_from_torch_name(std::string_view s);
std::optional<MemoryFormat> memory_format_from_torch_name(std::string_view s);

}  // namespace aotgrad
