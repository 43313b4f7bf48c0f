// Test helper for derivative-rule tests: a joint graph as compact text to compare with the
// ATen graphs PyTorch's AOTAutograd traces. This is a private dialect the parser cannot read back
// (issue 19, item 5: to be replaced by graph_text.h's printer-based text); joint_graph() is in
// ../graph_text.h.
#pragma once

#include <string>

#include "../graph_text.h"
#include "aotgrad/ir/graph.h"
#include "aotgrad/transforms/autograd.h"

namespace aotgrad {

/// The graph's calls as `name = op(args)` lines (keyword-only arguments as `name=value`, defaults
/// left out), getitems as `name = tuple[i]`, then `return [...]` without a trailing newline.
inline std::string joint_body(const Graph& g) {
  std::string out;
  for (const Node* n : g.nodes()) {
    if (n->kind() == NodeKind::GetItem) {
      out += n->name() + " = " + n->getitem_input()->name() + "[" +
             std::to_string(n->getitem_index()) + "]\n";
      continue;
    }
    if (n->kind() != NodeKind::Call) continue;
    out += n->name() + " = " + n->op()->short_name + "(";
    bool first = true;
    for (size_t i = 0; i < n->args().size(); ++i) {
      if (!n->arg_given(i)) continue;
      out += first ? "" : ", ";
      first = false;
      const SchemaArg& sa = n->op()->schema.args[i];
      if (sa.kwarg_only) out += sa.name + "=";
      out += arg_to_string(n->args()[i]);
    }
    out += ")\n";
  }
  return out + "return " + arg_to_string(g.output()->args()[0]);
}

}  // namespace aotgrad
