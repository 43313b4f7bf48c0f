// aotgrad: the derivative formula interpreter (see Note [Derivative formulas] in ops/formula.h).
#include "aotgrad/ops/formula.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <map>
#include <mutex>
#include <unordered_map>

#include "aotgrad/ir/error.h"
#include "aotgrad/ops/derivative.h"
#include "aotgrad/ops/meta_util.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {

// --- values ----------------------------------------------------------------------------------

FormulaValue FormulaValue::tensor(Node* n) {
  FormulaValue v;
  v.kind = Kind::kTensor;
  v.arg = n ? Arg(n) : Arg();
  return v;
}
FormulaValue FormulaValue::tensor_arg(Arg a) {
  FormulaValue v;
  v.kind = Kind::kTensor;
  v.arg = std::move(a);
  return v;
}
FormulaValue FormulaValue::scalar(Arg a) {
  FormulaValue v;
  v.kind = Kind::kScalar;
  v.arg = std::move(a);
  return v;
}
FormulaValue FormulaValue::list(Arg a) {
  FormulaValue v;
  v.kind = Kind::kList;
  v.arg = std::move(a);
  return v;
}
FormulaValue FormulaValue::tuple(std::vector<FormulaValue> e) {
  FormulaValue v;
  v.kind = Kind::kTuple;
  v.elems = std::move(e);
  return v;
}

Node* FormulaValue::node(const char* what) const {
  if (kind == Kind::kTensor && pending_result >= 0 && arg.is_none()) {
    auto* self = const_cast<FormulaValue*>(this);
    size_t k = static_cast<size_t>(pending_result);
    self->arg = Arg(k == 0 ? builder->result(0) : builder->saved_output(k));
  }
  if (kind == Kind::kTensor && arg.is_node()) return arg.node;
  throw Error(std::string("derivative formula: expected ") + what + ", got " +
              (kind == Kind::kTensor ? (arg.is_none() ? std::string("an undefined tensor")
                                                      : "the number " + arg_to_string(arg))
                                     : "a value of another kind"));
}

const TensorMeta& FormulaValue::meta() const {
  if (kind == Kind::kTensor && pending_result >= 0 && arg.is_none())
    return builder->result_meta(static_cast<size_t>(pending_result));
  return node()->tensor_meta();
}

double FormulaValue::to_double() const {
  if (kind == Kind::kScalar) {
    switch (arg.kind) {
      case Arg::Kind::Int:
      case Arg::Kind::Bool: return static_cast<double>(arg.i);
      case Arg::Kind::Float: return arg.f;
      default: break;
    }
  }
  throw Error("derivative formula: expected a constant number, got " + arg_to_string(arg));
}

int64_t FormulaValue::to_int() const {
  if (kind == Kind::kScalar && (arg.kind == Arg::Kind::Int || arg.kind == Arg::Kind::Bool))
    return arg.i;
  throw Error("derivative formula: expected a constant int, got " + arg_to_string(arg));
}

SymIntVector FormulaValue::sym_ints() const {
  if (kind != Kind::kList) throw Error("derivative formula: expected a list of ints");
  if (has_sizes) return sizes;
  SymIntVector out;
  for (const Arg& e : arg.list) {
    if (e.kind == Arg::Kind::Int)
      out.push_back(SymInt(e.i));
    else if (e.is_node() && e.node->meta().kind == ValueMeta::Kind::SymInt)
      out.push_back(e.node->meta().sym);
    else
      throw Error("derivative formula: expected a list of ints, got " + arg_to_string(arg));
  }
  return out;
}

Arg formula_arg(GradBuilder& b, const FormulaValue& v) {
  if (v.kind == FormulaValue::Kind::kTensor && v.pending_result >= 0) return Arg(v.node());
  if (v.kind == FormulaValue::Kind::kList && v.has_sizes) return b.sizes_arg(v.sizes, v.sizes_of);
  if (v.kind == FormulaValue::Kind::kScalar && v.numel_of)
    return Arg(b.call("sym_numel.default", {Arg(v.numel_of)}));
  if (v.kind == FormulaValue::Kind::kTuple) {
    std::vector<Arg> l;
    for (const auto& x : v.elems) l.push_back(formula_arg(b, x));
    return Arg::of_list(std::move(l));
  }
  return v.arg;
}

// --- syntax ----------------------------------------------------------------------------------

struct FormulaMacro;

struct FormulaExpr {
  enum class Kind : uint8_t {
    kLiteral,
    kName,
    kCall,
    kMethod,
    kIndex,
    kNeg,
    kBinary,
    kBrace,
    kTernary,
    kNot
  };
  Kind kind = Kind::kLiteral;
  std::string name;  // kName, kCall, kMethod; kBinary: the operator
  Arg literal;       // kLiteral (a number or a string); kIndex: the index
  bool string = false;
  std::vector<FormulaExpr> args;  // kCall, kBrace: elements; kMethod/kIndex: object first
  size_t pos = 0;                 // offset in the formula text, for errors

  // What the text names, decided when it is parsed: a NameId (kName), MethodId (kMethod),
  // CallId (kCall) or BinaryId (kBinary); `base` is a call's or method's aten base name.
  uint8_t id = 0;
  std::string base;
  // What the registry gives those names, looked up once, before the program first runs (bind()):
  // a helper, a helper written as a formula, the overloads of `base` (kNeg: neg's; the
  // expand_as method: expand's), a binary operator's .Tensor and .Scalar ops.
  mutable GradHelper helper = nullptr;
  mutable const FormulaMacro* macro = nullptr;
  mutable const std::vector<const OpDef*>* ops = nullptr;
  mutable const OpDef* tensor_op = nullptr;
  mutable const OpDef* scalar_op = nullptr;
};

struct FormulaEntry {
  std::vector<std::string> keys;
  bool non_differentiable = false;
  FormulaExpr expr;
};

struct FormulaProgram {
  std::string text;
  std::vector<FormulaEntry> entries;  // in evaluation order: by first key
  mutable std::once_flag bound;       // bind() has resolved the entries' names
};

// A helper written as a formula: `log1p_backward(grad, self)` = `grad / (self + 1).conj()`.
struct FormulaMacro {
  std::string text;
  std::vector<std::string> params;
  FormulaExpr body;
  mutable std::once_flag bound;
};

