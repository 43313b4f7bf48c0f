// aotgrad: the graph interpreter -- a slot plan built once, then a tight loop of boxed calls.
#include "aotgrad/runtime/interpreter.h"

#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>

#include <optional>
#include <unordered_map>

#include "aotgrad/ir/error.h"
#include "aotgrad/ir/symbol_binding.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/providers/aten_call.h"
#include "aotgrad/providers/effect_ops.h"
#include "aotgrad/runtime/compiler.h"
#include "aotgrad/runtime/distributed/collectives.h"
#include "aotgrad/runtime/distributed/process_group.h"
#include "aotgrad/transforms/partition/memory_timeline.h"
#include "aotgrad/transforms/passes/dce.h"
#include "aotgrad/transforms/passes/reinplace.h"

namespace aotgrad {

namespace {

// One argument slot of a call: a constant, a value slot, or a list built from slots at run time.
struct ArgPlan {
  enum class Kind : uint8_t { Const, Slot, Dynamic } kind = Kind::Const;
  int slot = -1;
  c10::IValue constant;
  const TypeRef* type = nullptr;  // Dynamic
  const Arg* arg = nullptr;       // Dynamic
};

// SymInt arithmetic, which the interpreter evaluates itself: FX records Python's operators on
// SymInts (`mul = sym_size_int * 2`), which are no ATen ops. The reads of a tensor's metadata
// (sym_size.int, sym_stride.int, sym_numel, sym_storage_offset) are ATen's ops and run as any call.
enum class SymOp : uint8_t { Add, Sub, Mul, FloorDiv, Mod, Neg };

std::optional<SymOp> sym_op_of(const OpDef& op) {
  static const std::pair<const char*, SymOp> kOps[] = {
      {"operator::add", SymOp::Add}, {"operator::sub", SymOp::Sub},
      {"operator::mul", SymOp::Mul}, {"operator::floordiv", SymOp::FloorDiv},
      {"operator::mod", SymOp::Mod}, {"operator::neg", SymOp::Neg}};
  for (auto& [name, k] : kOps)
    if (op.name == name) return k;
  return std::nullopt;
}

int64_t floordiv_int(int64_t a, int64_t b) {
  if (b == 0) throw Error("integer division by zero");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t mod_int(int64_t a, int64_t b) {
  if (b == 0) throw Error("integer modulo by zero");
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

struct Instr {
  const Node* node = nullptr;
  enum class Kind : uint8_t { Call, GetItem, Sym, Cond } kind = Kind::Call;
  // Cond: the branches' interpreters (true, false); args are pred and the operands.
  std::shared_ptr<const Interpreter> branches[2];
  SymOp sym = SymOp::Add;
  // A higher-order op's call: `op` is the wrapped op, the state is the first argument slot.
  enum class Rng : uint8_t {
    None,
    RunAndSave,
    RunWith,
    EagerBackward,
    WithEffects
  } rng = Rng::None;
  const AtenOp* op = nullptr;
  // Re-inplacing: when argument `write_arg` (a slot whose last use this is) is held by nothing
  // else, the result is written into it, by the in-place variant `inplace_op` or, without one, by
  // `op`'s out= overload; -1: always `op` as written.
  int write_arg = -1;
  const AtenOp* inplace_op = nullptr;
  std::vector<ArgPlan> args;
  int getitem_src = -1;
  int64_t getitem_index = 0;
  int out_slot = -1;
  bool multi_return = false;
  bool collective = false;  // a _c10d_functional op: call_collective
  // A dynamic_output_shape op: its results are checked against the recorded sizes (Note
  // [Recorded sizes]).
  bool check_sizes = false;
  std::vector<int> release;  // slots whose last use is this instruction
};

}  // namespace

struct Interpreter::Plan {
  std::vector<Instr> instrs;
  std::unique_ptr<SymbolBinder> binder;  // nullptr when no input size is symbolic
  std::vector<const Node*> placeholders;
  std::vector<int> input_slots;
  std::vector<int> input_release;  // placeholder slots never used
  std::vector<int> output_slots;   // -1: None
  int num_slots = 0;
  size_t num_reinplaced = 0;
  std::unordered_map<const Node*, int> slot_of;
  // ScopedOutputSink: per instruction, the output positions whose value it defines and no later
  // instruction reads (empty when the graph offers no outputs early: it writes, communicates or
  // has effects).
  std::vector<std::vector<size_t>> early_outputs;
};

namespace {
thread_local const OutputSink* t_output_sink = nullptr;
}  // namespace

ScopedOutputSink::ScopedOutputSink(OutputSink sink)
    : sink_(std::move(sink)), previous_(t_output_sink) {
  t_output_sink = &sink_;
}

ScopedOutputSink::~ScopedOutputSink() { t_output_sink = previous_; }

namespace {

bool contains_node(const Arg& a) {
  bool found = false;
  a.for_each_node([&](Node*) { found = true; });
  return found;
}

void flatten_output(const Arg& a, const std::unordered_map<const Node*, int>& slot_of,
                    std::vector<int>& out) {
  if (a.is_list()) {
    for (auto& e : a.list) flatten_output(e, slot_of, out);
  } else if (a.is_node()) {
    out.push_back(slot_of.at(a.node));
  } else if (a.is_none()) {
    out.push_back(-1);
  } else {
    throw Error("the graph returns a constant (" + arg_to_string(a) +
                "); only values and None are supported");
  }
}

std::string describe_ivalue(const c10::IValue& v) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (!t.defined()) return "an undefined tensor";
    std::string s = std::string(short_name(from_c10(t.scalar_type()))) + "[";
    for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
    return s + "] on " + t.device().str();
  }
  if (v.isInt()) return "int " + std::to_string(v.toInt());
  if (v.isNone()) return "None";
  return v.tagKind();
}

const c10::IValue& operand(const ArgPlan& a, const std::vector<c10::IValue>& slots) {
  return a.kind == ArgPlan::Kind::Slot ? slots[a.slot] : a.constant;
}

int64_t int_operand(const ArgPlan& a, const std::vector<c10::IValue>& slots) {
  const c10::IValue& v = operand(a, slots);
  if (!v.isInt()) throw Error("expected an int operand, got " + describe_ivalue(v));
  return v.toInt();
}

// SymInt arithmetic on ints, with Python's semantics.
int64_t run_sym(const Instr& in, const std::vector<c10::IValue>& slots) {
  auto lhs = [&] { return int_operand(in.args.at(0), slots); };
  auto rhs = [&] { return int_operand(in.args.at(1), slots); };
  switch (in.sym) {
    case SymOp::Add: return lhs() + rhs();
    case SymOp::Sub: return lhs() - rhs();
    case SymOp::Mul: return lhs() * rhs();
    case SymOp::FloorDiv: return floordiv_int(lhs(), rhs());
    case SymOp::Mod: return mod_int(lhs(), rhs());
    case SymOp::Neg: return -lhs();
  }
  return 0;
}

// cond: the branch `pred` selects, run on the operands; its results as a Tensor[] list.
c10::IValue run_cond(const std::shared_ptr<const Interpreter> (&branches)[2],
                     const c10::IValue& pred, const c10::IValue& operands) {
  if (!pred.isTensor() || !pred.toTensor().defined() ||
      pred.toTensor().scalar_type() != at::kBool || pred.toTensor().numel() != 1)
    throw Error("pred must be a bool tensor with one element, got " + describe_ivalue(pred));
  bool take_true = pred.toTensor().item<bool>();
  std::vector<c10::IValue> inputs;
  for (const c10::IValue& v : operands.toListRef()) inputs.push_back(v);
  std::vector<c10::IValue> results = branches[take_true ? 0 : 1]->run(std::move(inputs));
  c10::List<at::Tensor> out;
  out.reserve(results.size());
  for (c10::IValue& r : results) out.push_back(std::move(r).toTensor());
  return c10::IValue(std::move(out));
}

// Whether a call may write into this value: a tensor nothing else references (no other tensor
// shares its storage: no view, no caller's or autograd's reference), outside autograd, with no
// element written twice.
// Note [Recorded sizes] (verifier.cc): a dynamic_output_shape op's results have the sizes the
// graph recorded for them, where those are concrete; other values of its inputs are an error that
// names both sizes, not a graph run on a shape it was not built for.
void check_recorded_sizes(const Node& n, const std::vector<c10::IValue>& results) {
  const ValueMeta& m = n.meta();
  for (size_t r = 0; r < results.size(); ++r) {
    const ValueMeta& want = m.kind == ValueMeta::Kind::Tuple ? m.elems.at(r) : m;
    if (!want.is_tensor() || !results[r].isTensor()) continue;
    c10::IntArrayRef got = results[r].toTensor().sizes();
    bool same = got.size() == want.tensor.sizes.size();
    for (size_t d = 0; same && d < got.size(); ++d)
      same = !want.tensor.sizes[d].is_concrete() || want.tensor.sizes[d].value() == got[d];
    if (same) continue;
    std::string shown = "[";
    for (size_t d = 0; d < got.size(); ++d) shown += (d ? ", " : "") + std::to_string(got[d]);
    throw Error(n.describe() + ": result " + std::to_string(r) + " has sizes " + shown +
                    "], but the graph was traced with " + want.tensor.annotation() +
                    ": its sizes depend on the inputs' values (dynamic_output_shape), and this "
                    "graph holds only the ones it was traced with",
                n.info().loc);
  }
}

bool writable_alone(const c10::IValue& v) {
  if (!v.isTensor()) return false;
  const at::Tensor& t = v.toTensor();
  return t.defined() && t.has_storage() && t.use_count() == 1 && t.storage().use_count() == 1 &&
         !t.requires_grad() && at::has_internal_overlap(t) != at::MemOverlap::Yes;
}

}  // namespace

Interpreter::Interpreter(std::shared_ptr<const Graph> graph, InterpreterOptions options)
    : graph_(std::move(graph)), plan_(new Plan) {
  register_compat_ops();
  Plan& p = *plan_;
  auto new_slot = [&](const Node* n) {
    int s = p.num_slots++;
    p.slot_of[n] = s;
    return s;
  };
  // Last use of each node, as an instruction index (-1: placeholder-only; INT_MAX: output).
  std::unordered_map<const Node*, int> last_use;
  std::unordered_map<const Node*, int> last_read;  // last instruction reading it as an argument
  const bool offers_outputs = offers_outputs_early(*graph_);
  int index = 0;
  for (const Node* n : graph_->nodes()) {
    if (n->kind() != NodeKind::Placeholder && n->kind() != NodeKind::Output)
      for (auto& a : n->args()) a.for_each_node([&](Node* u) { last_read[u] = index; });
    if (n->kind() == NodeKind::Placeholder) {
      p.placeholders.push_back(n);
      p.input_slots.push_back(new_slot(n));
      last_use[n] = -1;
      continue;
    }
    if (n->kind() == NodeKind::Output) {
      for (auto& a : n->args()) a.for_each_node([&](Node* u) { last_use[u] = INT32_MAX; });
      continue;
    }
    for (auto& a : n->args()) a.for_each_node([&](Node* u) { last_use[u] = index; });
    last_use.emplace(n, index);  // a value nobody uses dies right away
    ++index;
  }
  std::vector<ReinplaceChoice> in_place;
  if (options.reinplace) in_place = reinplace_plan(*graph_);
  index = 0;
  size_t position = 0;
  for (const Node* n : graph_->nodes()) {
    const ReinplaceChoice choice =
        position < in_place.size() ? in_place[position] : ReinplaceChoice{};
    ++position;
    if (n->kind() == NodeKind::Placeholder || n->kind() == NodeKind::Output) continue;
    Instr in;
    in.node = n;
    if (n->kind() == NodeKind::GetItem) {
      in.kind = Instr::Kind::GetItem;
      in.getitem_src = p.slot_of.at(n->getitem_input());
      in.getitem_index = n->getitem_index();
    } else if (n->op()->name == kCond) {
      in.kind = Instr::Kind::Cond;
      try {
        for (int b = 0; b < 2; ++b)
          in.branches[b] = std::make_shared<Interpreter>(n->arg(1 + b).graph, options);
      } catch (const Error& e) {
        throw Error(
            n->describe() + " subgraph " + n->arg(1).str + "/" + n->arg(2).str + ": " + e.message(),
            n->info().loc);
      }
      for (size_t i : {size_t{0}, size_t{3}}) {
        const Arg& a = n->args()[i];
        ArgPlan ap;
        if (a.is_node()) {
          ap.kind = ArgPlan::Kind::Slot;
          ap.slot = p.slot_of.at(a.node);
        } else {
          ap.kind = ArgPlan::Kind::Dynamic;
          ap.type = &n->op()->schema.args[i].type;
          ap.arg = &a;
        }
        in.args.push_back(std::move(ap));
      }
    } else if (std::optional<SymOp> sym = sym_op_of(*n->op())) {
      in.kind = Instr::Kind::Sym;
      in.sym = *sym;
      const auto& sargs = n->op()->schema.args;
      for (size_t i = 0; i < n->args().size(); ++i) {
        const Arg& a = n->args()[i];
        ArgPlan ap;
        if (a.is_node()) {
          ap.kind = ArgPlan::Kind::Slot;
          ap.slot = p.slot_of.at(a.node);
        } else if (a.kind == Arg::Kind::Int) {
          ap.constant = c10::IValue(a.i);
        } else {
          throw Error(n->describe() + " argument '" + sargs[i].name + "': expected an int, got " +
                          arg_to_string(a),
                      n->info().loc);
        }
        in.args.push_back(std::move(ap));
      }
    } else {
      const OpDef& op = *n->op();
      const OpDef& target = op.wrapped ? *op.wrapped : op;
      try {
        if (op.wrapped) {
          if (op.name == kRunAndSaveRngState)
            in.rng = Instr::Rng::RunAndSave;
          else if (op.name == kRunWithRngState)
            in.rng = Instr::Rng::RunWith;
          else if (op.name == kEagerBackward)
            in.rng = Instr::Rng::EagerBackward;
          else if (op.name == kWithEffects)
            in.rng = Instr::Rng::WithEffects;
          else
            throw Error("the interpreter has no implementation of higher-order op " + op.name);
        }
        in.op = &aten_op(target);
        in.collective = target.has_tag(kCollective) && !op.wrapped;
        in.check_sizes = target.has_tag(kDynamicOutputShape) && in.rng == Instr::Rng::None;
        if (target.has_tag(kCollective))  // its group is made before libtorch's kernel asks
          for (size_t i = 0; i < target.schema.args.size() && i < n->args().size(); ++i)
            if (target.schema.args[i].name == "group_name" && n->args()[i].kind == Arg::Kind::Str)
              prepare_process_group(n->args()[i].str);
      } catch (const Error& e) {
        throw Error(n->describe() + ": " + e.message(), n->info().loc);
      }
      // with_effects: a tuple of the new token and the op's results, whatever their number.
      // eager_backward: one list, the gradients, whatever the op returns.
      in.multi_return = in.rng == Instr::Rng::EagerBackward ? false
                                                            : target.schema.returns.size() != 1 ||
                                                                  in.rng == Instr::Rng::WithEffects;
      const auto& sargs = op.schema.args;
      for (size_t i = 0; i < n->args().size(); ++i) {
        if (static_cast<int>(i) == op.wrapped_arg) continue;  // the op reference
        const Arg& a = n->args()[i];
        ArgPlan ap;
        if (a.is_node()) {
          ap.kind = ArgPlan::Kind::Slot;
          ap.slot = p.slot_of.at(a.node);
        } else if (contains_node(a)) {
          ap.kind = ArgPlan::Kind::Dynamic;
          ap.type = &sargs[i].type;
          ap.arg = &a;
        } else {
          try {
            ap.constant = to_ivalue(sargs[i].type, a, [](const Node&) -> c10::IValue {
              throw Error("unexpected node reference");
            });
          } catch (const Error& e) {
            throw Error(n->describe() + " argument '" + sargs[i].name + "': " + e.message(),
                        n->info().loc);
          }
        }
        in.args.push_back(std::move(ap));
      }
    }
    const size_t k = static_cast<size_t>(choice.arg);
    if (choice && in.kind == Instr::Kind::Call && in.rng == Instr::Rng::None &&
        k < in.args.size() && in.args[k].kind == ArgPlan::Kind::Slot &&
        last_use.at(n->args()[k].node) == index) {
      try {
        if (choice.inplace) in.inplace_op = &aten_op(*choice.inplace);
        if (choice.inplace || in.op->has_out_variant()) in.write_arg = choice.arg;
      } catch (const Error&) {
        in.inplace_op = nullptr;  // libtorch lacks the variant: run the op as written
      }
      if (in.write_arg >= 0) ++p.num_reinplaced;
    }
    in.out_slot = new_slot(n);
    p.instrs.push_back(std::move(in));
    ++index;
  }
  // Release lists.
  for (auto& [node, last] : last_use) {
    int slot = p.slot_of.at(node);
    if (last == INT32_MAX) continue;
    if (last < 0)
      p.input_release.push_back(slot);
    else
      p.instrs[last].release.push_back(slot);
  }
  if (graph_->output()) flatten_output(graph_->output()->args()[0], p.slot_of, p.output_slots);
  p.early_outputs.resize(p.instrs.size());
  if (offers_outputs) {
    std::unordered_map<int, size_t> instr_of_slot;
    for (size_t i = 0; i < p.instrs.size(); ++i) instr_of_slot[p.instrs[i].out_slot] = i;
    for (size_t k = 0; k < p.output_slots.size(); ++k) {
      auto it = instr_of_slot.find(p.output_slots[k]);
      if (it == instr_of_slot.end()) continue;  // None, or an input
      const Node* n = p.instrs[it->second].node;
      auto read = last_read.find(n);
      if (read != last_read.end() && read->second > static_cast<int>(it->second)) continue;
      p.early_outputs[it->second].push_back(k);
    }
  }
  auto binder = std::make_unique<SymbolBinder>(*graph_);
  if (!binder->empty()) p.binder = std::move(binder);
}

struct SymbolBinder::Impl {
  std::vector<std::string> input_names;
  SymbolBindings bindings;
};

// The rule is bind_symbols' (ir/symbol_binding.h); it throws for a symbol no input binds, here at
// compile time.
SymbolBinder::SymbolBinder(const Graph& graph) : impl_(new Impl) {
  impl_->bindings = bind_symbols(graph);
  for (const Node* ph : graph.placeholders()) impl_->input_names.push_back(ph->name());
}

SymbolBinder::~SymbolBinder() = default;

bool SymbolBinder::empty() const { return impl_->bindings.empty(); }

void SymbolBinder::check(const InputSizeFn& size_of) const {
  const Impl& p = *impl_;
  const SymbolBindings& bs = p.bindings;
  if (bs.empty()) return;
  auto where = [&](int input, int dim) {
    std::string s = "input '" + p.input_names[input] + "'";
    return dim < 0 ? s : s + " dimension " + std::to_string(dim);
  };
  std::vector<int64_t> values(bs.symbols.size());
  for (size_t k = 0; k < bs.symbols.size(); ++k) {
    const SymbolSource& b = bs.symbols[k];
    int64_t size = size_of(b.at.input, b.at.dim);
    if (size % b.divisor != 0)
      throw Error(where(b.at.input, b.at.dim) + " is " + std::to_string(size) + ", not " +
                  std::to_string(b.divisor) + "*" + b.symbol +
                  ": the graph was compiled for sizes divisible by " + std::to_string(b.divisor));
    values[k] = size / b.divisor;
  }
  for (const InputSize& c : bs.checks) {
    int64_t got = size_of(c.input, c.dim);
    std::optional<int64_t> want = c.size.evaluate([&](const std::string& name) {
      int k = bs.find(name);
      return k < 0 ? std::nullopt : std::optional<int64_t>(values[k]);
    });
    if (want && *want == got) continue;
    std::vector<std::string> names;
    c.size.collect_symbols(names);
    std::string from;
    for (const std::string& name : names) {
      int k = bs.find(name);
      if (k < 0) continue;
      const SymbolSource& b = bs.symbols[k];
      from += (from.empty() ? "" : ", ") + name + " = " + std::to_string(values[k]) + " from " +
              where(b.at.input, b.at.dim);
    }
    std::string expr = c.size.to_string();
    throw Error("inputs disagree on size symbol " + names.front() + ": " + where(c.input, c.dim) +
                " is " + std::to_string(got) + ", but " +
                (c.size.symbol_name()
                     ? from
                     : expr + " = " + (want ? std::to_string(*want) : "?") + " with " + from));
  }
}

Interpreter::~Interpreter() = default;

size_t Interpreter::num_outputs() const { return plan_->output_slots.size(); }

size_t Interpreter::num_reinplaced() const { return plan_->num_reinplaced; }

void Interpreter::check_inputs(const std::vector<c10::IValue>& inputs) const {
  const Plan& p = *plan_;
  if (inputs.size() != p.placeholders.size())
    throw Error("expected " + std::to_string(p.placeholders.size()) + " inputs, got " +
                std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Node* ph = p.placeholders[i];
    const ValueMeta& m = ph->meta();
    const c10::IValue& v = inputs[i];
    auto fail = [&](const std::string& why) {
      throw Error("input '" + ph->name() + "' (input " + std::to_string(i) + "): expected " +
                  m.annotation() + ", got " + describe_ivalue(v) + ": " + why);
    };
    if (m.kind == ValueMeta::Kind::SymInt) {
      if (!v.isInt()) fail("not an int");
      if (m.sym.is_concrete() && v.toInt() != m.sym.value()) fail("a different value");
      continue;
    }
    if (m.kind != ValueMeta::Kind::Tensor) continue;
    if (!v.isTensor() || !v.toTensor().defined()) fail("not a tensor");
    const at::Tensor& t = v.toTensor();
    const TensorMeta& tm = m.tensor;
    if (to_c10(tm.dtype) != t.scalar_type()) fail("wrong dtype");
    if (t.dim() != tm.dim()) fail("wrong number of dimensions");
    for (int64_t d = 0; d < t.dim(); ++d) {
      const SymInt& s = tm.sizes[d];
      if (s.is_concrete() && s.value() != t.size(d))
        fail("size mismatch at dimension " + std::to_string(d));
    }
    if (to_c10(tm.device).type() != t.device().type()) fail("wrong device");
  }
  if (p.binder)
    p.binder->check([&](int input, int dim) {
      const c10::IValue& v = inputs[input];
      return dim < 0 ? v.toInt() : v.toTensor().size(dim);
    });
}

std::vector<c10::IValue> Interpreter::run(std::vector<c10::IValue> inputs) const {
  check_inputs(inputs);
  const Plan& p = *plan_;
  std::vector<c10::IValue> slots(p.num_slots);
  for (size_t i = 0; i < inputs.size(); ++i) slots[p.input_slots[i]] = std::move(inputs[i]);
  for (int s : p.input_release) slots[s] = c10::IValue();
  std::vector<c10::IValue> stack;
  const OutputSink* sink = t_output_sink;
  std::vector<char> taken;  // output positions the sink took
  if (sink) taken.assign(p.output_slots.size(), 0);
  size_t at = 0;
  for (const Instr& in : p.instrs) {
    if (in.kind == Instr::Kind::Sym) {
      try {
        slots[in.out_slot] = c10::IValue(run_sym(in, slots));
      } catch (const std::exception& e) {
        throw Error(in.node->describe() + ": " + e.what(), in.node->info().loc);
      }
    } else if (in.kind == Instr::Kind::Cond) {
      auto value = [&](const ArgPlan& a) {
        if (a.kind != ArgPlan::Kind::Dynamic) return operand(a, slots);
        return to_ivalue(*a.type, *a.arg,
                         [&](const Node& n) -> c10::IValue { return slots[p.slot_of.at(&n)]; });
      };
      try {
        slots[in.out_slot] = run_cond(in.branches, value(in.args[0]), value(in.args[1]));
      } catch (const Error& e) {
        throw Error(in.node->describe() + ": " + e.message(), in.node->info().loc);
      } catch (const c10::Error& e) {
        throw Error(in.node->describe() + ": " + e.what_without_backtrace(), in.node->info().loc);
      }
    } else if (in.kind == Instr::Kind::GetItem) {
      const c10::IValue& src = slots[in.getitem_src];
      if (src.isTuple())
        slots[in.out_slot] = src.toTupleRef().elements()[in.getitem_index];
      else if (src.isList())
        slots[in.out_slot] = src.toListRef()[in.getitem_index];
      else
        throw Error(in.node->describe() + ": input is not a tuple or list", in.node->info().loc);
    } else {
      stack.clear();
      stack.reserve(in.args.size());
      bool write = false;
      for (const ArgPlan& a : in.args) {
        if (static_cast<int>(stack.size()) == in.write_arg) {
          // The written argument dies here: moved, so that the stack holds the only reference.
          stack.push_back(std::move(slots[a.slot]));
          write = writable_alone(stack.back());
          continue;
        }
        switch (a.kind) {
          case ArgPlan::Kind::Const: stack.push_back(a.constant); break;
          case ArgPlan::Kind::Slot: stack.push_back(slots[a.slot]); break;
          case ArgPlan::Kind::Dynamic:
            stack.push_back(to_ivalue(*a.type, *a.arg, [&](const Node& n) -> c10::IValue {
              return slots[p.slot_of.at(&n)];
            }));
            break;
        }
      }
      std::vector<c10::IValue> results;
      c10::IValue state;
      try {
        switch (in.rng) {
          case Instr::Rng::None:
            if (in.collective)
              results = call_collective(*in.op, std::move(stack));
            else if (!write)
              results = in.op->call_boxed(std::move(stack));
            else if (in.inplace_op)
              results = in.inplace_op->call_boxed(std::move(stack));
            else
              results = in.op->call_boxed_out(std::move(stack), in.write_arg);
            break;
          case Instr::Rng::RunAndSave:
            results = run_and_save_rng_state(*in.op, std::move(stack));
            state = std::move(results[0]);
            results.erase(results.begin());
            break;
          case Instr::Rng::RunWith: {
            if (!stack[0].isTensor()) throw Error("argument 'rng_state' is not a tensor");
            at::Tensor s = stack[0].toTensor();
            stack.erase(stack.begin());
            results = run_with_rng_state(s, *in.op, std::move(stack));
            break;
          }
          case Instr::Rng::EagerBackward: {
            c10::IValue grads = stack[0], needs = stack[1];
            stack.erase(stack.begin(), stack.begin() + 2);
            results = eager_backward(grads, needs.toIntVector(), *in.op, std::move(stack));
            break;
          }
          case Instr::Rng::WithEffects: {
            // The token orders the call; the op runs now, in graph order (Note [Effect tokens]).
            stack.erase(stack.begin());
            results = in.op->call_boxed(std::move(stack));
            results.insert(results.begin(), c10::IValue(new_effect_token()));
            break;
          }
        }
      } catch (const Error& e) {
        throw Error(in.node->describe() + ": " + e.message(), in.node->info().loc);
      }
      if (in.check_sizes) check_recorded_sizes(*in.node, results);
      c10::IValue value = in.multi_return
                              ? c10::IValue(c10::ivalue::Tuple::create(std::move(results)))
                              : std::move(results.at(0));
      if (in.rng == Instr::Rng::RunAndSave)
        value = c10::ivalue::Tuple::create({std::move(state), std::move(value)});
      slots[in.out_slot] = std::move(value);
    }
    if (sink && !p.early_outputs[at].empty()) {
      bool all = true;
      for (size_t k : p.early_outputs[at]) {
        if (!taken[k] && (*sink)(k, slots[in.out_slot])) taken[k] = 1;
        all = all && taken[k];
      }
      // Every position of the value taken (early_outputs lists them all) and nothing reads it
      // later: free it now.
      if (all) slots[in.out_slot] = c10::IValue();
    }
    for (int s : in.release) slots[s] = c10::IValue();
    ++at;
  }
  std::vector<c10::IValue> out;
  out.reserve(p.output_slots.size());
  for (size_t k = 0; k < p.output_slots.size(); ++k) {
    const int s = p.output_slots[k];
    out.push_back(s < 0 || (!taken.empty() && taken[k]) ? c10::IValue() : slots[s]);
  }
  return out;
}

}  // namespace aotgrad
