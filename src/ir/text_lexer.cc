// aotgrad: the tokenizer of the graph text form.
#include "text_lexer.h"

#include <array>

#include "aotgrad/support/quote.h"

namespace aotgrad::text {
namespace {

// Character classes, one table lookup per character on the hot path.
enum : uint8_t {
  kNameStart = 1,  // a-z A-Z _
  kDigit = 2,      // 0-9
  kSpace = 4,      // ' ' \t \r \f
  kPunct = 8,      // other printable ASCII
};

constexpr std::array<uint8_t, 256> make_classes() {
  std::array<uint8_t, 256> t{};
  for (int c = 33; c < 127; ++c) t[c] = kPunct;
  for (int c = 'a'; c <= 'z'; ++c) t[c] = kNameStart;
  for (int c = 'A'; c <= 'Z'; ++c) t[c] = kNameStart;
  t['_'] = kNameStart;
  for (int c = '0'; c <= '9'; ++c) t[c] = kDigit;
  t[' '] = t['\t'] = t['\r'] = t['\f'] = kSpace;
  return t;
}
constexpr std::array<uint8_t, 256> kClasses = make_classes();

inline uint8_t cls(char c) { return kClasses[static_cast<unsigned char>(c)]; }
inline bool is_digit(char c) { return cls(c) == kDigit; }

}  // namespace

__attribute__((always_inline)) inline void Lexer::lex_one(Token& t) {
  const char* const s = src_.data();
  const size_t n = src_.size();
  size_t p = pos_;
  while (p < n) {
    char c = s[p];
    if (cls(c) == kSpace) {
      ++p;
    } else if (c == '\n') {
      t.kind = TokKind::Newline;
      t.loc = {line_, static_cast<int>(p - line_start_) + 1};
      ++p;
      ++line_;
      line_start_ = p;
      if (depth_ > 0) continue;  // implicit line joining inside brackets
      pos_ = p;
      return;
    } else if (c == '#') {
      size_t start = ++p;
      while (p < n && s[p] != '\n') ++p;
      comment_ = std::string_view(s + start, p - start);
    } else if (c == '\\' && p + 1 < n && (s[p + 1] == '\n' || s[p + 1] == '\r')) {
      ++p;  // line continuation: the newline is skipped here
      if (s[p] == '\r') ++p;
      if (p < n && s[p] == '\n') {
        ++p;
        ++line_;
        line_start_ = p;
      }
    } else {
      break;
    }
  }
  t.loc = {line_, static_cast<int>(p - line_start_) + 1};
  if (p >= n) {
    pos_ = p;
    t.kind = TokKind::End;
    return;
  }
  const size_t start = p;
  const char c = s[p];
  const uint8_t k = cls(c);
  if (k == kNameStart) {
    ++p;
    while (p < n && (cls(s[p]) & (kNameStart | kDigit))) ++p;
    t.kind = TokKind::Name;
  } else if (k == kDigit || (c == '.' && p + 1 < n && is_digit(s[p + 1]))) {
    t.kind = TokKind::Int;
    while (p < n && is_digit(s[p])) ++p;
    if (p < n && s[p] == '.') {
      t.kind = TokKind::Float;
      ++p;
      while (p < n && is_digit(s[p])) ++p;
    }
    if (p < n && (s[p] == 'e' || s[p] == 'E')) {
      size_t q = p + 1;
      if (q < n && (s[q] == '+' || s[q] == '-')) ++q;
      if (q < n && is_digit(s[q])) {
        while (q < n && is_digit(s[q])) ++q;
        p = q;
        t.kind = TokKind::Float;
      }
    }
  } else if (c == '\'' || c == '"') {
    ++p;
    while (true) {
      if (p >= n || s[p] == '\n') {
        pos_ = p;
        throw Error("unterminated string literal (expected a closing " + std::string(1, c) + ")",
                    t.loc);
      }
      char d = s[p];
      if (d == c) break;
      if (d == '\\') {
        t.has_escape = true;
        if (p + 1 < n && s[p + 1] != '\n') ++p;  // an escaped newline: unterminated, above
      }
      ++p;
    }
    t.kind = TokKind::String;
    t.text = std::string_view(s + start + 1, p - start - 1);
    pos_ = p + 1;
    return;
  } else if (k == kPunct) {
    ++p;
    t.kind = TokKind::Punct;
    t.punct = c;
    if (c == '(' || c == '[' || c == '{') ++depth_;
    if ((c == ')' || c == ']' || c == '}') && depth_ > 0) --depth_;
  } else {
    pos_ = p;
    throw Error("unexpected character " + quote_bytes(std::string_view(s + p, 1)) +
                    " (the graph text is ASCII Python code)",
                t.loc);
  }
  t.text = std::string_view(s + start, p - start);
  pos_ = p;
}

void Lexer::next_line(std::vector<Token>& out) {
  out.clear();
  comment_ = {};
  while (true) {
    Token& t = out.emplace_back();
    lex_one(t);
    if (t.kind == TokKind::Newline && out.size() == 1) {  // blank or comment-only line
      out.clear();
      comment_ = {};
      continue;
    }
    if (t.at_line_end()) return;
  }
}

std::string decode_string(const Token& t) {
  if (!t.has_escape) return std::string(t.text);
  std::string out;
  out.reserve(t.text.size());
  for (size_t i = 0; i < t.text.size(); ++i) {
    char c = t.text[i];
    if (c != '\\' || i + 1 >= t.text.size()) {
      out += c;
      continue;
    }
    char e = t.text[++i];
    switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case '0': out += '\0'; break;
      case 'x': {
        auto hex = [](char h) -> int {
          if (h >= '0' && h <= '9') return h - '0';
          if (h >= 'a' && h <= 'f') return h - 'a' + 10;
          if (h >= 'A' && h <= 'F') return h - 'A' + 10;
          return -1;
        };
        int hi = i + 1 < t.text.size() ? hex(t.text[i + 1]) : -1;
        int lo = i + 2 < t.text.size() ? hex(t.text[i + 2]) : -1;
        if (hi < 0 || lo < 0) {
          out += "\\x";
        } else {
          out += static_cast<char>(hi * 16 + lo);
          i += 2;
        }
        break;
      }
      case '\\':
      case '\'':
      case '"': out += e; break;
      default:  // Python keeps unknown escapes as written
        out += '\\';
        out += e;
    }
  }
  return out;
}

std::string describe_token(const Token& t) {
  switch (t.kind) {
    case TokKind::Newline: return "end of line";
    case TokKind::End: return "end of input";
    case TokKind::String: return "string " + quote_bytes(t.text);
    default: return quote_bytes(t.text);
  }
}

}  // namespace aotgrad::text
