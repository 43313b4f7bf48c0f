// aotgrad: libtorch capture -- a C++ function traced by torch::jit::tracer, converted to a Graph.
#include "aotgrad/frontend/capture.h"

#include <ATen/ATen.h>
#include <torch/csrc/jit/frontend/tracer.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "aotgrad/ops/registry.h"
#include "aotgrad/runtime/aten_call.h"

namespace aotgrad {
namespace {

namespace jit = torch::jit;

std::string jit_node_text(const jit::Node* n) {
  std::string op = n->kind().toQualString();
  if (const c10::FunctionSchema* s = n->maybeSchema()) {
    op = s->name();
    if (!s->overload_name().empty()) op += "." + s->overload_name();
  }
  return op;
}

/// What a traced value became: a node of the new graph, a constant, or a list of traced values.
struct Entry {
  Node* node = nullptr;
  std::optional<c10::IValue> constant;
  bool is_list = false;
  std::vector<const jit::Value*> elems;
};

class Converter {
 public:
  explicit Converter(Graph& g) : g_(g) {}

  /// Marks a value the function returns (a result of a multi-result op gets its getitem even
  /// when nothing else uses it).
  void mark_returned(const jit::Value* v) { returned_.insert(v); }

  void add_input(const jit::Value* v, const at::Tensor& t, const std::string& name) {
    AOTGRAD_CHECK(t.defined(), "capture: input '", name, "' is an undefined tensor");
    env_[v].node = g_.add_placeholder(name, ValueMeta::of(tensor_meta_of(t)));
  }

  void convert(const jit::Node* n) {
    const c10::Symbol kind = n->kind();
    if (kind == c10::prim::Constant) {
      std::optional<c10::IValue> c = jit::toIValue(n->output());
      AOTGRAD_CHECK(c.has_value(), "capture: a constant of type ", n->output()->type()->str(),
                    " that aotgrad cannot read");
      env_[n->output()].constant = std::move(*c);
    } else if (kind == c10::prim::ListConstruct || kind == c10::prim::TupleConstruct) {
      Entry& e = env_[n->output()];
      e.is_list = true;
      for (const jit::Value* in : n->inputs()) e.elems.push_back(in);
    } else if (kind == c10::prim::ListUnpack || kind == c10::prim::TupleUnpack) {
      unpack(n);
    } else if (kind.is_aten()) {
      call(n);
    } else {
      throw Error("capture: libtorch traced " + std::string(kind.toQualString()) +
                  ", which aotgrad cannot represent; write the function with ATen ops on its input "
                  "tensors (no Python-level or TorchScript constructs)");
    }
  }

  /// The argument traced value `v` gives to a schema argument of type `t`.
  Arg to_arg(const jit::Value* v, const TypeRef& t, const std::string& where) {
    auto it = env_.find(v);
    AOTGRAD_CHECK(it != env_.end(), "capture: ", where, " uses a value the trace did not define");
    const Entry& e = it->second;
    if (e.node) return Arg(e.node);
    if (e.is_list) {
      TypeRef elem = t;
      elem.list = false;
      elem.optional = t.elem_optional;
      std::vector<Arg> out;
      for (const jit::Value* x : e.elems) out.push_back(to_arg(x, elem, where));
      return Arg::of_list(std::move(out));
    }
    return constant_arg(*e.constant, t, where);
  }

  Arg output_arg(const jit::Value* v) {
    TypeRef any;
    any.base = BaseType::Any;
    return to_arg(v, any, "the function's result");
  }

