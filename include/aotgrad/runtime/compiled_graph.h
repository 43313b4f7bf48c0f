// aotgrad: a graph compiled for inference, inside the inference stack of the seed's §13.7
// (runtime/wrappers/stack.h) that makes it behave as eager does: written duplicates merged,
// synthetic bases, input-mutation write-back, aliased outputs, effect tokens.
#pragma once

#include <ATen/core/ivalue.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "aotgrad/driver/compile_options.h"
#include "aotgrad/ir/graph.h"
#include "aotgrad/runtime/compiler.h"
#include "aotgrad/runtime/wrappers/runtime_wrapper.h"
#include "aotgrad/runtime/wrappers/synthetic_base.h"
#include "aotgrad/transforms/functionalize.h"
#include "aotgrad/transforms/input_mutations.h"

namespace aotgrad {

/// One compiled form of the graph, for one way the caller's arguments alias each other.
struct Specialization {
  std::string key;                      // the alias signature it was compiled for
  std::shared_ptr<const Graph> source;  // the graph after dedupe / synthetic-base rewriting
  std::shared_ptr<const Graph> fw;      // the functional graph the backend received
  ViewAndMutationMeta meta;
  bool deduped = false;
  /// R1-R2: fw's inputs from the caller's arguments (empty: the arguments as they are).
  SyntheticBaseInputs inputs;
  /// R3: the write-back and the aliased outputs.
  RuntimeWrapper runtime;
  /// R5-R8: fw compiled, with its effect tokens and (a custom compiler) traced strides.
  CompiledFn fn;
};

/// A graph compiled for inference. Calling it runs the compiled functional graph and then does what
/// eager mode would have left behind: mutated arguments hold their new values (written back with
/// copy_, or as_strided_ for metadata), outputs that are arguments are those very tensors, outputs
/// that are views of arguments are views of them. Arguments that are the same tensor (§13.24) or
/// overlapping views of one storage (§13.23) get a specialization compiled for that aliasing.
/// Thread-safe.
class CompiledGraph {
 public:
  /// Verifies `graph`; compilation of the no-aliasing specialization is immediate. `options` are
  /// the compile driver's (decompositions, keep_inference_input_mutations, the compile cache: each
  /// specialization is cached under its own key); `compiler` is the backend (nullptr: the
  /// interpreter).
  CompiledGraph(std::shared_ptr<const Graph> graph, CompileOptions options = {},
                std::shared_ptr<const Compiler> compiler = nullptr);

  /// Runs on `args` (one per placeholder), mutating them as eager mode would. Returns the user
  /// outputs (output leaves; None for None).
  std::vector<c10::IValue> operator()(std::vector<c10::IValue> args);

  /// The specialization for arguments that do not alias each other.
  const Specialization& plain() const { return *plain_; }
  /// The specialization `args` would use (compiling it if needed).
  const Specialization& specialization_for(const std::vector<c10::IValue>& args);
  int num_specializations() const;

 private:
  std::shared_ptr<Specialization> compile(std::shared_ptr<const Graph> source, std::string key,
                                          SyntheticBaseInputs inputs) const;

  std::shared_ptr<const Graph> graph_;
  std::shared_ptr<const InputMutations> mutations_;
  std::vector<int> output_is_arg_;  // per output leaf: the argument it is the very tensor of, or -1
  // Whether the graph writes an argument it also views by as_strided, which may reach past the
  // argument's elements: then even one argument needs a plan (a synthetic base of one).
  bool absolute_written_ = false;
  CompileOptions options_;
  std::shared_ptr<const Compiler> compiler_;
  std::shared_ptr<Specialization> plain_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Specialization>> by_key_;
};

}  // namespace aotgrad
