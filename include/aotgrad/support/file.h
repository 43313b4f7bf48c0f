// aotgrad: reading whole files and writing them atomically. Std only.
#pragma once

#include <string>
#include <string_view>

namespace aotgrad {

/// The bytes of the file at `path`. Throws Error "cannot open 'PATH': CAUSE" (or "cannot read").
std::string read_file(const std::string& path);

/// Writes `content` to a temporary file in the directory of `path` (".NAME.PID.N.tmp"), then
/// renames it onto `path`, so a reader never sees a partial file and concurrent writers leave one
/// whole file. Throws Error "cannot write 'PATH': CAUSE" and leaves no temporary file behind.
void write_file_atomic(const std::string& path, std::string_view content);

/// The user's cache directory for aotgrad: XDG_CACHE_HOME/aotgrad, else HOME/.cache/aotgrad; ""
/// when neither is set.
std::string user_cache_dir();

}  // namespace aotgrad
