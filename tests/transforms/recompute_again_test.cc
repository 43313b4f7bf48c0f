// Tests for computing a backward value again after the step's peak: forward and backward graphs
// in, the rewritten backward and the predicted peaks out.
#include "aotgrad/transforms/partition/recompute_again.h"

#include <gtest/gtest.h>

#include "../graph_text.h"
#include "aotgrad/ir/error.h"
#include "aotgrad/transforms/partition/memory_timeline.h"

namespace aotgrad {
namespace {

// The forward saves only its input x (f32[256], 1024 bytes; an input, no activation).
const char* kForward = R"(
def forward(self, x: "f32[256]"):
    sum_1 = torch.ops.aten.sum.default(x)
    return (sum_1, x)
)";

// The backward recomputes h = 2x (or `make_h`), reads it -- directly or through `views` of it --
// for g = sin(...) before the peak (the 4096-byte cat of g, which does not read h) and for
// cos(...) after it: h is live at the peak beside g and the cat.
struct Backward {
  std::string make_h = "torch.ops.aten.mul.Tensor(x, 2)";
  std::string views;  // lines defining views of h
  std::string sin_reads = "h", cos_reads = "h";
  std::string cat_args = "[g, g, g, g]";

  std::unique_ptr<Graph> parse() const {
    return parse_text(R"(
def forward(self, x: "f32[256]", tangents_1: "f32[]"):
    h = )" + make_h + "\n" +
                      views + "    g = torch.ops.aten.sin.default(" + sin_reads + R"()
    big = torch.ops.aten.cat.default()" +
                      cat_args + R"()
    sum_2 = torch.ops.aten.sum.default(big)
    s = torch.ops.aten.mul.Tensor(sum_2, tangents_1)
    c = torch.ops.aten.cos.default()" +
                      cos_reads + R"()
    gb = torch.ops.aten.mul.Tensor(c, s)
    return (gb,)
)")
        ->clone();
  }
};

RecomputeAgainOptions unscheduled() {
  RecomputeAgainOptions o;
  o.scheduled = false;
  return o;
}

TEST(RecomputeAgain, CopiesTheValueForItsUseAfterThePeak) {
  std::shared_ptr<Graph> fw = parse_text(kForward);
  std::unique_ptr<Graph> bw = Backward{}.parse();
  RecomputeAgain r = recompute_again(*fw, bw, {"x"}, unscheduled());
  verify(*bw);
  EXPECT_EQ(graph_text(*bw),
            "def forward(self, x, tangents_1):\n"
            "h = torch.ops.aten.mul.Tensor(x, 2)\n"
            "g = torch.ops.aten.sin.default(h)\n"
            "big = torch.ops.aten.cat.default([g, g, g, g])\n"
            "sum_2 = torch.ops.aten.sum.default(big)\n"
            "s = torch.ops.aten.mul.Tensor(sum_2, tangents_1)\n"
            "h_again = torch.ops.aten.mul.Tensor(x, 2)\n"
            "c = torch.ops.aten.cos.default(h_again)\n"
            "gb = torch.ops.aten.mul.Tensor(c, s)\n"
            "return (gb,)\n");
  // Before: h, g and big at the cat (6144 bytes), the tangent and the forward's loss (4 + 4).
  // After: sin writes g into h's storage (h dies there), so the cat's step holds 1024 + 4096 + 8.
  EXPECT_EQ(r.peak_before, 6152);
  EXPECT_EQ(r.peak_after, 5128);
  ASSERT_EQ(r.rounds.size(), 1u);
  EXPECT_EQ(r.rounds[0].value, "h");
  EXPECT_EQ(r.rounds[0].copies, (std::vector<std::string>{"h_again"}));
  EXPECT_EQ(r.rounds[0].uses, (std::vector<std::string>{"c"}));
  EXPECT_EQ(r.rounds[0].peak_bytes, 5128);
  EXPECT_GT(r.rounds[0].extra_cost, 0);
  EXPECT_EQ(training_step_timeline(*fw, *bw, {"x"}).peak_bytes, 5128);
  EXPECT_EQ(recompute_again_text(r), "h again as h_again for c (peak 5128 bytes)\n");
}

