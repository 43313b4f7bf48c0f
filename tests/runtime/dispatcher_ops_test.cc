// Ops the registry does not declare, from libtorch's dispatcher: their OpDefs, metadata from
// libtorch's kernels, traced derivatives and decompositions, run and trained against eager.
#include "aotgrad/providers/dispatcher_ops.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/runtime/compiled_function.h"
#include "aotgrad/runtime/compiled_graph.h"
#include "aotgrad/transforms/passes/decompose.h"

namespace aotgrad {
namespace {

const OpDef& op(const char* name) {
  install_libtorch_ops();
  return aten_ops().get(name);
}

TEST(DispatcherOps, OpDefsFromLibtorchSchemas) {
  const OpDef& cumsum = op("aten::cumsum");
  EXPECT_TRUE(cumsum.provided);
  EXPECT_EQ(cumsum.schema.text,
            "aten::cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor");
  EXPECT_EQ(cumsum.short_name, "cumsum.default");
  EXPECT_EQ(cumsum.inplace_variant, "aten::cumsum_");
  EXPECT_EQ(op("aten::cumsum_").functional_variant, "aten::cumsum");
  EXPECT_TRUE(op("aten::cumsum_").has_tag(kInplace));
  EXPECT_NE(cumsum.derivative, nullptr);
  EXPECT_EQ(&op("cumsum.default"), &cumsum);  // one OpDef, however it is named

  EXPECT_TRUE(op("aten::logaddexp").has_tag(kPointwise));  // a TensorIterator kernel
  EXPECT_FALSE(cumsum.has_tag(kPointwise));
  EXPECT_TRUE(op("aten::unfold").has_tag(kView));
  EXPECT_TRUE(op("aten::bernoulli_.float").has_tag(kRandom));
  EXPECT_TRUE(op("aten::nonzero").has_tag(kDynamicOutputShape));
  const OpDef& group_norm = op("aten::group_norm");
  EXPECT_TRUE(group_norm.has_tag(kCompositeImplicit));
  EXPECT_NE(group_norm.decomposition, nullptr);
  EXPECT_TRUE(DecompositionTable::core().contains(group_norm));
  EXPECT_FALSE(DecompositionTable::none().contains(group_norm));
  // Declared ops are the registry's, not the provider's.
  EXPECT_FALSE(op("aten::add.Tensor").provided);
}

TEST(DispatcherOps, SchemasAotgradCannotRepresentAreNamed) {
  install_libtorch_ops();
  try {
    aten_ops().find("aten::set_.source_Storage");
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("argument 'source' of type Storage"), std::string::npos)
        << e.message();
  }
  EXPECT_EQ(aten_ops().find("aten::no_such_op"), nullptr);
}

TEST(DispatcherOps, MetadataFromMetaAndCpuKernels) {
  auto g = parse_graph(R"(
def forward(self, x: "f32[4, 6][1, 4]cpu"):
    cumsum = torch.ops.aten.cumsum.default(x, 1)
    flip = torch.ops.aten.flip.default(x, [0])
    roll = torch.ops.aten.roll.default(x, [2], [1])
    return (cumsum, flip, roll)
)",
                       aten_ops());
  // The annotations the printer writes come from libtorch (cumsum and roll make contiguous
  // results, flip keeps its input's strides); flip and roll have no Meta kernel in 1.13 and ran on
  // the CPU on zeros.
  std::string text = print_graph(*g);
  EXPECT_NE(text.find("cumsum: \"f32[4, 6][6, 1]cpu\""), std::string::npos) << text;
  EXPECT_NE(text.find("flip: \"f32[4, 6][1, 4]cpu\""), std::string::npos) << text;
  EXPECT_NE(text.find("roll: \"f32[4, 6][6, 1]cpu\""), std::string::npos) << text;
  OpProviderStats s = op_provider_stats();
  EXPECT_GE(s.meta_kernel, 1);
  EXPECT_GE(s.meta_cpu_kernel, 2);
  try {
    parse_graph(R"(
def forward(self, x: "f32[4]"):
    nonzero = torch.ops.aten.nonzero.default(x)
    return (nonzero,)
)",
                aten_ops());
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("dynamic_output_shape"), std::string::npos) << e.message();
  }
  try {
    parse_graph(R"(
def forward(self, x: "f32[4, 3]"):
    cumsum = torch.ops.aten.cumsum.default(x, 5)
    return (cumsum,)
)",
                aten_ops());
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("aten::cumsum"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("Dimension out of range"), std::string::npos) << e.message();
  }
}

