// aotgrad: dtype names and ATen's type promotion table.
#include "aotgrad/ir/dtype.h"

#include <array>

#include "aotgrad/ir/error.h"

namespace aotgrad {
namespace {

struct DtypeInfo {
  std::string_view short_name;
  std::string_view torch_name;
  int c10_code;
  int64_t size;
};

constexpr std::array<DtypeInfo, kNumScalarTypes> kInfo = {{
    {"u8", "uint8", 0, 1},
    {"i8", "int8", 1, 1},
    {"i16", "int16", 2, 2},
    {"i32", "int32", 3, 4},
    {"i64", "int64", 4, 8},
    {"f16", "float16", 5, 2},
    {"f32", "float32", 6, 4},
    {"f64", "float64", 7, 8},
    {"c64", "complex64", 9, 8},
    {"c128", "complex128", 10, 16},
    {"b8", "bool", 11, 1},
    {"bf16", "bfloat16", 15, 2},
}};

const DtypeInfo& info(ScalarType t) { return kInfo[static_cast<int>(t)]; }

}  // namespace

std::string_view short_name(ScalarType t) { return info(t).short_name; }
std::string_view torch_name(ScalarType t) { return info(t).torch_name; }
int c10_code(ScalarType t) { return info(t).c10_code; }
int64_t element_size(ScalarType t) { return info(t).size; }

std::optional<ScalarType> scalar_type_from_short_name(std::string_view s) {
  for (int i = 0; i < kNumScalarTypes; ++i)
    if (kInfo[i].short_name == s) return static_cast<ScalarType>(i);
  return std::nullopt;
}

std::optional<ScalarType> scalar_type_from_torch_name(std::string_view s) {
  for (int i = 0; i < kNumScalarTypes; ++i)
    if (kInfo[i].torch_name == s) return static_cast<ScalarType>(i);
  static constexpr std::pair<std::string_view, ScalarType> kAliases[] = {
      {"float", ScalarType::Float32},    {"double", ScalarType::Float64},
      {"half", ScalarType::Float16},     {"long", ScalarType::Int64},
      {"int", ScalarType::Int32},        {"short", ScalarType::Int16},
      {"cfloat", ScalarType::Complex64}, {"cdouble", ScalarType::Complex128},
  };
  for (auto& [name, t] : kAliases)
    if (name == s) return t;
  return std::nullopt;
}

std::optional<ScalarType> scalar_type_from_c10_code(int code) {
  for (int i = 0; i < kNumScalarTypes; ++i)
    if (kInfo[i].c10_code == code) return static_cast<ScalarType>(i);
  return std::nullopt;
}

bool is_floating(ScalarType t) {
  return t == ScalarType::Float16 || t == ScalarType::Float32 || t == ScalarType::Float64 ||
         t == ScalarType::BFloat16;
}
bool is_complex(ScalarType t) { return t == ScalarType::Complex64 || t == ScalarType::Complex128; }
bool is_integral(ScalarType t, bool include_bool) {
  switch (t) {
    case ScalarType::UInt8:
    case ScalarType::Int8:
    case ScalarType::Int16:
    case ScalarType::Int32:
    case ScalarType::Int64: return true;
    case ScalarType::Bool: return include_bool;
    default: return false;
  }
}

ScalarType to_real_value_type(ScalarType t) {
  if (t == ScalarType::Complex64) return ScalarType::Float32;
  if (t == ScalarType::Complex128) return ScalarType::Float64;
  return t;
}
ScalarType to_complex_type(ScalarType t) {
  if (t == ScalarType::Float64) return ScalarType::Complex128;
  if (t == ScalarType::Complex128) return t;
  return ScalarType::Complex64;
}

ScalarType promote_types(ScalarType a, ScalarType b) {
  // c10/core/ScalarType.h's _promoteTypesLookup, restricted to our 12 types.
  using S = ScalarType;
  constexpr S u1 = S::UInt8, i1 = S::Int8, i2 = S::Int16, i4 = S::Int32, i8 = S::Int64,
              f2 = S::Float16, f4 = S::Float32, f8 = S::Float64, c4 = S::Complex64,
              c8 = S::Complex128, b1 = S::Bool, bf = S::BFloat16;
  static constexpr S kTable[kNumScalarTypes][kNumScalarTypes] = {
      /*        u1  i1  i2  i4  i8  f2  f4  f8  c4  c8  b1  bf */
      /* u1 */ {u1, i2, i2, i4, i8, f2, f4, f8, c4, c8, u1, bf},
      /* i1 */ {i2, i1, i2, i4, i8, f2, f4, f8, c4, c8, i1, bf},
      /* i2 */ {i2, i2, i2, i4, i8, f2, f4, f8, c4, c8, i2, bf},
      /* i4 */ {i4, i4, i4, i4, i8, f2, f4, f8, c4, c8, i4, bf},
      /* i8 */ {i8, i8, i8, i8, i8, f2, f4, f8, c4, c8, i8, bf},
      /* f2 */ {f2, f2, f2, f2, f2, f2, f4, f8, c4, c8, f2, f4},
      /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f8, c4, c8, f4, f4},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, c8, c8, f8, f8},
      /* c4 */ {c4, c4, c4, c4, c4, c4, c4, c8, c4, c8, c4, c4},
      /* c8 */ {c8, c8, c8, c8, c8, c8, c8, c8, c8, c8, c8, c8},
      /* b1 */ {u1, i1, i2, i4, i8, f2, f4, f8, c4, c8, b1, bf},
      /* bf */ {bf, bf, bf, bf, bf, f4, f4, f8, c4, c8, bf, bf},
  };
  return kTable[static_cast<int>(a)][static_cast<int>(b)];
}