 private:
  static Arg constant_arg(const c10::IValue& c, const TypeRef& t, const std::string& where) {
    if (c.isNone()) return Arg::none();
    if (c.isTensor())
      throw Error("capture: " + where +
                  " uses a tensor that is not one of the function's inputs (a tensor captured by "
                  "the function?); pass it as an input");
    if (c.isBool()) return Arg::of_bool(c.toBool());
    if (c.isInt()) {
      int64_t i = c.toInt();
      switch (t.base) {
        case BaseType::ScalarType: {
          auto st = scalar_type_from_c10_code(static_cast<int>(i));
          AOTGRAD_CHECK(st.has_value(), "capture: ", where, ": dtype code ", i,
                        " has no aotgrad dtype");
          return Arg::of_dtype(*st);
        }
        case BaseType::Layout:
          AOTGRAD_CHECK(i == 0 || i == 1, "capture: ", where, ": layout ", i, " is not modelled");
          return Arg::of_layout(static_cast<Layout>(i));
        case BaseType::MemoryFormat:
          AOTGRAD_CHECK(i >= 0 && i <= 3, "capture: ", where, ": memory format ", i,
                        " is not modelled");
          return Arg::of_memory_format(static_cast<MemoryFormat>(i));
        case BaseType::Float: return Arg::of_float(static_cast<double>(i));
        case BaseType::Bool: return Arg::of_bool(i != 0);
        default: return Arg::of_int(i);
      }
    }
    if (c.isDouble()) return Arg::of_float(c.toDouble());
    if (c.isString()) return Arg::of_str(c.toStringRef());
    if (c.isDevice()) return Arg::of_device(from_c10(c.toDevice()));
    if (c.isList()) {
      TypeRef elem = t;
      elem.list = false;
      elem.optional = t.elem_optional;
      std::vector<Arg> out;
      for (const c10::IValue& x : c.toListRef()) out.push_back(constant_arg(x, elem, where));
      return Arg::of_list(std::move(out));
    }
    throw Error("capture: " + where + ": a constant " + c.tagKind() +
                " that aotgrad cannot represent");
  }

  void unpack(const jit::Node* n) {
    const jit::Value* in = n->input();
    auto it = env_.find(in);
    AOTGRAD_CHECK(it != env_.end(), "capture: ", n->kind().toQualString(),
                  " of a value the trace did not define");
    Entry src = it->second;  // copied: env_ grows below
    if (src.is_list) {
      AOTGRAD_CHECK(src.elems.size() == n->outputs().size(), "capture: ", n->kind().toQualString(),
                    " of ", src.elems.size(), " values into ", n->outputs().size());
      for (size_t i = 0; i < src.elems.size(); ++i) env_[n->outputs()[i]] = env_.at(src.elems[i]);
      return;
    }
    AOTGRAD_CHECK(src.node && src.node->meta().kind == ValueMeta::Kind::Tuple,
                  "capture: ", n->kind().toQualString(),
                  " of a value that is not a list of results");
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      Node* item = g_.add_getitem(src.node, static_cast<int64_t>(i));
      check_meta(n->outputs()[i], item, src.node);
      env_[n->outputs()[i]].node = item;
    }
  }

