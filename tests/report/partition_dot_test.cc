// Tests for the joint graph picture: roles of the nodes of a partitioned joint graph, and the DOT
// text (colours, legend, edges).
#include "aotgrad/report/partition_dot.h"

#include <gtest/gtest.h>

#include "../graph_text.h"
#include "aotgrad/ir/error.h"
#include "aotgrad/transforms/partition/min_cut.h"
#include "aotgrad/transforms/partition/partition.h"

namespace aotgrad {
namespace {

const char* kSinCos = R"(
def forward(self, x: "f32[4]"):
    sin = torch.ops.aten.sin.default(x)
    v = torch.ops.aten.view.default(sin, [2, 2])
    cos = torch.ops.aten.cos.default(v)
    return (cos,)
)";

std::string roles_text(const Graph& joint, const std::vector<JointRole>& roles) {
  std::string out;
  size_t i = 0;
  for (const Node* n : joint.nodes()) out += n->name() + ":" + joint_role_name(roles[i++]) + " ";
  return out;
}

TEST(PartitionDot, DefaultPartitionRoles) {
  JointGraph j = joint_graph(kSinCos);
  Partition p = default_partition(j);
  EXPECT_EQ(roles_text(*j.graph, joint_roles(*j.graph, *p.fw, *p.bw, p.saved)),
            "primals_1:input tangents_1:tangent sin:forward v:saved cos:forward sin_1:backward "
            "neg:backward mul:backward view:backward cos_1:backward mul_1:backward "
            "output:output ");
}

// min_cut saves primals_1 only: sin and v are computed in both graphs (recomputed).
TEST(PartitionDot, MinCutRoles) {
  JointGraph j = joint_graph(kSinCos);
  Partition p = min_cut_partition(j);
  EXPECT_EQ(roles_text(*j.graph, joint_roles(*j.graph, *p.fw, *p.bw, p.saved)),
            "primals_1:input tangents_1:tangent sin:recomputed v:recomputed cos:forward "
            "sin_1:backward neg:backward mul:backward view:backward cos_1:backward "
            "mul_1:backward output:output ");
}

TEST(PartitionDot, DotHasColoursLegendAndEdges) {
  JointGraph j = joint_graph(kSinCos);
  Partition p = default_partition(j);
  std::string dot = joint_graph_dot(*j.graph, *p.fw, *p.bw, p.saved);
  EXPECT_EQ(dot.rfind("digraph joint {", 0), 0u);
  // v: saved (yellow), labelled name, op and annotation.
  EXPECT_NE(dot.find("[label=\"v\\naten::view\\nf32[2, 2][2, 1]cpu\", fillcolor=\"#ffff66\""),
            std::string::npos)
      << dot;
  // primals_1 is saved too: input colour with a red border.
  EXPECT_NE(dot.find("fillcolor=\"#a6cee3\", tooltip=\"input\", color=\"#e31a1c\", penwidth=3"),
            std::string::npos);
  for (const char* role :
       {"input", "tangent", "forward", "saved", "recomputed", "backward", "unused"})
    EXPECT_NE(dot.find(std::string("legend_") + role + " [label=\"" + role + "\""),
              std::string::npos)
        << role;
  EXPECT_NE(dot.find("n2 -> n3;"), std::string::npos);  // sin -> v
  EXPECT_EQ(dot.substr(dot.size() - 2), "}\n");
}

TEST(PartitionDot, UnknownSavedValueIsAnError) {
  JointGraph j = joint_graph(kSinCos);
  Partition p = default_partition(j);
  EXPECT_THROW(joint_graph_dot(*j.graph, *p.fw, *p.bw, {"nope"}), Error);
}

}  // namespace
}  // namespace aotgrad
