// The tests' one graph-text helper: graphs in and out as the text form, through the real parser and
// printer (no private dialect). Pass tests proper are tests/passes/*.fx, run through `aotgrad opt`.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "aotgrad/ir/graph.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/transforms/autograd.h"
#include "aotgrad/transforms/pass.h"

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

}  // namespace aotgrad
