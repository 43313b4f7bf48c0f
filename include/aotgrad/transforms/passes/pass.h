// aotgrad: the graph pass interface (the passes by name are driver/pass_registry.h; a pipeline of
// them is the driver's PassPipeline, driver/pass_pipeline.h).
#pragma once

#include <cstdint>
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

/// Replaces the nodes of `dst` by a copy of `src`'s (same names, metadata, node info, signature).
/// For passes that build a new graph (functionalize) but must rewrite the caller's in place.
void assign_graph(Graph& dst, const Graph& src);

/// A copy of `g` whose calls and getitems are `body` (a permutation of g's calls and getitems that
/// respects their data dependences): same names, metadata, node info and signature.
std::unique_ptr<Graph> copy_in_order(const Graph& g, const std::vector<const Node*>& body);

}  // namespace aotgrad
