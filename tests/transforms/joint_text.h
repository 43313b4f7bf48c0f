// Test helper for derivative-rule tests: a joint graph as compact text to compare with the
// ATen graphs PyTorch's AOTAutograd traces.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "aotgrad/ir/graph.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/registry.h"
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

/// The joint graph of forward graph `text`, differentiated w.r.t. the inputs in `rg` (empty: every
/// floating-point tensor input).
inline JointGraph joint_graph(const std::string& text, std::vector<bool> rg = {}) {
  auto fw = parse_graph(text, aten_ops());
  if (rg.empty())
    for (const Node* p : fw->placeholders())
      rg.push_back(p->meta().is_tensor() && is_floating(p->tensor_meta().dtype));
  return build_joint(*fw, rg);
}

}  // namespace aotgrad
