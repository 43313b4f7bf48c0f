// aotgrad: OpDefs for the ops of libtorch's dispatcher that the registry does not declare.
#include "aotgrad/providers/dispatcher_ops.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "aotgrad/ir/error.h"
#include "aotgrad/ops/custom_ops.h"
#include "aotgrad/ops/functionalization.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/providers/fallback_meta.h"
#include "aotgrad/providers/traced_rules.h"

namespace aotgrad {

// Note [The op world]
// ~~~~~~~~~~~~~~~~~~~
// The registry (src/ops) declares by hand the ops the passes reason about deeply: their meta
// functions work over SymInt, their derivatives and decompositions are written in the
// derivatives.yaml / torch._decomp vocabulary, and the core layers use them without libtorch. Every
// other op libtorch's dispatcher knows becomes an OpDef here, on first lookup, from its own schema:
// its metadata comes from libtorch's kernels (fallback_meta.h), its derivative from libtorch's
// autograd and its decomposition from its CompositeImplicitAutograd kernel, both traced on fake
// tensors (traced_rules.h). So any ATen op a C++ program or a PyTorch graph uses can be captured,
// compiled and trained, while the hand-declared core stays the fast path the passes understand.

namespace {

// Tags of native_functions.yaml, generated at build time by tools/gen_op_tags.py.
enum GenTag : uint32_t {
  kGenPointwise = 1u << 0,
  kGenInplaceView = 1u << 1,
  kGenViewCopy = 1u << 2,
  kGenDynamicOutputShape = 1u << 3,
  kGenDataDependentOutput = 1u << 4,
  kGenNondeterministicSeeded = 1u << 5,
  kGenNondeterministicBitwise = 1u << 6,
  kGenGenerated = 1u << 7,
};
struct GenRow {
  const char* name;
  uint32_t tags;
};
constexpr GenRow kGenTags[] = {
#include "aotgrad/op_tags.inc"
};

uint32_t yaml_tags(const std::string& name) {
  static const auto* table = [] {
    auto* m = new std::unordered_map<std::string, uint32_t>();
    for (const GenRow& r : kGenTags) m->emplace(r.name, r.tags);
    return m;
  }();
  auto it = table->find(name);
  uint32_t tags = it == table->end() ? 0 : it->second;
  // Results whose sizes come from an input's values, though native_functions.yaml does not tag
  // them: PyTorch's FakeTensor gives them unbacked sizes or raises DynamicOutputShapeException
  // (torch/_subclasses/fake_impls.py). `_pack_padded_sequence`'s rows are the sum of `lengths`.
  const std::string base = name.substr(0, name.find('.'));
  if (base == "aten::_pack_padded_sequence" || base == "aten::_padded_dense_to_jagged_forward")
    tags |= kGenDynamicOutputShape;
  return tags;
}

std::string argument_text(const c10::Argument& a) {
  std::ostringstream s;
  s << a;
  return s.str();
}

// The schema, parsed by aotgrad; an argument or return aotgrad cannot represent is named.
FunctionSchema parse_libtorch_schema(const std::string& name, const c10::FunctionSchema& ls) {
  const std::string text = c10::toString(ls);
  try {
    return parse_schema(text);
  } catch (const Error& e) {
    auto check = [&](const c10::Argument& a, const char* what) {
      std::string t = argument_text(a);
      try {
        parse_schema("aten::probe(" + t + ") -> ()");
      } catch (const Error&) {
        throw Error(name + ": aotgrad cannot represent " + what + " '" + a.name() + "' of type " +
                    a.type()->annotation_str() + " in libtorch's schema '" + text + "'");
      }
    };
    for (const c10::Argument& a : ls.arguments()) check(a, "argument");
    for (const c10::Argument& a : ls.returns()) {
      c10::Argument named(a.name().empty() ? "result" : a.name(), a.type());
      check(named, "result");
    }
    throw Error(name + ": aotgrad cannot read libtorch's schema '" + text + "': " + e.message());
  }
}

bool exists(const std::string& qualified, const std::string& overload) {
  return c10::Dispatcher::singleton().findSchema({qualified, overload}).has_value();
}

// The functional variant of an op that writes its arguments: the overload of `functional` (foo
// for foo_, the same name for an out= op) that takes the same arguments, by name and type, but the
// written ones an out= op writes (`out`, `values`, `indices`). Found by schema rather than by
// overload name: floor_divide_.Tensor's is floor_divide, sum.IntList_out's sum.dim_IntList,
// polygamma_(self, n)'s polygamma(n, self) -- functionalization passes arguments by name.
std::string find_functional_variant(const std::string& functional, const FunctionSchema& s,
                                    const std::string& same_overload) {
  std::vector<const SchemaArg*> want;
  for (const SchemaArg& a : s.args)
    if (!a.alias.is_write || a.name == "self") want.push_back(&a);
  auto matches = [&](const c10::OperatorHandle& h) {
    FunctionSchema f;
    try {
      f = parse_libtorch_schema(functional, h.schema());
    } catch (const Error&) {
      return false;
    }
    if (f.args.size() != want.size()) return false;
    for (const SchemaArg& a : f.args) {
      if (a.alias.is_write) return false;
      auto it = std::find_if(want.begin(), want.end(),
                             [&](const SchemaArg* w) { return w->name == a.name; });
      if (it == want.end()) return false;
      const TypeRef &x = a.type, &y = (*it)->type;
      if (x.base != y.base || x.list != y.list || x.optional != y.optional) return false;
    }
    return true;
  };
  auto& d = c10::Dispatcher::singleton();
  if (auto h = d.findSchema({functional, same_overload}); h && matches(*h))
    return functional + (same_overload.empty() ? "" : "." + same_overload);
  static const std::unordered_map<std::string, std::vector<std::string>> overloads = [] {
    std::unordered_map<std::string, std::vector<std::string>> m;
    for (const c10::OperatorName& n : c10::Dispatcher::singleton().getAllOpNames())
      m[n.name].push_back(n.overload_name);
    return m;
  }();
  auto it = overloads.find(functional);
  if (it == overloads.end()) return "";
  for (const std::string& o : it->second)
    if (auto h = d.findSchema({functional, o}); h && matches(*h))
      return functional + (o.empty() ? "" : "." + o);
  return "";
}

// An out= op's metadata: its functional variant's results, in its `out` tensors. An out tensor of
// the result's sizes keeps its layout; any other is resized, contiguously (at::native's
// resize_output). Not from running the out= kernel, which would write the caller's tensors.
ValueMeta out_variant_meta(const MetaArgs& a) {
  const OpDef& op = a.op();
  const OpDef& fn = aten_ops().get(op.functional_variant);
  std::vector<Arg> args;
  for (const SchemaArg& f : fn.schema.args) args.push_back(a.arg(op.schema.arg_index(f.name)));
  ValueMeta r = fn.meta(MetaArgs(fn, args));
  std::vector<int> outs = op.mutated_args();
  std::vector<ValueMeta> results;
  for (size_t k = 0; k < outs.size(); ++k) {
    const ValueMeta& rk = r.kind == ValueMeta::Kind::Tuple ? r.elems.at(k) : r;
    TensorMeta m = a.tensor(static_cast<size_t>(outs[k]));
    if (m.sizes != rk.tensor.sizes) {
      m.sizes = rk.tensor.sizes;
      m.strides = contiguous_strides(m.sizes);
    }
    m.requires_grad = false;
    results.push_back(ValueMeta::of(m));
  }
  return results.size() == 1 ? std::move(results[0]) : ValueMeta::tuple(std::move(results));
}

uint32_t schema_tags(const FunctionSchema& s) {
  uint32_t tags = 0;
  bool any_tensor_arg = false;
  for (const SchemaArg& a : s.args)
    if (a.type.base == BaseType::Tensor) any_tensor_arg = true;
  for (const SchemaArg& r : s.returns) {
    if (r.alias.set.empty()) continue;
    if (!r.alias.is_write) {
      tags |= kView;
      continue;
    }
    // Tensor(a!) returned: in place when it is `self` that is written (out= ops write `out`).
    for (const SchemaArg& a : s.args)
      if (a.alias.set == r.alias.set && a.alias.is_write && a.name == "self") tags |= kInplace;
  }
  // The in-place foreach ops (_foreach_add_.List(Tensor(a!)[] self, ...) -> ()) return nothing:
  // in place when they write `self`, a list, and are named foo_.
  const std::string name = s.name.substr(s.name.find("::") + 2);
  if (s.returns.empty() && name.size() > 1 && name.back() == '_')
    for (const SchemaArg& a : s.args)
      if (a.alias.is_write && a.name == "self" && a.type.list) tags |= kInplace;
  bool returns_tensor = !s.returns.empty() && s.returns[0].type.base == BaseType::Tensor;
  if (!any_tensor_arg && returns_tensor) tags |= kFactory;
  if (name.size() > 9 && name.compare(name.size() - 9, 9, "_backward") == 0) tags |= kBackward;
  return tags;
}

class LibtorchOps final : public OpProvider {
 public:
  std::unique_ptr<OpDef> provide(const std::string& name) const override {
    size_t sep = name.find("::");
    if (sep == std::string::npos) return nullptr;
    size_t dot = name.find('.', sep);
    std::string qualified = name.substr(0, dot);
    std::string overload = dot == std::string::npos ? "" : name.substr(dot + 1);
    auto handle = c10::Dispatcher::singleton().findSchema({qualified, overload});
    if (!handle) return nullptr;

    auto op = std::make_unique<OpDef>();
    op->schema = parse_libtorch_schema(name, handle->schema());
    if (op->schema.args.size() > 64)
      throw Error(name + ": " + std::to_string(op->schema.args.size()) +
                  " arguments, more than aotgrad binds (64)");
    op->name = op->schema.qualified_name();
    std::string base = op->schema.name.substr(op->schema.name.find("::") + 2);
    op->base_name = base;
    op->short_name = base + "." + (overload.empty() ? "default" : overload);

    op->tags = schema_tags(op->schema);
    uint32_t yaml = yaml_tags(name);
    if (yaml & kGenPointwise) op->tags |= kPointwise;
    if (yaml & kGenInplaceView) op->tags |= kView | kInplace;
    if (yaml & kGenDynamicOutputShape) op->tags |= kDynamicOutputShape;
    if (yaml & kGenDataDependentOutput) op->tags |= kDataDependentOutput;
    if (yaml & kGenNondeterministicSeeded) op->tags |= kRandom | kNondeterministicSeeded;
    if (handle->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd))
      op->tags |= kCompositeImplicit;

