// Tests for the activation timeline: a small joint graph partitioned in, live bytes per step out.
#include "aotgrad/transforms/partition/memory_timeline.h"

#include <gtest/gtest.h>

#include "../graph_text.h"
#include "aotgrad/ir/error.h"
#include "aotgrad/transforms/partition/min_cut.h"
#include "aotgrad/transforms/partition/partition.h"

namespace aotgrad {
namespace {

// x: f32[4] (16 bytes); sin and cos are fresh f32[4] values, v a view of sin.
const char* kSinCos = R"(
def forward(self, x: "f32[4]"):
    sin = torch.ops.aten.sin.default(x)
    v = torch.ops.aten.view.default(sin, [2, 2])
    cos = torch.ops.aten.cos.default(v)
    return (cos,)
)";

std::string steps_text(const MemoryTimeline& t) {
  std::string out;
  for (const TimelineStep& s : t.steps)
    out += (s.backward ? "bw " : "fw ") + s.node + " " + std::to_string(s.live_bytes) + "\n";
  return out;
}

// default_partition saves primals_1 and v (a view of sin): sin's storage stays live until the
// backward's sin_1 reads v; cos (an output, not saved) counts at its own step; bw's view shares
// mul's storage, which lives until mul_1 reads the view; tangents count nothing.
TEST(MemoryTimeline, DefaultPartitionKeepsSavedValuesIntoTheBackward) {
  JointGraph j = joint_graph(kSinCos);
  Partition p = default_partition(j);
  ASSERT_EQ(p.saved, (std::vector<std::string>{"primals_1", "v"}));
  MemoryTimeline t = activation_timeline(*p.fw, *p.bw, p.saved);
  EXPECT_EQ(steps_text(t),
            "fw sin 16\n"
            "fw v 16\n"
            "fw cos 32\n"
            "bw sin_1 32\n"
            "bw neg 32\n"
            "bw mul 32\n"
            "bw view 16\n"
            "bw cos_1 32\n"
            "bw mul_1 48\n");
  EXPECT_EQ(t.num_forward_steps, 3u);
  EXPECT_EQ(t.peak_bytes, 48);
}

// min_cut saves only primals_1: sin's storage dies after cos in the forward and the backward
// recomputes sin and v before sin_1.
TEST(MemoryTimeline, MinCutRecomputesAndSavesOnlyTheInput) {
  JointGraph j = joint_graph(kSinCos);
  Partition p = min_cut_partition(j);
  ASSERT_EQ(p.saved, (std::vector<std::string>{"primals_1"}));
  MemoryTimeline t = activation_timeline(*p.fw, *p.bw, p.saved);
  EXPECT_EQ(steps_text(t),
            "fw sin 16\n"
            "fw v 16\n"
            "fw cos 32\n"
            "bw sin 16\n"
            "bw v 16\n"
            "bw sin_1 32\n"
            "bw neg 32\n"
            "bw mul 32\n"
            "bw view 16\n"
            "bw cos_1 32\n"
            "bw mul_1 48\n");
  EXPECT_EQ(t.num_forward_steps, 3u);
}

// The training step adds what the runtime holds: the forward's output cos to the end of the step,
// the tangent (16 bytes) from the first backward step, the gradient mul_1 from its step on.
TEST(MemoryTimeline, TrainingStepHoldsOutputsTangentsAndGradients) {
  JointGraph j = joint_graph(kSinCos);
  Partition p = default_partition(j);
  MemoryTimeline t = training_step_timeline(*p.fw, *p.bw, p.saved, /*reinplace=*/false);
  EXPECT_EQ(steps_text(t),
            "fw sin 16\n"
            "fw v 16\n"
            "fw cos 32\n"
            "bw sin_1 64\n"
            "bw neg 64\n"
            "bw mul 64\n"
            "bw view 48\n"
            "bw cos_1 64\n"
            "bw mul_1 80\n");
  EXPECT_EQ(t.peak_bytes, 80);
  EXPECT_EQ(t.peak_step, 8u);
  EXPECT_EQ(peak_text(t), "80 bytes (0.00 MiB) at mul_1 (backward step 6 of 6)");
  // The activations alone peak lower, at the same step.
  MemoryTimeline a = activation_timeline(*p.fw, *p.bw, p.saved);
  EXPECT_EQ(a.peak_bytes, 48);
  EXPECT_EQ(a.peak_step, 8u);
  // As the interpreter runs it (re-inplaced): neg writes sin_1's buffer, mul writes neg's
  // (through out=, its argument 0 being the tangent) and mul_1 cos_1's, so the step peaks at 64
  // bytes, at sin_1.
  MemoryTimeline r = training_step_timeline(*p.fw, *p.bw, p.saved);
  EXPECT_EQ(steps_text(r),
            "fw sin 16\n"
            "fw v 16\n"
            "fw cos 32\n"
            "bw sin_1 64\n"
            "bw neg 48\n"
            "bw mul 48\n"
            "bw view 48\n"
            "bw cos_1 64\n"
            "bw mul_1 64\n");
  EXPECT_EQ(peak_text(r), "64 bytes (0.00 MiB) at sin_1 (backward step 1 of 6)");
}

// Two weights: the backward makes w2's gradient (mul = tangent * a, a's last use), then grad_a
// (mul_1) and from it w1's gradient (mul_2). The forward's output b and the tangent live to the
// end. Dropped between steps (the default), w2's gradient lives from its step to the end of the
// backward: 16 bytes more at mul_1 and mul_2; kept (gradients_kept), the runtime adds it into
// its .grad when it is made, so it counts only at its own step.
const char* kTwoWeights = R"(
def forward(self, x: "f32[4]", w1: "f32[4]", w2: "f32[4]"):
    a = torch.ops.aten.mul.Tensor(x, w1)
    b = torch.ops.aten.mul.Tensor(a, w2)
    return (b,)
)";

