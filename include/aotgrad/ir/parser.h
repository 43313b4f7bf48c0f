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
std::unique_ptr<Graph> parse_graph(std::string_view text, const OpTable& ops);

}  // namespace aotgrad
