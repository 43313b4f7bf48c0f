// Tests for the decomposition pass: text in, text out. Expected graphs are what torch 1.13's
// make_fx records for the composite ops (where 1.13 writes in place into a fresh result --
// squeeze_, add_
// -- the functional form is expected).
#include "aotgrad/transforms/passes/decompose.h"

#include <gtest/gtest.h>

#include <sstream>

#include "../graph_text.h"
#include "aotgrad/ir/error.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

// The body of the printed graph (no header, annotations or indentation).
std::string body(const Graph& g) {
  std::string text = graph_text(g, /*release_statements=*/true);
  return text.substr(text.find('\n') + 1);
}

// The body of `text` decomposed with `table`; `count` gets the number of calls replaced.
std::string decomposed_with(const std::string& text, const DecompositionTable& table,
                            int* count = nullptr) {
  auto g = parse_graph(text, aten_ops());
  int n = decompose(*g, table);
  if (count) *count = n;
  verify(*g);
  return body(*g);
}

std::string decomposed(const std::string& text, int* count = nullptr) {
  return decomposed_with(text, DecompositionTable::composite_implicit(), count);
}

TEST(Decompose, Linear2dIsAddmm) {
  EXPECT_EQ(decomposed(R"(
def forward(self, x: "f32[2, 3]", w: "f32[4, 3]", b: "f32[4]"):
    linear = torch.ops.aten.linear.default(x, w, b)
    return (linear,)
)"),
            "t = torch.ops.aten.t.default(w);  w = None\n"
            "addmm = torch.ops.aten.addmm.default(b, x, t);  b = x = t = None\n"
            "return (addmm,)\n");
}

// A contiguous 3-d input with bias is flattened for addmm (_flatten_3d_linear).
TEST(Decompose, Linear3dContiguousFlattensForAddmm) {
  EXPECT_EQ(decomposed(R"(
def forward(self, x: "f32[5, 2, 3]", w: "f32[4, 3]", b: "f32[4]"):
    linear = torch.ops.aten.linear.default(x, w, b)
    return (linear,)
)"),
            "view = torch.ops.aten.view.default(x, [10, 3]);  x = None\n"
            "t = torch.ops.aten.t.default(w);  w = None\n"
            "addmm = torch.ops.aten.addmm.default(b, view, t);  b = view = t = None\n"
            "view_1 = torch.ops.aten.view.default(addmm, [5, 2, 4]);  addmm = None\n"
            "return (view_1,)\n");
}

// Without bias, linear is matmul, which folds the batch dims into one mm; a decomposition's own
// composite calls decompose too.
TEST(Decompose, Linear3dWithoutBiasIsFoldedMatmul) {
  int count = 0;
  EXPECT_EQ(decomposed(R"(
def forward(self, x: "f32[5, 2, 3]", w: "f32[4, 3]"):
    linear = torch.ops.aten.linear.default(x, w)
    return (linear,)
)",
                       &count),
            "t = torch.ops.aten.t.default(w);  w = None\n"
            "view = torch.ops.aten.view.default(x, [10, 3]);  x = None\n"
            "mm = torch.ops.aten.mm.default(view, t);  view = t = None\n"
            "_unsafe_view = torch.ops.aten._unsafe_view.default(mm, [5, 2, 4]);  mm = None\n"
            "return (_unsafe_view,)\n");
  EXPECT_EQ(count, 1);  // linear; its matmul is built directly
}

// Batched matmul: both sides expanded to the broadcast batch, reshaped to 3-d, bmm.
TEST(Decompose, BroadcastMatmulIsBmm) {
  EXPECT_EQ(decomposed(R"(
def forward(self, a: "f32[2, 5, 2, 3]", b: "f32[1, 3, 4]"):
    matmul = torch.ops.aten.matmul.default(a, b)
    return (matmul,)
)"),
            "expand = torch.ops.aten.expand.default(a, [2, 5, 2, 3]);  a = None\n"
            "view = torch.ops.aten.view.default(expand, [10, 2, 3]);  expand = None\n"
            "expand_1 = torch.ops.aten.expand.default(b, [2, 5, 3, 4]);  b = None\n"
            "view_1 = torch.ops.aten.view.default(expand_1, [10, 3, 4]);  expand_1 = None\n"
            "bmm = torch.ops.aten.bmm.default(view, view_1);  view = view_1 = None\n"
            "_unsafe_view = torch.ops.aten._unsafe_view.default(bmm, [2, 5, 2, 4]);  bmm = None\n"
            "return (_unsafe_view,)\n");
}

