// aotgrad: what every libFuzzer target of tests/fuzz checks. Bad input must end in an
// aotgrad::Error with a message in printable ASCII (bytes quoted from the input escaped); any other
// exception escapes the target, and libFuzzer reports it as a crash with its reproducer, as it
// does for a sanitizer report, a hang or a leak.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "aotgrad/support/error.h"

namespace aotgrad::fuzz {

/// Aborts (a crash libFuzzer reports) with `what` when `ok` is false.
inline void require(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz check failed: %s\n", what.c_str());
  std::abort();
}

/// The message of an Error the input caused: non-empty, and printable ASCII when `printable` (what
/// quotes a file's bytes escapes them; a command line's words are quoted as typed).
inline void check_error(const Error& e, bool printable = true) {
  require(!e.message().empty(), "an Error without a message");
  if (!printable) return;
  for (char c : e.message())
    require(static_cast<unsigned char>(c) >= 32 && static_cast<unsigned char>(c) < 127,
            "the Error message quotes bytes unescaped: " + e.message());
}

}  // namespace aotgrad::fuzz
