// aotgrad: aten::_print's kernel, effect tokens and the EffectTokensWrapper.
#include "aotgrad/providers/effect_ops.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <iostream>
#include <mutex>

#include "aotgrad/ir/error.h"
#include "aotgrad/providers/fake_tensor.h"

namespace aotgrad {
namespace {

std::mutex g_print_mu;
std::ostream* g_print_stream = nullptr;  // nullptr: std::cout

// aotgrad's kernel for aten::_print at BackendSelect, a key libtorch leaves empty for it (the op
// has no tensor argument, so BackendSelect, in every thread's dispatch keys, is where a call
// arrives first). Inside a capture the call is recorded, as make_fx records it; otherwise
// libtorch's kernel runs, with std::cout writing to the print stream for its duration.
void print_select_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet ks,
                         torch::jit::Stack* stack) {
  if (FakeTrace* trace = FakeTrace::active()) {
    trace->record(op, stack);
    return;
  }
  std::lock_guard<std::mutex> lock(g_print_mu);
  struct Redirect {
    std::streambuf* saved = nullptr;
    explicit Redirect(std::ostream* to) {
      if (to) saved = std::cout.rdbuf(to->rdbuf());
    }
    ~Redirect() {
      std::cout.flush();
      if (saved) std::cout.rdbuf(saved);
    }
  } redirect(g_print_stream);
  op.redispatchBoxed(
      ks & c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, c10::DispatchKey::BackendSelect),
      stack);
}

const c10::OperatorHandle& print_op() {
  register_effect_ops();
  static const c10::OperatorHandle op =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::_print", "");
  return op;
}

}  // namespace

void register_effect_ops() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (!c10::Dispatcher::singleton().findSchema({"aten::_print", ""}))
      throw Error("libtorch has no aten::_print (libtorch 2.11 or newer defines it)");
    static torch::Library impl(torch::Library::IMPL, "aten", c10::DispatchKey::BackendSelect,
                               __FILE__, __LINE__);
    impl.impl("_print", torch::CppFunction::makeFromBoxedFunction<&print_select_kernel>());
  });
}

void print(const std::string& s) {
  torch::jit::Stack stack{c10::IValue(s)};
  print_op().callBoxed(&stack);
}

std::ostream* set_print_stream(std::ostream* stream) {
  std::lock_guard<std::mutex> lock(g_print_mu);
  std::ostream* previous = g_print_stream ? g_print_stream : &std::cout;
  g_print_stream = stream == &std::cout ? nullptr : stream;
  return previous;
}

at::Tensor new_effect_token() { return at::empty({0}, at::TensorOptions().dtype(at::kFloat)); }

}  // namespace aotgrad
