// aotgrad: CompileOptions, the one options struct of the compile driver. Every front end -- the
// command line, CompiledGraph, CompiledFunction, aot_function / aot_module and aot_export -- fills
// it once and hands it to the driver (driver/driver.h). Std only.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aotgrad/transforms/partition/memory_schedule.h"
#include "aotgrad/transforms/partition/min_cut.h"
#include "aotgrad/transforms/passes/decompose.h"

namespace aotgrad {

/// How the joint graph is split: default_partition (save every forward value the backward uses) or
/// the min-cut rematerialization partition (min_cut.h), the default as in torch.compile.
enum class PartitionKind { kDefault, kMinCut };

/// "default" or "min_cut".
const char* partition_kind_name(PartitionKind kind);

/// A user's partition function (functorch.compile's `partition_fn`, §13.8): the joint graph in,
/// the forward and backward graphs and the saved values out, in default_partition's calling
/// convention (the forward returns the forward outputs then the saved values; the backward takes
/// the saved values then the tangents and returns one grad or None per primal). It may call
/// default_partition or min_cut_partition itself. `name` stands for the function in the compile
/// cache's key: two functions that may partition differently need two names.
struct PartitionFn {
  std::string name;
  std::function<Partition(const JointGraph& joint)> fn;
  explicit operator bool() const { return static_cast<bool>(fn); }
};

class Stage;  // driver/pass_pipeline.h

/// Which of the driver's pipelines a stage joins (driver/driver.h).
enum class PipelineKind { kInference, kTraining, kExport };

/// A stage added to one of the standard pipelines: made by `make` when the pipeline is built, and
/// inserted right after (or, with `before`, right before) the stage named `anchor` -- how the
/// collectives, guards and memory stages of later work join the compilations every front end runs.
/// Its name and fingerprint are part of the compile cache's key.
struct StageInsertion {
  PipelineKind pipeline = PipelineKind::kTraining;
  std::string anchor;
  bool before = false;
  std::function<std::unique_ptr<Stage>()> make;
};

struct CompileOptions {
  /// The decomposition table (§13.10): applied to the functional graph of an inference or export
  /// compilation, and to the joint graph of a training one, so the partitioner sees small ops.
  /// Composite ops (CompositeImplicitAutograd) always decompose first, in every pipeline.
  DecompositionTable decompositions = DecompositionTable::core();
  /// Training: how the joint graph is split, and the min-cut partitioner's switches.
  PartitionKind partition = PartitionKind::kMinCut;
  MinCutOptions min_cut;
  /// Training: a user's partition function, used instead of `partition` when set.
  PartitionFn partition_fn;
  /// Training: the order of the partition's graphs -- kMemory reorders them (within data
  /// dependences and effect order) so that the step's predicted peak falls, never rises
  /// (transforms/partition/memory_schedule.h; the "schedule" stage after "partition"); kNone keeps
  /// the partitioner's order and leaves the stage out.
  ScheduleKind schedule = ScheduleKind::kMemory;
  /// Inference and export: data mutations of inputs stay in the graph as a trailing copy_ (the
  /// seed's keep_inference_input_mutations, §13.13) instead of being returned.
  bool keep_inference_input_mutations = false;
  /// Run the verifier after every stage: structural checks on the graphs later stages rewrite, the
  /// metadata re-inferred too on the graphs the compilation returns (see PassPipeline).
  bool verify = true;
  /// Training with the min-cut partition: fill the explanation (MinCutExplain) of what was saved
  /// and recomputed and why; the partitioner log (AOTGRAD_LOGS=partitioner) fills it either way.
  /// Off, the partition does less work.
  bool explain = true;
  /// The on-disk compile cache (driver/cache_store.h): unset, the default directory
  /// ($AOTGRAD_CACHE_DIR, else $XDG_CACHE_HOME/aotgrad, else ~/.cache/aotgrad;
  /// AOTGRAD_CACHE_DIR=off: none); "" or "off", no cache; else that directory. Inference and
  /// training compilations are cached; exports never are. A hit has no joint graph, functional
  /// graph or explanation.
  std::optional<std::string> cache_dir;
  /// With a cache: false writes the entry without looking it up first (a bypass), for a caller
  /// that needs what an entry does not hold (the joint graph, the explanation).
  bool read_cache = true;
  /// Stages added to the standard pipelines, in order; an anchor the pipeline does not have is an
  /// Error naming its stages.
  std::vector<StageInsertion> extra_stages;
};

}  // namespace aotgrad
