// aotgrad: SHA-256 (FIPS 180-4), for compile-cache keys and entry checksums. Std only.
#pragma once

#include <string>
#include <string_view>

namespace aotgrad {

/// SHA-256 of `data` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

}  // namespace aotgrad
