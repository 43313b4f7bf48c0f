// Tests for the safetensors reader and writer: round trips and corrupt inputs.
#include "aotgrad/runtime/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "aotgrad/ir/error.h"
#include "aotgrad/support/quote.h"

namespace aotgrad {
namespace {

TensorRecord make(const std::string& name, ScalarType t, std::vector<int64_t> shape) {
  TensorRecord r;
  r.name = name;
  r.dtype = t;
  r.shape = shape;
  int64_t n = 1;
  for (auto d : shape) n *= d;
  r.data.resize(n * element_size(t));
  for (size_t i = 0; i < r.data.size(); ++i) r.data[i] = static_cast<char>(i * 7 + 3);
  return r;
}

std::string header_of(const std::string& json, const std::string& data) {
  std::string out(8, '\0');
  uint64_t len = json.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((len >> (8 * i)) & 0xff);
  return out + json + data;
}

bool printable_ascii(const std::string& s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) < 32 || static_cast<unsigned char>(c) >= 127) return false;
  return true;
}

std::string error_of(const std::string& bytes) {
  try {
    parse_safetensors(bytes, "in.safetensors");
  } catch (const Error& e) {
    return e.message();
  }
  return "";
}

TEST(Safetensors, RoundTripsEveryDtype) {
  TensorFile f;
  ScalarType types[] = {ScalarType::Float64,  ScalarType::Float32, ScalarType::Float16,
                        ScalarType::BFloat16, ScalarType::Int64,   ScalarType::Int32,
                        ScalarType::Int16,    ScalarType::Int8,    ScalarType::UInt8,
                        ScalarType::Bool};
  int i = 0;
  for (auto t : types) f.tensors.push_back(make("t" + std::to_string(i++), t, {2, 3}));
  f.tensors.push_back(make("scalar", ScalarType::Float32, {}));
  f.tensors.push_back(make("empty", ScalarType::Float32, {0, 4}));
  f.metadata["format"] = "pt";
  TensorFile g = parse_safetensors(serialize_safetensors(f), "mem");
  ASSERT_EQ(g.tensors.size(), f.tensors.size());
  for (auto& t : f.tensors) {
    const TensorRecord* r = g.find(t.name);
    ASSERT_NE(r, nullptr) << t.name;
    EXPECT_EQ(r->dtype, t.dtype) << t.name;
    EXPECT_EQ(r->shape, t.shape) << t.name;
    EXPECT_EQ(r->data, t.data) << t.name;
  }
  EXPECT_EQ(g.metadata.at("format"), "pt");
}

TEST(Safetensors, HeaderIsPaddedToEightBytes) {
  TensorFile f;
  f.tensors.push_back(make("x", ScalarType::Float32, {3}));
  std::string bytes = serialize_safetensors(f);
  uint64_t len = 0;
  for (int i = 7; i >= 0; --i) len = (len << 8) | static_cast<unsigned char>(bytes[i]);
  EXPECT_EQ(len % 8, 0u);
}

TEST(Safetensors, SaveIsAtomicAndLoadReadsBack) {
  auto dir = std::filesystem::temp_directory_path() / ("aotgrad_st_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "out.safetensors").string();
  TensorFile f;
  f.tensors.push_back(make("w", ScalarType::Float32, {4, 4}));
  save_safetensors(path, f);
  EXPECT_EQ(load_safetensors(path).tensors[0].data, f.tensors[0].data);
  // A failing write (bad directory) leaves nothing behind and names the file.
  try {
    save_safetensors((dir / "no_such_dir" / "x.safetensors").string(), f);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("x.safetensors"), std::string::npos);
  }
  size_t entries = 0;
  for (auto& p : std::filesystem::directory_iterator(dir)) entries += !p.path().empty();
  EXPECT_EQ(entries, 1u);  // no temporary files left
  std::filesystem::remove_all(dir);
}

TEST(Safetensors, CorruptFilesNameTheField) {
  const std::string ok = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  EXPECT_EQ(error_of(header_of(ok, std::string(8, 'a'))), "");
  EXPECT_NE(error_of("abc").find("header length"), std::string::npos);
  EXPECT_NE(error_of(header_of(ok, std::string(8, 'a')).substr(0, 20)).find("truncated"),
            std::string::npos);
  EXPECT_NE(error_of(header_of("{not json", "")).find("invalid JSON"), std::string::npos);
  EXPECT_NE(error_of(header_of("[1,2]", "")).find("JSON object"), std::string::npos);
  EXPECT_NE(error_of(header_of(R"({"x":{"dtype":"F99","shape":[2],"data_offsets":[0,8]}})",
                               std::string(8, 'a')))
                .find("tensor 'x'.dtype"),
            std::string::npos);
  EXPECT_NE(error_of(header_of(R"({"x":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})",
                               std::string(8, 'a')))
                .find("tensor 'x'.shape"),
            std::string::npos);
  EXPECT_NE(error_of(header_of(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
                               std::string(8, 'a')))
                .find("does not match dtype F32"),
            std::string::npos);
  EXPECT_NE(error_of(header_of(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}})",
                               std::string(8, 'a')))
                .find("past the data"),
            std::string::npos);
  EXPECT_NE(error_of(header_of(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})",
                               std::string(8, 'a')))
                .find("after end"),
            std::string::npos);
  EXPECT_NE(
      error_of(
          header_of(
              R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
              std::string(8, 'a')))
          .find("overlaps"),
      std::string::npos);
  EXPECT_NE(error_of(header_of(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                               std::string(8, 'a')))
                .find("hole"),
            std::string::npos);
  EXPECT_NE(error_of(header_of(ok, std::string(12, 'a'))).find("trailing"), std::string::npos);
  EXPECT_NE(error_of(header_of(R"({"x":{"dtype":"F32","shape":[2]}})", std::string(8, 'a')))
                .find("data_offsets"),
            std::string::npos);
  EXPECT_NE(
      error_of(header_of(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"extra":1}})",
                         std::string(8, 'a')))
          .find("unknown field"),
      std::string::npos);
}

