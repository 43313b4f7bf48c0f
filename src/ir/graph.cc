// aotgrad: Graph and Node bookkeeping, argument binding and argument text.
#include "aotgrad/ir/graph.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <functional>
#include <new>

#include "aotgrad/ir/node_map.h"
#include "aotgrad/support/quote.h"

namespace aotgrad {

// ---------------------------------------------------------------------------------------------
// Arg

Arg Arg::of_ints(const std::vector<int64_t>& v) {
  std::vector<Arg> l;
  l.reserve(v.size());
  for (int64_t x : v) l.push_back(of_int(x));
  return of_list(std::move(l));
}

Arg Arg::of_symints(const SymIntVector& v) {
  std::vector<Arg> l;
  l.reserve(v.size());
  for (auto& x : v) l.push_back(of_int(x.value()));
  return of_list(std::move(l));
}

bool Arg::operator==(const Arg& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case Kind::None: return true;
    case Kind::Node: return node == o.node;
    case Kind::Float: return f == o.f || (std::isnan(f) && std::isnan(o.f));
    case Kind::Str: return str == o.str;
    case Kind::Device: return device == o.device;
    case Kind::List:
    case Kind::Tuple: return list == o.list;
    case Kind::Op: return op == o.op;
    case Kind::Graph: return graph == o.graph && str == o.str;
    default: return i == o.i;
  }
}

void append_python_float(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "nan";
    return;
  }
  if (std::isinf(v)) {
    out += v < 0 ? "-inf" : "inf";
    return;
  }
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string_view sci(buf, res.ptr - buf);  // "-1.2345e-05"
  bool neg = sci[0] == '-';
  if (neg) sci.remove_prefix(1);
  size_t epos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, epos))
    if (c != '.') digits += c;
  int exp = std::atoi(std::string(sci.substr(epos + 1)).c_str());
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  int decpt = exp + 1;  // position of the decimal point relative to the digits
  if (neg) out += '-';
  if (decpt <= -4 || decpt > 16) {
    out += digits[0];
    if (digits.size() > 1) {
      out += '.';
      out.append(digits, 1);
    }
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += eb;
  } else if (decpt <= 0) {
    out += "0.";
    out.append(-decpt, '0');
    out += digits;
  } else if (static_cast<size_t>(decpt) >= digits.size()) {
    out += digits;
    out.append(decpt - digits.size(), '0');
    out += ".0";
  } else {
    out.append(digits, 0, decpt);
    out += '.';
    out.append(digits, decpt);
  }
}

