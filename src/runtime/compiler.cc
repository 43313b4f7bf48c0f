// aotgrad: the interpreter backend.
#include "aotgrad/runtime/compiler.h"

#include "aotgrad/providers/effect_ops.h"
#include "aotgrad/runtime/interpreter.h"

namespace aotgrad {

CompiledFn InterpreterCompiler::compile(std::shared_ptr<const Graph> graph) const {
  auto interp = std::make_shared<Interpreter>(std::move(graph), InterpreterOptions{reinplace_});
  return [interp](std::vector<c10::IValue> args) { return interp->run(std::move(args)); };
}

std::shared_ptr<const Compiler> default_compiler() {
  static const std::shared_ptr<const Compiler> c = std::make_shared<InterpreterCompiler>();
  return c;
}

void register_compat_ops() { register_effect_ops(); }

}  // namespace aotgrad
