// aotgrad: resolving IR ops in the c10 dispatcher, converting IR arguments to IValues, calling.
#include "aotgrad/providers/aten_call.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ScalarOps.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/autograd.h>

#include <mutex>
#include <optional>
#include <unordered_map>

#include "aotgrad/ir/error.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/providers/dispatcher_ops.h"
#include "aotgrad/providers/effect_ops.h"
#include "aotgrad/transforms/passes/reinplace.h"

namespace aotgrad {

// ---------------------------------------------------------------------------------------------
// Enums

c10::ScalarType to_c10(ScalarType t) { return static_cast<c10::ScalarType>(c10_code(t)); }

ScalarType from_c10(c10::ScalarType t) {
  auto st = scalar_type_from_c10_code(static_cast<int>(t));
  if (!st)
    throw Error(std::string("libtorch dtype ") + c10::toString(t) + " has no aotgrad equivalent");
  return *st;
}

c10::Device to_c10(const Device& d) {
  c10::DeviceType type = d.type == DeviceType::CPU    ? c10::DeviceType::CPU
                         : d.type == DeviceType::CUDA ? c10::DeviceType::CUDA
                                                      : c10::DeviceType::Meta;
  return c10::Device(type, static_cast<c10::DeviceIndex>(d.index));
}

Device from_c10(const c10::Device& d) {
  Device out;
  switch (d.type()) {
    case c10::DeviceType::CPU: out.type = DeviceType::CPU; break;
    case c10::DeviceType::CUDA: out.type = DeviceType::CUDA; break;
    case c10::DeviceType::Meta: out.type = DeviceType::Meta; break;
    default: throw Error("libtorch device " + d.str() + " has no aotgrad equivalent");
  }
  out.index = d.has_index() ? d.index() : -1;
  return out;
}

c10::Layout to_c10(Layout l) { return l == Layout::Strided ? c10::kStrided : c10::kSparse; }

c10::MemoryFormat to_c10(MemoryFormat m) {
  switch (m) {
    case MemoryFormat::Contiguous: return c10::MemoryFormat::Contiguous;
    case MemoryFormat::Preserve: return c10::MemoryFormat::Preserve;
    case MemoryFormat::ChannelsLast: return c10::MemoryFormat::ChannelsLast;
    case MemoryFormat::ChannelsLast3d: return c10::MemoryFormat::ChannelsLast3d;
  }
  return c10::MemoryFormat::Contiguous;
}

// ---------------------------------------------------------------------------------------------
// Values

TensorMeta tensor_meta_of(const at::Tensor& t) {
  AOTGRAD_CHECK(t.defined(), "tensor_meta_of: undefined tensor");
  TensorMeta m;
  m.dtype = from_c10(t.scalar_type());
  m.sizes.assign(t.sizes().begin(), t.sizes().end());
  m.strides.assign(t.strides().begin(), t.strides().end());
  m.storage_offset = t.storage_offset();
  m.device = from_c10(t.device());
  m.requires_grad = t.requires_grad();
  m.wrapped_number = t.unsafeGetTensorImpl()->is_wrapped_number();
  return m;
}

ValueMeta value_meta_of(const c10::IValue& v) {
  if (v.isNone()) return ValueMeta::none();
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    return t.defined() ? ValueMeta::of(tensor_meta_of(t)) : ValueMeta::none();
  }
  if (v.isInt()) return ValueMeta::of_sym(SymInt(v.toInt()));
  if (v.isDouble()) {
    ValueMeta m;
    m.kind = ValueMeta::Kind::SymFloat;
    append_python_float(m.sym_text, v.toDouble());
    return m;
  }
  if (v.isBool()) {
    ValueMeta m;
    m.kind = ValueMeta::Kind::SymBool;
    m.sym_text = v.toBool() ? "True" : "False";
    return m;
  }
  if (v.isTuple()) {
    std::vector<ValueMeta> elems;
    for (const auto& e : v.toTupleRef().elements()) elems.push_back(value_meta_of(e));
    return ValueMeta::tuple(std::move(elems));
  }
  if (v.isList()) {
    std::vector<ValueMeta> elems;
    for (const c10::IValue& e : v.toListRef()) elems.push_back(value_meta_of(e));
    return ValueMeta::tuple(std::move(elems), /*is_list=*/true);
  }
  throw Error("value_meta_of: unsupported libtorch value of type " + v.tagKind());
}

