// aotgrad: the compile cache's entry format -- a compilation's results as text that loading only
// parses and verifies. Std only.
#pragma once

#include <string>
#include <string_view>

#include "aotgrad/driver/pass_pipeline.h"

namespace aotgrad {

/// The entry format written by this build; an entry of another format version is not read.
// 2: the tokens line (effect tokens); 3: mutations_hidden_from_autograd on the input lines; 4:
// grad_fn_from_base on the output lines; 5: the leaf_output line.
inline constexpr int kCompileCacheFormat = 5;

/// The entry of an inference or training compilation as text. Line-oriented; every count
/// precedes its items:
///
///     aotgrad-compile-cache <format> <training|inference> <key>
///     aotgrad <version>
///     inputs <n>                       then n lines: input <mutates_data> <mutates_metadata>
///                                      <mutation_in_graph> <requires_grad> <view>
///                                      <mutations_hidden_from_autograd>
///     outputs <n>                      then n lines: output <fresh|is_input|alias_of_input|none>
///                                      <input> <view> <grad_fn_from_base>
///     mutated_inputs_returned <n> <index>...
///     tokens <n>                       effect tokens the graphs take first and return first
///     (training only)
///     num_forward_outputs <n>
///     saved <n> <name>...
///     joint <num_primals> <num_tangents> <num_forward_outputs> <num_tokens>
///     tangent_of_output <n> <index>...
///     primal_requires_grad <n> <0|1>...
///     leaf_output <n> <0|1>...          JointGraph::leaf_output
///     (then, per graph: fw (the inference graph, or the training forward), bw (training only),
///     input_views)
///     graph <name> <bytes>             then exactly <bytes> bytes of its text form
///     requires_grad <n> <placeholder index>...
///     sha256 <hex of every byte before this line>
///
/// The inference graph is s.graph, the training graphs s.fw and s.bw.
std::string serialize_cache_entry(const std::string& key, std::string_view version,
                                  const CompileState& s);

/// Fills `s` (of s.kind) from an entry written for `key`: metadata, input views, and s.graph
/// (inference) or s.fw, s.bw, the saved values and the joint layout (training); graphs go through
/// the text parser and the verifier. Throws Error saying what is wrong (truncated, checksum, format
/// version, kind, key, a malformed line or graph, graphs that do not fit the metadata).
void parse_cache_entry(std::string_view text, const std::string& key, CompileState& s);

}  // namespace aotgrad
