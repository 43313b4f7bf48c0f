// Tests for symbolize(): traces at three sizes in, the dynamic graph PyTorch prints out.
#include "aotgrad/transforms/symbolize.h"

#include <gtest/gtest.h>

#include "../graph_text.h"
#include "aotgrad/ir/verifier.h"

namespace aotgrad {
namespace {

// `text` with every "{B}" replaced by b, "{B2}" by 2*b, "{BT}" by b*t, "{T}" by t, "{TT}" by t*t.
std::string at(std::string text, int64_t b, int64_t t = 0) {
  auto subst = [&](const std::string& key, int64_t v) {
    for (size_t p; (p = text.find(key)) != std::string::npos;)
      text.replace(p, key.size(), std::to_string(v));
  };
  subst("{B2}", 2 * b);
  subst("{BT}", b * t);
  subst("{TT}", t * t);
  subst("{B}", b);
  subst("{T}", t);
  return text;
}

std::unique_ptr<Graph> unify(const std::string& text, const std::vector<std::vector<int64_t>>& pts,
                             std::vector<SymbolSource> sources) {
  std::vector<std::unique_ptr<Graph>> g;
  std::vector<const Graph*> traces;
  for (const auto& p : pts) {
    g.push_back(parse_graph(at(text, p[0], p.size() > 1 ? p[1] : 0), aten_ops()));
    traces.push_back(g.back().get());
  }
  auto out = symbolize(traces, {std::move(sources), pts});
  verify(*out);
  return out;
}

const char* kView = R"fx(
def forward(self, x: "f32[{B}, 8][8, 1]cpu", w: "f32[4][1]cpu"):
    view = torch.ops.aten.view.default(x, [{B2}, 4])
    add = torch.ops.aten.add.Tensor(view, w)
    sum_1 = torch.ops.aten.sum.dim_IntList(add, [0])
    return (add, sum_1)
)fx";

TEST(Symbolize, ViewArgumentBecomesSymIntArithmetic) {
  auto g = unify(kView, {{8}, {9}, {11}}, {{0, 0}});
  PrintOptions p;
  p.class_header = false;
  const std::string want = R"fx(
def forward(self, x: "f32[s0, 8][8, 1]cpu", w: "f32[4][1]cpu"):
    sym_size_int: "Sym(s0)" = torch.ops.aten.sym_size.int(x, 0)
    mul: "Sym(2*s0)" = sym_size_int * 2;  sym_size_int = None
    view: "f32[2*s0, 4][4, 1]cpu" = torch.ops.aten.view.default(x, [mul, 4]);  x = mul = None
    add: "f32[2*s0, 4][4, 1]cpu" = torch.ops.aten.add.Tensor(view, w);  view = w = None
    sum_1: "f32[4][1]cpu" = torch.ops.aten.sum.dim_IntList(add, [0])
    return (add, sum_1)
)fx";
  EXPECT_EQ(normalized(print_graph(*g, p)), normalized(want));
  EXPECT_EQ(g->find("x")->tensor_meta().sizes[0].hint(), 8);
}

TEST(Symbolize, TwoSymbolsAndTheirProduct) {
  const char* two = R"fx(
def forward(self, x: "f32[{B}, {T}, 4]", m: "f32[{T}, {T}]"):
    view = torch.ops.aten.view.default(x, [{BT}, 4])
    view_1 = torch.ops.aten.view.default(m, [{TT}])
    return (view, view_1)
)fx";
  auto g = unify(two, {{8, 16}, {9, 18}, {11, 23}}, {{0, 0}, {0, 1}});
  const std::string want = R"fx(
def forward(self, x, m):
    sym_size_int = torch.ops.aten.sym_size.int(x, 0)
    sym_size_int_1 = torch.ops.aten.sym_size.int(x, 1)
    mul = sym_size_int * sym_size_int_1
    view = torch.ops.aten.view.default(x, [mul, 4])
    mul_1 = sym_size_int_1 * sym_size_int_1
    view_1 = torch.ops.aten.view.default(m, [mul_1])
    return (view, view_1)
)fx";
  EXPECT_EQ(graph_text(*g), normalized(want));
  EXPECT_EQ(g->find("view_1")->tensor_meta().annotation(), "f32[s1**2][1]cpu");
  EXPECT_EQ(g->find("m")->tensor_meta().annotation(), "f32[s1, s1][s1, 1]cpu");
}

TEST(Symbolize, StructureThatChangesIsAnError) {
  auto a = parse_graph(at(kView, 8), aten_ops());
  auto b = parse_graph(at(kView, 9), aten_ops());
  auto c = parse_graph(R"fx(
def forward(self, x: "f32[11, 8]", w: "f32[4]"):
    relu = torch.ops.aten.relu.default(x)
    return (relu,)
)fx",
                       aten_ops());
  try {
    symbolize({a.get(), b.get(), c.get()}, {{{0, 0}}, {{8}, {9}, {11}}});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("changes with the dynamic sizes"), std::string::npos)
        << e.what();
  }
}

