// aotgrad: data-parallel gradient buckets -- the backward graph all-reduces the parameters'
// gradients in buckets, each issued as soon as its last gradient is computed and waited at the
// end, as PyTorch's DistributedDataParallel does (and compiled DDP's fused all-reduces). Std only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "aotgrad/ir/graph.h"

namespace aotgrad {

/// How each bucket's gradients are averaged over the ranks: divided by the group size then
/// all_reduce 'sum' (DDP's default, and compiled DDP's `div` + `all_reduce`), or all_reduce 'avg'.
enum class GradReduction { kSumDivided, kAvg };

/// "sum" (divided first) or "avg".
const char* grad_reduction_name(GradReduction r);

struct DataParallelOptions {
  /// The process group and its size (the runtime resolves the size; the graph needs it for the
  /// division).
  std::string group_name = "0";
  int64_t group_size = 1;
  GradReduction reduction = GradReduction::kSumDivided;
  /// DDP's bucket_cap_mb (25 MiB) and first bucket (1 MiB): a bucket is closed once it holds at
  /// least its cap's bytes (the gradient that crosses it included), as DDP's
  /// compute_bucket_assignment_by_size; the first bucket of each dtype has the first cap.
  int64_t bucket_cap_bytes = 25 << 20;
  int64_t first_bucket_cap_bytes = 1 << 20;
  /// Per output of the backward graph (one per primal): whether its gradient is all-reduced
  /// (a parameter's); empty: every gradient. None outputs are skipped either way.
  std::vector<bool> reduce;
  /// Per output (empty: none): whether it is the gradient of a sharded parameter (Note [Sharded
  /// parameters]), the reduce-scatter of its gather's gradient, which average_sharded_gradients
  /// averages over the ranks instead of an all-reduce (set `reduce` false for it).
  std::vector<bool> sharded;
  /// Per output: a name for the logs (the parameter's); empty: "grad <i>".
  std::vector<std::string> names;
};

/// One bucket: the gradients it holds, in the order the backward produces them.
struct GradBucket {
  struct Grad {
    int output = 0;     // index in the backward graph's outputs (the primal's)
    std::string name;   // DataParallelOptions::names, or "grad <i>"
    std::string value;  // the backward graph's value that is the gradient
    int64_t numel = 0;
  };
  std::vector<Grad> grads;
  ScalarType dtype = ScalarType::Float32;
  int64_t bytes = 0;
  /// The all_reduce is issued right after this value of the backward graph (its last gradient),
  /// the `position`-th of the graph's `of` nodes (placeholders and output included).
  std::string issued_after;
  int64_t position = 0;
  int64_t of = 0;
};

struct BucketPlan {
  std::string group_name;
  int64_t group_size = 1;
  GradReduction reduction = GradReduction::kSumDivided;
  std::vector<GradBucket> buckets;  // in the order they are issued

  /// One line per bucket: "bucket 0: 2 grads (fc2.weight, fc2.bias), 4160 bytes f32, all_reduce
  /// 'sum' on group '0' of 2 issued after 'mm_3' (node 12 of 40), waited at the end".
  std::string text() const;
};

/// The buckets of the gradients of `bw` (a backward graph, `(saved..., tangents...) ->
/// (grads...)`) that `options` reduces: walked in the graph's node order, each gradient joins the
/// open bucket of its dtype, which closes once it reaches its cap. Throws Error naming the
/// gradient when its sizes are not static.
BucketPlan plan_gradient_buckets(const Graph& bw, const DataParallelOptions& options);

/// Rewrites `bw` to all-reduce each bucket of `plan`: the bucket is allocated with its first
/// gradient (`new_empty`), each gradient copied into its slice right after it is computed (`copy_`
/// into a view of a slice, so the gradient dies there), and after the last one the bucket is
/// divided by the group size in place (`div_`, kSumDivided) and all-reduced in place
/// (`all_reduce_`: the graph owns the bucket, so no collective clones it); before the output, each
/// all_reduce is waited, split back (`split_with_sizes`) and viewed as its gradients, which the
/// graph then returns.
void insert_gradient_all_reduces(Graph& bw, const BucketPlan& plan);

/// Sharded training (Note [Sharded parameters]): each gradient `options.sharded` marks is
/// `wait_tensor(reduce_scatter_tensor(x, 'sum', n, group))` (all_gather's derivative); it becomes
/// an average over the ranks as `options.reduction` says: `x` divided by the group size first
/// (kSumDivided), or reduce_op 'avg'. Returns how many it changed; throws Error naming the
/// parameter whose gradient is anything else (a sharded parameter used other than through its
/// gather).
int64_t average_sharded_gradients(Graph& bw, const DataParallelOptions& options);

/// Sharded training (Note [Sharded gradients' reduce-scatters]): `fw` (a functional forward graph,
/// before the joint graph is built) reordered so that each gather of a graph input (OpClasses::
/// is_regather: all_gather_into_tensor, its wait and the views taken of them alone) comes right
/// before the first node that uses it, as FSDP gathers a module's parameters in its pre-forward
/// hook; the joint graph then reduce-scatters each gradient right after its layer's backward.
/// Values do not change; nullptr when the order is already so (or nothing is gathered).
std::unique_ptr<Graph> gather_parameters_at_first_use(const Graph& fw);

/// Sharded training (Note [Sharded gradients' reduce-scatters]): `bw` reordered so that each
/// gradient `options.sharded` marks is reduce-scattered right after it is computed -- the
/// reduce_scatter_tensor, with the nodes only it uses (views, the division), right after the last
/// node they need -- and each reduce-scatter waited just before the next one is issued (the last
/// before the output, or before an earlier user). Run it after average_sharded_gradients. Values do
/// not change; nullptr when the order is already so (or nothing is sharded).
std::unique_ptr<Graph> issue_sharded_reduce_scatters_early(const Graph& bw,
                                                           const DataParallelOptions& options);

/// The plan insert_gradient_all_reduces wrote into `bw`, read back from the graph (for a graph
/// loaded from the compile cache or parsed from text); positions are of the rewritten graph.
/// Empty when `bw` all-reduces no bucket. `names` as DataParallelOptions::names.
BucketPlan read_bucket_plan(const Graph& bw, const std::vector<std::string>& names = {});

}  // namespace aotgrad
