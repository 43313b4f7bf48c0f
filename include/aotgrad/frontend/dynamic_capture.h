// aotgrad: captures a libtorch C++ function as a graph with symbolic sizes (s0, s1, ...), the
// front end of dynamic shapes in aot_function.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aotgrad/frontend/capture.h"
#include "aotgrad/transforms/symbolize.h"

namespace aotgrad {

/// Dimension `dim` of input `input`, compiled as a size symbol.
struct DynamicDim {
  size_t input = 0;
  int64_t dim = 0;
  bool operator==(const DynamicDim& o) const { return input == o.input && dim == o.dim; }
  bool operator<(const DynamicDim& o) const {
    return input != o.input ? input < o.input : dim < o.dim;
  }
};

/// A dynamic capture: the symbolic graph, where its symbols are read from, the points it was
/// traced at (the first gives the hints) and the conditions it assumed.
struct DynamicCapture {
  std::shared_ptr<const Graph> graph;
  TracePoints points;
  /// Every input dimension that is a symbol, with its symbol's index (Dynamo's duck sizing: the
  /// dimensions of equal example sizes share one symbol).
  std::vector<std::pair<DynamicDim, size_t>> dims;
  /// The guards, as PyTorch prints them: "2 <= s0", "Eq(Mod(L['arg0_1'].size()[0], 2), 0)" (a
  /// size traced as a multiple of its symbol), "L['arg1_1'].size()[0] == s0" (a dimension that
  /// shares a symbol).
  std::vector<std::string> guards;
  /// The graph came from one trace with symbolic sizes (Note [One symbolic trace] in
  /// dynamic_capture.cc); else it was unified from traces at three sizes, and `unified_because`
  /// says why the symbolic trace was not taken.
  bool symbolic_trace = false;
  std::string unified_because;
  /// The guards the symbolic trace took (control flow on a size, a size read as an integer), as
  /// PyTorch's ShapeEnv records them; their texts are in `guards` too, and bind_dynamic checks
  /// them.
  std::vector<ShapeGuard> size_guards;
  /// The traces the graph was unified from (same_graph_at adds one to them); empty for a symbolic
  /// trace.
  std::vector<std::shared_ptr<const Graph>> traces;
  /// Per symbol, the values below 2 a trace showed the graph serves (0 and 1 are otherwise
  /// guarded out, as PyTorch specializes them).
  std::vector<std::vector<int64_t>> verified_small;
  /// The graph does not depend on its inputs' storage offsets (no as_strided, no offset read):
  /// bind_dynamic admits an input at any offset (a slice of a batch), as PyTorch's guards do.
  bool offset_free = false;
};

/// How a dynamic capture traces: one trace with symbolic sizes where it can (Auto), else
/// traces at three sizes unified into one graph; or only one of the two (tests compare them).
enum class DynamicTrace { Auto, Symbolic, Unified };

/// Captures `fn` (capture.h) once with symbolic sizes: the dimensions `dims` are the symbols s0,
/// s1, ... with the example sizes as hints, and the guards the trace takes (control flow on a
/// size) are recorded in `size_guards` (Note [One symbolic trace] in dynamic_capture.cc). When
/// that cannot be -- an op the registry does not declare, a kernel that reads a size as an integer,
/// a guard that fixes a size, a size 0 or 1 -- it traces at the sizes of `example_inputs` and at
/// two other sizes of the
/// dimensions `dims` (fresh empty tensors of the same dtype, device, stride order and
/// requires_grad), and unifies the traces (symbolize.h) into the graph PyTorch 2.x prints for a
/// dynamic trace: inputs `f32[s0, 8]`, SymInt nodes from `sym_size.int`, sizes `2*s0`. A size of
/// 0 or 1 is traced at 2 and up and checked by a fourth trace at its own value. A function that
/// needs a size divisible by m (`view(B // 2, ...)`, heads splitting a width) does not trace or
/// unify with the size a bare symbol; it is traced again with the size m*s0 (s0 = size // m, the
/// smallest m of the example size's divisors that works, guarded `Eq(Mod(size, m), 0)`), so that
/// every size stays a polynomial the meta functions prove. Lifted constants
/// come from the first trace and must not change with the sizes. Throws Error when the function
/// cannot be captured at the other sizes or the traces do not unify (control flow on a size, a
/// size no expression fits), naming the node; the caller may then compile statically.
DynamicCapture capture_dynamic(const TensorFunction& fn,
                               const std::vector<at::Tensor>& example_inputs,
                               std::vector<DynamicDim> dims, const CaptureOptions& options = {},
                               DynamicTrace how = DynamicTrace::Auto);

/// The symbols' values for `args` when they fit the dynamic graph's inputs -- each input's dtype,
/// device, sizes, strides, storage offset and requires_grad as its placeholder says with the
/// symbols bound from the inputs' dimensions -- and its size guards hold; else nullopt with the
/// first failed guard in `failed` ("2 <= s0 (s0 = 1)", "argument 1's size 0 is 5, not s0 = 8",
/// "Eq(Mod(L['arg0_1'].size()[0], 2), 0) (L['arg0_1'].size()[0] = 7)"). The values are the
/// symbols', a size traced as m*s0 giving s0 = size / m.
/// With `check_small` false the size guards `2 <= s0` are not checked; the symbolic trace's
/// `size_guards` always are ("s0 > 4 (s0 = 3)").
std::optional<std::vector<int64_t>> bind_dynamic(const DynamicCapture& c,
                                                 const std::vector<at::Tensor>& args,
                                                 std::string* failed = nullptr,
                                                 bool check_small = true);

/// Whether `fn` traced at the sizes of `args` (whose symbols `values` bound) is the dynamic graph
/// at those sizes: the traces of `c` and this one unify into the same graph. Used when a size
/// guard fails (a size 0 or 1), to serve the call without compiling again.
bool same_graph_at(const DynamicCapture& c, const TensorFunction& fn,
                   const std::vector<at::Tensor>& args, const std::vector<int64_t>& values,
                   const CaptureOptions& options = {});

}  // namespace aotgrad