// Views of the value that later uses read are copied with it.
TEST(RecomputeAgain, CopiesTheViewsTheLaterUsesRead) {
  std::shared_ptr<Graph> fw = parse_text(kForward);
  std::unique_ptr<Graph> bw =
      Backward{.views = "    v = torch.ops.aten.view.default(h, [16, 16])\n",
               .sin_reads = "v",
               .cos_reads = "v"}
          .parse();
  RecomputeAgain r = recompute_again(*fw, bw, {"x"}, unscheduled());
  verify(*bw);
  ASSERT_EQ(r.rounds.size(), 1u);
  EXPECT_EQ(r.rounds[0].copies, (std::vector<std::string>{"h_again", "v_again"}));
  EXPECT_NE(graph_text(*bw).find("v_again = torch.ops.aten.view.default(h_again, [16, 16])\n"
                                 "c = torch.ops.aten.cos.default(v_again)\n"),
            std::string::npos)
      << graph_text(*bw);
  EXPECT_LT(r.peak_after, r.peak_before);
}

// A view that returns several values (split) is copied with the value, its getitem after it.
TEST(RecomputeAgain, CopiesASplitOfTheValue) {
  std::shared_ptr<Graph> fw = parse_text(kForward);
  std::unique_ptr<Graph> bw = Backward{.views =
                                           "    split = torch.ops.aten.split.Tensor(h, 128)\n"
                                           "    getitem = split[0]\n"
                                           "    getitem_1 = split[1]\n",
                                       .sin_reads = "getitem",
                                       .cos_reads = "getitem_1",
                                       .cat_args = "[g, g, g, g, g, g, g, g]"}
                                  .parse();
  RecomputeAgain r = recompute_again(*fw, bw, {"x"}, unscheduled());
  verify(*bw);
  ASSERT_EQ(r.rounds.size(), 1u);
  EXPECT_EQ(r.rounds[0].copies,
            (std::vector<std::string>{"h_again", "split_again", "getitem_1_again"}));
  EXPECT_NE(graph_text(*bw).find("h_again = torch.ops.aten.mul.Tensor(x, 2)\n"
                                 "split_again = torch.ops.aten.split.Tensor(h_again, 128)\n"
                                 "getitem_1_again = split_again[1]\n"
                                 "c = torch.ops.aten.cos.default(getitem_1_again)\n"),
            std::string::npos)
      << graph_text(*bw);
  EXPECT_LT(r.peak_after, r.peak_before);
}

// A random value is never copied (a copy would draw other numbers), nor one the peak's own call
// reads.
TEST(RecomputeAgain, LeavesRandomValuesAndValuesThePeakReads) {
  std::shared_ptr<Graph> fw = parse_text(kForward);
  for (auto [make_h, cat_args] :
       {std::pair<std::string, std::string>{"torch.ops.aten.rand_like.default(x)", "[g, g, g, g]"},
        {"torch.ops.aten.mul.Tensor(x, 2)", "[g, g, g, h]"}}) {
    SCOPED_TRACE(make_h + " " + cat_args);
    std::unique_ptr<Graph> bw = Backward{.make_h = make_h, .cat_args = cat_args}.parse();
    std::string before = graph_text(*bw);
    RecomputeAgain r = recompute_again(*fw, bw, {"x"}, unscheduled());
    EXPECT_TRUE(r.rounds.empty());
    EXPECT_EQ(r.peak_after, r.peak_before);
    EXPECT_EQ(graph_text(*bw), before);
  }
}

// Nothing to gain when the forward makes the step's peak.
TEST(RecomputeAgain, StopsWhenThePeakIsTheForwards) {
  const char* forward = R"(
def forward(self, x: "f32[256]"):
    big = torch.ops.aten.cat.default([x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x])
    sum_1 = torch.ops.aten.sum.default(big)
    return (sum_1, x)
)";
  std::shared_ptr<Graph> fw = parse_text(forward);
  std::unique_ptr<Graph> bw = Backward{}.parse();
  RecomputeAgain r = recompute_again(*fw, bw, {"x"}, unscheduled());
  EXPECT_TRUE(r.rounds.empty());
  EXPECT_EQ(r.peak_before, 16384 + 4);  // the cat and the loss
}

// Ordered by the memory schedule first (as the pipeline will run it), the copy still lowers the
// peak, and the graph the schedule then makes of it keeps that peak.
TEST(RecomputeAgain, PricesEachCopyAfterTheSchedule) {
  std::shared_ptr<Graph> fw = parse_text(kForward);
  std::unique_ptr<Graph> bw = Backward{}.parse();
  RecomputeAgain r = recompute_again(*fw, bw, {"x"}, RecomputeAgainOptions{});
  verify(*bw);
  ASSERT_EQ(r.rounds.size(), 1u);
  EXPECT_LT(r.peak_after, r.peak_before);
  EXPECT_EQ(training_step_timeline(*fw, *bw, {"x"}).peak_bytes, r.peak_after);
}

}  // namespace
}  // namespace aotgrad
