// aotgrad: safetensors reader and writer with full header validation.
#include "aotgrad/runtime/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "aotgrad/ir/error.h"
#include "aotgrad/support/file.h"
#include "aotgrad/support/quote.h"

namespace aotgrad {

const TensorRecord* TensorFile::find(const std::string& name) const {
  for (auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

namespace {

struct DtypeName {
  const char* name;
  ScalarType type;
};
constexpr DtypeName kDtypes[] = {
    {"F64", ScalarType::Float64},   {"F32", ScalarType::Float32}, {"F16", ScalarType::Float16},
    {"BF16", ScalarType::BFloat16}, {"I64", ScalarType::Int64},   {"I32", ScalarType::Int32},
    {"I16", ScalarType::Int16},     {"I8", ScalarType::Int8},     {"U8", ScalarType::UInt8},
    {"BOOL", ScalarType::Bool},
};

// `field` and `problem` may quote bytes of the file (tensor names, a dtype, the JSON parser's
// "last read: ..."): what is not printable ASCII is escaped, so the message stays text.
[[noreturn]] void fail(const std::string& what, const std::string& field,
                       const std::string& problem) {
  throw Error(what + ": " + escape_bytes(field) + ": " + escape_bytes(problem));
}

uint64_t read_u64_le(const std::string& b) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[i]);
  return v;
}

}  // namespace

const char* safetensors_dtype_name(ScalarType t) {
  for (auto& d : kDtypes)
    if (d.type == t) return d.name;
  throw Error(std::string("dtype ") + std::string(torch_name(t)) +
              " cannot be stored in safetensors");
}

TensorFile parse_safetensors(const std::string& bytes, const std::string& what) {
  if (bytes.size() < 8)
    fail(what, "header length",
         "file is " + std::to_string(bytes.size()) +
             " bytes, shorter than the 8-byte header length");
  uint64_t header_len = read_u64_le(bytes);
  if (header_len > bytes.size() - 8)
    fail(what, "header length",
         std::to_string(header_len) + " exceeds the file's remaining " +
             std::to_string(bytes.size() - 8) + " bytes (truncated file?)");
  if (header_len > 100u * 1024 * 1024) fail(what, "header length", "header larger than 100 MiB");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.begin() + 8,
                                   bytes.begin() + 8 + static_cast<int64_t>(header_len));
  } catch (const nlohmann::json::exception& e) {
    fail(what, "header", std::string("invalid JSON: ") + e.what());
  }
  if (!header.is_object()) fail(what, "header", "expected a JSON object");
  const uint64_t data_size = bytes.size() - 8 - header_len;
  const char* data = bytes.data() + 8 + header_len;

  TensorFile file;
  struct Span {
    uint64_t begin, end;
    size_t index;
  };
  std::vector<Span> spans;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const nlohmann::json& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) fail(what, "__metadata__", "expected an object of strings");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string()) fail(what, "__metadata__." + m.key(), "expected a string");
        file.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    std::string field = "tensor '" + name + "'";
    if (!v.is_object()) fail(what, field, "expected an object with dtype, shape, data_offsets");
    for (auto k = v.begin(); k != v.end(); ++k)
      if (k.key() != "dtype" && k.key() != "shape" && k.key() != "data_offsets")
        fail(what, field + "." + k.key(), "unknown field");
    TensorRecord rec;
    rec.name = name;
    if (!v.contains("dtype") || !v["dtype"].is_string())
      fail(what, field + ".dtype", "missing or not a string");
    std::string dt = v["dtype"].get<std::string>();
    bool known = false;
    for (auto& d : kDtypes)
      if (dt == d.name) {
        rec.dtype = d.type;
        known = true;
      }
    if (!known)
      fail(what, field + ".dtype",
           "unknown dtype '" + dt + "' (expected F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL)");
    if (!v.contains("shape") || !v["shape"].is_array())
      fail(what, field + ".shape", "missing or not an array");
    uint64_t numel = 1;
    for (auto& s : v["shape"]) {
      if (!s.is_number_unsigned() && !(s.is_number_integer() && s.get<int64_t>() >= 0))
        fail(what, field + ".shape", "expected non-negative integers");
      uint64_t d = s.get<uint64_t>();
      if (d != 0 && numel > std::numeric_limits<uint64_t>::max() / 16 / d)
        fail(what, field + ".shape", "too many elements");
      numel *= d;
      rec.shape.push_back(static_cast<int64_t>(d));
    }
    if (!v.contains("data_offsets") || !v["data_offsets"].is_array() ||
        v["data_offsets"].size() != 2)
      fail(what, field + ".data_offsets", "expected [begin, end]");
    for (auto& o : v["data_offsets"])
      if (!o.is_number_unsigned() && !(o.is_number_integer() && o.get<int64_t>() >= 0))
        fail(what, field + ".data_offsets", "expected non-negative integers");
    uint64_t begin = v["data_offsets"][0].get<uint64_t>(),
             end = v["data_offsets"][1].get<uint64_t>();
    if (begin > end)
      fail(what, field + ".data_offsets",
           "begin " + std::to_string(begin) + " is after end " + std::to_string(end));
    if (end > data_size)
      fail(what, field + ".data_offsets",
           "end " + std::to_string(end) + " is past the data (" + std::to_string(data_size) +
               " bytes; truncated file?)");
    uint64_t expected = numel * static_cast<uint64_t>(element_size(rec.dtype));
    if (end - begin != expected)
      fail(what, field + ".data_offsets",
           "span of " + std::to_string(end - begin) + " bytes does not match dtype " + dt +
               " and shape (" + std::to_string(expected) + " bytes)");
    rec.data.assign(data + begin, end - begin);
    spans.push_back({begin, end, file.tensors.size()});
    file.tensors.push_back(std::move(rec));
  }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t cursor = 0;
  for (auto& s : spans) {
    const std::string field = "tensor '" + file.tensors[s.index].name + "'.data_offsets";
    if (s.begin < cursor) fail(what, field, "overlaps the previous tensor's data");
    if (s.begin > cursor)
      fail(what, field,
           "leaves a hole of " + std::to_string(s.begin - cursor) + " bytes before it");
    cursor = s.end;
  }
  if (cursor != data_size)
    fail(what, "data",
         std::to_string(data_size - cursor) + " trailing bytes not covered by any tensor");
  std::vector<TensorRecord> ordered;
  for (auto& s : spans) ordered.push_back(std::move(file.tensors[s.index]));
  file.tensors = std::move(ordered);
  return file;
}

