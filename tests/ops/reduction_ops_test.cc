// aotgrad: tests of the reduction op family's declarations and meta functions (sizes, dtypes,
// contiguous results, symbolic sizes, errors). The libtorch comparison is the sweep's job.
#include <gtest/gtest.h>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/registry.h"
#include "meta_call.h"

namespace aotgrad {
namespace {

// The metadata aotgrad infers for `call` (e.g. "sum.dim_IntList(t0, [1], True)") on placeholders
// t0, t1, ... annotated with `anns`.
TEST(ReductionOps, Declarations) {
  const OpTable& t = aten_ops();
  const OpDef& sum = t.get("sum.dim_IntList");
  EXPECT_EQ(sum.schema.text,
            "aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, "
            "ScalarType? dtype=None) -> Tensor");
  EXPECT_TRUE(sum.has_tag(kReduction));
  EXPECT_TRUE(sum.has_tag(kCore));
  EXPECT_FALSE(t.get("sum.default").has_tag(kCore));
  EXPECT_TRUE(t.get("argmax").non_differentiable);
  EXPECT_TRUE(t.get("argmin").non_differentiable);
  EXPECT_FALSE(t.get("max.dim").non_differentiable);  // differentiable in its values
  EXPECT_EQ(t.get("max.dim").schema.returns.size(), 2u);
  EXPECT_EQ(t.get("max.dim").schema.returns[1].name, "indices");
  for (const char* n :
       {"sum", "sum.dim_IntList", "mean", "mean.dim", "amax", "amin", "max.dim", "min.dim",
        "argmax", "argmin", "var.correction", "var_mean.correction", "std.correction"}) {
    const OpDef* op = t.find(n);
    ASSERT_NE(op, nullptr) << n;
    EXPECT_NE(op->meta, nullptr) << n;
    EXPECT_TRUE(op->has_tag(kReduction)) << n;
  }
}

TEST(ReductionOps, ResultsAreContiguousWhateverTheInputLayout) {
  EXPECT_EQ(ann("sum.dim_IntList(t0, [0], True)", {"f32[4, 5][1, 4]"}), "f32[1, 5][5, 1]cpu");
  EXPECT_EQ(ann("sum.dim_IntList(t0, [1], True)", {"f32[2, 3, 4, 5][60, 1, 15, 3]"}),
            "f32[2, 1, 4, 5][20, 20, 5, 1]cpu");
  EXPECT_EQ(ann("amax(t0, [1, 2])", {"f32[4, 3, 2][1, 8, 4]"}), "f32[4][1]cpu");
  EXPECT_EQ(ann("max.dim(t0, -1, True)", {"f32[4, 3, 2][1, 8, 4]"}),
            "f32[4, 3, 1][3, 1, 1]cpu | i64[4, 3, 1][3, 1, 1]cpu");
  EXPECT_EQ(ann("var_mean.correction(t0, [1], correction=1, keepdim=True)",
                {"f32[2, 3, 4, 5][60, 1, 15, 3]"}),
            "f32[2, 1, 4, 5][20, 20, 5, 1]cpu | f32[2, 1, 4, 5][20, 20, 5, 1]cpu");
}

TEST(ReductionOps, DimsNoneOrEmptyReduceEverything) {
  EXPECT_EQ(ann("sum.dim_IntList(t0, None, True)", {"f32[2, 3, 4]"}), "f32[1, 1, 1][1, 1, 1]cpu");
  EXPECT_EQ(ann("mean.dim(t0, [])", {"f32[2, 3]"}), "f32[][]cpu");
  EXPECT_EQ(ann("amax(t0)", {"f32[2, 3]"}), "f32[][]cpu");
  EXPECT_EQ(ann("argmax(t0, None, True)", {"f32[4, 5]"}), "i64[1, 1][1, 1]cpu");
  EXPECT_EQ(ann("sum.dim_IntList(t0, [0], True)", {"f64[]"}), "f64[][]cpu");
}

TEST(ReductionOps, ResultDtypes) {
  EXPECT_EQ(ann("sum(t0)", {"b8[3, 4]"}), "i64[][]cpu");
  EXPECT_EQ(ann("sum(t0)", {"i32[3, 4]"}), "i64[][]cpu");
  EXPECT_EQ(ann("sum(t0, dtype=torch.int32)", {"i32[3]"}), "i32[][]cpu");
  EXPECT_EQ(ann("sum.dim_IntList(t0, [1], dtype=torch.float64)", {"f32[3, 4]"}), "f64[3][1]cpu");
  EXPECT_EQ(ann("sum(t0)", {"bf16[3]"}), "bf16[][]cpu");
  EXPECT_EQ(ann("mean(t0, dtype=torch.float32)", {"i64[3, 4]"}), "f32[][]cpu");
  EXPECT_EQ(ann("amax(t0, [0])", {"b8[3, 4]"}), "b8[4][1]cpu");
  EXPECT_EQ(ann("argmin(t0, 0)", {"f64[3, 4]"}), "i64[4][1]cpu");
  EXPECT_EQ(ann("var.correction(t0, [0], correction=None)", {"bf16[3, 4]"}), "bf16[4][1]cpu");
}

TEST(ReductionOps, SymbolicSizes) {
  EXPECT_EQ(ann("sum.dim_IntList(t0, [1])", {"f32[s0, 2*s1]"}), "f32[s0][1]cpu");
  EXPECT_EQ(ann("amax(t0, [0], True)", {"f32[s0, s1]"}), "f32[1, s1][s1, 1]cpu");
}

TEST(ReductionOps, Errors) {
  EXPECT_NE(error_of("sum.dim_IntList(t0, [2])", {"f32[3, 4]"}).find("dimension out of range"),
            std::string::npos);
  EXPECT_NE(error_of("sum.dim_IntList(t0, [1, -1])", {"f32[3, 4]"})
                .find("dim 1 appears multiple times in the list of dims"),
            std::string::npos);
  EXPECT_NE(error_of("mean(t0)", {"i64[3]"})
                .find("Input dtype must be either a floating point or complex dtype. Got: Long"),
            std::string::npos);
  EXPECT_NE(error_of("mean(t0, dtype=torch.int64)", {"f32[3]"})
                .find("Optional dtype must be either a floating point or complex dtype"),
            std::string::npos);
  EXPECT_NE(error_of("amax(t0, [0])", {"f32[0, 4]"})
                .find("amax(): Expected reduction dim 0 to have non-zero size."),
            std::string::npos);
  EXPECT_NE(error_of("argmax(t0)", {"f32[0, 4]"}).find("Expected reduction dim to be specified"),
            std::string::npos);
  EXPECT_NE(error_of("argmax(t0)", {"b8[3]"}).find("not implemented for 'Bool'"),
            std::string::npos);
  EXPECT_NE(error_of("var.correction(t0, [0], correction=None)", {"i64[3, 4]"})
                .find("std and var only support floating point and complex dtypes"),
            std::string::npos);
  EXPECT_EQ(error_of("max.dim(t0, 1)", {"f32[0, 4]"}), "");
}

}  // namespace
}  // namespace aotgrad
