// aotgrad: the functionalization pass (mutations and views to a pure graph).
#include "aotgrad/transforms/functionalize.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "aotgrad/ir/error.h"
#include "aotgrad/ops/functionalization.h"
#include "aotgrad/ops/known_ops.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {

// Note [Functionalization]
// Every tensor value of the input graph becomes a FunctionalValue: the storage it lives in, the
// chain of view ops that derives it from the storage's base, and the node of the functional graph
// that currently holds its value. A write (an in-place op on a value) computes the new value with
// the op's functional variant, then folds it back into the storage's base by applying the inverse
// of each view in the chain, innermost first (slice_scatter for slice, select_scatter for select,
// view back to the base's shape for view, ...), and bumps the storage's generation. A value whose
// generation is behind its storage's is stale: the next read replays its view chain from the
// updated base, as FunctionalTensorWrapper::sync_() does in PyTorch. Metadata mutations (t_,
// transpose_, as_strided_, ...) append their view to the value's chain; as_strided, whose geometry
// is absolute in the storage, replaces the chain. x[i] taken twice from one split is one value. An
// in-place op's new value keeps its argument's dtype, and copy_ becomes a fresh tensor laid out as
// its destination, so an input's new base has the input's layout. At the end, inputs whose
// storage was written (or whose metadata changed) are returned first, or, with
// keep_input_mutations, copied back by a trailing copy_. Dead views are removed by DCE. Effectful
// calls thread an effect token (Note [Effect tokens] in src/ops/higher_order_ops.cc).

namespace {

struct ViewStep {
  const OpDef* op = nullptr;
  std::vector<Arg>
      args;  // bound args in the functional graph; args[0] (self) is replaced on replay
  uint64_t given = 0;
  int64_t element = -1;          // for list-returning views (split, unbind): the element taken
  const Node* source = nullptr;  // the input graph's view call: a detach's identity
  bool moved = false;  // a detach put before an absolute view, away from its place in the chain
};

// A detach() of the program: a new tensor for autograd over the same storage (Note [Writes
// through detach]). Not the detach the capture reads a no_grad value through: that one stands
// for the value itself, without its history (Note [Values made under no_grad]).
bool hides_history(const ViewStep& s) {
  return s.op->non_differentiable && !(s.source && s.source->info().no_grad_read);
}

// The chain an absolute view (as_strided) of a value with chain `chain` starts from: its geometry
// is absolute in the storage, but a detach on the way stays (first): a view of a detach is not
// differentiable, replayed or not.
std::vector<ViewStep> absolute_view_prefix(const std::vector<ViewStep>& chain) {
  for (size_t i = 0; i < chain.size(); ++i)
    if (chain[i].op->non_differentiable) {
      ViewStep s = chain[i];
      s.moved = i != 0;
      return {s};
    }
  return {};
}

struct Storage {
  Node* base = nullptr;         // current value of the whole storage in the functional graph
  Node* placeholder = nullptr;  // the functional graph's placeholder, for graph inputs
  int input = -1;               // graph input index, or -1 for intermediates
  int64_t generation = 0;
  bool written = false;
  bool written_visibly =
      false;  // by a write autograd sees (InputInfo::mutations_hidden_from_autograd)
};

struct FunctionalValue {
  std::shared_ptr<Storage> storage;
  std::vector<ViewStep> chain;
  // Every view eager took to reach the value, in order: as_strided does not replace those before
  // it. The runtime replays these on the caller's tensor, so that autograd sees the output view
  // as eagerly (an as_strided's backward drops what lies outside its operand's elements).
  std::vector<ViewStep> taken;
  Node* node = nullptr;  // current value (valid when generation == storage->generation)
  int64_t generation = 0;
  // The storage generation at which eager's autograd last set the view's grad_fn: when it was
  // taken, or written through itself visibly. Behind the storage's, autograd regenerates it as an
  // as_strided of the view's base (OutputInfo::grad_fn_from_base).
  int64_t grad_fn_generation = 0;
  bool metadata_mutated = false;
};
using FValuePtr = std::shared_ptr<FunctionalValue>;

// Whether a view taken through `taken`, its grad_fn regenerated as an as_strided of its base, has
// another backward: only when an as_strided among its views reaches storage its operand does not
// cover (its backward drops those elements). Not for views through a detach, which have no base
// with history.
bool regenerated_grad_fn_differs(const std::vector<ViewStep>& taken) {
  bool absolute = false;
  for (const ViewStep& s : taken) {
    if (s.op->non_differentiable) return false;
    absolute = absolute || s.op->absolute_view;
  }
  return absolute;
}

// A list of views (split, unbind) whose elements are taken by getitem.
struct ViewList {
  std::shared_ptr<Storage> storage;
  std::vector<ViewStep> chain;  // the split value's chain when it was split
  std::vector<ViewStep> taken;  // and its FunctionalValue::taken
  ViewStep step;
  Node* node = nullptr;    // the list in the functional graph
  int64_t generation = 0;  // the storage generation `node` was computed at
};

class Functionalizer {
 public:
  Functionalizer(const Graph& in, const FunctionalizeOptions& opts)
      : in_(in),
        opts_(opts),
        ops_(aten_ops()),
        out_(std::make_unique<Graph>()),
        views_(std::make_unique<Graph>()) {}