namespace {

// The names a formula's text gives meaning to, decided when it is parsed.
enum NameId : uint8_t {
  kNameOther,  // an argument or a named result of the op (or a helper's parameter)
  kNameGrad,
  kNameGrads,
  kNameResult,   // result
  kNameResultN,  // result<i>: FormulaExpr::literal holds i
  kNameTrue,
  kNameFalse,
  kNamePi,
  kNameNone,
  kNameGradInputMask,
};

enum MethodId : uint8_t {
  kMethodOther,  // a helper or an aten op on the object
  kMethodConj,
  kMethodHasValue,
  kMethodValue,
  kMethodTypeAs,
  kMethodLayout,
  kMethodStrides,
  kMethodDefined,
  kMethodToDouble,
  kMethodDim,
  kMethodSize,
  kMethodSizes,
  kMethodScalarType,
  kMethodOptions,
  kMethodNumel,
  kMethodReshape,
  kMethodExpandAs,
  kMethodContiguous,
};

enum CallId : uint8_t {
  kCallOther,  // a helper or an aten op
  kCallTensor,
  kCallAdaptor,  // TensorGeometry, to_args_sizes_symint, to_args_scalartypes
  kCallNotImplemented,
  kCallDerivativeNotImplemented,
  kCallSqrt,
};

enum BinaryId : uint8_t { kOr, kAnd, kEq, kNe, kLt, kLe, kGt, kGe, kAdd, kSub, kMul, kDiv };

// derivatives.yaml spells some ops as C++ does: `_symint` versions, in-place methods.
std::string op_base(std::string name) {
  const std::string sym = "_symint";
  if (name.size() > sym.size() && name.compare(name.size() - sym.size(), sym.size(), sym) == 0)
    name.resize(name.size() - sym.size());
  if (name.size() > 1 && name.back() == '_' && name[name.size() - 2] != '_') name.pop_back();
  return name;
}

uint8_t name_id(const std::string& n, Arg& index) {
  static const std::unordered_map<std::string, NameId> kNames = {
      {"grad", kNameGrad},    {"grads", kNameGrads}, {"result", kNameResult},
      {"true", kNameTrue},    {"false", kNameFalse}, {"M_PI", kNamePi},
      {"nullopt", kNameNone}, {"None", kNameNone},   {"grad_input_mask", kNameGradInputMask}};
  if (auto it = kNames.find(n); it != kNames.end()) return it->second;
  if (n.size() > 6 && n.rfind("result", 0) == 0 &&
      std::all_of(n.begin() + 6, n.end(), [](char c) { return std::isdigit(c); })) {
    index = Arg::of_int(std::stoll(n.substr(6)));
    return kNameResultN;
  }
  return kNameOther;
}

uint8_t method_id(const std::string& m) {
  static const std::unordered_map<std::string, MethodId> kMethods = {
      {"conj", kMethodConj},
      {"has_value", kMethodHasValue},
      {"value", kMethodValue},
      {"type_as", kMethodTypeAs},
      {"layout", kMethodLayout},
      {"sym_strides", kMethodStrides},
      {"strides", kMethodStrides},
      {"defined", kMethodDefined},
      {"toDouble", kMethodToDouble},
      {"dim", kMethodDim},
      {"size", kMethodSize},
      {"sym_size", kMethodSize},
      {"sym_sizes", kMethodSizes},
      {"sizes", kMethodSizes},
      {"scalar_type", kMethodScalarType},
      {"options", kMethodOptions},
      {"sym_numel", kMethodNumel},
      {"numel", kMethodNumel},
      {"reshape", kMethodReshape},
      {"reshape_symint", kMethodReshape},
      {"expand_as", kMethodExpandAs},
      {"contiguous", kMethodContiguous}};
  auto it = kMethods.find(m);
  return it == kMethods.end() ? kMethodOther : it->second;
}

uint8_t call_id(const std::string& fn) {
  static const std::unordered_map<std::string, CallId> kCalls = {
      {"Tensor", kCallTensor},
      {"TensorGeometry", kCallAdaptor},
      {"to_args_sizes_symint", kCallAdaptor},
      {"to_args_scalartypes", kCallAdaptor},
      {"not_implemented", kCallNotImplemented},
      {"derivative_not_implemented", kCallDerivativeNotImplemented},
      {"sqrt", kCallSqrt}};
  auto it = kCalls.find(fn);
  return it == kCalls.end() ? kCallOther : it->second;
}

uint8_t binary_id(const std::string& op) {
  static const std::unordered_map<std::string, BinaryId> kOps = {
      {"||", kOr}, {"&&", kAnd}, {"==", kEq}, {"!=", kNe}, {"<", kLt},  {"<=", kLe},
      {">", kGt},  {">=", kGe},  {"+", kAdd}, {"-", kSub}, {"*", kMul}, {"/", kDiv}};
  return kOps.at(op);
}

}  // namespace

namespace {

class FormulaParser {
 public:
  explicit FormulaParser(const std::string& text) : s_(text) {}

  // `name(param, ...)`, for a helper written as a formula.
  std::pair<std::string, std::vector<std::string>> signature() {
    std::string name = ident("a helper name");
    expect("(");
    std::vector<std::string> params;
    if (!accept(")")) {
      do params.push_back(ident("a parameter name"));
      while (accept(","));
      expect(")");
    }
    skip();
    if (!at_end()) fail("the end of the signature");
    return {name, params};
  }

  FormulaExpr whole_expr() {
    FormulaExpr e = expr();
    skip();
    if (!at_end()) fail("the end of the formula");
    return e;
  }

  std::vector<FormulaEntry> parse() {
    std::vector<FormulaEntry> out;
    while (true) {
      skip();
      if (at_end()) break;
      FormulaEntry e;
      e.keys.push_back(ident("an input name"));
      while (accept(",")) e.keys.push_back(ident("an input name"));
      expect(":");
      skip();
      size_t save = i_;
      if (peek_ident() == "non_differentiable") {
        ident("");
        skip();
        if (at_end() || s_[i_] == ';') {
          e.non_differentiable = true;
        } else {
          i_ = save;
        }
      }
      if (!e.non_differentiable) e.expr = expr();
      out.push_back(std::move(e));
      skip();
      if (at_end()) break;
      expect(";");
    }
    if (out.empty()) fail("an entry `input: formula`");
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& expected) {
    throw Error("derivative formula '" + s_ + "': at offset " + std::to_string(i_) + ": expected " +
                expected + (at_end() ? ", found the end" : ", found '" + s_.substr(i_, 12) + "'"));
  }
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool at_end() const { return i_ >= s_.size(); }
  bool accept(const char* tok) {
    skip();
    size_t n = std::char_traits<char>::length(tok);
    if (s_.compare(i_, n, tok) != 0) return false;
    // `<` is not `<=`, `=` never appears alone.
    if (n == 1 && (tok[0] == '<' || tok[0] == '>' || tok[0] == '!') && i_ + 1 < s_.size() &&
        s_[i_ + 1] == '=')
      return false;
    i_ += n;
    return true;
  }
  void expect(const char* tok) {
    if (!accept(tok)) fail(std::string("'") + tok + "'");
  }
  static bool ident_start(char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
  }
  static bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
  std::string peek_ident() {
    skip();
    size_t j = i_;
    while (j < s_.size() &&
           (ident_char(s_[j]) || (s_[j] == ':' && j + 1 < s_.size() && s_[j + 1] == ':')))
      j += s_[j] == ':' ? 2 : 1;
    return s_.substr(i_, j - i_);
  }
  std::string ident(const char* what) {
    skip();
    if (at_end() || !ident_start(s_[i_])) fail(what);
    std::string id = peek_ident();
    i_ += id.size();
    // at::sum_to, c10::nullopt: the namespace is not part of the name.
    for (const char* ns : {"at::", "c10::", "std::"})
      if (id.rfind(ns, 0) == 0) id = id.substr(std::char_traits<char>::length(ns));
    return id;
  }

