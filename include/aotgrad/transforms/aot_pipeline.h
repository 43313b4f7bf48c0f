// aotgrad: the compile pipeline of a training graph (§13.3): decompose composite ops,
// functionalize, build the joint graph, decompose it with the chosen table, partition it. Std only:
// the runtime compiles and runs what it produces (runtime/compiled_function.h).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "aotgrad/ir/graph.h"
#include "aotgrad/transforms/autograd.h"
#include "aotgrad/transforms/decompose.h"
#include "aotgrad/transforms/functionalize.h"
#include "aotgrad/transforms/min_cut.h"

namespace aotgrad {

/// How the joint graph is split: default_partition (save every forward value the backward uses) or
/// the min-cut rematerialization partition (min_cut.h), the default as in torch.compile.
enum class PartitionKind { kDefault, kMinCut };

struct PipelineOptions {
  /// Applied to the joint graph before partitioning (§13.10), so the partitioner sees small ops.
  DecompositionTable decompositions = DecompositionTable::core();
  PartitionKind partition = PartitionKind::kMinCut;
  /// The min-cut partitioner's switches (PartitionKind::kMinCut).
  MinCutOptions min_cut;
  /// Run the verifier after every stage: structural checks on the intermediate graphs, and the
  /// metadata re-inferred too on the forward and backward graphs (they hold every node of the
  /// intermediate graphs that runs).
  bool verify = true;
  /// Fill TrainingArtifacts::explain (the min-cut partition's reasons); the partitioner log
  /// (AOTGRAD_LOGS=partitioner) fills it either way. Off, the partition does less work.
  bool explain = true;
};

/// The artifacts of a training compilation, for the runtime and for inspection (`aotgrad compile
/// --dump`).
struct TrainingArtifacts {
  std::shared_ptr<const Graph> functional;  // the functionalized forward graph
  ViewAndMutationMeta meta;
  std::shared_ptr<const Graph> input_views;  // FunctionalizeResult::input_views
  std::shared_ptr<const Graph> joint;        // after decomposition
  JointGraph joint_info;                     // (graph moved into `joint`)
  std::shared_ptr<const Graph> fw, bw;
  std::vector<std::string> saved;  // names of saved values, fw output order
  size_t num_forward_outputs = 0;  // mutated-input values + user outputs
  /// Why the min-cut partition saved and recomputed what it did; null for the default partition.
  std::shared_ptr<const MinCutExplain> explain;
  /// Wall-clock time of each stage in microseconds, in order: decompose_composites,
  /// functionalize, joint, decompose, partition.
  std::vector<std::pair<std::string, double>> phases_us;
  /// The process CPU time (std::clock) of the same stages, which a loaded machine does not inflate
  /// with time spent waiting for a core.
  std::vector<std::pair<std::string, double>> phases_cpu_us;
};

/// Runs the pipeline on `graph` for the placeholders marked in `requires_grad`. Throws Error
/// naming the node for what a stage cannot handle.
TrainingArtifacts compile_for_training(const Graph& graph, const std::vector<bool>& requires_grad,
                                       const PipelineOptions& options = {});

}  // namespace aotgrad