  FunctionalizeResult run() {
    out_->signature = in_.signature;
    // An effectful call anywhere: the graph takes an effect token first (Note [Effect tokens]).
    for (const Node* n : in_.nodes())
      if (n->kind() == NodeKind::Call && needs_token(*n->op())) {
        std::string name = opts_.input_name ? opts_.input_name(0) : out_->unique_name("token");
        token_ = out_->add_placeholder(name, ValueMeta::of(effect_token_meta()));
        meta_.num_tokens = 1;
        break;
      }
    size_t input_index = 0;
    for (const Node* n : in_.nodes()) {
      try {
        switch (n->kind()) {
          case NodeKind::Placeholder: placeholder(n, input_index++); break;
          case NodeKind::GetItem: getitem(n); break;
          case NodeKind::Call: call(n); break;
          case NodeKind::Output: output(n); break;
        }
      } catch (const Error& e) {
        if (n->kind() == NodeKind::Output || e.message().rfind("node '", 0) == 0) throw;
        throw Error(n->describe() + ": " + e.message(), n->info().loc);
      }
      inherit_recompute(n);
    }
    eliminate_dead_code(*out_);
    views_->set_output(Arg::of_tuple(std::move(view_outputs_)));
    eliminate_dead_code(*views_);
    FunctionalizeResult r;
    r.graph = std::move(out_);
    r.meta = std::move(meta_);
    r.input_views = std::move(views_);
    return r;
  }

 private:
  // The nodes made for `n` (appended since the last call) carry its recompute policy: what a
  // checkpointed node becomes is in the same checkpointed region (§13.25).
  void inherit_recompute(const Node* n) {
    Node* next = last_made_ ? last_made_->next() : *out_->nodes().begin();
    for (; next; next = next->next()) {
      if (n->info().recompute != RecomputePolicy::None)
        next->info().recompute = n->info().recompute;
      last_made_ = next;
    }
  }

  // --- values ------------------------------------------------------------------------------------

  // Note [Views of a value made under no_grad, written]
  // ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
  // A value made under no_grad, read with grad mode on, is read through the capture's detach
  // (NodeInfo::no_grad_read), the first step of its views' chains. Once its storage is written
  // with grad mode on, eagerly the value has the write's history, and so have its views taken
  // before the write: autograd regenerates their grad_fn from the base's. Replayed from the
  // storage's new base -- which reads the old value through that detach, so no gradient reaches
  // what computed it -- they go without the detach.
  // So too a value made under no_grad as a detach() of the program, once written through that
  // detach (its root, Note [Writes through detach]).
  std::vector<ViewStep> live_chain(const FunctionalValue& v) const {
    std::vector<ViewStep> out;
    for (size_t i = 0; i < v.chain.size(); ++i) {
      const ViewStep& s = v.chain[i];
      const bool no_grad_read = s.op->non_differentiable && s.source &&
                                s.source->info().no_grad_read &&
                                !s.source->info().no_grad_view_requires_grad;
      const bool written =
          i == 0 ? v.storage->written_visibly
                 : hides_history(v.chain[i - 1]) && roots_.count(v.chain[i - 1].source) > 0;
      if (!(no_grad_read && written)) out.push_back(s);
    }
    return out;
  }

  // The current functional node of a value, replaying its views if its storage was written.
  Node* sync(FunctionalValue& v) {
    if (v.node && v.generation == v.storage->generation) return v.node;
    const std::vector<ViewStep> chain = live_chain(v);
    v.node = replay(chain, v.storage->base, chain.size());
    v.generation = v.storage->generation;
    return v.node;
  }

  Node* apply_step(const ViewStep& s, Node* self) {
    std::vector<Arg> args = s.args;
    args[0] = Arg(self);
    Node* n = out_->add_call_raw(*s.op, args, s.given, infer_meta(*s.op, args), "");
    if (s.source)
      n->info().no_grad_view_requires_grad = s.source->info().no_grad_view_requires_grad;
    if (s.element >= 0) n = out_->add_getitem(n, s.element);
    return n;
  }

