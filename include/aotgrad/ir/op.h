// aotgrad: the declaration of an op (OpDef), its meta function interface and the op table.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "aotgrad/ir/schema.h"
#include "aotgrad/ir/tensor_meta.h"

namespace aotgrad {

struct Arg;
class Node;
struct OpDef;
struct DerivativeRule;      // see ops/derivative.h
struct Decomposition;       // see ops/decomposition.h
class ViewInverseBuilder;   // see ops/functionalization.h
class InplaceValueBuilder;  // see ops/functionalization.h

/// Op tags, as in ATen's tags.yaml where one exists.
enum Tag : uint32_t {
  kPointwise = 1u << 0,
  kView = 1u << 1,
  kInplace = 1u << 2,
  kRandom = 1u << 3,
  kComputeIntensive = 1u << 4,
  kReduction = 1u << 5,
  kCore = 1u << 6,  // in core ATen
  kFactory = 1u << 7,
  kBackward = 1u << 8,  // a derivative kernel (threshold_backward, ...)
  kNondeterministicSeeded = 1u << 9,
  kDynamicOutputShape = 1u << 10,
  kScatter = 1u << 11,  // view inverse: slice_scatter, ...
  kOutOfPlaceMutation =
      1u << 12,  // functional op whose outputs replace inputs (_native_batch_norm_legit_functional)
  kCompositeImplicit =
      1u << 13,  // CompositeImplicitAutograd: autograd goes through its decomposition
  kDataDependentOutput = 1u << 14,  // a result's value depends on the inputs' data (item, equal)
  kCollective = 1u << 15,  // a functional collective or its wait (_c10d_functional): issued on a
                           // process group, the same on every rank; see ops/registry.h
  kEffectful = 1u << 16,   // a side effect whose order is the program's (aten::_print, an op a
                           // user registers effectful, with_effects): Note [Effect tokens]
  // The recompute classes of PyTorch's partitioner (torch/_functorch/partitioners.py's OpTypes,
  // get_default_op_list) that the tags above do not give: its random_ops are the ops tagged random
  // or nondeterministic_seeded, its compute_intensive_ops those tagged compute_intensive, and
  // pointwise ops are recomputable without a tag of their own (PyTorch's pointwise_ops()).
  kRecomputable = 1u << 17,   // default_recomputable_ops beyond the pointwise ones: cheap
                              // reductions, casts, copies, factories (sum, _to_copy, zeros, ...)
  kViewOp = 1u << 18,         // view_ops: the views the partitioner recomputes freely (view, t,
                              // expand, slice, ...), fewer than those tagged view
  kNormalization = 1u << 19,  // a normalization's forward (native_layer_norm, ...):
                              // MinCutOptions::recompute_norms_from_saved may run it again
};
/// The partitioner's classes, which PyTorch gives a whole overload packet (get_aten_target): an
/// overload the provider gives has those of the declared overloads of its packet (squeeze.dims
/// those of squeeze.dim). See OpTable::tag_provided.
inline constexpr uint32_t kPacketTags =
    kRecomputable | kViewOp | kNormalization | kComputeIntensive;
std::string tag_names(uint32_t tags);  // "pointwise,core"

/// A scalar argument value (`Scalar` in schemas): a Python int, float or bool.
struct ScalarValue {
  enum class Kind : uint8_t { Int, Float, Bool } kind = Kind::Int;
  int64_t i = 0;
  double f = 0;
  double to_double() const { return kind == Kind::Float ? f : static_cast<double>(i); }
  /// The dtype a Python scalar of this kind has when alone: i64, f32 (default), b8.
  ScalarType natural_type() const;
};

/// Read access to a call's arguments, by schema position, for meta functions. Node arguments
/// are seen through their metadata; symbolic ints through their SymInt.
class MetaArgs {
 public:
  MetaArgs(const OpDef& op, const std::vector<Arg>& args) : op_(op), args_(args) {}
  const OpDef& op() const { return op_; }
  size_t size() const;
  bool is_none(size_t i) const;