namespace {

const char* kind_name(const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::None: return "None";
    case Arg::Kind::Node: return "a node";
    case Arg::Kind::Int: return "an int";
    case Arg::Kind::Float: return "a float";
    case Arg::Kind::Bool: return "a bool";
    case Arg::Kind::Str: return "a str";
    case Arg::Kind::Dtype: return "a dtype";
    case Arg::Kind::Device: return "a device";
    case Arg::Kind::Layout: return "a layout";
    case Arg::Kind::MemoryFormat: return "a memory format";
    case Arg::Kind::List: return "a list";
    case Arg::Kind::Tuple: return "a tuple";
    case Arg::Kind::Op: return "an op";
    case Arg::Kind::Graph: return "a subgraph";
  }
  return "?";
}

[[noreturn]] void mismatch(const TypeRef& t, const Arg& a, const char* detail = nullptr) {
  std::string msg = "expected " + t.to_string() + ", got " + kind_name(a);
  if (a.kind == Arg::Kind::Node) msg += " '" + a.node->name() + "'";
  if (detail) msg += std::string(" (") + detail + ")";
  throw Error(msg);
}

c10::IValue lookup_node(const Arg& a, const NodeValueFn& lookup) {
  AOTGRAD_CHECK(lookup, "no value lookup given for node argument '", a.node->name(), "'");
  return lookup(*a.node);
}

