// aotgrad: the interpreter backend and the ATen ops libtorch 1.13 lacks.
#include "aotgrad/runtime/compiler.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <mutex>

#include "aotgrad/runtime/collectives.h"
#include "aotgrad/runtime/effects.h"
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

namespace {

// PyTorch 2.x's functional batch norm: native_batch_norm on copies of the running stats, which
// are returned as new values instead of being mutated.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>
native_batch_norm_legit_functional(const at::Tensor& input, const c10::optional<at::Tensor>& weight,
                                   const c10::optional<at::Tensor>& bias,
                                   const at::Tensor& running_mean, const at::Tensor& running_var,
                                   bool training, double momentum, double eps) {
  at::Tensor mean = running_mean.clone();
  at::Tensor var = running_var.clone();
  auto [out, save_mean, save_invstd] =
      at::native_batch_norm(input, weight, bias, mean, var, training, momentum, eps);
  return {out, save_mean, save_invstd, mean, var};
}

}  // namespace

void register_compat_ops() {
  register_collective_kernels();
  register_effect_ops();
  static std::once_flag once;
  std::call_once(once, [] {
    static torch::Library lib(torch::Library::FRAGMENT, "aten", c10::nullopt, __FILE__, __LINE__);
    if (!c10::Dispatcher::singleton().findSchema(
            {"aten::_native_batch_norm_legit_functional", ""})) {
      lib.def(
          "_native_batch_norm_legit_functional(Tensor input, Tensor? weight, Tensor? bias, Tensor "
          "running_mean, "
          "Tensor running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, "
          "Tensor, Tensor "
          "running_mean_out, Tensor running_var_out)");
      lib.impl("_native_batch_norm_legit_functional",
               torch::dispatch(c10::DispatchKey::CompositeExplicitAutograd,
                               TORCH_FN(native_batch_norm_legit_functional)));
    }
  });
}

}  // namespace aotgrad
