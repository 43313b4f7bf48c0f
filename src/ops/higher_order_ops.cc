// aotgrad: the higher-order ops of torch/_prims/rng_prims.py that save and replay the generator,
// eager_backward, and with_effects (torch/_higher_order_ops/effects.py).
#include "aotgrad/ir/graph.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {

TensorMeta cpu_rng_state_meta() {
  return make_tensor_meta(ScalarType::UInt8, {SymInt(kCpuRngStateBytes)});
}

TensorMeta effect_token_meta() { return make_tensor_meta(ScalarType::Float32, {SymInt(0)}); }

namespace {

// The wrapped op's result for a call of a higher-order op: its meta function on the arguments
// after the op reference, which must name the op the OpDef was derived for.
// Throws unless the call's op reference names the op its OpDef was derived for.
void check_op_reference(const MetaArgs& a) {
  const OpDef& op = a.op();
  const Arg& ref = a.arg(static_cast<size_t>(op.wrapped_arg));
  if (ref.kind != Arg::Kind::Op || ref.op != op.wrapped)
    throw Error("argument 'op' must be " + arg_to_string(Arg::of_op(*op.wrapped)) + ", got " +
                arg_to_string(ref));
}

ValueMeta wrapped_meta(const MetaArgs& a) {
  check_op_reference(a);
  const OpDef& op = a.op();
  std::vector<Arg> args;
  args.reserve(a.size() - op.wrapped_arg - 1);
  for (size_t i = static_cast<size_t>(op.wrapped_arg) + 1; i < a.size(); ++i)
    args.push_back(a.arg(i));
  return infer_meta(*op.wrapped, args);
}

// run_and_save_rng_state(op, *args) -> (the generator's state before the call, op(*args)).
ValueMeta run_and_save_rng_state_meta(const MetaArgs& a) {
  return ValueMeta::tuple({ValueMeta::of(cpu_rng_state_meta()), wrapped_meta(a)});
}

// run_with_rng_state(rng_state, op, *args) -> op(*args), drawn from `rng_state`.
ValueMeta run_with_rng_state_meta(const MetaArgs& a) {
  const TensorMeta& state = a.tensor(0);
  if (state.dtype != ScalarType::UInt8 || state.dim() != 1 || state.device.type != DeviceType::CPU)
    throw Error("argument 'rng_state' must be a CPU generator state (u8[N]cpu), got " +
                state.annotation());
  return wrapped_meta(a);
}

SchemaArg unnamed_return(BaseType base) {
  SchemaArg r;
  r.type.base = base;
  return r;
}

void derive_run_and_save_rng_state(OpDef& op, const OpDef&) {
  op.schema.returns = {unnamed_return(BaseType::Tensor), unnamed_return(BaseType::Any)};
  // It advances the generator as the op does: never dropped unused, never merged with another.
  op.tags = kRandom | kNondeterministicSeeded;
  op.meta = run_and_save_rng_state_meta;
}

void derive_run_with_rng_state(OpDef& op, const OpDef& wrapped) {
  op.schema.returns = wrapped.schema.returns;
  for (SchemaArg& r : op.schema.returns) r.alias = {};
  // The generator is left as it was: a pure function of the state and the arguments.
  op.tags = 0;
  op.meta = run_with_rng_state_meta;
}

// eager_backward(grads, needs, op, *args) -> the gradients of the arguments at `needs`: each with
// its argument's dtype and sizes, contiguous.
ValueMeta eager_backward_meta(const MetaArgs& a) {
  check_op_reference(a);
  const OpDef& op = a.op();
  std::vector<ValueMeta> grads;
  size_t first = static_cast<size_t>(op.wrapped_arg) + 1;
  for (const SymInt& k : a.int_list(1)) {
    int64_t i = k.value();
    if (i < 0 || first + static_cast<size_t>(i) >= a.size() ||
        op.wrapped->schema.args[static_cast<size_t>(i)].type.base != BaseType::Tensor ||
        op.wrapped->schema.args[static_cast<size_t>(i)].type.list)
      throw Error("argument 'needs': " + std::to_string(i) + " is not a Tensor argument of " +
                  op.wrapped->name);
    TensorMeta m = a.tensor(first + static_cast<size_t>(i));
    m.strides = contiguous_strides(m.sizes);
    m.storage_offset = 0;
    m.requires_grad = false;
    grads.push_back(ValueMeta::of(m));
  }
  return ValueMeta::tuple(std::move(grads), /*is_list=*/true);
}

// Note [Effect tokens]
// An op with a side effect whose order matters (aten::_print; a user's op registered with
// register_effectful_op, torch.library._register_effectful_op's analogue) carries the tag
// `effectful`. Functionalization makes its calls pure by threading an effect token, as PyTorch's
// EffectTokensWrapper and torch/_higher_order_ops/effects.py do: the functional graph takes a
// token first (an empty f32[0] tensor; arg0_1 in an inference graph, primals_1 in a training
// forward), each effectful call becomes with_effects(token, op, *args) -> (new token, *results)
// consuming the current token and giving the next, and the last token is the graph's first
// output. The chain is a data dependence, so any pass that respects data order keeps the effects
// in program order; besides, with_effects is itself effectful: DCE never removes it, CSE never
// merges two, the memory schedule keeps their order, the min-cut bans it ("effectful", so the
// backward never repeats it) and re-inplacing leaves it alone. The runtime passes a fresh token
// in and drops the final one, so callers see neither. Ops whose schema aliases (Tensor(a)) cannot
// be wrapped ("Ops with aliasing is not supported", as PyTorch says).

// with_effects(token, op, *args) -> (a new token, op(*args)'s results...).
ValueMeta with_effects_meta(const MetaArgs& a) {
  if (a.is_none(0) || a.arg(0).kind == Arg::Kind::Op)
    throw Error("argument 'token' (the effect token, before the op) is missing");
  const TensorMeta& token = a.tensor(0);
  if (token.dim() != 1 || !(token.sizes[0] == 0))
    throw Error("argument 'token' must be an effect token (an empty f32[0] tensor), got " +
                token.annotation());
  ValueMeta results = wrapped_meta(a);
  std::vector<ValueMeta> elems{ValueMeta::of(effect_token_meta())};
  if (results.kind == ValueMeta::Kind::Tuple && !results.is_list) {
    for (ValueMeta& r : results.elems) elems.push_back(std::move(r));
  } else if (results.kind != ValueMeta::Kind::None || !a.op().wrapped->schema.returns.empty()) {
    elems.push_back(std::move(results));
  }
  return ValueMeta::tuple(std::move(elems));
}

void derive_with_effects(OpDef& op, const OpDef& wrapped) {
  if (!wrapped.has_tag(kEffectful))
    throw Error(op.name + " cannot wrap " + wrapped.name +
                ": it is not effectful (declare it with the effectful tag, or register it with "
                "register_effectful_op)");
  bool aliasing = !wrapped.mutated_args().empty() || !wrapped.undeclared_mutations.empty();
  for (size_t r = 0; r < wrapped.schema.returns.size(); ++r)
    aliasing = aliasing || wrapped.return_alias_of(r) >= 0;
  if (aliasing)
    throw Error(op.name + " cannot wrap " + wrapped.name + ": Ops with aliasing is not supported");
  op.schema.returns = {unnamed_return(BaseType::Tensor)};
  for (const SchemaArg& r : wrapped.schema.returns) op.schema.returns.push_back(r);
  op.tags = kEffectful;
  op.meta = with_effects_meta;
}

void derive_eager_backward(OpDef& op, const OpDef&) {
  SchemaArg r;
  r.type.base = BaseType::Tensor;
  r.type.list = true;
  op.schema.returns = {r};
  op.tags = 0;
  op.meta = eager_backward_meta;
}

}  // namespace

void register_higher_order_ops(OpTable& t) {
  t.def_higher_order({kRunAndSaveRngState, {}, derive_run_and_save_rng_state});
  SchemaArg state;
  state.name = "rng_state";
  state.type.base = BaseType::Tensor;
  t.def_higher_order({kRunWithRngState, {state}, derive_run_with_rng_state});
  SchemaArg grads, needs;
  grads.name = "grads";
  grads.type.base = BaseType::Tensor;
  grads.type.list = true;
  grads.type.elem_optional = true;
  needs.name = "needs";
  needs.type.base = BaseType::Int;
  needs.type.list = true;
  t.def_higher_order({kEagerBackward, {grads, needs}, derive_eager_backward});
  SchemaArg token;
  token.name = "token";
  token.type.base = BaseType::Tensor;
  t.def_higher_order({kWithEffects, {token}, derive_with_effects});
}

}  // namespace aotgrad
