// aotgrad: fake tensors on libtorch's VE device, and the trace that records their ops.
#include "aotgrad/providers/fake_tensor.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/AutogradState.h>
#include <c10/core/GradMode.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "aotgrad/ir/error.h"
#include "aotgrad/ops/functionalization.h"
#include "aotgrad/ops/known_ops.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/providers/aten_call.h"
#include "aotgrad/providers/dispatcher_ops.h"
#include "aotgrad/providers/sym_node.h"
#include "aotgrad/providers/symbolic_kernels.h"

namespace aotgrad {

// Note [Fake tensors below autograd]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A fake tensor's dispatch keys are {VE, AutogradVE, ADInplaceOrView}. Every op without a
// CompositeImplicitAutograd kernel gets aotgrad's recording kernel at VE (a
// kernel per op, not a fallback: a backend fallback ranks below CompositeExplicitAutograd kernels,
// which would then run their decompositions on fakes). Ops with a CompositeImplicitAutograd kernel
// keep it, so they decompose above the recording kernel as in eager libtorch and in make_fx -- a
// backend kernel on them would also remove their autograd slot. Autograd runs above the fakes as
// for real tensors, which gives intermediate values their requires_grad (composite kernels branch
// on it) and lets a backward be traced by applying a fake result's grad_fn. Fakes live on the
// fake device rather than the real one, so that factories inside kernels (`at::empty(...,
// self.options())`) make fakes too instead of real tensors that would escape the trace.
//
// The fake device is libtorch's VE device type (NEC's vector engine), for which libtorch registers
// no kernel: a device type of its own, with its own dispatch keys, that libtorch's autograd engine
// treats as a CPU-like device. libtorch 1.13's fakes lived on PrivateUse1, but libtorch 2 counts
// PrivateUse1 as an accelerator: its autograd engine asks the accelerator for the current stream
// of every PrivateUse1 gradient and fails ("Cannot access accelerator device when none is
// available"), and composite kernels take their fused accelerator paths for it (gru_cell, lstm_cell
// call `_thnn_fused_*`). Registering PrivateUse1 as the accelerator would fix the first only by
// making it the process's accelerator ahead of CUDA, which would give CUDA tensors' gradients
// PrivateUse1 streams.

namespace {

const c10::DeviceType kFakeDevice = c10::DeviceType::VE;
const c10::DispatchKey kRecordKey = c10::DispatchKey::VE;
const c10::DispatchKey kAutogradKey = c10::DispatchKey::AutogradVE;

// The fake device's guard: one device, one stream, nothing to switch (autograd asks it for the
// stream of every differentiable result).
struct FakeGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kFakeDevice; }
  c10::Device exchangeDevice(c10::Device) const override { return c10::Device(kFakeDevice, 0); }
  c10::Device getDevice() const override { return c10::Device(kFakeDevice, 0); }
  void setDevice(c10::Device) const override {}
  void uncheckedSetDevice(c10::Device) const noexcept override {}
  c10::Stream getStream(c10::Device d) const noexcept override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream exchangeStream(c10::Stream s) const noexcept override {
    return c10::Stream(c10::Stream::DEFAULT, s.device());
  }
  c10::DeviceIndex deviceCount() const noexcept override { return 1; }
};

c10::DispatchKeySet fake_keys() {
  return c10::DispatchKeySet(kRecordKey) | c10::DispatchKeySet(kAutogradKey) |
         c10::DispatchKeySet(c10::DispatchKey::ADInplaceOrView);
}

// --- the active trace ---------------------------------------------------------------------------

std::mutex g_trace_mu;
std::condition_variable g_trace_cv;
FakeTrace* g_active = nullptr;
std::thread::id g_active_thread;

void fake_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  FakeTrace* trace = FakeTrace::active();
  if (!trace)
    throw Error(c10::toString(op.operator_name()) +
                " was called on a fake tensor outside of a trace (a fake tensor kept after the "
                "capture that made it?)");
  trace->record(op, stack);
}

// The recording kernel on every op that has no CompositeImplicitAutograd kernel; ops registered
// since the last call get theirs too (a user's TORCH_LIBRARY ops).
void register_kernels() {
  static std::mutex mu;
  static std::unordered_map<std::string, c10::RegistrationHandleRAII> handles;
  static bool guard_registered = false;
  std::lock_guard<std::mutex> lock(mu);
  if (!guard_registered) {
    if (c10::impl::device_guard_impl_registry[static_cast<size_t>(kFakeDevice)].load())
      throw Error(
          "aotgrad's fake tensors use libtorch's VE device, which another backend in "
          "this process has claimed");
    static FakeGuardImpl guard;
    c10::impl::device_guard_impl_registry[static_cast<size_t>(kFakeDevice)].store(&guard);
    // An op without an Autograd kernel (a user's TORCH_LIBRARY op with only a CPU kernel) falls
    // through autograd on fakes as it does on CPU tensors: libtorch 1.13 registers that fallthrough
    // for AutogradCPU and some other backends, not for AutogradVE.
    static std::optional<c10::RegistrationHandleRAII> fallthrough;
    if (!c10::Dispatcher::singleton().hasBackendFallbackForDispatchKey(kAutogradKey))
      fallthrough.emplace(c10::Dispatcher::singleton().registerFallback(
          kAutogradKey, c10::KernelFunction::makeFallthrough(),
          "aotgrad fake tensors: as AutogradCPU's"));
    register_symbolic_kernels();
    guard_registered = true;
  }
  auto& d = c10::Dispatcher::singleton();
  for (const c10::OperatorName& name : d.getAllOpNames()) {
    std::string key = c10::toString(name);
    if (handles.count(key)) continue;
    auto h = d.findSchema(name);
    if (!h || h->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd)) continue;
    if (h->hasKernelForDispatchKey(kRecordKey)) continue;
    handles.emplace(key, d.registerImpl(name, kRecordKey,
                                        c10::KernelFunction::makeFromBoxedFunction<&fake_kernel>(),
                                        c10::nullopt, nullptr, "aotgrad fake tensors"));
  }
}