  void call(const jit::Node* n) {
    const c10::FunctionSchema* schema = n->maybeSchema();
    const std::string traced = jit_node_text(n);
    AOTGRAD_CHECK(schema, "capture: libtorch traced ", traced,
                  " without a schema (no overload matched its arguments)");
    const OpDef* op = aten_ops().find(traced);
    if (!op)
      throw Error("capture: the function calls " + traced + " (" + c10::toString(*schema) +
                  "), which aotgrad's op registry does not declare; declare it in its family's "
                  "file under src/ops, or write the function with ops aotgrad knows");
    const std::string where = "the call of " + traced;

    // libtorch arguments aotgrad's schema lacks must hold their defaults.
    for (size_t i = 0; i < schema->arguments().size(); ++i) {
      const c10::Argument& la = schema->arguments()[i];
      if (op->schema.arg_index(la.name()) >= 0) continue;
      std::optional<c10::IValue> c =
          i < n->inputs().size() ? jit::toIValue(n->inputs()[i]) : std::optional<c10::IValue>();
      bool is_default = c && la.default_value() && *c == *la.default_value();
      AOTGRAD_CHECK(is_default, "capture: ", where, " passes argument '", la.name(),
                    "', which aotgrad's schema of ", op->name, " does not have");
    }

    const auto& sargs = op->schema.args;
    std::vector<Arg> values(sargs.size());
    std::vector<bool> given(sargs.size(), false);
    for (size_t i = 0; i < sargs.size(); ++i) {
      c10::optional<int> li = schema->argumentIndexWithName(sargs[i].name);
      if (!li || static_cast<size_t>(*li) >= n->inputs().size()) continue;
      values[i] =
          to_arg(n->inputs()[*li], sargs[i].type, where + " argument '" + sargs[i].name + "'");
      // As Python code calls ops: arguments equal to their defaults are left out.
      given[i] = !sargs[i].has_default || !(values[i] == default_arg(sargs[i]));
    }
    std::vector<Arg> positional;
    std::vector<std::pair<std::string, Arg>> kwargs;
    size_t n_positional = 0;
    while (n_positional < sargs.size() && !sargs[n_positional].kwarg_only) ++n_positional;
    size_t last = 0;
    for (size_t i = 0; i < n_positional; ++i)
      if (given[i]) last = i + 1;
    for (size_t i = 0; i < last; ++i)
      positional.push_back(given[i] || !sargs[i].has_default ? values[i] : default_arg(sargs[i]));
    for (size_t i = n_positional; i < sargs.size(); ++i)
      if (given[i]) kwargs.emplace_back(sargs[i].name, values[i]);

    Node* node = nullptr;
    try {
      node = g_.add_call(*op, std::move(positional), std::move(kwargs));
    } catch (const Error& e) {
      throw Error("capture: " + where + ": " + e.message());
    }
    const size_t n_returns = op->schema.returns.size();
    if (n_returns == 1 || n->outputs().size() == 1) {
      AOTGRAD_CHECK(n->outputs().size() == 1, "capture: ", node->describe(),
                    " has one result, the trace ", n->outputs().size());
      check_meta(n->output(), node, node);
      env_[n->output()].node = node;
      return;
    }
    AOTGRAD_CHECK(n->outputs().size() == n_returns, "capture: ", node->describe(), " has ",
                  n_returns, " results, the trace ", n->outputs().size());
    for (size_t i = 0; i < n_returns; ++i) {
      const jit::Value* out = n->outputs()[i];
      if (out->uses().empty() && !returned_.count(out)) continue;
      Node* item = g_.add_getitem(node, static_cast<int64_t>(i));
      check_meta(out, item, node);
      env_[out].node = item;
    }
  }

  /// The traced value's dtype and sizes against what the registry inferred (an internal error when
  /// they differ: the op's meta function disagrees with libtorch).
  static void check_meta(const jit::Value* v, const Node* node, const Node* call) {
    auto tt = v->type()->cast<c10::TensorType>();
    if (!tt) return;
    const ValueMeta& m = node->meta();
    if (m.kind == ValueMeta::Kind::None) return;  // an absent optional result
    AOTGRAD_CHECK(m.is_tensor(), "capture: internal error: ", node->describe(), " of ",
                  call->describe(), " is ", m.describe(), " but libtorch traced a tensor");
    if (auto st = tt->scalarType()) {
      AOTGRAD_CHECK(from_c10(*st) == m.tensor.dtype, "capture: internal error: ", node->describe(),
                    " of ", call->describe(), ": the registry infers ", m.tensor.annotation(),
                    ", libtorch traced dtype ", c10::toString(*st));
    }
    if (auto sizes = tt->sizes().concrete_sizes()) {
      bool same = sizes->size() == m.tensor.sizes.size();
      for (size_t i = 0; same && i < sizes->size(); ++i)
        same = m.tensor.sizes[i].is_concrete() && m.tensor.sizes[i].value() == (*sizes)[i];
      AOTGRAD_CHECK(same, "capture: internal error: ", node->describe(), " of ", call->describe(),
                    ": the registry infers ", m.tensor.annotation(), ", libtorch traced sizes ",
                    c10::IntArrayRef(*sizes));
    }
  }

  Graph& g_;
  std::unordered_map<const jit::Value*, Entry> env_;
  std::unordered_set<const jit::Value*> returned_;  // the trace's outputs
};

}  // namespace

