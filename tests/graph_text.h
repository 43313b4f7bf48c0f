// The tests' one graph-text helper: graphs in and out as the text form, through the real parser and
// printer (no private dialect). Pass tests proper are tests/passes/*.fx, run through `aotgrad opt`.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "aotgrad/driver/pass_registry.h"
#include "aotgrad/ir/graph.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/transforms/autograd.h"

namespace aotgrad {

/// Lines of graph text without indentation, blank lines and comments: expected graphs are written
/// as raw strings in the printer's form and compared after this.
inline std::string normalized(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) {
    size_t a = line.find_first_not_of(' ');
    if (a == std::string::npos || line[a] == '#') continue;
    out += line.substr(a) + "\n";
  }
  return out;
}

/// The graph as print_graph prints it without the class header and annotations (and without
/// release statements unless asked), normalized.
inline std::string graph_text(const Graph& g, bool release_statements = false) {
  PrintOptions p;
  p.class_header = false;
  p.annotations = false;
  p.release_statements = release_statements;
  return normalized(print_graph(g, p));
}

/// A joint graph's text as print_graph writes it with annotations on the placeholders only (so it
/// parses back, which every call checks), without class header and release statements, normalized.
inline std::string joint_text(const Graph& g) {
  PrintOptions p;
  p.class_header = false;
  p.annotations = false;
  p.placeholder_annotations = true;
  p.release_statements = false;
  std::string text = print_graph(g, p);
  EXPECT_EQ(print_graph(*parse_graph(text, aten_ops()), p), text) << "does not parse back";
  return normalized(text);
}

/// joint_text's body, what the derivative-rule tests compare with the ATen graphs PyTorch's
/// AOTAutograd traces: the lines after the placeholders' `fx_pytree.tree_flatten_spec` line, the
/// last (`return pytree.tree_unflatten([...], self._out_spec)`) without its newline.
inline std::string joint_body(const Graph& g) {
  std::string text = joint_text(g);
  size_t flatten = text.find("= fx_pytree.tree_flatten_spec(");
  size_t start = text.find('\n', flatten == std::string::npos ? 0 : flatten) + 1;
  return text.substr(start, text.size() - 1 - start);
}

/// A text file's contents (a failed expectation when it cannot be read).
inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Parses graph text against the registry's ops and verifies it.
inline std::shared_ptr<Graph> parse_text(const std::string& text) {
  std::shared_ptr<Graph> g = parse_graph(text, aten_ops());
  verify(*g);
  return g;
}

/// Result of one pass on one graph.
struct PassRun {
  std::string text;  // graph_text after the pass
  bool changed = false;
  int64_t changes = 0;
};

/// Parses and verifies `text`, runs the pass named `spec` (as `aotgrad opt --passes=` names it),
/// verifies the result; a pass that says it changed nothing must have left the text as it was.
inline PassRun run_pass(const std::string& spec, const std::string& text) {
  std::shared_ptr<Graph> g = parse_text(text);
  std::string before = graph_text(*g);
  std::unique_ptr<Pass> pass = make_pass(spec);
  PassRun r;
  r.changed = pass->run(*g);
  r.changes = pass->changes();
  verify(*g);
  r.text = graph_text(*g);
  if (!r.changed) EXPECT_EQ(r.text, before) << spec << " said it changed nothing";
  return r;
}

/// The joint graph of forward graph `text`, differentiated w.r.t. the inputs in `rg` (empty: every
/// floating-point tensor input).
inline JointGraph joint_graph(const std::string& text, std::vector<bool> rg = {}) {
  std::shared_ptr<Graph> fw = parse_text(text);
  if (rg.empty())
    for (const Node* p : fw->placeholders())
      rg.push_back(p->meta().is_tensor() && is_floating(p->tensor_meta().dtype));
  return build_joint(*fw, rg);
}

/// A joint graph from its text, as the printer (and PyTorch's aot_joint_graph log) writes it:
/// placeholders primals_* then tangents_*, the outputs the forward's then one grad (or None) per
/// primal, which requires grad when its grad is not None. The tangents belong to the first
/// forward outputs in order (as when every forward output is differentiable).
inline JointGraph joint_from_text(const std::string& text) {
  JointGraph j;
  j.graph = parse_graph(text, aten_ops());
  verify(*j.graph);
  for (const Node* p : j.graph->placeholders())
    ++(p->name().rfind("tangents_", 0) == 0 ? j.num_tangents : j.num_primals);
  const std::vector<Arg>& outs = j.graph->output()->args()[0].list;
  EXPECT_GE(outs.size(), j.num_primals) << "fewer outputs than primals";
  j.num_forward_outputs = outs.size() - j.num_primals;
  for (size_t k = 0; k < j.num_forward_outputs; ++k)
    j.tangent_of_output.push_back(k < j.num_tangents ? static_cast<int>(k) : -1);
  j.leaf_output.assign(j.num_forward_outputs, false);
  for (size_t i = j.num_forward_outputs; i < outs.size(); ++i)
    j.primal_requires_grad.push_back(outs[i].kind != Arg::Kind::None);
  return j;
}

}  // namespace aotgrad
