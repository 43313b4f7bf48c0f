// aotgrad: parses PyTorch's readable GraphModule code into a Graph.
#pragma once

#include <memory>
#include <string_view>

#include "aotgrad/ir/graph.h"

namespace aotgrad {

/// Parses the text form of DESIGN.md (the code `print_readable()` / `TORCH_LOGS=aot_graphs`
/// print). Ops are resolved in `ops`; a node without an annotation gets its inferred metadata,
/// a node with one keeps the annotation (the verifier compares the two). Throws Error whose loc()
/// is the line and column of the problem and whose message says what was expected.
///
/// Size symbols (s0, s1) get hints -- the sizes the graph was traced at, which layout decisions
/// and the partitioner's byte counts use -- from `hints`, else from a comment line of the text
/// `# hints: s0=8, s1=16` (as tools/export.py --dynamic writes); a symbol with neither has none.
std::unique_ptr<Graph> parse_graph(std::string_view text, const OpTable& ops);
std::unique_ptr<Graph> parse_graph(std::string_view text, const OpTable& ops,
                                   const SymbolHints& hints);

/// Parses "s0=8,s1=16" (spaces allowed) into `out`; false with `error` set on malformed text.
bool parse_symbol_hints(std::string_view text, SymbolHints& out, std::string* error);

}  // namespace aotgrad