// A Python number where a Tensor is expected: a 0-dim wrapped-number tensor.
at::Tensor wrapped_number(const Arg& a) {
  at::Tensor t = a.kind == Arg::Kind::Float  ? at::scalar_to_tensor(at::Scalar(a.f))
                 : a.kind == Arg::Kind::Bool ? at::scalar_to_tensor(at::Scalar(a.i != 0))
                                             : at::scalar_to_tensor(at::Scalar(a.i));
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

bool is_number(const Arg& a) {
  return a.kind == Arg::Kind::Int || a.kind == Arg::Kind::Float || a.kind == Arg::Kind::Bool;
}

at::Tensor tensor_value(const TypeRef& t, const Arg& a, const NodeValueFn& lookup) {
  if (is_number(a)) return wrapped_number(a);
  if (a.kind != Arg::Kind::Node) mismatch(t, a);
  c10::IValue v = lookup_node(a, lookup);
  if (!v.isTensor()) mismatch(t, a, ("its value is " + v.tagKind()).c_str());
  return v.toTensor();
}

int64_t int_value(const TypeRef& t, const Arg& a, const NodeValueFn& lookup) {
  if (a.kind == Arg::Kind::Int) return a.i;
  if (a.kind == Arg::Kind::Node) {
    c10::IValue v = lookup_node(a, lookup);
    if (v.isInt()) return v.toInt();
    mismatch(t, a, ("its value is " + v.tagKind()).c_str());
  }
  mismatch(t, a);
}

double float_value(const TypeRef& t, const Arg& a, const NodeValueFn& lookup) {
  if (a.kind == Arg::Kind::Float) return a.f;
  if (a.kind == Arg::Kind::Int) return static_cast<double>(a.i);
  if (a.kind == Arg::Kind::Node) {
    c10::IValue v = lookup_node(a, lookup);
    if (v.isDouble()) return v.toDouble();
    if (v.isInt()) return static_cast<double>(v.toInt());
    mismatch(t, a, ("its value is " + v.tagKind()).c_str());
  }
  mismatch(t, a);
}

bool bool_value(const TypeRef& t, const Arg& a, const NodeValueFn& lookup) {
  if (a.kind == Arg::Kind::Bool) return a.i != 0;
  if (a.kind == Arg::Kind::Node) {
    c10::IValue v = lookup_node(a, lookup);
    if (v.isBool()) return v.toBool();
    mismatch(t, a, ("its value is " + v.tagKind()).c_str());
  }
  mismatch(t, a);
}

c10::IValue scalar_value(const TypeRef& t, const Arg& a, const NodeValueFn& lookup) {
  switch (a.kind) {
    case Arg::Kind::Int: return c10::IValue(a.i);
    case Arg::Kind::Float: return c10::IValue(a.f);
    case Arg::Kind::Bool: return c10::IValue(a.i != 0);
    case Arg::Kind::Node: {
      c10::IValue v = lookup_node(a, lookup);
      if (v.isInt() || v.isDouble() || v.isBool()) return v;
      // A 0-dim tensor used as a Scalar (as `x.item()` would give).
      if (v.isTensor() && v.toTensor().defined() && v.toTensor().dim() == 0)
        return c10::IValue(v.toTensor().item());
      mismatch(t, a, ("its value is " + v.tagKind()).c_str());
    }
    default: mismatch(t, a);
  }
}

// The elements of a list argument; a single int for `int[N]` is repeated N times.
std::vector<Arg> list_elems(const TypeRef& t, const Arg& a) {
  if (a.is_list()) return a.list;
  if ((t.base == BaseType::Int || t.base == BaseType::SymInt) &&
      (a.kind == Arg::Kind::Int || a.kind == Arg::Kind::Node))
    return std::vector<Arg>(std::max(1, t.list_size), a);
  mismatch(t, a);
}

c10::IValue list_value(const TypeRef& t, const Arg& a, const NodeValueFn& lookup) {
  std::vector<Arg> elems = list_elems(t, a);
  switch (t.base) {
    case BaseType::Tensor: {
      if (t.elem_optional) {
        c10::List<c10::optional<at::Tensor>> l;
        for (auto& e : elems)
          l.push_back(e.is_none() ? c10::optional<at::Tensor>() : tensor_value(t, e, lookup));
        return c10::IValue(l);
      }
      c10::List<at::Tensor> l;
      for (auto& e : elems) l.push_back(tensor_value(t, e, lookup));
      return c10::IValue(l);
    }
    case BaseType::Int:
    case BaseType::SymInt: {
      c10::List<int64_t> l;
      for (auto& e : elems) l.push_back(int_value(t, e, lookup));
      return c10::IValue(l);
    }
    case BaseType::Float: {
      c10::List<double> l;
      for (auto& e : elems) l.push_back(float_value(t, e, lookup));
      return c10::IValue(l);
    }
    case BaseType::Bool: {
      c10::List<bool> l;
      for (auto& e : elems) l.push_back(bool_value(t, e, lookup));
      return c10::IValue(l);
    }
    case BaseType::Str: {
      c10::List<std::string> l;
      for (auto& e : elems) {
        if (e.kind != Arg::Kind::Str) mismatch(t, e);
        l.push_back(e.str);
      }
      return c10::IValue(l);
    }
    default: throw Error("lists of " + t.to_string() + " are not supported by the ATen caller");
  }
}

}  // namespace