TEST(MemoryTimeline, KeptGradientsCountOnlyWhileTheBackwardMakesThem) {
  JointGraph j = joint_graph(kTwoWeights, {false, true, true});
  Partition p = default_partition(j);
  MemoryTimeline dropped = training_step_timeline(*p.fw, *p.bw, p.saved, /*reinplace=*/false);
  MemoryTimeline kept = training_step_timeline(*p.fw, *p.bw, p.saved, /*reinplace=*/false,
                                               /*gradients_kept=*/true);
  EXPECT_EQ(steps_text(dropped),
            "fw a 16\n"
            "fw b 32\n"
            "bw mul 64\n"
            "bw mul_1 64\n"
            "bw mul_2 80\n");
  EXPECT_EQ(steps_text(kept),
            "fw a 16\n"
            "fw b 32\n"
            "bw mul 64\n"
            "bw mul_1 48\n"
            "bw mul_2 64\n");
  EXPECT_EQ(dropped.peak_bytes, 80);
  EXPECT_EQ(kept.peak_bytes, 64);
  // What is live at each peak, largest first (ties by name), summing to it; only the report
  // names it.
  EXPECT_TRUE(dropped.peak_live.empty());
  MemoryTimeline dropped_report =
      training_step_peak_report(*p.fw, *p.bw, p.saved, /*reinplace=*/false);
  MemoryTimeline kept_report =
      training_step_peak_report(*p.fw, *p.bw, p.saved,
                                /*reinplace=*/false, /*gradients_kept=*/true);
  EXPECT_EQ(steps_text(dropped_report), steps_text(dropped));
  EXPECT_EQ(peak_live_text(dropped_report), "b 16, mul 16, mul_1 16, mul_2 16, tangents 16");
  EXPECT_EQ(peak_live_text(kept_report), "a 16, b 16, mul 16, tangents 16");
  EXPECT_EQ(peak_live_text(dropped_report, 2), "b 16, mul 16 and 3 more (48)");
}

TEST(MemoryTimeline, SavedValueMissingFromTheForwardIsAnError) {
  JointGraph j = joint_graph(kSinCos);
  Partition p = default_partition(j);
  // tangents_1 is a placeholder of bw but no value of fw.
  std::vector<std::string> saved = {"v", "tangents_1"};
  EXPECT_THROW(activation_timeline(*p.fw, *p.bw, saved), Error);
}

}  // namespace
}  // namespace aotgrad