TEST(Decompose, CrossEntropyIsLogSoftmaxAndNllLoss) {
  EXPECT_EQ(decomposed(R"(
def forward(self, x: "f32[4, 5]", t: "i64[4]"):
    cross_entropy_loss = torch.ops.aten.cross_entropy_loss.default(x, t)
    return (cross_entropy_loss,)
)"),
            "_log_softmax = torch.ops.aten._log_softmax.default(x, 1, False);  x = None\n"
            "nll_loss_forward = torch.ops.aten.nll_loss_forward.default(_log_softmax, t, None, 1, "
            "-100);  _log_softmax = t = None\n"
            "getitem = nll_loss_forward[0];  nll_loss_forward = None\n"
            "return (getitem,)\n");
}

// In eval mode (or with p = 0) dropout is its input: the output is the placeholder itself.
TEST(Decompose, DropoutInEvalModeIsItsInput) {
  EXPECT_EQ(decomposed(R"(
def forward(self, x: "f32[4, 5]"):
    dropout = torch.ops.aten.dropout.default(x, 0.5, False)
    return (dropout,)
)"),
            "return (x,)\n");
  EXPECT_EQ(decomposed(R"(
def forward(self, x: "f32[4, 5]"):
    dropout = torch.ops.aten.dropout.default(x, 0.5, True)
    return (dropout,)
)"),
            "empty_like = torch.ops.aten.empty_like.default(x)\n"
            "bernoulli = torch.ops.aten.bernoulli.p(empty_like, 0.5);  empty_like = None\n"
            "div = torch.ops.aten.div.Scalar(bernoulli, 0.5);  bernoulli = None\n"
            "mul = torch.ops.aten.mul.Tensor(x, div);  x = div = None\n"
            "return (mul,)\n");
  // bernoulli_ fills empty_like(x) in storage order: a transposed x draws on the permuted view.
  EXPECT_EQ(decomposed(R"(
def forward(self, x: "f32[4, 5][1, 4]"):
    dropout = torch.ops.aten.dropout.default(x, 0.5, True)
    return (dropout,)
)"),
            "empty_like = torch.ops.aten.empty_like.default(x)\n"
            "permute = torch.ops.aten.permute.default(empty_like, [1, 0]);  empty_like = None\n"
            "bernoulli = torch.ops.aten.bernoulli.p(permute, 0.5);  permute = None\n"
            "permute_1 = torch.ops.aten.permute.default(bernoulli, [1, 0]);  bernoulli = None\n"
            "div = torch.ops.aten.div.Scalar(permute_1, 0.5);  permute_1 = None\n"
            "mul = torch.ops.aten.mul.Tensor(x, div);  x = div = None\n"
            "return (mul,)\n");
}

TEST(Decompose, NoTableLeavesTheGraphAlone) {
  auto g = parse_graph(R"(
def forward(self, x: "f32[2, 3]"):
    softmax = torch.ops.aten.softmax.int(x, 1)
    return (softmax,)
)",
                       aten_ops());
  EXPECT_EQ(decompose(*g, DecompositionTable::none()), 0);
  EXPECT_NE(g->find("softmax"), nullptr);
}

TEST(Decompose, UnsupportedVariantIsAnErrorNamingTheNode) {
  auto g = parse_graph(R"(
def forward(self, x: "f32[4, 5]", t: "f32[4, 5]", w: "f32[5]"):
    cross_entropy_loss = torch.ops.aten.cross_entropy_loss.default(x, t, w)
    return (cross_entropy_loss,)
)",
                       aten_ops());
  try {
    decompose(*g, DecompositionTable::composite_implicit());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("cross_entropy_loss"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("probability targets and a weight"), std::string::npos)
        << e.message();
  }
}

