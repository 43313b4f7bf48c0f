// aotgrad: runs a Graph on libtorch tensors by calling each node's ATen kernel (aot_eager).
#pragma once

#include <ATen/core/ivalue.h>

#include <memory>
#include <vector>

#include "aotgrad/ir/graph.h"

namespace aotgrad {

/// Executes a graph as written (in-place ops included) through c10 boxed kernels resolved once.
/// Each value is released right after its last use, so the memory profile is the program's.
/// Thread-compatible: concurrent run() calls on one Interpreter are safe.
class Interpreter {
 public:
  /// Resolves every op and plans value slots. Throws Error naming the node whose op libtorch lacks.
  explicit Interpreter(std::shared_ptr<const Graph> graph);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  /// Checks `inputs` against the placeholders (count, dtype, sizes, device; symbols bound
  /// consistently) and runs the graph. Returns the output's leaves in order (nested tuples
  /// flattened; a None output is a None IValue). Errors name the placeholder or the node.
  std::vector<c10::IValue> run(std::vector<c10::IValue> inputs) const;
  /// The input checks of run() alone.
  void check_inputs(const std::vector<c10::IValue>& inputs) const;

  const Graph& graph() const { return *graph_; }
  size_t num_outputs() const;

 private:
  struct Plan;
  std::shared_ptr<const Graph> graph_;
  std::unique_ptr<Plan> plan_;
};

}  // namespace aotgrad
