// aotgrad: AOTGRAD_LOGS, the artifact logs of the compile pipeline, as PyTorch's TORCH_LOGS
// (aot_joint_graph, aot_graphs, partitioner, cache, recompiles, all). Std only, so every layer may
// log; a graph is logged with log_graph (ir/printer.h).
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace aotgrad {

/// What can be logged, one flag per artifact name.
struct LogSettings {
  bool joint_graph = false;  // aot_joint_graph: the joint graph after decomposition
  bool graphs = false;       // aot_graphs: the forward and backward (or inference) graphs
  bool partitioner = false;  // partitioner: the min-cut's saved/recomputed/banned decisions
  bool cache = false;        // cache: compile-cache hits and misses (when there is a cache)
  bool recompiles = false;   // recompiles: why a front end compiles a function again
  bool collectives = false;  // collectives: gradient buckets, and each collective issued and waited
  bool any() const {
    return joint_graph || graphs || partitioner || cache || recompiles || collectives;
  }
};

/// The names AOTGRAD_LOGS accepts, in the order of LogSettings.
const std::vector<std::string>& log_artifact_names();

/// Parses a comma-separated AOTGRAD_LOGS value ("aot_graphs,partitioner", "+all"). A leading '+'
/// (TORCH_LOGS' "more verbose") is accepted on any name; spaces around names are ignored; "all"
/// enables everything. Throws Error naming an unknown name and listing the valid ones.
LogSettings parse_log_settings(std::string_view spec);

/// The settings of this process: AOTGRAD_LOGS parsed on first use (unset or empty: nothing is
/// logged), or what set_log_settings installed. Throws Error (every time) when the variable holds
/// an unknown name.
const LogSettings& log_settings();

/// Replaces the process's settings (tests, embedding applications); also clears an AOTGRAD_LOGS
/// error.
void set_log_settings(const LogSettings& settings);

/// Where logs go: std::cerr unless set (nullptr restores std::cerr). Not thread-safe to change
/// while compiling.
void set_log_stream(std::ostream* os);

/// Writes `text` to the log stream as one block (a trailing newline is added when missing).
void log_text(const std::string& text);

/// A new id for one compilation, 0, 1, 2, ... (the aot_id of "Forward graph 0").
int next_aot_id();

}  // namespace aotgrad
