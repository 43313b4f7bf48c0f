// aotgrad: the op facts the passes read -- written arguments (one meaning for dce, input
// mutations, graph facts and functionalization), storage aliases, and each view's inverse as
// the graph it appends.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ops/functionalization.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

using testing::HasSubstr;

std::unique_ptr<Graph> parse(const std::string& params, const std::string& call) {
  return parse_graph("def forward(self, " + params + "):\n    y = " + call + "\n    return y\n",
                     aten_ops());
}

std::vector<int> written(const std::string& params, const std::string& call) {
  auto g = parse(params, call);
  const Node* y = g->find("y");
  return y->op()->written_args(y->args());
}

const char* kBatchNormParams =
    R"(x: "f32[2, 3]", w: "f32[3]", b: "f32[3]", rm: "f32[3]", rv: "f32[3]")";

TEST(OpFacts, WrittenArgsAreDeclaredThenUndeclaredMutations) {
  EXPECT_EQ(written(R"(x: "f32[3]", z: "f32[3]")", "torch.ops.aten.add_.Tensor(x, z)"),
            (std::vector<int>{0}));
  EXPECT_EQ(written(R"(x: "f32[3]", z: "f32[3]")", "torch.ops.aten.copy_.default(x, z)"),
            (std::vector<int>{0}));
  EXPECT_EQ(written(R"(x: "f32[3]", z: "f32[3]")", "torch.ops.aten.add.Tensor(x, z)"),
            (std::vector<int>{}));
  // 1.13's native_batch_norm writes running_mean and running_var in training mode only, and only
  // those it is given.
  EXPECT_EQ(written(kBatchNormParams,
                    "torch.ops.aten.native_batch_norm.default(x, w, b, rm, rv, True, 0.1, 1e-05)"),
            (std::vector<int>{3, 4}));
  EXPECT_EQ(written(kBatchNormParams,
                    "torch.ops.aten.native_batch_norm.default(x, w, b, rm, rv, False, 0.1, 1e-05)"),
            (std::vector<int>{}));
  EXPECT_EQ(
      written(kBatchNormParams,
              "torch.ops.aten.native_batch_norm.default(x, w, b, None, None, True, 0.1, 1e-05)"),
      (std::vector<int>{}));
  // The composite batch_norm declares the same fact.
  EXPECT_EQ(written(kBatchNormParams,
                    "torch.ops.aten.batch_norm.default(x, w, b, rm, rv, True, 0.1, 1e-05, False)"),
            (std::vector<int>{3, 4}));
}

TEST(OpFacts, UndeclaredMutationWithoutAConstantConditionApplies) {
  // A condition that is not the constant False may be true: the mutation is kept.
  const OpDef& op = aten_ops().get("aten::native_batch_norm");
  auto g = parse(kBatchNormParams, "torch.ops.aten.add.Tensor(x, x)");
  std::vector<Arg> args;
  for (const char* n : {"x", "w", "b", "rm", "rv"}) args.push_back(Arg(g->find(n)));
  args.push_back(Arg(g->find("y")));  // a value standing for a symbolic bool
  args.push_back(Arg::of_float(0.1));
  args.push_back(Arg::of_float(1e-5));
  EXPECT_EQ(op.written_args(args), (std::vector<int>{3, 4}));
}

TEST(OpFacts, StorageAliases) {
  const OpDef& unsafe_view = aten_ops().get("aten::_unsafe_view");
  EXPECT_EQ(unsafe_view.return_alias_of(0), -1);  // the schema says fresh
  EXPECT_EQ(unsafe_view.storage_alias_of(0), 0);  // ATen shares self's storage
  EXPECT_EQ(aten_ops().get("aten::view").storage_alias_of(0), 0);
  EXPECT_EQ(aten_ops().get("aten::add.Tensor").storage_alias_of(0), -1);
  EXPECT_TRUE(aten_ops().get("aten::as_strided").absolute_view);
  EXPECT_FALSE(aten_ops().get("aten::slice.Tensor").absolute_view);
}

// The calls `inverse` appends to undo the view `y = <view>` of x given its new value v, as text.
std::string inverse_text(const std::string& params, const std::string& view, ViewInverseFn inverse,
                         int64_t element = -1) {
  auto g = parse_graph(
      "def forward(self, " + params + "):\n    y = " + view + "\n    return (x, y, v)\n",
      aten_ops());
  Node* y = g->find("y");
  ViewInverseBuilder b(*g, *y->op(), y->args(), element, g->find("x"), g->find("v"));
  try {
    Node* base = inverse ? inverse(b) : y->op()->view_inverse(b);
    g->set_output(Arg(base));
  } catch (const Error& e) {
    return "error: " + e.message();
  }
  PrintOptions p;
  p.class_header = false;
  p.annotations = false;
  p.release_statements = false;
  std::string text = print_graph(*g, p);
  // The calls after the view.
  size_t at = text.find("    y = ");
  at = text.find('\n', at) + 1;
  return text.substr(at);
}