  // Replays `chain` on input `input` in the views graph and returns the output index, or -1 when
  // a step's arguments are values of the functional graph or the replay is rejected.
  int input_view(const std::vector<ViewStep>& chain, int input) {
    Node* cur = view_inputs_.at(input);
    try {
      for (const ViewStep& s : chain) {
        bool symbolic = false;
        for (size_t i = 1; i < s.args.size(); ++i)
          s.args[i].for_each_node([&](Node*) { symbolic = true; });
        if (symbolic) return -1;
        std::vector<Arg> args = s.args;
        args[0] = Arg(cur);
        ValueMeta meta = infer_meta(*s.op, args);
        cur = views_->add_call_raw(*s.op, std::move(args), s.given, std::move(meta), "");
        if (s.element >= 0) cur = views_->add_getitem(cur, s.element);
      }
    } catch (const Error&) {
      return -1;  // dead nodes left behind are removed by DCE
    }
    view_outputs_.push_back(Arg(cur));
    return static_cast<int>(view_outputs_.size()) - 1;
  }

  // Applies the first `count` steps of `chain` to `base`.
  Node* replay(const std::vector<ViewStep>& chain, Node* base, size_t count) {
    Node* cur = base;
    for (size_t i = 0; i < count; ++i) cur = after_step(chain[i], apply_step(chain[i], cur), base);
    return cur;
  }

  // Note [Writes through detach]
  // ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
  // Eagerly, `d = y.detach(); d.mul_(x)` writes y's storage, but autograd does not see the write
  // through y: y keeps its history, with the new values. d, a tensor of its own for autograd,
  // gets the write's history, and so do the views of d, taken before the write or after. PyTorch's
  // AOTAutograd gets this from autograd running above functionalization. Here the graph says it:
  // writing through a detach step puts values_with_history(values, old) into the
  // detach's input: the write's values, exactly, with old's gradient;
  // the value written at the detach's output becomes that detach's root (roots_, keyed by the
  // detach call), and each later read of a value through that detach is values_with_history(its
  // replayed values, root). A value read through a detach never written has no root: it is the
  // plain replay, without history. A detach moved before an absolute view has no level of its own
  // to hold a root: such a write is refused.
  // The value after view step `s` (`raw`, its replay from the storage's `base`), with the root of
  // a written detach.
  Node* after_step(const ViewStep& s, Node* raw, Node* base) {
    if (!hides_history(s)) return raw;
    auto it = roots_.find(s.source);
    if (it == roots_.end()) return raw;
    if (s.moved || it->second->tensor_meta().sizes != raw->tensor_meta().sizes)
      throw Error(
          "a tensor written through detach() is viewed again through as_strided, which takes "
          "the view from the storage's base, outside the detach: not supported");
    // One node per detach and storage base: the values read through it are views of one tensor,
    // and alias each other as eagerly.
    auto key = std::make_pair(s.source, base);
    auto [cached, fresh] = blends_.try_emplace(key, nullptr);
    if (fresh) cached->second = values_with_history(*out_, raw, it->second);
    return cached->second;
  }

  // The written detach whose root the value `v` is read with (the innermost), or null.
  const Node* root_of(const FunctionalValue& v) const {
    for (size_t i = v.chain.size(); i-- > 0;)
      if (hides_history(v.chain[i]) && roots_.count(v.chain[i].source)) return v.chain[i].source;
    return nullptr;
  }

  // The functional graph's Arg for an input graph's Arg (tensor values synced).
  Arg map_arg(const Arg& a) {
    if (a.is_list()) {
      Arg out = a;
      for (auto& e : out.list) e = map_arg(e);
      return out;
    }
    if (!a.is_node()) return a;
    if (auto it = values_.find(a.node); it != values_.end()) return Arg(sync(*it->second));
    if (auto it = plain_.find(a.node); it != plain_.end()) return Arg(it->second);
    if (lists_.count(a.node))
      throw Error("a list of views ('" + a.node->name() + "') used other than through getitem");
    throw Error("'" + a.node->name() + "' has no functional value");
  }

  FValuePtr value_of(const Arg& a, const std::string& what) {
    if (a.is_node())
      if (auto it = values_.find(a.node); it != values_.end()) return it->second;
    throw Error(what + " is not a tensor value");
  }

  // A call with bound arguments copied from an input-graph node (same given mask).
  Node* call_op(const OpDef& op, std::vector<Arg> args, uint64_t given) {
    ValueMeta meta = infer_meta(op, args);
    return out_->add_call_raw(op, std::move(args), given, std::move(meta), "");
  }

  // A new call from positional arguments; trailing ones equal to their defaults are left out, as
  // PyTorch's dispatcher leaves them out of traced graphs.
  Node* emit(const OpDef& op, std::vector<Arg> args) {
    const auto& sargs = op.schema.args;
    while (!args.empty() && args.size() <= sargs.size() && sargs[args.size() - 1].has_default &&
           default_arg(sargs[args.size() - 1]) == args.back())
      args.pop_back();
    return out_->add_call(op, std::move(args));
  }

  // --- nodes -------------------------------------------------------------------------------------