// The bytes a storage needs for `m` (at the symbols' hints: a symbolic fake's storage is never
// read, and nothing checks its size against symbolic sizes).
int64_t storage_bytes(const TensorMeta& m) {
  int64_t extent = m.storage_offset.hint_or(0) + 1;
  for (size_t d = 0; d < m.sizes.size(); ++d) {
    const int64_t size = m.sizes[d].hint_or(0);
    if (size == 0) return 0;
    extent += (size - 1) * m.strides[d].hint_or(0);
  }
  return extent * element_size(m.dtype);
}

// A fake with symbolic sizes: libtorch's TensorImpl answers its SymInt sizes itself, but sends a
// read of them as integers (`sizes()`, `numel()`) to the Python interpreter PyTorch's fake tensors
// live beside. Here such a read is an error that names it: a kernel that reads concrete sizes
// cannot be traced symbolically (Note [One symbolic trace] in frontend/dynamic_capture.cc).
class SymbolicFake final : public c10::TensorImpl {
 public:
  SymbolicFake(c10::Storage&& storage, c10::DispatchKeySet keys, caffe2::TypeMeta dtype)
      : TensorImpl(std::move(storage), keys, dtype) {}

  const char* tensorimpl_type_name() const override { return "aotgrad's symbolic fake tensor"; }

  c10::intrusive_ptr<TensorImpl> shallow_copy_and_detach(
      const c10::VariableVersion& version_counter,
      bool allow_tensor_metadata_change) const override {
    return copy(version_counter, allow_tensor_metadata_change);
  }
  c10::intrusive_ptr<TensorImpl> shallow_copy_and_detach(
      c10::VariableVersion&& version_counter, bool allow_tensor_metadata_change) const override {
    return copy(version_counter, allow_tensor_metadata_change);
  }

 protected:
  c10::IntArrayRef sizes_custom() const override { concrete_read("sizes()"); }
  c10::IntArrayRef strides_custom() const override { concrete_read("strides()"); }
  int64_t numel_custom() const override { concrete_read("numel()"); }
  int64_t storage_offset_custom() const override { concrete_read("storage_offset()"); }
  int64_t size_custom(int64_t d) const override {
    d = c10::maybe_wrap_dim(d, dim_default(), /*wrap_scalar=*/false);
    if (auto v = sym_sizes_default()[d].maybe_as_int()) return *v;
    concrete_read("size(" + std::to_string(d) + ")");
  }
  int64_t dim_custom() const override { return dim_default(); }
  c10::Device device_custom() const override { return device_default(); }
  c10::Layout layout_custom() const override { return c10::kStrided; }
  c10::SymIntArrayRef sym_sizes_custom() const override { return sym_sizes_default(); }
  c10::SymIntArrayRef sym_strides_custom() const override { return sym_strides_default(); }
  c10::SymInt sym_numel_custom() const override { return sym_numel_default(); }
  c10::SymInt sym_storage_offset_custom() const override { return sym_storage_offset_default(); }
  c10::SymInt sym_size_custom(int64_t d) const override {
    d = c10::maybe_wrap_dim(d, dim_default(), /*wrap_scalar=*/false);
    return sym_sizes_default()[d];
  }
  c10::SymBool sym_is_contiguous_custom(at::MemoryFormat format) const override {
    return sym_is_contiguous_default(format);
  }
  bool is_strides_like_custom(at::MemoryFormat format) const override {
    return is_strides_like_default(format);
  }
  c10::SymBool sym_is_non_overlapping_and_dense_custom() const override {
    return sym_is_non_overlapping_and_dense_default();
  }

 private:
  template <typename Version>
  c10::intrusive_ptr<TensorImpl> copy(Version&& version, bool allow_metadata_change) const {
    auto impl = c10::make_intrusive<SymbolicFake>(c10::Storage(storage_), key_set_, data_type_);
    copy_tensor_metadata(this, impl.get(), std::forward<Version>(version), allow_metadata_change);
    return impl;
  }
  [[noreturn]] void concrete_read(const std::string& what) const {
    std::string sizes;
    for (const c10::SymInt& s : sym_sizes_default())
      sizes += (sizes.empty() ? "" : ", ") + c10::str(s);
    TORCH_CHECK(false, "a kernel reads the symbolic sizes [", sizes, "] as integers (", what,
                "), which a symbolic trace cannot record");
  }
};

