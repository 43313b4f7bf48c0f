// Tests for inference compilation and its runtime wrappers: input mutations are written back,
// duplicated inputs (§13.24) and overlapping views (§13.23) behave as in eager mode, and the graphs
// the backend receives are the seed's.
#include "aotgrad/runtime/compiled_graph.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "../graph_text.h"
#include "aotgrad/driver/cache_store.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/runtime/compiler.h"
#include "transposing_compiler.h"

namespace aotgrad {
namespace {

std::shared_ptr<Graph> parse(const std::string& text) { return parse_graph(text, aten_ops()); }

std::string printed(const Graph& g) { return graph_text(g, /*release_statements=*/true); }

std::vector<std::string> call_ops(const Graph& g) {
  std::vector<std::string> ops;
  for (const Node* n : g.nodes())
    if (n->kind() == NodeKind::Call) ops.push_back(n->op()->name);
  return ops;
}

const char* kSgd = R"(
def forward(self, p: "f32[4]", g: "f32[4]"):
    add_ = torch.ops.aten.add_.Tensor(p, g, alpha = -0.1)
    mul = torch.ops.aten.mul.Tensor(p, 2)
    sum_1 = torch.ops.aten.sum.default(mul)
    return (sum_1,)
)";

TEST(CompiledGraph, InputMutationIsWrittenBackEitherWay) {
  for (bool keep : {false, true}) {
    CompileOptions opts;
    opts.keep_inference_input_mutations = keep;
    CompiledGraph f(parse(kSgd), opts);
    at::Tensor p = at::randn({4}), g = at::randn({4});
    at::Tensor p0 = p.clone();
    for (int step = 1; step <= 2; ++step) {
      auto out = f({p, g});
      at::Tensor expected_p = p0 - 0.1 * step * g;
      EXPECT_TRUE(at::allclose(p, expected_p)) << "keep=" << keep << " step " << step;
      // The sum of four random values may cancel to near 0: an absolute tolerance too (p and
      // expected_p round differently in their last bit).
      EXPECT_TRUE(at::allclose(out[0].toTensor(), (expected_p * 2).sum(), 1e-5, 1e-5));
    }
  }
}

// §13.24: the same tensor twice, mutated: deduplicated into one input.
TEST(CompiledGraph, Seed13_24_DuplicateMutatedInputIsDeduped) {
  CompiledGraph f(parse(R"(
def forward(self, x: "f32[4]", y: "f32[4]"):
    add_ = torch.ops.aten.add_.Tensor(x, 1)
    add = torch.ops.aten.add.Tensor(x, y)
    return (add,)
)"));
  at::Tensor t = at::randn({4});
  at::Tensor e = t.clone();
  e.add_(1);
  at::Tensor expected = e + e;
  auto out = f({t, t});
  EXPECT_TRUE(at::allclose(out[0].toTensor(), expected));
  EXPECT_TRUE(at::allclose(t, e));
  const Specialization& s = f.specialization_for({t, t});
  EXPECT_TRUE(s.deduped);
  EXPECT_EQ(printed(*s.fw), normalized(R"(
def forward(self, arg0_1):
    add = torch.ops.aten.add.Tensor(arg0_1, 1);  arg0_1 = None
    add_1 = torch.ops.aten.add.Tensor(add, add)
    return (add, add_1)
)"));
  // Distinct tensors use the plain two-input graph.
  at::Tensor a = at::randn({4}), b = at::randn({4});
  at::Tensor expected_ab = (a + 1) + b;
  EXPECT_TRUE(at::allclose(f({a, b})[0].toTensor(), expected_ab));
  EXPECT_EQ(f.plain().fw->placeholders().size(), 2u);
}

// §13.24, no mutation: both inputs are kept.
TEST(CompiledGraph, Seed13_24_UnmutatedDuplicateKeepsBothInputs) {
  CompiledGraph f(parse(R"(
def forward(self, x: "f32[4]", y: "f32[4]"):
    add = torch.ops.aten.add.Tensor(x, y)
    return (add,)
)"));
  at::Tensor t = at::randn({4});
  EXPECT_TRUE(at::allclose(f({t, t})[0].toTensor(), t + t));
  const Specialization& s = f.specialization_for({t, t});
  EXPECT_FALSE(s.deduped);
  EXPECT_EQ(s.fw->placeholders().size(), 2u);
}

const char* kMulAdd = R"(
def forward(self, x: "f32[S]", y: "f32[T]"):
    mul_ = torch.ops.aten.mul_.Tensor(x, 2)
    add = torch.ops.aten.add.Tensor(x, y)
    return (add,)
)";

std::string with_sizes(int64_t s, int64_t t) {
  std::string text = kMulAdd;
  text.replace(text.find("f32[S]"), 6, "f32[" + std::to_string(s) + "]");
  text.replace(text.find("f32[T]"), 6, "f32[" + std::to_string(t) + "]");
  return text;
}

// §13.23: f(base[:6], base[4:]) -- one [10] input, as_strided / as_strided_scatter.
TEST(CompiledGraph, Seed13_23_OverlappingViewsGetASyntheticBase) {
  CompiledGraph f(parse(with_sizes(6, 6)));
  at::Tensor base = at::randn({10});
  at::Tensor eager_base = base.clone();
  at::Tensor ex = eager_base.slice(0, 0, 6), ey = eager_base.slice(0, 4);
  ex.mul_(2);
  at::Tensor expected = ex + ey;
  auto out = f({base.slice(0, 0, 6), base.slice(0, 4)});
  EXPECT_TRUE(at::allclose(out[0].toTensor(), expected));
  EXPECT_TRUE(at::allclose(base, eager_base));
  const Specialization& s = f.specialization_for({base.slice(0, 0, 6), base.slice(0, 4)});
  ASSERT_EQ(s.fw->placeholders().size(), 1u);
  EXPECT_EQ(s.fw->placeholders()[0]->tensor_meta().annotation(), "f32[10][1]cpu");
  EXPECT_EQ(call_ops(*s.fw), (std::vector<std::string>{
                                 "aten::as_strided", "aten::mul.Tensor", "aten::as_strided_scatter",
                                 "aten::as_strided", "aten::as_strided", "aten::add.Tensor"}));
}

// §13.23: f(base[:5], base[5:]) shares storage without overlapping: two inputs kept.
TEST(CompiledGraph, Seed13_23_DisjointViewsKeepTheirInputs) {
  CompiledGraph f(parse(with_sizes(5, 5)));
  at::Tensor base = at::randn({10});
  at::Tensor eager_base = base.clone();
  eager_base.slice(0, 0, 5).mul_(2);
  at::Tensor expected = eager_base.slice(0, 0, 5) + eager_base.slice(0, 5);
  auto out = f({base.slice(0, 0, 5), base.slice(0, 5)});
  EXPECT_TRUE(at::allclose(out[0].toTensor(), expected));
  EXPECT_TRUE(at::allclose(base, eager_base));
  EXPECT_EQ(f.specialization_for({base.slice(0, 0, 5), base.slice(0, 5)}).fw->placeholders().size(),
            2u);
}

TEST(CompiledGraph, OutputsAliasInputsAsInEager) {
  CompiledGraph f(parse(R"(
def forward(self, x: "f32[2, 3]"):
    view = torch.ops.aten.view.default(x, [6])
    relu = torch.ops.aten.relu.default(x)
    return (x, view, relu)
)"));
  at::Tensor x = at::randn({2, 3});
  auto out = f({x});
  EXPECT_TRUE(out[0].toTensor().is_same(x));
  EXPECT_TRUE(out[1].toTensor().is_alias_of(x));
  EXPECT_FALSE(out[2].toTensor().is_alias_of(x));
}

TEST(CompiledGraph, MutatedInputReturnedAsViewStillAliases) {
  CompiledGraph f(parse(R"(
def forward(self, x: "f32[2, 3]"):
    mul_ = torch.ops.aten.mul_.Tensor(x, 3)
    t = torch.ops.aten.t.default(x)
    return (t,)
)"));
  at::Tensor x = at::randn({2, 3});
  at::Tensor expected = x * 3;
  auto out = f({x});
  EXPECT_TRUE(at::allclose(x, expected));
  at::Tensor t = out[0].toTensor();
  EXPECT_TRUE(t.is_alias_of(x));
  EXPECT_TRUE(at::allclose(t, expected.t()));
  x.add_(1);  // later writes to x are visible through the returned view, as in eager
  EXPECT_TRUE(at::allclose(t, (expected + 1).t()));
}

TEST(CompiledGraph, MetadataMutationOfAnInputIsReplayed) {
  CompiledGraph f(parse(R"(
def forward(self, x: "f32[2, 3]"):
    t_ = torch.ops.aten.t_.default(x)
    mul = torch.ops.aten.mul.Tensor(x, 2)
    return (mul,)
)"));
  at::Tensor x = at::randn({2, 3});
  at::Tensor expected = x.t() * 2;
  auto out = f({x});
  EXPECT_EQ(x.sizes(), (c10::IntArrayRef{3, 2}));
  EXPECT_TRUE(at::allclose(out[0].toTensor(), expected));
}

// Regressions found by the randomized differential test (functionalize_random_test.cc).

// §13.23 with the mutated argument returned: the output is the caller's tensor itself, as in eager
// (not a view regenerated from the synthetic base).
TEST(CompiledGraph, ReturnedOverlappingArgumentIsTheCallersTensor) {
  CompiledGraph f(parse(R"(
def forward(self, x: "f32[6]", y: "f32[6]"):
    mul_ = torch.ops.aten.mul_.Tensor(x, 2)
    add = torch.ops.aten.add.Tensor(x, y)
    return (mul_, add, y)
)"));
  at::Tensor base = at::randn({10});
  at::Tensor eager_base = base.clone();
  at::Tensor ex = eager_base.slice(0, 0, 6), ey = eager_base.slice(0, 4);
  ex.mul_(2);
  at::Tensor expected = ex + ey;
  at::Tensor x = base.slice(0, 0, 6), y = base.slice(0, 4);
  auto out = f({x, y});
  EXPECT_TRUE(out[0].toTensor().is_same(x));
  EXPECT_TRUE(out[2].toTensor().is_same(y));
  EXPECT_TRUE(at::allclose(out[1].toTensor(), expected));
  EXPECT_TRUE(at::allclose(base, eager_base));
}

// A metadata mutation of an argument with a storage offset keeps the offset, also when its data is
// written (the graph's new value is a fresh tensor whose offsets start at 0).
TEST(CompiledGraph, MetadataMutationOfAnArgumentWithAnOffsetKeepsTheOffset) {
  CompiledGraph f(parse(R"(
def forward(self, x: "f32[3]"):
    unsqueeze_ = torch.ops.aten.unsqueeze_.default(x, 0)
    add_ = torch.ops.aten.add_.Tensor(unsqueeze_, 1)
    return (add_,)
)"));
  at::Tensor base = at::randn({5});
  at::Tensor expected = base.clone();
  expected.slice(0, 2).add_(1);
  at::Tensor x = base.slice(0, 2);
  auto out = f({x});
  EXPECT_EQ(x.sizes(), (c10::IntArrayRef{1, 3}));
  EXPECT_EQ(x.storage_offset(), 2);
  EXPECT_TRUE(out[0].toTensor().is_same(x));
  EXPECT_TRUE(at::allclose(base, expected));
}

// Overlapping arguments of which one only changes metadata need no synthetic base: the caller's
// tensor gets its new metadata.
TEST(CompiledGraph, MetadataOnlyMutationOfOverlappingArgumentsKeepsThem) {
  CompiledGraph f(parse(R"(
def forward(self, x: "f32[3]", y: "f32[3]"):
    unsqueeze_ = torch.ops.aten.unsqueeze_.default(x, 0)
    add = torch.ops.aten.add.Tensor(unsqueeze_, y)
    return (add,)
)"));
  at::Tensor base = at::randn({4});
  at::Tensor x = base.slice(0, 0, 3), y = base.slice(0, 1);
  at::Tensor expected = x.unsqueeze(0) + y;
  auto out = f({x, y});
  EXPECT_EQ(x.sizes(), (c10::IntArrayRef{1, 3}));
  EXPECT_TRUE(at::allclose(out[0].toTensor(), expected));
  EXPECT_TRUE(f.specialization_for({base.slice(0, 0, 3), base.slice(0, 1)}).inputs.groups.empty());
}

TEST(CompiledGraph, DataAndMetadataMutationOfOverlappingArgumentsIsAnError) {
  CompiledGraph f(parse(R"(
def forward(self, x: "f32[3]", y: "f32[3]"):
    unsqueeze_ = torch.ops.aten.unsqueeze_.default(x, 0)
    mul_ = torch.ops.aten.mul_.Tensor(y, 2)
    return (mul_,)
)"));
  at::Tensor base = at::randn({4});
  try {
    f({base.slice(0, 0, 3), base.slice(0, 1)});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("not supported"), std::string::npos) << e.message();
  }
}

// copy_ into a fresh tensor must not make it an alias of the source (libtorch 1.13's aten::copy
// returns its source): here the source is an input the trailing copy_ later overwrites.
TEST(CompiledGraph, CopiedValueDoesNotAliasItsSource) {
  CompileOptions opts;
  opts.keep_inference_input_mutations = true;
  CompiledGraph f(parse(R"(
def forward(self, x: "f32[3]", y: "f32[3]"):
    clone = torch.ops.aten.clone.default(y)
    copy_ = torch.ops.aten.copy_.default(clone, x)
    relu_ = torch.ops.aten.relu_.default(x)
    return (clone,)
)"),
                  opts);
  at::Tensor x = at::tensor({-1.0f, 2.0f, -3.0f}), y = at::randn({3});
  at::Tensor x0 = x.clone();
  auto out = f({x, y});
  EXPECT_TRUE(at::allclose(out[0].toTensor(), x0));
  EXPECT_FALSE(out[0].toTensor().is_alias_of(x));
  EXPECT_TRUE(at::allclose(x, x0.relu()));
}

// After copy_ from a transposed source and a metadata mutation, the argument has eager's strides.
TEST(CompiledGraph, CopyIntoAnArgumentKeepsItsLayout) {
  CompiledGraph f(parse(R"(
def forward(self, x: "f32[3, 4]", y: "f32[4, 3]"):
    t = torch.ops.aten.t.default(y)
    copy_ = torch.ops.aten.copy_.default(x, t)
    unsqueeze_ = torch.ops.aten.unsqueeze_.default(copy_, 0)
    return (unsqueeze_,)
)"));
  at::Tensor x = at::randn({3, 4}), y = at::randn({4, 3});
  at::Tensor y0 = y.clone();
  auto out = f({x, y});
  EXPECT_TRUE(out[0].toTensor().is_same(x));
  EXPECT_EQ(x.sizes(), (c10::IntArrayRef{1, 3, 4}));
  EXPECT_EQ(x.strides(), (c10::IntArrayRef{12, 4, 1}));
  EXPECT_TRUE(at::allclose(x, y0.t().unsqueeze(0)));
  EXPECT_TRUE(at::equal(y, y0));
}

// A non-dense argument: the graph's new value for it is contiguous, so views of it that eager
// returns, and its new metadata, are replayed on the caller's tensor instead of copied from the
// graph's outputs.
TEST(CompiledGraph, ViewsOfAWrittenNonDenseArgumentHaveEagersStrides) {
  CompiledGraph f(parse(R"(
def forward(self, x: "f32[2, 3]", y: "f32[2, 3]"):
    add_ = torch.ops.aten.add_.Tensor(x, 1)
    t = torch.ops.aten.t.default(x)
    mul_ = torch.ops.aten.mul_.Tensor(y, 2)
    t_ = torch.ops.aten.t_.default(y)
    return (t, t_)
)"));
  at::Tensor wide_x = at::randn({2, 6}), wide_y = at::randn({2, 6});
  at::Tensor expected_x = wide_x.clone(), expected_y = wide_y.clone();
  at::Tensor ex = expected_x.slice(1, 0, c10::nullopt, 2),
             ey = expected_y.slice(1, 0, c10::nullopt, 2);
  ex.add_(1);
  ey.mul_(2).t_();
  at::Tensor x = wide_x.slice(1, 0, c10::nullopt, 2), y = wide_y.slice(1, 0, c10::nullopt, 2);
  auto out = f({x, y});
  at::Tensor t = out[0].toTensor();
  EXPECT_TRUE(t.is_alias_of(x));
  EXPECT_EQ(t.strides(), ex.t().strides());
  EXPECT_TRUE(at::allclose(t, ex.t()));
  EXPECT_TRUE(out[1].toTensor().is_same(y));
  EXPECT_EQ(y.strides(), ey.strides());
  EXPECT_TRUE(at::allclose(wide_x, expected_x));
  EXPECT_TRUE(at::allclose(wide_y, expected_y));
}

// The compile cache for inference: a second CompiledGraph loads the functional graph and metadata
// (text-identical), writes the mutated argument back and returns what eager returns; the
// deduplicated specialization is an entry of its own.
TEST(CompiledGraph, CacheHitRunsAsEager) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "aotgrad-cg-cache-XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  CompileOptions opts;
  opts.cache_dir = tmpl;
  reset_compile_cache_stats();
  CompiledGraph first(parse(kSgd), opts);
  CompiledGraph second(parse(kSgd), opts);
  CompileCacheStats s = compile_cache_stats();
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.hits, 1);
  EXPECT_EQ(printed(*first.plain().fw), printed(*second.plain().fw));
  at::Tensor p = at::randn({4}), g = at::randn({4});
  at::Tensor expected_p = p - 0.1 * g;
  auto out = second({p, g});
  EXPECT_TRUE(at::allclose(p, expected_p));
  EXPECT_TRUE(at::allclose(out[0].toTensor(), (expected_p * 2).sum()));
  // The same tensor twice, mutated: a deduplicated specialization, cached under its own key.
  const char* dup = R"(
def forward(self, x: "f32[4]", y: "f32[4]"):
    add_ = torch.ops.aten.add_.Tensor(x, 1)
    add = torch.ops.aten.add.Tensor(x, y)
    return (add,)
)";
  for (int round = 0; round < 2; ++round) {
    CompiledGraph f(parse(dup), opts);
    at::Tensor t = at::randn({4});
    at::Tensor e = t + 1;
    auto o = f({t, t});
    EXPECT_TRUE(at::allclose(o[0].toTensor(), e + e));
    EXPECT_TRUE(at::allclose(t, e));
  }
  s = compile_cache_stats();
  EXPECT_EQ(s.misses, 3);  // kSgd, dup's plain and dup's deduplicated specialization
  EXPECT_EQ(s.hits, 3);
  std::filesystem::remove_all(tmpl);
}

// The inference stack has the FakifiedOutWrapper too (runtime/wrappers/stack.h), as PyTorch's
// inference path: a custom compiler's output gets the traced strides back; a mutated input's new
// value, written back by the RuntimeWrapper outside it, is copied in whatever its strides.
TEST(CompiledGraph, CustomCompilerOutputsKeepTracedStrides) {
  CompiledGraph f(parse(R"(
def forward(self, x: "f32[4, 8]", w: "f32[16, 8]", s: "f32[4, 4]"):
    t = torch.ops.aten.t.default(w)
    mm = torch.ops.aten.mm.default(x, t)
    add_ = torch.ops.aten.add_.Tensor(s, 1)
    return (mm,)
)"),
                  {}, std::make_shared<TransposingCompiler>());
  at::Tensor x = at::randn({4, 8}), w = at::randn({16, 8}), s = at::zeros({4, 4});
  at::Tensor out = f({x, w, s})[0].toTensor();
  EXPECT_EQ(out.strides(), (c10::IntArrayRef{16, 1}));
  EXPECT_TRUE(at::allclose(out, at::mm(x, w.t())));
  EXPECT_TRUE(at::equal(s, at::ones({4, 4})));
}

}  // namespace
}  // namespace aotgrad
