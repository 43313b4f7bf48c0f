// aotgrad: the compile cache's keys -- SHA-256 over everything a compilation's result depends on:
// the input graph, the pipeline's stages and their options, aotgrad's build and op registry. Std
// only.
#pragma once

#include <string>
#include <string_view>

#include "aotgrad/driver/pass_pipeline.h"

namespace aotgrad {

/// The build of aotgrad that runs: size and modification time of the executable, and of the shared
/// library holding aotgrad's driver when it is one, so that a rebuilt aotgrad -- even at the same
/// version -- never reads the entries of another build (PyTorch keys its caches by a hash of its
/// own sources for the same reason). Part of every key.
const std::string& compile_cache_build_id();

/// A fingerprint of the op registry (every op's schema, tags, and whether it has a meta function,
/// derivative rule and decomposition): part of every key, so a changed registry misses.
const std::string& op_registry_fingerprint();

/// The key of compilation `s` before the stages of `pipeline` from index `first_stage` on run:
/// SHA-256 over the entry format, the kind, `version` (aotgrad's), compile_cache_build_id(), the
/// registry fingerprint, the requires_grad flags (training), the canonical text of s.graph
/// (recompute tags included) with the placeholders' requires_grad the text does not show, and the
/// name and fingerprint of each of those stages.
std::string compile_cache_key(const CompileState& s, const PassPipeline& pipeline,
                              size_t first_stage, std::string_view version);

}  // namespace aotgrad
