// aotgrad: prints a Graph as the readable GraphModule code PyTorch 2.x prints.
#pragma once

#include <string>

#include "aotgrad/ir/graph.h"

namespace aotgrad {

struct PrintOptions {
  bool class_header = true;  // "class GraphModule(torch.nn.Module):"
  std::string class_name = "GraphModule";
  bool annotations = true;  // `x: "f32[4][1]cpu"`
  // With annotations off, still annotate the placeholders: the text then parses back (the
  // parser infers every other node's metadata).
  bool placeholder_annotations = false;
  bool release_statements = true;  // ";  a = b = None" at each value's last use, as FX emits
};

/// The canonical text of `g`. Subgraph arguments (cond's branches) print as PyTorch prints
/// GraphModule attributes: `true_graph_0 = self.true_graph_0` before their first use, and after
/// the forward one nested `class true_graph_0(torch.nn.Module):` block per subgraph, in order of
/// first use, indented one level (with their own nested blocks inside them).
/// parse_graph(print_graph(g)) is the same graph and prints the same.
std::string print_graph(const Graph& g, const PrintOptions& options = {});

/// Writes "TRACED GRAPH\n ===== <title> =====\n" and the graph's text form to the log
/// (support/logging.h), as PyTorch's aot_graphs log prints a GraphModule.
void log_graph(const std::string& title, const Graph& g);

}  // namespace aotgrad
