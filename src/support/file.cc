// aotgrad: whole-file reads and atomic writes.
#include "aotgrad/support/file.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "aotgrad/support/error.h"

namespace aotgrad {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open '" + path + "': " + std::strerror(errno));
  std::string s{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) throw Error("cannot read '" + path + "'");
  return s;
}

void write_file_atomic(const std::string& path, std::string_view content) {
  static std::atomic<uint64_t> next{0};
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string tmp =
      dir + "." + base + "." + std::to_string(::getpid()) + "." + std::to_string(next++) + ".tmp";
  auto fail = [&](const std::string& cause) {
    std::remove(tmp.c_str());
    throw Error("cannot write '" + path + "': " + cause);
  };
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail(std::strerror(errno));
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.close();
    if (!out) fail(std::string("write failed: ") + std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail(std::strerror(errno));
}

std::string user_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/aotgrad";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/aotgrad";
  return "";
}

}  // namespace aotgrad
