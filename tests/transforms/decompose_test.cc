// Tests for the decomposition pass: text in, text out. Expected graphs are what torch 1.13's make_fx
// records for the composite ops (where 1.13 writes in place into a fresh result -- squeeze_, add_
// -- the functional form is expected).
#include "aotgrad/transforms/decompose.h"

#include <gtest/gtest.h>

#include <sstream>

#include "aotgrad/ir/error.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

// The body of the printed graph (no header, annotations or indentation).
std::string decomposed(const std::string& text, int* count = nullptr) {
  auto g = parse_graph(text, aten_ops());
  int n = decompose(*g, DecompositionTable::composite_implicit());
  if (count) *count = n;
  verify(*g);
  PrintOptions p;
  p.class_header = false;
  p.annotations = false;
  std::istringstream in(print_graph(*g, p));
  std::string line, out;
  while (std::getline(in, line)) {
    size_t a = line.find_first_not_of(' ');
    if (a == std::string::npos || line.compare(a, 4, "def ") == 0) continue;
    out += line.substr(a) + "\n";
  }
  return out;
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
            "t = torch.ops.aten.t.default(w);  w = None\n"
            "view = torch.ops.aten.view.default(x, [10, 3]);  x = None\n"
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
)", &count),
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
            "nll_loss_forward = torch.ops.aten.nll_loss_forward.default(_log_softmax, t, None, 1, -100);  _log_softmax = t = None\n"
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
            "empty_like = torch.ops.aten.empty_like.default(x, memory_format = torch.contiguous_format)\n"
            "bernoulli = torch.ops.aten.bernoulli.p(empty_like, 0.5);  empty_like = None\n"
            "div = torch.ops.aten.div.Scalar(bernoulli, 0.5);  bernoulli = None\n"
            "mul = torch.ops.aten.mul.Tensor(x, div);  x = div = None\n"
            "return (mul,)\n");
}

TEST(Decompose, NoTableLeavesTheGraphAlone) {
  auto g = parse_graph(R"(
def forward(self, x: "f32[2, 3]"):
    softmax = torch.ops.aten.softmax.int(x, 1)
    return (softmax,)
)", aten_ops());
  EXPECT_EQ(decompose(*g, DecompositionTable::none()), 0);
  EXPECT_NE(g->find("softmax"), nullptr);
}

TEST(Decompose, UnsupportedVariantIsAnErrorNamingTheNode) {
  auto g = parse_graph(R"(
def forward(self, x: "f32[4, 5]", t: "f32[4, 5]", w: "f32[5]"):
    cross_entropy_loss = torch.ops.aten.cross_entropy_loss.default(x, t, w)
    return (cross_entropy_loss,)
)", aten_ops());
  try {
    decompose(*g, DecompositionTable::composite_implicit());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("cross_entropy_loss"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("probability targets and a weight"), std::string::npos) << e.message();
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
  EXPECT_NE(message("core,aten::no_such_op").find("unknown op 'aten::no_such_op'"), std::string::npos);
  EXPECT_NE(message("mm").find("aten::mm has no decomposition"), std::string::npos);
  EXPECT_NE(message("core,,full").find("empty item"), std::string::npos);
}

}  // namespace
}  // namespace aotgrad