c10::IValue to_ivalue(const TypeRef& t, const Arg& a, const NodeValueFn& lookup) {
  if (a.is_none()) {
    if (!t.optional) mismatch(t, a);
    return c10::IValue();
  }
  if (t.list) return list_value(t, a, lookup);
  switch (t.base) {
    case BaseType::Tensor: return tensor_value(t, a, lookup);
    case BaseType::Int:
    case BaseType::SymInt: return int_value(t, a, lookup);
    case BaseType::Float: return float_value(t, a, lookup);
    case BaseType::Bool: return bool_value(t, a, lookup);
    case BaseType::Scalar: return scalar_value(t, a, lookup);
    case BaseType::ScalarType:
      if (a.kind != Arg::Kind::Dtype) mismatch(t, a);
      return c10::IValue(to_c10(a.dtype()));
    case BaseType::Layout:
      if (a.kind != Arg::Kind::Layout) mismatch(t, a);
      return c10::IValue(to_c10(static_cast<Layout>(a.i)));
    case BaseType::Device:
      if (a.kind != Arg::Kind::Device) mismatch(t, a);
      return c10::IValue(to_c10(a.device));
    case BaseType::MemoryFormat:
      if (a.kind != Arg::Kind::MemoryFormat) mismatch(t, a);
      return c10::IValue(to_c10(static_cast<MemoryFormat>(a.i)));
    case BaseType::Str:
      if (a.kind != Arg::Kind::Str) mismatch(t, a);
      return c10::IValue(a.str);
    case BaseType::Generator: mismatch(t, a, "only None is supported for generators");
    case BaseType::Any: mismatch(t, a, "pseudo-op arguments cannot be passed to ATen");
  }
  mismatch(t, a);
}

// ---------------------------------------------------------------------------------------------
// AtenOp

struct AtenOp::Impl {
  const OpDef* def = nullptr;
  c10::OperatorHandle handle;
  std::vector<c10::IValue> extra_defaults;  // libtorch's trailing arguments the IR lacks
  size_t num_returns = 0;
  // The out= overload, for pointwise ops and those the re-inplacing plan writes over argument 0.
  std::optional<c10::OperatorHandle> out_handle;

  Impl(const OpDef* d, c10::OperatorHandle h) : def(d), handle(std::move(h)) {}
};

namespace {

std::string libtorch_message(const std::exception& e) {
  if (auto* ce = dynamic_cast<const c10::Error*>(&e)) return ce->what_without_backtrace();
  return e.what();
}

}  // namespace

namespace {

// The out= overload of the op whose libtorch schema is `functional`: `name.out`,
// `name.<overload>_out`, `name.out<rest>` for `Tensor<rest>` or `name.grad_input`, with the
// functional's arguments and then exactly one keyword-only written Tensor.
std::optional<c10::OperatorHandle> out_overload(const c10::FunctionSchema& functional) {
  const std::string& overload = functional.overload_name();
  // div.Tensor_mode's is div.out_mode.
  std::string renamed = overload.rfind("Tensor", 0) == 0 ? "out" + overload.substr(6) : "out";
  for (const std::string& name :
       {std::string("out"), overload + "_out", renamed, std::string("grad_input")}) {
    auto h = c10::Dispatcher::singleton().findSchema({functional.name(), name});
    if (!h) continue;
    const auto& fargs = functional.arguments();
    const auto& oargs = h->schema().arguments();
    if (oargs.size() != fargs.size() + 1 || h->schema().returns().size() != 1) continue;
    bool same = true;
    for (size_t i = 0; i < fargs.size() && same; ++i)
      same = oargs[i].name() == fargs[i].name() && *oargs[i].type() == *fargs[i].type();
    const c10::Argument& out = oargs.back();
    if (same && out.kwarg_only() && out.type()->kind() == c10::TypeKind::TensorType &&
        out.alias_info() && out.alias_info()->isWrite())
      return *h;
  }
  return std::nullopt;
}

}  // namespace

