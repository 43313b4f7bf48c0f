// aotgrad: libtorch capture -- a C++ function run on fake tensors, its ops recorded below autograd
// (a C++ make_fx).
#include "aotgrad/frontend/capture.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/functions/basic_ops.h>
#include <torch/csrc/autograd/variable.h>

#include <unordered_map>

#include "aotgrad/providers/aten_call.h"
#include "aotgrad/providers/fake_tensor.h"
#include "aotgrad/providers/sym_node.h"

namespace aotgrad {
namespace {

std::string libtorch_message(const std::exception& e) {
  if (auto* ce = dynamic_cast<const c10::Error*>(&e)) return ce->what_without_backtrace();
  return e.what();
}

// A copy of a constant's value with its layout, detached from whatever made it.
at::Tensor keep_value(const at::Tensor& t) {
  c10::NoGradGuard no_grad;
  return at::empty_strided(t.sizes(), t.strides(), t.options().requires_grad(false)).copy_(t);
}

// `fake` made a non-leaf, as the example input it stands for (a view of an activation, say), so
// that the function may write it in place as eagerly. Its history is an autograd node the capture
// never runs.
at::Tensor as_non_leaf(at::Tensor fake) {
  auto history = std::make_shared<torch::autograd::Error>(
      "the history of a captured input, which the capture never differentiates",
      torch::autograd::edge_list{});
  history->add_input_metadata(fake);
  torch::autograd::impl::set_gradient_edge(fake, {std::move(history), 0});
  return fake;
}

}  // namespace

std::optional<c10::ScalarType> cpu_autocast_dtype() {
  if (c10::impl::tls_is_dispatch_key_excluded(c10::DispatchKey::AutocastCPU)) return std::nullopt;
  return at::autocast::get_autocast_dtype(at::kCPU);
}

std::unique_ptr<Graph> capture(const TensorFunction& fn,
                               const std::vector<at::Tensor>& example_inputs,
                               const CaptureOptions& options) {
  AOTGRAD_CHECK(fn, "capture: the function is empty");
  AOTGRAD_CHECK(options.input_names.empty() || options.input_names.size() == example_inputs.size(),
                "capture: ", options.input_names.size(), " input names for ", example_inputs.size(),
                " inputs");
  for (size_t i = 0; i < example_inputs.size(); ++i) {
    AOTGRAD_CHECK(example_inputs[i].defined(), "capture: input ", i, " is an undefined tensor");
    AOTGRAD_CHECK(!FakeTrace::is_fake(example_inputs[i]), "capture: input ", i,
                  " is a fake tensor of another capture");
  }
  if (options.lifted_constants) options.lifted_constants->clear();
  AOTGRAD_CHECK(options.input_metas.empty() || options.input_metas.size() == example_inputs.size(),
                "capture: ", options.input_metas.size(), " input metadata for ",
                example_inputs.size(), " inputs");

  auto g = std::make_unique<Graph>();
  FakeTrace::Options trace_options;
  trace_options.device = example_inputs.empty() ? Device{} : from_c10(example_inputs[0].device());
  trace_options.detach_no_grad_values = true;
  trace_options.symbol_sources = options.symbol_sources;
  // Under at::autocast (CPU), libtorch's autocast casts the fakes: they report the CPU device.
  trace_options.real_device =
      cpu_autocast_dtype().has_value() && to_c10(trace_options.device).is_cpu();
  std::unordered_map<const c10::TensorImpl*, Node*> constants;
  std::vector<at::Tensor> constant_tensors;  // keeps the TensorImpls of `constants` alive
  trace_options.on_real_tensor = [&](const at::Tensor& t, const std::string& where) -> Arg {
    if (!options.lifted_constants)
      throw Error(where +
                  " is a tensor that is neither an input of the function nor made from one (" +
                  t.toString() + " " + c10::str(t.sizes()) + "); pass it as an input");
    auto it = constants.find(t.unsafeGetTensorImpl());
    if (it != constants.end()) return Arg(it->second);
    std::string name = "_tensor_constant" + std::to_string(constants.size());
    ValueMeta m = ValueMeta::of(tensor_meta_of(t));
    m.tensor.requires_grad = false;
    Node* p = g->add_placeholder(name, std::move(m));
    p->info().lifted_constant = true;
    constants.emplace(t.unsafeGetTensorImpl(), p);
    constant_tensors.push_back(t);
    options.lifted_constants->push_back(keep_value(t));
    return Arg(p);
  };
  // The placeholders come first: the trace's constants are added after them as they are read.
  std::vector<Node*> inputs;
  for (size_t i = 0; i < example_inputs.size(); ++i) {
    std::string name =
        options.input_names.empty() ? "arg" + std::to_string(i) + "_1" : options.input_names[i];
    TensorMeta m = tensor_meta_of(example_inputs[i]);
    if (!options.input_metas.empty()) {
      const TensorMeta& given = options.input_metas[i];
      AOTGRAD_CHECK(given.dtype == m.dtype && given.dim() == m.dim(), "capture: input ", i, " is ",
                    m.annotation(), " but its metadata says ", given.annotation());
      bool rg = m.requires_grad;
      m = given;
      m.requires_grad = rg;
    }
    inputs.push_back(g->add_placeholder(name, ValueMeta::of(std::move(m))));
  }

  FakeTrace trace(*g, trace_options);
  std::vector<at::Tensor> fakes;
  fakes.reserve(example_inputs.size());
  for (size_t i = 0; i < example_inputs.size(); ++i) {
    const at::Tensor& x = example_inputs[i];
    const bool non_leaf = x.requires_grad() && !x.is_leaf();
    fakes.push_back(trace.fake(inputs[i], x.requires_grad() && !non_leaf));
    if (non_leaf) fakes.back() = as_non_leaf(fakes.back());
  }
  std::vector<at::Tensor> results;
  ScopedShapeGuards guards;
  try {
    // A cast autocast caches (of a leaf that requires grad) would be a fake outliving the trace.
    struct NoAutocastCache {
      bool was = at::autocast::is_autocast_cache_enabled();
      NoAutocastCache() { at::autocast::set_autocast_cache_enabled(false); }
      ~NoAutocastCache() { at::autocast::set_autocast_cache_enabled(was); }
    } no_cache;
    results = fn(fakes);
  } catch (const Error& e) {
    throw Error("capture: " + e.message());
  } catch (const std::exception& e) {
    throw Error("capture: running the function on fake tensors failed: " + libtorch_message(e));
  }
  if (options.shape_guards) *options.shape_guards = guards.taken();
  trace.name_size_nodes();
  std::vector<Arg> outs;
  for (size_t i = 0; i < results.size(); ++i) {
    AOTGRAD_CHECK(results[i].defined(), "capture: result ", i,
                  " of the function is an undefined tensor");
    Node* n = trace.node_of(results[i]);
    if (!n) {
      Arg c = trace_options.on_real_tensor(results[i], "result " + std::to_string(i));
      n = c.node;
    }
    outs.push_back(Arg(n));
  }
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
                        (r.device() == state[i].device() || FakeTrace::is_fake(r)),
                    "functional_call: the replacement of state tensor ", i, " is ",
                    r.defined() ? r.toString() : "undefined", ", the state tensor ",
                    state[i].toString());
    }
    // Each state tensor's TensorImpl takes its replacement's storage, layout and dispatch keys
    // (what set_data does, without going through the dispatcher, so a capture records nothing; a
    // fake replacement makes the state tensor stand for the fake's node), keeping its own version
    // counter and autograd metadata; the snapshots put them back.
    std::vector<c10::intrusive_ptr<c10::TensorImpl>> saved;
    saved.reserve(state.size());
    struct Restore {
      const std::vector<at::Tensor>& state;
      std::vector<c10::intrusive_ptr<c10::TensorImpl>>& saved;
      ~Restore() {
        for (size_t i = 0; i < saved.size(); ++i) FakeTrace::point_at(state[i], saved[i]);
      }
    } restore{state, saved};
    for (size_t i = 0; i < state.size(); ++i) {
      c10::TensorImpl* impl = state[i].unsafeGetTensorImpl();
      saved.push_back(impl->shallow_copy_and_detach(c10::VariableVersion(0),
                                                    impl->allow_tensor_metadata_change()));
      FakeTrace::point_at(state[i], args[i].getIntrusivePtr());
    }
    return fn(std::vector<at::Tensor>(args.begin() + static_cast<std::ptrdiff_t>(state.size()),
                                      args.end()));
  };
}

std::vector<at::Tensor> copy_example_inputs(const std::vector<at::Tensor>& inputs) {
  c10::NoGradGuard no_grad;
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