TEST(DecompositionSpec, TablesOpsAndRemovals) {
  DecompositionTable core = parse_decomposition_spec("core");
  EXPECT_TRUE(core.ops.count("aten::linear"));
  EXPECT_TRUE(core.ops.count("aten::softmax.int"));
  EXPECT_TRUE(parse_decomposition_spec("none").ops.empty());
  DecompositionTable t = parse_decomposition_spec("core,-aten::linear, -softmax");
  EXPECT_FALSE(t.ops.count("aten::linear"));
  EXPECT_FALSE(t.ops.count("aten::softmax.int"));
  EXPECT_TRUE(t.ops.count("aten::matmul"));
  EXPECT_EQ(parse_decomposition_spec("matmul.default,aten::dropout").ops,
            (std::set<std::string>{"aten::matmul", "aten::dropout"}));
}

TEST(DecompositionSpec, BadItemsAreErrorsNamingThem) {
  auto message = [](const std::string& spec) {
    try {
      parse_decomposition_spec(spec);
    } catch (const Error& e) {
      return e.message();
    }
    return std::string("no error");
  };
  EXPECT_NE(message("core,aten::no_such_op").find("unknown op 'aten::no_such_op'"),
            std::string::npos);
  EXPECT_NE(message("mm").find("aten::mm has no decomposition"), std::string::npos);
  EXPECT_NE(message("core,,full").find("empty item"), std::string::npos);
}

constexpr const char* kNativeLayerNorm = R"(
def forward(self, x: "f32[4, 8]", w: "f32[8]", b: "f32[8]"):
    native_layer_norm = torch.ops.aten.native_layer_norm.default(x, [8], w, b, 1e-05)
    getitem = native_layer_norm[0]
    getitem_1 = native_layer_norm[1]
    getitem_2 = native_layer_norm[2]
    return (getitem, getitem_1, getitem_2)
)";

// §13.10: the full table takes native_layer_norm apart as torch/_refs does -- var_mean -> add ->
// rsqrt -> sub -> mul -> mul -> add -- and returns (out, mean, rstd).
TEST(DecomposeFull, NativeLayerNormIsVarMeanAddRsqrtSubMulMulAdd) {
  EXPECT_EQ(
      decomposed_with(kNativeLayerNorm, DecompositionTable::full()),
      "var_mean = torch.ops.aten.var_mean.correction(x, [1], correction = 0, keepdim = True)\n"
      "getitem_3 = var_mean[0]\n"
      "getitem_4 = var_mean[1];  var_mean = None\n"
      "add = torch.ops.aten.add.Tensor(getitem_3, 1e-05);  getitem_3 = None\n"
      "rsqrt = torch.ops.aten.rsqrt.default(add);  add = None\n"
      "sub = torch.ops.aten.sub.Tensor(x, getitem_4);  x = None\n"
      "mul = torch.ops.aten.mul.Tensor(sub, rsqrt);  sub = None\n"
      "mul_1 = torch.ops.aten.mul.Tensor(mul, w);  mul = w = None\n"
      "add_1 = torch.ops.aten.add.Tensor(mul_1, b);  mul_1 = b = None\n"
      "return (add_1, getitem_4, rsqrt)\n");
}

// The core table leaves core ATen ops alone: native_layer_norm is a full-table decomposition.
TEST(DecomposeFull, CoreTableKeepsNativeLayerNorm) {
  auto g = parse_graph(kNativeLayerNorm, aten_ops());
  EXPECT_EQ(decompose(*g, DecompositionTable::core()), 0);
  EXPECT_TRUE(DecompositionTable::full().ops.count("aten::native_layer_norm"));
  EXPECT_FALSE(DecompositionTable::core().ops.count("aten::native_layer_norm"));
}