AtenOp::AtenOp(const OpDef& op) {
  const FunctionSchema& s = op.schema;
  auto handle = c10::Dispatcher::singleton().findSchema({s.name, s.overload});
  if (!handle) throw Error(op.name + ": libtorch has no such operator overload");
  const c10::FunctionSchema& ls = handle->schema();
  const auto& largs = ls.arguments();
  auto incompatible = [&](const std::string& why) {
    return Error(op.name + ": libtorch's schema differs (" + why + "): libtorch has '" +
                 c10::toString(ls) + "', aotgrad has '" + s.text + "'");
  };
  if (largs.size() < s.args.size())
    throw incompatible("libtorch has " + std::to_string(largs.size()) + " arguments, aotgrad " +
                       std::to_string(s.args.size()));
  for (size_t i = 0; i < s.args.size(); ++i)
    if (largs[i].name() != s.args[i].name)
      throw incompatible("argument " + std::to_string(i) + " is '" + largs[i].name() +
                         "' in libtorch, '" + s.args[i].name + "' in aotgrad");
  if (ls.returns().size() != s.returns.size())
    throw incompatible("libtorch has " + std::to_string(ls.returns().size()) +
                       " returns, aotgrad " + std::to_string(s.returns.size()));
  auto impl = std::make_shared<Impl>(&op, *handle);
  for (size_t i = s.args.size(); i < largs.size(); ++i) {
    if (!largs[i].default_value())
      throw incompatible("libtorch's extra argument '" + largs[i].name() + "' has no default");
    impl->extra_defaults.push_back(*largs[i].default_value());
  }
  impl->num_returns = ls.returns().size();
  if ((op.has_tag(kPointwise) || may_write_out_over_first(op)) && ls.returns().size() == 1)
    impl->out_handle = out_overload(ls);
  impl_ = std::move(impl);
}

bool AtenOp::has_out_variant() const { return impl_->out_handle.has_value(); }

std::vector<c10::IValue> AtenOp::call_boxed_out(std::vector<c10::IValue> stack,
                                                size_t out_arg) const {
  const OpDef& op = *impl_->def;
  if (!impl_->out_handle) throw Error(op.name + ": libtorch has no out= overload of it");
  if (stack.size() != op.schema.args.size() || out_arg >= stack.size())
    throw Error(op.name + ": called with " + std::to_string(stack.size()) +
                " arguments, the schema has " + std::to_string(op.schema.args.size()));
  c10::IValue out = stack[out_arg];
  for (const auto& d : impl_->extra_defaults) stack.push_back(d);
  stack.push_back(std::move(out));
  try {
    impl_->out_handle->callBoxed(stack);
  } catch (const std::exception& e) {
    throw Error(op.name + " (out=): " + libtorch_message(e));
  }
  if (stack.size() != 1)
    throw Error(op.name + " (out=): libtorch left " + std::to_string(stack.size()) +
                " values on the stack, expected 1");
  return stack;
}

AtenOp::~AtenOp() = default;
AtenOp::AtenOp(const AtenOp&) = default;
AtenOp& AtenOp::operator=(const AtenOp&) = default;

const OpDef& AtenOp::def() const { return *impl_->def; }

std::string AtenOp::libtorch_schema() const { return c10::toString(impl_->handle.schema()); }

std::vector<c10::IValue> AtenOp::call(const std::vector<Arg>& bound_args,
                                      const NodeValueFn& lookup) const {
  const OpDef& op = *impl_->def;
  const auto& sargs = op.schema.args;
  if (bound_args.size() != sargs.size())
    throw Error(op.name + ": called with " + std::to_string(bound_args.size()) +
                " bound arguments, the schema has " + std::to_string(sargs.size()));
  std::vector<c10::IValue> stack;
  stack.reserve(sargs.size() + impl_->extra_defaults.size());
  for (size_t i = 0; i < sargs.size(); ++i) {
    try {
      stack.push_back(to_ivalue(sargs[i].type, bound_args[i], lookup));
    } catch (const Error& e) {
      throw Error(op.name + " argument '" + sargs[i].name + "': " + e.message());
    }
  }
  return call_boxed(std::move(stack));
}

