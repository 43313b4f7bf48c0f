// aotgrad: ATen function schemas ("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) ->
// Tensor").
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace aotgrad {

struct Arg;

/// The base of an argument type in an ATen schema; `int` and `SymInt` are both Int.
enum class BaseType : uint8_t {
  Tensor,
  Int,
  Float,
  Bool,
  Scalar,
  ScalarType,
  Layout,
  Device,
  MemoryFormat,
  Str,
  Generator,
  SymInt,  // scalar SymInt return (sym_size.int) -- accepted wherever Int is
  Any,     // getitem-like pseudo ops
};

struct TypeRef {
  BaseType base = BaseType::Tensor;
  bool optional = false;       // T?
  bool list = false;           // T[] or T[N]
  bool elem_optional = false;  // Tensor?[]
  int list_size = 0;           // N in int[N], 0 if unsized
  /// Schema text: "Tensor", "int[1]", "Tensor?[]", "ScalarType?".
  std::string to_string() const;
};

/// `Tensor(a!)`: alias set "a", written.
struct AliasInfo {
  std::string set;  // empty: no alias annotation
  bool is_write = false;
};

struct SchemaArg {
  std::string name;
  TypeRef type;
  AliasInfo alias;
  bool kwarg_only = false;
  bool has_default = false;
  std::string default_text;  // "1", "None", "[]", "False", "\"none\""
};

struct FunctionSchema {
  std::string name;      // "aten::add"
  std::string overload;  // "Tensor", or "" for default
  std::vector<SchemaArg> args;
  std::vector<SchemaArg> returns;
  /// The schema text as given (with the `aten::` prefix added when missing).
  std::string text;

  /// "aten::add.Tensor" (".default" is not appended).
  std::string qualified_name() const;
  /// Index of argument `name`, or -1.
  int arg_index(const std::string& name) const;
  /// Whether argument `i` is written (`Tensor(a!)`).
  bool is_mutable(size_t i) const { return args[i].alias.is_write; }
};

/// Parses a schema string; a missing namespace means `aten::`. Throws Error with what was expected.
FunctionSchema parse_schema(const std::string& text);

}  // namespace aotgrad