std::unique_ptr<Graph> capture(const TensorFunction& fn,
                               const std::vector<at::Tensor>& example_inputs,
                               const CaptureOptions& options) {
  AOTGRAD_CHECK(fn, "capture: the function is empty");
  AOTGRAD_CHECK(options.input_names.empty() || options.input_names.size() == example_inputs.size(),
                "capture: ", options.input_names.size(), " input names for ", example_inputs.size(),
                " inputs");
  for (size_t i = 0; i < example_inputs.size(); ++i)
    AOTGRAD_CHECK(example_inputs[i].defined(), "capture: input ", i, " is an undefined tensor");
  AOTGRAD_CHECK(!jit::tracer::isTracing(), "capture: called while libtorch is already tracing");

  jit::Stack stack(example_inputs.begin(), example_inputs.end());
  std::shared_ptr<jit::tracer::TracingState> state;
  {
    at::NoGradGuard no_grad;
    auto traced = [&](jit::Stack in) -> jit::Stack {
      std::vector<at::Tensor> args;
      args.reserve(in.size());
      for (auto& v : in) args.push_back(v.toTensor());
      std::vector<at::Tensor> results = fn(args);
      jit::Stack out;
      for (size_t i = 0; i < results.size(); ++i) {
        if (!results[i].defined()) {
          throw Error("capture: result " + std::to_string(i) +
                      " of the function is an undefined tensor");
        }
        out.emplace_back(std::move(results[i]));
      }
      return out;
    };
    try {
      state = jit::tracer::trace(
                  std::move(stack), traced, [](const at::Tensor&) { return std::string(); },
                  /*strict=*/true, /*force_outplace=*/false)
                  .first;
    } catch (const Error&) {
      throw;
    } catch (const c10::Error& e) {
      throw Error(std::string("capture: running the function under libtorch's tracer failed: ") +
                  e.what_without_backtrace());
    } catch (const std::exception& e) {
      throw Error(std::string("capture: running the function under libtorch's tracer failed: ") +
                  e.what());
    }
  }
  const jit::Graph& traced = *state->graph;
  AOTGRAD_CHECK(traced.inputs().size() == example_inputs.size(),
                "capture: internal error: the trace has ", traced.inputs().size(), " inputs for ",
                example_inputs.size(), " tensors");

  auto g = std::make_unique<Graph>();
  Converter conv(*g);
  for (size_t i = 0; i < example_inputs.size(); ++i) {
    std::string name =
        options.input_names.empty() ? "arg" + std::to_string(i) + "_1" : options.input_names[i];
    conv.add_input(traced.inputs()[i], example_inputs[i], name);
  }
  for (const jit::Value* v : traced.outputs()) conv.mark_returned(v);
  for (const jit::Node* n : traced.nodes()) conv.convert(n);
  std::vector<Arg> outs;
  for (const jit::Value* v : traced.outputs()) outs.push_back(conv.output_arg(v));
  g->set_output(Arg::of_tuple(std::move(outs)));
  return g;
}

