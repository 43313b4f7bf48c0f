// aotgrad: the on-disk compile cache (PyTorch's AOTAutogradCache, §13.19): a compilation's forward
// and backward graphs and metadata, stored as text under a key that hashes what they depend on.
// Std only; the runtime (CompiledFunction, CompiledGraph) consults it before compiling.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aotgrad/ir/graph.h"
#include "aotgrad/support/sha256.h"
#include "aotgrad/transforms/aot_pipeline.h"
#include "aotgrad/transforms/decompose.h"
#include "aotgrad/transforms/functionalize.h"

namespace aotgrad {

/// The entry format written by this build; an entry of another format version is not read.
inline constexpr int kCompileCacheFormat = 1;

/// Process-wide counters, as PyTorch's counters["aot_autograd"]["autograd_cache_*"].
struct CompileCacheStats {
  int64_t hits = 0;      // an entry was loaded: the pipeline did not run
  int64_t misses = 0;    // no usable entry: the pipeline ran
  int64_t corrupt = 0;   // of the misses, entries that could not be read (reported, overwritten)
  int64_t saved = 0;     // entries written
  int64_t bypasses = 0;  // a cache was asked for but not used (unusable directory, caller's choice)
};
CompileCacheStats compile_cache_stats();
void reset_compile_cache_stats();

/// The cache directory a compilation uses when its options name none: $AOTGRAD_CACHE_DIR when set
/// (empty, "off", "0", "false" or "none": no cache, returns ""), else $XDG_CACHE_HOME/aotgrad, else
/// $HOME/.cache/aotgrad, else "" (no cache). Read on every call.
std::string default_compile_cache_dir();

/// The cache directory of an option: nullopt -> default_compile_cache_dir(); "" or "off" -> ""
/// (no cache); else the directory itself.
std::string resolve_compile_cache_dir(const std::optional<std::string>& option);

/// The build of aotgrad that runs: size and modification time of the executable (and of the shared
/// library holding aotgrad's code, when it is one), so that a rebuilt aotgrad -- even at the same
/// version -- never reads the entries of another build (PyTorch keys its caches by a hash of its
/// own sources for the same reason). Part of every key.
const std::string& compile_cache_build_id();

/// A fingerprint of the op registry (every op's schema, tags, and whether it has a meta function,
/// derivative rule and decomposition): part of every key, so a changed registry misses.
const std::string& op_registry_fingerprint();

/// The key of a training compilation: SHA-256 over the canonical text of `graph`, the recompute
/// tags and requires_grad flags of its nodes (which the text does not show), `requires_grad`,
/// every PipelineOptions field that changes the result (partition, decomposition table, each
/// MinCutOptions field), the entry format, the registry fingerprint, compile_cache_build_id() and
/// `version` (aotgrad's).
std::string training_cache_key(const Graph& graph, const std::vector<bool>& requires_grad,
                               const PipelineOptions& options, std::string_view version);

/// The key of an inference compilation (functionalize with input names arg<i>_1, then decompose).
std::string inference_cache_key(const Graph& graph, bool keep_input_mutations,
                                const DecompositionTable& decompositions, std::string_view version);

/// What an inference entry holds: the functional graph, its metadata and the input views graph.
struct InferenceArtifacts {
  std::shared_ptr<const Graph> fw;
  ViewAndMutationMeta meta;
  std::shared_ptr<const Graph> input_views;
};

/// The entry as text. Line-oriented; every count precedes its items:
///
///     aotgrad-compile-cache <format> <training|inference> <key>
///     aotgrad <version>
///     inputs <n>                       then n lines: input <mutates_data> <mutates_metadata>
///                                      <mutation_in_graph> <requires_grad> <view>
///     outputs <n>                      then n lines: output <fresh|is_input|alias_of_input|none>
///                                      <input> <view>
///     mutated_inputs_returned <n> <index>...
///     (training only)
///     num_forward_outputs <n>
///     saved <n> <name>...
///     joint <num_primals> <num_tangents> <num_forward_outputs>
///     tangent_of_output <n> <index>...
///     primal_requires_grad <n> <0|1>...
///     (then, per graph: fw, bw (training only), input_views)
///     graph <name> <bytes>             then exactly <bytes> bytes of its text form
///     requires_grad <n> <placeholder index>...
///     sha256 <hex of every byte before this line>
///
/// Loading only parses: graphs go through the text parser and the verifier.
std::string serialize_training_entry(const std::string& key, std::string_view version,
                                     const TrainingArtifacts& a);
std::string serialize_inference_entry(const std::string& key, std::string_view version,
                                      const InferenceArtifacts& a);
/// Parse an entry written for `key`; throws Error saying what is wrong (truncated, checksum,
/// format version, key, a malformed line or graph). Training artifacts from an entry have no
/// functional graph, joint graph (nor joint_info.graph) or explanation.
TrainingArtifacts parse_training_entry(std::string_view text, const std::string& key);
InferenceArtifacts parse_inference_entry(std::string_view text, const std::string& key);

/// One cache directory. Entries are files `<dir>/<key>.entry`, written to a temporary file in
/// the same directory and renamed into place, so concurrent writers of one key leave one whole
/// entry and readers never see a partial one. A directory that cannot be created or written is
/// reported once per process on stderr and the cache is not used. A corrupt entry is reported on
/// stderr (file and cause), counted, and the compilation that follows overwrites it. Hits, misses
/// and corrupt entries are logged on AOTGRAD_LOGS=cache. Thread-safe.
class CompileCache {
 public:
  explicit CompileCache(std::string dir);

