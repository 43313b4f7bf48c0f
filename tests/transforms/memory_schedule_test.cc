// Tests for memory-aware scheduling: forward and backward graphs in, their order and the predicted
// peaks (training_step_timeline) out.
#include "aotgrad/transforms/partition/memory_schedule.h"

#include <gtest/gtest.h>

#include "../graph_text.h"
#include "aotgrad/ir/error.h"
#include "aotgrad/transforms/partition/memory_timeline.h"

namespace aotgrad {
namespace {

// x: f32[256] (1024 bytes). sin and cos are both live before either is reduced: the forward peaks
// at sum_1 with sin, cos and sum_1 (2052 bytes).
const char* kTwoBranches = R"(
def forward(self, x: "f32[256]"):
    sin = torch.ops.aten.sin.default(x)
    cos = torch.ops.aten.cos.default(x)
    sum_1 = torch.ops.aten.sum.default(sin)
    sum_2 = torch.ops.aten.sum.default(cos)
    add = torch.ops.aten.add.Tensor(sum_1, sum_2)
    return (add,)
)";

// A backward that takes only its tangent.
const char* kScalarBackward = R"(
def forward(self, tangents_1: "f32[]"):
    mul = torch.ops.aten.mul.Tensor(tangents_1, 2)
    return (mul,)
)";

TEST(MemorySchedule, ReducesEachBranchBeforeStartingTheNext) {
  std::shared_ptr<Graph> fw = parse_text(kTwoBranches);
  std::shared_ptr<Graph> bw = parse_text(kScalarBackward);
  MemorySchedule s = schedule_for_memory(*fw, *bw, {});
  verify(*fw);
  EXPECT_EQ(graph_text(*fw),
            "def forward(self, x):\n"
            "sin = torch.ops.aten.sin.default(x)\n"
            "sum_1 = torch.ops.aten.sum.default(sin)\n"
            "cos = torch.ops.aten.cos.default(x)\n"
            "sum_2 = torch.ops.aten.sum.default(cos)\n"
            "add = torch.ops.aten.add.Tensor(sum_1, sum_2)\n"
            "return (add,)\n");
  // Before: sin + cos + sum_1 at sum_1. After: cos + sum_1 + sum_2 at sum_2.
  EXPECT_EQ(s.forward_peak_before, 2052);
  EXPECT_EQ(s.forward_peak_after, 1032);
  EXPECT_EQ(s.forward_order, "greedy");
  EXPECT_EQ(s.backward_order, "original");
  EXPECT_EQ(s.peak_before, 2052);
  EXPECT_EQ(s.peak_after, 1032);
  EXPECT_EQ(training_step_timeline(*fw, *bw, {}).peak_bytes, 1032);
  EXPECT_EQ(schedule_text(s),
            "forward peak 2052 -> 1032 bytes (greedy), backward peak 12 -> 12 bytes (original), "
            "step peak 2052 -> 1032 bytes");
  // A second run finds nothing better.
  MemorySchedule again = schedule_for_memory(*fw, *bw, {});
  EXPECT_FALSE(again.changed());
  EXPECT_EQ(again.peak_after, 1032);
}

// The same branches with an in-place add_ on another input between the two calls and their
// reductions: nothing moves across it, so the order (and the peak) stay.
TEST(MemorySchedule, NothingMovesAcrossAnInPlaceOp) {
  const char* text = R"(
def forward(self, x: "f32[256]", buf: "f32[256]"):
    sin = torch.ops.aten.sin.default(x)
    cos = torch.ops.aten.cos.default(x)
    add_ = torch.ops.aten.add_.Tensor(buf, 1)
    sum_1 = torch.ops.aten.sum.default(sin)
    sum_2 = torch.ops.aten.sum.default(cos)
    add = torch.ops.aten.add.Tensor(sum_1, sum_2)
    return (add,)
)";
  std::shared_ptr<Graph> fw = parse_text(text);
  std::shared_ptr<Graph> bw = parse_text(kScalarBackward);
  std::string before = graph_text(*fw);
  MemorySchedule s = schedule_for_memory(*fw, *bw, {});
  EXPECT_FALSE(s.changed());
  EXPECT_EQ(graph_text(*fw), before);
  EXPECT_EQ(s.forward_peak_after, s.forward_peak_before);
  // Without the add_, the same branches reorder (the first test).
  std::shared_ptr<Graph> free = parse_text(kTwoBranches);
  EXPECT_TRUE(schedule_for_memory(*free, *bw, {}).changed());
}

