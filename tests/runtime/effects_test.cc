// Effectful ops at run time (Note [Effect tokens]): aten::_print's kernel and stream, compiled
// graphs and functions that print in program order once per call (never again in the backward),
// a user's op registered effectful, and the errors. Values compared with eager libtorch.
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/library.h>
#include <torch/torch.h>

#include <atomic>
#include <sstream>

#include "../error_of.h"
#include "aotgrad/aotgrad.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ops/custom_ops.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/providers/effect_ops.h"
#include "aotgrad/runtime/compiled_function.h"
#include "aotgrad/runtime/compiled_graph.h"

namespace {

std::atomic<int> g_logged{0};

// A user's effectful op: counts its calls (its effect) and returns 2 * x.
at::Tensor log_double_cpu(const at::Tensor& x) {
  ++g_logged;
  c10::NoGradGuard no_grad;  // no Autograd kernel: not differentiable, in eager as in aotgrad
  return x * 2;
}
at::Tensor log_double_meta(const at::Tensor& x) { return at::empty_like(x); }
at::Tensor& bump_cpu(at::Tensor& x) { return x.add_(1); }
at::Tensor& bump_meta(at::Tensor& x) { return x; }

// An effectful op with a backward (an Autograd kernel): 3 * x.
struct TripleFunction : torch::autograd::Function<TripleFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext*, const at::Tensor& x) {
    at::AutoDispatchBelowADInplaceOrView guard;
    return c10::Dispatcher::singleton()
        .findSchemaOrThrow("aotgrad_effects_test::triple", "")
        .typed<at::Tensor(const at::Tensor&)>()
        .call(x);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext*,
                                                 torch::autograd::variable_list grads) {
    return {grads[0] * 3};
  }
};
at::Tensor triple_cpu(const at::Tensor& x) { return x * 3; }
at::Tensor triple_autograd(const at::Tensor& x) { return TripleFunction::apply(x); }

TORCH_LIBRARY(aotgrad_effects_test, m) {
  m.def("triple(Tensor x) -> Tensor");
  m.def("log_double(Tensor x) -> Tensor");
  m.def("bump_(Tensor(a!) x) -> Tensor(a!)");
  m.def("no_meta(Tensor x) -> Tensor");
}
TORCH_LIBRARY_IMPL(aotgrad_effects_test, CPU, m) {
  m.impl("log_double", log_double_cpu);
  m.impl("bump_", bump_cpu);
  m.impl("no_meta", log_double_cpu);
  m.impl("triple", triple_cpu);
}
TORCH_LIBRARY_IMPL(aotgrad_effects_test, Autograd, m) { m.impl("triple", triple_autograd); }
TORCH_LIBRARY_IMPL(aotgrad_effects_test, Meta, m) {
  m.impl("log_double", log_double_meta);
  m.impl("bump_", bump_meta);
  m.impl("triple", log_double_meta);
}

at::Tensor log_double(const at::Tensor& x) {
  return c10::Dispatcher::singleton()
      .findSchemaOrThrow("aotgrad_effects_test::log_double", "")
      .typed<at::Tensor(const at::Tensor&)>()
      .call(x);
}

}  // namespace

namespace aotgrad {
namespace {

using testing::HasSubstr;

// Sends aten::_print's output to a string for the test's scope.
class CapturedPrints {
 public:
  CapturedPrints() : previous_(set_print_stream(&out_)) {}
  ~CapturedPrints() { set_print_stream(previous_); }
  std::string take() {
    std::string s = out_.str();
    out_.str("");
    return s;
  }