  /// A Tensor argument; a Python number here is a 0-dim wrapped-number tensor (i64, f64 or b8).
  const TensorMeta& tensor(size_t i) const;
  const TensorMeta* optional_tensor(size_t i) const;  // nullptr for None
  /// Tensor[] and Tensor?[] (nullptr elements for None).
  std::vector<const TensorMeta*> tensor_list(size_t i) const;
  SymInt sym_int(size_t i) const;
  std::optional<SymInt> optional_sym_int(size_t i) const;
  int64_t int_value(size_t i) const;      // must be concrete
  SymIntVector int_list(size_t i) const;  // also accepts a single int for int[N]
  std::optional<SymIntVector> optional_int_list(size_t i) const;
  double float_value(size_t i) const;
  std::optional<double> optional_float(size_t i) const;
  bool bool_value(size_t i) const;
  std::optional<bool> optional_bool(size_t i) const;
  std::vector<bool> bool_list(size_t i) const;
  ScalarValue scalar(size_t i) const;
  std::optional<ScalarValue> optional_scalar(size_t i) const;
  std::optional<ScalarType> dtype(size_t i) const;
  std::optional<Layout> layout(size_t i) const;
  std::optional<Device> device(size_t i) const;
  std::optional<MemoryFormat> memory_format(size_t i) const;
  std::string str(size_t i) const;

  /// The argument itself, for the rare meta function that needs more.
  const Arg& arg(size_t i) const;

 private:
  const Arg& checked(size_t i) const;
  const TensorMeta& wrapped(const Arg& a) const;
  const OpDef& op_;
  const std::vector<Arg>& args_;
  mutable std::vector<std::unique_ptr<TensorMeta>> wrapped_;  // Python numbers seen as tensors
};

/// Computes an op's result metadata from its arguments; throws Error on invalid arguments.
using MetaFn = ValueMeta (*)(const MetaArgs&);

/// A number about one call of an op, from its arguments and result metadata: FLOPs, scratch or
/// communicated bytes (the cost model's and the memory timeline's op facts).
using CallFormula = double (*)(const MetaArgs& args, const ValueMeta& result);

/// Which curve of a measured cost profile prices an op with a FLOPs formula.
enum class FlopsKind : uint8_t { kMatmul, kConvolution };

/// The value `e` for which `x op e` is `x` for every x (simplify, constant folding): 1 for mul and
/// div, 0 for add and sub. See OpDef::identity.
struct IdentityElement {
  double value = 0;
  /// `e op x` is `x` too (mul; add when its alpha is 1).
  bool commutes = false;
  /// The argument that scales `other` (add's and sub's alpha), or -1.
  int alpha_arg = -1;
  /// `other` is subtracted (sub): `x - alpha * e` is `x` when `-alpha * e` adds nothing.
  bool negates = false;
};

/// A view op's inverse (PyTorch's FunctionalInverses): the new value of the view's base after a
/// write gave the view a new value. Throws Error when a write through the view cannot be undone.
using ViewInverseFn = Node* (*)(ViewInverseBuilder&);
/// How functionalization computes the value an in-place call writes, when it is not simply the
/// functional variant's result; nullptr from the function: use the functional variant after all.
using InplaceValueFn = Node* (*)(InplaceValueBuilder&);

/// One ATen op overload: schema, tags, meta function, derivative, and links to related ops.
struct OpDef {
  FunctionSchema schema;
  std::string name;        // "aten::add.Tensor" (no ".default")
  std::string short_name;  // "add.Tensor", "t.default" -- as printed after torch.ops.aten.
  std::string base_name;   // "add": what FX names its nodes after
  uint32_t tags = 0;
  MetaFn meta = nullptr;

  std::shared_ptr<const DerivativeRule> derivative;
  bool non_differentiable = false;
  /// Per result, whether it is differentiable (derivatives.yaml's output_differentiability);
  /// empty: every floating-point result is.
  std::vector<bool> output_differentiability;
  std::shared_ptr<const Decomposition> decomposition;

  std::string functional_variant;  // for an in-place op: "aten::add.Tensor"
  std::string inplace_variant;     // for a functional op: "aten::add_.Tensor"
  std::string scatter_inverse;     // for a view op: "aten::slice_scatter"
  std::string view_of;             // for a scatter op: the view it inverts

