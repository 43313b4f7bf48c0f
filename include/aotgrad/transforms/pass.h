// aotgrad: the graph pass interface, pass statistics and the pass pipeline.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "aotgrad/ir/graph.h"

namespace aotgrad {

/// A graph-to-graph rewrite with one contract, stated in its header. `run` rewrites the graph in
/// place and returns whether it changed anything; a pass that changes nothing leaves the graph
/// exactly as it was (names included). Options are constructor arguments.
class Pass {
 public:
  virtual ~Pass() = default;
  /// A short id, the one make_pass accepts: "dce", "cse", "decomp:core".
  virtual std::string_view name() const = 0;
  virtual bool run(Graph& g) = 0;
  /// How many rewrites the last run() made; each pass's header says what it counts.
  int64_t changes() const { return changes_; }

 protected:
  int64_t changes_ = 0;
};

/// What one run of one pass did.
struct PassStats {
  std::string pass;         // Pass::name()
  size_t nodes_before = 0;  // Graph::size(), placeholders and output included
  size_t nodes_after = 0;
  int64_t changes = 0;   // Pass::changes()
  bool changed = false;  // what run() returned
  double seconds = 0;    // wall time of run() (the verifier not included)
};

struct PassPipelineOptions {
#ifdef NDEBUG
  static constexpr bool kVerifyByDefault = false;
#else
  static constexpr bool kVerifyByDefault = true;
#endif
  /// Run the verifier on the graph after every pass (tests always do; on in debug builds).
  bool verify = kVerifyByDefault;
  /// Print the graph after every pass to this stream (--print-after-all), after a line
  /// "# after <pass>: <nodes> nodes, <changes> changes".
  std::ostream* print_after_all = nullptr;
  /// Called with each pass and the graph after it ran (after the verifier).
  std::function<void(const Pass&, const Graph&)> after_pass;
};

/// Runs passes in order on one graph and keeps what each did. A pass that throws, or leaves a
/// graph the verifier rejects (when verifying), stops the pipeline with an Error naming the pass.
class PassPipeline {
 public:
  explicit PassPipeline(PassPipelineOptions options = {});
  ~PassPipeline();
  PassPipeline(PassPipeline&&) noexcept;
  PassPipeline& operator=(PassPipeline&&) noexcept;

  PassPipeline& add(std::unique_ptr<Pass> pass);
  /// add(make_pass(spec)).
  PassPipeline& add(std::string_view spec);
  const std::vector<std::unique_ptr<Pass>>& passes() const { return passes_; }

  /// Runs every pass once, in order; returns whether any changed the graph.
  bool run(Graph& g);
  /// Statistics of every pass run so far, in the order they ran.
  const std::vector<PassStats>& stats() const { return stats_; }
  /// The statistics as an aligned table: pass, nodes before -> after, changes, milliseconds.
  std::string stats_table() const;

 private:
  PassPipelineOptions options_;
  std::vector<std::unique_ptr<Pass>> passes_;
  std::vector<PassStats> stats_;
};

/// The pass named by `spec`: `functionalize` (keeping input mutations as a trailing copy_, so
/// the graph's signature stays), `decomp:<spec>` (decompose with parse_decomposition_spec(spec),
/// e.g. "decomp:core" or "decomp:full,-aten::native_layer_norm"), `dce`, `cse`, `constant_fold`
/// (alias `fold`), `simplify`. Throws Error listing the known names for any other spec.
std::unique_ptr<Pass> make_pass(std::string_view spec);
/// The names make_pass accepts, as listed in its error: "functionalize, decomp:<spec>, ...".
std::string known_pass_names();

/// Replaces the nodes of `dst` by a copy of `src`'s (same names, metadata, node info, signature).
/// For passes that build a new graph (functionalize) but must rewrite the caller's in place.
void assign_graph(Graph& dst, const Graph& src);

}  // namespace aotgrad