// A fake tensor with `m`'s dtype, sizes, strides and storage offset, on a data-less storage of the
// size those need.
c10::intrusive_ptr<c10::TensorImpl> new_fake(const TensorMeta& m, const std::string& what,
                                             const FakeTrace::Options& options) {
  const bool symbolic = has_symbolic_sizes(m);
  AOTGRAD_CHECK(!symbolic || !options.symbol_sources.empty(), "fake tensor for ", what,
                " with symbolic sizes ", m.annotation(), " in a trace without size symbols");
  c10::Device device(kFakeDevice, 0);
  c10::DispatchKeySet keys = fake_keys();
  if (options.real_device) {  // a CPU device (checked by FakeTrace's constructor)
    device = to_c10(options.device);
    keys = keys | c10::DispatchKeySet(c10::DispatchKey::AutocastCPU);
  }
  c10::Storage storage(c10::Storage::use_byte_size_t(), storage_bytes(m),
                       c10::DataPtr(nullptr, device), nullptr, /*resizable=*/false);
  if (symbolic) {
    auto impl = c10::make_intrusive<SymbolicFake>(
        std::move(storage), keys, caffe2::TypeMeta::fromScalarType(to_c10(m.dtype)));
    std::vector<c10::SymInt> sizes, strides;
    for (const SymInt& s : m.sizes) sizes.push_back(to_c10_symint(s));
    for (const SymInt& s : m.strides) strides.push_back(to_c10_symint(s));
    impl->set_sizes_and_strides(sizes, strides, to_c10_symint(m.storage_offset));
    return impl;
  }
  auto impl = c10::make_intrusive<c10::TensorImpl>(
      std::move(storage), keys, caffe2::TypeMeta::fromScalarType(to_c10(m.dtype)));
  std::vector<int64_t> sizes, strides;
  for (const SymInt& s : m.sizes) sizes.push_back(s.value());
  for (const SymInt& s : m.strides) strides.push_back(s.value());
  impl->set_sizes_and_strides(sizes, strides);
  impl->set_storage_offset(m.storage_offset.value());
  return impl;
}

// A TensorImpl subclass only for its access to TensorImpl's protected static metadata copy (which
// copies the cached numel too: a parameter pointed at a fake of other sizes, a sharded parameter's
// gathered whole, reports the new one to ATen's checks).
struct MetadataCopier : c10::TensorImpl {
  static void copy(const c10::TensorImpl* from, c10::TensorImpl* to) {
    c10::TensorImpl::copy_tensor_metadata(from, to, to->version_counter(),
                                          to->allow_tensor_metadata_change());
  }
};

std::string op_key(const c10::OperatorHandle& h) {
  const c10::OperatorName& n = h.operator_name();
  return n.overload_name.empty() ? n.name : n.name + "." + n.overload_name;
}

}  // namespace

// --- the trace --------------------------------------------------------------------------------

// A value a fake stands for: a node, or element `index` of another (its getitem made on first use).
struct FakeTrace::Entry {
  Node* node = nullptr;
  std::shared_ptr<Entry> parent;
  int64_t index = 0;
  // Computed under grad mode off (see Note [Values made under no_grad]).
  bool no_grad = false;
};

struct FakeTrace::State {
  // Keyed by storage: every fake has its own, and what autograd saves of a result (a shallow copy,
  // another TensorImpl) or a module parameter pointed at a fake (point_at) shares it.
  std::unordered_map<c10::StorageImpl*, std::pair<c10::Storage, std::shared_ptr<Entry>>> fakes;

  void set(const at::Tensor& t, std::shared_ptr<Entry> e) {
    const c10::Storage& st = t.unsafeGetTensorImpl()->unsafe_storage();
    fakes[st.unsafeGetStorageImpl()] = {st, std::move(e)};
  }
  std::shared_ptr<Entry> get(const at::Tensor& t) const {
    if (!t.defined() || !t.has_storage()) return nullptr;
    auto it = fakes.find(t.unsafeGetTensorImpl()->unsafe_storage().unsafeGetStorageImpl());
    return it == fakes.end() ? nullptr : it->second.second;
  }
  // How each op's libtorch arguments map to its OpDef's (by name); made once per op and trace.
  struct OpMap {
    const OpDef* def = nullptr;
    std::vector<int> libtorch_index;  // per OpDef argument: libtorch's position, or -1
    std::vector<int> missing;         // libtorch arguments the OpDef lacks
  };
  std::unordered_map<std::string, OpMap> ops;
  // The thread's autograd multithreading setting before the trace (restored after it).
  bool multithreading = true;
  // Grad mode was on when the trace began: the graph may be differentiated.
  bool grad_at_start = false;
  // A write under no_grad that record() routes (see Note [Writes under no_grad]).
  struct RoutedWrite {
    at::Tensor tensor;
    Node* old = nullptr;   // what the tensor stood for before the write
    Node* copy = nullptr;  // the clone the op writes instead
  };
  std::vector<RoutedWrite> routed;
  // The nodes of the size expressions ops read (Options::symbol_sources), made on first use.
  std::unique_ptr<SizeNodes> sizes;

