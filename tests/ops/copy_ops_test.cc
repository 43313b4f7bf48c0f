// aotgrad: tests of the copy op family -- copy's aliasing of src, cat/stack memory formats, the
// scatter checks, and the registry entries. Single-op layouts are compared with libtorch by the
// sweep (tests/data/op_samples/copies.txt).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "aotgrad/ops/registry.h"
#include "infer_util.h"

namespace aotgrad {
namespace {

using testing::HasSubstr;
using testing_util::infer;

TEST(CopyOps, CopyHasSelfsLayout) {
  // copy() writes src into clone_preserve_strides(self): a fresh tensor of self's layout, never
  // src itself.
  EXPECT_EQ(
      infer("x: \"f32[4, 8]\", z: \"f32[3, 8]\"",
            "a = torch.ops.aten.slice.Tensor(x, 0, 1); y = torch.ops.aten.copy.default(z, a)"),
      "f32[3, 8][8, 1]cpu");
  EXPECT_EQ(
      infer("x: \"f32[4, 8]\", z: \"f64[3, 8]\"",
            "a = torch.ops.aten.slice.Tensor(x, 0, 1); y = torch.ops.aten.copy.default(z, a)"),
      "f64[3, 8][8, 1]cpu");
  EXPECT_EQ(
      infer("z: \"f32[2, 3, 4]\", s: \"f32[3, 4][1, 3]\"", "y = torch.ops.aten.copy.default(z, s)"),
      "f32[2, 3, 4][12, 4, 1]cpu");
  EXPECT_EQ(infer("z: \"f32[4, 3][1, 4]\", s: \"f32[3]\"", "y = torch.ops.aten.copy.default(z, s)"),
            "f32[4, 3][1, 4]cpu");
  // An expanded self (internal overlap) is cloned instead.
  EXPECT_EQ(
      infer("z: \"f32[4, 3][0, 1]\", s: \"f32[4, 3]\"", "y = torch.ops.aten.copy.default(z, s)"),
      "f32[4, 3][3, 1]cpu");
  EXPECT_THAT(infer("z: \"f32[4, 3]\", s: \"f32[4, 4]\"", "y = torch.ops.aten.copy.default(z, s)"),
              HasSubstr("the size of tensor a (3) must match the size of tensor b (4)"));
  EXPECT_THAT(
      infer("z: \"f32[4, 3]\", s: \"f32[2, 4, 3]\"", "y = torch.ops.aten.copy_.default(z, s)"),
      HasSubstr("output with shape [4, 3] doesn't match the broadcast shape [2, 4, 3]"));
  EXPECT_EQ(
      infer("z: \"i64[4, 3][1, 4]\", s: \"f64[3]\"", "y = torch.ops.aten.copy_.default(z, s)"),
      "i64[4, 3][1, 4]cpu");
}

TEST(CopyOps, ClonePreservesDenseStridesAndInfersOthers) {
  EXPECT_EQ(infer("x: \"f32[4, 6][1, 4]\"", "y = torch.ops.aten.clone.default(x)"),
            "f32[4, 6][1, 4]cpu");
  EXPECT_EQ(infer("x: \"f32[4, 3][6, 2]\"", "y = torch.ops.aten.clone.default(x)"),
            "f32[4, 3][3, 1]cpu");
  EXPECT_EQ(infer("x: \"f32[2, 3, 4][0, 1, 3]\"", "y = torch.ops.aten.clone.default(x)"),
            "f32[2, 3, 4][12, 1, 3]cpu");
  // A view's offset is not copied.
  EXPECT_EQ(infer("x: \"f32[4, 6]\"",
                  "a = torch.ops.aten.slice.Tensor(x, 0, 1); y = torch.ops.aten.clone.default(a)"),
            "f32[3, 6][6, 1]cpu");
  EXPECT_EQ(infer("x: \"f32[2, 3, 4, 5]\"",
                  "y = torch.ops.aten._to_copy.default(x, dtype = torch.float16, memory_format = "
                  "torch.channels_last)"),
            "f16[2, 3, 4, 5][60, 1, 15, 3]cpu");
  EXPECT_THAT(infer("x: \"f32[4, 6]\"",
                    "y = torch.ops.aten.clone.default(x, memory_format = torch.channels_last)"),
              HasSubstr("required rank 4 tensor to use channels_last format"));
}

TEST(CopyOps, CatAndStackFollowTheInputsMemoryFormat) {
  const std::string cl = "f32[2, 3, 4, 5][60, 1, 15, 3]";
  EXPECT_EQ(
      infer("a: \"" + cl + "\", b: \"" + cl + "\"", "y = torch.ops.aten.cat.default([a, b], 1)"),
      "f32[2, 6, 4, 5][120, 1, 30, 6]cpu");
  EXPECT_EQ(infer("a: \"" + cl + "\", b: \"f32[2, 3, 4, 5]\"",
                  "y = torch.ops.aten.cat.default([a, b], 1)"),
            "f32[2, 6, 4, 5][120, 20, 5, 1]cpu");
  EXPECT_EQ(
      infer("a: \"" + cl + "\", b: \"" + cl + "\"", "y = torch.ops.aten.stack.default([a, b], 1)"),
      "f32[2, 2, 3, 4, 5][120, 3, 1, 30, 6]cpu");
  // Type promotion, and 1-d empty tensors skipped.
  EXPECT_EQ(infer("a: \"i64[0]\", b: \"f32[2, 3]\", c: \"i64[2, 1]\"",
                  "y = torch.ops.aten.cat.default([a, b, c], -1)"),
            "f32[2, 4][4, 1]cpu");
  EXPECT_THAT(
      infer("a: \"f32[2, 3]\", b: \"f32[2, 4]\"", "y = torch.ops.aten.cat.default([a, b])"),
      HasSubstr("Sizes of tensors must match except in dimension 0. Expected size 3 but got "
                "size 4 for tensor number 1 in the list."));
  EXPECT_THAT(
      infer("a: \"f32[2, 3]\", b: \"f32[2, 4]\"", "y = torch.ops.aten.stack.default([a, b])"),
      HasSubstr("stack expects each tensor to be equal size, but got [2, 3] at entry 0 and "
                "[2, 4] at entry 1"));
  EXPECT_THAT(infer("a: \"f32[]\"", "y = torch.ops.aten.cat.default([a])"),
              HasSubstr("zero-dimensional tensor (at position 0) cannot be concatenated"));
}

TEST(CopyOps, ScattersCloneSelfAndCheckSrc) {
  EXPECT_EQ(infer("x: \"f32[8, 4][1, 8]\", s: \"f32[2, 4]\"",
                  "y = torch.ops.aten.slice_scatter.default(x, s, 0, 2, 4)"),
            "f32[8, 4][1, 8]cpu");
  EXPECT_THAT(
      infer("x: \"f32[8, 4]\", s: \"f32[3, 4]\"",
            "y = torch.ops.aten.slice_scatter.default(x, s, 0, 2, 4)"),
      HasSubstr("expected src to have a size equal to the slice of self. src size = [3, 4], "
                "slice size = [2, 4]"));
  EXPECT_THAT(infer("x: \"f32[8, 4]\", s: \"f32[8]\"",
                    "y = torch.ops.aten.select_scatter.default(x, s, 0, 1)"),
              HasSubstr("slice size = [4]"));
  EXPECT_THAT(
      infer("x: \"f32[4, 6]\", s: \"f32[3, 3]\"",
            "y = torch.ops.aten.as_strided_scatter.default(x, s, [3, 3], [12, 1])"),
      HasSubstr("requiring a storage size of 108 are out of bounds for storage of size 96"));
  const OpTable& ops = aten_ops();
  for (const char* name :
       {"slice_scatter", "select_scatter", "diagonal_scatter", "as_strided_scatter"}) {
    EXPECT_TRUE(ops.get(name).has_tag(kScatter)) << name;
    EXPECT_FALSE(ops.get(name).non_differentiable) << name;
  }
  EXPECT_EQ(ops.get("copy_").functional_variant, "aten::copy");
}

TEST(CopyOps, IndexCopies) {
  EXPECT_EQ(infer("x: \"f32[5, 4][1, 5]\", i: \"i32[6]\"",
                  "y = torch.ops.aten.index_select.default(x, -1, i)"),
            "f32[5, 6][6, 1]cpu");
  EXPECT_EQ(infer("x: \"f32[4, 5][1, 4]\", i: \"i64[4, 2][1, 4]\"",
                  "y = torch.ops.aten.gather.default(x, 1, i)"),
            "f32[4, 2][2, 1]cpu");
  EXPECT_THAT(
      infer("x: \"f32[4, 5]\", i: \"i64[6, 2]\"", "y = torch.ops.aten.gather.default(x, 1, i)"),
      HasSubstr("Size does not match at dimension 0 expected index [6, 2] to be smaller than "
                "self [4, 5] apart from dimension 1"));
  EXPECT_EQ(
      infer("x: \"f32[4, 5]\", i: \"i32[4, 2]\"", "y = torch.ops.aten.gather.default(x, 1, i)"),
      "f32[4, 2][2, 1]cpu");
  EXPECT_THAT(
      infer("x: \"f32[4, 5]\", i: \"i16[4, 2]\"", "y = torch.ops.aten.gather.default(x, 1, i)"),
      HasSubstr("gather(): Expected dtype int32/int64 for index"));
  // An empty index is not checked (ATen's gather_meta).
  EXPECT_EQ(
      infer("x: \"f32[4, 5]\", i: \"u8[4, 0]\"", "y = torch.ops.aten.gather.default(x, 1, i)"),
      "f32[4, 0][1, 1]cpu");
  EXPECT_THAT(infer("x: \"f32[4, 5]\", i: \"i64[2, 2]\"",
                    "y = torch.ops.aten.index_select.default(x, 0, i)"),
              HasSubstr("index_select(): Index is supposed to be a vector"));
}

}  // namespace
}  // namespace aotgrad