  FormulaExpr make(FormulaExpr::Kind k, std::string name = "") {
    FormulaExpr e;
    e.kind = k;
    e.name = std::move(name);
    e.pos = i_;
    switch (k) {
      case FormulaExpr::Kind::kName: e.id = name_id(e.name, e.literal); break;
      case FormulaExpr::Kind::kMethod:
        e.id = method_id(e.name);
        e.base = op_base(e.name);
        break;
      case FormulaExpr::Kind::kCall:
        e.id = call_id(e.name);
        e.base = op_base(e.name);
        break;
      case FormulaExpr::Kind::kBinary: e.id = binary_id(e.name); break;
      default: break;
    }
    return e;
  }

  FormulaExpr expr() {
    FormulaExpr cond = logical_or();
    if (!accept("?")) return cond;
    FormulaExpr e = make(FormulaExpr::Kind::kTernary);
    e.args.push_back(std::move(cond));
    e.args.push_back(expr());
    expect(":");
    e.args.push_back(expr());
    return e;
  }

  FormulaExpr logical_or() {
    FormulaExpr lhs = logical_and();
    while (accept("||")) {
      FormulaExpr e = make(FormulaExpr::Kind::kBinary, "||");
      e.args.push_back(std::move(lhs));
      e.args.push_back(logical_and());
      lhs = std::move(e);
    }
    return lhs;
  }

  FormulaExpr logical_and() {
    FormulaExpr lhs = comparison();
    while (accept("&&")) {
      FormulaExpr e = make(FormulaExpr::Kind::kBinary, "&&");
      e.args.push_back(std::move(lhs));
      e.args.push_back(comparison());
      lhs = std::move(e);
    }
    return lhs;
  }

  FormulaExpr comparison() {
    FormulaExpr lhs = additive();
    for (const char* op : {"==", "!=", "<=", ">=", "<", ">"})
      if (accept(op)) {
        FormulaExpr e = make(FormulaExpr::Kind::kBinary, op);
        e.args.push_back(std::move(lhs));
        e.args.push_back(additive());
        return e;
      }
    return lhs;
  }

  FormulaExpr additive() {
    FormulaExpr lhs = multiplicative();
    while (true) {
      const char* op = accept("+") ? "+" : accept("-") ? "-" : nullptr;
      if (!op) return lhs;
      FormulaExpr e = make(FormulaExpr::Kind::kBinary, op);
      e.args.push_back(std::move(lhs));
      e.args.push_back(multiplicative());
      lhs = std::move(e);
    }
  }

  FormulaExpr multiplicative() {
    FormulaExpr lhs = unary();
    while (true) {
      const char* op = accept("*") ? "*" : accept("/") ? "/" : nullptr;
      if (!op) return lhs;
      FormulaExpr e = make(FormulaExpr::Kind::kBinary, op);
      e.args.push_back(std::move(lhs));
      e.args.push_back(unary());
      lhs = std::move(e);
    }
  }

  FormulaExpr unary() {
    if (accept("-")) {
      FormulaExpr e = make(FormulaExpr::Kind::kNeg);
      e.args.push_back(unary());
      return e;
    }
    if (accept("!")) {
      FormulaExpr e = make(FormulaExpr::Kind::kNot);
      e.args.push_back(unary());
      return e;
    }
    return postfix();
  }

  std::vector<FormulaExpr> call_args() {
    std::vector<FormulaExpr> args;
    if (accept(")")) return args;
    do args.push_back(expr());
    while (accept(","));
    expect(")");
    return args;
  }

  FormulaExpr postfix() {
    FormulaExpr e = primary();
    while (true) {
      if (accept(".") || accept("->")) {  // `bias->sym_sizes()`: an optional's value
        FormulaExpr m = make(FormulaExpr::Kind::kMethod, ident("a method name"));
        expect("(");
        m.args.push_back(std::move(e));
        for (auto& a : call_args()) m.args.push_back(std::move(a));
        e = std::move(m);
      } else if (accept("[")) {
        FormulaExpr ix = make(FormulaExpr::Kind::kIndex);
        skip();
        size_t start = i_;
        while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
        if (i_ == start) fail("an index");
        ix.literal = Arg::of_int(std::stoll(s_.substr(start, i_ - start)));
        expect("]");
        ix.args.push_back(std::move(e));
        e = std::move(ix);
      } else {
        return e;
      }
    }
  }

  FormulaExpr primary() {
    skip();
    if (at_end()) fail("an expression");
    char c = s_[i_];
    if (accept("(")) {
      FormulaExpr e = expr();
      expect(")");
      return e;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) return number();
    if (accept("{")) {  // a braced list: {a, b}
      FormulaExpr e = make(FormulaExpr::Kind::kBrace);
      if (accept("}")) return e;
      do e.args.push_back(expr());
      while (accept(","));
      expect("}");
      return e;
    }
    if (c == '"') {
      FormulaExpr e = make(FormulaExpr::Kind::kLiteral);
      size_t end = s_.find('"', i_ + 1);
      if (end == std::string::npos) fail("a closing '\"'");
      e.literal = Arg::of_str(s_.substr(i_ + 1, end - i_ - 1));
      e.string = true;
      i_ = end + 1;
      return e;
    }
    std::string id = ident("an expression");
    if (accept("(")) {
      FormulaExpr e = make(FormulaExpr::Kind::kCall, id);
      e.args = call_args();
      return e;
    }
    return make(FormulaExpr::Kind::kName, id);
  }

  FormulaExpr number() {
    FormulaExpr e = make(FormulaExpr::Kind::kLiteral);
    size_t start = i_;
    bool is_float = false;
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        ++i_;
      } else if (c == '.' || c == 'e' || c == 'E') {
        is_float = true;
        ++i_;
        if ((c == 'e' || c == 'E') && i_ < s_.size() && (s_[i_] == '-' || s_[i_] == '+')) ++i_;
      } else {
        break;
      }
    }
    std::string t = s_.substr(start, i_ - start);
    e.literal = is_float ? Arg::of_float(std::stod(t)) : Arg::of_int(std::stoll(t));
    return e;
  }

  const std::string& s_;
  size_t i_ = 0;
};

}  // namespace

// --- helpers table ---------------------------------------------------------------------------

namespace {

std::unordered_map<std::string, GradHelper>& helpers() {
  static std::unordered_map<std::string, GradHelper> table;
  return table;
}
std::mutex& helpers_mu() {
  static std::mutex mu;
  return mu;
}

std::unordered_map<std::string, std::shared_ptr<const FormulaMacro>>& macros() {
  static std::unordered_map<std::string, std::shared_ptr<const FormulaMacro>> table;
  return table;
}

}  // namespace

