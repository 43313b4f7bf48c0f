// Tests for whole-file reads and atomic writes: content, errors naming the file, no temporary
// file left behind, concurrent writers.
#include "aotgrad/support/file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "aotgrad/support/error.h"

namespace aotgrad {
namespace {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "aotgrad_file_XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  size_t entries() const {
    size_t n = 0;
    for (auto it = std::filesystem::directory_iterator(path); it != decltype(it)(); ++it) ++n;
    return n;
  }
};

TEST(File, WritesAndReadsBackBytes) {
  TempDir dir;
  std::string path = (dir.path / "a.bin").string();
  std::string bytes("a\0b\xff\n", 5);
  write_file_atomic(path, bytes);
  EXPECT_EQ(read_file(path), bytes);
  write_file_atomic(path, "shorter");
  EXPECT_EQ(read_file(path), "shorter");
  EXPECT_EQ(dir.entries(), 1u);  // no temporary file left
}

TEST(File, ErrorsNameTheFile) {
  TempDir dir;
  std::string missing = (dir.path / "nope" / "x.txt").string();
  try {
    write_file_atomic(missing, "x");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("cannot write '" + missing + "'"), std::string::npos) << e.message();
  }
  try {
    read_file(missing);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("cannot open '" + missing + "'"), std::string::npos) << e.message();
  }
  EXPECT_EQ(dir.entries(), 0u);
}

TEST(File, ConcurrentWritersLeaveOneWholeFile) {
  TempDir dir;
  std::string path = (dir.path / "shared").string();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) write_file_atomic(path, std::string(10000, 'a' + t));
    });
  for (auto& th : threads) th.join();
  std::string got = read_file(path);
  ASSERT_EQ(got.size(), 10000u);
  EXPECT_EQ(got, std::string(10000, got[0]));
  EXPECT_EQ(dir.entries(), 1u);
}

}  // namespace
}  // namespace aotgrad
