// aotgrad: what the compile and run commands share -- loading a graph, --grad, the pipeline's
// options, the cache and phase statistics.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "aotgrad/driver/compile_options.h"
#include "aotgrad/ir/graph.h"
#include "aotgrad/support/timer.h"
#include "aotgrad/transforms/partition/memory_timeline.h"
#include "cli.h"

namespace aotgrad::cli {

/// Reads, parses and verifies a graph; errors are rethrown as "FILE:LINE:COL: error: ..." text.
/// Size symbols take their hints from `hints`, else from the text's `# hints:` comment.
std::shared_ptr<Graph> load_graph(const std::string& path, const SymbolHints& hints = {});
/// --hint=s0=8,s1=16: the size symbols' hints of a command line (none without the option).
/// Throws UsageError for malformed text.
SymbolHints hint_option(const Args& args);

/// A dynamic graph's size symbols for --stats=json: "symbols" ([{"name", "hint" (null without
/// one), "source" (the input that binds it: "x.size()[0]", or a SymInt input's name)}]) and
/// "guards" (PyTorch's text: "2 <= s0", "L['y'].size()[0] == s0" for another input dimension
/// that is the symbol or an expression over the symbols). Throws Error naming a symbol that no
/// input binds.
void add_symbols_json(nlohmann::ordered_json& j, const Graph& g);

/// --grad=all|none|NAME,...: which placeholders require grad ("all": every floating-point input).
/// Throws UsageError for an unknown or non-floating name.
std::vector<bool> parse_grad_spec(const Graph& g, const std::string& spec);

/// The compile driver's options of a command line, filled once from the options
/// compile_option_table() declares (driver/compile_options.h): each --NAME it has, parsed by its
/// declaration; no cache without --cache-dir, so the command line never uses the user's cache
/// unless asked ("off" is also no cache). Throws UsageError naming what is not understood.
CompileOptions compile_options(const Args& args);

/// --reinplace=on|off (on by default): whether the interpreter re-inplaces
/// (transforms/passes/reinplace.h), for the run and for the predicted peak; UsageError for another
/// value.
bool reinplace_option(const Args& args);

/// --recompute=KEY=POLICY,...: checkpoint policies on the calls of `g` before it compiles. KEY is
/// an op (`aten::mm` matches every overload, `aten::add.Tensor` one), a node name, or `*` (every
/// other call); POLICY is MUST_SAVE, PREFER_SAVE, MUST_RECOMPUTE or PREFER_RECOMPUTE (any case).
/// A node name wins over an op, an op over `*`. A key that matches no call, or a bad policy, is
/// a UsageError. Without the option, nothing changes.
void apply_recompute_option(const Args& args, Graph& g);

/// A command's own options followed by every compile option of compile_option_table() (its
/// help with its default) and --reinplace, --recompute and --hint, for the commands that compile.
std::vector<OptionSpec> with_compile_options(std::vector<OptionSpec> own);

/// The compile cache's counters and directory (of `options`; null without a cache) as one JSON
/// object, for --stats=json: {"dir", "hits", "misses", "corrupt", "saved", "bypasses"}.
nlohmann::ordered_json cache_stats_json(const CompileOptions& options);

/// A training step's predicted peak (training_step_timeline) for --stats=json: {"bytes", "node",
/// "phase" ("forward" or "backward"), "step" (0-based within the phase)}.
nlohmann::ordered_json predicted_peak_json(const MemoryTimeline& t);

/// The timed phases for --stats=json: "phases_us" and "phases_cpu_us" (the phases whose CPU time
/// is known), "total_us", "total_cpu_us".
void add_phases_json(nlohmann::ordered_json& j, const StageTimer& timer);

}  // namespace aotgrad::cli