  // Op facts the passes read (one meaning each, declared with the op or filled by an op
  // provider for the ops it derives from schemas; see ops/functionalization.h).
  /// For an op whose result aliases an argument: how a write into the result reaches that
  /// argument. Every view op has one (the registry sweep checks it).
  ViewInverseFn view_inverse = nullptr;
  /// A view whose sizes, strides and offset are absolute in its storage (as_strided): it views the
  /// storage's base, whatever view of it the argument is, and its inverse writes into that base.
  bool absolute_view = false;
  /// For an in-place op whose functional variant does not give the written value as the in-place
  /// op leaves it (1.13's copy returns `src` itself); nullptr: the functional variant's result.
  InplaceValueFn inplace_value = nullptr;
  /// Result 0 lives in this argument's storage although the schema does not say so
  /// (`_unsafe_view`, a view ATen does not annotate); -1 for none.
  int undeclared_alias = -1;
  /// Arguments mutated although the schema does not say so (1.13's native_batch_norm mutates
  /// running_mean/running_var in training mode). See written_args() for when they apply.
  std::vector<int> undeclared_mutations;
  int undeclared_mutation_if = -1;  // the bool argument they depend on, or -1

  // Op facts the cost model, the memory timeline and constant folding read (declared with the
  // op; the registry sweep lists the ops that lack one it expects).
  /// FLOPs of one call of a compute-bound op (a multiply-add counts 2), priced by the measured
  /// cost model on `flops_kind`'s curve; nullptr: the op is priced by its elements and bytes.
  CallFormula flops = nullptr;
  FlopsKind flops_kind = FlopsKind::kMatmul;
  /// Bytes the CPU kernel allocates beyond its results while it runs (memory timeline); nullptr:
  /// none.
  CallFormula scratch_bytes = nullptr;
  /// Bytes a call of a collective brings to this rank from the others (cost_model.h's
  /// communication_bytes); nullptr: none (wait_tensor: its collective is priced where issued).
  CallFormula communication_bytes = nullptr;
  /// A factory whose every element is one value: the constant `fill_value` when fill_arg < 0,
  /// else the literal argument `fill_arg` (full's fill_value). Unset: not such a factory.
  std::optional<double> fill_value;
  int fill_arg = -1;
  /// Result 0 holds argument 0's values, converted to its dtype (clone, _to_copy).
  bool copies_value = false;
  /// The identity element of a binary arithmetic op (args self, other[, alpha]); unset: none.
  std::optional<IdentityElement> identity;
  /// Not pointwise, yet its out= kernel may write the result over argument 0 (reinplace.h's
  /// may_write_out_over_first: the softmax backward kernels).
  bool writes_out_over_first = false;

  /// Given by the table's OpProvider (derived from a schema the registry does not declare, such
  /// as libtorch's), not declared by hand: its facts are the generic ones the provider derives.
  bool provided = false;

  /// A higher-order op (OpTable::higher_order): the op it wraps and the position of the argument
  /// that references it; the wrapped op's arguments follow that one. nullptr / -1 for other ops.
  const OpDef* wrapped = nullptr;
  int wrapped_arg = -1;

