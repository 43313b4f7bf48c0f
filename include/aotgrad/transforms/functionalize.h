// aotgrad: functionalization -- in-place ops and mutations through views become a pure graph.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "aotgrad/ir/graph.h"
#include "aotgrad/transforms/passes/dce.h"  // eliminate_dead_code, used on functionalized graphs

namespace aotgrad {

/// What functionalization learned about one graph input (the seed's ViewAndMutationMeta, §13.16).
struct InputInfo {
  bool mutates_data = false;       // written, directly or through a view
  bool mutates_metadata = false;   // t_, transpose_, as_strided_, ... applied to the input itself
  bool mutation_in_graph = false;  // the write-back is a trailing copy_ in the graph
  bool requires_grad = false;
  /// Every write of it is one autograd does not see: under torch.no_grad (NodeInfo::hidden_write)
  /// or through a detach() (Note [Writes through detach]). It is written back under no_grad and
  /// keeps its history, as PyTorch's mutations_hidden_from_autograd and
  /// mutations_under_no_grad_or_inference_mode.
  bool mutations_hidden_from_autograd = false;
  int view =
      -1;  // metadata mutated: the output of FunctionalizeResult::input_views with its new geometry
};

/// How a user output relates to the inputs.
enum class OutputKind : uint8_t {
  kFresh,         // a new tensor (or a view of an intermediate)
  kIsInput,       // the input itself (returned as is, possibly mutated)
  kAliasOfInput,  // a view of an input: regenerated from the caller's tensor at run time
  kNone,          // the output is None
};

struct OutputInfo {
  OutputKind kind = OutputKind::kFresh;
  int input = -1;  // kIsInput / kAliasOfInput
  int view =
      -1;  // kAliasOfInput of a written input: the output of FunctionalizeResult::input_views
  /// kAliasOfInput with a view: eager took it before a later write of its storage, so autograd
  /// gives it, when its backward runs, a grad_fn regenerated as an as_strided of its base. Set
  /// only where that differs from the grad_fn of its views (an as_strided among them).
  bool grad_fn_from_base = false;
};

struct ViewAndMutationMeta {
  std::vector<InputInfo> inputs;
  std::vector<OutputInfo> outputs;  // one per user output leaf
  /// Inputs whose new value the functional graph returns first, in input order (data or
  /// metadata mutations not kept in the graph).
  std::vector<int> mutated_inputs_returned;
  int num_mutated_outputs() const { return static_cast<int>(mutated_inputs_returned.size()); }
  /// Effect tokens (Note [Effect tokens], ops/registry.h): the functional graph takes this many
  /// tokens before the inputs and returns the final ones before everything else (0 or 1: one
  /// ordered effect). `inputs`, `outputs` and `mutated_inputs_returned` do not count them; the
  /// runtime passes fresh tokens in and drops the final ones (PyTorch's EffectTokensWrapper).
  int num_tokens = 0;
};

/// The op a functionalized graph writes a mutated input back with when the mutation stays in the
/// graph (keep_input_mutations): a trailing `copy_(placeholder, new_value)`.
inline constexpr const char* kWriteBackOp = "aten::copy_";

struct FunctionalizeOptions {
  /// Keep data mutations of inputs in the graph as a trailing `copy_(input, new_value)` (the
  /// seed's keep_inference_input_mutations, §13.13) instead of returning the new value.
  bool keep_input_mutations = false;
  /// Names of the functional graph's placeholders (default: the original names); with an effect
  /// token, index 0 names the token and index i + 1 input i (arg0_1 is the token, as PyTorch's).
  /// Unset, the token is named `token`.
  std::function<std::string(size_t)> input_name;
};

struct FunctionalizeResult {
  std::unique_ptr<Graph> graph;  // outputs: (new values of mutated inputs..., user outputs...)
  ViewAndMutationMeta meta;
  /// Views only, over the same inputs: what eager mode leaves as views of the inputs (the final
  /// view of each metadata-mutated input, each output that is a view of a written input), replayed
  /// from the input. Run on the caller's tensors, it gives eager's exact strides and offsets
  /// whatever their layout, as PyTorch regenerates aliases with _view_func (§13.7). Outputs: see
  /// `view` in InputInfo and OutputInfo (-1 when a view's arguments are symbolic values of
  /// `graph`).
  std::unique_ptr<Graph> input_views;
};

/// Rewrites `g` into a graph without mutations: every in-place op becomes its functional variant;
/// a write through a view becomes the matching scatter into its base (slice_scatter,
/// select_scatter, as_strided_scatter, ... or the inverse view); views of a mutated storage read
/// after the write are replayed from the updated base; metadata mutations (t_, ...) become views.
/// Effectful calls (aten::_print, ops registered effectful) become with_effects calls threading
/// an effect token (Note [Effect tokens]). See Note [Functionalization] in functionalize.cc.
/// Throws Error naming the node for a mutation it cannot express (an op with no functional
/// variant, a write into an expanded view, ...).
FunctionalizeResult functionalize(const Graph& g, const FunctionalizeOptions& options = {});

}  // namespace aotgrad