  Node* materialize(const std::shared_ptr<Entry>& e, Graph& g) {
    if (!e->node) e->node = g.add_getitem(materialize(e->parent, g), e->index);
    return e->node;
  }
};

FakeTrace* FakeTrace::active() {
  std::lock_guard<std::mutex> lock(g_trace_mu);
  return g_active;
}

FakeTrace::FakeTrace(Graph& graph, Options options)
    : graph_(graph), options_(std::move(options)), state_(std::make_unique<State>()) {
  AOTGRAD_CHECK(!options_.real_device || to_c10(options_.device).is_cpu(),
                "fake tensors of the real device: ", to_c10(options_.device).str(),
                " is not supported (CPU only)");
  install_libtorch_ops();
  register_kernels();
  std::unique_lock<std::mutex> lock(g_trace_mu);
  if (g_active && g_active_thread == std::this_thread::get_id())
    throw Error("a fake-tensor trace was started inside another one on the same thread");
  g_trace_cv.wait(lock, [] { return g_active == nullptr; });
  g_active = this;
  g_active_thread = std::this_thread::get_id();
  // Backwards of fakes run on this thread, in the engine's CPU ready queue. libtorch's autograd
  // engine sizes its per-device queues once, at the process's first backward, from the device
  // guards registered then: after a real CPU backward that ran before the fake device's guard was
  // registered, a VE gradient would find no queue (an internal assert in Engine::ready_queue).
  // Without multithreading the engine takes the CPU queue for every device.
  c10::AutogradState& autograd = c10::AutogradState::get_tls_state();
  state_->multithreading = autograd.get_multithreading_enabled();
  state_->grad_at_start = c10::GradMode::is_enabled();
  autograd.set_multithreading_enabled(false);
}

FakeTrace::~FakeTrace() {
  c10::AutogradState::get_tls_state().set_multithreading_enabled(state_->multithreading);
  {
    std::lock_guard<std::mutex> lock(g_trace_mu);
    g_active = nullptr;
  }
  g_trace_cv.notify_one();
}

c10::Device FakeTrace::fake_device() { return c10::Device(kFakeDevice, 0); }

bool FakeTrace::is_fake(const at::Tensor& t) {
  return t.defined() && t.key_set().has_backend(c10::BackendComponent::VEBit);
}

at::Tensor FakeTrace::fake(Node* node, bool requires_grad) {
  AOTGRAD_CHECK(node && node->meta().is_tensor(),
                "fake tensor for a value that is not a tensor: ", node ? node->describe() : "null");
  auto impl = new_fake(node->meta().tensor, node->describe(), options_);
  at::Tensor t(impl);
  if (requires_grad) t.set_requires_grad(true);
  auto e = std::make_shared<Entry>();
  e->node = node;
  state_->set(t, std::move(e));
  return t;
}

// Note [Values made under no_grad]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Autograd runs above the fakes, so under torch.no_grad it gives the results no history, as it
// does eagerly; but the captured graph is differentiated by its own rules, which would see through
// the region. So a value computed under grad mode off is read, by an op that runs with grad mode on
// or as a result of the capture, through a `detach` added at that read (make_fx's graph has no
// such node: there autograd itself differentiates the trace). Not so:
// - a value with a grad_fn: a custom autograd function's result (its forward runs under grad mode
//   off, its backward is the grad_fn);
// - a tensor that requires grad, written in place under no_grad: it keeps its history (Note
//   [Writes under no_grad]).
// An op that writes the value with grad mode on writes its detach, a view, and so the value (the
// tensor then stands for the value again, not for the detach): the write's own derivative starts
// the value's history, as eagerly. No detach node is reused: a cond branch that reads the value
// moves its nodes into its subgraph.
Node* FakeTrace::node_of(const at::Tensor& t) {
  std::shared_ptr<Entry> e = state_->get(t);
  if (!e) return nullptr;
  Node* n = state_->materialize(e, graph_);
  if (!e->no_grad || !options_.detach_no_grad_values || !c10::GradMode::is_enabled() || t.grad_fn())
    return n;
  Node* d = add_detach(n);
  // A view made under no_grad of a tensor that requires grad requires grad itself (a leaf).
  d->info().no_grad_view_requires_grad = t.requires_grad();
  return d;
}

Node* FakeTrace::add_detach(Node* n) {
  Node* d = graph_.add_call(aten_ops().get("aten::detach"), {Arg(n)});
  d->info().no_grad_read = true;
  return d;
}