  void placeholder(const Node* n, size_t index) {
    std::string name = opts_.input_name
                           ? opts_.input_name(index + static_cast<size_t>(meta_.num_tokens))
                           : n->name();
    Node* ph = out_->add_placeholder(name, n->meta());
    view_inputs_.push_back(views_->add_placeholder(name, n->meta()));
    meta_.inputs.push_back(InputInfo{});
    meta_.inputs.back().requires_grad = n->meta().is_tensor() && n->meta().tensor.requires_grad;
    if (!n->meta().is_tensor()) {
      plain_[n] = ph;
      return;
    }
    auto storage = std::make_shared<Storage>();
    storage->base = ph;
    storage->placeholder = ph;
    storage->input = static_cast<int>(index);
    auto v = std::make_shared<FunctionalValue>();
    v->storage = storage;
    v->node = ph;
    values_[n] = v;
    input_values_.push_back(v);
  }

  void getitem(const Node* n) {
    const Node* src = n->getitem_input();
    // x[i] twice is one tensor (FX reuses the object): a mutation through one is seen by the other.
    auto key = std::make_pair(src, n->getitem_index());
    if (auto it = items_.find(key); it != items_.end()) {
      values_[n] = it->second;
      return;
    }
    if (auto it = lists_.find(src); it != lists_.end()) {
      ViewList& list = *it->second;
      auto v = std::make_shared<FunctionalValue>();
      v->storage = list.storage;
      v->chain = list.chain;
      v->taken = list.taken;
      ViewStep step = list.step;
      step.element = n->getitem_index();
      v->chain.push_back(step);
      v->taken.push_back(step);
      v->node = out_->add_getitem(list.node, n->getitem_index());
      // If the storage was written since the split, the element is stale: sync() replays it.
      v->generation = list.generation;
      v->grad_fn_generation = list.generation;
      values_[n] = v;
      items_[key] = v;
      return;
    }
    auto it = plain_.find(src);
    AOTGRAD_CHECK(it != plain_.end(), "getitem of '", src->name(),
                  "' which has no functional value");
    Node* item = out_->add_getitem(it->second, n->getitem_index());
    fresh(n, item);
    if (auto v = values_.find(n); v != values_.end()) items_[key] = v->second;
  }

  // Registers a fresh (non-aliasing) result: tensors get their own storage.
  void fresh(const Node* n, Node* result) {
    if (!result->meta().is_tensor()) {
      plain_[n] = result;
      return;
    }
    auto storage = std::make_shared<Storage>();
    storage->base = result;
    auto v = std::make_shared<FunctionalValue>();
    v->storage = storage;
    v->node = result;
    values_[n] = v;
  }

  // An effectful op that is not yet with_effects: its calls thread the token.
  static bool needs_token(const OpDef& op) { return is_effectful(op) && !op.wrapped; }

  // with_effects(token, op, *args): the current token in, the next one out (getitem 0), the op's
  // results after it (Note [Effect tokens]).
  void effectful_call(const Node* n) {
    const OpDef& op = *n->op();
    const OpDef& hop = ops_.higher_order(kWithEffects, op);
    std::vector<Arg> args{Arg(token_), Arg::of_op(op)};
    for (auto& a : n->args()) args.push_back(map_arg(a));
    uint64_t given = n->given_mask() << 2 | 3u;
    Node* call = call_op(hop, std::move(args), given);
    token_ = out_->add_getitem(call, 0);
    const size_t returns = op.schema.returns.size();
    if (returns == 0) {
      // PyTorch's with_effects gives (token, None) here; its getitem of the None is dropped, but
      // its name is taken (with_effects[0] is `getitem`, the next call's `getitem_2`).
      out_->claim_name(out_->unique_name("getitem"));
      plain_[n] = call;
      return;
    }
    if (returns == 1) return fresh(n, out_->add_getitem(call, 1));
    for (size_t k = 0; k < returns; ++k) {
      Node* item = out_->add_getitem(call, static_cast<int64_t>(k + 1));
      if (!item->meta().is_tensor())
        throw Error("effectful op " + op.name + " returns a non-tensor result among several");
      auto storage = std::make_shared<Storage>();
      storage->base = item;
      auto v = std::make_shared<FunctionalValue>();
      v->storage = storage;
      v->node = item;
      items_[std::make_pair(n, static_cast<int64_t>(k))] = v;
    }
    plain_[n] = call;
  }

  void call(const Node* n) {
    const OpDef& op = *n->op();
    if (needs_token(op)) return effectful_call(n);
    if (op.has_tag(kView) && op.has_tag(kInplace)) return metadata_mutation(n);
    std::vector<int> written = op.written_args(n->args());
    if (!written.empty()) return data_mutation(n, written);
    int aliased = op.return_alias_of(0);
    if (aliased >= 0) return view(n, aliased);
    std::vector<Arg> args;
    args.reserve(n->args().size());
    for (auto& a : n->args())
      args.push_back(a.kind == Arg::Kind::Graph ? functional_subgraph(a) : map_arg(a));
    if (op.has_tag(kDynamicOutputShape)) {  // Note [Recorded sizes]: kept when not inferred
      ValueMeta meta;
      try {
        meta = infer_meta(op, args);
      } catch (const Error&) {
        meta = n->meta();
      }
      return fresh(n, out_->add_call_raw(op, std::move(args), n->given_mask(), meta, ""));
    }
    fresh(n, call_op(op, std::move(args), n->given_mask()));
  }