// Random calls keep their order among themselves: the larger draw's reduction moves up, to free it
// sooner, but the second draw stays after the first.
TEST(MemorySchedule, RandomCallsKeepTheirOrder) {
  const char* text = R"(
def forward(self, x: "f32[256]", y: "f32[64]"):
    rand_like = torch.ops.aten.rand_like.default(x)
    rand_like_1 = torch.ops.aten.rand_like.default(y)
    sum_1 = torch.ops.aten.sum.default(rand_like_1)
    sum_2 = torch.ops.aten.sum.default(rand_like)
    add = torch.ops.aten.add.Tensor(sum_1, sum_2)
    return (add,)
)";
  std::shared_ptr<Graph> fw = parse_text(text);
  std::shared_ptr<Graph> bw = parse_text(kScalarBackward);
  MemorySchedule s = schedule_for_memory(*fw, *bw, {});
  EXPECT_EQ(graph_text(*fw),
            "def forward(self, x, y):\n"
            "rand_like = torch.ops.aten.rand_like.default(x)\n"
            "sum_2 = torch.ops.aten.sum.default(rand_like)\n"
            "rand_like_1 = torch.ops.aten.rand_like.default(y)\n"
            "sum_1 = torch.ops.aten.sum.default(rand_like_1)\n"
            "add = torch.ops.aten.add.Tensor(sum_1, sum_2)\n"
            "return (add,)\n");
  EXPECT_EQ(s.forward_peak_before, 1284);
  EXPECT_EQ(s.forward_peak_after, 1028);
}

// The backward: the saved sin and cos (1024 bytes each) are live from its start; the original
// order first computes a chain that needs neither (mul_1, mul_2), so both saved values, mul_1 and
// mul_2 are live at once. The schedule reads the saved values first and runs the chain after.
TEST(MemorySchedule, SavedValuesDieEarlyInTheBackward) {
  const char* fw_text = R"(
def forward(self, x: "f32[256]"):
    sin = torch.ops.aten.sin.default(x)
    cos = torch.ops.aten.cos.default(x)
    mul = torch.ops.aten.mul.Tensor(sin, cos)
    sum_1 = torch.ops.aten.sum.default(mul)
    return (sum_1, sin, cos)
)";
  const char* bw_text = R"(
def forward(self, sin: "f32[256]", cos: "f32[256]", tangents_1: "f32[]"):
    expand = torch.ops.aten.expand.default(tangents_1, [256])
    mul_1 = torch.ops.aten.mul.Tensor(expand, 2)
    mul_2 = torch.ops.aten.mul.Tensor(mul_1, 3)
    mul_3 = torch.ops.aten.mul.Tensor(expand, sin)
    mul_4 = torch.ops.aten.mul.Tensor(expand, cos)
    add = torch.ops.aten.add.Tensor(mul_3, mul_4)
    add_1 = torch.ops.aten.add.Tensor(add, mul_2)
    return [add_1]
)";
  std::shared_ptr<Graph> fw = parse_text(fw_text);
  std::shared_ptr<Graph> bw = parse_text(bw_text);
  std::string fw_before = graph_text(*fw);
  MemorySchedule s = schedule_for_memory(*fw, *bw, {"sin", "cos"});
  verify(*bw);
  EXPECT_EQ(graph_text(*fw), fw_before);
  EXPECT_EQ(graph_text(*bw),
            "def forward(self, sin, cos, tangents_1):\n"
            "expand = torch.ops.aten.expand.default(tangents_1, [256])\n"
            "mul_3 = torch.ops.aten.mul.Tensor(expand, sin)\n"
            "mul_4 = torch.ops.aten.mul.Tensor(expand, cos)\n"
            "add = torch.ops.aten.add.Tensor(mul_3, mul_4)\n"
            "mul_1 = torch.ops.aten.mul.Tensor(expand, 2)\n"
            "mul_2 = torch.ops.aten.mul.Tensor(mul_1, 3)\n"
            "add_1 = torch.ops.aten.add.Tensor(add, mul_2)\n"
            "return [add_1]\n");
  // Before: sin, cos, mul_1 and mul_2 at mul_2, with the forward's output and the tangent (4 bytes
  // each). After: three 1024-byte values at most.
  EXPECT_EQ(schedule_text(s),
            "forward peak 3076 -> 3076 bytes (original), backward peak 4104 -> 3080 bytes "
            "(greedy), step peak 4104 -> 3080 bytes");
}

