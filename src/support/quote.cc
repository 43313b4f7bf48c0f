// aotgrad: quoting bytes in error messages.
#include "aotgrad/support/quote.h"

namespace aotgrad {
namespace {

void append_escaped(std::string& out, unsigned char u) {
  static const char* kHex = "0123456789abcdef";
  out += "\\x";
  out += kHex[u >> 4];
  out += kHex[u & 15];
}

}  // namespace

std::string quote_bytes(std::string_view bytes, size_t max_bytes) {
  std::string out = "'";
  size_t shown = 0;
  for (char c : bytes) {
    if (++shown > max_bytes) {
      out += "...";
      break;
    }
    auto u = static_cast<unsigned char>(c);
    if (u < 32 || u >= 127)
      append_escaped(out, u);
    else
      out += c;
  }
  return out + "'";
}

std::string escape_bytes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (c == '\\')
      out += "\\\\";
    else if (u < 32 || u >= 127)
      append_escaped(out, u);
    else
      out += c;
  }
  return out;
}

}  // namespace aotgrad