  // A subgraph argument (cond's branch) functionalized on its own, as PyTorch's cond functionalizes
  // each branch: writes to its intermediates become functional; its inputs it never writes (the
  // cond's meta function rejects a branch that does). The same graph when it mutates nothing.
  Arg functional_subgraph(const Arg& a) {
    bool mutates = false;
    for (const Node* m : a.graph->nodes())
      if (m->kind() == NodeKind::Call)
        mutates = mutates || !m->op()->written_args(m->args()).empty() ||
                  (m->op()->has_tag(kView) && m->op()->has_tag(kInplace));
    if (!mutates) return a;
    FunctionalizeResult r = functionalize(*a.graph);
    if (!r.meta.mutated_inputs_returned.empty() || r.meta.num_tokens != 0)
      throw Error("subgraph " + a.str +
                  " mutates its inputs or has effects, which a cond branch "
                  "cannot");
    return Arg::of_graph(a.str, std::shared_ptr<const Graph>(std::move(r.graph)));
  }

  void view(const Node* n, int aliased) {
    const OpDef& op = *n->op();
    FValuePtr src = value_of(n->args()[aliased], "the viewed argument");
    AOTGRAD_CHECK(aliased == 0, "view op ", op.name, " aliases argument ", aliased,
                  "; only views of their first argument are supported");
    ViewStep step;
    step.op = &op;
    step.source = n;
    step.given = n->given_mask();
    for (size_t i = 0; i < n->args().size(); ++i)
      step.args.push_back(i == 0 ? Arg() : map_arg(n->args()[i]));
    Node* self = sync(*src);
    std::vector<Arg> args = step.args;
    args[0] = Arg(self);
    Node* result = call_op(op, std::move(args), step.given);
    result->info().no_grad_view_requires_grad = n->info().no_grad_view_requires_grad;
    if (result->meta().kind == ValueMeta::Kind::Tuple) {  // split, unbind: a list of views
      auto list = std::make_shared<ViewList>();
      list->storage = src->storage;
      list->chain = src->chain;
      list->taken = src->taken;
      list->step = std::move(step);
      list->node = result;
      list->generation = src->storage->generation;
      lists_[n] = list;
      return;
    }
    auto v = std::make_shared<FunctionalValue>();
    v->storage = src->storage;
    // as_strided's sizes, strides and offset are absolute in the storage: it views the storage's
    // base, whatever view of it `src` is, and its scatter inverse writes into that base.
    v->chain = op.absolute_view ? absolute_view_prefix(src->chain) : src->chain;
    v->taken = src->taken;
    v->taken.push_back(step);
    v->chain.push_back(std::move(step));
    v->node = result;
    v->generation = src->storage->generation;
    v->grad_fn_generation = v->generation;
    values_[n] = v;
  }

  void metadata_mutation(const Node* n) {
    const OpDef& op = *n->op();
    AOTGRAD_CHECK(!op.functional_variant.empty(), op.name,
                  " mutates metadata but has no view variant");
    const OpDef& view_op = ops_.get(op.functional_variant);
    FValuePtr v = value_of(n->args()[0], "the mutated argument");
    ViewStep step;
    step.op = &view_op;
    step.source = n;
    step.given = n->given_mask();
    for (size_t i = 0; i < n->args().size(); ++i)
      step.args.push_back(i == 0 ? Arg() : map_arg(n->args()[i]));
    Node* self = sync(*v);
    v->node = apply_step(step, self);
    if (view_op.absolute_view) v->chain = absolute_view_prefix(v->chain);  // as in view()
    v->taken.push_back(step);
    v->chain.push_back(std::move(step));
    v->metadata_mutated = true;
    values_[n] = v;  // the in-place op returns its (mutated) argument
  }