namespace {
void append_python_str(std::string& out, const std::string& s) {
  out += '\'';
  for (char c : s) {
    if (c == '\'' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  out += '\'';
}
}  // namespace

void append_op_ref(std::string& out, const OpDef& op) {
  const std::string& qualified = op.schema.name;  // "aten::add"
  size_t colons = qualified.find("::");
  out += "torch.ops.";
  if (colons == std::string::npos)
    out += "aten";
  else
    out.append(qualified, 0, colons);
  out += '.';
  out += op.short_name;
}

void append_arg(std::string& out, const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::None: out += "None"; return;
    case Arg::Kind::Node: out += a.node->name(); return;
    case Arg::Kind::Int: {
      char buf[24];
      auto r = std::to_chars(buf, buf + sizeof buf, a.i);
      out.append(buf, r.ptr);
      return;
    }
    case Arg::Kind::Float: append_python_float(out, a.f); return;
    case Arg::Kind::Bool: out += a.i ? "True" : "False"; return;
    case Arg::Kind::Str: append_python_str(out, a.str); return;
    case Arg::Kind::Dtype:
      out += "torch.";
      out += torch_name(a.dtype());
      return;
    case Arg::Kind::Device:
      out += "device(type='";
      out += a.device.type == DeviceType::CPU    ? "cpu"
             : a.device.type == DeviceType::CUDA ? "cuda"
                                                 : "meta";
      out += '\'';
      if (a.device.index >= 0) out += ", index=" + std::to_string(a.device.index);
      out += ')';
      return;
    case Arg::Kind::Layout:
      out += "torch.";
      out += torch_name(static_cast<Layout>(a.i));
      return;
    case Arg::Kind::MemoryFormat:
      out += "torch.";
      out += torch_name(static_cast<MemoryFormat>(a.i));
      return;
    case Arg::Kind::List:
    case Arg::Kind::Tuple: {
      out += a.kind == Arg::Kind::List ? '[' : '(';
      for (size_t k = 0; k < a.list.size(); ++k) {
        if (k) out += ", ";
        append_arg(out, a.list[k]);
      }
      if (a.kind == Arg::Kind::Tuple && a.list.size() == 1) out += ',';
      out += a.kind == Arg::Kind::List ? ']' : ')';
      return;
    }
    case Arg::Kind::Op: append_op_ref(out, *a.op); return;
    case Arg::Kind::Graph: out += a.str; return;
  }
}

const char* recompute_policy_name(RecomputePolicy p) {
  switch (p) {
    case RecomputePolicy::None: return "";
    case RecomputePolicy::MustSave: return "MUST_SAVE";
    case RecomputePolicy::PreferSave: return "PREFER_SAVE";
    case RecomputePolicy::MustRecompute: return "MUST_RECOMPUTE";
    case RecomputePolicy::PreferRecompute: return "PREFER_RECOMPUTE";
  }
  return "";
}

std::optional<RecomputePolicy> parse_recompute_policy(std::string_view name) {
  if (name.substr(0, 17) == "CheckpointPolicy.") name.remove_prefix(17);
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (RecomputePolicy p : {RecomputePolicy::MustSave, RecomputePolicy::PreferSave,
                            RecomputePolicy::MustRecompute, RecomputePolicy::PreferRecompute})
    if (upper == recompute_policy_name(p)) return p;
  return std::nullopt;
}

std::string arg_to_string(const Arg& a) {
  std::string s;
  append_arg(s, a);
  return s;
}

// ---------------------------------------------------------------------------------------------
// Binding and type checks

namespace {

bool is_sym_node(const Arg& a) {
  return a.kind == Arg::Kind::Node && a.node->meta().kind == ValueMeta::Kind::SymInt;
}

// Error text quoting a string argument's bytes (from the graph text) as they were given: escaped
// (escape_bytes) when one is not printable ASCII, so that the message stays text.
std::string as_text(const std::string& m) {
  bool text = std::all_of(m.begin(), m.end(), [](char c) {
    return static_cast<unsigned char>(c) >= 32 && static_cast<unsigned char>(c) < 127;
  });
  return text ? m : escape_bytes(m);
}

std::string describe_arg(const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::None: return "None";
    case Arg::Kind::Node: return "'" + a.node->name() + "' (" + a.node->meta().describe() + ")";
    case Arg::Kind::Int: return "int " + arg_to_string(a);
    case Arg::Kind::Float: return "float " + arg_to_string(a);
    case Arg::Kind::Bool: return "bool " + arg_to_string(a);
    case Arg::Kind::Str: return "str " + as_text(arg_to_string(a));
    case Arg::Kind::List: return "list " + as_text(arg_to_string(a));
    case Arg::Kind::Tuple: return "tuple " + as_text(arg_to_string(a));
    case Arg::Kind::Op: return "op " + arg_to_string(a);
    case Arg::Kind::Graph: return "subgraph " + a.str;
    default: return arg_to_string(a);
  }
}

bool fits_base(BaseType b, const Arg& a) {
  switch (b) {
    case BaseType::Tensor:  // a Python number is accepted as a wrapped 0-dim tensor
      return (a.kind == Arg::Kind::Node && a.node->meta().is_tensor()) ||
             a.kind == Arg::Kind::Int || a.kind == Arg::Kind::Float || a.kind == Arg::Kind::Bool;
    case BaseType::Int:
    case BaseType::SymInt: return a.kind == Arg::Kind::Int || is_sym_node(a);
    case BaseType::Float:
      return a.kind == Arg::Kind::Float || a.kind == Arg::Kind::Int || is_sym_node(a);
    case BaseType::Bool: return a.kind == Arg::Kind::Bool;
    case BaseType::Scalar:
      return a.kind == Arg::Kind::Int || a.kind == Arg::Kind::Float || a.kind == Arg::Kind::Bool ||
             is_sym_node(a);
    case BaseType::ScalarType: return a.kind == Arg::Kind::Dtype;
    case BaseType::Layout: return a.kind == Arg::Kind::Layout;
    case BaseType::Device: return a.kind == Arg::Kind::Device;
    case BaseType::MemoryFormat: return a.kind == Arg::Kind::MemoryFormat;
    case BaseType::Str: return a.kind == Arg::Kind::Str;
    case BaseType::Generator: return false;
    case BaseType::Any: return true;
  }
  return false;
}

}  // namespace

