// aotgrad: FSDP2-style parameter sharding -- each parameter split along dim 0 into one row block
// per rank, and gathered whole inside the traced function (Note [Sharded parameters],
// transforms/distributed/data_parallel.cc).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace aotgrad {

/// The rows of dim 0 each rank holds of a tensor of `full_sizes` split over `group_size` ranks:
/// ceil(rows / group_size), a 0-dim tensor counting as one row (FSDP2's Shard(0) with padding).
int64_t shard_rows(const std::vector<int64_t>& full_sizes, int64_t group_size);

/// Rank `rank`'s row block of `full` (zero-padded at the end of dim 0 to group_size blocks of
/// shard_rows): a new contiguous tensor of the same dtype and device, outside autograd.
at::Tensor shard_of(const at::Tensor& full, int64_t rank, int64_t group_size);

/// The whole tensor of `full_sizes` from every rank's `shard` (shard_of's block):
/// all_gather_into_tensor on process group `group` of `group_size` ranks, wait_tensor, the padding
/// narrowed away, viewed as `full_sizes`. Under a capture the ops are recorded in a checkpointed
/// region: MUST_RECOMPUTE when `reshard_after_forward` is true, so that the backward gathers the
/// parameter again instead of saving it (FSDP's reshard_after_forward), MUST_SAVE when false; with
/// std::nullopt untagged, so the partitioner decides under the activation memory budget (Note
/// [Re-gather or keep]). Outside a capture it communicates (every rank must call it). Throws Error
/// when the shard's rows or trailing sizes do not fit `full_sizes`.
at::Tensor gather_full_parameter(const at::Tensor& shard, const std::vector<int64_t>& full_sizes,
                                 int64_t group_size, const std::string& group,
                                 std::optional<bool> reshard_after_forward = true);

}  // namespace aotgrad
