// Custom ops (Note [Custom ops]): a user's TORCH_LIBRARY ops captured, compiled and trained
// through aot_function, with the facts libtorch gives (a CPU kernel, an Autograd kernel, a
// CompositeImplicitAutograd kernel) or the ones the user registers with aotgrad (meta function,
// derivative formula, decomposition). Compared with eager libtorch.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/library.h>
#include <torch/torch.h>

#include "aotgrad/aotgrad.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ops/custom_ops.h"
#include "aotgrad/ops/decomposition.h"
#include "aotgrad/ops/derivative.h"
#include "aotgrad/ops/formula.h"
#include "aotgrad/ops/registry.h"

namespace {

at::Tensor scaled_tanh_cpu(const at::Tensor& x, double s) { return at::tanh(x) * s; }
at::Tensor cube_cpu(const at::Tensor& x) { return x * x * x; }
at::Tensor counted_cpu(const at::Tensor& x) { return x + 1; }
at::Tensor my_silu_composite(const at::Tensor& x) { return x * at::sigmoid(x); }
at::Tensor square_cpu(const at::Tensor& x) { return x * x; }

// square's backward written by its user as an autograd::Function, registered at Autograd.
struct SquareFunction : torch::autograd::Function<SquareFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x) {
    ctx->save_for_backward({x});
    at::AutoDispatchBelowADInplaceOrView guard;
    static auto op = c10::Dispatcher::singleton()
                         .findSchemaOrThrow("aotgrad_test::square", "")
                         .typed<at::Tensor(const at::Tensor&)>();
    return op.call(x);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    at::Tensor x = ctx->get_saved_variables()[0];
    return {grads[0] * 2 * x};
  }
};
at::Tensor square_autograd(const at::Tensor& x) { return SquareFunction::apply(x); }

TORCH_LIBRARY(aotgrad_test, m) {
  m.def("scaled_tanh(Tensor x, float s) -> Tensor");
  m.def("cube(Tensor x) -> Tensor");
  m.def("no_grad_op(Tensor x) -> Tensor");
  m.def("my_silu(Tensor x) -> Tensor");
  m.def("square(Tensor x) -> Tensor");
  m.def("late(Tensor x) -> Tensor");
  m.def("twice(Tensor x) -> Tensor");
}
TORCH_LIBRARY_IMPL(aotgrad_test, CPU, m) {
  m.impl("scaled_tanh", scaled_tanh_cpu);
  m.impl("cube", cube_cpu);
  m.impl("no_grad_op", counted_cpu);
  m.impl("square", square_cpu);
  m.impl("late", counted_cpu);
}
TORCH_LIBRARY_IMPL(aotgrad_test, CompositeImplicitAutograd, m) {
  m.impl("my_silu", my_silu_composite);
}
TORCH_LIBRARY_IMPL(aotgrad_test, Autograd, m) { m.impl("square", square_autograd); }

template <typename... Args>
at::Tensor call(const char* name, const Args&... args) {
  auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name, "");
  return op.typed<at::Tensor(const Args&...)>().call(args...);
}
at::Tensor scaled_tanh(const at::Tensor& x, double s) {
  return c10::Dispatcher::singleton()
      .findSchemaOrThrow("aotgrad_test::scaled_tanh", "")
      .typed<at::Tensor(const at::Tensor&, double)>()
      .call(x, s);
}

}  // namespace

