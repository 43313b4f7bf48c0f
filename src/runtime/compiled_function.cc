// aotgrad: CompiledFunction -- the forward and backward graphs as one libtorch autograd Function.
#include "aotgrad/runtime/compiled_function.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <c10/core/GradMode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>
#include <torch/csrc/autograd/graph_task.h>
#include <torch/csrc/autograd/saved_variable_hooks.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "aotgrad/ir/error.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/providers/aten_call.h"
#include "aotgrad/runtime/interpreter.h"
#include "aotgrad/runtime/saved_tensors_hooks.h"
#include "aotgrad/runtime/wrappers/debug_assert.h"
#include "aotgrad/runtime/wrappers/runtime_wrapper.h"
#include "aotgrad/runtime/wrappers/stack.h"
#include "aotgrad/transforms/input_mutations.h"
#include "aotgrad/transforms/passes/dce.h"

namespace aotgrad {

// The backward as a function to differentiate (Note [Double backward]): the joint graph with
// only its gradient outputs, `(primals, tangents) -> grads`, and which primal each output is the
// gradient of (the others get none).
struct DifferentiableBackward {
  std::shared_ptr<const Graph> graph;
  std::vector<size_t> grad_of;  // per output of `graph`: the primal (input) index
  std::string unsupported;      // why the backward cannot be differentiated (then no graph)
};

struct CompiledFunction::State {
  TrainingArtifacts art;
  CompiledFn fw, bw;
  RuntimeWrapper runtime;  // R3 (runtime/wrappers/stack.h): write-back, aliased outputs
  std::vector<bool> requires_grad;
  // The forward's outputs as the runtime sees them: after the effect tokens, which
  // with_effect_tokens passes in and drops (Note [Effect tokens]).
  size_t num_outputs = 0;                 // mutated-input values + user outputs
  std::vector<int> tangent_of_output;     // per such output (JointGraph::tangent_of_output)
  std::vector<TensorMeta> output_metas;   // forward outputs' metadata, for zero tangents
  bool symbolic_outputs = false;          // an output's size is symbolic
  std::unique_ptr<SymbolBinder> symbols;  // the user graph's size symbols (null: static sizes)
  int64_t id = 0;                         // key of this state in the registry backward reads
  bool cache_hit = false;                 // the artifacts came from the compile cache
  bool debug_assert = false;
  // Double backward (Note [Double backward]): the graph and options compiled, and per
  // requires_grad of the differentiated backward's inputs (primals, tangents) its compilation.
  std::shared_ptr<const Graph> graph;
  TrainOptions options;
  std::mutex double_mu;
  std::map<std::vector<bool>, std::shared_ptr<CompiledFunction>> double_backward;
  std::map<std::vector<bool>, std::string> double_backward_errors;  // compilations that failed
  std::optional<DifferentiableBackward> differentiable;  // made on the first double backward
};

namespace {

// Backward nodes find their compiled state by id: custom Function contexts hold IValues only.
std::mutex g_registry_mu;
std::unordered_map<int64_t, std::weak_ptr<CompiledFunction::State>>& registry() {
  static std::unordered_map<int64_t, std::weak_ptr<CompiledFunction::State>> r;
  return r;
}
int64_t g_next_id = 1;

// The saved values of one forward that went through saved-tensor hooks: per saved value its
// hooks (null for an undefined value) and the sizes and dtype its unpacked tensor must have.
struct PackedSaved : torch::CustomClassHolder {
  std::vector<std::unique_ptr<torch::autograd::SavedVariableHooks>> hooks;
  std::vector<std::vector<int64_t>> sizes;
  std::vector<c10::ScalarType> dtypes;
};

// Packs `saved` with this thread's hooks; nullptr when there are none.
c10::intrusive_ptr<PackedSaved> pack_saved(const torch::autograd::variable_list& saved) {
  auto first = saved_tensor_hooks_for_this_thread();
  if (!first) return {};
  auto packed = c10::make_intrusive<PackedSaved>();
  for (const at::Tensor& t : saved) {
    std::unique_ptr<torch::autograd::SavedVariableHooks> h;
    if (t.defined()) {
      h = first ? std::move(first) : saved_tensor_hooks_for_this_thread();
      h->call_pack_hook(t);
    }
    packed->hooks.push_back(std::move(h));
    packed->sizes.push_back(t.defined() ? t.sizes().vec() : std::vector<int64_t>{});
    packed->dtypes.push_back(t.defined() ? t.scalar_type() : c10::ScalarType::Undefined);
  }
  return packed;
}

// The saved values back from their unpack hooks, each checked against what was packed.
std::vector<at::Tensor> unpack_saved(const PackedSaved& packed,
                                     const std::vector<std::string>& names) {
  std::vector<at::Tensor> out;
  out.reserve(packed.hooks.size());
  for (size_t k = 0; k < packed.hooks.size(); ++k) {
    if (!packed.hooks[k]) {
      out.emplace_back();
      continue;
    }
    at::Tensor t = packed.hooks[k]->call_unpack_hook();
    const std::string what = "saved value " + std::to_string(k) + " ('" + names.at(k) + "')";
    AOTGRAD_CHECK(t.defined(), "the unpack hook of ", what, " returned an undefined tensor");
    AOTGRAD_CHECK(t.sizes().vec() == packed.sizes[k] && t.scalar_type() == packed.dtypes[k],
                  "the unpack hook of ", what, " returned a tensor of sizes ", t.sizes(),
                  " and dtype ", t.scalar_type(), ", but the forward saved one of sizes ",
                  c10::IntArrayRef(packed.sizes[k]), " and dtype ", packed.dtypes[k]);
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

// The backward node running on this thread (CompiledFunctionBackward::apply sets it), for the
// edges to the leaves its gradients go to.
thread_local const torch::autograd::Node* t_backward_node = nullptr;

// Note [Gradients accumulated as they are made]
// Eager's engine runs each AccumulateGrad as soon as its gradient is made; a compiled backward
// returns all of its gradients at its end, so with gradients kept between steps
// (zero_grad(false) zeroes them) every fresh gradient lives until then. In a plain .backward() (the
// graph task's exec_info empty: every reachable leaf accumulates), without create_graph, gradient k
// whose edge is an AccumulateGrad without hooks, on a leaf whose .grad is defined, dense and of
// the gradient's sizes and dtype, is added into that .grad as soon as the backward graph computes
// it -- what AccumulateGrad's in-place `variable_grad += new_grad` does, under the same lock -- and
// the backward returns None for it. Otherwise AccumulateGrad does it as before. Only graphs that
// write, communicate or have effects nowhere offer their outputs early (the interpreter's
// ScopedOutputSink), so data-parallel backwards keep AccumulateGrad's path.
// The lock AccumulateGrad holds while it adds into its variable's .grad (Node::mutex_, protected):
// a pointer to it taken in a class derived from Node.
struct NodeLock : torch::autograd::Node {
  static std::mutex& of(torch::autograd::Node& n) { return n.*(&NodeLock::mutex_); }
};

struct LeafGrad {
  at::Tensor leaf;
  torch::autograd::AccumulateGrad* accumulator = nullptr;
};

std::vector<LeafGrad> leaves_to_accumulate_into() {
  const torch::autograd::Node* node = t_backward_node;
  const auto* exec = torch::autograd::get_current_graph_task_exec_info();
  if (!node || !exec || !exec->empty() || c10::GradMode::is_enabled()) return {};
  std::vector<LeafGrad> leaves(node->num_outputs());
  for (size_t k = 0; k < leaves.size(); ++k) {
    const torch::autograd::Edge& e = node->next_edge(k);
    auto* acc = dynamic_cast<torch::autograd::AccumulateGrad*>(e.function.get());
    if (!acc || !acc->pre_hooks().empty() || !acc->post_hooks().empty()) continue;
    const at::Tensor& v = acc->variable;
    if (!v.defined() || !v.requires_grad() || !torch::autograd::impl::hooks(v).empty()) continue;
    const at::Tensor& grad = v.grad();
    if (!grad.defined() || grad.requires_grad() || grad.is_sparse() || grad.is_mkldnn()) continue;
    leaves[k] = {v, acc};
  }
  return leaves;
}

struct CompiledAutogradFunction : public torch::autograd::Function<CompiledAutogradFunction> {
  // Called by apply_compiled (below) under no grad; the outputs autograd must not differentiate
  // are added to `non_diff`.
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, int64_t id,
                                                std::shared_ptr<CompiledFunction::State> state,
                                                at::TensorList inputs,
                                                std::unordered_set<at::TensorImpl*>& non_diff,
                                                bool keep_inputs) {
    std::vector<c10::IValue> in(inputs.begin(), inputs.end());
    std::vector<c10::IValue> outs;
    {
      at::AutoDispatchBelowADInplaceOrView guard;
      // The graphs hold the casts of a capture under autocast: libtorch's must not cast again.
      c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
      outs = state->fw(std::move(in));
    }
    size_t n_out = state->num_outputs;
    AOTGRAD_CHECK(outs.size() == n_out + state->art.saved.size(), "forward graph returned ",
                  outs.size(), " values, expected ", n_out + state->art.saved.size());
    torch::autograd::variable_list saved;
    std::vector<int64_t> saved_ints;
    // A saved value that is (a view of) an input the runtime writes new data into after this
    // forward is saved as a copy: the backward needs the value the forward used, and autograd
    // would reject the tensor whose version the write-back bumps.
    const ViewAndMutationMeta& meta = state->art.meta;
    for (size_t k = n_out; k < outs.size(); ++k) {
      if (!outs[k].isTensor()) {  // a saved SymInt: they come after the tensors (seed §13.16)
        saved_ints.push_back(outs[k].toInt());
        continue;
      }
      at::Tensor t = outs[k].toTensor();
      for (int p : meta.mutated_inputs_returned)
        if (meta.inputs[p].mutates_data && t.defined() && t.is_alias_of(inputs[p])) {
          t = t.clone();
          break;
        }
      saved.push_back(t);
    }
    // Saved values are kept as tensor_data() aliases (same storage and version counter, no
    // autograd metadata, so a saved output does not hold this node alive) in saved_data rather
    // than save_for_backward's SavedVariables, so that backward can hand them to the backward
    // graph and let it free each after its last use, as PyTorch's boxed backward does with
    // ctx.maybe_clear_saved_tensors(); eager autograd also frees a node's saved tensors as
    // soon as that node has run. Their versions are checked in backward as SavedVariable does.
    // With saved-tensor hooks (saved_tensors_hooks.h) the packed values are kept instead.
    if (auto packed = pack_saved(saved)) {
      ctx->saved_data["packed"] = c10::IValue::make_capsule(std::move(packed));
    } else {
      c10::List<at::Tensor> kept;
      c10::List<int64_t> versions;
      for (const at::Tensor& t : saved) {
        kept.push_back(t.defined() ? t.tensor_data() : t);
        versions.push_back(t.defined() ? static_cast<int64_t>(t._version()) : 0);
      }
      ctx->saved_data["saved"] = std::move(kept);
      ctx->saved_data["versions"] = std::move(versions);
    }
    ctx->saved_data["symints"] = std::move(saved_ints);
    ctx->saved_data["id"] = id;
    // The inputs themselves, for a backward with create_graph (Note [Double backward]), with their
    // versions: they are the caller's tensors, alive anyway in a training step.
    if (keep_inputs) {
      c10::List<at::Tensor> kept(inputs.vec());
      c10::List<int64_t> versions;
      for (const at::Tensor& t : inputs)
        versions.push_back(t.defined() ? static_cast<int64_t>(t._version()) : 0);
      ctx->saved_data["inputs"] = std::move(kept);
      ctx->saved_data["input_versions"] = std::move(versions);
    }
    // A symbolic graph's outputs have this call's sizes: a gradient autograd does not give is
    // zeros of those (the backward reads them below).
    if (state->symbolic_outputs) {
      c10::List<int64_t> sizes;
      for (size_t k = 0; k < n_out; ++k) {
        const TensorMeta& m = state->output_metas[k];
        const bool known = outs[k].isTensor() && outs[k].toTensor().defined() &&
                           outs[k].toTensor().dim() == m.dim();
        for (int64_t d = 0; d < m.dim(); ++d)
          sizes.push_back(known ? outs[k].toTensor().size(d) : m.sizes[d].hint_or(1));
      }
      ctx->saved_data["output_sizes"] = std::move(sizes);
    }
    torch::autograd::variable_list result;
    for (size_t k = 0; k < n_out; ++k) {
      at::Tensor t = outs[k].isTensor() ? outs[k].toTensor() : at::Tensor();
      result.push_back(t);
      if (t.defined() && state->tangent_of_output[k] < 0) non_diff.insert(t.unsafeGetTensorImpl());
    }
    return result;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    int64_t id = ctx->saved_data["id"].toInt();
    std::shared_ptr<CompiledFunction::State> state;
    {
      std::lock_guard<std::mutex> lock(g_registry_mu);
      auto it = registry().find(id);
      if (it != registry().end()) state = it->second.lock();
    }
    if (!state) throw Error("backward of a compiled function that no longer exists");
    std::string unsupported;
    std::vector<at::Tensor> kept_inputs;  // create_graph: for guard_double_backward
    if (c10::GradMode::is_enabled()) {
      if (auto grads = differentiable_backward(ctx, *state, grad_outputs, &unsupported))
        return *grads;
      if (auto it = ctx->saved_data.find("inputs"); it != ctx->saved_data.end())
        for (const at::Tensor& t : it->second.toTensorList())
          if (t.defined() && t.requires_grad()) kept_inputs.push_back(t);
    }
    release_inputs(ctx);
    std::vector<c10::IValue> in;
    in.reserve(state->art.saved.size() + state->tangent_of_output.size());
    if (auto p = ctx->saved_data.find("packed"); p != ctx->saved_data.end()) {
      // Unpacked again on every backward (retain_graph), as SavedVariable does.
      c10::intrusive_ptr<torch::CustomClassHolder> holder = p->second.toCapsule();
      for (at::Tensor& t : unpack_saved(static_cast<const PackedSaved&>(*holder), state->art.saved))
        in.emplace_back(std::move(t));
      if (!torch::autograd::get_current_graph_task_keep_graph()) ctx->saved_data.erase(p);
    } else {
      auto it = ctx->saved_data.find("saved");
      if (it == ctx->saved_data.end())
        throw Error(
            "Trying to backward through the graph of a compiled function a second time (or to "
            "directly access saved tensors after they have already been freed). Saved "
            "intermediate values of the graph are freed when you call .backward(). Specify "
            "retain_graph=True if you need to backward through the graph a second time.");
      c10::List<at::Tensor> saved = it->second.toTensorList();
      c10::List<int64_t> versions = ctx->saved_data.at("versions").toIntList();
      for (size_t k = 0; k < saved.size(); ++k) {
        at::Tensor t = saved.get(k);
        if (t.defined() && static_cast<int64_t>(t._version()) != versions.get(k))
          throw Error(
              "one of the variables needed for gradient computation has been modified "
              "by an inplace operation: saved value " +
              std::to_string(k) + " ('" + state->art.saved.at(k) + "') is at version " +
              std::to_string(t._version()) + "; expected version " +
              std::to_string(versions.get(k)) + " instead.");
      }
      // Without retain_graph the backward graph owns the saved values from here on and frees
      // each after its last use.
      bool keep = torch::autograd::get_current_graph_task_keep_graph();
      if (!keep) {
        ctx->saved_data.erase("saved");
        ctx->saved_data.erase("versions");
      }
      for (size_t k = 0; k < saved.size(); ++k)
        in.emplace_back(keep ? saved.get(k) : saved.extract(k));
    }
    for (int64_t v : ctx->saved_data.at("symints").toIntVector()) in.emplace_back(v);
    for (at::Tensor& g : tangents(ctx, *state, grad_outputs)) in.push_back(g.contiguous());
    std::vector<c10::IValue> grads;
    {
      // Note [Gradients accumulated as they are made]
      std::vector<LeafGrad> leaves = leaves_to_accumulate_into();
      bool any = false;
      for (const LeafGrad& l : leaves) any = any || l.leaf.defined();
      std::optional<ScopedOutputSink> sink;
      if (any)
        sink.emplace([&leaves](size_t k, const c10::IValue& value) {
          if (k >= leaves.size() || !leaves[k].leaf.defined() || !value.isTensor()) return false;
          const at::Tensor& g = value.toTensor();
          std::lock_guard<std::mutex> lock(NodeLock::of(*leaves[k].accumulator));
          at::Tensor grad = leaves[k].leaf.grad();
          if (!g.defined() || !grad.defined() || g.sizes() != grad.sizes() ||
              g.scalar_type() != grad.scalar_type() || g.device() != grad.device() || g.is_sparse())
            return false;
          grad.add_(g);
          torch::autograd::impl::bump_version(grad);
          return true;
        });
      at::AutoDispatchBelowADInplaceOrView guard;
      c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
      grads = state->bw(std::move(in));
    }
    torch::autograd::variable_list result{at::Tensor(), at::Tensor()};  // for id and state
    for (auto& g : grads) result.push_back(g.isTensor() ? g.toTensor() : at::Tensor());
    // create_graph on a backward that cannot be differentiated: the grads get a node whose own
    // backward raises, naming why.
    if (c10::GradMode::is_enabled())
      result = guard_double_backward(std::move(result), unsupported, kept_inputs);
    return result;
  }

  static torch::autograd::variable_list guard_double_backward(
      torch::autograd::variable_list g, const std::string& why,
      const std::vector<at::Tensor>& inputs);

  // Without retain_graph, the kept inputs (Note [Double backward]) go with this backward.
  static void release_inputs(torch::autograd::AutogradContext* ctx) {
    if (torch::autograd::get_current_graph_task_keep_graph()) return;
    ctx->saved_data.erase("inputs");
    ctx->saved_data.erase("input_versions");
  }

  // The backward graph's tangents: per forward output that has one, its incoming gradient, or
  // zeros of its sizes where autograd gives none.
  static std::vector<at::Tensor> tangents(torch::autograd::AutogradContext* ctx,
                                          const CompiledFunction::State& state,
                                          const torch::autograd::variable_list& grad_outputs) {
    std::vector<at::Tensor> out;
    const auto& tangent_of = state.tangent_of_output;
    std::vector<int64_t> output_sizes;
    if (ctx->saved_data.count("output_sizes"))
      output_sizes = ctx->saved_data.at("output_sizes").toIntVector();
    size_t at_size = 0;  // output k's sizes start here in output_sizes
    for (size_t k = 0; k < tangent_of.size(); ++k) {
      const size_t first = at_size;
      if (k < state.output_metas.size()) at_size += state.output_metas[k].sizes.size();
      if (tangent_of[k] < 0) continue;
      at::Tensor g = k < grad_outputs.size() ? grad_outputs[k] : at::Tensor();
      if (!g.defined()) {
        const TensorMeta& m = state.output_metas[k];
        std::vector<int64_t> sizes;
        for (size_t d = 0; d < m.sizes.size(); ++d)
          sizes.push_back(m.sizes[d].is_concrete()          ? m.sizes[d].value()
                          : first + d < output_sizes.size() ? output_sizes[first + d]
                                                            : m.sizes[d].hint_or(1));
        g = at::zeros(sizes, at::TensorOptions()
                                 .dtype(static_cast<c10::ScalarType>(c10_code(m.dtype)))
                                 .device(to_c10(m.device)));
      }
      out.push_back(std::move(g));
    }
    return out;
  }

  // Note [Double backward]: nullopt when nothing requires grad, or (with `unsupported` set)
  // when the backward cannot be differentiated.
  static std::optional<torch::autograd::variable_list> differentiable_backward(
      torch::autograd::AutogradContext* ctx, CompiledFunction::State& state,
      const torch::autograd::variable_list& grad_outputs, std::string* unsupported);
};

// The backward node: libtorch's CppNode for CompiledAutogradFunction, under PyTorch's name.
struct CompiledFunctionBackward : torch::autograd::CppNode<CompiledAutogradFunction> {
  std::string name() const override { return "CompiledFunctionBackward"; }
  torch::autograd::variable_list apply(torch::autograd::variable_list&& inputs) override {
    const torch::autograd::Node* previous = t_backward_node;
    t_backward_node = this;
    struct Restore {
      const torch::autograd::Node* previous;
      ~Restore() { t_backward_node = previous; }
    } restore{previous};
    return CppNode<CompiledAutogradFunction>::apply(std::move(inputs));
  }
};

namespace {

// The grads of a backward run with create_graph that cannot be differentiated: differentiating
// them again raises, naming why. An anchor leaf that requires grad makes the node part of the
// graph whatever the grads' inputs are, and the compiled function's inputs (the ones it kept)
// are inputs of the node too, so that a grad asked of them reaches it and raises rather than
// libtorch's "appears to not have been used in the graph".
struct DoubleBackwardGuard : public torch::autograd::Function<DoubleBackwardGuard> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                at::Tensor anchor, at::TensorList grads,
                                                std::string why, at::TensorList inputs) {
    ctx->saved_data["why"] = std::move(why);
    return torch::autograd::variable_list(grads.begin(), grads.end());
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list) {
    throw Error("double backward through this aotgrad compiled function is not supported: " +
                ctx->saved_data["why"].toStringRef() + "; compute higher derivatives eagerly");
  }
};

// Function<T>::apply with CompiledFunctionBackward as the node (libtorch names a CppNode after
// its C++ type) and the forward's non-differentiable outputs passed on directly.
torch::autograd::variable_list apply_compiled(int64_t id,
                                              std::shared_ptr<CompiledFunction::State> state,
                                              at::TensorList inputs) {
  using namespace torch::autograd;
  RECORD_FUNCTION("CompiledFunction", std::vector<c10::IValue>());
  std::shared_ptr<CompiledFunctionBackward> node(new CompiledFunctionBackward(), deleteNode);
  variable_list input_vars(inputs.begin(), inputs.end());
  node->is_variable_input_ = {false, false};  // id, state
  node->is_variable_input_.resize(2 + input_vars.size(), true);
  bool is_executable = GradMode::is_enabled() && any_variable_requires_grad(input_vars);
  node->set_ctx_grad_fn(node);
  node->set_next_edges(is_executable ? collect_next_edges(input_vars) : edge_list());
  node->clear_input_metadata();
  node->input_info_.reserve(input_vars.size());
  for (const Variable& v : input_vars) node->input_info_.emplace_back(v);
  std::unordered_set<at::TensorImpl*> non_diff;
  variable_list outputs;
  {
    AutoGradMode grad_mode(false);
    outputs = CompiledAutogradFunction::forward(&node->ctx_, id, std::move(state), inputs, non_diff,
                                                /*keep_inputs=*/is_executable);
  }
  _jvp_fn_t jvp_fn = [](variable_list, variable_list) -> variable_list {
    throw Error("forward-mode AD (jvp) through an aotgrad compiled function is not supported");
  };
  // What Function<T>::apply passes: no tensor saved in setup_context, a view of an input returned
  // as is is made a view of itself, not a pure view.
  _view_as_self_fn_t view_as_self = [](const at::Tensor& x) { return x.view_as(x); };
  auto wrapped = _wrap_outputs(input_vars, non_diff, {}, to_optional(outputs),
                               is_executable ? node : nullptr, jvp_fn, {}, view_as_self,
                               /*pure_view=*/false);
  variable_list result;
  result.reserve(wrapped.size());
  for (auto& out : wrapped) {
    if (is_executable)
      node->output_info_.emplace_back(out.has_value() ? VariableInfo(*out) : VariableInfo());
    result.push_back(out.has_value() ? *out : Variable());
  }
  if (is_executable) node->save_variables_to_ctx();
  return result;
}

}  // namespace

torch::autograd::variable_list CompiledAutogradFunction::guard_double_backward(
    torch::autograd::variable_list g, const std::string& why,
    const std::vector<at::Tensor>& inputs) {
  std::vector<size_t> defined;
  std::vector<at::Tensor> values;
  for (size_t k = 0; k < g.size(); ++k)
    if (g[k].defined()) {
      defined.push_back(k);
      values.push_back(g[k]);
    }
  if (values.empty()) return g;
  at::Tensor anchor = at::empty({0}).requires_grad_();
  torch::autograd::variable_list guarded = DoubleBackwardGuard::apply(
      anchor, at::TensorList(values),
      why.empty() ? std::string("its backward is not differentiable") : why,
      at::TensorList(inputs));
  for (size_t i = 0; i < defined.size(); ++i) g[defined[i]] = guarded[i];
  return g;
}

// Note [Double backward]
// A backward run with create_graph (a Hessian-vector product, a gradient penalty, a MAML step)
// must return grads that are differentiable functions of the primals and the incoming gradients.
// The compiled backward is not one: it reads values the forward saved without autograd. Such a
// backward runs instead the joint graph's gradient part, `(primals, tangents) -> grads`, as a
// compiled function of its own (a CompiledFunction: functionalized, differentiated and
// partitioned, compiled on the first double backward and kept per requires_grad of its
// inputs), on the forward's own inputs, which the node keeps, and on the incoming gradients. Its
// grads carry that function's backward node, so differentiating them again is exact; a third
// order nests the same way. What cannot be recomputed from the inputs is an Error naming it: an
// input written since the forward (by the function's write-back or by the caller), random ops (a
// recompute would draw other numbers), effects. PyTorch's torch.compile raises for every double
// backward.
namespace {

DifferentiableBackward make_differentiable(const CompiledFunction::State& state) {
  std::shared_ptr<const Graph> joint = state.art.joint;
  size_t num_forward_outputs = state.art.joint_info.num_forward_outputs;
  if (!joint) {  // a compile-cache hit keeps no joint graph: compile again without the cache
    CompileOptions o = state.options.pipeline;
    o.cache_dir = "off";
    TrainingArtifacts a = compile_for_training(*state.graph, state.requires_grad, o);
    joint = a.joint;
    num_forward_outputs = a.joint_info.num_forward_outputs;
  }
  AOTGRAD_CHECK(joint, "double backward: the compilation kept no joint graph to differentiate");
  DifferentiableBackward d;
  for (const Node* n : joint->nodes())
    if (n->kind() == NodeKind::Call && n->op()->has_tag(kRandom)) {
      d.unsupported = "it has random ops (" + n->describe() +
                      "): its backward would be recomputed with other random numbers";
      return d;
    }
  std::unique_ptr<Graph> g = joint->clone();
  // The backward reads a saved result through detach(detach(result)), as PyTorch's joint graphs
  // do (GradBuilder::result marks them): the value, without its history. Differentiated again,
  // the gradient through that result (tanh_backward's `output`) must flow, so those detaches read
  // the result itself. A detach of the user's own stays a detach; since a pass could have merged
  // it with a marked one, a function with one is not differentiated twice (never a gradient
  // silently missing or silently added).
  std::vector<Node*> detaches;
  for (Node* n : g->nodes()) {
    if (n->kind() != NodeKind::Call || n->op()->name != "aten::detach") continue;
    if (!n->info().is_backward) {
      d.unsupported = "it detaches a value itself (" + n->describe() +
                      "), which a second derivative cannot tell from the backward's own detaches";
      return d;
    }
    detaches.push_back(n);
  }
  for (Node* n : detaches) g->replace_all_uses_with(n, n->arg(0).node);
  const std::vector<Arg> outs = g->output()->args()[0].list;
  std::vector<Arg> grads;
  for (size_t j = num_forward_outputs; j < outs.size(); ++j)
    if (outs[j].is_node()) {
      grads.push_back(outs[j]);
      d.grad_of.push_back(j - num_forward_outputs);
    }
  g->set_output(Arg::of_tuple(std::move(grads)));
  eliminate_dead_code(*g);
  verify(*g);
  d.graph = std::move(g);
  return d;
}

}  // namespace

std::optional<torch::autograd::variable_list> CompiledAutogradFunction::differentiable_backward(
    torch::autograd::AutogradContext* ctx, CompiledFunction::State& state,
    const torch::autograd::variable_list& grad_outputs, std::string* unsupported) {
  auto it = ctx->saved_data.find("inputs");
  if (it == ctx->saved_data.end()) return std::nullopt;
  c10::List<at::Tensor> kept = it->second.toTensorList();
  c10::List<int64_t> versions = ctx->saved_data.at("input_versions").toIntList();
  std::vector<at::Tensor> args(kept.begin(), kept.end());
  std::vector<at::Tensor> tangent_values = tangents(ctx, state, grad_outputs);
  bool any = false;
  for (const at::Tensor& t : args) any = any || (t.defined() && t.requires_grad());
  for (const at::Tensor& t : tangent_values) any = any || t.requires_grad();
  if (!any) return std::nullopt;  // nothing to differentiate: the compiled backward does
  // What cannot be recomputed from the inputs: the compiled backward runs, and its grads' own
  // backward raises naming it (guard_double_backward).
  const ViewAndMutationMeta& meta = state.art.meta;
  if (meta.num_tokens != 0) {
    *unsupported = "it has effects (effect tokens)";
    return std::nullopt;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (i < meta.inputs.size() &&
        (meta.inputs[i].mutates_data || meta.inputs[i].mutates_metadata)) {
      *unsupported = "it writes its argument " + std::to_string(i) +
                     " in place: its backward would be recomputed from the written value";
      return std::nullopt;
    }
    if (args[i].defined() && static_cast<int64_t>(args[i]._version()) != versions.get(i)) {
      *unsupported = "its argument " + std::to_string(i) +
                     " has been modified by an inplace operation since the forward (version " +
                     std::to_string(args[i]._version()) + ", expected " +
                     std::to_string(versions.get(i)) + "): its backward cannot be recomputed";
      return std::nullopt;
    }
  }
  std::vector<bool> requires_grad;
  for (const at::Tensor& t : args) requires_grad.push_back(t.requires_grad());
  for (const at::Tensor& t : tangent_values) requires_grad.push_back(t.requires_grad());
  std::shared_ptr<CompiledFunction> fn;
  {
    std::lock_guard<std::mutex> lock(state.double_mu);
    if (!state.differentiable) state.differentiable = make_differentiable(state);
    if (!state.differentiable->unsupported.empty()) {
      *unsupported = state.differentiable->unsupported;
      return std::nullopt;
    }
    if (auto failed = state.double_backward_errors.find(requires_grad);
        failed != state.double_backward_errors.end()) {
      *unsupported = failed->second;
      return std::nullopt;
    }
    std::shared_ptr<CompiledFunction>& slot = state.double_backward[requires_grad];
    if (!slot) {
      TrainOptions o = state.options;
      o.fw_compiler = o.bw_compiler = nullptr;  // the interpreter
      try {
        slot = std::make_shared<CompiledFunction>(state.differentiable->graph, requires_grad, o);
      } catch (const Error& e) {  // an op of the backward without a derivative rule, ...
        state.double_backward.erase(requires_grad);
        *unsupported = state.double_backward_errors[requires_grad] =
            "its backward cannot be differentiated: " + e.message();
        return std::nullopt;
      }
    }
    fn = slot;
  }
  std::vector<at::Tensor> in = args;
  in.insert(in.end(), tangent_values.begin(), tangent_values.end());
  std::vector<at::Tensor> grads = (*fn)(in);
  torch::autograd::variable_list result(2 + args.size());  // id and state first
  const std::vector<size_t>& grad_of = state.differentiable->grad_of;
  AOTGRAD_CHECK(grads.size() == grad_of.size(), "double backward: ", grads.size(),
                " gradients for ", grad_of.size(), " outputs");
  for (size_t o = 0; o < grads.size(); ++o)
    if (grad_of[o] < args.size()) result[2 + grad_of[o]] = grads[o];
  release_inputs(ctx);
  return result;
}

CompiledFunction::CompiledFunction(std::shared_ptr<const Graph> graph,
                                   std::vector<bool> requires_grad, TrainOptions options)
    : state_(std::make_shared<State>()) {
  register_compat_ops();
  if (!options.fw_compiler) options.fw_compiler = default_compiler();
  if (!options.bw_compiler) options.bw_compiler = default_compiler();
  state_->requires_grad = requires_grad;
  state_->graph = graph;
  state_->options = options;
  state_->debug_assert = options.debug_assert;
  {
    std::lock_guard<std::mutex> lock(g_registry_mu);
    state_->id = g_next_id++;
    registry()[state_->id] = state_;
  }
  auto symbols = std::make_unique<SymbolBinder>(*graph);  // unbound symbols: before compiling
  if (!symbols->empty()) state_->symbols = std::move(symbols);
  state_->art = compile_for_training(*graph, requires_grad, options.pipeline);
  state_->cache_hit = state_->art.cache_hit;
  const auto num_tokens = static_cast<size_t>(state_->art.meta.num_tokens);
  state_->fw = compile_forward(*options.fw_compiler, state_->art.fw, state_->art.meta);
  state_->bw = options.bw_compiler->compile(state_->art.bw);
  OutputAliasing aliasing;
  aliasing.meta = state_->art.meta;
  aliasing.output_is_arg = outputs_that_are_args(*graph);
  aliasing.input_views = compile_input_views(state_->art.input_views);
  std::vector<Arg> outs;
  const Arg& out = state_->art.fw->output()->args()[0];
  AOTGRAD_CHECK(state_->art.num_forward_outputs >= num_tokens, "the forward returns ",
                state_->art.num_forward_outputs, " outputs, fewer than its ", num_tokens,
                " effect tokens");
  state_->num_outputs = state_->art.num_forward_outputs - num_tokens;
  const std::vector<int>& tangent_of = state_->art.joint_info.tangent_of_output;
  state_->tangent_of_output.assign(tangent_of.begin() + static_cast<int64_t>(num_tokens),
                                   tangent_of.end());
  const std::vector<bool>& leaf = state_->art.joint_info.leaf_output;
  if (leaf.size() == tangent_of.size())
    aliasing.leaf_output.assign(leaf.begin() + static_cast<int64_t>(num_tokens), leaf.end());
  aliasing.leaf_output.resize(state_->tangent_of_output.size(), false);
  state_->runtime = RuntimeWrapper(std::move(aliasing));
  for (size_t k = num_tokens; k < state_->art.num_forward_outputs; ++k) {
    const Arg& a = out.list[k];
    state_->output_metas.push_back(a.is_node() && a.node->meta().is_tensor() ? a.node->meta().tensor
                                                                             : TensorMeta{});
    for (const SymInt& d : state_->output_metas.back().sizes)
      state_->symbolic_outputs = state_->symbolic_outputs || !d.is_concrete();
  }
}

CompiledFunction::~CompiledFunction() {
  std::lock_guard<std::mutex> lock(g_registry_mu);
  registry().erase(state_->id);
}

const TrainingArtifacts& CompiledFunction::artifacts() const { return state_->art; }

bool CompiledFunction::cache_hit() const { return state_->cache_hit; }

std::vector<at::Tensor> CompiledFunction::operator()(const std::vector<at::Tensor>& args) {
  check_compiled_requires_grad(args, state_->requires_grad, state_->debug_assert);  // DebugAssert
  if (state_->symbols)  // errors name the user's inputs, not the compiled graphs' primals_N
    state_->symbols->check([&](int input, int dim) {
      const at::Tensor& t = args[input];
      return dim < t.dim() ? t.size(dim) : int64_t{-1};
    });
  // R3 around R4: passed as a TensorList so that autograd sees every tensor as an input with an
  // edge.
  return state_->runtime.training(args, [this](const std::vector<at::Tensor>& in) {
    return apply_compiled(state_->id, state_, at::TensorList(in));
  });
}

}  // namespace aotgrad
