// Tests for the data-parallel gradient buckets (src/transforms/distributed/data_parallel.cc):
// buckets follow the backward's node order and DDP's caps, each gradient is copied into its bucket
// as it is computed and each bucket is one all_reduce issued right after its last gradient and
// waited before the output, the rewritten graph parses back, and its plan reads back from the graph
// (the concatenated form of earlier graphs too); sharded gradients are reduce-scattered as soon as
// they are computed.
#include "aotgrad/transforms/distributed/data_parallel.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "../graph_text.h"
#include "aotgrad/ir/error.h"
#include "aotgrad/ir/verifier.h"

namespace aotgrad {
namespace {

using testing::HasSubstr;

// An MLP's backward graph (aotgrad compile --grad=... --dump): grads of w1 [16, 8], b1 [16], none
// for x, w2 [4, 16] (whose grad t_3 is a transposed view), b2 [4].
const char* kBackward = R"(
def forward(self, primals_3: "f32[2, 8]", primals_4: "f32[4, 16]", relu: "f32[2, 16]", tangents_1: "f32[2, 4]"):
    mm = torch.ops.aten.mm.default(tangents_1, primals_4)
    t_1 = torch.ops.aten.t.default(relu)
    mm_1 = torch.ops.aten.mm.default(t_1, tangents_1)
    t_3 = torch.ops.aten.t.default(mm_1)
    sum_2 = torch.ops.aten.sum.dim_IntList(tangents_1, [0], True)
    view = torch.ops.aten.view.default(sum_2, [4])
    threshold_backward = torch.ops.aten.threshold_backward.default(mm, relu, 0)
    t_4 = torch.ops.aten.t.default(threshold_backward)
    mm_2 = torch.ops.aten.mm.default(t_4, primals_3)
    sum_3 = torch.ops.aten.sum.dim_IntList(threshold_backward, [0], True)
    view_1 = torch.ops.aten.view.default(sum_3, [16])
    return [mm_2, view_1, None, t_3, view]
)";

DataParallelOptions options(int64_t first_cap, int64_t cap) {
  DataParallelOptions o;
  o.group_size = 2;
  o.first_bucket_cap_bytes = first_cap;
  o.bucket_cap_bytes = cap;
  o.names = {"w1", "b1", "x", "w2", "b2"};
  return o;
}

std::vector<std::string> names_of(const GradBucket& b) {
  std::vector<std::string> out;
  for (const auto& g : b.grads) out.push_back(g.name);
  return out;
}

TEST(DataParallel, BucketsFollowTheBackwardsOrderAndTheCaps) {
  std::shared_ptr<Graph> g = parse_text(kBackward);
  // w2's grad (64 floats: 256 bytes) is produced first and crosses the first cap of 200 bytes;
  // then b2 (16 bytes), w1 (512 bytes, crossing 300) and b1 (64 bytes) in a last open bucket.
  BucketPlan plan = plan_gradient_buckets(*g, options(200, 300));
  ASSERT_EQ(plan.buckets.size(), 3u);
  EXPECT_EQ(names_of(plan.buckets[0]), (std::vector<std::string>{"w2"}));
  EXPECT_EQ(names_of(plan.buckets[1]), (std::vector<std::string>{"b2", "w1"}));
  EXPECT_EQ(names_of(plan.buckets[2]), (std::vector<std::string>{"b1"}));
  EXPECT_EQ(plan.buckets[0].issued_after, "t_3");
  EXPECT_EQ(plan.buckets[1].issued_after, "mm_2");
  EXPECT_EQ(plan.buckets[1].bytes, 16 + 512);
  // DDP's defaults: one bucket for these few bytes, after the last gradient.
  BucketPlan one = plan_gradient_buckets(*g, DataParallelOptions{});
  ASSERT_EQ(one.buckets.size(), 1u);
  EXPECT_EQ(one.buckets[0].grads.size(), 4u);
  EXPECT_EQ(one.buckets[0].issued_after, "view_1");
}

TEST(DataParallel, OnlyTheGradientsAskedFor) {
  std::shared_ptr<Graph> g = parse_text(kBackward);
  DataParallelOptions o = options(1 << 20, 1 << 20);
  o.reduce = {true, false, false, true, false};
  BucketPlan plan = plan_gradient_buckets(*g, o);
  ASSERT_EQ(plan.buckets.size(), 1u);
  EXPECT_EQ(names_of(plan.buckets[0]), (std::vector<std::string>{"w2", "w1"}));
  o.reduce = {true};
  EXPECT_THROW(plan_gradient_buckets(*g, o), Error);
}

TEST(DataParallel, EachBucketIsOneAllReduceAfterItsLastGradWaitedAtTheEnd) {
  std::shared_ptr<Graph> g = parse_text(kBackward);
  BucketPlan plan = plan_gradient_buckets(*g, options(200, 300));
  insert_gradient_all_reduces(*g, plan);
  verify(*g, VerifyLevel::kFull);
  EXPECT_EQ(graph_text(*g), normalized(R"(
def forward(self, primals_3, primals_4, relu, tangents_1):
    mm = torch.ops.aten.mm.default(tangents_1, primals_4)
    t_1 = torch.ops.aten.t.default(relu)
    mm_1 = torch.ops.aten.mm.default(t_1, tangents_1)
    t_3 = torch.ops.aten.t.default(mm_1)
    new_empty = torch.ops.aten.new_empty.default(t_3, [64])
    slice_1 = torch.ops.aten.slice.Tensor(new_empty, 0, 0, 64)
    view_2 = torch.ops.aten.view.default(slice_1, [4, 16])
    copy_ = torch.ops.aten.copy_.default(view_2, t_3)
    div_ = torch.ops.aten.div_.Scalar(new_empty, 2)
    all_reduce_ = torch.ops._c10d_functional.all_reduce_.default(div_, 'sum', '0')
    sum_2 = torch.ops.aten.sum.dim_IntList(tangents_1, [0], True)
    view = torch.ops.aten.view.default(sum_2, [4])
    new_empty_1 = torch.ops.aten.new_empty.default(view, [132])
    slice_2 = torch.ops.aten.slice.Tensor(new_empty_1, 0, 0, 4)
    view_3 = torch.ops.aten.view.default(slice_2, [4])
    copy__1 = torch.ops.aten.copy_.default(view_3, view)
    threshold_backward = torch.ops.aten.threshold_backward.default(mm, relu, 0)
    t_4 = torch.ops.aten.t.default(threshold_backward)
    mm_2 = torch.ops.aten.mm.default(t_4, primals_3)
    slice_3 = torch.ops.aten.slice.Tensor(new_empty_1, 0, 4, 132)
    view_4 = torch.ops.aten.view.default(slice_3, [16, 8])
    copy__2 = torch.ops.aten.copy_.default(view_4, mm_2)
    div__1 = torch.ops.aten.div_.Scalar(new_empty_1, 2)
    all_reduce__1 = torch.ops._c10d_functional.all_reduce_.default(div__1, 'sum', '0')
    sum_3 = torch.ops.aten.sum.dim_IntList(threshold_backward, [0], True)
    view_1 = torch.ops.aten.view.default(sum_3, [16])
    new_empty_2 = torch.ops.aten.new_empty.default(view_1, [16])
    slice_4 = torch.ops.aten.slice.Tensor(new_empty_2, 0, 0, 16)
    view_5 = torch.ops.aten.view.default(slice_4, [16])
    copy__3 = torch.ops.aten.copy_.default(view_5, view_1)
    div__2 = torch.ops.aten.div_.Scalar(new_empty_2, 2)
    all_reduce__2 = torch.ops._c10d_functional.all_reduce_.default(div__2, 'sum', '0')
    wait_tensor = torch.ops._c10d_functional.wait_tensor.default(all_reduce_)
    view_6 = torch.ops.aten.view.default(wait_tensor, [4, 16])
    wait_tensor_1 = torch.ops._c10d_functional.wait_tensor.default(all_reduce__1)
    split_with_sizes = torch.ops.aten.split_with_sizes.default(wait_tensor_1, [4, 128])
    getitem = split_with_sizes[0]
    getitem_1 = split_with_sizes[1]
    view_7 = torch.ops.aten.view.default(getitem, [4])
    view_8 = torch.ops.aten.view.default(getitem_1, [16, 8])
    wait_tensor_2 = torch.ops._c10d_functional.wait_tensor.default(all_reduce__2)
    view_9 = torch.ops.aten.view.default(wait_tensor_2, [16])
    return [view_8, view_9, None, view_6, view_7]
)"));
  // The text form round-trips, and the plan reads back from the graph.
  std::string text = print_graph(*g);
  EXPECT_EQ(print_graph(*parse_text(text)), text);
  BucketPlan back = read_bucket_plan(*parse_text(text), options(0, 0).names);
  ASSERT_EQ(back.buckets.size(), plan.buckets.size());
  for (size_t b = 0; b < plan.buckets.size(); ++b) {
    EXPECT_EQ(names_of(back.buckets[b]), names_of(plan.buckets[b]));
    EXPECT_EQ(back.buckets[b].bytes, plan.buckets[b].bytes);
    EXPECT_EQ(back.buckets[b].issued_after, plan.buckets[b].issued_after);
  }
  EXPECT_EQ(back.group_size, 2);
  EXPECT_THAT(back.text(), HasSubstr("bucket 1: 2 grads (b2, w1), 528 bytes f32, all_reduce 'sum' "
                                     "of the grads divided by 2 on group '0' issued after 'mm_2'"));
}

TEST(DataParallel, AvgNeedsNoDivision) {
  std::shared_ptr<Graph> g = parse_text(kBackward);
  DataParallelOptions o = options(1 << 20, 1 << 20);
  o.reduction = GradReduction::kAvg;
  o.group_name = "dp";
  insert_gradient_all_reduces(*g, plan_gradient_buckets(*g, o));
  std::string text = graph_text(*g);
  EXPECT_THAT(text, HasSubstr("all_reduce_ = torch.ops._c10d_functional.all_reduce_.default("
                              "new_empty, 'avg', 'dp')"));
  EXPECT_THAT(text, testing::Not(HasSubstr("div")));
}

// Graphs written before the buckets were copied into (a concatenation of the flattened gradients,
// as compiled DDP's) read back too.
TEST(DataParallel, ConcatenatedBucketsReadBack) {
  std::shared_ptr<Graph> g = parse_text(R"(
def forward(self, primals_3: "f32[2, 8]", tangents_1: "f32[2, 4]", relu: "f32[2, 16]"):
    t_1 = torch.ops.aten.t.default(relu)
    mm_1 = torch.ops.aten.mm.default(t_1, tangents_1)
    t_3 = torch.ops.aten.t.default(mm_1)
    clone = torch.ops.aten.clone.default(t_3, memory_format = torch.contiguous_format)
    view_2 = torch.ops.aten.view.default(clone, [64])
    sum_2 = torch.ops.aten.sum.dim_IntList(tangents_1, [0], True)
    view = torch.ops.aten.view.default(sum_2, [4])
    view_3 = torch.ops.aten.view.default(view, [4])
    cat = torch.ops.aten.cat.default([view_2, view_3])
    div_ = torch.ops.aten.div_.Scalar(cat, 3)
    all_reduce_ = torch.ops._c10d_functional.all_reduce_.default(div_, 'sum', '0')
    wait_tensor = torch.ops._c10d_functional.wait_tensor.default(all_reduce_)
    split_with_sizes = torch.ops.aten.split_with_sizes.default(wait_tensor, [64, 4])
    getitem = split_with_sizes[0]
    getitem_1 = split_with_sizes[1]
    view_6 = torch.ops.aten.view.default(getitem, [4, 16])
    view_7 = torch.ops.aten.view.default(getitem_1, [4])
    return [None, view_6, view_7]
)");
  BucketPlan back = read_bucket_plan(*g, {"x", "w2", "b2"});
  ASSERT_EQ(back.buckets.size(), 1u);
  EXPECT_EQ(names_of(back.buckets[0]), (std::vector<std::string>{"w2", "b2"}));
  EXPECT_EQ(back.buckets[0].bytes, 272);
  EXPECT_EQ(back.buckets[0].issued_after, "view");
  EXPECT_EQ(back.group_size, 3);
}

// Note [Sharded gradients' reduce-scatters]: a sharded backward as the joint graph leaves it, every
// reduce-scatter at the end; each moves, with the nodes only it uses, right after what it needs,
// and is waited just before the next one is issued.
TEST(ShardedGradients, ReduceScattersIssuedAfterTheirGradientsWaitedBeforeTheNext) {
  std::shared_ptr<Graph> g = parse_text(R"(
def forward(self, x: "f32[3, 4]", w1: "f32[4, 4]", tangents_1: "f32[3, 4]"):
    t = torch.ops.aten.t.default(tangents_1)
    mm = torch.ops.aten.mm.default(t, x)
    mm_1 = torch.ops.aten.mm.default(tangents_1, w1)
    relu = torch.ops.aten.relu.default(mm_1)
    t_1 = torch.ops.aten.t.default(relu)
    mm_2 = torch.ops.aten.mm.default(t_1, x)
    view = torch.ops.aten.view.default(mm, [4, 4])
    reduce_scatter_tensor = torch.ops._c10d_functional.reduce_scatter_tensor.default(view, 'sum', 2, '0')
    wait_tensor = torch.ops._c10d_functional.wait_tensor.default(reduce_scatter_tensor)
    view_1 = torch.ops.aten.view.default(mm_2, [4, 4])
    reduce_scatter_tensor_1 = torch.ops._c10d_functional.reduce_scatter_tensor.default(view_1, 'sum', 2, '0')
    wait_tensor_1 = torch.ops._c10d_functional.wait_tensor.default(reduce_scatter_tensor_1)
    return [relu, wait_tensor_1, wait_tensor]
)");
  DataParallelOptions o;
  o.group_size = 2;
  o.sharded = {false, true, true};
  o.reduce = {false, false, false};
  EXPECT_EQ(average_sharded_gradients(*g, o), 2);
  std::unique_ptr<Graph> early = issue_sharded_reduce_scatters_early(*g, o);
  ASSERT_NE(early, nullptr);
  verify(*early, VerifyLevel::kFull);
  // relu is returned too: it stays in place, and so does t_1's chain from it.
  EXPECT_EQ(graph_text(*early), normalized(R"(
def forward(self, x, w1, tangents_1):
    t = torch.ops.aten.t.default(tangents_1)
    mm = torch.ops.aten.mm.default(t, x)
    view = torch.ops.aten.view.default(mm, [4, 4])
    div_1 = torch.ops.aten.div.Scalar(view, 2)
    reduce_scatter_tensor = torch.ops._c10d_functional.reduce_scatter_tensor.default(div_1, 'sum', 2, '0')
    mm_1 = torch.ops.aten.mm.default(tangents_1, w1)
    relu = torch.ops.aten.relu.default(mm_1)
    t_1 = torch.ops.aten.t.default(relu)
    mm_2 = torch.ops.aten.mm.default(t_1, x)
    view_1 = torch.ops.aten.view.default(mm_2, [4, 4])
    div = torch.ops.aten.div.Scalar(view_1, 2)
    wait_tensor = torch.ops._c10d_functional.wait_tensor.default(reduce_scatter_tensor)
    reduce_scatter_tensor_1 = torch.ops._c10d_functional.reduce_scatter_tensor.default(div, 'sum', 2, '0')
    wait_tensor_1 = torch.ops._c10d_functional.wait_tensor.default(reduce_scatter_tensor_1)
    return [relu, wait_tensor_1, wait_tensor]
)"));
  // Already so: nothing to do.
  EXPECT_EQ(issue_sharded_reduce_scatters_early(*early, o), nullptr);
  EXPECT_EQ(issue_sharded_reduce_scatters_early(*early, DataParallelOptions{}), nullptr);
}

// The traced forward gathers every parameter first; each gather (all_gather of an input, its wait
// and the views of it alone) moves to right before its first use, in order.
TEST(ShardedGradients, GathersMoveToTheirFirstUse) {
  std::shared_ptr<Graph> g = parse_text(R"(
def forward(self, w1: "f32[2, 4]", w2: "f32[2, 4]", x: "f32[3, 4]"):
    all_gather_into_tensor = torch.ops._c10d_functional.all_gather_into_tensor.default(w1, 2, '0')
    wait_tensor = torch.ops._c10d_functional.wait_tensor.default(all_gather_into_tensor)
    view = torch.ops.aten.view.default(wait_tensor, [4, 4])
    all_gather_into_tensor_1 = torch.ops._c10d_functional.all_gather_into_tensor.default(w2, 2, '0')
    wait_tensor_1 = torch.ops._c10d_functional.wait_tensor.default(all_gather_into_tensor_1)
    view_1 = torch.ops.aten.view.default(wait_tensor_1, [4, 4])
    relu = torch.ops.aten.relu.default(x)
    t = torch.ops.aten.t.default(view)
    mm = torch.ops.aten.mm.default(relu, t)
    t_1 = torch.ops.aten.t.default(view_1)
    mm_1 = torch.ops.aten.mm.default(mm, t_1)
    return (mm_1,)
)");
  std::unique_ptr<Graph> moved = gather_parameters_at_first_use(*g);
  ASSERT_NE(moved, nullptr);
  verify(*moved, VerifyLevel::kFull);
  // t and t_1 are views of the gathered parameters too: they move with them.
  EXPECT_EQ(graph_text(*moved), normalized(R"(
def forward(self, w1, w2, x):
    relu = torch.ops.aten.relu.default(x)
    all_gather_into_tensor = torch.ops._c10d_functional.all_gather_into_tensor.default(w1, 2, '0')
    wait_tensor = torch.ops._c10d_functional.wait_tensor.default(all_gather_into_tensor)
    view = torch.ops.aten.view.default(wait_tensor, [4, 4])
    t = torch.ops.aten.t.default(view)
    mm = torch.ops.aten.mm.default(relu, t)
    all_gather_into_tensor_1 = torch.ops._c10d_functional.all_gather_into_tensor.default(w2, 2, '0')
    wait_tensor_1 = torch.ops._c10d_functional.wait_tensor.default(all_gather_into_tensor_1)
    view_1 = torch.ops.aten.view.default(wait_tensor_1, [4, 4])
    t_1 = torch.ops.aten.t.default(view_1)
    mm_1 = torch.ops.aten.mm.default(mm, t_1)
    return (mm_1,)
)"));
  EXPECT_EQ(gather_parameters_at_first_use(*moved), nullptr);
  EXPECT_EQ(gather_parameters_at_first_use(*parse_text(kBackward)), nullptr);
}

TEST(DataParallel, SymbolicGradientsAreAnError) {
  std::shared_ptr<Graph> g = parse_text(R"(
def forward(self, tangents_1: "f32[s0, 4]"):
    return [tangents_1]
)");
  try {
    plan_gradient_buckets(*g, DataParallelOptions{});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.message(), HasSubstr("gradient 0 ('grad 0', value 'tangents_1' of f32[s0, 4]"));
  }
}

}  // namespace
}  // namespace aotgrad
