// aotgrad: the backend interface -- a Compiler turns a graph into a callable (DESIGN.md, Runtime).
#pragma once

#include <ATen/core/ivalue.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "aotgrad/ir/graph.h"

namespace aotgrad {

/// A compiled graph: takes one IValue per placeholder, returns the output leaves in order.
using CompiledFn = std::function<std::vector<c10::IValue>(std::vector<c10::IValue>)>;

/// A backend (the seed's fw_compiler / bw_compiler, §13.35). compile() receives a verified
/// functional graph whose placeholders carry the example inputs' metadata.
class Compiler {
 public:
  virtual ~Compiler() = default;
  virtual std::string name() const = 0;
  virtual CompiledFn compile(std::shared_ptr<const Graph> graph) const = 0;
};

/// The default backend: the Interpreter running ATen kernels (the seed's aot_eager, §13.40), by
/// default re-inplacing the calls whose first argument dies there (InterpreterOptions::reinplace).
class InterpreterCompiler final : public Compiler {
 public:
  explicit InterpreterCompiler(bool reinplace = true) : reinplace_(reinplace) {}
  std::string name() const override {
    return reinplace_ ? "interpreter" : "interpreter_functional";
  }
  CompiledFn compile(std::shared_ptr<const Graph> graph) const override;

 private:
  bool reinplace_;
};

/// The process-wide default compiler.
std::shared_ptr<const Compiler> default_compiler();

/// Registers, once, aotgrad's kernels beside libtorch's own: aten::_print's at BackendSelect
/// (providers/effect_ops.h).
void register_compat_ops();

}  // namespace aotgrad
