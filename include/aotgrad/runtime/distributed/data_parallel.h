// aotgrad: what data-parallel training needs of the process group at compile time -- its size,
// the parameters broadcast from rank 0, and the check that every rank compiled the same graphs.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

namespace aotgrad {

/// This process's rank in process group `group` (resolve_process_group) and the group's size.
struct GroupPlace {
  int rank = 0;
  int size = 1;
};
GroupPlace process_group_place(const std::string& group);

/// Copies rank 0's values of `tensors` into every rank's (in place, outside autograd), coalesced
/// into one broadcast per dtype, as DDP's _sync_module_states. Every rank must pass tensors of the
/// same dtypes and sizes in the same order: a mismatch is an Error naming the tensor on the ranks
/// that differ. Throws Error naming the group when a peer is gone or the timeout passes.
void broadcast_from_rank0(const std::string& group, const std::vector<at::Tensor>& tensors,
                          const std::vector<std::string>& names = {});

/// Checks that every rank of `group` has the same `parts` (what, text): the SHA-256 of each is
/// all-gathered, and a mismatch throws, on every rank, an Error that names `context`, each part
/// that differs and which ranks have which digest ("the backward graph differs: ranks 0, 2 have
/// 3f2a..., rank 1 has 9c01...").
void check_same_on_every_rank(const std::string& group,
                              const std::vector<std::pair<std::string, std::string>>& parts,
                              const std::string& context);

}  // namespace aotgrad
