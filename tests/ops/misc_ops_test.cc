// aotgrad: tests of the misc op family -- sym_size / sym_stride / sym_numel /
// sym_storage_offset (which the libtorch sweep cannot call in 1.13) and lift_fresh.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "aotgrad/ops/registry.h"
#include "infer_util.h"

namespace aotgrad {
namespace {

using testing::HasSubstr;
using testing_util::infer;

TEST(MiscOps, SymIntsOfConcreteTensors) {
  EXPECT_EQ(infer("x: \"f32[4, 6]\"", "y = torch.ops.aten.sym_size.int(x, -1)"), "Sym(6)");
  EXPECT_EQ(infer("x: \"f32[4, 6][1, 4]\"", "y = torch.ops.aten.sym_stride.int(x, 1)"), "Sym(4)");
  EXPECT_EQ(infer("x: \"f32[4, 6]\"", "y = torch.ops.aten.sym_numel.default(x)"), "Sym(24)");
  EXPECT_EQ(infer("x: \"f32[]\"", "y = torch.ops.aten.sym_numel.default(x)"), "Sym(1)");
  EXPECT_EQ(infer("x: \"f32[4, 6]\"",
                  "a = torch.ops.aten.select.int(x, 0, 2); y = "
                  "torch.ops.aten.sym_storage_offset.default(a)"),
            "Sym(12)");
}

TEST(MiscOps, SymIntsOfSymbolicTensors) {
  EXPECT_EQ(infer("x: \"f32[s0, s1]\"", "y = torch.ops.aten.sym_size.int(x, 0)"), "Sym(s0)");
  EXPECT_EQ(infer("x: \"f32[s0, s1, 2]\"", "y = torch.ops.aten.sym_stride.int(x, 0)"), "Sym(2*s1)");
  EXPECT_EQ(infer("x: \"f32[s0, 3]\"", "y = torch.ops.aten.sym_numel.default(x)"), "Sym(3*s0)");
}

TEST(MiscOps, Errors) {
  EXPECT_THAT(infer("x: \"f32[4, 6]\"", "y = torch.ops.aten.sym_size.int(x, 2)"),
              HasSubstr("dimension out of range (expected to be in range of [-2, 1], but got 2)"));
  EXPECT_THAT(infer("x: \"f32[]\"", "y = torch.ops.aten.sym_size.int(x, 0)"),
              HasSubstr("dimension specified as 0 but tensor has no dimensions"));
  EXPECT_THAT(infer("x: \"f32[]\"", "y = torch.ops.aten.sym_stride.int(x, -1)"),
              HasSubstr("dimension specified as -1 but tensor has no dimensions"));
}

TEST(MiscOps, RegistryEntries) {
  const OpTable& ops = aten_ops();
  for (const char* name : {"sym_size.int", "sym_stride.int", "sym_numel", "sym_storage_offset"}) {
    const OpDef& op = ops.get(name);
    EXPECT_TRUE(op.non_differentiable) << name;
    ASSERT_EQ(op.schema.returns.size(), 1u) << name;
    EXPECT_EQ(op.schema.returns[0].type.base, BaseType::SymInt) << name;
  }
  EXPECT_EQ(infer("x: \"f32[4, 6][1, 4]\"", "y = torch.ops.aten.lift_fresh.default(x)"),
            "f32[4, 6][1, 4]cpu");
  EXPECT_EQ(ops.get("lift_fresh").return_alias_of(0), 0);
  EXPECT_EQ(ops.get("lift_fresh_copy").return_alias_of(0), -1);
}

}  // namespace
}  // namespace aotgrad
