// Tests for the activation timeline's SVG plot: its structure, the curves and their peaks, and the
// plot of a partition against default_partition.
#include "aotgrad/report/timeline_svg.h"

#include <gtest/gtest.h>

#include "../graph_text.h"
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

size_t count(const std::string& svg, const std::string& what) {
  size_t n = 0;
  for (size_t at = svg.find(what); at != std::string::npos; at = svg.find(what, at + 1)) ++n;
  return n;
}

size_t polylines(const std::string& svg) { return count(svg, "<polyline"); }

TEST(TimelineSvg, HasTwoCurvesWithTheirPeaks) {
  JointGraph j = joint_graph(kSinCos);
  Partition d = default_partition(j);
  Partition m = min_cut_partition(j);
  std::string svg =
      timeline_svg({{"min_cut", activation_timeline(*m.fw, *m.bw, m.saved)},
                    {"default_partition", activation_timeline(*d.fw, *d.bw, d.saved)}},
                   "a <title>");
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(svg.find("a &lt;title&gt;"), std::string::npos);
  EXPECT_EQ(polylines(svg), 2u);
  EXPECT_NE(svg.find("default_partition: peak 48 B (48 bytes)"), std::string::npos);
  EXPECT_NE(svg.find("live bytes"), std::string::npos);
  // Each peak is named with its node and marked with a dot.
  EXPECT_NE(svg.find("default_partition: peak 48 B (48 bytes) at mul_1 (backward)"),
            std::string::npos);
  EXPECT_EQ(count(svg, "<circle class=\"peak\""), 2u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
}

TEST(TimelineSvg, PartitionAgainstTheDefaultPartition) {
  JointGraph j = joint_graph(kSinCos);
  Partition m = min_cut_partition(j);
  std::string svg = partition_timeline_svg(*j.graph, j, *m.fw, *m.bw, m.saved, "min_cut");
  EXPECT_EQ(polylines(svg), 2u);
  EXPECT_NE(svg.find("min_cut (chosen)"), std::string::npos);
  // The training step's bytes (training_step_timeline, re-inplaced as the interpreter runs the
  // graphs): the output and the tangent count too.
  EXPECT_NE(svg.find("default_partition: peak 64 B (64 bytes) at sin_1 (backward)"),
            std::string::npos);
  EXPECT_NE(svg.find("training step's live bytes: min_cut vs default_partition"),
            std::string::npos);
}

}  // namespace
}  // namespace aotgrad