  // An in-place call: its functional variant computes the new values (or the op's own
  // inplace_value, copy_'s), written into the storages of the written arguments.
  void data_mutation(const Node* n, const std::vector<int>& written) {
    writing_hidden_ = n->info().hidden_write;
    const OpDef& op = *n->op();
    std::vector<int> declared = op.mutated_args();
    if (op.inplace_value && declared.size() == 1) {
      // Arguments are read when the op's function asks for them (the order of view replays).
      InplaceValueBuilder b(*out_, op, [&](size_t i) { return map_arg(n->args().at(i)); });
      if (Node* value = op.inplace_value(b)) {
        FValuePtr v = value_of(n->args()[declared[0]], "the mutated argument");
        write(*v, cast_to(value, n->args()[declared[0]].node->tensor_meta().dtype));
        values_[n] = v;
        return;
      }
    }
    if (op.functional_variant.empty())
      throw Error("cannot functionalize " + op.name +
                  ": it mutates its inputs and has no functional variant");
    const OpDef& fop = ops_.get(op.functional_variant);
    // An out= op of several results (max.dim_max, sort.values) writes result k into its k-th
    // out, which getitem k of the call reads.
    if (declared.size() > 1 && (fop.schema.returns.size() != declared.size() ||
                                std::any_of(declared.begin(), declared.end(), [&](int i) {
                                  return fop.schema.arg_index(op.schema.args[i].name) >= 0;
                                })))
      throw Error("cannot functionalize " + op.name + ": it writes several arguments");
    auto [args, given] = functional_args(*n, fop);
    // Eagerly the in-place op's backward reaches the written view's old value through its base
    // (CopySlices), not through the view's own backward: for a view through an as_strided, whose
    // backward drops what lies outside its operand, the old value is read from the base.
    if (declared.size() == 1 && !n->args()[declared[0]].is_list()) {
      int j = fop.schema.arg_index(op.schema.args[static_cast<size_t>(declared[0])].name);
      FValuePtr v = value_of(n->args()[declared[0]], "the mutated argument");
      if (j >= 0 && regenerated_grad_fn_differs(v->taken)) {
        sync(*v);
        args[static_cast<size_t>(j)] = Arg(replay(v->chain, v->storage->base, v->chain.size()));
      }
    }
    Node* result = call_op(fop, std::move(args), given);
    if (declared.size() == 1 && n->args()[declared[0]].is_list()) {
      // A written Tensor[] (_foreach_add_(self, other) -> _foreach_add(self, other)): element k of
      // the functional variant's list is the new value of self[k].
      const Arg& targets = n->args()[declared[0]];
      for (size_t k = 0; k < targets.list.size(); ++k) {
        const Arg& target = targets.list[k];
        FValuePtr v = value_of(target, "element " + std::to_string(k) + " of the mutated list");
        Node* item = out_->add_getitem(result, static_cast<int64_t>(k));
        write(*v, cast_to(item, target.node->tensor_meta().dtype));
      }
      return;
    }
    if (op.derivative && declared.size() == 1) result->info().inplace_derivative = &op;
    if (!declared.empty()) {
      bool tuple = result->meta().kind == ValueMeta::Kind::Tuple;
      for (size_t k = 0; k < declared.size(); ++k) {
        // An out= op's value is written into `out` whatever its size was (the functional result
        // replaces it, as FunctionalTensorWrapper::replace_ does after the out= kernel's resize).
        const Arg& target = n->args()[declared[k]];
        FValuePtr v = value_of(target, "the mutated argument");
        Node* new_value = tuple ? out_->add_getitem(result, static_cast<int64_t>(k)) : result;
        // An in-place op keeps self's dtype (mul_ of f32 by f64 computes in f64 and stores f32);
        // the functional variant promotes. Cast back, as FunctionalTensorWrapper::replace_ does.
        write(*v, cast_to(new_value, target.node->tensor_meta().dtype));
        if (declared.size() == 1)
          values_[n] = v;  // the op returns its (written) argument
        else
          items_[std::make_pair(n, static_cast<int64_t>(k))] = v;
      }
      if (declared.size() > 1) plain_[n] = result;
      return;
    }
    // Undeclared mutations (native_batch_norm in training): the functional variant returns the
    // op's own results followed by the new value of each of them (those not written: None).
    size_t own = op.schema.returns.size();
    for (size_t k = 0; k < op.undeclared_mutations.size(); ++k) {
      int arg = op.undeclared_mutations[k];
      if (std::find(written.begin(), written.end(), arg) == written.end()) continue;
      FValuePtr v = value_of(n->args()[arg], "the mutated argument");
      write(*v, out_->add_getitem(result, static_cast<int64_t>(own + k)));
    }
    plain_[n] = result;  // getitems 0..own-1 of the original read the same results
  }

  // The arguments of in-place call `n` for its functional variant `fop`, matched by name
  // (polygamma_(self, n) -> polygamma(n, self)); an out= op's written `out` is left out.
  std::pair<std::vector<Arg>, uint64_t> functional_args(const Node& n, const OpDef& fop) {
    const FunctionSchema& from = n.op()->schema;
    std::vector<Arg> args;
    uint64_t given = 0;
    for (size_t j = 0; j < fop.schema.args.size(); ++j) {
      int i = from.arg_index(fop.schema.args[j].name);
      if (i < 0 || static_cast<size_t>(i) >= n.args().size())
        throw Error("cannot functionalize " + n.op()->name + ": its functional variant " +
                    fop.name + " takes argument '" + fop.schema.args[j].name +
                    "', which it has not");
      args.push_back(map_arg(n.args()[static_cast<size_t>(i)]));
      if (n.given_mask() >> i & 1) given |= 1ull << j;
    }
    return {std::move(args), given};
  }