std::string to_string(const Device& d) {
  std::string s = d.type == DeviceType::CPU ? "cpu" : d.type == DeviceType::CUDA ? "cuda" : "meta";
  if (d.index >= 0) s += ":" + std::to_string(d.index);
  return s;
}

std::optional<Device> device_from_string(std::string_view s) {
  Device d;
  auto colon = s.find(':');
  std::string_view type = s.substr(0, colon);
  if (type == "cpu")
    d.type = DeviceType::CPU;
  else if (type == "cuda")
    d.type = DeviceType::CUDA;
  else if (type == "meta")
    d.type = DeviceType::Meta;
  else
    return std::nullopt;
  if (colon != std::string_view::npos) {
    std::string_view idx = s.substr(colon + 1);
    if (idx.empty() || idx.size() > 4) return std::nullopt;
    int v = 0;
    for (char c : idx) {
      if (c < '0' || c > '9') return std::nullopt;
      v = v * 10 + (c - '0');
    }
    d.index = v;
  }
  return d;
}

std::string_view torch_name(Layout l) { return l == Layout::Strided ? "strided" : "sparse_coo"; }
std::string_view torch_name(MemoryFormat m) {
  switch (m) {
    case MemoryFormat::Contiguous: return "contiguous_format";
    case MemoryFormat::Preserve: return "preserve_format";
    case MemoryFormat::ChannelsLast: return "channels_last";
    case MemoryFormat::ChannelsLast3d: return "channels_last_3d";
  }
  return "contiguous_format";
}
std::optional<Layout> layout_from_torch_name(std::string_view s) {
  if (s == "strided") return Layout::Strided;
  if (s == "sparse_coo") return Layout::Sparse;
  return std::nullopt;
}
std::optional<MemoryFormat> memory_format_from_torch_name(std::string_view s) {
  for (auto m : {MemoryFormat::Contiguous, MemoryFormat::Preserve, MemoryFormat::ChannelsLast,
                 MemoryFormat::ChannelsLast3d})
    if (torch_name(m) == s) return m;
  return std::nullopt;
}

}  // namespace aotgrad