  bool has_tag(uint32_t t) const { return (tags & t) != 0; }
  bool output_differentiable(size_t ret) const {
    return ret >= output_differentiability.size() || output_differentiability[ret];
  }
  /// Argument indices written by this op (alias annotations with '!').
  std::vector<int> mutated_args() const;
  /// The arguments a call of this op writes, the one meaning every pass uses: those the schema
  /// annotates with '!', then the undeclared mutations unless the call's condition argument is
  /// the constant False, leaving out arguments that are not tensor values (None). In order of
  /// mutated_args(), then undeclared_mutations.
  std::vector<int> written_args(const std::vector<Arg>& call_args) const;
  /// Whether the op's i-th return aliases an input (`Tensor(a)` on the return), and which.
  int return_alias_of(size_t ret) const;
  /// The argument whose storage return `ret` lives in: return_alias_of(ret), or for return 0 the
  /// undeclared alias; -1 for a fresh result.
  int storage_alias_of(size_t ret) const {
    int a = return_alias_of(ret);
    return a < 0 && ret == 0 ? undeclared_alias : a;
  }
};

/// Fluent registration: `table.def("abs(Tensor self) -> Tensor").tags(kPointwise).meta(f)`.
class OpDefBuilder {
 public:
  explicit OpDefBuilder(OpDef* op) : op_(op) {}
  OpDefBuilder& tags(uint32_t t) {
    op_->tags |= t;
    return *this;
  }
  OpDefBuilder& meta(MetaFn f) {
    op_->meta = f;
    return *this;
  }
  OpDefBuilder& non_differentiable() {
    op_->non_differentiable = true;
    return *this;
  }
  /// derivatives.yaml's output_differentiability: which results carry gradients.
  OpDefBuilder& output_differentiability(std::vector<bool> d) {
    op_->output_differentiability = std::move(d);
    return *this;
  }
  /// Attaches a decomposition (see ops/decomposition.h).
  OpDefBuilder& decomposition(std::shared_ptr<const Decomposition> d) {
    op_->decomposition = std::move(d);
    return *this;
  }
  /// Attaches the derivative rule (see ops/derivative.h).
  OpDefBuilder& derivative(std::shared_ptr<const DerivativeRule> rule) {
    op_->derivative = std::move(rule);
    return *this;
  }
  /// Links this functional op and its in-place variant, both directions (name without "aten::").
  OpDefBuilder& inplace(const std::string& inplace_name);
  /// Links this view op and its scatter inverse, both directions.
  OpDefBuilder& scatter(const std::string& scatter_name);
  OpDefBuilder& undeclared_mutations(std::vector<int> args, int if_bool_arg = -1) {
    op_->undeclared_mutations = std::move(args);
    op_->undeclared_mutation_if = if_bool_arg;
    return *this;
  }
  /// Declares the view's inverse (see OpDef::view_inverse); `absolute` for as_strided.
  OpDefBuilder& view_inverse(ViewInverseFn f, bool absolute = false) {
    op_->view_inverse = f;
    op_->absolute_view = absolute;
    return *this;
  }
  OpDefBuilder& inplace_value(InplaceValueFn f) {
    op_->inplace_value = f;
    return *this;
  }
  /// Result 0 shares argument `arg`'s storage although the schema does not say so.
  OpDefBuilder& undeclared_alias(int arg) {
    op_->undeclared_alias = arg;
    return *this;
  }
  /// The FLOPs formula (OpDef::flops) and the cost curve that prices it.
  OpDefBuilder& flops(CallFormula f, FlopsKind kind) {
    op_->flops = f;
    op_->flops_kind = kind;
    return *this;
  }
  OpDefBuilder& scratch_bytes(CallFormula f) {
    op_->scratch_bytes = f;
    return *this;
  }
  OpDefBuilder& communication_bytes(CallFormula f) {
    op_->communication_bytes = f;
    return *this;
  }
  /// Every element of the result is `value` (zeros: 0, ones: 1).
  OpDefBuilder& fill(double value) {
    op_->fill_value = value;
    op_->fill_arg = -1;
    return *this;
  }
  /// Every element of the result is the literal argument `arg` (full: 1).
  OpDefBuilder& fill_from_arg(int arg) {
    op_->fill_value = 0;
    op_->fill_arg = arg;
    return *this;
  }
  OpDefBuilder& copies_value() {
    op_->copies_value = true;
    return *this;
  }
  OpDefBuilder& identity(IdentityElement e) {
    op_->identity = e;
    return *this;
  }
  OpDefBuilder& writes_out_over_first() {
    op_->writes_out_over_first = true;
    return *this;
  }
  OpDef& op() { return *op_; }

 private:
  friend class OpTable;
  OpDef* op_;
  class OpTable* table_ = nullptr;
};

/// A family of higher-order ops (torch.ops.higher_order.<name>, as torch/_prims/rng_prims.py's
/// run_with_rng_state): a call takes the family's leading arguments, a reference to the op it wraps
/// (`torch.ops.aten.native_dropout.default`), then that op's arguments. Each wrapped op gets its
/// own OpDef, derived on first use: schema = leading arguments + `Any op` + the wrapped op's
/// arguments, so binding, printing and parsing work as for any op; `derive` sets its returns, tags
/// and meta.
struct HigherOrderOpDef {
  std::string name;                // "higher_order::run_with_rng_state"
  std::vector<SchemaArg> leading;  // the arguments before the op reference
  void (*derive)(OpDef& derived, const OpDef& wrapped) = nullptr;
};

/// Supplies the OpDef of an op a table does not declare. The runtime layer installs one that
/// derives OpDefs from libtorch's dispatcher (DESIGN.md, "The op world"); the core layers see such
/// ops only through this interface.
class OpProvider {
 public:
  virtual ~OpProvider() = default;
  /// The OpDef of `name` (`namespace::name` or `namespace::name.overload`, no ".default"), or
  /// nullptr when the provider does not know the op. Throws Error naming the op and what aotgrad
  /// cannot represent (an argument type) when it knows the op but cannot describe it.
  virtual std::unique_ptr<OpDef> provide(const std::string& name) const = 0;
  /// Where the ops come from, for messages: "libtorch's dispatcher".
  virtual std::string source() const = 0;
};

/// A set of OpDefs looked up by name. Links between ops are resolved by name at lookup time.
class OpTable {
 public:
  OpTable();
  ~OpTable();
  OpTable(const OpTable&) = delete;
  OpTable& operator=(const OpTable&) = delete;

