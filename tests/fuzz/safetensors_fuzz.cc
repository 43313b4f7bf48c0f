// aotgrad: libFuzzer target -- the safetensors reader (`aotgrad run --inputs`, --tangents). Bytes
// parse into tensors, or they are an Error naming the field; what parses serializes to bytes that
// parse to the same tensors.
#include <cstddef>
#include <cstdint>
#include <string>

#include "aotgrad/runtime/safetensors.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace aotgrad;
  std::string bytes(reinterpret_cast<const char*>(data), size);
  TensorFile file;
  try {
    file = parse_safetensors(bytes, "input.safetensors");
  } catch (const Error& e) {
    fuzz::check_error(e);
    return 0;
  }
  std::string written;
  try {
    written = serialize_safetensors(file);
  } catch (const Error& e) {
    // Only names the format cannot hold twice; the reader keeps one of each JSON key.
    fuzz::require(false, "a parsed file does not serialize: " + e.message());
  }
  TensorFile back;
  try {
    back = parse_safetensors(written, "written.safetensors");
  } catch (const Error& e) {
    fuzz::require(false, "a serialized file does not parse: " + e.message());
  }
  fuzz::require(back.metadata == file.metadata, "metadata changed in a round trip");
  fuzz::require(back.tensors.size() == file.tensors.size(), "tensor count changed in a round trip");
  for (size_t i = 0; i < file.tensors.size(); ++i) {
    const TensorRecord &a = file.tensors[i], &b = back.tensors[i];
    fuzz::require(a.name == b.name && a.dtype == b.dtype && a.shape == b.shape && a.data == b.data,
                  "tensor '" + a.name + "' changed in a round trip");
  }
  return 0;
}
