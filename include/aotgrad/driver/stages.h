// aotgrad: the stages of the standard pipelines (driver/driver.h), each a transform of the layers
// below wrapped as a Stage. Std only.
#pragma once

#include <memory>

#include "aotgrad/driver/compile_options.h"
#include "aotgrad/driver/pass_pipeline.h"
#include "aotgrad/transforms/distributed/data_parallel.h"

namespace aotgrad {

/// "decompose_composites": CompositeImplicitAutograd ops (linear, softmax, dropout, ...) replaced
/// by what they decompose to, as PyTorch's tracing does, so that functionalization and autograd
/// only see those. First in every pipeline, and before the compile cache's key is taken.
std::unique_ptr<Stage> decompose_composites_stage();

/// "functionalize": s.graph becomes the functional graph (transforms/functionalize.h); fills
/// s.meta and s.input_views. `keep_input_mutations`: input data mutations stay as a trailing copy_.
/// `positional_input_names`: the placeholders are renamed arg<i>_1, as PyTorch names the inputs of
/// an inference graph (training keeps the names for the joint graph's primals, and export keeps
/// them because its signature refers to them).
std::unique_ptr<Stage> functionalize_stage(bool keep_input_mutations, bool positional_input_names);

/// "joint": the functional forward moves to s.functional and s.graph becomes the joint graph
/// (transforms/autograd.h) over s.requires_grad; fills s.joint.
std::unique_ptr<Stage> joint_stage();

/// "decompose": s.graph decomposed with `table` (transforms/passes/decompose.h).
std::unique_ptr<Stage> decompose_stage(DecompositionTable table);

/// "partition": the joint graph in s.graph split into s.fw and s.bw as `options` say
/// (default_partition, the min-cut, or options.partition_fn when set, whose result must fit the
/// joint graph), with the saved values and, when options.explain or the partitioner log asks, the
/// min-cut's explanation. `then`: the order the pipeline gives the graphs after it (kMemory: the
/// schedule stage follows), which the memory budget's peak pricing mimics. Logs the partitioner's
/// decisions on AOTGRAD_LOGS=partitioner.
std::unique_ptr<Stage> partition_stage(const CompileOptions& options, ScheduleKind then);

/// "schedule": s.fw and s.bw reordered by schedule_for_memory
/// (transforms/partition/memory_schedule.h) when `kind` is ScheduleKind::kMemory; last in the
/// training pipeline, after the stages front ends add after "partition". Logs the peaks before and
/// after on AOTGRAD_LOGS=partitioner. `gradients_kept`: MinCutOptions::gradients_kept, the peak it
/// lowers.
std::unique_ptr<Stage> schedule_stage(ScheduleKind kind, bool gradients_kept = false);

/// "data_parallel": s.bw all-reduces the gradients `options` names in buckets
/// (transforms/distributed/data_parallel.h, Note [Gradient buckets]); inserted after "partition" by
/// front ends that train data-parallel. Logs the buckets on AOTGRAD_LOGS=collectives.
std::unique_ptr<Stage> data_parallel_stage(DataParallelOptions options);
/// Sharded training, before "joint": gather_parameters_at_first_use on the functional graph.
std::unique_ptr<Stage> gather_at_first_use_stage();

}  // namespace aotgrad
