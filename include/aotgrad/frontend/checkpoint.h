// aotgrad: activation checkpointing inside a captured function -- torch.utils.checkpoint and its
// selective-checkpoint policies for aot_function (§13.9, §13.40).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "aotgrad/frontend/capture.h"
#include "aotgrad/ir/graph.h"

namespace aotgrad {

/// The recompute policy of each op a checkpointed region records, by OpDef name ("aten::mm",
/// "aten::add.Tensor"), as a selective-checkpoint policy_fn returns a CheckpointPolicy.
using CheckpointPolicyFn = std::function<RecomputePolicy(const std::string& op)>;

/// Runs `fn(args)` as a checkpointed region. Under capture (aot_function, aot_module, capture())
/// every op recorded while `fn` runs gets `policy(op)` as its node's recompute policy (empty
/// policy: PREFER_RECOMPUTE for every op, plain activation checkpointing), which the min-cut
/// partitioner honours: MUST_SAVE and MUST_RECOMPUTE always, PREFER_* unless a ban or the memory
/// budget decides otherwise. The policies travel through functionalization, decompositions and the
/// joint graph, and print as `# recompute=...` comments. Regions nest: the inner policy applies
/// inside. Outside a capture it calls `fn(args)` (eager code computes the same values).
std::vector<at::Tensor> checkpoint(const TensorFunction& fn, const std::vector<at::Tensor>& args,
                                   CheckpointPolicyFn policy = {});

/// "Save these ops, recompute the rest" (for example {"aten::mm", "aten::addmm", "aten::bmm"}):
/// MUST_SAVE for the named ops (a name without an overload matches every overload), and
/// PREFER_RECOMPUTE for every other op.
CheckpointPolicyFn save_only(std::vector<std::string> ops);

}  // namespace aotgrad