namespace aotgrad {
namespace {

int g_meta_calls = 0;

// The user's meta function for scaled_tanh (PyTorch's register_fake): x's sizes, contiguous.
ValueMeta scaled_tanh_meta(const MetaArgs& a) {
  ++g_meta_calls;
  TensorMeta m = a.tensor(0);
  m.strides = contiguous_strides(m.sizes);
  m.storage_offset = 0;
  m.requires_grad = false;
  return ValueMeta::of(m);
}

Arg cube_decomposition(DecompBuilder& b) {
  Node* x = b.input(0);
  return Arg(
      b.call("aten::mul.Tensor", {Arg(b.call("aten::mul.Tensor", {Arg(x), Arg(x)})), Arg(x)}));
}

// Registered once for the process, before any use of the ops.
void register_facts() {
  static const bool done = [] {
    CustomOpFacts tanh_facts;
    tanh_facts.meta = scaled_tanh_meta;
    tanh_facts.derivative = formula("x: grad * s * (1 - tanh(x) * tanh(x))");
    tanh_facts.tags = kPointwise;
    register_custom_op("aotgrad_test::scaled_tanh", std::move(tanh_facts));
    CustomOpFacts cube_facts;
    cube_facts.decomposition =
        decomp(cube_decomposition, kCoreTable | kFullTable, "the user's: x * x * x");
    register_custom_op("aotgrad_test::cube", std::move(cube_facts));
    return true;
  }();
  (void)done;
}

using V = std::vector<at::Tensor>;

// Runs fn compiled and eagerly (eager_fn: the same math in ATen ops) on `in`; compares outputs and
// the gradients of sum(out * w).
void expect_trains_as(const TensorFunction& fn, const TensorFunction& eager_fn, V in,
                      AOTConfig config = {}) {
  V a, b;
  for (const at::Tensor& t : in) {
    a.push_back(t.detach().clone().requires_grad_(true));
    b.push_back(t.detach().clone().requires_grad_(true));
  }
  AOTFunction compiled = aot_function(fn, config);
  V out = compiled(a), want = eager_fn(b);
  ASSERT_EQ(out.size(), want.size());
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_TRUE(at::allclose(out[i], want[i], 1e-5, 1e-6)) << "output " << i;
    at::Tensor w = at::randn(want[i].sizes());
    (out[i] * w).sum().backward();
    (want[i] * w).sum().backward();
  }
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(at::allclose(a[i].grad(), b[i].grad(), 1e-4, 1e-5)) << "grad of input " << i;
}

TEST(CustomOps, RegisteredMetaAndFormulaTrain) {
  register_facts();
  at::manual_seed(0);
  int before = g_meta_calls;
  expect_trains_as([](const V& a) -> V { return {scaled_tanh(a[0] * 2, 1.5).sum(1)}; },
                   [](const V& a) -> V { return {(at::tanh(a[0] * 2) * 1.5).sum(1)}; },
                   {at::randn({3, 4})});
  EXPECT_GT(g_meta_calls, before);  // the user's meta function, not the kernel on zeros
  const OpDef& op = aten_ops().get("aotgrad_test::scaled_tanh");
  EXPECT_TRUE(op.provided);
  EXPECT_TRUE(op.has_tag(kPointwise));
  EXPECT_EQ(op.derivative->formula, "x: grad * s * (1 - tanh(x) * tanh(x))");
}

TEST(CustomOps, RegisteredDecompositionReplacesTheOp) {
  register_facts();
  at::manual_seed(1);
  auto fn = [](const V& a) -> V { return {call("aotgrad_test::cube", a[0]).exp()}; };
  V in{at::randn({5}).requires_grad_(true)};
  ExportedGraphs g = aot_export(fn, in, /*trace_joint=*/true);
  EXPECT_NE(print_graph(*g.captured).find("torch.ops.aotgrad_test.cube.default"),
            std::string::npos);
  std::string joint = print_graph(*g.joint);
  EXPECT_EQ(joint.find("aotgrad_test"), std::string::npos) << joint;
  EXPECT_NE(joint.find("torch.ops.aten.mul.Tensor"), std::string::npos) << joint;
  // cube has no Autograd kernel: it trains only because its decomposition is differentiated.
  expect_trains_as(fn, [](const V& a) -> V { return {(a[0] * a[0] * a[0]).exp()}; },
                   {at::randn({5})});
}

TEST(CustomOps, CompositeKernelDecomposesInCapture) {
  at::manual_seed(2);
  auto fn = [](const V& a) -> V { return {call("aotgrad_test::my_silu", a[0])}; };
  V in{at::randn({2, 3}).requires_grad_(true)};
  ExportedGraphs g = aot_export(fn, in, /*trace_joint=*/true);
  std::string captured = print_graph(*g.captured);
  EXPECT_EQ(captured.find("my_silu"), std::string::npos) << captured;
  EXPECT_NE(captured.find("torch.ops.aten.sigmoid.default"), std::string::npos) << captured;
  expect_trains_as(fn, [](const V& a) -> V { return {a[0] * at::sigmoid(a[0])}; },
                   {at::randn({2, 3})});
}

TEST(CustomOps, AutogradKernelGivesTheTracedDerivative) {
  at::manual_seed(3);
  auto fn = [](const V& a) -> V { return {call("aotgrad_test::square", a[0].sin())}; };
  expect_trains_as(fn, [](const V& a) -> V { return {a[0].sin() * a[0].sin()}; },
                   {at::randn({4, 2})});
  // In a text graph too (the parser asks the provider).
  auto graph = parse_graph(R"(
def forward(self, x: "f32[3][1]cpu"):
    square: "f32[3][1]cpu" = torch.ops.aotgrad_test.square.default(x)
    return (square,)
)",
                           aten_ops());
  EXPECT_EQ(graph->size(), 3u);
  EXPECT_EQ(graph->find("square")->op()->name, "aotgrad_test::square");
}

TEST(CustomOps, NoDerivativeIsAnErrorNamingTheOpAndInput) {
  auto fn = [](const V& a) -> V { return {call("aotgrad_test::no_grad_op", a[0] * 2)}; };
  AOTFunction compiled = aot_function(fn);
  V in{at::randn({3}).requires_grad_(true)};
  try {
    compiled(in);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("aotgrad_test::no_grad_op"), std::string::npos) << m;
    EXPECT_NE(m.find("x"), std::string::npos) << m;
  }
  // Without gradients the same op runs.
  torch::NoGradGuard no_grad;
  at::Tensor x = at::randn({3});
  EXPECT_TRUE(at::allclose(aot_function(fn)({x})[0], x * 2 + 1));
}

TEST(CustomOps, RegistrationErrors) {
  auto message = [](const std::string& name, CustomOpFacts f) {
    try {
      register_custom_op(name, std::move(f));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CustomOpFacts tags;
  tags.tags = kPointwise;
  EXPECT_NE(message("late", tags).find("expected a namespaced op name"), std::string::npos);
  EXPECT_NE(message("aten::add.Tensor", tags).find("the registry declares the op"),
            std::string::npos);
  EXPECT_NE(message("aotgrad_test::late", {}).find("no fact given"), std::string::npos);
  aten_ops().get("aotgrad_test::late");  // first use
  EXPECT_NE(message("aotgrad_test::late", tags).find("already in use"), std::string::npos);
  EXPECT_EQ(message("aotgrad_test::twice", tags), "");
  EXPECT_NE(message("aotgrad_test::twice.default", tags).find("registered twice"),
            std::string::npos);
  register_facts();
  aten_ops().get("aotgrad_test::scaled_tanh");
  EXPECT_NE(message("aotgrad_test::scaled_tanh", tags).find("already in use"), std::string::npos);
}

}  // namespace
}  // namespace aotgrad
