// aotgrad: PyTorch's AOTSyntheticBaseWrapper (§13.7 R2, §13.23) and the merge of written
// duplicates (§13.24) -- the plan, the graph rewrite, and the inputs of each call, which the
// inference stack (CompiledGraph) and aot_function's training stack share.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aotgrad/ir/graph.h"
#include "aotgrad/transforms/input_mutations.h"

namespace aotgrad {

/// Whether two tensors on one storage have a byte in common (their extents overlap).
bool overlapping_views(const at::Tensor& a, const at::Tensor& b);

/// A pair of arguments that are overlapping views of one storage, one of which is written: they
/// need a synthetic base (§13.23). `first` < `second`; `written` is one of them.
struct WrittenOverlap {
  size_t first = 0, second = 0, written = 0;
};
/// The first such pair of `args` (by the later argument, then the earlier), with `written(i)`
/// saying whether argument i is written; nullopt when there is none.
std::optional<WrittenOverlap> find_written_overlap(const std::vector<at::Tensor>& args,
                                                   const std::function<bool(size_t)>& written);

/// How a call's arguments alias each other, as PyTorch's AOTDedupeWrapper and merge_view_inputs
/// decide: an identical tensor passed twice is merged into its first occurrence when either is
/// mutated (§13.24); distinct views of one storage of which one is data-mutated and some overlap
/// share one synthetic base (§13.23). Views that do not overlap, or that nothing writes, stay
/// independent arguments.
struct AliasPlan {
  std::vector<int> duplicate_of;        // per arg: the earlier identical arg it merges into, or -1
  std::vector<std::vector<int>> bases;  // groups of distinct args sharing a synthetic base
  bool empty() const;
  /// A text that differs between any two plans (a cache key).
  std::string key() const;
};

/// Whether `t`, which requires grad, is as_strided of a view (its grad_fn an AsStridedBackward)
/// reaching elements of the storage that view does not have. Written in place, eagerly the write's
/// backward reaches its old value through the base (CopySlices) there too; a compiled function
/// that takes `t` itself as its input would send that gradient through the as_strided's own
/// backward, which drops those elements (as PyTorch 2.11's AOTAutograd does).
bool strided_past_its_view(const at::Tensor& t);

/// The plan for `args` (undefined tensors are never aliased) of a graph whose placeholders are
/// mutated as `mut` says. Overlapping views with different dtypes, or of which one has its
/// metadata changed, are an Error naming them (no synthetic base can serve them). `training`:
/// an argument the graph writes that is strided_past_its_view gets a synthetic base too (its
/// autograd base), with the other arguments of its storage, so that its gradient reaches the base
/// as eagerly.
AliasPlan plan_aliasing(const std::vector<const at::Tensor*>& args, const InputMutations& mut,
                        bool training = false);

/// The tensor a group's views are regenerated from. `differentiable` (a training compilation):
/// PyTorch's rule, the views' common autograd base (`_base`, or one of the views that is the
/// others' base), so that gradients and the write-back of the base reach the caller's graph; an
/// Error naming the arguments when they have none ("non-differentiable view input mutations") --
/// except that views of which none requires grad get a storage base as in inference. Otherwise:
/// a 1-d tensor spanning the group's whole storage.
at::Tensor synthetic_base(const std::vector<at::Tensor>& group, const std::vector<int>& positions,
                          bool differentiable);

/// The wrapper at call time: a merged graph's inputs made from a call's tensors. Empty (no
/// sources): the graph takes the tensors as they are.
struct SyntheticBaseInputs {
  std::vector<std::vector<int>> groups;  // per base: the tensors (indices) regenerated from it
  std::vector<int> sources;              // per graph input: a tensor index, or -(1 + b): base b
  bool differentiable = false;           // synthetic_base's rule: training's, or inference's

  bool empty() const { return sources.empty(); }
  /// This call's bases (synthetic_base). `positions` names each tensor in errors (the caller's
  /// argument position, or -1); empty: the tensor indices themselves.
  std::vector<at::Tensor> bases(const std::vector<const at::Tensor*>& tensors,
                                const std::vector<int>& positions = {}) const;
  /// The graph's inputs: per source, the tensor or the base.
  template <typename T>
  std::vector<T> inputs(const std::vector<T>& tensors, const std::vector<at::Tensor>& bases) const {
    if (empty()) return tensors;
    std::vector<T> out;
    out.reserve(sources.size());
    for (int s : sources) out.push_back(s >= 0 ? tensors[s] : T(bases[-1 - s]));
    return out;
  }
};

/// `graph` with its placeholders rewritten for `plan` (PyTorch's merge_view_inputs followed by the
/// view regeneration of its synthetic-base wrapper): a duplicate uses its first occurrence's
/// placeholder; the views of group b become `as_strided` of a new placeholder `base`, laid out as
/// that group's synthetic base for `args` (by the `differentiable` rule; `positions` as for
/// SyntheticBaseInputs::bases), with each view's sizes, strides and storage offset. The bases come
/// after the arguments kept (PyTorch passes them first; the order is aotgrad's calling convention
/// only). `inputs` makes the merged graph's inputs from a later call's tensors.
struct MergedInputs {
  std::shared_ptr<Graph> graph;
  SyntheticBaseInputs inputs;
};
MergedInputs merge_view_inputs(const Graph& graph, const AliasPlan& plan,
                               const std::vector<const at::Tensor*>& args, bool differentiable,
                               const std::vector<int>& positions = {});

}  // namespace aotgrad