std::vector<c10::IValue> AtenOp::call_boxed(std::vector<c10::IValue> stack) const {
  const OpDef& op = *impl_->def;
  if (stack.size() != op.schema.args.size())
    throw Error(op.name + ": called with " + std::to_string(stack.size()) +
                " arguments, the schema has " + std::to_string(op.schema.args.size()));
  for (const auto& d : impl_->extra_defaults) stack.push_back(d);
  try {
    impl_->handle.callBoxed(stack);
  } catch (const std::exception& e) {
    throw Error(op.name + ": " + libtorch_message(e));
  }
  if (stack.size() != impl_->num_returns)
    throw Error(op.name + ": libtorch left " + std::to_string(stack.size()) +
                " values on the stack, expected " + std::to_string(impl_->num_returns));
  return stack;
}

const AtenOp& aten_op(const OpDef& op) {
  install_libtorch_ops();  // links the provider's unit, whose loading installs it
  // Keyed by address and schema text: an OpDef of a table that was destroyed may share its address
  // with a later, different op (tests build short-lived tables), and must not hit its entry.
  struct Entry {
    std::string schema;
    std::unique_ptr<AtenOp> op;
  };
  static std::mutex mu;
  static std::unordered_map<const OpDef*, Entry> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(&op);
  if (it != cache.end() && it->second.schema == op.schema.text) return *it->second.op;
  auto resolved = std::make_unique<AtenOp>(op);  // throws for ops libtorch lacks; not cached
  Entry& e = cache[&op];
  e.schema = op.schema.text;
  e.op = std::move(resolved);
  return *e.op;
}

// ---------------------------------------------------------------------------------------------
// RNG state higher-order ops

