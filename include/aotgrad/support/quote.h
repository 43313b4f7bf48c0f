// aotgrad: quoting bytes from a file in an error message. Std only.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace aotgrad {

/// `bytes` in single quotes for an error message: printable ASCII as it is, every other byte as
/// \xNN, and more than `max_bytes` bytes shortened with "...". The result is printable ASCII, so a
/// message quoting a corrupt file is still valid UTF-8 text for logs and tools reading stderr.
std::string quote_bytes(std::string_view bytes, size_t max_bytes = 60);

/// `text` with every byte that is not printable ASCII written as \xNN (a backslash as \\): for
/// messages that embed text from a file, such as a JSON parser's own message, without quotes.
std::string escape_bytes(std::string_view text);

}  // namespace aotgrad
