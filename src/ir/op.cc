// aotgrad: OpTable, OpDef helpers and MetaArgs accessors.
#include "aotgrad/ir/op.h"

#include <iterator>

#include "aotgrad/ir/error.h"
#include "aotgrad/ir/graph.h"

namespace aotgrad {

std::string tag_names(uint32_t tags) {
  static const char* kNames[] = {"pointwise",
                                 "view",
                                 "inplace",
                                 "random",
                                 "compute_intensive",
                                 "reduction",
                                 "core",
                                 "factory",
                                 "backward",
                                 "nondeterministic_seeded",
                                 "dynamic_output_shape",
                                 "scatter",
                                 "out_of_place_mutation",
                                 "composite_implicit",
                                 "data_dependent_output",
                                 "collective",
                                 "effectful",
                                 "recomputable",
                                 "view_op",
                                 "normalization"};
  std::string s;
  for (int i = 0; i < static_cast<int>(std::size(kNames)); ++i)
    if (tags & (1u << i)) {
      if (!s.empty()) s += ",";
      s += kNames[i];
    }
  return s;
}

ScalarType ScalarValue::natural_type() const {
  switch (kind) {
    case Kind::Int: return ScalarType::Int64;
    case Kind::Float: return kDefaultFloat;
    case Kind::Bool: return ScalarType::Bool;
  }
  return ScalarType::Int64;
}

std::vector<int> OpDef::mutated_args() const {
  std::vector<int> out;
  for (size_t i = 0; i < schema.args.size(); ++i)
    if (schema.args[i].alias.is_write) out.push_back(static_cast<int>(i));
  return out;
}

std::vector<int> OpDef::written_args(const std::vector<Arg>& call_args) const {
  std::vector<int> out = mutated_args();
  if (undeclared_mutations.empty()) return out;
  // Conditional (native_batch_norm's `training`): no mutation only for a constant False; a
  // symbolic condition may be true, and a mutation is never dropped on a guess.
  if (undeclared_mutation_if >= 0) {
    const Arg& cond = call_args.at(static_cast<size_t>(undeclared_mutation_if));
    if (cond.kind == Arg::Kind::Bool && cond.i == 0) return out;
  }
  for (int i : undeclared_mutations)
    if (call_args.at(static_cast<size_t>(i)).is_node()) out.push_back(i);
  return out;
}

int OpDef::return_alias_of(size_t ret) const {
  if (ret >= schema.returns.size()) return -1;
  const std::string& set = schema.returns[ret].alias.set;
  if (set.empty()) return -1;
  for (size_t i = 0; i < schema.args.size(); ++i)
    if (schema.args[i].alias.set == set) return static_cast<int>(i);
  return -1;
}

// ---------------------------------------------------------------------------------------------
// OpTable

OpTable::OpTable() = default;
OpTable::~OpTable() = default;

namespace {
std::string normalize_name(std::string_view name) {
  std::string s(name);
  if (s.rfind("torch.ops.", 0) == 0) s = s.substr(10);
  if (s.rfind("aten.", 0) == 0) s = "aten::" + s.substr(5);
  if (s.find("::") == std::string::npos) s = "aten::" + s;
  if (s.size() > 8 && s.compare(s.size() - 8, 8, ".default") == 0) s.resize(s.size() - 8);
  return s;
}
}  // namespace

OpDefBuilder OpTable::def(const std::string& schema_text) {
  auto op = std::make_unique<OpDef>();
  op->schema = parse_schema(schema_text);
  op->name = op->schema.qualified_name();
  std::string base = op->schema.name.substr(op->schema.name.find("::") + 2);
  op->base_name = base;
  op->short_name = base + "." + (op->schema.overload.empty() ? "default" : op->schema.overload);
  AOTGRAD_CHECK(!by_name_.count(op->name), "op '", op->name, "' is declared twice");
  OpDef* raw = op.get();
  by_name_[op->name] = raw;
  order_.push_back(raw);
  ops_.push_back(std::move(op));
  OpDefBuilder b(raw);
  b.table_ = this;
  return b;
}

const OpDef* OpTable::find(std::string_view name) const {
  std::string key = normalize_name(name);
  auto it = by_name_.find(key);
  if (it != by_name_.end()) return it->second;
  {
    std::lock_guard<std::mutex> lock(provided_mu_);
    if (auto p = provided_.find(key); p != provided_.end()) return p->second.get();
  }
  const OpProvider* provider = provider_.load();
  if (!provider) return nullptr;
  // Asked without the lock (a provider may look up other ops); a second thread asking for the
  // same op meanwhile keeps the first OpDef stored.
  std::unique_ptr<OpDef> op = provider->provide(key);
  if (!op) return nullptr;
  AOTGRAD_CHECK(op->name == key, "op provider: asked for '", key, "', gave '", op->name, "'");
  op->provided = true;
  if (auto t = provided_tags_.find(op->schema.name); t != provided_tags_.end())
    op->tags |= t->second;
  std::lock_guard<std::mutex> lock(provided_mu_);
  auto [slot, inserted] = provided_.try_emplace(key, std::move(op));
  if (inserted) provided_order_.push_back(slot->second.get());
  return slot->second.get();
}

const OpDef* OpTable::find_known(std::string_view name) const {
  std::string key = normalize_name(name);
  if (auto it = by_name_.find(key); it != by_name_.end()) return it->second;
  std::lock_guard<std::mutex> lock(provided_mu_);
  auto p = provided_.find(key);
  return p == provided_.end() ? nullptr : p->second.get();
}

std::vector<const OpDef*> OpTable::provided_ops() const {
  std::lock_guard<std::mutex> lock(provided_mu_);
  return provided_order_;
}

const OpDef& OpTable::get(std::string_view name) const {
  const OpDef* op = find(name);
  const OpProvider* provider = provider_.load();
  if (!op && provider)
    throw Error("unknown op '" + std::string(name) + "': neither aotgrad's op registry nor " +
                provider->source() + " has such an overload");
  if (!op)
    throw Error("unknown op '" + std::string(name) +
                "': aotgrad's op registry has no such overload");
  return *op;
}

void OpTable::tag_provided(const std::string& packet, uint32_t tags) {
  provided_tags_[normalize_name(packet)] |= tags;
}

OpDef* OpTable::mutable_op(std::string_view name) {
  auto it = by_name_.find(normalize_name(name));
  return it == by_name_.end() ? nullptr : it->second;
}

OpDefBuilder& OpDefBuilder::inplace(const std::string& inplace_name) {
  op_->inplace_variant = normalize_name(inplace_name);
  return *this;
}

OpDefBuilder& OpDefBuilder::scatter(const std::string& scatter_name) {
  op_->scatter_inverse = normalize_name(scatter_name);
  return *this;
}

void OpTable::finalize() {
  for (auto& op : ops_)
    if (op->tags & kPacketTags) provided_tags_[op->schema.name] |= op->tags & kPacketTags;
  for (auto& op : ops_) {
    if (!op->inplace_variant.empty()) {
      OpDef* other = mutable_op(op->inplace_variant);
      AOTGRAD_CHECK(other, op->name, " names in-place variant '", op->inplace_variant,
                    "' which is not declared");
      other->functional_variant = op->name;
    }
    if (!op->scatter_inverse.empty()) {
      OpDef* other = mutable_op(op->scatter_inverse);
      AOTGRAD_CHECK(other, op->name, " names scatter inverse '", op->scatter_inverse,
                    "' which is not declared");
      other->view_of = op->name;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Higher-order ops

namespace {

std::string hop_name(std::string_view name) {
  std::string s(name);
  if (s.rfind("torch.ops.", 0) == 0) s = s.substr(10);
  if (s.rfind("higher_order.", 0) == 0) s = "higher_order::" + s.substr(13);
  return s;
}

std::string schema_arg_text(const SchemaArg& a) {
  std::string s = a.type.to_string();
  if (!a.alias.set.empty()) {
    // "Tensor(a!)": the alias set goes between the base type and any list/optional suffix.
    size_t base = s.find_first_of("[?");
    std::string alias = "(" + a.alias.set + (a.alias.is_write ? "!" : "") + ")";
    s.insert(base == std::string::npos ? s.size() : base, alias);
  }
  if (!a.name.empty()) s += " " + a.name;
  if (a.has_default) s += "=" + a.default_text;
  return s;
}

std::string schema_text(const FunctionSchema& f) {
  std::string s = f.qualified_name() + "(";
  bool kw = false;
  for (size_t i = 0; i < f.args.size(); ++i) {
    if (i) s += ", ";
    if (f.args[i].kwarg_only && !kw) {
      s += "*, ";
      kw = true;
    }
    s += schema_arg_text(f.args[i]);
  }
  s += ") -> ";
  if (f.returns.size() == 1) return s + schema_arg_text(f.returns[0]);
  s += "(";
  for (size_t i = 0; i < f.returns.size(); ++i)
    s += (i ? ", " : "") + schema_arg_text(f.returns[i]);
  return s + ")";
}

}  // namespace

void OpTable::def_higher_order(HigherOrderOpDef family) {
  AOTGRAD_CHECK(family.name.rfind("higher_order::", 0) == 0, "higher-order op '", family.name,
                "' must be named higher_order::<name>");
  AOTGRAD_CHECK(family.derive, "higher-order op '", family.name, "' has no derive function");
  AOTGRAD_CHECK(!families_.count(family.name), "higher-order op '", family.name,
                "' is declared twice");
  std::string name = family.name;
  families_.emplace(std::move(name), std::move(family));
}

const HigherOrderOpDef* OpTable::find_higher_order(std::string_view name) const {
  auto it = families_.find(hop_name(name));
  return it == families_.end() ? nullptr : &it->second;
}

const OpDef& OpTable::higher_order(std::string_view family_name, const OpDef& wrapped) const {
  const HigherOrderOpDef* family = find_higher_order(family_name);
  if (!family) throw Error("unknown higher-order op '" + std::string(family_name) + "'");
  const std::string& fname = family->name;
  if (wrapped.wrapped)
    throw Error(fname + " cannot wrap " + wrapped.name + ", itself a higher-order op");
  if (find(wrapped.name) != &wrapped)
    throw Error(fname + " cannot wrap " + wrapped.name + ": it is not an op of this op table");
  if (!wrapped.meta)
    throw Error(fname + " cannot wrap " + wrapped.name + ": it has no meta function");
  std::string key = fname + "\n" + wrapped.name;
  std::lock_guard<std::mutex> lock(derived_mu_);
  if (auto it = derived_.find(key); it != derived_.end()) return *it->second;
  auto op = std::make_unique<OpDef>();
  FunctionSchema& s = op->schema;
  s.name = fname;
  s.args = family->leading;
  SchemaArg ref;
  ref.name = "op";
  ref.type.base = BaseType::Any;
  s.args.push_back(ref);
  for (const SchemaArg& a : wrapped.schema.args) {
    for (const SchemaArg& b : s.args)
      if (b.name == a.name)
        throw Error(fname + " cannot wrap " + wrapped.name + ": its argument '" + a.name +
                    "' has the name of one of " + fname + "'s own");
    s.args.push_back(a);
  }
  if (s.args.size() > 64)
    throw Error(fname + " cannot wrap " + wrapped.name + ": too many arguments");
  op->name = fname;
  op->base_name = op->short_name = fname.substr(fname.find("::") + 2);
  op->non_differentiable = true;
  op->wrapped = &wrapped;
  op->wrapped_arg = static_cast<int>(family->leading.size());
  family->derive(*op, wrapped);
  s.text = schema_text(s);
  const OpDef& out = *op;
  derived_.emplace(std::move(key), std::move(op));
  return out;
}

// ---------------------------------------------------------------------------------------------
// MetaArgs

const Arg& MetaArgs::checked(size_t i) const {
  AOTGRAD_CHECK(i < args_.size(), op_.name, ": meta function read argument ", i, " of ",
                args_.size());
  return args_[i];
}

size_t MetaArgs::size() const { return args_.size(); }
const Arg& MetaArgs::arg(size_t i) const { return checked(i); }

bool MetaArgs::is_none(size_t i) const { return checked(i).kind == Arg::Kind::None; }

const TensorMeta& MetaArgs::wrapped(const Arg& a) const {
  auto t = std::make_unique<TensorMeta>();
  t->dtype = a.kind == Arg::Kind::Float  ? ScalarType::Float64
             : a.kind == Arg::Kind::Bool ? ScalarType::Bool
                                         : ScalarType::Int64;
  t->wrapped_number = true;
  wrapped_.push_back(std::move(t));
  return *wrapped_.back();
}

const TensorMeta& MetaArgs::tensor(size_t i) const {
  const Arg& a = checked(i);
  if (a.kind == Arg::Kind::Int || a.kind == Arg::Kind::Float || a.kind == Arg::Kind::Bool)
    return wrapped(a);
  AOTGRAD_CHECK(a.kind == Arg::Kind::Node && a.node->meta().kind == ValueMeta::Kind::Tensor,
                "argument '", op_.schema.args[i].name, "' must be a tensor");
  return a.node->meta().tensor;
}

const TensorMeta* MetaArgs::optional_tensor(size_t i) const {
  return is_none(i) ? nullptr : &tensor(i);
}

std::vector<const TensorMeta*> MetaArgs::tensor_list(size_t i) const {
  const Arg& a = checked(i);
  std::vector<const TensorMeta*> out;
  AOTGRAD_CHECK(a.is_list(), "argument '", op_.schema.args[i].name, "' must be a list of tensors");
  for (auto& e : a.list) {
    if (e.kind == Arg::Kind::None) {
      out.push_back(nullptr);
      continue;
    }
    if (e.kind == Arg::Kind::Int || e.kind == Arg::Kind::Float || e.kind == Arg::Kind::Bool) {
      out.push_back(&wrapped(e));
      continue;
    }
    AOTGRAD_CHECK(e.kind == Arg::Kind::Node && e.node->meta().is_tensor(), "argument '",
                  op_.schema.args[i].name, "' must be a list of tensors");
    out.push_back(&e.node->meta().tensor);
  }
  return out;
}

namespace {
SymInt arg_sym_int(const Arg& a, const std::string& what) {
  if (a.kind == Arg::Kind::Int) return SymInt(a.i);
  if (a.kind == Arg::Kind::Node && a.node->meta().kind == ValueMeta::Kind::SymInt)
    return a.node->meta().sym;
  throw Error("argument '" + what + "' must be an int");
}
}  // namespace

SymInt MetaArgs::sym_int(size_t i) const {
  return arg_sym_int(checked(i), op_.schema.args[i].name);
}

std::optional<SymInt> MetaArgs::optional_sym_int(size_t i) const {
  if (is_none(i)) return std::nullopt;
  return sym_int(i);
}

int64_t MetaArgs::int_value(size_t i) const {
  SymInt v = sym_int(i);
  AOTGRAD_CHECK(v.is_concrete(), "argument '", op_.schema.args[i].name, "' must be a concrete int");
  return v.value();
}

SymIntVector MetaArgs::int_list(size_t i) const {
  const Arg& a = checked(i);
  const std::string& n = op_.schema.args[i].name;
  SymIntVector out;
  if (!a.is_list()) {
    int size = std::max(1, op_.schema.args[i].type.list_size);
    SymInt v = arg_sym_int(a, n);
    out.assign(size, v);
    return out;
  }
  out.reserve(a.list.size());
  for (auto& e : a.list) out.push_back(arg_sym_int(e, n));
  return out;
}

std::optional<SymIntVector> MetaArgs::optional_int_list(size_t i) const {
  if (is_none(i)) return std::nullopt;
  return int_list(i);
}

double MetaArgs::float_value(size_t i) const {
  const Arg& a = checked(i);
  if (a.kind == Arg::Kind::Float) return a.f;
  if (a.kind == Arg::Kind::Int) return static_cast<double>(a.i);
  throw Error("argument '" + op_.schema.args[i].name + "' must be a float");
}

std::optional<double> MetaArgs::optional_float(size_t i) const {
  if (is_none(i)) return std::nullopt;
  return float_value(i);
}

bool MetaArgs::bool_value(size_t i) const {
  const Arg& a = checked(i);
  AOTGRAD_CHECK(a.kind == Arg::Kind::Bool, "argument '", op_.schema.args[i].name,
                "' must be a bool");
  return a.i != 0;
}

std::optional<bool> MetaArgs::optional_bool(size_t i) const {
  if (is_none(i)) return std::nullopt;
  return bool_value(i);
}

std::vector<bool> MetaArgs::bool_list(size_t i) const {
  const Arg& a = checked(i);
  std::vector<bool> out;
  AOTGRAD_CHECK(a.is_list(), "argument '", op_.schema.args[i].name, "' must be a list of bools");
  for (auto& e : a.list) {
    AOTGRAD_CHECK(e.kind == Arg::Kind::Bool, "argument '", op_.schema.args[i].name,
                  "' must be a list of bools");
    out.push_back(e.i != 0);
  }
  return out;
}

ScalarValue MetaArgs::scalar(size_t i) const {
  const Arg& a = checked(i);
  ScalarValue s;
  switch (a.kind) {
    case Arg::Kind::Int:
      s.kind = ScalarValue::Kind::Int;
      s.i = a.i;
      return s;
    case Arg::Kind::Float:
      s.kind = ScalarValue::Kind::Float;
      s.f = a.f;
      return s;
    case Arg::Kind::Bool:
      s.kind = ScalarValue::Kind::Bool;
      s.i = a.i;
      return s;
    case Arg::Kind::Node:
      if (a.node->meta().kind == ValueMeta::Kind::SymInt) {
        s.kind = ScalarValue::Kind::Int;
        s.i = a.node->meta().sym.hint_or(0);
        return s;
      }
      break;
    default: break;
  }
  throw Error("argument '" + op_.schema.args[i].name + "' must be a number");
}

std::optional<ScalarValue> MetaArgs::optional_scalar(size_t i) const {
  if (is_none(i)) return std::nullopt;
  return scalar(i);
}

std::optional<ScalarType> MetaArgs::dtype(size_t i) const {
  if (is_none(i)) return std::nullopt;
  const Arg& a = checked(i);
  AOTGRAD_CHECK(a.kind == Arg::Kind::Dtype, "argument '", op_.schema.args[i].name,
                "' must be a dtype");
  return a.dtype();
}
std::optional<Layout> MetaArgs::layout(size_t i) const {
  if (is_none(i)) return std::nullopt;
  return static_cast<Layout>(checked(i).i);
}
std::optional<Device> MetaArgs::device(size_t i) const {
  if (is_none(i)) return std::nullopt;
  return checked(i).device;
}
std::optional<MemoryFormat> MetaArgs::memory_format(size_t i) const {
  if (is_none(i)) return std::nullopt;
  return static_cast<MemoryFormat>(checked(i).i);
}
std::string MetaArgs::str(size_t i) const { return checked(i).str; }

}  // namespace aotgrad