TensorFile load_safetensors(const std::string& path) {
  return parse_safetensors(read_file(path), path);
}

std::string serialize_safetensors(const TensorFile& file) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!file.metadata.empty()) header["__metadata__"] = file.metadata;
  uint64_t offset = 0;
  std::set<std::string> names;
  for (auto& t : file.tensors) {
    if (!names.insert(t.name).second) throw Error("tensor name '" + t.name + "' appears twice");
    if (t.name == "__metadata__") throw Error("'__metadata__' cannot name a tensor");
    uint64_t numel = 1;
    for (int64_t d : t.shape) {
      if (d < 0) throw Error("tensor '" + t.name + "' has a negative dimension");
      numel *= static_cast<uint64_t>(d);
    }
    uint64_t nbytes = numel * static_cast<uint64_t>(element_size(t.dtype));
    if (t.data.size() != nbytes)
      throw Error("tensor '" + t.name + "' holds " + std::to_string(t.data.size()) +
                  " bytes, expected " + std::to_string(nbytes));
    header[t.name] = {{"dtype", safetensors_dtype_name(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
  }
  std::string h = header.dump();
  while (h.size() % 8 != 0) h += ' ';
  std::string out(8, '\0');
  uint64_t len = h.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((len >> (8 * i)) & 0xff);
  out += h;
  for (auto& t : file.tensors) out += t.data;
  return out;
}

void save_safetensors(const std::string& path, const TensorFile& file) {
  write_file_atomic(path, serialize_safetensors(file));
}

}  // namespace aotgrad
