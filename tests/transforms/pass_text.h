// Test helper for graph passes: graph text in, the pass, graph text out.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/transforms/pass.h"

namespace aotgrad {

/// Lines of graph text without indentation, blank lines and comments.
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

/// The graph as normalized text: no class header, annotations or release statements.
inline std::string graph_text(const Graph& g) {
  PrintOptions p;
  p.class_header = false;
  p.annotations = false;
  p.release_statements = false;
  return normalized(print_graph(g, p));
}

/// Result of one pass on one graph.
struct PassRun {
  std::string text;  // graph_text after the pass
  bool changed = false;
  int64_t changes = 0;
};

/// Parses and verifies `text`, runs the pass named `spec`, verifies the result.
inline PassRun run_pass(const std::string& spec, const std::string& text) {
  auto g = parse_graph(text, aten_ops());
  verify(*g);
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

}  // namespace aotgrad