void add_grad_helper(const std::string& name, GradHelper fn) {
  std::lock_guard<std::mutex> lock(helpers_mu());
  auto [it, inserted] = helpers().emplace(name, fn);
  if ((!inserted && it->second != fn) || macros().count(name))
    throw Error("derivative formula helper '" + name + "' is registered twice");
}

GradHelper find_grad_helper(const std::string& name) {
  std::lock_guard<std::mutex> lock(helpers_mu());
  auto it = helpers().find(name);
  return it == helpers().end() ? nullptr : it->second;
}

namespace {
std::shared_ptr<const FormulaMacro> find_macro(const std::string& name) {
  std::lock_guard<std::mutex> lock(helpers_mu());
  auto it = macros().find(name);
  return it == macros().end() ? nullptr : it->second;
}
}  // namespace

namespace {

// --- evaluation ------------------------------------------------------------------------------

using Kind = FormulaValue::Kind;

bool is_number(const FormulaValue& v) {
  return v.kind == Kind::kScalar &&
         (v.arg.kind == Arg::Kind::Int || v.arg.kind == Arg::Kind::Float ||
          v.arg.kind == Arg::Kind::Bool);
}

FormulaValue number(double d) { return FormulaValue::scalar(Arg::of_float(d)); }

using OverloadIndex = std::unordered_map<std::string, std::vector<const OpDef*>>;

// `table`'s ops by base name (no in-place ops), in declaration order.
const OverloadIndex* index_overloads(const OpTable& table) {
  auto* m = new OverloadIndex();
  m->reserve(table.all().size());
  for (const OpDef* op : table.all())
    if (!op->has_tag(kInplace) && op->name.rfind("aten::", 0) == 0)
      (*m)[op->base_name].push_back(op);
  return m;
}

std::atomic<const OverloadIndex*> g_overloads{nullptr};  // aten_ops()'s, set by bind_formulas

// The registry's ops by base name, in declaration order.
const std::vector<const OpDef*>* overloads(const std::string& base) {
  const OverloadIndex* index = g_overloads.load();
  if (!index) {
    static const OverloadIndex* fallback = index_overloads(aten_ops());
    index = fallback;
  }
  auto it = index->find(base);
  return it == index->end() ? nullptr : &it->second;
}

// Whether value `v` can be passed for schema argument `a`.
bool fits(const FormulaValue& v, const SchemaArg& a) {
  const TypeRef& t = a.type;
  if (v.is_none()) return t.optional || (t.base == BaseType::Tensor && !t.list);
  switch (t.base) {
    case BaseType::Tensor:
      if (t.list) return v.kind == Kind::kTuple;
      return v.kind == Kind::kTensor;
    case BaseType::Scalar:
    case BaseType::Int:
    case BaseType::SymInt:
    case BaseType::Float:
    case BaseType::Bool:
      if (t.list) return v.kind == Kind::kList || v.kind == Kind::kScalar;
      return v.kind == Kind::kScalar;
    case BaseType::Str: return v.kind == Kind::kString;
    case BaseType::ScalarType: return v.kind == Kind::kDtype || v.kind == Kind::kOptions;
    default: return false;
  }
}

// A declared overload of `base` ("mul", "Tensor"), or nullptr.
const OpDef* declared_overload(const std::string& base, const char* overload) {
  const auto* ops = overloads(base);
  if (!ops) return nullptr;
  for (const OpDef* op : *ops)
    if (op->schema.overload == overload) return op;
  return nullptr;
}

const char* binary_base(uint8_t id) {
  static const char* kBase[] = {"",   "",   "eq",  "ne",  "lt",  "le",
                                "gt", "ge", "add", "sub", "mul", "div"};
  return kBase[id];
}

void bind_macro(const FormulaMacro& m);

// Looks up, once for each expression, what the registry and the helpers give its names: the
// evaluation does no lookup by name.
void bind(const FormulaExpr& e) {
  switch (e.kind) {
    case FormulaExpr::Kind::kCall:
      if (auto m = find_macro(e.base)) {
        e.macro = m.get();  // the table keeps it
        bind_macro(*m);
        break;
      }
      e.helper = find_grad_helper(e.name);
      if (!e.helper) e.helper = find_grad_helper(e.base);
      if (!e.helper) e.ops = overloads(e.base);
      break;
    case FormulaExpr::Kind::kMethod:
      e.helper = find_grad_helper(e.name);
      e.ops = overloads(e.id == kMethodExpandAs ? "expand" : e.base);
      break;
    case FormulaExpr::Kind::kNeg: e.ops = overloads("neg"); break;
    case FormulaExpr::Kind::kBinary:
      if (e.id != kOr && e.id != kAnd) {
        e.tensor_op = declared_overload(binary_base(e.id), "Tensor");
        e.scalar_op = declared_overload(binary_base(e.id), "Scalar");
      }
      break;
    default: break;
  }
  for (const FormulaExpr& a : e.args) bind(a);
}

void bind_macro(const FormulaMacro& m) {
  std::call_once(m.bound, [&] { bind(m.body); });
}

void bind(const FormulaProgram& p) {
  std::call_once(p.bound, [&] {
    for (const FormulaEntry& e : p.entries)
      if (!e.non_differentiable) bind(e.expr);
  });
}

class Evaluator {
 public:
  Evaluator(GradBuilder& b, const FormulaProgram& p) : b_(b), p_(p) {}

  void run() {
    const auto& sargs = b_.op().schema.args;
    std::vector<bool> covered(sargs.size(), false);
    for (const FormulaEntry& e : p_.entries) {
      std::vector<int> idx;
      bool any = false;
      for (const std::string& k : e.keys) {
        int i = b_.op().schema.arg_index(k);
        if (i < 0) throw error(e.expr, "'" + k + "' is not an argument of " + b_.op().name);
        idx.push_back(i);
        covered[static_cast<size_t>(i)] = true;
        any = any || b_.needs(static_cast<size_t>(i));
      }
      if (e.non_differentiable || !any) continue;
      entry_ = &e;
      FormulaValue v = eval(e.expr);
      if (idx.size() == 1) {
        assign(static_cast<size_t>(idx[0]), v);
        continue;
      }
      if (v.is_tensor() && v.arg.node->meta().kind == ValueMeta::Kind::Tuple) {
        for (size_t j = 0; j < idx.size(); ++j)
          if (b_.needs(static_cast<size_t>(idx[j])))
            assign(static_cast<size_t>(idx[j]),
                   FormulaValue::tensor(b_.getitem(v.arg.node, static_cast<int64_t>(j))));
        continue;
      }
      if (v.is_none()) continue;  // an undefined result: no gradients
      if (v.kind != Kind::kTuple || v.elems.size() != idx.size())
        throw error(e.expr, "a formula for several inputs must give one value per input");
      for (size_t j = 0; j < idx.size(); ++j)
        if (b_.needs(static_cast<size_t>(idx[j]))) assign(static_cast<size_t>(idx[j]), v.elems[j]);
    }
    // A tensor argument without a formula cannot require grad (check_no_requires_grad).
    for (size_t i = 0; i < sargs.size(); ++i)
      if (!covered[i] && b_.needs(i))
        throw Error("The function '" + b_.op().base_name +
                    "' is not differentiable with respect to argument '" + sargs[i].name +
                    "'. This input cannot have requires_grad True.");
  }