// Three convolutions, the last with most of the weights on the smallest activation (a deep
// network's last layer): the backward makes that layer's weight gradient (589824 bytes) first,
// while the first layer's activation (relu, 262144 bytes) still lives for its own backward. With
// each weight gradient a call of its own (split_weight_gradients), the greedy order makes the big
// one last, once relu is gone; the small ones run where they free their inputs.
TEST(MemorySchedule, BigWeightGradientsRunAfterTheActivationsAreFreed) {
  const char* fw_text = R"(
def forward(self, x: "f32[2, 8, 64, 64]", w1: "f32[8, 8, 3, 3]", w2: "f32[64, 8, 8, 8]", w3: "f32[256, 64, 3, 3]"):
    convolution = torch.ops.aten.convolution.default(x, w1, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    relu = torch.ops.aten.relu.default(convolution)
    convolution_1 = torch.ops.aten.convolution.default(relu, w2, None, [8, 8], [0, 0], [1, 1], False, [0, 0], 1)
    relu_1 = torch.ops.aten.relu.default(convolution_1)
    convolution_2 = torch.ops.aten.convolution.default(relu_1, w3, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    return (convolution_2, relu, relu_1)
)";
  const char* bw_text = R"(
def forward(self, x: "f32[2, 8, 64, 64]", w1: "f32[8, 8, 3, 3]", w2: "f32[64, 8, 8, 8]", w3: "f32[256, 64, 3, 3]", relu: "f32[2, 8, 64, 64]", relu_1: "f32[2, 64, 8, 8]", tangents_1: "f32[2, 256, 8, 8]"):
    convolution_backward = torch.ops.aten.convolution_backward.default(tangents_1, relu_1, w3, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True, False])
    getitem = convolution_backward[0]
    getitem_1 = convolution_backward[1]
    threshold_backward = torch.ops.aten.threshold_backward.default(getitem, relu_1, 0)
    convolution_backward_1 = torch.ops.aten.convolution_backward.default(threshold_backward, relu, w2, None, [8, 8], [0, 0], [1, 1], False, [0, 0], 1, [True, True, False])
    getitem_2 = convolution_backward_1[0]
    getitem_3 = convolution_backward_1[1]
    threshold_backward_1 = torch.ops.aten.threshold_backward.default(getitem_2, relu, 0)
    convolution_backward_2 = torch.ops.aten.convolution_backward.default(threshold_backward_1, x, w1, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [False, True, False])
    getitem_4 = convolution_backward_2[1]
    return [None, getitem_4, getitem_3, getitem_1]
)";
  std::shared_ptr<Graph> fw = parse_text(fw_text);
  std::shared_ptr<Graph> bw = parse_text(bw_text);
  MemorySchedule s = schedule_for_memory(*fw, *bw, {"relu", "relu_1"});
  verify(*bw);
  EXPECT_EQ(s.backward_order, "split_greedy");
  EXPECT_EQ(s.split_calls, 2);
  EXPECT_EQ(graph_text(*bw),
            "def forward(self, x, w1, w2, w3, relu, relu_1, tangents_1):\n"
            "convolution_backward = torch.ops.aten.convolution_backward.default(tangents_1, "
            "relu_1, w3, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, False, False])\n"
            "getitem = convolution_backward[0]\n"
            "threshold_backward = torch.ops.aten.threshold_backward.default(getitem, relu_1, 0)\n"
            "convolution_backward_4 = torch.ops.aten.convolution_backward.default("
            "threshold_backward, relu, w2, None, [8, 8], [0, 0], [1, 1], False, [0, 0], 1, "
            "[False, True, False])\n"
            "getitem_3 = convolution_backward_4[1]\n"
            "convolution_backward_1 = torch.ops.aten.convolution_backward.default("
            "threshold_backward, relu, w2, None, [8, 8], [0, 0], [1, 1], False, [0, 0], 1, "
            "[True, False, False])\n"
            "getitem_2 = convolution_backward_1[0]\n"
            "threshold_backward_1 = torch.ops.aten.threshold_backward.default(getitem_2, relu, "
            "0)\n"
            "convolution_backward_2 = torch.ops.aten.convolution_backward.default("
            "threshold_backward_1, x, w1, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, "
            "[False, True, False])\n"
            "getitem_4 = convolution_backward_2[1]\n"
            "convolution_backward_3 = torch.ops.aten.convolution_backward.default(tangents_1, "
            "relu_1, w3, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [False, True, False])\n"
            "getitem_1 = convolution_backward_3[1]\n"
            "return [None, getitem_4, getitem_3, getitem_1]\n");
  // Unsplit, the peak is w3's gradient, its scratch and relu at the first call; split, w3's
  // gradient and its scratch with the other gradients at the last. The forward peaks at the last
  // convolution, whose oneDNN kernel holds w3 and its blocked input: 1048576 bytes, as `aotgrad
  // run` measures the forward alone.
  EXPECT_EQ(schedule_text(s),
            "forward peak 1048576 -> 1048576 bytes (original), backward peak 2918656 -> 2593280 "
            "bytes (split_greedy), step peak 2918656 -> 2593280 bytes, 2 weight gradients split");
  EXPECT_EQ(training_step_timeline(*fw, *bw, {"relu", "relu_1"}).peak_bytes, s.peak_after);
}

TEST(MemorySchedule, SavedValueMissingFromTheForwardIsAnError) {
  std::shared_ptr<Graph> fw = parse_text(kTwoBranches);
  std::shared_ptr<Graph> bw = parse_text(kScalarBackward);
  EXPECT_THROW(schedule_for_memory(*fw, *bw, {"tangents_1"}), Error);
}

TEST(MemorySchedule, KindNames) {
  EXPECT_EQ(parse_schedule_kind("memory"), ScheduleKind::kMemory);
  EXPECT_EQ(parse_schedule_kind("none"), ScheduleKind::kNone);
  EXPECT_STREQ(schedule_kind_name(ScheduleKind::kMemory), "memory");
  try {
    parse_schedule_kind("fast");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("unknown schedule 'fast' (known: memory, none)"), std::string::npos);
  }
}

}  // namespace
}  // namespace aotgrad
