// aotgrad: the tokenizer of the graph text form (a small subset of Python's lexical rules).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "aotgrad/ir/error.h"

namespace aotgrad::text {

enum class TokKind : uint8_t {
  Name,     // identifier (keywords included: the parser decides)
  Int,      // decimal digits
  Float,    // digits with '.', or an exponent
  String,   // '...' or "..."; `text` is the raw contents between the quotes
  Punct,    // one ASCII punctuation character, in `punct`
  Newline,  // end of a logical line (brackets closed)
  End,      // end of input
};

struct Token {
  TokKind kind = TokKind::End;
  char punct = 0;           // Punct only
  bool has_escape = false;  // String only: `text` contains backslash escapes
  std::string_view text;    // the token's characters (String: without the quotes)
  SourceLoc loc;            // 1-based line and column of the first character
  /// Whether this is punctuation character `c`.
  bool is(char c) const { return kind == TokKind::Punct && punct == c; }
  /// Whether this is the name `s`.
  bool is_name(std::string_view s) const { return kind == TokKind::Name && text == s; }
  bool at_line_end() const { return kind == TokKind::Newline || kind == TokKind::End; }
};

/// Splits graph text into logical lines of tokens. Newlines inside (), [] and {} and after a
/// backslash are ignored, as in Python; `#` starts a comment; indentation is not significant.
/// Throws Error with the position on an unterminated string or a character that cannot start a
/// token (control characters, bytes outside ASCII outside strings and comments).
class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {
    if (src_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = line_start_ = 3;  // a UTF-8 byte order mark
  }
  /// Lexes `src` from byte `begin`, which starts line `line` of the text (a block of a larger text:
  /// positions stay those of the whole text).
  Lexer(std::string_view src, size_t begin, int line)
      : src_(src), pos_(begin), line_start_(begin), line_(line) {}
  /// Replaces `out` with the tokens of the next non-empty logical line, ending with a Newline or
  /// End token. At the end of input `out` holds a single End token.
  void next_line(std::vector<Token>& out);
  /// The last comment of the line next_line returned (its text after '#'), or empty.
  std::string_view line_comment() const { return comment_; }

 private:
  void lex_one(Token& t);  // fills a default-constructed token

  std::string_view comment_;

  std::string_view src_;
  size_t pos_ = 0;
  size_t line_start_ = 0;
  int line_ = 1;
  int depth_ = 0;  // open brackets
};

/// The value of a string token's contents, with Python escapes (\n \t \\ \' \" \xNN) decoded.
std::string decode_string(const Token& t);
/// How a token reads in "got ..." messages: "'mul'", "end of line", "end of input".
std::string describe_token(const Token& t);

}  // namespace aotgrad::text