 private:
  std::ostringstream out_;
  std::ostream* previous_;
};

// The interpreter, keeping the graphs it is given (PyTorch's extract_graph).
class RecordingCompiler final : public Compiler {
 public:
  std::string name() const override { return "recording"; }
  CompiledFn compile(std::shared_ptr<const Graph> graph) const override {
    graphs.push_back(graph);
    return InterpreterCompiler().compile(std::move(graph));
  }
  mutable std::vector<std::shared_ptr<const Graph>> graphs;
};

std::string code(const Graph& g) {
  PrintOptions p;
  p.class_header = false;
  p.annotations = false;
  return print_graph(g, p);
}

TEST(Effects, PrintWritesToThePrintStream) {
  CapturedPrints prints;
  print("moo");
  print("boo");
  EXPECT_EQ(prints.take(), "moo\nboo\n");
  at::Tensor token = new_effect_token();
  EXPECT_EQ(token.sizes(), at::IntArrayRef({0}));
  EXPECT_EQ(token.scalar_type(), at::kFloat);
}

// test_with_effects.py's test_print, through the inference runtime: the prints happen once per
// call, in order, and the caller sees neither token.
TEST(Effects, CompiledGraphPrintsInOrderOncePerCall) {
  auto g = parse_graph(R"(
def forward(self, x: "f32[3]"):
    _print = torch.ops.aten._print.default('first')
    add = torch.ops.aten.add.Tensor(x, x)
    _print_1 = torch.ops.aten._print.default('second')
    mul = torch.ops.aten.mul.Tensor(add, x)
    return (mul,)
)",
                       aten_ops());
  CompiledGraph compiled(std::move(g));
  EXPECT_EQ(compiled.plain().meta.num_tokens, 1);
  EXPECT_EQ(compiled.plain().fw->placeholders().size(), 2u);
  CapturedPrints prints;
  at::Tensor x = at::randn({3});
  for (int call = 0; call < 2; ++call) {
    std::vector<c10::IValue> out = compiled({x});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(at::allclose(out[0].toTensor(), (x + x) * x));
    EXPECT_EQ(prints.take(), "first\nsecond\n");
  }
}

// A C++ function that prints twice between computations, through aot_function: in inference and
// in training (the forward takes the token first and returns it first, as PyTorch's; the
// backward has no effect, so it never prints), with eager's values and gradients, for both
// partitioners.
TEST(Effects, AotFunctionPrintsInForwardOnlyWithEagersValues) {
  auto fn = [](const std::vector<at::Tensor>& in) -> std::vector<at::Tensor> {
    print("start");
    at::Tensor y = at::sin(in[0]) * in[1];
    print("middle");
    return {(y * y).sum()};
  };
  at::Tensor x0 = at::randn({4, 3}), w0 = at::randn({4, 3});
  at::Tensor xe = x0.clone().requires_grad_(), we = w0.clone().requires_grad_();
  CapturedPrints prints;
  at::Tensor eager = fn({xe, we})[0];
  eager.backward();
  EXPECT_EQ(prints.take(), "start\nmiddle\n");

  for (PartitionKind kind : {PartitionKind::kMinCut, PartitionKind::kDefault}) {
    auto fw = std::make_shared<RecordingCompiler>();
    auto bw = std::make_shared<RecordingCompiler>();
    AOTConfig config;
    config.partition = kind;
    config.fw_compiler = fw;
    config.bw_compiler = bw;
    config.inference_compiler = fw;
    AOTFunction f = aot_function(fn, config);
    at::Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_();
    for (int call = 0; call < 2; ++call) {
      at::Tensor out = f({x, w})[0];
      EXPECT_EQ(prints.take(), "start\nmiddle\n") << "forward of call " << call;
      EXPECT_TRUE(at::allclose(out, eager.detach()));
      x.mutable_grad() = at::Tensor();
      w.mutable_grad() = at::Tensor();
      out.backward();
      EXPECT_EQ(prints.take(), "") << "the backward prints nothing";
      EXPECT_TRUE(at::allclose(x.grad(), xe.grad()));
      EXPECT_TRUE(at::allclose(w.grad(), we.grad()));
    }
    ASSERT_EQ(fw->graphs.size(), 1u);
    const Graph& fw_graph = *fw->graphs[0];
    std::vector<Node*> phs = fw_graph.placeholders();
    ASSERT_EQ(phs.size(), 3u);
    EXPECT_EQ(phs[0]->name(), "primals_1");
    EXPECT_EQ(phs[0]->meta().annotation(), "f32[0][1]cpu");
    std::string text = code(fw_graph);
    EXPECT_THAT(text, HasSubstr("with_effects = torch.ops.higher_order.with_effects(primals_1, "
                                "torch.ops.aten._print.default, 'start')"));
    EXPECT_THAT(text, HasSubstr("with_effects_1 = torch.ops.higher_order.with_effects(getitem, "
                                "torch.ops.aten._print.default, 'middle')"));
    EXPECT_THAT(text, HasSubstr("return (getitem_2, "));
    ASSERT_EQ(bw->graphs.size(), 1u);
    EXPECT_THAT(code(*bw->graphs[0]), testing::Not(HasSubstr("with_effects")));

    // Inference (no input requires grad): the token is arg0_1.
    at::Tensor out = f({x0, w0})[0];
    EXPECT_EQ(prints.take(), "start\nmiddle\n");
    EXPECT_TRUE(at::allclose(out, eager.detach()));
    ASSERT_EQ(fw->graphs.size(), 2u);
    EXPECT_THAT(code(*fw->graphs[1]),
                HasSubstr("with_effects = torch.ops.higher_order.with_effects(arg0_1, "
                          "torch.ops.aten._print.default, 'start')"));
  }
}

// torch.library._register_effectful_op's analogue: a user's op with a tensor result keeps its
// calls -- one per call of the compiled function, even when its result is unused -- and its
// values; the export signature names the tokens.
TEST(Effects, UserOpRegisteredEffectful) {
  register_effectful_op("aotgrad_effects_test::log_double");
  EXPECT_TRUE(registered_effectful("aotgrad_effects_test::log_double.default"));
  EXPECT_THAT(error_of([] { register_effectful_op("aotgrad_effects_test::log_double"); }),
              HasSubstr("registered twice"));
  EXPECT_THAT(error_of([] { register_effectful_op("aten::_print"); }),
              HasSubstr("the registry declares the op"));
  auto fn = [](const std::vector<at::Tensor>& in) -> std::vector<at::Tensor> {
    at::Tensor unused = log_double(in[0]);  // its effect still happens
    return {log_double(in[0] + 1) + in[0]};
  };
  at::Tensor x = at::randn({5});
  g_logged = 0;
  at::Tensor eager = fn({x})[0];
  EXPECT_EQ(g_logged.load(), 2);
  AOTFunction f = aot_function(fn);
  for (int call = 1; call <= 2; ++call) {
    g_logged = 0;
    at::Tensor out = f({x})[0];
    EXPECT_EQ(g_logged.load(), 2) << "call " << call;
    EXPECT_TRUE(at::allclose(out, eager));
  }

  ExportedGraphs e = aot_export(fn, {x}, /*trace_joint=*/false);
  EXPECT_EQ(e.input_tokens, std::vector<std::string>{"token"});
  ASSERT_EQ(e.output_tokens.size(), 1u);
  std::string text = code(*e.forward);
  EXPECT_THAT(text, HasSubstr("with_effects = torch.ops.higher_order.with_effects(token, "
                              "torch.ops.aotgrad_effects_test.log_double.default, "));
  EXPECT_THAT(text, HasSubstr("return (" + e.output_tokens[0] + ", "));

  // In training: the op has no Autograd kernel, so, as in eager, no gradient flows through it;
  // it still runs once per forward and never in the backward.
  at::Tensor xe = x.clone().requires_grad_(), xr = x.clone().requires_grad_();
  fn({xe})[0].sum().backward();
  g_logged = 0;
  at::Tensor out = f({xr})[0];
  EXPECT_EQ(g_logged.load(), 2);
  out.sum().backward();
  EXPECT_EQ(g_logged.load(), 2);
  EXPECT_TRUE(at::allclose(out, eager));
  EXPECT_TRUE(at::allclose(xr.grad(), xe.grad()));
}

// Without a Meta kernel aotgrad would have to run the kernel (and its effect) to learn the
// result's metadata: an error saying so.
TEST(Effects, AnEffectfulOpWithoutMetaKernelIsAnError) {
  register_effectful_op("aotgrad_effects_test::no_meta");
  auto fn = [](const std::vector<at::Tensor>& in) -> std::vector<at::Tensor> {
    return {c10::Dispatcher::singleton()
                .findSchemaOrThrow("aotgrad_effects_test::no_meta", "")
                .typed<at::Tensor(const at::Tensor&)>()
                .call(in[0])};
  };
  g_logged = 0;
  EXPECT_THAT(error_of([&] { aot_function(fn)({at::randn({3})}); }),
              HasSubstr("it is effectful and has no Meta kernel"));
  EXPECT_EQ(g_logged.load(), 0);
}

// A gradient that would flow through an effectful op: an error naming it, not a zero gradient.
TEST(Effects, AGradientThroughAnEffectfulOpIsAnError) {
  register_effectful_op("aotgrad_effects_test::triple");
  auto fn = [](const std::vector<at::Tensor>& in) -> std::vector<at::Tensor> {
    return {c10::Dispatcher::singleton()
                .findSchemaOrThrow("aotgrad_effects_test::triple", "")
                .typed<at::Tensor(const at::Tensor&)>()
                .call(in[0])
                .sum()};
  };
  at::Tensor x = at::randn({3});
  AOTFunction f = aot_function(fn);
  EXPECT_TRUE(at::allclose(f({x})[0], (x * 3).sum()));  // inference: fine
  EXPECT_THAT(error_of([&] { f({x.clone().requires_grad_()}); }),
              HasSubstr("a gradient flows through effectful op aotgrad_effects_test::triple"));
}

TEST(Effects, AnEffectfulOpThatAliasesIsAnError) {
  register_effectful_op("aotgrad_effects_test::bump_");
  auto fn = [](const std::vector<at::Tensor>& in) -> std::vector<at::Tensor> {
    at::Tensor y = in[0] * 2;
    c10::Dispatcher::singleton()
        .findSchemaOrThrow("aotgrad_effects_test::bump_", "")
        .typed<at::Tensor&(at::Tensor&)>()
        .call(y);
    return {y};
  };
  EXPECT_THAT(error_of([&] { aot_function(fn)({at::randn({3})}); }),
              HasSubstr("Ops with aliasing is not supported"));
}

}  // namespace
}  // namespace aotgrad