// A kernel that rejects zeros (cholesky of a singular matrix, multinomial of no distribution) runs
// on identities; the error of one that rejects both is the one it gave on zeros.
TEST(DispatcherOps, KernelsThatRejectZerosRunOnIdentities) {
  auto g = parse_graph(R"(
def forward(self, x: "f32[2, 3, 3]", p: "f32[4]"):
    cholesky = torch.ops.aten.cholesky.default(x)
    cholesky_inverse = torch.ops.aten.cholesky_inverse.default(x)
    multinomial = torch.ops.aten.multinomial.default(p, 2)
    return (cholesky, cholesky_inverse, multinomial)
)",
                       aten_ops());
  std::string text = print_graph(*g);
  EXPECT_NE(text.find("cholesky: \"f32[2, 3, 3][9, 1, 3]cpu\""), std::string::npos) << text;
  EXPECT_NE(text.find("multinomial: \"i64[2][1]cpu\""), std::string::npos) << text;
  try {
    parse_graph(R"(
def forward(self, x: "f32[2, 3]"):
    cholesky = torch.ops.aten.cholesky.default(x)
    return (cholesky,)
)",
                aten_ops());
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("aten::cholesky"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("square"), std::string::npos) << e.message();
  }
}

const char* kUndeclared = R"(
def forward(self, x: "f32[3, 5]", w: "f32[5]"):
    mul = torch.ops.aten.mul.Tensor(x, w)
    cumsum = torch.ops.aten.cumsum.default(mul, 1)
    logsumexp = torch.ops.aten.logsumexp.default(cumsum, [1])
    flip = torch.ops.aten.flip.default(cumsum, [0, 1])
    softplus = torch.ops.aten.softplus.default(flip, 2.0)
    return (logsumexp, softplus)
)";

at::Tensor reference_logsumexp(const at::Tensor& x, const at::Tensor& w) {
  return at::logsumexp(at::cumsum(x * w, 1), {1});
}

TEST(DispatcherOps, UndeclaredOpsRunAsEager) {
  CompiledGraph f(parse_graph(kUndeclared, aten_ops()));
  at::Tensor x = at::randn({3, 5}), w = at::randn({5});
  std::vector<c10::IValue> out = f({x, w});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(at::allclose(out[0].toTensor(), reference_logsumexp(x, w)));
  EXPECT_TRUE(
      at::allclose(out[1].toTensor(), at::softplus(at::flip(at::cumsum(x * w, 1), {0, 1}), 2.0)));
}

TEST(DispatcherOps, TracedDerivativesTrainAsEager) {
  CompiledFunction f(parse_graph(kUndeclared, aten_ops()), {true, true});
  at::Tensor x = at::randn({3, 5}, at::kDouble).to(at::kFloat).requires_grad_();
  at::Tensor w = at::randn({5}).requires_grad_();
  std::vector<at::Tensor> out = f({x, w});
  at::Tensor g0 = at::randn({3}), g1 = at::randn({3, 5});
  auto grads = torch::autograd::grad({out[0], out[1]}, {x, w}, {g0, g1});
  at::Tensor xe = x.detach().clone().requires_grad_(), we = w.detach().clone().requires_grad_();
  at::Tensor c = at::cumsum(xe * we, 1);
  at::Tensor r0 = at::logsumexp(c, {1}), r1 = at::softplus(at::flip(c, {0, 1}), 2.0);
  auto ref = torch::autograd::grad({r0, r1}, {xe, we}, {g0, g1});
  EXPECT_TRUE(at::allclose(out[0], r0));
  EXPECT_TRUE(at::allclose(out[1], r1));
  EXPECT_TRUE(at::allclose(grads[0], ref[0], 1e-5, 1e-6)) << grads[0] << ref[0];
  EXPECT_TRUE(at::allclose(grads[1], ref[1], 1e-5, 1e-6)) << grads[1] << ref[1];
  // The backward is libtorch's own formulas, recorded: cumsum's flips and cumsums, logsumexp's
  // exp of the difference to its result.
  std::string bw = print_graph(*f.artifacts().bw);
  EXPECT_NE(bw.find("torch.ops.aten.flip.default"), std::string::npos) << bw;
  EXPECT_NE(bw.find("torch.ops.aten.cumsum.default"), std::string::npos) << bw;
  OpProviderStats s = op_provider_stats();
  EXPECT_GE(s.traced_derivatives, 3);
}

TEST(DispatcherOps, CompositeOpsDecomposeThroughTheirKernels) {
  const char* text = R"(
def forward(self, x: "f32[2, 6, 4]", weight: "f32[6]", bias: "f32[6]"):
    group_norm = torch.ops.aten.group_norm.default(x, 3, weight, bias)
    return (group_norm,)
)";
  auto g = parse_graph(text, aten_ops());
  std::shared_ptr<const Graph> d = decompose_composites(std::shared_ptr<const Graph>(std::move(g)));
  std::string printed = print_graph(*d);
  EXPECT_EQ(printed.find("aten.group_norm.default"), std::string::npos) << printed;
  EXPECT_NE(printed.find("torch.ops.aten.native_group_norm.default"), std::string::npos) << printed;

  CompiledFunction f(parse_graph(text, aten_ops()), {true, true, true});
  at::Tensor x = at::randn({2, 6, 4}).requires_grad_();
  at::Tensor w = at::randn({6}).requires_grad_(), b = at::randn({6}).requires_grad_();
  std::vector<at::Tensor> out = f({x, w, b});
  at::Tensor go = at::randn({2, 6, 4});
  auto grads = torch::autograd::grad({out[0]}, {x, w, b}, {go});
  at::Tensor xe = x.detach().clone().requires_grad_(), we = w.detach().clone().requires_grad_(),
             be = b.detach().clone().requires_grad_();
  at::Tensor ref = at::group_norm(xe, 3, we, be);
  auto rg = torch::autograd::grad({ref}, {xe, we, be}, {go});
  EXPECT_TRUE(at::allclose(out[0], ref, 1e-5, 1e-6));
  for (size_t i = 0; i < 3; ++i)
    EXPECT_TRUE(at::allclose(grads[i], rg[i], 1e-4, 1e-5)) << i << grads[i] << rg[i];
}

