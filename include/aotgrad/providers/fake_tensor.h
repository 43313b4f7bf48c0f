// aotgrad: fake tensors and the trace that records their ops -- the C++ make_fx of DESIGN.md's
// "The op world".
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "aotgrad/ir/graph.h"
#include "aotgrad/transforms/symbolize.h"

namespace c10 {
class OperatorHandle;
}

namespace aotgrad {

/// A trace in progress. Fake tensors -- tensors with dtype, sizes, strides and a storage of the
/// right size but no data, on libtorch's VE device (see Note [Fake tensors below autograd]) --
/// stand for nodes of `graph`. Every op libtorch's dispatcher runs on one is appended to the graph
/// as a call (at the VE kernel,
/// below autograd: CompositeImplicitAutograd ops have decomposed on the way, as make_fx records
/// them) and returns fake results with the metadata the call infers; nothing is computed. Autograd
/// works on fake tensors, so a backward run on them is recorded too (traced derivatives).
///
/// A fake is known by its storage (each fake has its own): what autograd saves of a result (a
/// shallow copy), or a tensor pointed at a fake by point_at(), stands for the same node.
/// In-place ops rebind their written tensor to the call that wrote it; results of multi-result ops
/// get their getitem node when first used. A real tensor an op reads (a constant the function made
/// or captured) goes to Options::on_real_tensor, which says what stands for it; a wrapped number
/// (`x * 2`) becomes the Python number.
///
/// One trace is active in the process at a time (libtorch's autograd may run ops on other threads);
/// constructing a second one, on any thread, waits for the first to end, and on the same thread is
/// an Error. Device arguments naming the fake device become `Options::device` in the graph.
class FakeTrace {
 public:
  struct Options {
    /// The device the graph's tensors have (the device of the tensors the fakes stand for).
    Device device;
    /// The value that stands for a real (not fake) tensor read by a recorded op: a node of the
    /// graph (a lifted constant), or a constant. Unset: such a read is an Error naming the op.
    std::function<Arg(const at::Tensor& t, const std::string& where)> on_real_tensor;
    /// Fakes report `device` (as PyTorch's FakeTensor does) rather than the fake device, and carry
    /// the autocast key of that device, so that libtorch's autocast casts them (it casts only the
    /// tensors whose device it autocasts): a capture under at::autocast records its casts as
    /// `_to_copy` nodes. (A factory inside a composite kernel then makes a real tensor of that
    /// device, a lifted constant, as a factory of the function itself does.) CPU only.
    bool real_device = false;
    /// A value computed under grad mode off (torch.no_grad; not the result of a custom autograd
    /// function, which has a grad_fn) is, where an op reads it with grad mode on or it is read as
    /// a result, that value's `detach`: eager autograd does not track it, so the joint graph must
    /// not differentiate through it. Off for the traces of derivatives and decompositions, whose
    /// backward runs under grad mode off. See Note [Values made under no_grad].
    bool detach_no_grad_values = false;
    /// Where the size symbols s0, s1, ... are read from (a placeholder's dimension). With them a
    /// fake may have symbolic sizes (c10::SymInts of aotgrad's expressions, providers/sym_node.h),
    /// and a symbolic size an op reads as an argument becomes the nodes that compute it from the
    /// placeholders' sizes (SizeNodes), as make_fx's symbolic mode records them. Empty: sizes are
    /// concrete.
    std::vector<SymbolSource> symbol_sources;
  };

  FakeTrace(Graph& graph, Options options);
  ~FakeTrace();
  FakeTrace(const FakeTrace&) = delete;
  FakeTrace& operator=(const FakeTrace&) = delete;

  Graph& graph() { return graph_; }

  /// A fake tensor standing for `node` (a tensor value of the graph), with its metadata.
  at::Tensor fake(Node* node, bool requires_grad = false);
  /// The node `t` stands for (its getitem made on first use; its detach when
  /// Options::detach_no_grad_values says so), or nullptr when `t` is not a fake of this trace.
  Node* node_of(const at::Tensor& t);
  /// A size expression an op reads, as an argument: its integer, or the node that computes it
  /// (Options::symbol_sources). Throws Error naming `where` when the graph cannot compute it.
  Arg size_arg(const SymInt& e, const std::string& where);
  /// Names the size nodes size_arg() made, in graph order, once the trace has recorded its calls:
  /// a symbolic trace then names its nodes as PyTorch's does (the calls first, `mul_1:
  /// "Sym(s0*s1)"` after the attention's `mul`), and as the unified traces' graph does.
  void name_size_nodes();
  /// Makes the fake `t` (and every tensor on its storage) stand for `node`.
  void bind(const at::Tensor& t, Node* node);

  /// The trace ops are recorded into now, or nullptr.
  static FakeTrace* active();
  /// Whether `t` is a fake tensor (of any trace).
  static bool is_fake(const at::Tensor& t);
  /// Points `t`'s TensorImpl at `from`'s storage, sizes, strides, dtype, device and dispatch keys
  /// (keeping its own autograd metadata and version counter), as Tensor::set_data does but also
  /// between a real tensor and a fake: torch.func.functional_call for libtorch modules, whose
  /// parameters are C++ members that only their TensorImpl reaches.
  static void point_at(const at::Tensor& t, const c10::intrusive_ptr<c10::TensorImpl>& from);

  /// The device fakes are on (a factory given it makes a fake).
  static c10::Device fake_device();

  /// Records one op call (the VE kernel's body).
  void record(const c10::OperatorHandle& op, std::vector<c10::IValue>* stack);

  /// The checkpoint policy of the calls recorded from now on, by OpDef name ("aten::mm"; empty
  /// function: none), as frontend/checkpoint.h sets it for a region. Returns the previous one.
  using RecomputePolicyFn = std::function<RecomputePolicy(const std::string& op)>;
  RecomputePolicyFn set_recompute_policy(RecomputePolicyFn policy);

 private:
  RecomputePolicyFn recompute_policy_;
  /// Records a call whose result's shape depends on a real mask's values through the long indices
  /// the mask selects (see Note [Masks the function made]); false when `key` is not such a call.
  bool rewrite_mask(const std::string& key, std::vector<c10::IValue>& inputs,
                    std::vector<c10::IValue>* stack);

  /// A detach of `n`, remembered as one the trace added (Note [Values made under no_grad]).
  Node* add_detach(Node* n);
  /// Points the call's written tensors that require grad, under no_grad, at clones of their values
  /// (`values`, by OpDef argument), to be written back by record() (Note [Writes under no_grad]).
  void route_no_grad_writes(const c10::OperatorHandle& handle, const OpDef& op,
                            const std::vector<int>& libtorch_index,
                            const std::vector<c10::IValue>& inputs, std::vector<Arg>& values);

  struct Entry;
  struct State;
  Graph& graph_;
  Options options_;
  std::unique_ptr<State> state_;
};

}  // namespace aotgrad
