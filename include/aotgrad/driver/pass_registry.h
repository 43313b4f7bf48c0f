// aotgrad: the passes by name -- what `aotgrad opt --passes`, PassPipeline::add(spec) and the
// compile cache's pass list accept. It lives in the driver because it names passes of every
// transforms folder (passes/, the graph transforms, partition/), which sit below it.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "aotgrad/transforms/passes/pass.h"

namespace aotgrad {

/// The pass named by `spec`: `functionalize` (keeping input mutations as a trailing copy_, so
/// the graph's signature stays), `decomp:<spec>` (decompose with parse_decomposition_spec(spec),
/// e.g. "decomp:core" or "decomp:full,-aten::native_layer_norm"), `dce`, `cse`, `constant_fold`
/// (alias `fold`), `simplify`, `reinplace` (reinplace_plan's in-place-variant choices as calls of
/// that variant, transforms/passes/reinplace.h), `split_weight_grads` (split_weight_gradients).
/// Throws Error listing the known names for any other spec.
std::unique_ptr<Pass> make_pass(std::string_view spec);
/// The names make_pass accepts, as listed in its error: "functionalize, decomp:<spec>, ...".
std::string known_pass_names();

}  // namespace aotgrad
