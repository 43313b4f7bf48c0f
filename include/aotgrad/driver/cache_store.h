// aotgrad: the compile cache's store -- one directory of entries, written atomically, with the
// process-wide counters and warnings (PyTorch's AOTAutogradCache, §13.19). Std only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "aotgrad/driver/pass_pipeline.h"

namespace aotgrad {

/// Process-wide counters, as PyTorch's counters["aot_autograd"]["autograd_cache_*"].
struct CompileCacheStats {
  int64_t hits = 0;      // an entry was loaded: the pipeline did not run
  int64_t misses = 0;    // no usable entry: the pipeline ran
  int64_t corrupt = 0;   // of the misses, entries that could not be read (reported, overwritten)
  int64_t saved = 0;     // entries written
  int64_t bypasses = 0;  // a cache was asked for but not used (unusable directory, caller's choice)
};
CompileCacheStats compile_cache_stats();
void reset_compile_cache_stats();

/// The cache directory a compilation uses when its options name none: $AOTGRAD_CACHE_DIR when set
/// (empty, "off", "0", "false" or "none": no cache, returns ""), else $XDG_CACHE_HOME/aotgrad, else
/// $HOME/.cache/aotgrad, else "" (no cache). Read on every call.
std::string default_compile_cache_dir();

/// The cache directory of an option: nullopt -> default_compile_cache_dir(); "" or "off" -> ""
/// (no cache); else the directory itself.
std::string resolve_compile_cache_dir(const std::optional<std::string>& option);

/// One cache directory. Entries are files `<dir>/<key>.entry` (cache_entry.h), written to a
/// temporary file in the same directory and renamed into place, so concurrent writers of one key
/// leave one whole entry and readers never see a partial one. A directory that cannot be created or
/// written is reported once per process on stderr and the cache is not used. A corrupt entry is
/// reported on stderr (file and cause), counted, and the compilation that follows overwrites it.
/// Hits, misses, corrupt and saved entries are logged on AOTGRAD_LOGS=cache. Thread-safe.
class CompileCache {
 public:
  explicit CompileCache(std::string dir);

  const std::string& dir() const { return dir_; }
  std::string entry_path(const std::string& key) const;
  /// Whether the directory exists (created when missing) and is writable.
  bool usable() const { return usable_; }

  /// Fills `s` from the entry of `key`; false when there is none or it is corrupt (reported).
  /// Counts a hit or a miss.
  bool load(const std::string& key, CompileState& s) const;
  /// Writes the entry of `s`; false (after a warning) when it could not be written.
  bool store(const std::string& key, std::string_view version, const CompileState& s) const;
  /// Counts and logs a bypass, a cache asked for but not used: "bypass" + `why` (": directory D
  /// cannot be used", " for key K: the caller needs the joint graph").
  static void bypass(const std::string& why);

 private:
  std::string dir_;
  bool usable_ = false;
};

}  // namespace aotgrad