// Note [Writes under no_grad]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Eagerly, a tensor that requires grad written in place under torch.no_grad (an optimizer's step
// on a parameter, a straight-through estimator's `with no_grad: y.copy_(y.round())`) keeps its
// history: later uses are differentiated as the tensor itself, whatever the write did. The
// graph says so with what it has: the op writes a copy of the tensor's detached value instead, and
// the tensor is then written with values_with_history(copy, old) (src/ops/functionalization.cc),
// whose values are the copy's, exactly, and whose gradient is old's. PyTorch's AOTAutograd gets the
// same from autograd running above functionalization (mutations_under_no_grad_or_inference_mode).
// A tensor that does not require grad is written detach(copy): the write's other operands may
// require grad, and eagerly its new value has no history. The copy_ is a hidden_write: an input
// written only so is written back under no_grad (InputInfo::mutations_hidden_from_autograd), so
// a leaf that requires grad can be (an optimizer's step). Only when the trace began with grad
// mode on (else nothing is differentiated), for written tensors, not lists, and not by view ops
// (metadata writes).
void FakeTrace::route_no_grad_writes(const c10::OperatorHandle& handle, const OpDef& op,
                                     const std::vector<int>& libtorch_index,
                                     const std::vector<c10::IValue>& inputs,
                                     std::vector<Arg>& values) {
  if (!options_.detach_no_grad_values || !state_->grad_at_start || c10::GradMode::is_enabled() ||
      op.has_tag(kView))
    return;
  const auto& largs = handle.schema().arguments();
  for (size_t i = 0; i < values.size(); ++i) {
    int li = libtorch_index[i];
    if (li < 0 || !values[i].is_node() || !inputs[li].isTensor()) continue;
    const c10::AliasInfo* alias = largs[li].alias_info();
    const at::Tensor& w = inputs[li].toTensor();
    if (!alias || !alias->isWrite() || !is_fake(w)) continue;
    State::RoutedWrite r;
    r.tensor = w;
    r.old = values[i].node;
    r.copy = graph_.add_call(ops::clone(), {Arg(add_detach(r.old))});
    values[i] = Arg(r.copy);
    state_->routed.push_back(std::move(r));
  }
}

Arg FakeTrace::size_arg(const SymInt& e, const std::string& where) {
  if (e.is_concrete()) return Arg::of_int(e.value());
  AOTGRAD_CHECK(!options_.symbol_sources.empty(), where, " is the symbolic size ", e.to_string(),
                " in a trace without size symbols");
  if (!state_->sizes)
    state_->sizes = std::make_unique<SizeNodes>(graph_, options_.symbol_sources,
                                                /*deferred_names=*/true);
  std::optional<Arg> a = state_->sizes->arg_for(e, nullptr);
  if (!a)
    throw Error(where + " is the size " + e.to_string() +
                ", which a graph computes only as c*m + k of its size symbols (m a product of "
                "symbols)");
  return *a;
}

void FakeTrace::name_size_nodes() {
  if (state_->sizes) state_->sizes->assign_names();
}

void FakeTrace::bind(const at::Tensor& t, Node* node) {
  AOTGRAD_CHECK(is_fake(t), "FakeTrace::bind: ", t.toString(), " is not a fake tensor");
  auto e = std::make_shared<Entry>();
  e->node = node;
  state_->set(t, std::move(e));
}

void FakeTrace::point_at(const at::Tensor& t, const c10::intrusive_ptr<c10::TensorImpl>& from) {
  MetadataCopier::copy(from.get(), t.unsafeGetTensorImpl());
}

namespace {

// Arguments of a recorded call, converted from libtorch's values to the IR's.
class ArgReader {
 public:
  ArgReader(FakeTrace& trace, const FakeTrace::Options& options, const std::string& op)
      : trace_(trace), options_(options), op_(op) {}

  Arg read(const c10::IValue& v, const TypeRef& t, const std::string& name) {
    where_ = op_ + " argument '" + name + "'";
    return value(v, t);
  }

 private:
  [[noreturn]] void unsupported(const c10::IValue& v, const TypeRef& t) {
    throw Error(where_ + ": a " + v.tagKind() + " where the schema has " + t.to_string() +
                ", which aotgrad cannot record");
  }

  Arg tensor(const at::Tensor& t) {
    if (!t.defined()) return Arg::none();
    if (Node* n = trace_.node_of(t)) return Arg(n);
    if (FakeTrace::is_fake(t))
      throw Error(where_ + ": a fake tensor this trace did not make (from another capture?)");
    if (t.unsafeGetTensorImpl()->is_wrapped_number()) {
      if (t.scalar_type() == at::kBool) return Arg::of_bool(t.item<bool>());
      if (at::isIntegralType(t.scalar_type(), /*includeBool=*/false))
        return Arg::of_int(t.item<int64_t>());
      return Arg::of_float(t.item<double>());
    }
    if (options_.on_real_tensor) return options_.on_real_tensor(t, where_);
    throw Error(where_ + " is a tensor that is neither an input nor made from one (" +
                t.toString() + " " + c10::str(t.sizes()) + ")");
  }

  Arg scalar(const c10::IValue& v, const TypeRef& t) {
    if (v.isBool()) return Arg::of_bool(v.toBool());
    if (v.isInt()) return Arg::of_int(v.toInt());
    if (v.isDouble()) return Arg::of_float(v.toDouble());
    if (v.isSymInt()) {
      c10::SymInt s = v.toSymInt();
      if (auto i = s.maybe_as_int()) return Arg::of_int(*i);
      if (std::optional<SymInt> e = from_c10_symint(s)) return trace_.size_arg(*e, where_);
    }
    unsupported(v, t);
  }