 private:
  Error error(const FormulaExpr& e, const std::string& msg) const {
    return Error("derivative formula '" + p_.text + "' (at offset " + std::to_string(e.pos) +
                 "): " + msg);
  }

  void assign(size_t i, FormulaValue v) {
    const SchemaArg& a = b_.op().schema.args.at(i);
    if (a.type.base == BaseType::Tensor && a.type.list) {
      if (v.kind != Kind::kTuple) throw Error("derivative formula: a Tensor[] input needs a list");
      for (size_t k = 0; k < v.elems.size(); ++k)
        if (v.elems[k].is_tensor()) b_.set(i, k, v.elems[k].node());
      return;
    }
    if (v.is_none()) return;
    b_.set(i, v.node("a gradient tensor"));
  }

  static FormulaValue string_value(const Arg& a) {
    FormulaValue v;
    v.kind = Kind::kString;
    v.arg = a;
    return v;
  }

  // A saved result read when it is used: result 0 through detach(detach(...)) (a differentiable
  // output), the others as the forward's getitems (GradBuilder::saved_output).
  FormulaValue pending_result(size_t k) {
    FormulaValue v;
    v.kind = Kind::kTensor;
    v.builder = &b_;
    v.pending_result = static_cast<int>(k);
    return v;
  }

  FormulaValue name(const FormulaExpr& e) {
    const std::string& n = e.name;
    if (!scopes_.empty())  // a helper's parameters hide everything else
      if (auto it = scopes_.back().find(n); it != scopes_.back().end()) return it->second;
    switch (e.id) {
      case kNameGrad: return FormulaValue::tensor(b_.grad(0));
      case kNameGrads: {
        std::vector<FormulaValue> g;
        size_t outs =
            b_.node().meta().kind == ValueMeta::Kind::Tuple ? b_.node().meta().elems.size() : 1;
        for (size_t i = 0; i < outs; ++i) g.push_back(FormulaValue::tensor(b_.grad(i)));
        return FormulaValue::tuple(std::move(g));
      }
      case kNameResult: return pending_result(0);
      case kNameResultN: return pending_result(static_cast<size_t>(e.literal.i));
      case kNameTrue: return FormulaValue::scalar(Arg::of_bool(true));
      case kNameFalse: return FormulaValue::scalar(Arg::of_bool(false));
      case kNamePi: return number(M_PI);
      case kNameNone: return FormulaValue::none();
      case kNameGradInputMask: {
        std::vector<Arg> mask;
        for (const std::string& k : entry_->keys)
          mask.push_back(Arg::of_bool(b_.needs(static_cast<size_t>(b_.op().schema.arg_index(k)))));
        return FormulaValue::list(Arg::of_list(std::move(mask)));
      }
      default: break;
    }
    int i = b_.op().schema.arg_index(n);
    if (i < 0) {
      // A named result (`indices` of max.dim): the saved output.
      const auto& rets = b_.op().schema.returns;
      for (size_t r = 0; r < rets.size(); ++r)
        if (rets[r].name == n) return pending_result(r == 0 ? 0 : r);
      throw error(e, "unknown name '" + n + "'");
    }
    const SchemaArg& a = b_.op().schema.args[static_cast<size_t>(i)];
    const Arg& v = b_.arg(static_cast<size_t>(i));
    switch (a.type.base) {
      case BaseType::Tensor:
        if (a.type.list) {
          std::vector<FormulaValue> elems;
          for (const Arg& x : v.list) elems.push_back(FormulaValue::tensor_arg(x));
          return FormulaValue::tuple(std::move(elems));
        }
        return FormulaValue::tensor_arg(v);
      case BaseType::Str: return v.is_none() ? FormulaValue::none() : string_value(v);
      case BaseType::ScalarType: {
        if (v.is_none()) return FormulaValue::none();
        FormulaValue d;
        d.kind = Kind::kDtype;
        d.arg = v;
        return d;
      }
      default:
        if (v.is_none()) return FormulaValue::none();
        return v.is_list() ? FormulaValue::list(v) : FormulaValue::scalar(v);
    }
  }

  // A detached result 0 is read where the expression is (C++ evaluates it there); the forward's
  // other saved outputs when a call uses them.
  FormulaValue& force(FormulaValue& v) {
    if (v.pending_result == 0) v.node();
    return v;
  }

  // Evaluates the arguments right to left (GCC's order), returned in source order.
  std::vector<FormulaValue> eval_args(const FormulaExpr& e, size_t first, bool keep_pending) {
    std::vector<FormulaValue> out(e.args.size() - first);
    for (size_t k = e.args.size(); k-- > first;) {
      out[k - first] = eval(e.args[k]);
      if (!keep_pending) force(out[k - first]);
    }
    return out;
  }

  // Whether `e` computes with constants and non-tensor arguments only (no node is emitted).
  bool numeric_only(const FormulaExpr& e) const {
    switch (e.kind) {
      case FormulaExpr::Kind::kLiteral: return !e.string;
      case FormulaExpr::Kind::kName: {
        int i = b_.op().schema.arg_index(e.name);
        return i >= 0 && b_.op().schema.args[static_cast<size_t>(i)].type.base != BaseType::Tensor;
      }
      case FormulaExpr::Kind::kNeg:
      case FormulaExpr::Kind::kNot:
      case FormulaExpr::Kind::kBinary:
      case FormulaExpr::Kind::kTernary:
        for (const auto& a : e.args)
          if (!numeric_only(a)) return false;
        return true;
      default: return false;
    }
  }

  // Methods that read the object's metadata only (a saved result is not read for them).
  static bool meta_method(uint8_t m) {
    switch (m) {
      case kMethodSizes:
      case kMethodStrides:
      case kMethodLayout:
      case kMethodHasValue:
      case kMethodScalarType:
      case kMethodOptions:
      case kMethodNumel:
      case kMethodDefined:
      case kMethodDim:
      case kMethodSize: return true;
      default: return false;
    }
  }