  Node* cast_to(Node* value, ScalarType dtype) {
    if (value->tensor_meta().dtype == dtype) return value;
    return out_->add_call(ops::to_copy(), {Arg(value)}, {{"dtype", Arg::of_dtype(dtype)}});
  }

  // Writes `new_value` into value `v`: folds it into the storage's base through the view chain.
  void write(FunctionalValue& v, Node* new_value) {
    Storage& s = *v.storage;
    const std::vector<ViewStep> chain = live_chain(v);  // before this write makes it visible
    bool hidden = writing_hidden_;
    for (const ViewStep& step : chain) hidden = hidden || hides_history(step);
    s.written_visibly = s.written_visibly || !hidden;
    // The value may need to broadcast or cast (copy_ into a view): the functional variant already
    // produced v's shape and dtype.
    if (chain.empty()) {
      s.base = new_value;
    } else {
      std::vector<Node*> bases{s.base};  // bases[i]: the value before step i
      for (size_t i = 0; i + 1 < chain.size(); ++i)
        bases.push_back(after_step(chain[i], apply_step(chain[i], bases.back()), s.base));
      // Through a detach, the innermost one's output takes the write's history (its root), the
      // detach's input keeps its own (Note [Writes through detach]).
      bool innermost = true;
      Node* cur = new_value;
      for (size_t i = chain.size(); i-- > 0;) {
        const ViewStep& step = chain[i];
        if (!hides_history(step)) {
          cur = inverse(step, bases[i], cur);
          continue;
        }
        if (step.moved)
          throw Error(
              "a write through as_strided of a detach()ed view: as_strided views the "
              "storage's base, outside the detach, and the write's history has no tensor to "
              "go to: not supported");
        // Before it, the detach the capture reads a no_grad value through, after views: whether
        // the value before that has history eagerly (a view made under no_grad of a tensor with
        // history) or not (a view of a value computed under no_grad) the chain does not say. At
        // the chain's start it reads the storage's own value, computed under no_grad: none.
        for (size_t k = 1; k < i; ++k)
          if (chain[k].op->non_differentiable && !hides_history(chain[k]))
            throw Error(
                "a write through detach() of a value made under torch.no_grad: which history "
                "the written tensor keeps is not known here; not supported");
        if (innermost) roots_[step.source] = cur;
        innermost = false;
        cur = values_with_history(*out_, cur, bases[i]);
      }
      s.base = cur;
    }
    // Like FunctionalTensorWrapper::commit_update, the written value is not marked up to date: its
    // next read replays its views from the new base (so its strides are the view's again).
    ++s.generation;
    s.written = true;
    if (!hidden) v.grad_fn_generation = s.generation;
  }

  // The base after writing `value` into the view `step` of `base`: the view op's inverse.
  Node* inverse(const ViewStep& step, Node* base, Node* value) {
    const OpDef& op = *step.op;
    if (!op.view_inverse)
      throw Error("cannot functionalize a write through view op " + op.name +
                  ": it has no known inverse");
    ViewInverseBuilder b(*out_, op, step.args, step.element, base, value);
    return op.view_inverse(b);
  }

  void output(const Node* n) {
    // The final effect token first, then mutated inputs (in input order), then user outputs.
    std::vector<Arg> outs;
    if (token_) outs.push_back(Arg(token_));
    std::vector<std::pair<Node*, Node*>> copies;  // (placeholder, new value) for copy_ at the end
    for (size_t i = 0; i < input_values_.size(); ++i) {
      FunctionalValue& v = *input_values_[i];
      int idx = v.storage->input;
      InputInfo& info = meta_.inputs[idx];
      info.mutates_data = v.storage->written;
      info.mutations_hidden_from_autograd = v.storage->written && !v.storage->written_visibly;
      info.mutates_metadata = v.metadata_mutated;
      if (!info.mutates_data && !info.mutates_metadata) continue;
      // The runtime gives the input its new metadata, then copies the new value into it: elements
      // an as_strided_ leaves out of the final view would lose their writes.
      if (info.mutates_data && info.mutates_metadata)
        for (const ViewStep& step : v.chain)
          if (step.op->absolute_view)
            throw Error(
                "input " + std::to_string(idx) + " ('" + v.storage->placeholder->name() +
                "') is given new strides by as_strided_ and its data is written: not supported");
      Node* final_value = sync(v);
      if (info.mutates_metadata) info.view = input_view(v.chain, idx);
      if (opts_.keep_input_mutations && !info.mutates_metadata) {
        info.mutation_in_graph = true;
        copies.push_back({v.storage->placeholder, final_value});
      } else {
        outs.push_back(Arg(final_value));
        meta_.mutated_inputs_returned.push_back(idx);
      }
    }
    std::vector<Arg> user;
    flatten(n->args()[0], user);
    for (auto& a : user) outs.push_back(a);
    for (auto& [ph, value] : copies) emit(ops_.get(kWriteBackOp), {Arg(ph), Arg(value)});
    out_->set_output(Arg::of_tuple(std::move(outs)));
  }