  Arg value(const c10::IValue& v, const TypeRef& t) {
    if (v.isNone()) return Arg::none();
    if (t.list) {
      TypeRef elem = t;
      elem.list = false;
      elem.optional = t.elem_optional;
      std::vector<Arg> out;
      if (v.isTensorList()) {
        for (const at::Tensor& x : v.toTensorVector()) out.push_back(tensor(x));
      } else if (v.isList()) {
        for (const c10::IValue& x : v.toListRef()) out.push_back(value(x, elem));
      } else if (v.isInt() || v.isSymInt()) {  // int[N] given as one int
        return scalar(v, elem);
      } else {
        unsupported(v, t);
      }
      return Arg::of_list(std::move(out));
    }
    switch (t.base) {
      case BaseType::Tensor:
        if (!v.isTensor()) {
          if (v.isInt() || v.isDouble() || v.isBool() || v.isSymInt()) return scalar(v, t);
          unsupported(v, t);
        }
        return tensor(v.toTensor());
      case BaseType::Int:
      case BaseType::SymInt:
      case BaseType::Float:
      case BaseType::Bool:
      case BaseType::Scalar: {
        Arg a = scalar(v, t);
        if (t.base == BaseType::Float && a.kind == Arg::Kind::Int)
          return Arg::of_float(static_cast<double>(a.i));
        return a;
      }
      case BaseType::ScalarType: {
        if (!v.isInt()) unsupported(v, t);
        auto st = scalar_type_from_c10_code(static_cast<int>(v.toInt()));
        if (!st)
          throw Error(where_ + ": dtype code " + std::to_string(v.toInt()) +
                      " has no aotgrad dtype");
        return Arg::of_dtype(*st);
      }
      case BaseType::Layout:
        if (!v.isInt() || v.toInt() > 1) unsupported(v, t);
        return Arg::of_layout(static_cast<Layout>(v.toInt()));
      case BaseType::MemoryFormat:
        if (!v.isInt() || v.toInt() < 0 || v.toInt() > 3) unsupported(v, t);
        return Arg::of_memory_format(static_cast<MemoryFormat>(v.toInt()));
      case BaseType::Device: {
        if (!v.isDevice()) unsupported(v, t);
        c10::Device d = v.toDevice();
        return Arg::of_device(d.type() == kFakeDevice ? options_.device : from_c10(d));
      }
      case BaseType::Str:
        if (!v.isString()) unsupported(v, t);
        return Arg::of_str(v.toStringRef());
      case BaseType::Generator:
        throw Error(where_ +
                    ": an explicit random generator, which a graph cannot hold (use the "
                    "default generator)");
      case BaseType::Any: unsupported(v, t);
    }
    unsupported(v, t);
  }

  FakeTrace& trace_;
  const FakeTrace::Options& options_;
  const std::string& op_;
  std::string where_;
};

}  // namespace

namespace {

bool is_real_mask(const c10::IValue& v) {
  if (!v.isTensor()) return false;
  const at::Tensor& t = v.toTensor();
  return t.defined() && !FakeTrace::is_fake(t) &&
         (t.scalar_type() == at::kBool || t.scalar_type() == at::kByte);
}

// A real bool mask as the long indices it selects, one per dimension (what ATen's index does).
void append_mask_indices(const at::Tensor& mask, c10::List<c10::optional<at::Tensor>>& out) {
  at::Tensor nz = mask.nonzero();
  for (int64_t d = 0; d < mask.dim(); ++d) out.push_back(nz.select(1, d).clone());
}

}  // namespace

// Note [Masks the function made]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The shape of masked_select's result, and of index's with a bool mask, depends on the mask's
// values: no Meta kernel gives it. When the mask is a real tensor (a constant the function made,
// as cross_entropy's label smoothing makes `target != ignore_index`), its values are known, and
// the call is recorded as ATen computes it: the mask becomes the long indices it selects (nonzero),
// which are constants, and the result's shape is static -- masked_select(x, m) is
// index(x.expand(b), m.nonzero() by dimension), index / index_put with a mask index the same.
bool FakeTrace::rewrite_mask(const std::string& key, std::vector<c10::IValue>& inputs,
                             std::vector<c10::IValue>* stack) {
  if (key == "aten::masked_select") {
    if (!is_real_mask(inputs[1]) || !is_fake(inputs[0].toTensor())) return false;
    at::Tensor self = inputs[0].toTensor(), mask = inputs[1].toTensor();
    std::vector<int64_t> b = at::infer_size(self.sizes(), mask.sizes());
    at::Tensor x = self.sizes().equals(b) ? self : self.expand(b);
    c10::List<c10::optional<at::Tensor>> indices;
    append_mask_indices(mask.expand(b), indices);
    stack->emplace_back(at::index(x, indices));
    return true;
  }
  bool index = key == "aten::index.Tensor";
  bool put = key == "aten::index_put" || key == "aten::index_put_";
  if (!index && !put) return false;
  c10::List<c10::optional<at::Tensor>> given = inputs[1].toOptionalTensorList();
  bool any = false;
  for (size_t i = 0; i < given.size(); ++i) {
    c10::optional<at::Tensor> t = given.get(i);
    any = any || (t && is_real_mask(c10::IValue(*t)));
  }
  if (!any) return false;
  c10::List<c10::optional<at::Tensor>> indices;
  for (size_t i = 0; i < given.size(); ++i) {
    c10::optional<at::Tensor> t = given.get(i);
    if (t && is_real_mask(c10::IValue(*t)))
      append_mask_indices(*t, indices);
    else
      indices.push_back(t);
  }
  const at::Tensor& self = inputs[0].toTensor();
  if (index) {
    stack->emplace_back(at::index(self, indices));
  } else if (key == "aten::index_put") {
    stack->emplace_back(at::index_put(self, indices, inputs[2].toTensor(), inputs[3].toBool()));
  } else {
    at::Tensor s = self;
    s.index_put_(indices, inputs[2].toTensor(), inputs[3].toBool());
    stack->emplace_back(s);
  }
  return true;
}