std::string check_arg_type(const TypeRef& t, const Arg& a) {
  if (a.kind == Arg::Kind::None) {
    if (t.optional) return "";
    return "expected " + t.to_string() + ", got None";
  }
  if (t.list) {
    if (!a.is_list()) {
      // int[N] also takes a single int, as in Python.
      if (t.base == BaseType::Int && fits_base(t.base, a)) return "";
      return "expected " + t.to_string() + ", got " + describe_arg(a);
    }
    for (auto& e : a.list) {
      if (e.kind == Arg::Kind::None && t.elem_optional) continue;
      if (!fits_base(t.base, e))
        return "expected " + t.to_string() + ", got element " + describe_arg(e);
    }
    return "";
  }
  if (!fits_base(t.base, a)) return "expected " + t.to_string() + ", got " + describe_arg(a);
  return "";
}

Arg default_arg(const SchemaArg& sa) {
  const std::string& d = sa.default_text;
  const TypeRef& t = sa.type;
  if (d == "None") return Arg::none();
  if (d == "True" || d == "False") return Arg::of_bool(d == "True");
  if (d.size() >= 2 && d.front() == '"') return Arg::of_str(d.substr(1, d.size() - 2));
  if (d == "Mean") return Arg::of_int(1);
  if (d == "Sum") return Arg::of_int(2);
  if (t.base == BaseType::MemoryFormat) {
    if (auto m = memory_format_from_torch_name(d)) return Arg::of_memory_format(*m);
  }
  if (t.base == BaseType::ScalarType) {
    if (auto st = scalar_type_from_torch_name(d)) return Arg::of_dtype(*st);
  }
  auto scalar = [&](const std::string& s) -> Arg {
    bool is_float = s.find_first_of(".eE") != std::string::npos || s == "inf" || s == "-inf";
    if (t.base == BaseType::Float || is_float) return Arg::of_float(std::stod(s));
    return Arg::of_int(std::stoll(s));
  };
  if (t.list) {
    std::vector<Arg> elems;
    if (d.front() == '[') {
      std::string inner = d.substr(1, d.size() - 2);
      size_t start = 0;
      while (start < inner.size()) {
        size_t comma = inner.find(',', start);
        std::string e =
            inner.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        e.erase(0, e.find_first_not_of(' '));
        if (!e.empty()) {
          if (e == "True" || e == "False")
            elems.push_back(Arg::of_bool(e == "True"));
          else
            elems.push_back(scalar(e));
        }
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else {
      elems.assign(std::max(1, t.list_size), scalar(d));
    }
    return Arg::of_list(std::move(elems));
  }
  return scalar(d);
}

std::pair<std::vector<Arg>, uint64_t> bind_arguments(
    const OpDef& op, std::vector<Arg> args, std::vector<std::pair<std::string, Arg>> kwargs) {
  const auto& sargs = op.schema.args;
  AOTGRAD_CHECK(sargs.size() <= 64, op.name, ": too many arguments to bind");
  size_t n_positional = 0;
  while (n_positional < sargs.size() && !sargs[n_positional].kwarg_only) ++n_positional;
  if (args.size() > n_positional)
    throw Error(op.name + " takes at most " + std::to_string(n_positional) +
                " positional arguments, got " + std::to_string(args.size()));
  std::vector<Arg> bound(sargs.size());
  uint64_t given = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    bound[i] = std::move(args[i]);
    given |= 1ull << i;
  }
  for (auto& [name, value] : kwargs) {
    int idx = op.schema.arg_index(name);
    if (idx < 0) throw Error(op.name + " has no argument '" + name + "'");
    if (given >> idx & 1u) throw Error(op.name + " got argument '" + name + "' twice");
    bound[idx] = std::move(value);
    given |= 1ull << idx;
  }
  for (size_t i = 0; i < sargs.size(); ++i) {
    if (given >> i & 1u) {
      std::string err = check_arg_type(sargs[i].type, bound[i]);
      if (!err.empty()) throw Error(op.name + " argument '" + sargs[i].name + "': " + err);
    } else if (sargs[i].has_default) {
      bound[i] = default_arg(sargs[i]);
    } else {
      throw Error(op.name + " is missing argument '" + sargs[i].name + "' (" +
                  sargs[i].type.to_string() + ")");
    }
  }
  return {std::move(bound), given};
}

ValueMeta infer_meta(const OpDef& op, const std::vector<Arg>& bound_args) {
  if (!op.meta) throw Error(op.name + " has no meta function");
  try {
    return op.meta(MetaArgs(op, bound_args));
  } catch (const Error& e) {
    // A meta function may quote a string argument as it was given (rounding_mode = '...').
    throw Error(op.name + ": " + as_text(e.message()));
  }
}

// ---------------------------------------------------------------------------------------------
// Node

const TensorMeta& Node::tensor_meta() const {
  AOTGRAD_CHECK(meta_.is_tensor(), describe(), " is not a tensor (", meta_.describe(), ")");
  return meta_.tensor;
}

void Node::add_uses() {
  for (auto& a : args_) a.for_each_node([this](Node* n) { n->users_.push_back(this); });
}

void Node::drop_uses() {
  for (auto& a : args_)
    a.for_each_node([this](Node* n) {
      auto it = std::find(n->users_.begin(), n->users_.end(), this);
      if (it != n->users_.end()) n->users_.erase(it);
    });
}

void Node::set_arg(size_t i, Arg a, bool given) {
  AOTGRAD_CHECK(i < args_.size(), describe(), ": argument index ", i, " out of range");
  args_[i].for_each_node([this](Node* n) {
    auto it = std::find(n->users_.begin(), n->users_.end(), this);
    if (it != n->users_.end()) n->users_.erase(it);
  });
  args_[i] = std::move(a);
  args_[i].for_each_node([this](Node* n) { n->users_.push_back(this); });
  if (given)
    given_ |= 1ull << i;
  else
    given_ &= ~(1ull << i);
}

std::string Node::describe() const {
  switch (kind_) {
    case NodeKind::Placeholder: return "placeholder '" + name_ + "'";
    case NodeKind::Call: return "node '" + name_ + "' (" + op_->name + ")";
    case NodeKind::GetItem: return "node '" + name_ + "' (getitem)";
    case NodeKind::Output: return "output";
  }
  return name_;
}

// ---------------------------------------------------------------------------------------------
// Graph

Graph::Graph() = default;

Graph::~Graph() {
  Node* n = head_;
  while (n) {
    Node* next = n->next_;
    n->~Node();
    n = next;
  }
}

namespace {
constexpr size_t kNodeBlock = 128;  // nodes per block
}  // namespace

void* Graph::allocate_node() {
  if (!free_nodes_.empty()) {
    Node* n = free_nodes_.back();
    free_nodes_.pop_back();
    return n;
  }
  if (node_blocks_.empty() || block_used_ == kNodeBlock) {
    node_blocks_.emplace_back(new NodeStorage[kNodeBlock]);  // left uninitialized
    block_used_ = 0;
  }
  return &node_blocks_.back()[block_used_++];
}

void Graph::free_node(Node* n) {
  n->~Node();
  free_nodes_.push_back(n);
}

namespace {

bool is_illegal_python_name(std::string_view s) {
  static const std::unordered_set<std::string_view> kIllegal = {
      // keywords
      "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
      "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if",
      "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try",
      "while", "with", "yield",
      // builtins
      "abs", "all", "any", "ascii", "bin", "bool", "breakpoint", "bytearray", "bytes", "callable",
      "chr", "classmethod", "compile", "complex", "copyright", "credits", "delattr", "dict", "dir",
      "divmod", "enumerate", "eval", "exec", "exit", "filter", "float", "format", "frozenset",
      "getattr", "globals", "hasattr", "hash", "help", "hex", "id", "input", "int", "isinstance",
      "issubclass", "iter", "len", "license", "list", "locals", "map", "max", "memoryview", "min",
      "next", "object", "oct", "open", "ord", "pow", "print", "property", "quit", "range", "repr",
      "reversed", "round", "set", "setattr", "slice", "sorted", "staticmethod", "str", "sum",
      "super", "tuple", "type", "vars", "zip", "__import__", "NotImplemented", "Ellipsis",
      // FX's custom builtins
      "inf", "nan", "NoneType", "torch", "device", "fx_pytree", "pytree", "math", "builtins",
      "self", "operator"};
  return kIllegal.count(s) > 0;
}

}  // namespace

bool Graph::has_name(std::string_view name) const { return names_.contains(name); }

std::string Graph::unique_name(std::string_view base_in) {
  std::string candidate;
  for (char c : base_in)
    candidate += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (candidate.empty()) candidate = "_unnamed";
  if (std::isdigit(static_cast<unsigned char>(candidate[0]))) candidate = "_" + candidate;
  std::string base = candidate;
  int64_t num = 0;
  bool has_num = false;
  size_t us = candidate.rfind('_');
  if (us != std::string::npos && us + 1 < candidate.size() &&
      std::all_of(candidate.begin() + us + 1, candidate.end(), ::isdigit) &&
      candidate.size() - us - 1 < 18) {
    base = candidate.substr(0, us);
    num = std::stoll(candidate.substr(us + 1));
    has_num = true;
  }
  candidate = has_num ? base + "_" + std::to_string(num) : base;
  if (!num) num = name_counters_[base];
  while (names_.contains(candidate) || is_illegal_python_name(candidate)) {
    ++num;
    candidate = base + "_" + std::to_string(num);
  }
  name_counters_[base] = num;
  return candidate;
}

void Graph::claim_name(const std::string& name) {
  AOTGRAD_CHECK(!names_.contains(name), "name '", name, "' is defined twice");
  claimed_.push_back(name);
  names_.insert(claimed_.back(), nullptr);
}

void Graph::rename(Node* n, std::string name) {
  AOTGRAD_CHECK(n && n->graph_ == this, "rename: the node is not in this graph");
  if (name == n->name_) return;
  AOTGRAD_CHECK(!name.empty() && !names_.contains(name), "rename: name '", name,
                "' is empty or taken");
  names_.erase(n->name_);
  n->name_ = std::move(name);
  names_.insert(n->name_, n);  // the view of the name points into the node
}

Node* Graph::find(std::string_view name) const {
  Node* const* n = names_.find(name);
  return n ? *n : nullptr;
}

Node* Graph::new_node(NodeKind kind, std::string name) {
  AOTGRAD_CHECK(!name.empty(), "node name must not be empty");
  Node** claimed = names_.find(name);
  AOTGRAD_CHECK(!claimed || *claimed == nullptr, "name '", name, "' is defined twice");
  Node* n = new (allocate_node()) Node();
  n->kind_ = kind;
  n->name_ = std::move(name);
  n->graph_ = this;
  if (claimed)
    *claimed = n;
  else
    names_.insert(n->name_, n);  // the view of the name points into the node
  ++size_;
  return n;
}

void Graph::link_before(Node* n, Node* before) {
  if (!before) {
    n->prev_ = tail_;
    if (tail_)
      tail_->next_ = n;
    else
      head_ = n;
    tail_ = n;
    return;
  }
  n->next_ = before;
  n->prev_ = before->prev_;
  if (before->prev_)
    before->prev_->next_ = n;
  else
    head_ = n;
  before->prev_ = n;
  // Anything but a placeholder put among the leading placeholders ends their run there.
  if (n->kind_ != NodeKind::Placeholder && before->kind_ == NodeKind::Placeholder)
    last_placeholder_ = find_last_placeholder();
}

Node* Graph::find_last_placeholder() const {
  Node* last = nullptr;
  for (Node* n = head_; n && n->kind_ == NodeKind::Placeholder; n = n->next_) last = n;
  return last;
}

Node* Graph::add_placeholder(const std::string& name, ValueMeta meta) {
  Node* n = new_node(NodeKind::Placeholder, name);
  n->meta_ = std::move(meta);
  link_before(n, last_placeholder_ ? last_placeholder_->next_ : head_);
  last_placeholder_ = n;
  return n;
}

Node* Graph::add_call(const OpDef& op, std::vector<Arg> args,
                      std::vector<std::pair<std::string, Arg>> kwargs, const std::string& name) {
  auto [bound, given] = bind_arguments(op, std::move(args), std::move(kwargs));
  ValueMeta meta = infer_meta(op, bound);
  return add_call_raw(op, std::move(bound), given, std::move(meta),
                      name.empty() ? unique_name(op.base_name) : name);
}

Node* Graph::add_call_raw(const OpDef& op, std::vector<Arg> bound_args, uint64_t given_mask,
                          ValueMeta meta, const std::string& name) {
  Node* n = new_node(NodeKind::Call, name.empty() ? unique_name(op.base_name) : name);
  n->op_ = &op;
  n->args_ = std::move(bound_args);
  n->given_ = given_mask;
  n->meta_ = std::move(meta);
  n->add_uses();
  link_before(n, insert_before_ ? insert_before_ : output_);
  return n;
}

Node* Graph::add_getitem(Node* input, int64_t index, const std::string& name) {
  const ValueMeta& m = input->meta();
  AOTGRAD_CHECK(m.kind == ValueMeta::Kind::Tuple, "getitem on ", input->describe(),
                " which is not a tuple (", m.describe(), ")");
  AOTGRAD_CHECK(index >= 0 && index < static_cast<int64_t>(m.elems.size()), "getitem index ", index,
                " out of range for ", input->describe(), " with ", m.elems.size(), " results");
  Node* n = new_node(NodeKind::GetItem, name.empty() ? unique_name("getitem") : name);
  n->args_ = {Arg(input), Arg::of_int(index)};
  n->given_ = 3;
  n->meta_ = m.elems[index];
  n->add_uses();
  link_before(n, insert_before_ ? insert_before_ : output_);
  return n;
}

Node* Graph::set_output(Arg value) {
  if (!output_) {
    output_ = new_node(NodeKind::Output, "output");
    link_before(output_, nullptr);
  }
  output_->drop_uses();
  output_->args_ = {std::move(value)};
  output_->given_ = 1;
  output_->add_uses();
  return output_;
}

void Graph::replace_op(Node* n, const OpDef& op) {
  AOTGRAD_CHECK(n->kind_ == NodeKind::Call, "cannot give ", n->describe(), " the op ", op.name,
                ": it is not a call");
  AOTGRAD_CHECK(op.schema.args.size() == n->args_.size(), "cannot give ", n->describe(), " the op ",
                op.name, ": it takes ", op.schema.args.size(), " arguments, the call binds ",
                n->args_.size());
  n->op_ = &op;
}

void Graph::erase(Node* n) {
  AOTGRAD_CHECK(n->users_.empty(), "cannot erase ", n->describe(), ": it still has ",
                n->users_.size(), " users");
  n->drop_uses();
  // Removing what separates the leading placeholders from later ones joins the two runs.
  bool joins_placeholders =
      n->kind_ != NodeKind::Placeholder && n->next_ && n->next_->kind_ == NodeKind::Placeholder;
  if (n == last_placeholder_) last_placeholder_ = n->prev_;
  if (n->prev_)
    n->prev_->next_ = n->next_;
  else
    head_ = n->next_;
  if (n->next_)
    n->next_->prev_ = n->prev_;
  else
    tail_ = n->prev_;
  if (joins_placeholders) last_placeholder_ = find_last_placeholder();
  if (insert_before_ == n) insert_before_ = nullptr;
  if (output_ == n) output_ = nullptr;
  names_.erase(n->name_);
  --size_;
  free_node(n);
}

namespace {
void replace_in(Arg& a, Node* from, Node* to) {
  if (a.kind == Arg::Kind::Node && a.node == from)
    a.node = to;
  else if (a.is_list())
    for (auto& e : a.list) replace_in(e, from, to);
}
}  // namespace

void Graph::replace_all_uses_with(Node* from, Node* to) {
  if (from == to) return;
  std::vector<Node*> users = from->users_;
  std::sort(users.begin(), users.end());
  users.erase(std::unique(users.begin(), users.end()), users.end());
  for (Node* u : users) {
    for (auto& a : u->args_) replace_in(a, from, to);
  }
  for (Node* u : from->users_) to->users_.push_back(u);
  from->users_.clear();
}

namespace {
// Arguments point at earlier nodes, so each is already in `map`.
void remap_into(Arg& a, const NodeMap<Node*>& map) {
  if (a.is_node())
    a.node = map.at(a.node, "Graph::clone");
  else if (a.is_list())
    for (auto& e : a.list) remap_into(e, map);
}
}  // namespace

std::unique_ptr<Graph> Graph::clone() const {
  auto g = std::make_unique<Graph>();
  g->signature = signature;
  g->names_.reserve(names_.size());
  NodeMap<Node*> map(size_);
  for (const Node* n : nodes()) {
    Node* c = nullptr;
    switch (n->kind()) {
      case NodeKind::Placeholder: c = g->add_placeholder(n->name(), n->meta()); break;
      case NodeKind::GetItem:
        c = g->add_getitem(map.at(n->getitem_input(), "Graph::clone"), n->getitem_index(),
                           n->name());
        c->mutable_meta() = n->meta();
        break;
      case NodeKind::Call: {
        std::vector<Arg> args = n->args();
        for (auto& a : args) remap_into(a, map);
        c = g->add_call_raw(*n->op(), std::move(args), n->given_mask(), n->meta(), n->name());
        break;
      }
      case NodeKind::Output: {
        Arg out = n->args()[0];
        remap_into(out, map);
        c = g->set_output(std::move(out));
        c->mutable_meta() = n->meta();
        break;
      }
    }
    c->info() = n->info();
    c->users_.reserve(n->users_.size());
    map.emplace(n, c);
  }
  g->name_counters_ = name_counters_;
  return g;
}

void Graph::reorder(const std::vector<const Node*>& body) {
  std::vector<Node*> leading = placeholders();
  AOTGRAD_CHECK(leading.size() + body.size() + (output_ ? 1 : 0) == size_,
                "Graph::reorder: ", body.size(), " nodes given for the ",
                size_ - leading.size() - (output_ ? 1 : 0), " calls and getitems of the graph");
  NodeMap<bool> placed(size_);
  for (Node* p : leading) placed.emplace(p, true);
  for (const Node* n : body) {
    AOTGRAD_CHECK(
        n && n->graph_ == this && n->kind_ != NodeKind::Placeholder && n->kind_ != NodeKind::Output,
        "Graph::reorder: ", n ? n->describe() : "null", " is not a call or getitem of the graph");
    for (const Arg& a : n->args_)
      a.for_each_node([&](Node* v) {
        AOTGRAD_CHECK(placed.contains(v), "Graph::reorder: ", n->describe(),
                      " would come before its argument '", v->name_, "'");
      });
    AOTGRAD_CHECK(placed.emplace(n, true).second, "Graph::reorder: ", n->describe(),
                  " is given twice");
  }
  Node* prev = leading.empty() ? nullptr : leading.back();
  auto link = [&](Node* n) {
    n->prev_ = prev;
    (prev ? prev->next_ : head_) = n;
    prev = n;
  };
  // The nodes are this graph's (checked above): relinking them changes the graph, not them.
  for (const Node* n : body) link(const_cast<Node*>(n));
  if (output_) link(output_);
  if (prev) prev->next_ = nullptr;
  tail_ = prev;
}

std::vector<Node*> Graph::placeholders() const {
  std::vector<Node*> out;
  for (Node* n = head_; n && n->kind_ == NodeKind::Placeholder; n = n->next_) out.push_back(n);
  return out;
}

Arg inline_graph(Graph& g, const Graph& callee, const std::vector<Arg>& inputs) {
  std::vector<Node*> placeholders = callee.placeholders();
  AOTGRAD_CHECK(placeholders.size() == inputs.size(), "inline_graph: ", inputs.size(),
                " inputs for a graph of ", placeholders.size(), " placeholders");
  std::unordered_map<const Node*, Arg> map;
  for (size_t i = 0; i < placeholders.size(); ++i) map[placeholders[i]] = inputs[i];
  std::function<Arg(const Arg&)> remap = [&](const Arg& a) -> Arg {
    if (a.is_node()) return map.at(a.node);
    if (a.is_list()) {
      Arg out = a;
      for (Arg& e : out.list) e = remap(e);
      return out;
    }
    return a;
  };
  for (const Node* n : callee.nodes()) {
    if (n->kind() == NodeKind::Call) {
      std::vector<Arg> args;
      args.reserve(n->args().size());
      for (const Arg& a : n->args()) args.push_back(remap(a));
      Node* c = g.add_call_raw(*n->op(), std::move(args), n->given_mask(), n->meta(), "");
      c->info() = n->info();
      map[n] = Arg(c);
    } else if (n->kind() == NodeKind::GetItem) {
      Arg in = map.at(n->getitem_input());
      AOTGRAD_CHECK(in.is_node(), "inline_graph: getitem of a constant input");
      map[n] = Arg(g.add_getitem(in.node, n->getitem_index()));
    }
  }
  return callee.output() ? remap(callee.output()->args()[0]) : Arg();
}

std::unique_ptr<Graph> outline_graph(const std::vector<Node*>& inputs,
                                     const std::vector<std::string>& input_names,
                                     const std::vector<Node*>& body,
                                     const std::vector<Node*>& results) {
  AOTGRAD_CHECK(inputs.size() == input_names.size(), "outline_graph: ", input_names.size(),
                " names for ", inputs.size(), " inputs");
  auto g = std::make_unique<Graph>();
  std::unordered_map<const Node*, Node*> map;
  for (size_t i = 0; i < inputs.size(); ++i)
    map[inputs[i]] = g->add_placeholder(input_names[i], inputs[i]->meta());
  std::function<Arg(const Arg&, const Node&)> remap = [&](const Arg& a, const Node& user) -> Arg {
    if (a.is_node()) {
      auto it = map.find(a.node);
      if (it == map.end())
        throw Error(user.describe() + " uses '" + a.node->name() +
                    "', which is neither an input nor computed before it");
      return Arg(it->second);
    }
    if (a.is_list()) {
      Arg out = a;
      for (Arg& e : out.list) e = remap(e, user);
      return out;
    }
    return a;
  };
  for (const Node* n : body) {
    if (n->kind() == NodeKind::Call) {
      std::vector<Arg> args;
      args.reserve(n->args().size());
      for (const Arg& a : n->args()) args.push_back(remap(a, *n));
      Node* c = g->add_call_raw(*n->op(), std::move(args), n->given_mask(), n->meta(), "");
      c->info() = n->info();
      c->info().loc = {};
      map[n] = c;
    } else if (n->kind() == NodeKind::GetItem) {
      Arg in = remap(n->args()[0], *n);
      map[n] = g->add_getitem(in.node, n->getitem_index());
    }
  }
  std::vector<Arg> outs;
  for (const Node* r : results) {
    auto it = map.find(r);
    AOTGRAD_CHECK(it != map.end(), "outline_graph: result '", r->name(),
                  "' is neither an input nor a body node");
    outs.push_back(Arg(it->second));
  }
  g->set_output(Arg::of_tuple(std::move(outs)));
  return g;
}

}  // namespace aotgrad
