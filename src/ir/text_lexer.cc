// aotgrad: the tokenizer of the graph text form.
#include "text_lexer.h"

namespace aotgrad::text {
namespace {

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

}  // namespace

void Lexer::next_line(std::vector<Token>& out) {
  out.clear();
  while (true) {
    Token t = lex_one();
    if (t.kind == TokKind::Newline && out.empty()) continue;  // blank or comment-only line
    out.push_back(t);
    if (t.at_line_end()) return;
  }
}

Token Lexer::lex_one() {
  const size_t n = src_.size();
  while (pos_ < n) {
    char c = src_[pos_];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
      ++pos_;
    } else if (c == '#') {
      while (pos_ < n && src_[pos_] != '\n') ++pos_;
    } else if (c == '\\' && (pos_ + 1 < n && (src_[pos_ + 1] == '\n' || src_[pos_ + 1] == '\r'))) {
      ++pos_;  // line continuation: the newline is skipped below
      if (src_[pos_] == '\r') ++pos_;
      if (pos_ < n && src_[pos_] == '\n') {
        ++pos_;
        ++line_;
        line_start_ = pos_;
      }
    } else if (c == '\n') {
      Token t;
      t.kind = TokKind::Newline;
      t.loc = here();
      ++pos_;
      ++line_;
      line_start_ = pos_;
      if (depth_ > 0) continue;  // implicit line joining inside brackets
      return t;
    } else {
      break;
    }
  }
  Token t;
  t.loc = here();
  if (pos_ >= n) {
    t.kind = TokKind::End;
    return t;
  }
  const size_t start = pos_;
  char c = src_[pos_];
  if (is_name_start(c)) {
    while (pos_ < n && is_name_char(src_[pos_])) ++pos_;
    t.kind = TokKind::Name;
  } else if (is_digit(c) || (c == '.' && pos_ + 1 < n && is_digit(src_[pos_ + 1]))) {
    t.kind = TokKind::Int;
    while (pos_ < n && is_digit(src_[pos_])) ++pos_;
    if (pos_ < n && src_[pos_] == '.') {
      t.kind = TokKind::Float;
      ++pos_;
      while (pos_ < n && is_digit(src_[pos_])) ++pos_;
    }
    if (pos_ < n && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      size_t p = pos_ + 1;
      if (p < n && (src_[p] == '+' || src_[p] == '-')) ++p;
      if (p < n && is_digit(src_[p])) {
        while (p < n && is_digit(src_[p])) ++p;
        pos_ = p;
        t.kind = TokKind::Float;
      }
    }
  } else if (c == '\'' || c == '"') {
    ++pos_;
    while (true) {
      if (pos_ >= n || src_[pos_] == '\n')
        throw Error("unterminated string literal (expected a closing " + std::string(1, c) + ")",
                    t.loc);
      char d = src_[pos_];
      if (d == c) break;
      if (d == '\\') {
        t.has_escape = true;
        ++pos_;
        if (pos_ < n && src_[pos_] == '\n') continue;  // reported as unterminated above
      }
      ++pos_;
    }
    t.kind = TokKind::String;
    t.text = src_.substr(start + 1, pos_ - start - 1);
    ++pos_;
    return t;
  } else if (c > ' ' && c < 127) {
    ++pos_;
    t.kind = TokKind::Punct;
    t.punct = c;
    if (c == '(' || c == '[' || c == '{') ++depth_;
    if ((c == ')' || c == ']' || c == '}') && depth_ > 0) --depth_;
  } else {
    throw Error("unexpected character " + quote_for_message(src_.substr(pos_, 1)) +
                    " (the graph text is ASCII Python code)",
                t.loc);
  }
  t.text = src_.substr(start, pos_ - start);
  return t;
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
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case '0':
        out += '\0';
        break;
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
      case '"':
        out += e;
        break;
      default:  // Python keeps unknown escapes as written
        out += '\\';
        out += e;
    }
  }
  return out;
}

std::string quote_for_message(std::string_view s) {
  constexpr size_t kMax = 60;
  std::string out = "'";
  size_t shown = 0;
  for (char c : s) {
    if (++shown > kMax) {
      out += "...";
      break;
    }
    auto u = static_cast<unsigned char>(c);
    if (u < 32 || u >= 127) {
      static const char* kHex = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string describe_token(const Token& t) {
  switch (t.kind) {
    case TokKind::Newline:
      return "end of line";
    case TokKind::End:
      return "end of input";
    case TokKind::String:
      return "string " + quote_for_message(t.text);
    default:
      return quote_for_message(t.text);
  }
}

}  // namespace aotgrad::text