TEST(Safetensors, MutatedBytesNeverCrash) {
  TensorFile f;
  f.tensors.push_back(make("a", ScalarType::Float32, {3, 2}));
  f.tensors.push_back(make("b", ScalarType::Int64, {4}));
  const std::string good = serialize_safetensors(f);
  uint32_t seed = 12345;
  auto rnd = [&] { return seed = seed * 1664525u + 1013904223u; };
  int errors = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string b = good;
    int edits = 1 + rnd() % 4;
    for (int k = 0; k < edits; ++k) {
      switch (rnd() % 3) {
        case 0: b[rnd() % b.size()] = static_cast<char>(rnd()); break;
        case 1: b.resize(rnd() % b.size()); break;
        case 2: b.insert(rnd() % (b.size() + 1), 1, static_cast<char>(rnd())); break;
      }
      if (b.empty()) break;
    }
    try {
      parse_safetensors(b, "fuzz");
    } catch (const Error& e) {
      ++errors;
      EXPECT_TRUE(printable_ascii(e.message())) << i << ": " << escape_bytes(e.message());
    }
  }
  EXPECT_GT(errors, 1000);  // most mutations are detected; none crashed
}

// Bytes of a corrupt header that are not printable ASCII are escaped in the message (they were
// echoed raw: a message that is not valid UTF-8 breaks logs and tools reading stderr as text).
// Each case puts such bytes where the reader quotes them: the JSON parser's "last read", a tensor
// name, a dtype, a field name, metadata.
TEST(Safetensors, CorruptHeadersGiveTextMessages) {
  const std::string data(24, '\0');
  const std::string ok = R"("shape": [2, 3], "data_offsets": [0, 24])";
  const std::vector<std::string> headers = {
      "{\"a\": {\"dtype\": \"F32\", " + ok + "}\xff}",
      "{\"\xc3\xa9\": {\"dtype\": \"F32\", " + ok + ", \"x\": 1}}",
      "{\"\xff\xfe\": {\"dtype\": \"F32\", " + ok + "}}",
      "{\"a\": {\"dtype\": \"F\xc3\xa9\", " + ok + "}}",
      "{\"a\": {\"dtype\": \"\xe2\x82\", " + ok + "}}",
      "{\"a\": {\"dtype\": \"F32\", " + ok + ", \"\x01\x02\": 1}}",
      "{\"__metadata__\": {\"\xc0\": 1}}",
      "{\"a\": {\"dtype\": \"F32\", \"shape\": [2, \"\x9f\"], \"data_offsets\": [0, 24]}}",
      "\x80\x81\x82",
      "{\"a\x00b\": 7}",
      "{\"\t\n\": {}}",
  };
  int messages = 0;
  for (size_t i = 0; i < headers.size(); ++i) {
    std::string m = error_of(header_of(headers[i], data));
    ASSERT_FALSE(m.empty()) << i << ": no error";
    EXPECT_TRUE(printable_ascii(m)) << i << ": " << escape_bytes(m);
    EXPECT_EQ(m.rfind("in.safetensors: ", 0), 0u) << m;
    ++messages;
  }
  // A quoted name (valid JSON, UTF-8) keeps its printable bytes and escapes the rest.
  std::string named = error_of(header_of(headers[1], data));
  EXPECT_NE(named.find("tensor '\\xc3\\xa9'.x: unknown field"), std::string::npos) << named;
  // Random corruption of header bytes, from the bytes that break UTF-8 most often.
  TensorFile f;
  f.tensors.push_back(make("weight", ScalarType::Float32, {3, 2}));
  const std::string good = serialize_safetensors(f);
  uint32_t seed = 99;
  auto rnd = [&] { return seed = seed * 1664525u + 1013904223u; };
  for (int i = 0; i < 60; ++i) {
    std::string b = good;
    size_t header_len = static_cast<unsigned char>(good[0]) |
                        static_cast<size_t>(static_cast<unsigned char>(good[1])) << 8;
    for (int k = 0; k < 1 + i % 3; ++k)
      b[8 + rnd() % header_len] = static_cast<char>(0x80 | (rnd() & 0x7f));
    std::string m = error_of(b);
    if (m.empty()) continue;
    EXPECT_TRUE(printable_ascii(m)) << i << ": " << escape_bytes(m);
    ++messages;
  }
  EXPECT_GT(messages, 50);
}

}  // namespace
}  // namespace aotgrad
