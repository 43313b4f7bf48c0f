// Tests for dead code elimination: graph text in, graph text out.
#include "aotgrad/transforms/dce.h"

#include <gtest/gtest.h>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/registry.h"
#include "pass_text.h"

namespace aotgrad {
namespace {

TEST(Dce, RemovesUnusedChains) {
  PassRun r = run_pass("dce", R"(
def forward(self, x: "f32[4]", y: "f32[4]"):
    relu = torch.ops.aten.relu.default(x)
    neg = torch.ops.aten.neg.default(relu)
    add = torch.ops.aten.add.Tensor(x, x)
    return (add,)
)");
  EXPECT_EQ(r.text, normalized(R"(
def forward(self, x, y):
    add = torch.ops.aten.add.Tensor(x, x)
    return (add,)
)"));
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(r.changes, 2);
}

TEST(Dce, NothingDeadIsNoChange) {
  PassRun r = run_pass("dce", R"(
def forward(self, x: "f32[4]"):
    relu = torch.ops.aten.relu.default(x)
    return (relu,)
)");
  EXPECT_FALSE(r.changed);
  EXPECT_EQ(r.changes, 0);
}

// An in-place op writes its argument: kept unused, and what it reads is kept with it.
TEST(Dce, KeepsMutationsAndTheirInputs) {
  PassRun r = run_pass("dce", R"(
def forward(self, x: "f32[4]", y: "f32[4]"):
    mul = torch.ops.aten.mul.Tensor(y, 2)
    add_ = torch.ops.aten.add_.Tensor(x, mul)
    exp = torch.ops.aten.exp.default(y)
    return (y,)
)");
  EXPECT_EQ(r.text, normalized(R"(
def forward(self, x, y):
    mul = torch.ops.aten.mul.Tensor(y, 2)
    add_ = torch.ops.aten.add_.Tensor(x, mul)
    return (y,)
)"));
}

// keep_inference_input_mutations: the trailing copy_ into an input has no users and stays.
TEST(Dce, KeepsInputMutatingCopy) {
  PassRun r = run_pass("dce", R"(
def forward(self, x: "f32[4]"):
    add = torch.ops.aten.add.Tensor(x, 1)
    unused = torch.ops.aten.sin.default(add)
    copy_ = torch.ops.aten.copy_.default(x, add)
    return (add,)
)");
  EXPECT_EQ(r.text, normalized(R"(
def forward(self, x):
    add = torch.ops.aten.add.Tensor(x, 1)
    copy_ = torch.ops.aten.copy_.default(x, add)
    return (add,)
)"));
}

// As fx's is_impure (torch 2.7+): a random op advances the RNG stream, so removing an unused one
// would change the numbers every later random op draws.
TEST(Dce, KeepsRandomOpsButNotTheirUnusedGetitems) {
  PassRun r = run_pass("dce", R"(
def forward(self, x: "f32[4]"):
    bernoulli = torch.ops.aten.bernoulli.p(x, 0.5)
    native_dropout = torch.ops.aten.native_dropout.default(x, 0.5, True)
    getitem = native_dropout[0]
    getitem_1 = native_dropout[1]
    return (getitem,)
)");
  EXPECT_EQ(r.text, normalized(R"(
def forward(self, x):
    bernoulli = torch.ops.aten.bernoulli.p(x, 0.5)
    native_dropout = torch.ops.aten.native_dropout.default(x, 0.5, True)
    getitem = native_dropout[0]
    return (getitem,)
)"));
  EXPECT_EQ(r.changes, 1);
}

TEST(Dce, RemovesPureMultiOutputOpWithItsGetitems) {
  PassRun r = run_pass("dce", R"(
def forward(self, x: "f32[4, 3]"):
    max_1 = torch.ops.aten.max.dim(x, 1)
    getitem = max_1[0]
    getitem_1 = max_1[1]
    return (x,)
)");
  EXPECT_EQ(r.text, normalized(R"(
def forward(self, x):
    return (x,)
)"));
  EXPECT_EQ(r.changes, 3);
}

// native_batch_norm writes running_mean/running_var only when training (undeclared mutation).
TEST(Dce, UndeclaredMutationKeptOnlyWhenItApplies) {
  const char* text = R"(
def forward(self, x: "f32[2, 3]", rm: "f32[3]", rv: "f32[3]"):
    native_batch_norm = torch.ops.aten.native_batch_norm.default(x, None, None, rm, rv, TRAINING, 0.1, 1e-05)
    return (x,)
)";
  std::string training = text, eval = text;
  training.replace(training.find("TRAINING"), 8, "True");
  eval.replace(eval.find("TRAINING"), 8, "False");
  EXPECT_FALSE(run_pass("dce", training).changed);
  EXPECT_EQ(run_pass("dce", eval).text, normalized(R"(
def forward(self, x, rm, rv):
    return (x,)
)"));
}

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
