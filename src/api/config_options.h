// aotgrad (api internal): the checks and defaults of an AOTConfig (its compile options are the
// CompileOptions it is).
#pragma once

#include "aotgrad/aotgrad.h"

namespace aotgrad {

/// Throws Error (prefixed with `who`) for a config no compilation can use.
inline void check_config(const AOTConfig& config, const char* who) {
  const double budget = config.min_cut.activation_memory_budget;
  AOTGRAD_CHECK(budget >= 0 && budget <= 1, who,
                ": min_cut.activation_memory_budget must be in [0, 1], got ", budget);
  AOTGRAD_CHECK(config.bucket_cap_bytes > 0 && config.first_bucket_cap_bytes > 0, who,
                ": bucket_cap_bytes and first_bucket_cap_bytes must be positive, got ",
                config.bucket_cap_bytes, " and ", config.first_bucket_cap_bytes);
}

/// The process group data-parallel training uses: the config's, else the world group.
inline std::string data_parallel_group(const AOTConfig& config) {
  return config.process_group.empty() ? std::string("0") : config.process_group;
}

}  // namespace aotgrad
