// aotgrad: the op facts the passes read -- written arguments (one meaning for dce, input
// mutations, graph facts and functionalization), storage aliases, each view's inverse as the
// graph it appends, and the facts passes ask instead of testing names (issue 43): FLOPs, scratch,
// communicated bytes, fill values, identity elements and the partitioner's classes.
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

// A fact formula (OpDef::flops, scratch_bytes, communication_bytes) of the call `y` in `call`.
double formula_of(CallFormula OpDef::*fact, const std::string& params, const std::string& call) {
  auto g = parse(params, call);
  const Node* y = g->find("y");
  CallFormula f = y->op()->*fact;
  EXPECT_NE(f, nullptr) << call;
  return f ? f(MetaArgs(*y->op(), y->args()), y->meta()) : -1;
}

TEST(OpFacts, CostFormulasReadTheCall) {
  EXPECT_EQ(formula_of(&OpDef::flops, R"(a: "f32[8, 16]", b: "f32[16, 32]")",
                       "torch.ops.aten.mm.default(a, b)"),
            2 * 8 * 16 * 32);
  EXPECT_EQ(formula_of(&OpDef::flops, R"(c: "f32[32]", a: "f32[8, 16]", b: "f32[16, 32]")",
                       "torch.ops.aten.addmm.default(c, a, b)"),
            2 * 8 * 16 * 32);
  // 2 * output elements (2*4*6*6) * weight elements per output channel (3*3*3).
  EXPECT_EQ(formula_of(&OpDef::flops, R"(x: "f32[2, 3, 8, 8]", w: "f32[4, 3, 3, 3]")",
                       "torch.ops.aten.convolution.default(x, w, None, [1, 1], [0, 0], [1, 1], "
                       "False, [0, 0], 1)"),
            2.0 * (2 * 4 * 6 * 6) * 27);
  EXPECT_EQ(aten_ops().get("aten::convolution").flops_kind, FlopsKind::kConvolution);
  EXPECT_EQ(aten_ops().get("aten::bmm").flops_kind, FlopsKind::kMatmul);
  EXPECT_EQ(aten_ops().get("aten::add.Tensor").flops, nullptr);  // priced by its elements
  // native_batch_norm_backward's buffer of its input's size.
  EXPECT_EQ(formula_of(&OpDef::scratch_bytes,
                       R"(g: "f32[2, 3, 4, 4]", x: "f32[2, 3, 4, 4]", w: "f32[3]", m: "f32[3]", )"
                       R"(v: "f32[3]")",
                       "torch.ops.aten.native_batch_norm_backward.default(g, x, w, None, None, m, "
                       "v, True, 1e-05, [True, True, True])"),
            2 * 3 * 4 * 4 * 4);
  EXPECT_EQ(formula_of(&OpDef::communication_bytes, R"(x: "f32[16]")",
                       "torch.ops._c10d_functional.all_reduce.default(x, 'sum', '0')"),
            2 * 16 * 4);
  EXPECT_EQ(formula_of(&OpDef::communication_bytes, R"(x: "f32[16]")",
                       "torch.ops._c10d_functional.all_gather_into_tensor.default(x, 2, '0')"),
            32 * 4);
}

TEST(OpFacts, FillValuesAndIdentityElements) {
  const OpDef& zeros = aten_ops().get("aten::zeros_like");
  EXPECT_EQ(zeros.fill_value, 0.0);
  EXPECT_EQ(zeros.fill_arg, -1);
  EXPECT_EQ(aten_ops().get("aten::ones").fill_value, 1.0);
  EXPECT_EQ(aten_ops().get("aten::full").fill_arg, 1);      // full(size, fill_value)
  EXPECT_EQ(aten_ops().get("aten::new_full").fill_arg, 2);  // new_full(self, size, fill_value)
  EXPECT_FALSE(aten_ops().get("aten::empty_like").fill_value.has_value());
  EXPECT_TRUE(aten_ops().get("aten::clone").copies_value);
  EXPECT_FALSE(aten_ops().get("aten::neg").copies_value);
  const IdentityElement& mul = *aten_ops().get("aten::mul.Tensor").identity;
  EXPECT_EQ(mul.value, 1);
  EXPECT_TRUE(mul.commutes);
  const IdentityElement& sub = *aten_ops().get("aten::sub.Scalar").identity;
  EXPECT_EQ(sub.value, 0);
  EXPECT_EQ(sub.alpha_arg, 2);
  EXPECT_TRUE(sub.negates);
  EXPECT_FALSE(aten_ops().get("aten::div.Tensor").identity->commutes);  // 1 / x is not x
  EXPECT_FALSE(aten_ops().get("aten::pow.Tensor_Scalar").identity.has_value());
}

TEST(OpFacts, PartitionerClassesAreTags) {
  auto tags = [](const char* op) { return tag_names(aten_ops().get(op).tags); };
  EXPECT_EQ(tags("aten::sum.dim_IntList"), "reduction,core,recomputable");
  EXPECT_EQ(tags("aten::view"), "view,core,view_op");
  EXPECT_EQ(tags("aten::transpose.int"), "view");  // a view, not in PyTorch's view_ops
  EXPECT_EQ(tags("aten::native_layer_norm"), "core,normalization");
  EXPECT_EQ(tags("aten::native_dropout"), "random,core,nondeterministic_seeded");
  // Facts about ops the registry does not declare, for the provider's overloads of them.
  EXPECT_EQ(aten_ops().provided_tags().at("aten::upsample_bilinear2d"), kComputeIntensive);
  EXPECT_EQ(aten_ops().provided_tags().at("aten::triu"), kRecomputable);
}

}  // namespace
}  // namespace aotgrad