  FormulaValue eval(const FormulaExpr& e) {
    switch (e.kind) {
      case FormulaExpr::Kind::kLiteral:
        return e.string ? string_value(e.literal) : FormulaValue::scalar(e.literal);
      case FormulaExpr::Kind::kName: return name(e);
      case FormulaExpr::Kind::kBrace: {  // a braced list: elements left to right
        std::vector<Arg> l;
        for (const auto& x : e.args) {
          FormulaValue v = eval(x);
          l.push_back(to_arg(v));
        }
        return FormulaValue::list(Arg::of_list(std::move(l)));
      }
      case FormulaExpr::Kind::kIndex: {
        FormulaValue obj = eval(e.args[0]);
        size_t k = static_cast<size_t>(e.literal.i);
        if (obj.kind == Kind::kTuple) {
          if (k >= obj.elems.size()) throw error(e, "index out of range");
          return obj.elems[k];
        }
        if (obj.is_tensor() && obj.node()->meta().kind == ValueMeta::Kind::Tuple)
          return FormulaValue::tensor(b_.getitem(obj.node(), static_cast<int64_t>(k)));
        throw error(e, "only tuples can be indexed");
      }
      case FormulaExpr::Kind::kNeg: {
        FormulaValue x = eval(e.args[0]);
        if (is_number(x)) {
          if (x.arg.kind == Arg::Kind::Float) return number(-x.arg.f);
          return FormulaValue::scalar(Arg::of_int(-x.arg.i));
        }
        return call_op(e, "neg", e.ops, {force(x)});
      }
      case FormulaExpr::Kind::kNot: {
        FormulaValue x = eval(e.args[0]);
        if (!is_number(x)) throw error(e, "! needs a constant");
        return FormulaValue::scalar(Arg::of_bool(x.to_double() == 0));
      }
      case FormulaExpr::Kind::kBinary: {
        if (e.id == kOr || e.id == kAnd) {  // constants, left to right, short-circuit
          FormulaValue l = eval(e.args[0]);
          if (!is_number(l)) throw error(e, e.name + " needs constants");
          bool lv = l.to_double() != 0;
          if (e.id == kOr ? lv : !lv) return FormulaValue::scalar(Arg::of_bool(lv));
          FormulaValue r = eval(e.args[1]);
          if (!is_number(r)) throw error(e, e.name + " needs constants");
          return FormulaValue::scalar(Arg::of_bool(r.to_double() != 0));
        }
        FormulaValue rhs = eval(e.args[1]);
        if (rhs.pending_result >= 0) rhs.node();
        FormulaValue lhs = eval(e.args[0]);
        if (lhs.pending_result >= 0) lhs.node();
        return binary(e, lhs, rhs);
      }
      case FormulaExpr::Kind::kTernary: {
        FormulaValue c = eval(e.args[0]);
        if (!is_number(c)) throw error(e, "the condition of ?: must be a constant");
        bool first = c.to_double() != 0;
        FormulaValue v = eval(e.args[first ? 1 : 2]);
        // C++ gives `c ? 1 : 0.5` the type double: an int is promoted when the other branch, a
        // computation on numbers only, is floating.
        const FormulaExpr& other = e.args[first ? 2 : 1];
        if (is_number(v) && v.arg.kind == Arg::Kind::Int && numeric_only(other)) {
          FormulaValue o = eval(other);
          if (is_number(o) && o.arg.kind == Arg::Kind::Float) return number(v.to_double());
        }
        return v;
      }
      case FormulaExpr::Kind::kCall: {
        if (const FormulaMacro* m = e.macro) {
          std::vector<FormulaValue> args = eval_args(e, 0, false);
          if (args.size() != m->params.size())
            throw error(e, "helper " + m->text + " takes " + std::to_string(m->params.size()) +
                               " arguments");
          std::map<std::string, FormulaValue> scope;
          for (size_t i = 0; i < args.size(); ++i) scope[m->params[i]] = args[i];
          scopes_.push_back(std::move(scope));
          FormulaValue v = eval(m->body);
          scopes_.pop_back();
          return v;
        }
        GradHelper h = e.helper;
        std::vector<FormulaValue> args = eval_args(e, 0, /*keep_pending=*/h != nullptr);
        if (h) return h(b_, args);
        return call(e, args);
      }
      case FormulaExpr::Kind::kMethod: {
        FormulaValue obj = eval(e.args[0]);
        if (!meta_method(e.id)) force(obj);
        std::vector<FormulaValue> args = eval_args(e, 1, false);
        return method(e, obj, args);
      }
    }
    throw error(e, "bad expression");
  }

  FormulaValue fold(const FormulaExpr& e, const FormulaValue& x, const FormulaValue& y) {
    uint8_t op = e.id;
    bool ints = x.arg.kind != Arg::Kind::Float && y.arg.kind != Arg::Kind::Float;
    if (ints && (op == kAdd || op == kSub || op == kMul)) {
      int64_t a = x.arg.i, c = y.arg.i;
      int64_t r = op == kAdd ? a + c : op == kSub ? a - c : a * c;
      return FormulaValue::scalar(Arg::of_int(r));
    }
    double a = x.to_double(), c = y.to_double();
    auto truth = [](bool v) { return FormulaValue::scalar(Arg::of_bool(v)); };
    switch (op) {
      case kEq: return truth(a == c);
      case kNe: return truth(a != c);
      case kLt: return truth(a < c);
      case kLe: return truth(a <= c);
      case kGt: return truth(a > c);
      case kGe: return truth(a >= c);
      case kAdd: return number(a + c);
      case kSub: return number(a - c);
      case kMul: return number(a * c);
      case kDiv: return number(a / c);
      default: throw error(e, "operator " + e.name + " on numbers");
    }
  }

  // `s - t` and `s / t` for a Scalar s: at::empty_like(t).fill_(s).sub_(t) / .div_(t).
  FormulaValue scalar_first(const FormulaExpr& e, const char* op, const FormulaValue& s,
                            const FormulaValue& t) {
    Node* empty = b_.call("empty_like.default", {t.arg},
                          {{"memory_format", Arg::of_memory_format(MemoryFormat::Preserve)}});
    Node* filled = b_.call("fill.Scalar", {Arg(empty), s.arg});
    return call_named(e, op, true, {FormulaValue::tensor(filled), t});
  }

  static std::vector<FormulaValue> two(FormulaValue& a, FormulaValue& b) {
    std::vector<FormulaValue> v;
    v.reserve(2);
    v.push_back(std::move(a));
    v.push_back(std::move(b));
    return v;
  }

  FormulaValue binary(const FormulaExpr& e, FormulaValue& x, FormulaValue& y) {
    if (is_number(x) && is_number(y)) return fold(e, x, y);
    uint8_t op = e.id;
    const char* fn = binary_base(op);
    if (op >= kEq && op <= kGe) {
      bool tensor = y.arg.is_node();
      return call_named(e, fn, tensor, two(x, y));
    }
    bool xt = x.kind == Kind::kTensor, yt = y.kind == Kind::kTensor;
    if (xt && yt) return call_named(e, fn, true, two(x, y));
    if (xt) return call_named(e, fn, false, two(x, y));
    if (yt && (op == kMul || op == kAdd)) return call_named(e, fn, false, two(y, x));
    if (yt) return scalar_first(e, fn, x, y);
    throw error(e, "operator " + e.name + " needs a tensor or two numbers");
  }

