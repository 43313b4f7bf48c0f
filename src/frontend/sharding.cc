// aotgrad: FSDP2-style parameter sharding (Note [Sharded parameters]).
#include "aotgrad/frontend/sharding.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/GradMode.h>

#include "aotgrad/frontend/checkpoint.h"
#include "aotgrad/ir/error.h"

namespace aotgrad {
namespace {

// The sizes as rows of dim 0 (a 0-dim tensor is one row).
std::vector<int64_t> as_rows(std::vector<int64_t> sizes) {
  if (sizes.empty()) sizes.push_back(1);
  return sizes;
}

at::Tensor gather(const at::Tensor& shard, const std::vector<int64_t>& full_sizes,
                  int64_t group_size, const std::string& group) {
  static auto all_gather = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("_c10d_functional::all_gather_into_tensor", "")
                               .typed<at::Tensor(const at::Tensor&, int64_t, std::string)>();
  static auto wait = c10::Dispatcher::singleton()
                         .findSchemaOrThrow("_c10d_functional::wait_tensor", "")
                         .typed<at::Tensor(const at::Tensor&)>();
  std::vector<int64_t> rows = as_rows(full_sizes);
  at::Tensor whole = wait.call(all_gather.call(shard, group_size, group));
  if (whole.size(0) != rows[0]) whole = whole.narrow(0, 0, rows[0]);
  return whole.view(full_sizes);
}

}  // namespace

int64_t shard_rows(const std::vector<int64_t>& full_sizes, int64_t group_size) {
  AOTGRAD_CHECK(group_size >= 1, "sharding: group size ", group_size);
  int64_t rows = full_sizes.empty() ? 1 : full_sizes[0];
  return (rows + group_size - 1) / group_size;
}

at::Tensor shard_of(const at::Tensor& full, int64_t rank, int64_t group_size) {
  AOTGRAD_CHECK(rank >= 0 && rank < group_size, "sharding: rank ", rank, " of ", group_size);
  c10::NoGradGuard no_grad;
  std::vector<int64_t> sizes = as_rows(full.sizes().vec());
  at::Tensor rows = full.reshape(sizes);
  const int64_t per = shard_rows(full.sizes().vec(), group_size);
  std::vector<int64_t> block = sizes;
  block[0] = per;
  at::Tensor out = at::zeros(block, full.options().requires_grad(false));
  const int64_t begin = std::min(rank * per, sizes[0]);
  const int64_t end = std::min(begin + per, sizes[0]);
  if (end > begin) out.narrow(0, 0, end - begin).copy_(rows.narrow(0, begin, end - begin));
  return out;
}

at::Tensor gather_full_parameter(const at::Tensor& shard, const std::vector<int64_t>& full_sizes,
                                 int64_t group_size, const std::string& group,
                                 std::optional<bool> reshard_after_forward) {
  std::vector<int64_t> want = as_rows(full_sizes);
  want[0] = shard_rows(full_sizes, group_size);
  AOTGRAD_CHECK(shard.defined() && shard.sizes().vec() == want,
                "gather_full_parameter: a shard of ", c10::IntArrayRef(full_sizes), " over ",
                group_size, " ranks has sizes ", c10::IntArrayRef(want), ", got ",
                shard.defined() ? c10::str(shard.sizes()) : std::string("an undefined tensor"));
  if (!reshard_after_forward.has_value()) return gather(shard, full_sizes, group_size, group);
  TensorFunction fn = [&](const std::vector<at::Tensor>& a) {
    return std::vector<at::Tensor>{gather(a[0], full_sizes, group_size, group)};
  };
  RecomputePolicy policy =
      *reshard_after_forward ? RecomputePolicy::MustRecompute : RecomputePolicy::MustSave;
  return checkpoint(fn, {shard}, [policy](const std::string&) { return policy; }).at(0);
}

}  // namespace aotgrad