  // Outputs read through a written detach are views of its root's node (after_step), a tensor
  // of its own: they alias each other, but not the outputs of their storage read otherwise, nor,
  // unless the runtime views the caller's input again, the input (Note [Writes through detach]).
  void check_output_aliases(const FunctionalValue& v, const OutputInfo& info, size_t index) {
    const Node* root = root_of(v);
    auto [first, fresh] = output_roots_.try_emplace(v.storage.get(), root, index);
    if (root && info.kind == OutputKind::kAliasOfInput && info.view < 0)
      throw Error("output " + std::to_string(index) + " is a view of input " +
                  std::to_string(info.input) +
                  " through a detach() the function writes, which aotgrad cannot view again "
                  "on the caller's tensor: not supported");
    if (!fresh && first->second.first != root && info.kind != OutputKind::kAliasOfInput)
      throw Error("outputs " + std::to_string(first->second.second) + " and " +
                  std::to_string(index) +
                  " share storage, and one is read through a detach() the function writes: "
                  "aotgrad would return them as tensors that do not alias, which is not "
                  "supported");
  }

  void flatten(const Arg& a, std::vector<Arg>& out) {
    if (a.is_list()) {
      for (auto& e : a.list) flatten(e, out);
      return;
    }
    OutputInfo info;
    if (a.is_none()) {
      info.kind = OutputKind::kNone;
      out.push_back(Arg());
    } else if (auto it = values_.find(a.node); a.is_node() && it != values_.end()) {
      FunctionalValue& v = *it->second;
      int input = v.storage->input;
      if (input >= 0) {
        bool same = std::find(input_values_.begin(), input_values_.end(), it->second) !=
                        input_values_.end() &&
                    !v.metadata_mutated;
        info.kind = same ? OutputKind::kIsInput : OutputKind::kAliasOfInput;
        info.input = input;
        if (!same && v.storage->written) info.view = input_view(v.taken, input);
        // Eagerly a leaf of its own, viewed further with grad mode on. Replayed on the caller's
        // tensor through the detach the capture reads it by, the view gets the graph value's
        // history by a write (view_with_history), which libtorch's backward of a later as_strided
        // reaching past the leaf cannot take.
        bool no_grad_leaf = false;
        for (const ViewStep& step : v.taken) {
          if (no_grad_leaf && step.op->absolute_view && info.view >= 0)
            throw Error("output " + std::to_string(meta_.outputs.size()) + " is as_strided of a " +
                        "view made under torch.no_grad of input " + std::to_string(input) +
                        " (which requires grad), and the function writes the input: not supported");
          no_grad_leaf =
              no_grad_leaf || (step.source && step.source->info().no_grad_view_requires_grad);
        }
        info.grad_fn_from_base = info.view >= 0 && v.grad_fn_generation != v.storage->generation &&
                                 regenerated_grad_fn_differs(v.taken);
      }
      check_output_aliases(v, info, meta_.outputs.size());
      out.push_back(Arg(sync(v)));
    } else {
      out.push_back(map_arg(a));
    }
    meta_.outputs.push_back(info);
  }

  const Graph& in_;
  const FunctionalizeOptions& opts_;
  const OpTable& ops_;
  std::unique_ptr<Graph> out_;
  std::unique_ptr<Graph> views_;    // FunctionalizeResult::input_views
  std::vector<Node*> view_inputs_;  // its placeholders
  std::vector<Arg> view_outputs_;
  ViewAndMutationMeta meta_;
  std::unordered_map<const Node*, FValuePtr> values_;
  std::unordered_map<const Node*, Node*> plain_;  // non-tensor values and tuples
  std::unordered_map<const Node*, std::shared_ptr<ViewList>> lists_;
  std::map<std::pair<const Node*, int64_t>, FValuePtr> items_;  // tensors taken by getitem
  std::vector<FValuePtr> input_values_;
  // The value at the output of each written detach call (Note [Writes through detach]).
  std::unordered_map<const Node*, Node*> roots_;
  std::map<std::pair<const Node*, const Node*>, Node*> blends_;  // (detach, base): after_step's
  // Per storage, the root the first output of it is read with, and that output's index.
  std::unordered_map<const Storage*, std::pair<const Node*, size_t>> output_roots_;
  Node* last_made_ = nullptr;  // the last node of out_ inherit_recompute has seen
  Node* token_ = nullptr;
  bool writing_hidden_ = false;  // the write data_mutation makes is NodeInfo::hidden_write      //
                                 // the current effect token (Note [Effect tokens]), if any
};

}  // namespace

FunctionalizeResult functionalize(const Graph& g, const FunctionalizeOptions& options) {
  return Functionalizer(g, options).run();
}

}  // namespace aotgrad