  const std::string& dir() const { return dir_; }
  std::string entry_path(const std::string& key) const;
  /// Whether the directory exists (created when missing) and is writable.
  bool usable() const;

  /// The stored artifacts for `key`, or nullopt (no entry, or a corrupt one). Counts a hit or a
  /// miss.
  std::optional<TrainingArtifacts> load_training(const std::string& key) const;
  std::optional<InferenceArtifacts> load_inference(const std::string& key) const;
  /// Writes the entry; false (after a warning) when it could not be written.
  bool store_training(const std::string& key, std::string_view version,
                      const TrainingArtifacts& a) const;
  bool store_inference(const std::string& key, std::string_view version,
                       const InferenceArtifacts& a) const;

 private:
  std::optional<std::string> read_entry(const std::string& key) const;
  /// Reads `key`'s entry and gives its text to `parse`; counts and logs the hit or the miss, and
  /// reports an entry `parse` rejects (with Error) as corrupt. True on a hit.
  bool load_entry(const std::string& key,
                  const std::function<void(const std::string&)>& parse) const;
  void report_corrupt(const std::string& key, const std::string& cause) const;
  bool write_entry(const std::string& key, const std::string& text) const;

  std::string dir_;
  bool usable_ = false;
};

/// The inference pipeline of CompiledGraph through the cache in `cache_dir` ("": no cache):
/// functionalize `source` (placeholders arg<i>_1, input data mutations kept as copy_ with
/// `keep_input_mutations`), verify, decompose with `decompositions`; the forward graph is logged
/// on AOTGRAD_LOGS=aot_graphs when compiled. `hit`, when given, says whether it came from the
/// cache.
InferenceArtifacts compile_for_inference_cached(const Graph& source, bool keep_input_mutations,
                                                const DecompositionTable& decompositions,
                                                const std::string& cache_dir,
                                                std::string_view version, bool* hit = nullptr);

/// compile_for_training through the cache in `cache_dir` ("" : no cache, the pipeline runs):
/// on a hit the stored artifacts (phases_us holds one "cache_load" stage), else the pipeline's,
/// stored. `hit`, when given, says which. With `read` false the entry is not looked up (the
/// caller needs the joint graph or the explanation) but is written: a bypass.
TrainingArtifacts compile_for_training_cached(
    const Graph& graph, const std::vector<bool>& requires_grad, const PipelineOptions& options,
    const std::string& cache_dir, std::string_view version, bool* hit = nullptr, bool read = true);

}  // namespace aotgrad