  /// Declares an op from its schema string; a second declaration of the same name throws.
  OpDefBuilder def(const std::string& schema);
  /// Finds "aten::add.Tensor", "add.Tensor", "aten.add.Tensor", "t.default", "aten::t" or "t";
  /// an op the table does not declare is asked of its provider (once: the OpDef is kept). Throws
  /// the provider's Error for an op it knows but cannot describe.
  const OpDef* find(std::string_view name) const;
  /// As find(), but throws Error naming the op when it is unknown.
  const OpDef& get(std::string_view name) const;
  /// As find(), without asking the provider: a declared op or one the provider already gave.
  const OpDef* find_known(std::string_view name) const;
  /// All ops in declaration order.
  const std::vector<const OpDef*>& all() const { return order_; }
  OpDef* mutable_op(std::string_view name);
  /// Fills in the reverse links (functional_variant of in-place ops, view_of of scatters) after
  /// all ops are declared; throws if a link names an op that does not exist.
  void finalize();

  /// Ops the table does not declare are asked of `provider` (nullptr: none); it must outlive the
  /// table. The OpDefs it gives are owned by the table and live as long as it.
  /// Thread-safe: lookups racing with the change see the old or the new provider.
  void set_provider(const OpProvider* provider) { provider_.store(provider); }
  const OpProvider* provider() const { return provider_.load(); }
  /// The ops the provider has given so far, in the order they were asked for.
  std::vector<const OpDef*> provided_ops() const;

  /// Tags every overload of `packet` ("aten::triu") that the provider gives: facts about ops the
  /// registry does not declare (their schema and meta come from the provider), such as PyTorch's
  /// partitioner classes. A declared op of that packet takes its tags from its declaration;
  /// finalize() adds the kPacketTags of each declared op to its packet's.
  void tag_provided(const std::string& packet, uint32_t tags);
  /// The tags tag_provided() gives `packet`'s overloads, by packet.
  const std::unordered_map<std::string, uint32_t>& provided_tags() const { return provided_tags_; }

  /// Declares a higher-order op family; a second declaration of the same name throws.
  void def_higher_order(HigherOrderOpDef family);
  /// The family named "higher_order::run_with_rng_state" (or "higher_order.run_with_rng_state"),
  /// or nullptr.
  const HigherOrderOpDef* find_higher_order(std::string_view name) const;
  /// The OpDef of `family` wrapping `wrapped`, an op of this table: made on first use, then the
  /// same object (owned by the table; thread-safe). Throws Error naming both for an unknown family,
  /// an op of another table, a higher-order op, or argument names that clash.
  const OpDef& higher_order(std::string_view family, const OpDef& wrapped) const;

 private:
  friend class OpDefBuilder;
  std::vector<std::unique_ptr<OpDef>> ops_;
  std::vector<const OpDef*> order_;
  std::unordered_map<std::string, OpDef*> by_name_;
  std::unordered_map<std::string, HigherOrderOpDef> families_;
  std::unordered_map<std::string, uint32_t> provided_tags_;
  std::atomic<const OpProvider*> provider_{nullptr};
  mutable std::mutex provided_mu_;
  mutable std::unordered_map<std::string, std::unique_ptr<OpDef>> provided_;
  mutable std::vector<const OpDef*> provided_order_;
  mutable std::mutex derived_mu_;
  mutable std::unordered_map<std::string, std::unique_ptr<OpDef>> derived_;  // family + '\n' + op
};

}  // namespace aotgrad
