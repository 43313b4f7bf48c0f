// aotgrad (api internal): what an AOTConfig means for the compile pipeline.
#pragma once

#include "aotgrad/aotgrad.h"

namespace aotgrad {

/// Throws Error (prefixed with `who`) for a config no compilation can use.
inline void check_config(const AOTConfig& config, const char* who) {
  AOTGRAD_CHECK(config.activation_memory_budget >= 0 && config.activation_memory_budget <= 1, who,
                ": activation_memory_budget must be in [0, 1], got ",
                config.activation_memory_budget);
  AOTGRAD_CHECK(config.bucket_cap_bytes > 0 && config.first_bucket_cap_bytes > 0, who,
                ": bucket_cap_bytes and first_bucket_cap_bytes must be positive, got ",
                config.bucket_cap_bytes, " and ", config.first_bucket_cap_bytes);
}

/// The process group data-parallel training uses: the config's, else the world group.
inline std::string data_parallel_group(const AOTConfig& config) {
  return config.process_group.empty() ? std::string("0") : config.process_group;
}

/// The compile driver's options of `config`, filled once for every compilation of a front end:
/// decompositions, partition, the min-cut's switches, memory budget and solver, the schedule,
/// keep_inference_input_mutations, the cache.
inline CompileOptions compile_options(const AOTConfig& config) {
  CompileOptions options;
  options.decompositions = config.decompositions;
  options.partition = config.partition;
  options.partition_fn = config.partition_fn;
  options.min_cut = config.min_cut;
  options.min_cut.activation_memory_budget = config.activation_memory_budget;
  options.min_cut.memory_budget_solver = config.solver;
  options.keep_inference_input_mutations = config.keep_inference_input_mutations;
  options.schedule = config.schedule;
  options.cache_dir = config.cache_dir;
  return options;
}

}  // namespace aotgrad