    // foo_ <-> foo, of the same overload where it takes the same arguments; an out= op's is the
    // overload of its own name without the out arguments.
    if (op->has_tag(kInplace) && !op->has_tag(kView) && base.size() > 1 && base.back() == '_' &&
        base.compare(0, 2, "__") != 0) {
      op->functional_variant =
          find_functional_variant(qualified.substr(0, qualified.size() - 1), op->schema, overload);
    } else if (!op->has_tag(kInplace) && !op->has_tag(kView) && !op->mutated_args().empty()) {
      bool out_only = true;
      for (const SchemaArg& a : op->schema.args)
        if (a.alias.is_write && (!a.kwarg_only || a.type.base != BaseType::Tensor || a.type.list))
          out_only = false;
      if (out_only) op->functional_variant = find_functional_variant(qualified, op->schema, "");
    } else if (!op->has_tag(kInplace) && exists(qualified + "_", overload)) {
      op->inplace_variant = qualified + "_" + (overload.empty() ? "" : "." + overload);
    }

    // A view's writes go back into its base through as_strided_scatter at the view's layout.
    if (op->has_tag(kView) && !op->has_tag(kInplace)) op->view_inverse = as_strided_view_inverse;
    op->meta = fallback_meta;
    if (!op->functional_variant.empty() && !op->has_tag(kInplace)) op->meta = out_variant_meta;
    // A composite op is differentiated through its decomposition, as libtorch's autograd does.
    if (op->has_tag(kCompositeImplicit))
      op->decomposition = traced_decomposition();
    else
      op->derivative = traced_derivative();
    apply_custom_op_facts(*op);  // what the op's user told aotgrad (Note [Custom ops])
    // An effectful op without an Autograd kernel (nor a derivative from its user) has no gradient
    // to trace: non-differentiable. A gradient through one that has one is an error at the joint
    // graph (Note [Effect tokens]).
    const CustomOpFacts* facts = custom_op_facts(op->name);
    if (op->has_tag(kEffectful) && !op->has_tag(kCompositeImplicit) &&
        !(facts && facts->derivative) &&
        !handle->hasKernelForDispatchKey(c10::DispatchKey::Autograd) &&
        !handle->hasKernelForDispatchKey(c10::DispatchKey::AutogradCPU)) {
      op->derivative = nullptr;
      op->non_differentiable = true;
    }
    count_provider_event(ProviderEvent::kOpProvided);
    return op;
  }

  std::string source() const override { return "libtorch's dispatcher"; }
};

// The runtime layer installs the provider as it is loaded; aten_op() refers to this unit, so any
// program that runs a graph links it.
[[maybe_unused]] const bool g_installed = (install_libtorch_ops(), true);

}  // namespace

const OpProvider& libtorch_op_provider() {
  static const LibtorchOps provider;
  return provider;
}

void install_libtorch_ops() {
  static std::once_flag once;
  std::call_once(once, [] { install_op_provider(&libtorch_op_provider()); });
}

}  // namespace aotgrad
