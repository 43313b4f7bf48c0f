// aotgrad tests: a backend whose outputs come back with other strides than traced, for the
// FakifiedOutWrapper (runtime/wrappers/fakified_out.h).
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

#include "aotgrad/runtime/compiler.h"

namespace aotgrad {

/// The interpreter, with every 2-d output copied to column-major strides.
class TransposingCompiler final : public Compiler {
 public:
  std::string name() const override { return "transposing"; }
  CompiledFn compile(std::shared_ptr<const Graph> graph) const override {
    CompiledFn inner = InterpreterCompiler().compile(std::move(graph));
    return [inner](std::vector<c10::IValue> in) {
      std::vector<c10::IValue> out = inner(std::move(in));
      for (c10::IValue& v : out)
        if (v.isTensor() && v.toTensor().dim() == 2) v = v.toTensor().t().contiguous().t();
      return out;
    };
  }
};

}  // namespace aotgrad
