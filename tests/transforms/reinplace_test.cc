// Tests for the re-inplacing plan: a graph in, the calls that may run in place (and into which
// value) out; and the training-step timeline that prices it.
#include "aotgrad/transforms/passes/reinplace.h"

#include <gtest/gtest.h>

#include "../graph_text.h"
#include "aotgrad/transforms/partition/memory_timeline.h"

namespace aotgrad {
namespace {

std::string plan_of(const char* text) {
  std::shared_ptr<Graph> g = parse_text(text);
  return reinplace_text(*g, reinplace_plan(*g));
}

TEST(Reinplace, AChainOfPointwiseOpsReusesOneBuffer) {
  EXPECT_EQ(plan_of(R"(
def forward(self, x: "f32[4, 4]", y: "f32[4, 4]"):
    mm = torch.ops.aten.mm.default(x, y)
    relu = torch.ops.aten.relu.default(mm)
    mul = torch.ops.aten.mul.Tensor(relu, 2)
    add = torch.ops.aten.add.Tensor(mul, x)
    return (add,)
)"),
            "relu = aten.relu_.default into mm\n"
            "mul = aten.mul_.Tensor into relu\n"
            "add = aten.add_.Tensor into mul\n");
}

TEST(Reinplace, NeverWritesAGraphInput) {
  // x and its view are the caller's; tangents and saved values are placeholders of a backward.
  EXPECT_EQ(plan_of(R"(
def forward(self, x: "f32[16]"):
    sin = torch.ops.aten.sin.default(x)
    view = torch.ops.aten.view.default(x, [4, 4])
    mul = torch.ops.aten.mul.Tensor(view, 2)
    return (sin, mul)
)"),
            "");
}

TEST(Reinplace, AValueReadLaterOrReturnedIsKept) {
  // add reads mm, which mul reads later; relu's argument is returned. mul is the last reader of
  // both mm and add: it writes into mm, its argument 0.
  EXPECT_EQ(plan_of(R"(
def forward(self, x: "f32[4, 4]"):
    mm = torch.ops.aten.mm.default(x, x)
    add = torch.ops.aten.add.Tensor(mm, 1)
    mul = torch.ops.aten.mul.Tensor(mm, add)
    mm_1 = torch.ops.aten.mm.default(x, x)
    relu = torch.ops.aten.relu.default(mm_1)
    return (mul, relu, mm_1)
)"),
            "mul = aten.mul_.Tensor into mm\n");
}

TEST(Reinplace, AViewKeepsItsBaseAliveAndIsWrittenWhenBothDie) {
  // relu(mm) while a view of mm is read later: no. relu of the view when mm dies: yes, into the
  // view.
  EXPECT_EQ(plan_of(R"(
def forward(self, x: "f32[4, 4]"):
    mm = torch.ops.aten.mm.default(x, x)
    view = torch.ops.aten.view.default(mm, [16])
    relu = torch.ops.aten.relu.default(mm)
    sum_1 = torch.ops.aten.sum.default(view)
    mm_1 = torch.ops.aten.mm.default(x, x)
    view_1 = torch.ops.aten.view.default(mm_1, [16])
    relu_1 = torch.ops.aten.relu.default(view_1)
    return (relu, sum_1, relu_1)
)"),
            "relu_1 = aten.relu_.default into view_1\n");
}

TEST(Reinplace, ShapesDtypesAndAliasedArgumentsMustAllow) {
  // Broadcast (f32[4, 1] + f32[4, 4]), promotion (f32 * f64 is f64), the other argument in the same
  // storage (add(mm, mm)): none in place. The last add has its own shape and dtype: in place.
  EXPECT_EQ(plan_of(R"(
def forward(self, x: "f32[4, 4]", c: "f32[4, 1]", z: "f64[4, 4]"):
    mm = torch.ops.aten.mm.default(x, c)
    add = torch.ops.aten.add.Tensor(mm, x)
    mm_1 = torch.ops.aten.mm.default(x, x)
    mul = torch.ops.aten.mul.Tensor(mm_1, z)
    mm_2 = torch.ops.aten.mm.default(x, x)
    add_1 = torch.ops.aten.add.Tensor(mm_2, mm_2)
    add_2 = torch.ops.aten.add.Tensor(add_1, x)
    return (add, mul, add_2)
)"),
            "add_2 = aten.add_.Tensor into add_1\n");
}

TEST(Reinplace, AResultOfAMultiResultCallWaitsForTheTuplesLastGetitem) {
  // The interpreter holds var_mean's tuple until getitem_1: mul(getitem) may not write getitem's
  // buffer while it is held; add, after the last getitem, may write mul's.
  EXPECT_EQ(plan_of(R"(
def forward(self, x: "f32[4, 4]"):
    var_mean = torch.ops.aten.var_mean.correction(x, [1], correction = 0, keepdim = True)
    getitem = var_mean[0]
    mul = torch.ops.aten.mul.Tensor(getitem, 2)
    getitem_1 = var_mean[1]
    add = torch.ops.aten.add.Tensor(mul, getitem_1)
    return (add,)
)"),
            "add = aten.add_.Tensor into mul\n");
}

TEST(Reinplace, APointwiseOpWritesAnyDyingArgumentThroughItsOutOverload) {
  // gelu_backward has no in-place variant; add's argument 0 is an input: both write the dying
  // argument through out=.
  EXPECT_EQ(plan_of(R"(
def forward(self, x: "f32[4, 4]", y: "f32[4, 4]"):
    mm = torch.ops.aten.mm.default(x, y)
    gelu_backward = torch.ops.aten.gelu_backward.default(mm, x)
    mm_1 = torch.ops.aten.mm.default(x, y)
    add = torch.ops.aten.add.Tensor(x, mm_1)
    return (gelu_backward, add)
)"),
            "gelu_backward = aten.gelu_backward.default out= mm\n"
            "add = aten.add.Tensor out= mm_1\n");
}

TEST(Reinplace, SoftmaxBackwardsWriteOverTheirDyingGradientOnly) {
  // _softmax_backward_data writes over grad_output (argument 0) when it dies there; never over the
  // saved output (argument 1), which the kernel reads after the row's reduction.
  EXPECT_EQ(plan_of(R"(
def forward(self, x: "f32[4, 4]", y: "f32[4, 4]"):
    mm = torch.ops.aten.mm.default(x, y)
    _softmax = torch.ops.aten._softmax.default(mm, -1, False)
    mm_1 = torch.ops.aten.mm.default(x, y)
    _softmax_backward_data = torch.ops.aten._softmax_backward_data.default(mm_1, _softmax, -1, torch.float32)
    mm_2 = torch.ops.aten.mm.default(x, y)
    _softmax_backward_data_1 = torch.ops.aten._softmax_backward_data.default(mm_2, _softmax, -1, torch.float32)
    return (_softmax_backward_data, _softmax_backward_data_1, mm_2)
)"),
            "_softmax_backward_data = aten._softmax_backward_data.default out= mm_1\n");
}

TEST(Reinplace, OpsWithoutAnEquivalentInPlaceVariantRunAsWritten) {
  // clone and mm have no in-place variant; bernoulli is random; t is a view.
  EXPECT_EQ(plan_of(R"(
def forward(self, x: "f32[4, 4]"):
    clone = torch.ops.aten.clone.default(x)
    t = torch.ops.aten.t.default(clone)
    mm = torch.ops.aten.mm.default(t, t)
    bernoulli = torch.ops.aten.bernoulli.p(mm, 0.5)
    return (bernoulli,)
)"),
            "");
}

// The step's predicted peak prices the plan: three pointwise ops on f32[256] (1024 bytes) after a
// fresh value hold one buffer instead of two.
TEST(Reinplace, TheTrainingStepTimelinePricesThePlan) {
  std::shared_ptr<Graph> fw = parse_text(R"(
def forward(self, x: "f32[256]"):
    sin = torch.ops.aten.sin.default(x)
    cos = torch.ops.aten.cos.default(sin)
    exp = torch.ops.aten.exp.default(cos)
    sum_1 = torch.ops.aten.sum.default(exp)
    return (sum_1,)
)");
  std::shared_ptr<Graph> bw = parse_text(R"(
def forward(self, tangents_1: "f32[]"):
    mul = torch.ops.aten.mul.Tensor(tangents_1, 2)
    return (mul,)
)");
  EXPECT_EQ(reinplace_text(*fw, reinplace_plan(*fw)),
            "cos = aten.cos_.default into sin\nexp = aten.exp_.default into cos\n");
  // Without: sin and cos (or cos and exp) live together, 2048 bytes. With: 1024, and sum_1's 4
  // bytes with it.
  EXPECT_EQ(training_step_timeline(*fw, *bw, {}, /*reinplace=*/false).peak_bytes, 2048);
  EXPECT_EQ(training_step_timeline(*fw, *bw, {}).peak_bytes, 1028);
}

}  // namespace
}  // namespace aotgrad
