// aotgrad: tests of the view op family -- metadata of views of views (storage offsets), symbolic
// sizes, the in-place metadata mutations, errors, and the registry links. Single-op layouts are
// compared with libtorch by the sweep (tests/data/op_samples/views.txt).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "aotgrad/ops/meta_util.h"
#include "aotgrad/ops/registry.h"
#include "infer_util.h"

namespace aotgrad {
namespace {

using testing::HasSubstr;
using testing_util::infer;

TEST(ViewOps, ViewsOfViewsAccumulateStorageOffsets) {
  EXPECT_EQ(
      infer("x: \"f32[10, 8]\"",
            "a = torch.ops.aten.slice.Tensor(x, 0, 2, 8); y = torch.ops.aten.select.int(a, 1, 3)"),
      "f32[6][8]cpu @19");
  EXPECT_EQ(infer("x: \"f32[10, 8]\"",
                  "a = torch.ops.aten.slice.Tensor(x, 1, 1, 7, 2); "
                  "y = torch.ops.aten.slice.Tensor(a, 0, -3)"),
            "f32[3, 3][8, 2]cpu @57");
  // A view keeps the base's offset; as_strided without an offset keeps it too.
  EXPECT_EQ(
      infer("x: \"f32[10, 8]\"",
            "a = torch.ops.aten.select.int(x, 0, 2); y = torch.ops.aten.view.default(a, [2, 4])"),
      "f32[2, 4][4, 1]cpu @16");
  EXPECT_EQ(infer("x: \"f32[10, 8]\"",
                  "a = torch.ops.aten.select.int(x, 0, 2); "
                  "y = torch.ops.aten.as_strided.default(a, [2], [3])"),
            "f32[2][3]cpu @16");
  EXPECT_EQ(infer("x: \"f32[10, 8]\"",
                  "a = torch.ops.aten.select.int(x, 0, 2); "
                  "y = torch.ops.aten.as_strided.default(a, [2], [3], 1)"),
            "f32[2][3]cpu @1");
  // diagonal with a negative offset moves down dim1.
  EXPECT_EQ(infer("x: \"f32[10, 8]\"",
                  "a = torch.ops.aten.slice.Tensor(x, 0, 1); "
                  "y = torch.ops.aten.diagonal.default(a, -2)"),
            "f32[7][9]cpu @24");
  // An empty diagonal leaves the offset alone.
  EXPECT_EQ(infer("x: \"f32[3, 3]\"", "y = torch.ops.aten.diagonal.default(x, 5)"), "f32[0][4]cpu");
}

TEST(ViewOps, SplitAndUnbindReturnListsOfViews) {
  EXPECT_EQ(infer("x: \"f32[10, 4]\"", "y = torch.ops.aten.split.Tensor(x, 4)"),
            "[f32[4, 4][4, 1]cpu, f32[4, 4][4, 1]cpu @16, f32[2, 4][4, 1]cpu @32]");
  EXPECT_EQ(infer("x: \"f32[10, 4]\"", "y = torch.ops.aten.split_with_sizes.default(x, [1, 3], 1)"),
            "[f32[10, 1][4, 1]cpu, f32[10, 3][4, 1]cpu @1]");
  EXPECT_EQ(infer("x: \"f32[2, 3]\"", "y = torch.ops.aten.unbind.int(x, -1)"),
            "[f32[2][3]cpu, f32[2][3]cpu @1, f32[2][3]cpu @2]");
  EXPECT_THAT(infer("x: \"f32[10, 4]\"", "y = torch.ops.aten.split_with_sizes.default(x, [3, 3])"),
              HasSubstr("split_with_sizes expects split_sizes to sum exactly to 10"));
}

TEST(ViewOps, SymbolicSizes) {
  EXPECT_EQ(infer("x: \"f32[s0, 4]\"", "y = torch.ops.aten.view.default(x, [-1])"),
            "f32[4*s0][1]cpu");
  EXPECT_EQ(infer("x: \"f32[s0, 4]\"",
                  "s = torch.ops.aten.sym_size.int(x, 0); "
                  "y = torch.ops.aten.view.default(x, [s, 2, 2])"),
            "f32[s0, 2, 2][4, 2, 1]cpu");
  EXPECT_EQ(infer("x: \"f32[4, s0][1, 4]\"",
                  "s = torch.ops.aten.sym_size.int(x, 1); "
                  "y = torch.ops.aten.view.default(x, [2, 2, s])"),
            "f32[2, 2, s0][2, 1, 4]cpu");
  EXPECT_THAT(infer("x: \"f32[4, s0][1, 4]\"", "y = torch.ops.aten.view.default(x, [-1])"),
              HasSubstr("Use .reshape(...) instead"));
  EXPECT_EQ(infer("x: \"f32[s0, 4]\"", "y = torch.ops.aten.t.default(x)"), "f32[4, s0][1, 4]cpu");
  EXPECT_EQ(infer("x: \"f32[s0, 1]\"",
                  "s = torch.ops.aten.sym_size.int(x, 0); "
                  "y = torch.ops.aten.expand.default(x, [2, s, 5])"),
            "f32[2, s0, 5][0, 1, 0]cpu");
  EXPECT_EQ(infer("x: \"f32[s0, 4]\"", "y = torch.ops.aten.unsqueeze.default(x, 1)"),
            "f32[s0, 1, 4][4, 4, 1]cpu");
  EXPECT_EQ(infer("x: \"f32[s0, 4]\"", "y = torch.ops.aten.slice.Tensor(x, 0, 1)"),
            "f32[s0 - 1, 4][4, 1]cpu @4");
  EXPECT_EQ(infer("x: \"f32[4, s0]\"", "y = torch.ops.aten.select.int(x, 1, -1)"),
            "f32[4][s0]cpu @s0 - 1");
}

TEST(ViewOps, InplaceMetadataMutationsReturnTheMutatedSelf) {
  EXPECT_EQ(infer("x: \"f32[4, 6]\"", "y = torch.ops.aten.t_.default(x)"), "f32[6, 4][1, 6]cpu");
  EXPECT_EQ(infer("x: \"f32[4, 6]\"", "y = torch.ops.aten.unsqueeze_.default(x, 0)"),
            "f32[1, 4, 6][24, 6, 1]cpu");
  EXPECT_EQ(infer("x: \"f32[4, 1]\"", "y = torch.ops.aten.squeeze_.dim(x, -1)"), "f32[4][1]cpu");
  EXPECT_EQ(infer("x: \"f32[4, 6]\"", "y = torch.ops.aten.as_strided_.default(x, [2], [7], 3)"),
            "f32[2][7]cpu @3");
  const OpTable& ops = aten_ops();
  for (const char* name :
       {"t_", "transpose_", "unsqueeze_", "squeeze_.dim", "squeeze_", "as_strided_"}) {
    const OpDef& op = ops.get(name);
    EXPECT_TRUE(op.has_tag(kView) && op.has_tag(kInplace)) << name;
    EXPECT_EQ(op.mutated_args(), std::vector<int>{0}) << name;
    EXPECT_FALSE(op.functional_variant.empty()) << name;
  }
  EXPECT_EQ(ops.get("t_").functional_variant, "aten::t");
}

TEST(ViewOps, Errors) {
  EXPECT_THAT(infer("x: \"f32[4, 6]\"", "y = torch.ops.aten.view.default(x, [5, 5])"),
              HasSubstr("shape '[5, 5]' is invalid for input of size 24"));
  EXPECT_THAT(infer("x: \"f32[4, 6][1, 4]\"", "y = torch.ops.aten.view.default(x, [24])"),
              HasSubstr("Use .reshape(...) instead"));
  EXPECT_THAT(infer("x: \"f32[3, 2]\"", "y = torch.ops.aten.expand.default(x, [3, 4])"),
              HasSubstr("The expanded size of the tensor (4) must match the existing size (2)"));
  EXPECT_THAT(infer("x: \"f32[2, 3, 4]\"", "y = torch.ops.aten.t.default(x)"),
              HasSubstr("t() expects a tensor with <= 2 dimensions, but self is 3D"));
  EXPECT_THAT(infer("x: \"f32[2, 3]\"", "y = torch.ops.aten.select.int(x, 1, 3)"),
              HasSubstr("select(): index 3 out of range for tensor of size [2, 3] at dimension 1"));
  EXPECT_THAT(infer("x: \"f32[]\"", "y = torch.ops.aten.slice.Tensor(x)"),
              HasSubstr("slice() cannot be applied to a 0-dim tensor."));
  EXPECT_THAT(infer("x: \"f32[2, 3]\"", "y = torch.ops.aten.permute.default(x, [1, 1])"),
              HasSubstr("duplicate dims"));
  EXPECT_THAT(infer("x: \"f32[2, 3]\"", "y = torch.ops.aten.unsqueeze.default(x, 3)"),
              HasSubstr("dimension out of range (expected to be in range of [-3, 2], but got 3)"));
}

TEST(ViewOps, ViewAndScatterLinks) {
  const OpTable& ops = aten_ops();
  EXPECT_EQ(ops.get("slice.Tensor").scatter_inverse, "aten::slice_scatter");
  EXPECT_EQ(ops.get("slice_scatter").view_of, "aten::slice.Tensor");
  EXPECT_EQ(ops.get("select_scatter").view_of, "aten::select.int");
  EXPECT_EQ(ops.get("as_strided_scatter").view_of, "aten::as_strided");
  EXPECT_EQ(ops.get("diagonal_scatter").view_of, "aten::diagonal");
  for (const char* name :
       {"view", "t", "transpose.int", "permute", "expand", "unsqueeze", "squeeze.dim", "squeeze",
        "slice.Tensor", "select.int", "split.Tensor", "split_with_sizes", "unbind.int",
        "as_strided", "alias", "detach", "_reshape_alias", "diagonal", "view_as"}) {
    const OpDef& op = ops.get(name);
    EXPECT_TRUE(op.has_tag(kView)) << name;
    EXPECT_EQ(op.non_differentiable, std::string(name) == "detach") << name;  // [False] output
    EXPECT_EQ(op.return_alias_of(0), 0) << name;
  }
  // _unsafe_view has view strides but a fresh result.
  EXPECT_FALSE(ops.get("_unsafe_view").has_tag(kView));
  EXPECT_EQ(ops.get("_unsafe_view").return_alias_of(0), -1);
}

// The view geometry helpers shared with other families.
TEST(ViewOps, ComputeViewStridesOfZeroDimAndEmptyTensors) {
  TensorMeta scalar = make_tensor_meta(ScalarType::Float32, {});
  auto s = meta::compute_view_strides(scalar, {1, 1});
  ASSERT_TRUE(s);
  EXPECT_EQ(to_string(*s), "[1, 1]");
  TensorMeta empty = make_tensor_meta(ScalarType::Float32, {0, 3});
  empty.strides = {1, 7};
  EXPECT_EQ(to_string(*meta::compute_view_strides(empty, {0, 3})), "[1, 7]");
  EXPECT_EQ(to_string(*meta::compute_view_strides(empty, {3, 0, 2})), "[2, 2, 1]");
}

}  // namespace
}  // namespace aotgrad