TensorFunction functional_call(std::vector<at::Tensor> state, TensorFunction fn) {
  AOTGRAD_CHECK(fn, "functional_call: the function is empty");
  for (size_t i = 0; i < state.size(); ++i) {
    AOTGRAD_CHECK(state[i].defined(), "functional_call: state tensor ", i, " is undefined");
    for (size_t j = 0; j < i; ++j)
      AOTGRAD_CHECK(state[j].unsafeGetTensorImpl() != state[i].unsafeGetTensorImpl(),
                    "functional_call: state tensors ", j, " and ", i, " are the same tensor");
  }
  return [state = std::move(state), fn = std::move(fn)](const std::vector<at::Tensor>& args) {
    AOTGRAD_CHECK(args.size() >= state.size(), "functional_call: ", args.size(), " arguments for ",
                  state.size(), " state tensors");
    for (size_t i = 0; i < state.size(); ++i) {
      const at::Tensor& r = args[i];
      AOTGRAD_CHECK(r.defined() && r.scalar_type() == state[i].scalar_type() &&
                        r.device() == state[i].device(),
                    "functional_call: the replacement of state tensor ", i, " is ",
                    r.defined() ? r.toString() : "undefined", ", the state tensor ",
                    state[i].toString());
    }
    // Each state tensor's TensorImpl takes its replacement's storage and layout (what set_data
    // does, without going through the dispatcher, so the tracer records nothing), keeping its own
    // version counter and autograd metadata; the snapshots put them back.
    std::vector<c10::intrusive_ptr<c10::TensorImpl>> saved;
    saved.reserve(state.size());
    struct Restore {
      const std::vector<at::Tensor>& state;
      std::vector<c10::intrusive_ptr<c10::TensorImpl>>& saved;
      ~Restore() {
        for (size_t i = 0; i < saved.size(); ++i)
          state[i].unsafeGetTensorImpl()->shallow_copy_from(saved[i]);
      }
    } restore{state, saved};
    const bool tracing = jit::tracer::isTracing();
    for (size_t i = 0; i < state.size(); ++i) {
      c10::TensorImpl* impl = state[i].unsafeGetTensorImpl();
      saved.push_back(impl->shallow_copy_and_detach(c10::VariableVersion(0),
                                                    impl->allow_tensor_metadata_change()));
      impl->shallow_copy_from(args[i].getIntrusivePtr());
      if (tracing) jit::tracer::setValueTrace(state[i], jit::tracer::getValueTrace(args[i]));
    }
    return fn(std::vector<at::Tensor>(args.begin() + static_cast<std::ptrdiff_t>(state.size()),
                                      args.end()));
  };
}

std::vector<at::Tensor> copy_example_inputs(const std::vector<at::Tensor>& inputs) {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> out(inputs.size());
  std::vector<bool> done(inputs.size(), false);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (done[i]) continue;
    const at::Tensor& t = inputs[i];
    AOTGRAD_CHECK(t.defined(), "copy_example_inputs: input ", i, " is an undefined tensor");
    // The inputs on t's storage, and the element range they cover.
    std::vector<size_t> group;
    int64_t lo = t.storage_offset(), hi = lo;
    for (size_t j = i; j < inputs.size(); ++j) {
      if (done[j] || !inputs[j].defined() || !inputs[j].has_storage() || !t.has_storage() ||
          !inputs[j].storage().is_alias_of(t.storage()))
        continue;
      const at::Tensor& u = inputs[j];
      AOTGRAD_CHECK(u.scalar_type() == t.scalar_type(), "copy_example_inputs: inputs ", i, " and ",
                    j, " share a storage with different dtypes");
      int64_t extent = u.storage_offset() + 1;
      bool empty = false;
      for (int64_t d = 0; d < u.dim(); ++d) {
        if (u.size(d) == 0) empty = true;
        extent += (u.size(d) - 1) * u.stride(d);
      }
      lo = std::min(lo, u.storage_offset());
      hi = std::max(hi, empty ? u.storage_offset() : extent);
      group.push_back(j);
    }
    if (group.size() <= 1) {
      out[i] = at::empty_strided(t.sizes(), t.strides(), t.options().requires_grad(false)).copy_(t);
      out[i].set_requires_grad(t.requires_grad());
      done[i] = true;
      continue;
    }
    at::Tensor src =
        at::empty({0}, t.options().requires_grad(false)).set_(t.storage(), lo, {hi - lo}, {1});
    at::Tensor flat = src.clone();
    for (size_t j : group) {
      const at::Tensor& u = inputs[j];
      done[j] = true;
      for (size_t k : group) {
        if (k >= j) break;
        if (inputs[k].unsafeGetTensorImpl() == u.unsafeGetTensorImpl()) out[j] = out[k];
      }
      if (out[j].defined()) continue;
      out[j] = flat.as_strided(u.sizes(), u.strides(), u.storage_offset() - lo);
      if (u.requires_grad()) out[j].set_requires_grad(true);
    }
  }
  return out;
}

}  // namespace aotgrad
