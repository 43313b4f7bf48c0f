// Tests for dead code elimination's predicates and API; what the pass does to graphs is checked by
// tests/passes/dce_*.fx.
#include "aotgrad/transforms/passes/dce.h"

#include <gtest/gtest.h>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

TEST(Dce, PurityPredicates) {
  auto g = parse_graph(R"(
def forward(self, x: "f32[4]"):
    add_ = torch.ops.aten.add_.Tensor(x, 1)
    bernoulli = torch.ops.aten.bernoulli.p(x, 0.5)
    relu = torch.ops.aten.relu.default(x)
    return (relu,)
)",
                       aten_ops());
  EXPECT_TRUE(is_impure(*g->find("x")));
  EXPECT_TRUE(is_impure(*g->find("add_")));
  EXPECT_TRUE(has_mutations(*g->find("add_")));
  EXPECT_TRUE(is_impure(*g->find("bernoulli")));
  EXPECT_FALSE(has_mutations(*g->find("bernoulli")));
  EXPECT_FALSE(is_impure(*g->find("relu")));
  EXPECT_FALSE(is_functional(*g));
}

// The function functionalize() and its callers use.
TEST(Dce, EliminateDeadCodeCountsRemovedNodes) {
  auto g = parse_graph(R"(
def forward(self, x: "f32[4]"):
    relu = torch.ops.aten.relu.default(x)
    t = torch.ops.aten.t.default(relu)
    return (x,)
)",
                       aten_ops());
  EXPECT_EQ(eliminate_dead_code(*g), 2);
  EXPECT_EQ(g->size(), 2u);
}

}  // namespace
}  // namespace aotgrad