TEST(OpFacts, ViewInverses) {
  const std::string x46 = R"(x: "f32[4, 6]", )";
  EXPECT_EQ(inverse_text(x46 + R"(v: "f32[6, 4]")", "torch.ops.aten.t.default(x)", nullptr),
            "    t = torch.ops.aten.t.default(v)\n    return t\n");
  EXPECT_EQ(
      inverse_text(x46 + R"(v: "f32[6, 4]")", "torch.ops.aten.transpose.int(x, 0, 1)", nullptr),
      "    transpose = torch.ops.aten.transpose.int(v, 0, 1)\n    return transpose\n");
  EXPECT_EQ(inverse_text(R"(x: "f32[2, 3, 4]", v: "f32[4, 2, 3]")",
                         "torch.ops.aten.permute.default(x, [2, 0, 1])", nullptr),
            "    permute = torch.ops.aten.permute.default(v, [1, 2, 0])\n    return permute\n");
  EXPECT_EQ(inverse_text(x46 + R"(v: "f32[24]")", "torch.ops.aten.view.default(x, [24])", nullptr),
            "    view = torch.ops.aten.view.default(v, [4, 6])\n    return view\n");
  EXPECT_EQ(
      inverse_text(x46 + R"(v: "f32[1, 4, 6]")", "torch.ops.aten.unsqueeze.default(x, 0)", nullptr),
      "    view = torch.ops.aten.view.default(v, [4, 6])\n    return view\n");
  EXPECT_EQ(inverse_text(x46 + R"(v: "f32[4, 6]")", "torch.ops.aten.alias.default(x)", nullptr),
            "    return v\n");
  EXPECT_EQ(
      inverse_text(x46 + R"(v: "f32[4, 2]")", "torch.ops.aten.slice.Tensor(x, 1, 2, 4)", nullptr),
      "    slice_scatter = torch.ops.aten.slice_scatter.default(x, v, 1, 2, 4)\n"
      "    return slice_scatter\n");
  EXPECT_EQ(inverse_text(x46 + R"(v: "f32[4, 2]")", "torch.ops.aten.narrow.default(x, 1, -4, 2)",
                         nullptr),
            "    slice_scatter = torch.ops.aten.slice_scatter.default(x, v, 1, 2, 4)\n"
            "    return slice_scatter\n");
  EXPECT_EQ(inverse_text(x46 + R"(v: "f32[6]")", "torch.ops.aten.select.int(x, 0, 3)", nullptr),
            "    select_scatter = torch.ops.aten.select_scatter.default(x, v, 0, 3)\n"
            "    return select_scatter\n");
  EXPECT_EQ(inverse_text(x46 + R"(v: "f32[4]")", "torch.ops.aten.diagonal.default(x, 1)", nullptr),
            "    diagonal_scatter = torch.ops.aten.diagonal_scatter.default(x, v, 1)\n"
            "    return diagonal_scatter\n");
  EXPECT_EQ(inverse_text(x46 + R"(v: "f32[2, 2]")",
                         "torch.ops.aten.as_strided.default(x, [2, 2], [6, 1], 7)", nullptr),
            "    as_strided_scatter = torch.ops.aten.as_strided_scatter.default(x, v, [2, 2], "
            "[6, 1], 7)\n    return as_strided_scatter\n");
  // List views: the element written.
  EXPECT_EQ(
      inverse_text(x46 + R"(v: "f32[4, 2]")", "torch.ops.aten.split.Tensor(x, 4, 1)", nullptr, 1),
      "    slice_scatter = torch.ops.aten.slice_scatter.default(x, v, 1, 4, 6)\n"
      "    return slice_scatter\n");
  EXPECT_EQ(inverse_text(x46 + R"(v: "f32[4, 3]")",
                         "torch.ops.aten.split_with_sizes.default(x, [1, 3, 2], 1)", nullptr, 1),
            "    slice_scatter = torch.ops.aten.slice_scatter.default(x, v, 1, 1, 4)\n"
            "    return slice_scatter\n");
  EXPECT_EQ(inverse_text(x46 + R"(v: "f32[6]")", "torch.ops.aten.unbind.int(x)", nullptr, 2),
            "    select_scatter = torch.ops.aten.select_scatter.default(x, v, 0, 2)\n"
            "    return select_scatter\n");
  EXPECT_THAT(inverse_text(R"(x: "f32[1, 6]", v: "f32[4, 6]")",
                           "torch.ops.aten.expand.default(x, [4, 6])", nullptr),
              HasSubstr("cannot functionalize a write into an expanded view"));
  EXPECT_THAT(inverse_text(R"(x: "f32[s0, 6]", v: "f32[6, s0]")", "torch.ops.aten.t.default(x)",
                           reshape_view_inverse),
              HasSubstr("cannot write through 'aten::t' of a tensor with symbolic sizes"));
}

// The generic inverse an op provider gives the views it derives from schemas: as_strided_scatter
// at the view's geometry relative to the base (checked against the declared inverses on values
// by the runtime tests).
TEST(OpFacts, AsStridedViewInverse) {
  const std::string x46 = R"(x: "f32[4, 6]", )";
  EXPECT_EQ(inverse_text(x46 + R"(v: "f32[6, 4]")", "torch.ops.aten.t.default(x)",
                         as_strided_view_inverse),
            "    as_strided_scatter = torch.ops.aten.as_strided_scatter.default(x, v, [6, 4], "
            "[1, 6], 0)\n    return as_strided_scatter\n");
  EXPECT_EQ(inverse_text(x46 + R"(v: "f32[6]")", "torch.ops.aten.select.int(x, 0, 3)",
                         as_strided_view_inverse),
            "    as_strided_scatter = torch.ops.aten.as_strided_scatter.default(x, v, [6], [1], "
            "18)\n    return as_strided_scatter\n");
  EXPECT_EQ(inverse_text(x46 + R"(v: "f32[4, 2]")", "torch.ops.aten.split.Tensor(x, 4, 1)",
                         as_strided_view_inverse, 1),
            "    as_strided_scatter = torch.ops.aten.as_strided_scatter.default(x, v, [4, 2], "
            "[6, 1], 4)\n    return as_strided_scatter\n");
  // A base whose elements are not dense would be laid out anew by the scatter's clone.
  EXPECT_THAT(inverse_text(R"(x: "f32[4, 6][12, 2]", v: "f32[6, 4]")",
                           "torch.ops.aten.t.default(x)", as_strided_view_inverse),
              HasSubstr("its base's elements are not dense"));
}

}  // namespace
}  // namespace aotgrad
