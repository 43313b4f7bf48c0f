// aotgrad: CompileOptions, the one options struct of the compile driver, and the table that
// declares each of its text options once. Every front end -- the command line, CompiledGraph,
// CompiledFunction, aot_function / aot_module (AOTConfig is a CompileOptions) and aot_export --
// fills it once and hands it to the driver (driver/driver.h). Std only.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aotgrad/support/error.h"
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

/// One compile option, declared once, in compile_option_table(): the command line's `--NAME`
/// option and its help, the parsing of its text, its default, and what the compile cache's key
/// holds of it are all generated from this declaration.
struct CompileOptionDecl {
  std::string_view name;     // "memory-budget": the command line's --memory-budget
  std::string_view metavar;  // what the value looks like: "F|auto", "on|off"; "" for a flag
  std::string_view help;     // one paragraph, without the default
  /// The default as the command line writes it ("" for none to write): CompileOptions' own
  /// member initializers hold it, and parse(default_text) leaves CompileOptions{} as it was (a
  /// test holds every declaration but a flag's to it).
  std::string_view default_text;
  /// Sets the option in `o` from `text` ("" for a flag); throws Error saying what the option
  /// takes, for text it does not take.
  std::function<void(CompileOptions& o, const std::string& text)> parse;
  /// What the compile cache's key holds of the option in `o`; null: the option does not enter
  /// the key (where the cache lives, say).
  std::function<std::string(const CompileOptions& o)> key;
  /// "NAME=VALUE": the option means something only where option NAME has VALUE (given, or by
  /// default); giving it elsewhere is an error. "" for always.
  std::string_view applies_with = {};
  /// The one pipeline that reads the option (the min-cut's switches: training), whose keys alone
  /// hold it; nullopt: every pipeline reads it.
  std::optional<PipelineKind> read_by = std::nullopt;
};

/// An error reading a file a compile option names (a cost profile that is missing or corrupt): the
/// file's error, not the option text's, which parse_compile_options passes on as it is (the
/// command line exits 1 for it, 2 for a usage error).
class CompileOptionFileError : public Error {
 public:
  using Error::Error;
};

/// Every compile option, in the order parse_compile_options applies them.
const std::vector<CompileOptionDecl>& compile_option_table();

/// Options as given, by name ("memory-budget" -> "0.5"; "" for a flag), in the order given.
using GivenCompileOptions = std::vector<std::pair<std::string, std::string>>;

/// CompileOptions{} with the `given` options set, in table order. Throws Error "--NAME: ..." for
/// a name the table does not declare, text its option does not take, or an option given where its
/// applies_with does not hold.
CompileOptions parse_compile_options(const GivenCompileOptions& given);

/// What the compile cache keys on of `o` for a compilation by `pipeline`: "NAME=KEY" for every
/// declaration with a key that the pipeline reads, one per line, in table order.
std::string compile_options_key(const CompileOptions& o, PipelineKind pipeline);

}  // namespace aotgrad
