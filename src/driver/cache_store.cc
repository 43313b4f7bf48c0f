// aotgrad: the compile cache's directory of entries, its counters and warnings.
#include "aotgrad/driver/cache_store.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <set>

#include "aotgrad/driver/cache_entry.h"
#include "aotgrad/ir/error.h"
#include "aotgrad/support/file.h"
#include "aotgrad/support/logging.h"

namespace aotgrad {
namespace {

struct Counters {
  std::atomic<int64_t> hits{0}, misses{0}, corrupt{0}, saved{0}, bypasses{0};
};
Counters& counters() {
  static Counters c;
  return c;
}

// Whether `what` is reported for the first time in this process (each unusable directory is
// reported once).
bool first_report_of(const std::string& what) {
  static std::mutex mu;
  static std::set<std::string> seen;
  std::lock_guard<std::mutex> lock(mu);
  return seen.insert(what).second;
}

void warn(const std::string& text) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::cerr << "aotgrad: warning: " << text << "\n";
  std::cerr.flush();
}

void log_cache(const std::string& text) {
  if (log_settings().cache) log_text("aotgrad cache: " + text);
}

std::string elapsed_text(std::chrono::steady_clock::time_point t0) {
  char buf[64];
  std::snprintf(
      buf, sizeof buf, "%.17g ms",
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  return buf;
}

}  // namespace

CompileCacheStats compile_cache_stats() {
  Counters& c = counters();
  return {c.hits.load(), c.misses.load(), c.corrupt.load(), c.saved.load(), c.bypasses.load()};
}

void reset_compile_cache_stats() {
  Counters& c = counters();
  c.hits = c.misses = c.corrupt = c.saved = c.bypasses = 0;
}

std::string default_compile_cache_dir() {
  if (const char* env = std::getenv("AOTGRAD_CACHE_DIR")) {
    std::string v = env;
    if (v.empty() || v == "off" || v == "0" || v == "false" || v == "none") return "";
    return v;
  }
  return user_cache_dir();
}

std::string resolve_compile_cache_dir(const std::optional<std::string>& option) {
  if (!option) return default_compile_cache_dir();
  if (option->empty() || *option == "off") return "";
  return *option;
}

CompileCache::CompileCache(std::string dir) : dir_(std::move(dir)) {
  AOTGRAD_CHECK(!dir_.empty(), "compile cache: empty directory name");
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  std::string cause;
  if (ec)
    cause = ec.message();
  else if (!std::filesystem::is_directory(dir_, ec))
    cause = "not a directory";
  else if (::access(dir_.c_str(), W_OK | X_OK) != 0)
    cause = std::strerror(errno);
  usable_ = cause.empty();
  if (!usable_ && first_report_of("dir " + dir_))
    warn("compile cache directory '" + dir_ + "' cannot be used (" + cause +
         "); compiling without the cache");
}

std::string CompileCache::entry_path(const std::string& key) const {
  return dir_ + "/" + key + ".entry";
}

bool CompileCache::load(const std::string& key, CompileState& s) const {
  auto t0 = std::chrono::steady_clock::now();
  std::string path = entry_path(key);
  std::error_code ec;
  if (usable_ && std::filesystem::exists(path, ec)) {
    try {
      std::string text;
      try {
        text = read_file(path);
      } catch (const Error&) {
        text.clear();  // unreadable: reported as corrupt by the parser
      }
      // Parsed into a fresh compilation, so that a corrupt entry leaves `s` as it was.
      CompileState loaded;
      loaded.kind = s.kind;
      loaded.requires_grad = s.requires_grad;
      loaded.aot_id = s.aot_id;
      parse_cache_entry(text, key, loaded);
      s = std::move(loaded);
      counters().hits++;
      log_cache("hit for key " + key + " (" + path + ", " + elapsed_text(t0) + ")");
      return true;
    } catch (const Error& e) {
      counters().corrupt++;
      warn("compile cache entry '" + path + "' is unusable: " + e.message() +
           "; recompiling and overwriting it");
      log_cache("corrupt entry " + path + ": " + e.message());
    }
  }
  counters().misses++;
  log_cache("miss for key " + key);
  return false;
}

bool CompileCache::store(const std::string& key, std::string_view version,
                         const CompileState& s) const {
  if (!usable_) return false;
  std::string path = entry_path(key);
  try {
    write_file_atomic(path, serialize_cache_entry(key, version, s));
  } catch (const Error& e) {
    if (first_report_of("write " + dir_)) warn("compile cache: " + e.message());
    return false;
  }
  counters().saved++;
  log_cache("saved " + path);
  return true;
}

void CompileCache::bypass(const std::string& why) {
  counters().bypasses++;
  log_cache("bypass" + why);
}

}  // namespace aotgrad
