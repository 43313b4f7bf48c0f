// aotgrad: checkpointed regions of a captured function.
#include "aotgrad/frontend/checkpoint.h"

#include <algorithm>
#include <exception>

#include "aotgrad/providers/fake_tensor.h"

namespace aotgrad {

std::vector<at::Tensor> checkpoint(const TensorFunction& fn, const std::vector<at::Tensor>& args,
                                   CheckpointPolicyFn policy) {
  AOTGRAD_CHECK(fn, "checkpoint: the function is empty");
  FakeTrace* trace = FakeTrace::active();
  if (!trace) return fn(args);
  if (!policy) policy = [](const std::string&) { return RecomputePolicy::PreferRecompute; };
  FakeTrace::RecomputePolicyFn outer = trace->set_recompute_policy(std::move(policy));
  try {
    std::vector<at::Tensor> out = fn(args);
    trace->set_recompute_policy(std::move(outer));
    return out;
  } catch (...) {
    trace->set_recompute_policy(std::move(outer));
    throw;
  }
}

CheckpointPolicyFn save_only(std::vector<std::string> ops) {
  return [ops = std::move(ops)](const std::string& op) {
    std::string packet = op.substr(0, op.find('.'));
    bool saved = std::find(ops.begin(), ops.end(), op) != ops.end() ||
                 std::find(ops.begin(), ops.end(), packet) != ops.end();
    return saved ? RecomputePolicy::MustSave : RecomputePolicy::PreferRecompute;
  };
}

}  // namespace aotgrad