FakeTrace::RecomputePolicyFn FakeTrace::set_recompute_policy(RecomputePolicyFn policy) {
  std::swap(policy, recompute_policy_);
  return policy;
}

void FakeTrace::record(const c10::OperatorHandle& handle, std::vector<c10::IValue>* stack) {
  const std::string key = op_key(handle);
  auto it = state_->ops.find(key);
  if (it == state_->ops.end()) {
    State::OpMap m;
    m.def = aten_ops().find(key);
    if (!m.def) throw Error("trace: " + key + " has no OpDef (not in libtorch's dispatcher?)");
    const auto& largs = handle.schema().arguments();
    for (const SchemaArg& a : m.def->schema.args) {
      int li = -1;
      for (size_t j = 0; j < largs.size(); ++j)
        if (largs[j].name() == a.name) li = static_cast<int>(j);
      m.libtorch_index.push_back(li);
    }
    for (size_t j = 0; j < largs.size(); ++j)
      if (m.def->schema.arg_index(largs[j].name()) < 0) m.missing.push_back(static_cast<int>(j));
    it = state_->ops.emplace(key, std::move(m)).first;
  }
  const State::OpMap& map = it->second;
  const OpDef& op = *map.def;
  const c10::FunctionSchema& ls = handle.schema();
  const size_t n_in = ls.arguments().size();
  AOTGRAD_CHECK(stack->size() >= n_in, "trace: ", key, " called with ", stack->size(),
                " values for ", n_in, " arguments");
  std::vector<c10::IValue> inputs(stack->end() - static_cast<std::ptrdiff_t>(n_in), stack->end());
  stack->resize(stack->size() - n_in);
  if (rewrite_mask(key, inputs, stack)) return;

  // libtorch arguments the OpDef lacks must hold their defaults.
  for (int j : map.missing) {
    const c10::Argument& la = ls.arguments()[j];
    if (!(la.default_value() && *la.default_value() == inputs[j]))
      throw Error("trace: " + key + " is called with argument '" + la.name() +
                  "', which aotgrad's schema of " + op.name + " does not have");
  }

  // As Python code calls ops: positional arguments up to the last one given, keyword-only ones
  // when they differ from their defaults.
  ArgReader reader(*this, options_, op.name);
  const auto& sargs = op.schema.args;
  std::vector<Arg> values(sargs.size());
  std::vector<bool> given(sargs.size(), false);
  for (size_t i = 0; i < sargs.size(); ++i) {
    int li = map.libtorch_index[i];
    if (li < 0) continue;
    values[i] = reader.read(inputs[li], sargs[i].type, sargs[i].name);
    given[i] = !sargs[i].has_default || !(values[i] == default_arg(sargs[i]));
  }
  route_no_grad_writes(handle, op, map.libtorch_index, inputs, values);
  std::vector<State::RoutedWrite> routed;
  routed.swap(state_->routed);
  size_t n_positional = 0;
  while (n_positional < sargs.size() && !sargs[n_positional].kwarg_only) ++n_positional;
  size_t last = 0;
  for (size_t i = 0; i < n_positional; ++i)
    if (given[i]) last = i + 1;
  std::vector<Arg> positional;
  std::vector<std::pair<std::string, Arg>> kwargs;
  for (size_t i = 0; i < last; ++i)
    positional.push_back(given[i] || !sargs[i].has_default ? values[i] : default_arg(sargs[i]));
  for (size_t i = n_positional; i < sargs.size(); ++i)
    if (given[i]) kwargs.emplace_back(sargs[i].name, values[i]);
  Node* node = graph_.add_call(op, std::move(positional), std::move(kwargs));
  if (recompute_policy_) node->info().recompute = recompute_policy_(op.name);

  // Results: the written input itself for Tensor(a!), else fakes with the inferred metadata.
  const auto& rets = ls.returns();
  const bool no_grad = !c10::GradMode::is_enabled();
  auto root = std::make_shared<Entry>();
  root->node = node;
  root->no_grad = no_grad;
  auto element = [&](size_t r) -> std::shared_ptr<Entry> {
    if (rets.size() == 1) return root;
    auto e = std::make_shared<Entry>();
    e->parent = root;
    e->index = static_cast<int64_t>(r);
    e->no_grad = no_grad;
    return e;
  };
  auto meta_of = [&](size_t r) -> const ValueMeta& {
    return rets.size() == 1 ? node->meta() : node->meta().elems.at(r);
  };
  // Every tensor result gets its getitem right after the call, as make_fx makes them.
  std::vector<std::shared_ptr<Entry>> tensors;
  auto make_fake = [&](const ValueMeta& m, std::shared_ptr<Entry> e) -> at::Tensor {
    if (m.kind == ValueMeta::Kind::None) return at::Tensor();
    AOTGRAD_CHECK(m.is_tensor(), "trace: ", node->describe(), " gives ", m.describe(),
                  " where libtorch returns a tensor");
    at::Tensor t(new_fake(m.tensor, node->describe(), options_));
    tensors.push_back(e);
    state_->set(t, std::move(e));
    return t;
  };
  for (size_t r = 0; r < rets.size(); ++r) {
    const c10::Argument& ret = rets[r];
    const c10::AliasInfo* alias = ret.alias_info();
    if (alias && alias->isWrite()) {
      // The written argument is the result; it now stands for this call's value.
      int written = -1;
      for (size_t j = 0; j < n_in; ++j) {
        const c10::AliasInfo* a = ls.arguments()[j].alias_info();
        if (a && a->isWrite() && a->beforeSets() == alias->beforeSets())
          written = static_cast<int>(j);
      }
      AOTGRAD_CHECK(written >= 0 && inputs[written].isTensor(), "trace: ", key, " result ", r,
                    " is written but names no tensor argument");
      const at::Tensor& w = inputs[written].toTensor();
      AOTGRAD_CHECK(is_fake(w), "trace: ", key, " writes ", w.toString(),
                    ", a tensor that is not fake (a constant written in place?)");
      auto e = element(r);
      if (w.requires_grad()) e->no_grad = false;
      // Written through the detach node_of() added: the tensor is still the value itself.
      for (size_t i = 0; i < sargs.size(); ++i) {
        const Node* d = map.libtorch_index[i] == written ? values[i].node : nullptr;
        if (d && d->kind() == NodeKind::Call && d->info().no_grad_read) {
          e = std::make_shared<Entry>();
          e->node = d->arg(0).node;
          e->no_grad = !w.requires_grad();  // still without history: still read detached
        }
      }
      tensors.push_back(e);
      state_->set(w, std::move(e));
      stack->push_back(inputs[written]);
      continue;
    }
    const ValueMeta& m = meta_of(r);
    if (ret.type()->kind() == c10::TypeKind::ListType) {
      AOTGRAD_CHECK(m.kind == ValueMeta::Kind::Tuple, "trace: ", node->describe(), " gives ",
                    m.describe(), " where libtorch returns a list");
      auto list_entry = element(r);
      std::vector<at::Tensor> elems;
      for (size_t k = 0; k < m.elems.size(); ++k) {
        auto e = std::make_shared<Entry>();
        e->parent = list_entry;
        e->index = static_cast<int64_t>(k);
        e->no_grad = no_grad;
        elems.push_back(make_fake(m.elems[k], std::move(e)));
      }
      stack->emplace_back(c10::List<at::Tensor>(elems));
      continue;
    }
    if (m.kind == ValueMeta::Kind::SymInt) {
      AOTGRAD_CHECK(m.sym.is_concrete() || !options_.symbol_sources.empty(),
                    "trace: ", node->describe(), " gives the symbolic size ", m.sym.to_string(),
                    " in a trace without size symbols");
      stack->emplace_back(to_c10_symint(m.sym));
      continue;
    }
    if (m.kind == ValueMeta::Kind::None && ret.type()->kind() == c10::TypeKind::OptionalType) {
      stack->emplace_back();
      continue;
    }
    if (m.kind != ValueMeta::Kind::None && !m.is_tensor())
      throw Error("trace: " + node->describe() + " gives " + m.describe() +
                  ", a value a traced graph cannot use as a constant");
    stack->emplace_back(make_fake(m, element(r)));
  }
  for (const auto& e : tensors) state_->materialize(e, graph_);
  for (const State::RoutedWrite& w : routed) {
    // tensor = the copy's values with old's gradient (values_with_history; the write's other
    // operands, read under no_grad, get none). A tensor that does not require grad is written
    // detach(copy): no gradient flows into its new value.
    Node* value = w.tensor.requires_grad()
                      ? values_with_history(graph_, w.copy, w.old)
                      : graph_.add_call(aten_ops().get("aten::detach"), {Arg(w.copy)});
    Node* written = graph_.add_call(ops::copy_(), {Arg(w.old), Arg(value)});
    written->info().hidden_write = true;
    auto e = std::make_shared<Entry>();
    e->node = written;
    e->no_grad = !w.tensor.requires_grad();  // read through a detach, as any no_grad value
    state_->set(w.tensor, std::move(e));
  }
}

}  // namespace aotgrad
