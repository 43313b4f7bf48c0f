// aotgrad: the pass pipeline -- ordered, named stages over one compilation, with verification,
// AOTGRAD_LOGS graph logs, stage timing and the compile cache in one place (as XLA's
// HloPassPipeline owns verification, dumping and timing). The inference, training and export
// pipelines (driver/driver.h) and `aotgrad opt` are PassPipelines. Std only.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "aotgrad/driver/pass_registry.h"
#include "aotgrad/ir/graph.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/support/logging.h"
#include "aotgrad/support/timer.h"
#include "aotgrad/transforms/autograd.h"
#include "aotgrad/transforms/functionalize.h"
#include "aotgrad/transforms/partition/min_cut.h"

namespace aotgrad {

/// What a compilation is for: the seed's aot_dispatch_base (inference), aot_dispatch_autograd
/// (training), and the export path, which returns the graphs without compiling them (§13.11).
enum class CompileKind { kInference, kTraining, kExport };

/// "inference", "training", "export".
const char* compile_kind_name(CompileKind kind);

/// The graphs of a compilation that stages read and write.
enum class GraphSlot {
  kGraph,     // the graph the next stage rewrites: the input, functionalized, then the joint graph
  kForward,   // the partition's forward graph
  kBackward,  // the partition's backward graph
};

/// "graph", "forward", "backward".
const char* graph_slot_name(GraphSlot slot);

/// What one compilation carries from stage to stage. A stage fills what its header says; a
/// compile-cache hit fills what an entry holds (driver/cache_entry.h).
struct CompileState {
  CompileKind kind = CompileKind::kInference;
  /// Training (and an export with the joint graph): which placeholders of the input require grad.
  std::vector<bool> requires_grad;
  /// The graph stages rewrite in turn (GraphSlot::kGraph).
  std::unique_ptr<Graph> graph;
  /// Functionalization: the input/output metadata, the input views graph, and the functional
  /// forward once the joint graph replaces it in `graph`.
  ViewAndMutationMeta meta;
  std::shared_ptr<const Graph> input_views;
  std::shared_ptr<const Graph> functional;
  /// The joint graph's layout; its graph is `graph` (JointGraph::graph stays null).
  JointGraph joint;
  /// The partition: forward and backward graphs, the saved values (fw output order), the number
  /// of forward outputs before them, and the min-cut's explanation when it was asked for.
  std::unique_ptr<Graph> fw, bw;
  std::vector<std::string> saved;
  size_t num_forward_outputs = 0;
  std::shared_ptr<const MinCutExplain> explain;
  /// The compilation's number in the logs ("Forward graph 3"); set by PassPipeline::run.
  int aot_id = 0;

  /// The graph in `slot`, or nullptr when there is none.
  Graph* slot(GraphSlot slot) const;
};

/// One stage of a pipeline: a named step over the compilation. Options are constructor arguments.
class Stage {
 public:
  virtual ~Stage() = default;
  /// A short id, unique in its pipeline: "functionalize", "partition", "cse".
  virtual std::string_view name() const = 0;
  /// Runs on `s`; returns whether it changed a graph (a stage that changed nothing leaves every
  /// graph as it was, and is not verified again).
  virtual bool run(CompileState& s) = 0;
  /// How many rewrites the last run() made (1 or 0 unless the stage counts something finer).
  virtual int64_t changes() const { return changes_; }
  /// The graphs run() writes, for the verifier and the graph logs.
  virtual std::vector<GraphSlot> writes() const { return {GraphSlot::kGraph}; }
  /// What besides name() decides what the stage produces -- its options -- as text for the compile
  /// cache's key ("" when nothing does).
  virtual std::string fingerprint() const { return ""; }
  /// Whether the stage normalizes the input before the compile cache's key is taken (the
  /// decomposition of composite ops); such stages come first and run on a hit too.
  virtual bool before_cache() const { return false; }
  /// Text the stage logs (AOTGRAD_LOGS) after the pipeline has logged its graphs.
  virtual void log(const CompileState& s, const LogSettings& logs) const {}