namespace {

at::Tensor get_cpu_rng_state() {
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void set_cpu_rng_state(const at::Tensor& state) {
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  try {
    gen.set_state(state);
  } catch (const std::exception& e) {
    throw Error("cannot set the CPU generator's state: " + libtorch_message(e));
  }
}

// Puts the generator back to the state it had when made.
class RestoreCpuRngState {
 public:
  RestoreCpuRngState() : saved_(get_cpu_rng_state()) {}
  ~RestoreCpuRngState() {
    try {
      set_cpu_rng_state(saved_);
    } catch (...) {  // a state libtorch gave us back: cannot fail; never throw from a destructor
    }
  }
  RestoreCpuRngState(const RestoreCpuRngState&) = delete;
  RestoreCpuRngState& operator=(const RestoreCpuRngState&) = delete;

 private:
  at::Tensor saved_;
};

}  // namespace

std::vector<c10::IValue> run_and_save_rng_state(const AtenOp& op, std::vector<c10::IValue> stack) {
  std::vector<c10::IValue> out{c10::IValue(get_cpu_rng_state())};
  for (c10::IValue& r : op.call_boxed(std::move(stack))) out.push_back(std::move(r));
  return out;
}

std::vector<c10::IValue> run_with_rng_state(const at::Tensor& state, const AtenOp& op,
                                            std::vector<c10::IValue> stack) {
  RestoreCpuRngState restore;
  set_cpu_rng_state(state);
  return op.call_boxed(std::move(stack));
}

std::vector<c10::IValue> eager_backward(const c10::IValue& grads, const std::vector<int64_t>& needs,
                                        const AtenOp& op, std::vector<c10::IValue> stack) {
  // Graphs run below autograd (CompiledFunction excludes its keys); this op needs it back.
  c10::impl::LocalDispatchKeySet keys = c10::impl::tls_local_dispatch_key_set();
  keys.excluded_ = keys.excluded_ - c10::autograd_dispatch_keyset_with_ADInplaceOrView;
  c10::impl::ForceDispatchKeyGuard with_autograd(keys);
  c10::AutoGradMode grad_mode(true);
  std::vector<at::Tensor> leaves;
  for (int64_t i : needs) {
    const c10::IValue& v = stack.at(static_cast<size_t>(i));
    if (!v.isTensor()) throw Error("argument " + std::to_string(i) + " is not a tensor");
    at::Tensor leaf = v.toTensor().detach().requires_grad_(true);
    stack[static_cast<size_t>(i)] = leaf;
    leaves.push_back(leaf);
  }
  std::vector<c10::IValue> results = op.call_boxed(std::move(stack));
  std::vector<at::Tensor> outs;
  for (const c10::IValue& r : results) {
    if (r.isTensor())
      outs.push_back(r.toTensor());
    else if (r.isTensorList())
      for (const at::Tensor& t : r.toTensorVector()) outs.push_back(t);
    else
      outs.emplace_back();
  }
  std::vector<at::Tensor> ys, gys;
  if (!grads.isList()) throw Error("argument 'grads' is not a list");
  c10::List<c10::IValue> gl = grads.toList();
  for (size_t k = 0; k < gl.size() && k < outs.size(); ++k) {
    c10::IValue g = gl.get(k);
    if (g.isNone() || !outs[k].defined() || !outs[k].requires_grad()) continue;
    ys.push_back(outs[k]);
    gys.push_back(g.toTensor());
  }
  std::vector<at::Tensor> gin(leaves.size());
  if (!ys.empty()) {
    try {
      gin = torch::autograd::grad(ys, leaves, gys, /*retain_graph=*/false, /*create_graph=*/false,
                                  /*allow_unused=*/true);
    } catch (const std::exception& e) {
      throw Error(op.def().name + "'s backward (libtorch's autograd): " + libtorch_message(e));
    }
  }
  c10::List<at::Tensor> out;
  for (size_t k = 0; k < leaves.size(); ++k)
    out.push_back(gin[k].defined() ? gin[k].contiguous() : at::zeros_like(leaves[k]).contiguous());
  return {c10::IValue(out)};
}

std::vector<c10::IValue> call_node(const Node& node, const NodeValueFn& lookup) {
  AOTGRAD_CHECK(node.kind() == NodeKind::Call && node.op(), node.describe(), " is not an op call");
  try {
    const OpDef& op = *node.op();
    if (!op.wrapped) return aten_op(op).call(node.args(), lookup);
    // A higher-order op: the wrapped op's arguments follow the op reference.
    const AtenOp& inner = aten_op(*op.wrapped);
    const auto& sargs = op.schema.args;
    std::vector<c10::IValue> stack;
    for (size_t i = static_cast<size_t>(op.wrapped_arg) + 1; i < sargs.size(); ++i) {
      try {
        stack.push_back(to_ivalue(sargs[i].type, node.args().at(i), lookup));
      } catch (const Error& e) {
        throw Error(op.wrapped->name + " argument '" + sargs[i].name + "': " + e.message());
      }
    }
    auto tuple = [&](std::vector<c10::IValue> results) {
      return results.size() == 1 ? std::move(results[0])
                                 : c10::IValue(c10::ivalue::Tuple::create(std::move(results)));
    };
    if (op.name == kRunAndSaveRngState) {
      std::vector<c10::IValue> r = run_and_save_rng_state(inner, std::move(stack));
      c10::IValue state = r[0];
      r.erase(r.begin());
      return {state, tuple(std::move(r))};
    }
    if (op.name == kRunWithRngState) {
      c10::IValue state = to_ivalue(sargs[0].type, node.args().at(0), lookup);
      return run_with_rng_state(state.toTensor(), inner, std::move(stack));
    }
    if (op.name == kEagerBackward) {
      c10::IValue grads = to_ivalue(sargs[0].type, node.args().at(0), lookup);
      c10::IValue needs = to_ivalue(sargs[1].type, node.args().at(1), lookup);
      return eager_backward(grads, needs.toIntVector(), inner, std::move(stack));
    }
    if (op.name == kWithEffects) {
      std::vector<c10::IValue> r = inner.call_boxed(std::move(stack));
      r.insert(r.begin(), c10::IValue(new_effect_token()));  // (new token, *results)
      return r;
    }
    throw Error("the runtime has no implementation of higher-order op " + op.name);
  } catch (const Error& e) {
    throw Error(node.describe() + ": " + e.message(), node.info().loc);
  }
}

}  // namespace aotgrad