TEST(DispatcherOps, UndifferentiableOpsAreNamed) {
  // searchsorted's result is integral, so no gradient reaches it; but an op whose autograd formula
  // is "not implemented" is named with the input that needed a gradient.
  auto g = parse_graph(R"(
def forward(self, x: "f32[4]"):
    mul = torch.ops.aten.mul.Tensor(x, 2.0)
    fmax = torch.ops.aten.nextafter.default(mul, x)
    return (fmax,)
)",
                       aten_ops());
  try {
    CompiledFunction f(std::move(g), {true});
    at::Tensor x = at::randn({4}).requires_grad_();
    f({x})[0].sum().backward();
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("aten::nextafter"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("'self'"), std::string::npos) << e.message();
  }
}

TEST(DispatcherOps, WritingOpsFindTheirFunctionalVariantBySchema) {
  // The overload of the same name is not always the one: floor_divide_.Tensor's functional
  // variant is floor_divide, polygamma_(self, n)'s is polygamma(n, self), an out= op's is the
  // overload without `out`.
  EXPECT_EQ(op("aten::floor_divide_.Tensor").functional_variant, "aten::floor_divide");
  EXPECT_EQ(op("aten::polygamma_").functional_variant, "aten::polygamma");
  EXPECT_EQ(op("aten::mul.out").functional_variant, "aten::mul.Tensor");
  EXPECT_EQ(op("aten::sum.IntList_out").functional_variant, "aten::sum.dim_IntList");
  EXPECT_EQ(op("aten::cumsum_").functional_variant, "aten::cumsum");
  EXPECT_EQ(op("aten::max.dim_max").functional_variant, "aten::max.dim");

  CompiledGraph f(parse_graph(R"(
def forward(self, a: "f32[5]", b: "f32[5]", c: "f32[5]", x: "f32[3, 4]", z: "f32[3, 4]"):
    floor_divide_ = torch.ops.aten.floor_divide_.Tensor(a, b)
    polygamma_ = torch.ops.aten.polygamma_.default(c, 1)
    mul = torch.ops.aten.mul.out(x, x, out = z)
    empty = torch.ops.aten.empty.memory_format([0], dtype = torch.float32, device = device(type='cpu'))
    sum_1 = torch.ops.aten.sum.IntList_out(mul, [1], out = empty)
    add = torch.ops.aten.add.Tensor(sum_1, 1)
    empty_1 = torch.ops.aten.empty.memory_format([0], dtype = torch.float32, device = device(type='cpu'))
    empty_2 = torch.ops.aten.empty.memory_format([0], dtype = torch.int64, device = device(type='cpu'))
    max_1 = torch.ops.aten.max.dim_max(x, 0, max = empty_1, max_values = empty_2)
    getitem = max_1[0]
    getitem_1 = max_1[1]
    return (floor_divide_, polygamma_, add, getitem, getitem_1)
)",
                              aten_ops()));
  at::Tensor a = at::randn({5}) * 4, b = at::rand({5}) + 0.5, c = at::rand({5}) + 0.5;
  at::Tensor x = at::randn({3, 4}), z = at::zeros({3, 4});
  at::Tensor a0 = a.clone(), c0 = c.clone();
  std::vector<c10::IValue> out = f({a, b, c, x, z});
  ASSERT_EQ(out.size(), 5u);
  EXPECT_TRUE(at::equal(a, at::floor_divide(a0, b)));  // written back into the inputs
  EXPECT_TRUE(at::allclose(c, at::polygamma(1, c0)));
  EXPECT_TRUE(at::equal(z, x * x));
  EXPECT_TRUE(at::equal(out[0].toTensor(), a));
  EXPECT_TRUE(at::allclose(out[1].toTensor(), c));
  EXPECT_TRUE(at::allclose(out[2].toTensor(), (x * x).sum({1}) + 1));
  EXPECT_EQ(out[2].toTensor().sizes(), (std::vector<int64_t>{3}));
  auto [values, indices] = at::max(x, 0);
  EXPECT_TRUE(at::equal(out[3].toTensor(), values));
  EXPECT_TRUE(at::equal(out[4].toTensor(), indices));
}

}  // namespace
}  // namespace aotgrad