// F.layer_norm(x, (8,), w, b) under the full table (§13.10's aot_eager_decomp_partition run): the
// composite layer_norm becomes native_layer_norm, which the full table takes apart in turn.
TEST(DecomposeFull, LayerNormThroughNativeLayerNorm) {
  EXPECT_EQ(
      decomposed_with(R"(
def forward(self, x: "f32[4, 8]", w: "f32[8]", b: "f32[8]"):
    layer_norm = torch.ops.aten.layer_norm.default(x, [8], w, b)
    return (layer_norm,)
)",
                      DecompositionTable::full()),
      "var_mean = torch.ops.aten.var_mean.correction(x, [1], correction = 0, keepdim = True)\n"
      "getitem_1 = var_mean[0]\n"
      "getitem_2 = var_mean[1];  var_mean = None\n"
      "add = torch.ops.aten.add.Tensor(getitem_1, 1e-05);  getitem_1 = None\n"
      "rsqrt = torch.ops.aten.rsqrt.default(add);  add = None\n"
      "sub = torch.ops.aten.sub.Tensor(x, getitem_2);  x = getitem_2 = None\n"
      "mul = torch.ops.aten.mul.Tensor(sub, rsqrt);  sub = rsqrt = None\n"
      "mul_1 = torch.ops.aten.mul.Tensor(mul, w);  mul = w = None\n"
      "add_1 = torch.ops.aten.add.Tensor(mul_1, b);  mul_1 = b = None\n"
      "return (add_1,)\n");
}

// addmm with beta = 0 never reads self; alpha scales the product (torch/_decomp addmm).
TEST(DecomposeFull, AddmmBetaZeroIsScaledMm) {
  EXPECT_EQ(decomposed_with(R"(
def forward(self, c: "f32[4, 3]", a: "f32[4, 8]", b: "f32[8, 3]"):
    addmm = torch.ops.aten.addmm.default(c, a, b, beta = 0, alpha = 2)
    return (addmm,)
)",
                            DecompositionTable::full()),
            "mm = torch.ops.aten.mm.default(a, b);  a = b = None\n"
            "mul = torch.ops.aten.mul.Tensor(mm, 2);  mm = None\n"
            "return (mul,)\n");
}

// native_dropout in training draws its mask with bernoulli as ATen's CPU kernel does.
TEST(DecomposeFull, NativeDropoutDrawsABernoulliMask) {
  EXPECT_EQ(decomposed_with(R"(
def forward(self, x: "f32[4, 5]"):
    native_dropout = torch.ops.aten.native_dropout.default(x, 0.5, True)
    getitem = native_dropout[0]
    getitem_1 = native_dropout[1]
    return (getitem, getitem_1)
)",
                            DecompositionTable::full()),
            "empty_like = torch.ops.aten.empty_like.default(x, dtype = torch.bool)\n"
            "bernoulli = torch.ops.aten.bernoulli.p(empty_like, 0.5);  empty_like = None\n"
            "mul = torch.ops.aten.mul.Tensor(x, bernoulli);  x = None\n"
            "mul_1 = torch.ops.aten.mul.Tensor(mul, 2.0);  mul = None\n"
            "return (mul_1, bernoulli)\n");
}

// What a node tagged for recomputation decomposes to carries its tag (a checkpointed region's ops,
// §13.25); untagged nodes' decompositions stay untagged.
TEST(Decompose, DecompositionsInheritTheRecomputePolicy) {
  auto g = parse_graph(R"(
def forward(self, x: "f32[4, 8]"):
    native_dropout = torch.ops.aten.native_dropout.default(x, 0.5, True)
    getitem = native_dropout[0]
    gelu = torch.ops.aten.gelu.default(getitem)
    return (gelu,)
)",
                       aten_ops());
  g->find("native_dropout")->info().recompute = RecomputePolicy::MustRecompute;
  decompose(*g, DecompositionTable::full());
  verify(*g);
  int tagged = 0, bernoulli = 0;
  for (const Node* n : g->nodes()) {
    if (n->kind() != NodeKind::Call) continue;
    bool from_dropout = n->info().origin == "native_dropout";
    EXPECT_EQ(n->info().recompute,
              from_dropout ? RecomputePolicy::MustRecompute : RecomputePolicy::None)
        << n->name();
    tagged += from_dropout;
    bernoulli += n->op()->name == "aten::bernoulli.p" && from_dropout;
  }
  EXPECT_GE(tagged, 3);  // empty_like, bernoulli.p, mul, mul
  EXPECT_EQ(bernoulli, 1);
}

}  // namespace
}  // namespace aotgrad
