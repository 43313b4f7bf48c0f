// aotgrad: the joint graph as partitioned, in Graphviz.
#include "aotgrad/report/partition_dot.h"

#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "aotgrad/ir/error.h"

namespace aotgrad {
namespace {

const char* fill_colour(JointRole r) {
  switch (r) {
    case JointRole::kInput: return "#a6cee3";       // light blue
    case JointRole::kTangent: return "#fdbf6f";     // orange
    case JointRole::kForward: return "#b2df8a";     // green
    case JointRole::kSaved: return "#ffff66";       // yellow
    case JointRole::kRecomputed: return "#cab2d6";  // purple
    case JointRole::kBackward: return "#fb9a99";    // pink
    case JointRole::kUnused: return "#dddddd";      // grey
    case JointRole::kOutput: return "#ffffff";
  }
  return "#ffffff";
}

// A double-quoted DOT string: quotes and backslashes escaped, "\n" kept as DOT's line break.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::unordered_set<std::string> computed_names(const Graph& g) {
  std::unordered_set<std::string> out;
  for (const Node* n : g.nodes())
    if (n->kind() == NodeKind::Call || n->kind() == NodeKind::GetItem) out.insert(n->name());
  return out;
}

void for_each_node_in(const Arg& a, const std::function<void(const Node*)>& f) {
  if (a.is_node()) f(a.node);
  for (const Arg& e : a.list) for_each_node_in(e, f);
}

void for_each_node_arg(const Node* n, const std::function<void(const Node*)>& f) {
  for (const Arg& a : n->args()) for_each_node_in(a, f);
}

}  // namespace

const char* joint_role_name(JointRole role) {
  switch (role) {
    case JointRole::kInput: return "input";
    case JointRole::kTangent: return "tangent";
    case JointRole::kForward: return "forward";
    case JointRole::kSaved: return "saved";
    case JointRole::kRecomputed: return "recomputed";
    case JointRole::kBackward: return "backward";
    case JointRole::kUnused: return "unused";
    case JointRole::kOutput: return "output";
  }
  return "?";
}

std::vector<JointRole> joint_roles(const Graph& joint, const Graph& fw, const Graph& bw,
                                   const std::vector<std::string>& saved) {
  std::unordered_set<std::string> in_fw = computed_names(fw), in_bw = computed_names(bw);
  std::unordered_set<std::string> saved_set(saved.begin(), saved.end());
  for (const std::string& s : saved)
    AOTGRAD_CHECK(joint.find(s), "joint graph picture: saved value '", s,
                  "' is not a node of the joint graph");
  std::vector<JointRole> roles;
  for (const Node* n : joint.nodes()) {
    if (n->kind() == NodeKind::Placeholder) {
      bool tangent = n->name().rfind("tangents", 0) == 0;
      roles.push_back(tangent ? JointRole::kTangent : JointRole::kInput);
      continue;
    }
    if (n->kind() == NodeKind::Output) {
      roles.push_back(JointRole::kOutput);
      continue;
    }
    const std::string& name = n->name();
    JointRole r = JointRole::kUnused;
    if (saved_set.count(name))
      r = JointRole::kSaved;
    else if (in_bw.count(name))
      r = in_fw.count(name) ? JointRole::kRecomputed : JointRole::kBackward;
    else if (in_fw.count(name))
      r = JointRole::kForward;
    roles.push_back(r);
  }
  return roles;
}

std::string joint_graph_dot(const Graph& joint, const Graph& fw, const Graph& bw,
                            const std::vector<std::string>& saved) {
  std::vector<JointRole> roles = joint_roles(joint, fw, bw, saved);
  std::unordered_set<std::string> saved_set(saved.begin(), saved.end());
  std::unordered_map<const Node*, size_t> id;
  std::string out =
      "digraph joint {\n"
      "  rankdir=TB;\n"
      "  node [shape=box, style=\"filled,rounded\", fontname=\"Helvetica\", fontsize=10];\n"
      "  edge [color=\"#555555\"];\n";
  size_t i = 0;
  for (const Node* n : joint.nodes()) {
    id[n] = i;
    JointRole r = roles[i];
    std::string label = n->name();
    if (n->kind() == NodeKind::Call) label += "\n" + n->op()->name;
    if (n->kind() == NodeKind::GetItem) label += "\ngetitem " + std::to_string(n->getitem_index());
    if (n->kind() != NodeKind::Output) label += "\n" + n->meta().annotation();
    out += "  n" + std::to_string(i) + " [label=" + quoted(label) + ", fillcolor=\"" +
           fill_colour(r) + "\", tooltip=\"" + joint_role_name(r) + "\"";
    if (r == JointRole::kInput && saved_set.count(n->name()))
      out += ", color=\"#e31a1c\", penwidth=3";
    if (r == JointRole::kOutput) out += ", shape=ellipse";
    out += "];\n";
    ++i;
  }
  for (const Node* n : joint.nodes()) {
    std::unordered_set<const Node*> seen;
    for_each_node_arg(n, [&](const Node* a) {
      if (seen.insert(a).second)
        out += "  n" + std::to_string(id.at(a)) + " -> n" + std::to_string(id.at(n)) + ";\n";
    });
  }
  out += "  subgraph cluster_legend {\n    label=\"legend\";\n    fontname=\"Helvetica\";\n";
  const JointRole legend[] = {JointRole::kInput, JointRole::kTangent,    JointRole::kForward,
                              JointRole::kSaved, JointRole::kRecomputed, JointRole::kBackward,
                              JointRole::kUnused};
  std::string prev;
  for (JointRole r : legend) {
    std::string lid = std::string("legend_") + joint_role_name(r);
    out += "    " + lid + " [label=\"" + joint_role_name(r) + "\", fillcolor=\"" + fill_colour(r) +
           "\"];\n";
    if (!prev.empty()) out += "    " + prev + " -> " + lid + " [style=invis];\n";
    prev = lid;
  }
  out += "    legend_saved_input [label=\"saved input\", fillcolor=\"" +
         std::string(fill_colour(JointRole::kInput)) + "\", color=\"#e31a1c\", penwidth=3];\n";
  out += "    " + prev + " -> legend_saved_input [style=invis];\n  }\n}\n";
  return out;
}

}  // namespace aotgrad