  // x.size(d) as a formula reads it: an int, or sym_size for a symbolic size.
  FormulaValue size_at(const FormulaValue& obj, int64_t d) {
    const TensorMeta& m = obj.meta();
    int64_t dim = d < 0 ? d + m.dim() : d;
    const SymInt& s = m.sizes.at(static_cast<size_t>(dim));
    if (s.is_concrete()) return FormulaValue::scalar(Arg::of_int(s.value()));
    return FormulaValue::scalar(b_.sym_arg(s, obj.node(), dim));
  }

  FormulaValue method(const FormulaExpr& e, const FormulaValue& obj,
                      std::vector<FormulaValue>& args) {
    const uint8_t m = e.id;
    if (m == kMethodConj) return obj;  // real tensors: conj() is the tensor itself
    if (m == kMethodHasValue) return FormulaValue::scalar(Arg::of_bool(!obj.is_none()));
    if (m == kMethodValue) return obj;
    if (m == kMethodTypeAs) {  // self.to(other's dtype): _to_copy with other's options
      const TensorMeta& o = args.at(0).meta();
      Node* x = obj.node();
      if (x->tensor_meta().dtype == o.dtype) return obj;
      return FormulaValue::tensor(b_.call("_to_copy.default", {Arg(x)},
                                          {{"dtype", Arg::of_dtype(o.dtype)},
                                           {"layout", Arg::of_layout(Layout::Strided)},
                                           {"device", Arg::of_device(o.device)}}));
    }
    if (obj.is_none() && m == kMethodSizes) return obj;  // an absent optional
    if (m == kMethodLayout) return string_value(Arg::of_str("strided"));
    if (m == kMethodStrides) {
      FormulaValue v;
      v.kind = Kind::kList;
      v.has_sizes = true;
      // Symbolic strides are compared structurally by the helpers that read them (mm's
      // column-major test); passed to an op, each is read from an input dimension of that size.
      v.sizes = obj.meta().strides;
      return v;
    }
    if (m == kMethodDefined) return FormulaValue::scalar(Arg::of_bool(!obj.is_none()));
    if (m == kMethodToDouble) return number(obj.to_double());
    if (m == kMethodDim) return FormulaValue::scalar(Arg::of_int(obj.meta().dim()));
    if (m == kMethodSize) return size_at(obj, args.at(0).to_int());
    if (m == kMethodSizes) {
      FormulaValue v;
      v.kind = Kind::kList;
      v.has_sizes = true;
      v.sizes = obj.meta().sizes;
      bool concrete = std::all_of(v.sizes.begin(), v.sizes.end(),
                                  [](const SymInt& s) { return s.is_concrete(); });
      // Symbolic sizes are read from the tensor (a saved result 0 of a single-output op: from the
      // forward node, which holds the same sizes, so the result is not saved for its sizes).
      if (!concrete)
        v.sizes_of = obj.pending_result == 0 && obj.arg.is_none() &&
                             b_.node().meta().kind != ValueMeta::Kind::Tuple
                         ? const_cast<Node*>(&b_.node())
                         : obj.node();
      return v;
    }
    if (m == kMethodScalarType) {
      FormulaValue d;
      d.kind = Kind::kDtype;
      d.arg = Arg::of_dtype(obj.meta().dtype);
      return d;
    }
    if (m == kMethodOptions) {
      FormulaValue o;
      o.kind = Kind::kOptions;
      o.options = &obj.meta();
      return o;
    }
    if (m == kMethodNumel) {
      SymInt n = obj.meta().numel();
      if (n.is_concrete()) return FormulaValue::scalar(Arg::of_int(n.value()));
      FormulaValue v = FormulaValue::scalar(Arg());
      v.numel_of = obj.node();  // sym_numel where it is used
      return v;
    }
    if (m == kMethodReshape) return reshape(obj, args.at(0));
    if (m == kMethodExpandAs) {  // expand(self, other.sym_sizes())
      FormulaValue sizes;
      sizes.kind = Kind::kList;
      sizes.has_sizes = true;
      sizes.sizes = args.at(0).meta().sizes;
      sizes.sizes_of = args.at(0).node();
      return call_op(e, "expand", e.ops, {obj, sizes});
    }
    if (m == kMethodContiguous) {
      Node* x = obj.node();
      if (x->tensor_meta().is_contiguous()) return obj;
      return FormulaValue::tensor(
          b_.call("clone.default", {Arg(x)},
                  {{"memory_format", Arg::of_memory_format(MemoryFormat::Contiguous)}}));
    }
    std::vector<FormulaValue> all;
    all.reserve(args.size() + 1);
    all.push_back(obj);
    for (auto& a : args) all.push_back(std::move(a));
    if (GradHelper h = e.helper) return h(b_, all);  // `grad.ger(vec)`
    return call_op(e, e.base, e.ops, all);
  }

  // x.reshape(sizes) as at::reshape traces: a view when the strides allow one, else a contiguous
  // clone and _unsafe_view.
  FormulaValue reshape(const FormulaValue& obj, const FormulaValue& sizes) {
    Node* x = obj.node();
    Arg size_arg = to_arg(sizes);
    if (meta::compute_view_strides(x->tensor_meta(), sizes.sym_ints()))
      return FormulaValue::tensor(b_.call("view.default", {Arg(x), size_arg}));
    Node* c = b_.call("clone.default", {Arg(x)},
                      {{"memory_format", Arg::of_memory_format(MemoryFormat::Contiguous)}});
    return FormulaValue::tensor(b_.call("_unsafe_view.default", {Arg(c), size_arg}));
  }

  FormulaValue call(const FormulaExpr& e, std::vector<FormulaValue>& args) {
    const uint8_t fn = e.id;
    if (fn == kCallTensor && args.empty()) return FormulaValue::none();
    // FunctionsManual's argument adaptors: the values themselves.
    if (fn == kCallAdaptor && args.size() == 1) return args[0];
    if (fn == kCallNotImplemented)  // a derivatives.yaml entry PyTorch does not implement
      throw Error("the derivative for '" + (args.empty() ? b_.op().base_name : args[0].arg.str) +
                  "' is not implemented.");
    if (fn == kCallDerivativeNotImplemented)  // no derivatives.yaml entry at all
      throw Error("derivative for " + b_.op().name + " is not implemented");
    if (fn == kCallSqrt && args.size() == 1 && is_number(args[0]))
      return number(std::sqrt(args[0].to_double()));
    return call_op(e, e.base, e.ops, args);
  }

