// aotgrad: RNG-safe recomputation of random ops (§13.25), as torch/_functorch/partitioners.py's
// functionalize_rng_ops.
#pragma once

#include <string>
#include <vector>

#include "aotgrad/transforms/op_classes.h"
#include "aotgrad/transforms/partition/partition.h"

namespace aotgrad {

/// One random op that the backward recomputes, as functionalize_rng_ops rewrote it.
struct RngStateSave {
  std::string name;      // the random call's name in the joint graph ("native_dropout")
  std::string op;        // its op ("aten::native_dropout")
  std::string fw_call;   // the forward's run_and_save_rng_state node
  std::string fw_state;  // the saved state: that node's getitem 0, a forward output
  std::string bw_state;  // the state's placeholder in the backward ("rng_state_output_0")
  std::string bw_call;   // the backward's run_with_rng_state node
};

/// functionalize_rng_ops: each random call (OpClasses::is_random) that both the forward and the
/// backward of `p` compute -- recomputed for a MUST_RECOMPUTE / PREFER_RECOMPUTE tag or for the
/// activation memory budget -- draws the same numbers in both. The forward calls it through
/// torch.ops.higher_order.run_and_save_rng_state and returns the CPU generator state it started
/// from as one more saved value (after the saved tensors, before saved SymInts; `p.saved` gains its
/// name at that position); the backward takes the state as placeholder `rng_state_output_<k>` at
/// the same position and calls the op through run_with_rng_state, which puts the generator back as
/// it was afterwards, so the rest of the program's random stream is not disturbed.
///
/// Run it once, on a fresh partition (min_cut_partition does); CSE is not run after it. Returns
/// what it rewrote, in forward order. Throws Error naming the node for a random op that writes one
/// of its arguments, or whose tensors are on a CUDA device (only the CPU generator's state is
/// saved).
std::vector<RngStateSave> functionalize_rng_ops(Partition& p,
                                                const OpClasses& ops = OpClasses::defaults());

}  // namespace aotgrad
