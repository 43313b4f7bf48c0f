// Tests for the pass interface and make_pass (the pass pipeline:
// tests/driver/pass_pipeline_test.cc).
#include <gtest/gtest.h>

#include <sstream>

#include "../graph_text.h"
#include "aotgrad/driver/pass_registry.h"
#include "aotgrad/ir/error.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

std::unique_ptr<Graph> parse(const std::string& text) {
  auto g = parse_graph(text, aten_ops());
  verify(*g);
  return g;
}

TEST(MakePass, KnownNames) {
  for (const char* spec : {"functionalize", "dce", "cse", "constant_fold", "simplify", "reinplace",
                           "split_weight_grads"})
    EXPECT_EQ(make_pass(spec)->name(), spec);
  EXPECT_EQ(make_pass("fold")->name(), "constant_fold");
  EXPECT_EQ(make_pass("decomp:core")->name(), "decomp:core");
  EXPECT_EQ(make_pass("decomp:full,-aten::native_layer_norm")->name(),
            "decomp:full,-aten::native_layer_norm");
}

TEST(MakePass, UnknownNameListsTheKnownOnes) {
  try {
    make_pass("cse2");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(),
              "unknown pass 'cse2'; known passes: functionalize, decomp:<spec>, dce, "
              "cse, constant_fold (fold), simplify, reinplace, split_weight_grads");
  }
  try {
    make_pass("decomp:bogus");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message().rfind("pass 'decomp:bogus': ", 0), 0u) << e.message();
  }
}

// functionalize as a pass keeps the signature: the input mutation is a trailing copy_.
TEST(FunctionalizePass, RewritesInPlaceAndKeepsTheSignature) {
  auto g = parse(R"(
def forward(self, x: "f32[4]"):
    add_ = torch.ops.aten.add_.Tensor(x, 1)
    mul = torch.ops.aten.mul.Tensor(x, 2)
    return (mul,)
)");
  auto pass = make_pass("functionalize");
  EXPECT_TRUE(pass->run(*g));
  verify(*g);
  EXPECT_EQ(graph_text(*g), normalized(R"(
def forward(self, x):
    add = torch.ops.aten.add.Tensor(x, 1)
    mul = torch.ops.aten.mul.Tensor(add, 2)
    copy_ = torch.ops.aten.copy_.default(x, add)
    return (mul,)
)"));
  EXPECT_FALSE(pass->run(*g)) << graph_text(*g);
}

TEST(DecompPass, DecomposesWithTheSpecTable) {
  PassRun r = run_pass("decomp:aten::addmm", R"(
def forward(self, b: "f32[3]", x: "f32[2, 4]", w: "f32[4, 3]"):
    addmm = torch.ops.aten.addmm.default(b, x, w)
    return (addmm,)
)");
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(r.changes, 1);
  EXPECT_EQ(r.text.find("addmm.default"), std::string::npos) << r.text;
}

TEST(AssignGraph, CopiesNodesNamesAndSignature) {
  auto src = parse(R"(
def forward(self, a: "f32[4]"):
    exp = torch.ops.aten.exp.default(a)
    max_1 = torch.ops.aten.max.dim(exp, 0)
    getitem = max_1[0]
    return (getitem,)
)");
  src->signature = Signature::Joint;
  auto dst = parse(R"(
def forward(self, x: "f32[2]"):
    relu = torch.ops.aten.relu.default(x)
    return (relu,)
)");
  assign_graph(*dst, *src);
  verify(*dst);
  EXPECT_EQ(graph_text(*dst), graph_text(*src));
  EXPECT_EQ(dst->signature, Signature::Joint);
  EXPECT_EQ(dst->find("x"), nullptr);
}

}  // namespace
}  // namespace aotgrad