 protected:
  int64_t changes_ = 0;
};

/// A graph pass as a stage on one graph slot; name() is the pass's unless given.
std::unique_ptr<Stage> pass_stage(std::unique_ptr<Pass> pass, GraphSlot slot = GraphSlot::kGraph,
                                  std::string name = "");

/// What one run of one stage did.
struct PassStats {
  std::string pass;         // Stage::name()
  size_t nodes_before = 0;  // Graph::size() of the first graph the stage writes, before and after
  size_t nodes_after = 0;
  int64_t changes = 0;   // Stage::changes()
  bool changed = false;  // what run() returned
  double seconds = 0;    // wall time of the stage, its verification and logs included
  double cpu_seconds = 0;
};

struct PassPipelineOptions {
#ifdef NDEBUG
  static constexpr bool kVerifyByDefault = false;
#else
  static constexpr bool kVerifyByDefault = true;
#endif
  /// Run the verifier on every graph a stage changed: `intermediate` on graphs a later stage
  /// writes again, kFull (metadata re-inferred) on the `results` once no later stage writes them.
  bool verify = kVerifyByDefault;
  VerifyLevel intermediate = VerifyLevel::kFull;
  std::vector<GraphSlot> results = {GraphSlot::kGraph};
  /// A stage's error and a verifier error after it are rethrown as "pass 'NAME': ..." and "pass
  /// 'NAME' left an invalid graph: ..."; off, they pass through unchanged.
  bool errors_name_the_stage = true;
  /// Graphs logged after the last stage that writes their slot, when `artifact` is on in
  /// AOTGRAD_LOGS: "TRACED GRAPH ===== <title> <aot_id> =====".
  struct GraphLog {
    GraphSlot slot;
    bool LogSettings::*artifact;
    std::string title;
  };
  std::vector<GraphLog> graph_logs;
  /// Print the graphs a stage writes after every stage to this stream (--print-after-all), after
  /// a line "# after <stage>: <nodes> nodes, <changes> changes".
  std::ostream* print_after_all = nullptr;
  /// Called with each stage and the compilation after it ran (after the verifier).
  std::function<void(const Stage&, const CompileState&)> after_stage;
  /// The compile cache directory ("" for none) and the version that keys its entries. Stages
  /// before_cache() run first; then the key (driver/cache_key.h) is taken over the compilation and
  /// the remaining stages' names and fingerprints. A hit fills the compilation from the entry and
  /// runs no further stage; a miss runs them and stores the result. `read_cache` false: a bypass.
  std::string cache_dir;
  bool read_cache = true;
  std::string version;
  /// What the key holds of the compile options the stages were made from
  /// (compile_options_key, driver/compile_options.h): a stage's fingerprint holds only what it is
  /// given that is not a compile option.
  std::string options_key;
};

/// Runs stages in order on one compilation and keeps what each did. A stage that throws, or leaves
/// a graph the verifier rejects, stops the pipeline with the Error.
class PassPipeline {
 public:
  explicit PassPipeline(PassPipelineOptions options = {});
  ~PassPipeline();
  PassPipeline(PassPipeline&&) noexcept;
  PassPipeline& operator=(PassPipeline&&) noexcept;

  const PassPipelineOptions& options() const { return options_; }

  PassPipeline& add(std::unique_ptr<Stage> stage);
  /// add(pass_stage(pass)): a pass on GraphSlot::kGraph.
  PassPipeline& add(std::unique_ptr<Pass> pass);
  /// add(make_pass(spec)).
  PassPipeline& add(std::string_view spec);
  /// Inserts `stage` right after (before) the stage named `anchor`: the hook by which later
  /// stages (collectives, guards, scheduling) join the standard pipelines. Throws Error naming
  /// the stages when there is no such anchor.
  PassPipeline& insert_after(std::string_view anchor, std::unique_ptr<Stage> stage);
  PassPipeline& insert_before(std::string_view anchor, std::unique_ptr<Stage> stage);
  const std::vector<std::unique_ptr<Stage>>& stages() const { return stages_; }
  /// The stage names in order, comma-separated.
  std::string stage_names() const;

  /// Runs every stage once, in order (or loads the compilation from the cache); returns whether
  /// any stage changed a graph.
  bool run(CompileState& s);
  /// Runs on one graph (GraphSlot::kGraph), as `aotgrad opt` does.
  bool run(Graph& g);

  /// Statistics of every stage run so far, in the order they ran.
  const std::vector<PassStats>& stats() const { return stats_; }
  /// The wall-clock and CPU time of each stage run so far ("cache_load" for a cache hit).
  const std::vector<StageTime>& stage_times() const { return timer_.stages(); }
  /// Whether the last run() loaded its compilation from the compile cache.
  bool cache_hit() const { return cache_hit_; }
  /// The statistics as an aligned table: stage, nodes before -> after, changes, milliseconds.
  std::string stats_table() const;

 private:
  void run_stage(size_t i, CompileState& s);
  size_t position(std::string_view anchor) const;

  PassPipelineOptions options_;
  std::vector<std::unique_ptr<Stage>> stages_;
  std::vector<PassStats> stats_;
  StageTimer timer_;
  // Per GraphSlot: the stage that changed it since it was last fully verified ("" when none).
  std::vector<std::string> dirty_;
  bool cache_hit_ = false;
};

}  // namespace aotgrad