TEST(Symbolize, SizeOutsideTheFamilyAndVaryingFloatsAreErrors) {
  const char* cube = R"fx(
def forward(self, x: "f32[{B}]"):
    new_zeros = torch.ops.aten.new_zeros.default(x, [{C}])
    return (new_zeros,)
)fx";
  std::vector<std::unique_ptr<Graph>> g;
  for (int64_t b : {8, 9, 11}) {
    std::string t = cube;
    t.replace(t.find("{C}"), 3, std::to_string(b * b * b));
    g.push_back(parse_graph(at(t, b), aten_ops()));
  }
  try {
    symbolize({g[0].get(), g[1].get(), g[2].get()}, {{{0, 0}}, {{8}, {9}, {11}}});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("takes the values 512, 729, 1331 at the sizes s0=8; "
                                         "s0=9; s0=11"),
              std::string::npos)
        << e.what();
  }
  std::vector<std::unique_ptr<Graph>> f;
  for (int64_t b : {8, 9, 11})
    f.push_back(parse_graph("def forward(self, x: \"f32[" + std::to_string(b) +
                                "]\"):\n    mul = torch.ops.aten.mul.Tensor(x, " +
                                std::to_string(1.0 / b) + ")\n    return (mul,)\n",
                            aten_ops()));
  try {
    symbolize({f[0].get(), f[1].get(), f[2].get()}, {{{0, 0}}, {{8}, {9}, {11}}});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("float argument other changes"), std::string::npos)
        << e.what();
  }
}

// A program that needs its batch even (a view of half the batch) traced at batches 6, 8, 12: the
// symbol is half the batch, read as sym_size // 2, and every size is a polynomial in it.
TEST(Symbolize, SymbolReadFromAMultiple) {
  const char* half = R"fx(
def forward(self, x: "f32[{B2}, 3]"):
    view = torch.ops.aten.view.default(x, [{B}, 6])
    return (view,)
)fx";
  auto g = unify(half, {{3}, {4}, {6}}, {{0, 0, 2}});
  PrintOptions p;
  p.class_header = false;
  const std::string want = R"fx(
def forward(self, x: "f32[2*s0, 3][3, 1]cpu"):
    sym_size_int: "Sym(2*s0)" = torch.ops.aten.sym_size.int(x, 0)
    floordiv: "Sym(s0)" = sym_size_int // 2;  sym_size_int = None
    view: "f32[s0, 6][6, 1]cpu" = torch.ops.aten.view.default(x, [floordiv, 6]);  x = floordiv = None
    return (view,)
)fx";
  EXPECT_EQ(normalized(print_graph(*g, p)), normalized(want));
  EXPECT_EQ(g->find("x")->tensor_meta().sizes[0].hint(), 6);

  auto a = parse_graph(at(half, 3), aten_ops());
  auto b = parse_graph(at(half, 4), aten_ops());
  auto c = parse_graph(at(half, 6), aten_ops());
  try {
    symbolize({a.get(), b.get(), c.get()}, {{{0, 0, 4}}, {{3}, {4}, {6}}});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not have size 4 * 3"), std::string::npos)
        << e.what();
  }
}

// The view libtorch's reshape takes at batch 1 and the copy it takes at batch 2 are one reshape
// once layouts are set aside; a write into a reshape of a tensor used again keeps them apart.
TEST(Symbolize, WithoutLayoutsUndoesReshapeDecisions) {
  auto view = parse_graph(R"fx(
def forward(self, x: "f32[1, 2, 4]"):
    transpose = torch.ops.aten.transpose.int(x, 0, 1)
    _reshape_alias = torch.ops.aten._reshape_alias.default(transpose, [2, 4], [4, 1])
    relu = torch.ops.aten.relu.default(_reshape_alias)
    return (relu,)
)fx",
                          aten_ops());
  auto copy = parse_graph(R"fx(
def forward(self, x: "f32[3, 2, 4]"):
    transpose = torch.ops.aten.transpose.int(x, 0, 1)
    clone = torch.ops.aten.clone.default(transpose, memory_format = torch.contiguous_format)
    _unsafe_view = torch.ops.aten._unsafe_view.default(clone, [2, 12])
    relu = torch.ops.aten.relu.default(_unsafe_view)
    return (relu,)
)fx",
                          aten_ops());
  const std::string want = R"fx(
def forward(self, x):
    n0 = torch.ops.aten.transpose.int(x, 0, 1)
    n1 = torch.ops.aten.reshape.default(n0, [2, SIZE])
    n2 = torch.ops.aten.relu.default(n1)
    return (n2,)
)fx";
  auto with = [&](const char* size) {
    std::string w = want;
    w.replace(w.find("SIZE"), 4, size);
    return normalized(w);
  };
  EXPECT_EQ(graph_text(*without_layouts(*view)), with("4"));
  EXPECT_EQ(graph_text(*without_layouts(*copy)), with("12"));
  EXPECT_EQ(without_layouts(*view)->find("n1")->tensor_meta().annotation(), "f32[2, 4][0, 0]cpu");
  auto written = parse_graph(R"fx(
def forward(self, x: "f32[4, 2]"):
    view = torch.ops.aten.view.default(x, [8])
    add_ = torch.ops.aten.add_.Tensor(view, 1)
    return (add_,)
)fx",
                             aten_ops());
  EXPECT_EQ(without_layouts(*written), nullptr);
}

}  // namespace
}  // namespace aotgrad
