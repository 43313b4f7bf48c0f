// aotgrad: parser for ATen function schema strings.
#include "aotgrad/ir/schema.h"

#include <cctype>

#include "aotgrad/ir/error.h"

namespace aotgrad {

std::string TypeRef::to_string() const {
  static const char* kNames[] = {"Tensor",     "int",    "float",  "bool",         "Scalar",
                                 "ScalarType", "Layout", "Device", "MemoryFormat", "str",
                                 "Generator",  "SymInt", "Any"};
  std::string s = kNames[static_cast<int>(base)];
  if (elem_optional) s += "?";
  if (list) s += list_size ? "[" + std::to_string(list_size) + "]" : "[]";
  if (optional) s += "?";
  return s;
}

std::string FunctionSchema::qualified_name() const {
  return overload.empty() ? name : name + "." + overload;
}

int FunctionSchema::arg_index(const std::string& n) const {
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].name == n) return static_cast<int>(i);
  return -1;
}

namespace {

class SchemaParser {
 public:
  explicit SchemaParser(const std::string& s) : s_(s) {}

  FunctionSchema parse() {
    FunctionSchema fs;
    std::string full = ident_path();
    if (full.find("::") == std::string::npos) full = "aten::" + full;
    size_t dot = full.find('.', full.find("::"));
    fs.name = full.substr(0, dot);
    if (dot != std::string::npos) fs.overload = full.substr(dot + 1);
    expect('(');
    bool kwarg_only = false;
    skip_ws();
    if (peek() != ')') {
      while (true) {
        skip_ws();
        if (peek() == '*') {
          ++pos_;
          kwarg_only = true;
        } else {
          SchemaArg a = argument(/*is_return=*/false);
          a.kwarg_only = kwarg_only;
          fs.args.push_back(std::move(a));
        }
        skip_ws();
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        break;
      }
    }
    expect(')');
    skip_ws();
    if (s_.compare(pos_, 2, "->") != 0) fail("expected '->'");
    pos_ += 2;
    skip_ws();
    if (peek() == '(') {
      ++pos_;
      skip_ws();
      if (peek() != ')') {
        while (true) {
          fs.returns.push_back(argument(/*is_return=*/true));
          skip_ws();
          if (peek() == ',') {
            ++pos_;
            continue;
          }
          break;
        }
      }
      expect(')');
    } else {
      fs.returns.push_back(argument(/*is_return=*/true));
    }
    skip_ws();
    if (pos_ != s_.size()) fail("unexpected text after the returns");
    fs.text = s_.rfind("aten::", 0) == 0 || s_.find("::") < s_.find('(') ? s_ : "aten::" + s_;
    return fs;
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    throw Error("schema '" + s_ + "' at offset " + std::to_string(pos_) + ": " + what);
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  void expect(char c) {
    skip_ws();
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  static bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
  std::string ident() {
    skip_ws();
    size_t start = pos_;
    while (pos_ < s_.size() && ident_char(s_[pos_])) ++pos_;
    if (start == pos_) fail("expected a name");
    return s_.substr(start, pos_ - start);
  }
  std::string ident_path() {  // aten::add_.Tensor
    skip_ws();
    size_t start = pos_;
    while (pos_ < s_.size() && (ident_char(s_[pos_]) || s_[pos_] == ':' || s_[pos_] == '.')) ++pos_;
    if (start == pos_) fail("expected an op name");
    return s_.substr(start, pos_ - start);
  }

  TypeRef base_type(const std::string& name) {
    TypeRef t;
    static const std::pair<const char*, BaseType> kBases[] = {
        {"Tensor", BaseType::Tensor},
        {"int", BaseType::Int},
        {"SymInt", BaseType::Int},
        {"float", BaseType::Float},
        {"bool", BaseType::Bool},
        {"Scalar", BaseType::Scalar},
        {"ScalarType", BaseType::ScalarType},
        {"Layout", BaseType::Layout},
        {"Device", BaseType::Device},
        {"MemoryFormat", BaseType::MemoryFormat},
        {"str", BaseType::Str},
        {"Generator", BaseType::Generator},
        {"Any", BaseType::Any},
    };
    for (auto& [n, b] : kBases)
      if (name == n) {
        t.base = b;
        return t;
      }
    fail("unknown type '" + name + "'");
  }

  SchemaArg argument(bool is_return) {
    SchemaArg a;
    std::string tname = ident();
    a.type = base_type(tname);
    if (is_return && tname == "SymInt") a.type.base = BaseType::SymInt;
    if (peek() == '(') {  // alias annotation: (a), (a!), (a -> *)
      ++pos_;
      size_t close = s_.find(')', pos_);
      if (close == std::string::npos) fail("unclosed alias annotation");
      std::string inner = s_.substr(pos_, close - pos_);
      pos_ = close + 1;
      a.alias.is_write = inner.find('!') != std::string::npos;
      a.alias.set = inner.substr(0, inner.find_first_of("! -"));
    }
    if (peek() == '?') {
      ++pos_;
      if (peek() == '[')
        a.type.elem_optional = true;
      else
        a.type.optional = true;
    }
    if (peek() == '[') {
      ++pos_;
      a.type.list = true;
      size_t start = pos_;
      while (std::isdigit(static_cast<unsigned char>(peek()))) ++pos_;
      if (pos_ > start) a.type.list_size = std::stoi(s_.substr(start, pos_ - start));
      if (peek() != ']') fail("expected ']'");
      ++pos_;
      if (peek() == '(') {  // Tensor(a)[] has the annotation before; Tensor[](a) is not ATen
        fail("unexpected alias annotation after '[]'");
      }
      if (peek() == '?') {
        ++pos_;
        a.type.optional = true;
      }
    }
    skip_ws();
    if (ident_char(peek()))
      a.name = ident();
    else if (!is_return)
      fail("expected an argument name");
    skip_ws();
    if (!is_return && peek() == '=') {
      ++pos_;
      skip_ws();
      size_t start = pos_;
      int depth = 0;
      bool in_str = false;
      while (pos_ < s_.size()) {
        char c = s_[pos_];
        if (c == '"') in_str = !in_str;
        if (!in_str) {
          if (c == '[' || c == '(') ++depth;
          if (c == ']' || c == ')') {
            if (depth == 0) break;
            --depth;
          }
          if (c == ',' && depth == 0) break;
        }
        ++pos_;
      }
      a.has_default = true;
      a.default_text = s_.substr(start, pos_ - start);
      while (!a.default_text.empty() && a.default_text.back() == ' ') a.default_text.pop_back();
    }
    return a;
  }

  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace

FunctionSchema parse_schema(const std::string& text) { return SchemaParser(text).parse(); }

}  // namespace aotgrad