  // The first overload of aten op `base` (`ops`: its overloads, bound) whose schema takes `args`.
  FormulaValue call_op(const FormulaExpr& e, const std::string& base,
                       const std::vector<const OpDef*>* ops,
                       const std::vector<FormulaValue>& args) {
    if (!ops) throw error(e, "no helper or aten op named '" + base + "'");
    for (const OpDef* op : *ops) {
      const auto& sargs = op->schema.args;
      if (args.size() > sargs.size()) continue;
      bool ok = true;
      for (size_t i = 0; ok && i < args.size(); ++i)
        ok =
            fits(args[i], sargs[i]) || (args[i].kind == Kind::kOptions && sargs[i].name == "dtype");
      for (size_t i = args.size(); ok && i < sargs.size(); ++i) ok = sargs[i].has_default;
      if (ok) return emit(*op, args);
    }
    throw error(e, "no overload of aten::" + base + " takes these arguments");
  }

  // `base`.Tensor or `base`.Scalar: a binary operator's op (bound), else found by name.
  FormulaValue call_named(const FormulaExpr& e, const char* base, bool tensor,
                          const std::vector<FormulaValue>& args) {
    const OpDef* op =
        e.kind == FormulaExpr::Kind::kBinary ? (tensor ? e.tensor_op : e.scalar_op) : nullptr;
    std::string name = std::string(base) + (tensor ? ".Tensor" : ".Scalar");
    if (!op) op = aten_ops().find(name);
    if (!op) throw error(e, "no aten op " + name);
    return emit(*op, args);
  }

  Arg to_arg(const FormulaValue& v) { return formula_arg(b_, v); }

  FormulaValue emit(const OpDef& op, const std::vector<FormulaValue>& args) {
    std::vector<Arg> pos;
    std::vector<std::pair<std::string, Arg>> kw;
    const auto& sargs = op.schema.args;
    for (size_t i = 0; i < args.size(); ++i) {
      const SchemaArg& sa = sargs[i];
      // An op given an undefined tensor where it needs one gives an undefined tensor (the
      // `grad.defined() ? ... : Tensor()` of derivatives.yaml).
      if (args[i].is_none() && sa.type.base == BaseType::Tensor && !sa.type.optional &&
          !sa.type.list)
        return FormulaValue::none();
      if (args[i].kind == Kind::kOptions) {  // TensorOptions: dtype, layout, device
        const TensorMeta& o = *args[i].options;
        kw.push_back({"dtype", Arg::of_dtype(o.dtype)});
        kw.push_back({"layout", Arg::of_layout(Layout::Strided)});
        kw.push_back({"device", Arg::of_device(o.device)});
        continue;
      }
      Arg a = to_arg(args[i]);
      // A single int for int[N] (IntArrayRef from an int): N copies of it.
      if (sa.type.list && a.kind == Arg::Kind::Int && sa.type.base != BaseType::Tensor)
        a = Arg::of_list(std::vector<Arg>(sa.type.list_size > 0 ? sa.type.list_size : 1, a));
      if (sa.kwarg_only)
        kw.push_back({sa.name, std::move(a)});
      else
        pos.push_back(std::move(a));
    }
    return FormulaValue::tensor(b_.call(op, std::move(pos), std::move(kw)));
  }

  GradBuilder& b_;
  const FormulaProgram& p_;
  const FormulaEntry* entry_ = nullptr;
  std::vector<std::map<std::string, FormulaValue>> scopes_;  // helpers written as formulas
};

// Names an expression uses, for unresolved_names.
void collect(const FormulaExpr& e, std::vector<std::pair<std::string, bool>>& names) {
  if (e.kind == FormulaExpr::Kind::kName) names.push_back({e.name, false});
  if (e.kind == FormulaExpr::Kind::kCall) names.push_back({e.name, true});
  for (const auto& a : e.args) collect(a, names);
}

}  // namespace

void add_grad_helper(const std::string& signature, const std::string& body) {
  auto m = std::make_shared<FormulaMacro>();
  auto [name, params] = FormulaParser(signature).signature();
  m->text = signature + " = " + body;
  m->params = std::move(params);
  m->body = FormulaParser(body).whole_expr();
  std::lock_guard<std::mutex> lock(helpers_mu());
  auto it = macros().find(name);
  if (it != macros().end() && it->second->text == m->text) return;  // the same, again
  if (helpers().count(name) || it != macros().end())
    throw Error("derivative formula helper '" + name + "' is registered twice");
  macros().emplace(name, std::move(m));
}

std::shared_ptr<const DerivativeRule> formula(std::string text) {
  auto p = std::make_shared<FormulaProgram>();
  p->text = text;
  p->entries = FormulaParser(p->text).parse();
  std::stable_sort(
      p->entries.begin(), p->entries.end(),
      [](const FormulaEntry& a, const FormulaEntry& b) { return a.keys[0] < b.keys[0]; });
  auto r = std::make_shared<DerivativeRule>();
  r->formula = std::move(text);
  r->program = std::move(p);
  return r;
}

void bind_formulas(const OpTable& table) {
  const OverloadIndex* expected = nullptr;
  const OverloadIndex* index = index_overloads(table);
  if (!g_overloads.compare_exchange_strong(expected, index)) delete index;
  for (const OpDef* op : table.all())
    if (op->derivative && op->derivative->program) bind(*op->derivative->program);
}

void DerivativeRule::apply(GradBuilder& b) const {
  if (program) {
    bind(*program);
    Evaluator(b, *program).run();
    return;
  }
  AOTGRAD_CHECK(fn, "derivative rule without a formula program or function");
  fn(b);
}

std::vector<std::string> unresolved_names(const DerivativeRule& rule, const OpDef& op) {
  std::vector<std::string> out;
  if (!rule.program) return out;
  static const char* kVocabulary[] = {"grad", "grads",   "result", "true",           "false",
                                      "M_PI", "nullopt", "None",   "grad_input_mask"};
  for (const FormulaEntry& e : rule.program->entries) {
    for (const std::string& k : e.keys)
      if (op.schema.arg_index(k) < 0) out.push_back(k + " (a key that is no argument)");
    if (e.non_differentiable) continue;
    std::vector<std::pair<std::string, bool>> names;
    collect(e.expr, names);
    for (const auto& [n, is_call] : names) {
      if (is_call) {
        static const char* kBuiltins[] = {"Tensor",
                                          "sqrt",
                                          "TensorGeometry",
                                          "to_args_sizes_symint",
                                          "to_args_scalartypes",
                                          "not_implemented",
                                          "derivative_not_implemented"};
        if (std::find(std::begin(kBuiltins), std::end(kBuiltins), n) != std::end(kBuiltins) ||
            find_grad_helper(n) || find_grad_helper(op_base(n)) || find_macro(op_base(n)) ||
            overloads(op_base(n)))
          continue;
        out.push_back(n + " (no helper or aten op)");
        continue;
      }
      if (op.schema.arg_index(n) >= 0) continue;
      if (std::find(std::begin(kVocabulary), std::end(kVocabulary), n) != std::end(kVocabulary))
        continue;
      if (n.size() > 6 && n.rfind("result", 0) == 0) continue;
      bool ret = false;
      for (const SchemaArg& r : op.schema.returns) ret = ret || r.name == n;
      if (!ret) out.push_back(n + " (unknown name)");
    }
  }
  return out;
}

}  // namespace aotgrad
