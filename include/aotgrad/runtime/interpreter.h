// aotgrad: runs a Graph on libtorch tensors by calling each node's ATen kernel (aot_eager).
#pragma once

#include <ATen/core/ivalue.h>

#include <functional>
#include <memory>
#include <vector>

#include "aotgrad/ir/graph.h"

namespace aotgrad {

/// The size symbols of a graph's inputs: each bound by the first input that has it as a size (a
/// SymInt input or a tensor dimension), the other symbolic input sizes checked against it.
class SymbolBinder {
 public:
  /// Throws Error for a symbol that some size of the graph reads but no input binds.
  explicit SymbolBinder(const Graph& graph);
  ~SymbolBinder();
  SymbolBinder(const SymbolBinder&) = delete;
  SymbolBinder& operator=(const SymbolBinder&) = delete;
  bool empty() const;  // no input size is symbolic
  /// The size of dimension `dim` of input `input` (dim -1: a SymInt input's value).
  using InputSizeFn = std::function<int64_t(int input, int dim)>;
  /// Throws Error naming the symbol and both inputs when two sizes disagree.
  void check(const InputSizeFn& size_of) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// How an Interpreter runs its graph.
struct InterpreterOptions {
  /// Run the calls transforms/passes/reinplace.h's reinplace_plan picks with their in-place variant
  /// or their out= overload, into the buffer of an argument that dies there: a functional graph
  /// allocates no more than the eager program did. A call runs in place only when, at that moment,
  /// nothing else holds that tensor or its storage (the caller, autograd, a view) and it does not
  /// require grad; else as written.
  bool reinplace = true;
};

/// Receives a graph output as soon as run() has computed it, while a ScopedOutputSink is alive on
/// the calling thread: `index` is the output's position in run()'s result. Returning true takes
/// the value: run() returns None in that position and frees the value once nothing else reads it.
/// Offered only by graphs with no in-place op, collective or effectful op (so an output's value is
/// final when it is computed), and only outputs no later call reads. CompiledFunction's backward
/// adds each gradient into its leaf's `.grad` this way, as eager's AccumulateGrad does as soon as
/// a gradient is made, instead of holding every gradient to the end of the backward.
using OutputSink = std::function<bool(size_t index, const c10::IValue& value)>;

/// Installs `sink` for Interpreter::run on this thread for its lifetime (the previous one after).
class ScopedOutputSink {
 public:
  explicit ScopedOutputSink(OutputSink sink);
  ~ScopedOutputSink();
  ScopedOutputSink(const ScopedOutputSink&) = delete;
  ScopedOutputSink& operator=(const ScopedOutputSink&) = delete;

 private:
  OutputSink sink_;
  const OutputSink* previous_;
};

/// Executes a graph as written (in-place ops included) through c10 boxed kernels resolved once.
/// Each value is released right after its last use, so the memory profile is the program's.
/// Thread-compatible: concurrent run() calls on one Interpreter are safe.
class Interpreter {
 public:
  /// Resolves every op and plans value slots. Throws Error naming the node whose op libtorch lacks,
  /// or a size symbol that no input binds.
  explicit Interpreter(std::shared_ptr<const Graph> graph, InterpreterOptions options = {});
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  /// Checks `inputs` against the placeholders (count, dtype, sizes, device; every size symbol
  /// bound from the inputs and the sizes that read it consistent) and runs the graph, evaluating
  /// sym_size / sym_stride / sym_numel and SymInt arithmetic (operator.mul & co.) itself. Returns
  /// the output's leaves in order (nested tuples flattened; a None output is a None IValue). Errors
  /// name the placeholder or the node.
  std::vector<c10::IValue> run(std::vector<c10::IValue> inputs) const;
  /// The input checks of run() alone.
  void check_inputs(const std::vector<c10::IValue>& inputs) const;

  const Graph& graph() const { return *graph_; }
  size_t num_outputs() const;
  /// The calls planned to run in place (each still falls back to its own op when its argument is
  /// shared at run time).
  size_t num_reinplaced() const;

 private:
  struct Plan;
  std::shared_ptr<const Graph> graph_;
  std::unique_ptr<Plan> plan_;
};

}  // namespace aotgrad
