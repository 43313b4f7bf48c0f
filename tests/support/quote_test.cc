// Tests for quoting bytes in error messages: printable ASCII kept, every other byte escaped, long
// text shortened; the result is printable ASCII whatever the bytes.
#include "aotgrad/support/quote.h"

#include <gtest/gtest.h>

#include <string>

namespace aotgrad {
namespace {

bool printable_ascii(const std::string& s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) < 32 || static_cast<unsigned char>(c) >= 127) return false;
  return true;
}

TEST(QuoteBytes, EscapesWhatIsNotPrintableAscii) {
  EXPECT_EQ(quote_bytes("relu"), "'relu'");
  EXPECT_EQ(quote_bytes(std::string("a\0b", 3)), "'a\\x00b'");
  EXPECT_EQ(quote_bytes("\xff\xfe\n\t\x7f"), "'\\xff\\xfe\\x0a\\x09\\x7f'");
  EXPECT_EQ(quote_bytes("caf\xc3\xa9"), "'caf\\xc3\\xa9'");  // UTF-8 too: the message is ASCII
  EXPECT_EQ(quote_bytes(std::string(100, 'x'), 10), "'xxxxxxxxxx...'");
  EXPECT_EQ(quote_bytes(""), "''");
}

TEST(EscapeBytes, KeepsPrintableTextAndEscapesTheRest) {
  EXPECT_EQ(escape_bytes("syntax error at 'x'"), "syntax error at 'x'");
  EXPECT_EQ(escape_bytes("a\\b"), "a\\\\b");
  EXPECT_EQ(escape_bytes("last read: '\x80\xff'"), "last read: '\\x80\\xff'");
}

TEST(QuoteBytes, EveryByteGivesPrintableAscii) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  EXPECT_TRUE(printable_ascii(quote_bytes(all, 1000)));
  EXPECT_TRUE(printable_ascii(escape_bytes(all)));
}

}  // namespace
}  // namespace aotgrad
