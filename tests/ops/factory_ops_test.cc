// aotgrad: tests of the factory and random op families -- dtype inference (arange, full),
// lengths, layouts, argument checks and tags. Layouts are also compared with libtorch by the sweep
// (tests/data/op_samples/factories.txt).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "aotgrad/ops/registry.h"
#include "infer_util.h"

namespace aotgrad {
namespace {

using testing::HasSubstr;
using testing_util::infer;

// A factory call with no tensor input.
std::string call(const std::string& c) { return infer("x: \"f32[1]\"", "y = torch.ops.aten." + c); }

TEST(FactoryOps, ArangeInfersItsDtypeAndLength) {
  EXPECT_EQ(call("arange.default(5)"), "i64[5][1]cpu");
  EXPECT_EQ(call("arange.default(5.5)"), "f32[6][1]cpu");
  EXPECT_EQ(call("arange.start(True, 4)"), "i64[3][1]cpu");
  EXPECT_EQ(call("arange.start_step(0, 1, 0.1)"), "f32[10][1]cpu");
  EXPECT_EQ(call("arange.start_step(10, 0, -3)"), "i64[4][1]cpu");
  EXPECT_EQ(call("arange.start_step(0, 10, 3, dtype = torch.float64)"), "f64[4][1]cpu");
  // Integer dtypes truncate the bounds before computing the length in int64.
  EXPECT_EQ(call("arange.default(7.5, dtype = torch.int64)"), "i64[7][1]cpu");
  EXPECT_THAT(call("arange.start_step(0, 5, 0.5, dtype = torch.int64)"),
              HasSubstr("step must be nonzero"));
  EXPECT_THAT(call("arange.start_step(0, 10, -1)"),
              HasSubstr("upper bound and larger bound inconsistent with step sign"));
  EXPECT_THAT(call("arange.default(inf)"), HasSubstr("unsupported range: 0.000000 -> inf"));
  EXPECT_THAT(call("arange.default(5, dtype = torch.bool)"),
              HasSubstr("\"arange_cpu\" not implemented for 'Bool'"));
}

TEST(FactoryOps, FullInfersItsDtypeFromTheFillValue) {
  EXPECT_EQ(call("full.default([2], 7)"), "i64[2][1]cpu");
  EXPECT_EQ(call("full.default([2], 1.5)"), "f32[2][1]cpu");
  EXPECT_EQ(call("full.default([2], False)"), "b8[2][1]cpu");
  EXPECT_EQ(call("full.default([2], 7, dtype = torch.float64)"), "f64[2][1]cpu");
  EXPECT_EQ(call("scalar_tensor.default(7)"), "f32[][]cpu");
  EXPECT_THAT(call("full.default([2], 300, dtype = torch.uint8)"),
              HasSubstr("value cannot be converted to type uint8_t without overflow"));
  EXPECT_EQ(infer("x: \"i64[3]\"", "y = torch.ops.aten.full_like.default(x, 2.5)"), "i64[3][1]cpu");
  EXPECT_EQ(infer("x: \"f64[3]\"", "y = torch.ops.aten.new_full.default(x, [2, 2], 1)"),
            "f64[2, 2][2, 1]cpu");
}

TEST(FactoryOps, SizesStridesAndMemoryFormats) {
  EXPECT_EQ(call("empty.memory_format([2, 3, 4, 5], memory_format = torch.channels_last)"),
            "f32[2, 3, 4, 5][60, 1, 15, 3]cpu");
  // ATen's channels-last strides do not round sizes of 0 up to 1.
  EXPECT_EQ(call("empty.memory_format([2, 0, 4, 5], memory_format = torch.channels_last)"),
            "f32[2, 0, 4, 5][0, 1, 0, 0]cpu");
  EXPECT_EQ(call("empty_strided.default([2, 3], [1, 2], dtype = torch.int64)"),
            "i64[2, 3][1, 2]cpu");
  EXPECT_EQ(
      infer("x: \"f32[s0]\"",
            "s = torch.ops.aten.sym_size.int(x, 0); y = torch.ops.aten.zeros.default([s, 3])"),
      "f32[s0, 3][3, 1]cpu");
  EXPECT_EQ(infer("x: \"f32[4, 3][6, 2]\"", "y = torch.ops.aten.ones_like.default(x)"),
            "f32[4, 3][3, 1]cpu");
  EXPECT_EQ(infer("x: \"f32[4, 6][1, 4]\"",
                  "y = torch.ops.aten.zeros_like.default(x, dtype = torch.bool)"),
            "b8[4, 6][1, 4]cpu");
  EXPECT_EQ(infer("x: \"f32[4, 6][1, 4]\"", "y = torch.ops.aten.new_empty.default(x, [3])"),
            "f32[3][1]cpu");
  EXPECT_THAT(call("empty.memory_format([-1, 3])"),
              HasSubstr("Trying to create tensor with negative dimension -1: [-1, 3]"));
  EXPECT_THAT(call("empty.memory_format([2], memory_format = torch.preserve_format)"),
              HasSubstr("unsupported memory format Preserve"));
  EXPECT_THAT(call("empty_strided.default([2, 3], [1])"),
              HasSubstr("dimensionality of sizes (2) must match dimensionality of strides (1)"));
}

TEST(FactoryOps, RandomOps) {
  EXPECT_EQ(infer("x: \"f32[4, 6][1, 4]\"", "y = torch.ops.aten.rand_like.default(x)"),
            "f32[4, 6][1, 4]cpu");
  // bernoulli.p allocates a contiguous result whatever self's layout.
  EXPECT_EQ(infer("x: \"f32[4, 6][1, 4]\"", "y = torch.ops.aten.bernoulli.p(x, 0.5)"),
            "f32[4, 6][6, 1]cpu");
  EXPECT_EQ(infer("x: \"i64[3][2]\"", "y = torch.ops.aten.bernoulli_.float(x)"), "i64[3][2]cpu");
  EXPECT_THAT(infer("x: \"i64[3]\"", "y = torch.ops.aten.randn_like.default(x)"),
              HasSubstr("\"normal_kernel_cpu\" not implemented for 'Long'"));
  EXPECT_THAT(call("rand.default([2], dtype = torch.bool)"),
              HasSubstr("\"check_uniform_bounds\" not implemented for 'Bool'"));
  EXPECT_THAT(infer("x: \"f32[3]\"", "y = torch.ops.aten.bernoulli.p(x, 1.5)"),
              HasSubstr("bernoulli_ expects p to be in [0, 1], but got p=1.5"));
}

TEST(FactoryOps, TagsAndDifferentiability) {
  const OpTable& ops = aten_ops();
  for (const char* name : {"empty.memory_format",
                           "empty_strided",
                           "zeros",
                           "ones",
                           "full",
                           "scalar_tensor",
                           "arange",
                           "arange.start",
                           "arange.start_step",
                           "empty_like",
                           "zeros_like",
                           "ones_like",
                           "full_like",
                           "new_zeros",
                           "new_ones",
                           "new_empty",
                           "new_full",
                           "new_empty_strided",
                           "rand",
                           "randn",
                           "rand_like",
                           "randn_like"}) {
    EXPECT_TRUE(ops.get(name).has_tag(kFactory)) << name;
    EXPECT_TRUE(ops.get(name).non_differentiable) << name;
  }
  for (const char* name : {"rand", "randn", "rand_like", "randn_like", "bernoulli", "bernoulli.p",
                           "bernoulli_.float"}) {
    EXPECT_TRUE(ops.get(name).has_tag(kRandom | kNondeterministicSeeded)) << name;
    EXPECT_TRUE(ops.get(name).has_tag(kNondeterministicSeeded)) << name;
  }
  EXPECT_EQ(ops.get("bernoulli_.float").functional_variant, "aten::bernoulli.p");
}

}  // namespace
}  // namespace aotgrad
