// Tests for functionalization: text in, text out; the seed chapter's printed graphs are exact
// expectations (sections 13.13, 13.23, 13.24).
#include "aotgrad/transforms/functionalize.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "../graph_text.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

FunctionalizeResult run(const std::string& text, bool keep = false, bool rename = true) {
  auto g = parse_graph(text, aten_ops());
  verify(*g);
  FunctionalizeOptions opts;
  opts.keep_input_mutations = keep;
  if (rename) opts.input_name = [](size_t i) { return "arg" + std::to_string(i) + "_1"; };
  FunctionalizeResult r = functionalize(*g, opts);
  verify(*r.graph);
  return r;
}

std::string printed(const Graph& g) { return graph_text(g, /*release_statements=*/true); }

const char* kSgdStep = R"(
def forward(self, p: "f32[4]", g: "f32[4]"):
    add_ = torch.ops.aten.add_.Tensor(p, g, alpha = -0.1)
    mul = torch.ops.aten.mul.Tensor(p, 2)
    sum_1 = torch.ops.aten.sum.default(mul)
    return (sum_1,)
)";

// Section 13.13, keep_inference_input_mutations=False: the new value is an extra output.
TEST(Functionalize, Seed13_13_MutationAsOutput) {
  FunctionalizeResult r = run(kSgdStep);
  EXPECT_EQ(printed(*r.graph), normalized(R"(
def forward(self, arg0_1, arg1_1):
    add = torch.ops.aten.add.Tensor(arg0_1, arg1_1, alpha = -0.1);  arg0_1 = arg1_1 = None
    mul = torch.ops.aten.mul.Tensor(add, 2)
    sum_1 = torch.ops.aten.sum.default(mul);  mul = None
    return (add, sum_1)
)"));
  EXPECT_TRUE(r.meta.inputs[0].mutates_data);
  EXPECT_FALSE(r.meta.inputs[1].mutates_data);
  EXPECT_EQ(r.meta.mutated_inputs_returned, std::vector<int>{0});
}

// Section 13.13, keep_inference_input_mutations=True: a trailing copy_ in the graph.
TEST(Functionalize, Seed13_13_MutationKeptInGraph) {
  FunctionalizeResult r = run(kSgdStep, /*keep=*/true);
  EXPECT_EQ(printed(*r.graph), normalized(R"(
def forward(self, arg0_1, arg1_1):
    add = torch.ops.aten.add.Tensor(arg0_1, arg1_1, alpha = -0.1);  arg1_1 = None
    mul = torch.ops.aten.mul.Tensor(add, 2)
    sum_1 = torch.ops.aten.sum.default(mul);  mul = None
    copy_ = torch.ops.aten.copy_.default(arg0_1, add);  arg0_1 = add = copy_ = None
    return (sum_1,)
)"));
  EXPECT_TRUE(r.meta.inputs[0].mutation_in_graph);
  EXPECT_TRUE(r.meta.mutated_inputs_returned.empty());
}

// Section 13.24: f(t, t) with x.add_(1); return x + y, after the dedupe wrapper merged y into x.
TEST(Functionalize, Seed13_24_DedupedInput) {
  FunctionalizeResult r = run(R"(
def forward(self, x: "f32[4]"):
    add_ = torch.ops.aten.add_.Tensor(x, 1)
    add = torch.ops.aten.add.Tensor(x, x)
    return (add,)
)");
  EXPECT_EQ(printed(*r.graph), normalized(R"(
def forward(self, arg0_1):
    add = torch.ops.aten.add.Tensor(arg0_1, 1);  arg0_1 = None
    add_1 = torch.ops.aten.add.Tensor(add, add)
    return (add, add_1)
)"));
}

// Section 13.23: f(base[:6], base[4:]) after the synthetic-base wrapper made both views of one
// [10] input: as_strided -> mul -> as_strided_scatter -> two as_strided -> add.
TEST(Functionalize, Seed13_23_SyntheticBase) {
  FunctionalizeResult r = run(R"(
def forward(self, base: "f32[10]"):
    x = torch.ops.aten.as_strided.default(base, [6], [1], 0)
    y = torch.ops.aten.as_strided.default(base, [6], [1], 4)
    mul_ = torch.ops.aten.mul_.Tensor(x, 2)
    add = torch.ops.aten.add.Tensor(x, y)
    return (add,)
)");
  std::vector<std::string> ops;
  for (const Node* n : r.graph->nodes())
    if (n->kind() == NodeKind::Call) ops.push_back(n->op()->name);
  EXPECT_EQ(ops, (std::vector<std::string>{"aten::as_strided", "aten::mul.Tensor",
                                           "aten::as_strided_scatter", "aten::as_strided",
                                           "aten::as_strided", "aten::add.Tensor"}));
  EXPECT_EQ(r.graph->placeholders().size(), 1u);
  EXPECT_TRUE(r.meta.inputs[0].mutates_data);
}

TEST(Functionalize, WriteThroughSliceAndSelectBecomesScatter) {
  FunctionalizeResult r = run(R"(
def forward(self, x: "f32[4, 6]"):
    clone = torch.ops.aten.clone.default(x)
    slice_1 = torch.ops.aten.slice.Tensor(clone, 1, 0, 3)
    select = torch.ops.aten.select.int(slice_1, 0, 2)
    fill_ = torch.ops.aten.fill_.Scalar(select, 5.0)
    relu = torch.ops.aten.relu.default(slice_1)
    return (clone, relu)
)",
                              false, false);
  std::string text = printed(*r.graph);
  EXPECT_NE(text.find("torch.ops.aten.fill.Scalar(select, 5.0)"), std::string::npos) << text;
  // As PyTorch's apply_update: the intermediate view is replayed from the base, then the inverses
  // are applied innermost first.
  EXPECT_NE(text.find("slice_2 = torch.ops.aten.slice.Tensor(clone, 1, 0, 3)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("select_scatter.default(slice_2, fill, 0, 2)"), std::string::npos) << text;
  EXPECT_NE(text.find("slice_scatter.default(clone, select_scatter, 1, 0, 3)"), std::string::npos)
      << text;
  // The later read of slice_1 is replayed from the updated base.
  EXPECT_NE(text.find("slice.Tensor(slice_scatter, 1, 0, 3)"), std::string::npos) << text;
  EXPECT_FALSE(r.meta.inputs[0].mutates_data);
}

TEST(Functionalize, MetadataMutationBecomesView) {
  FunctionalizeResult r = run(R"(
def forward(self, x: "f32[2, 3]"):
    t_ = torch.ops.aten.t_.default(x)
    mul = torch.ops.aten.mul.Tensor(x, 2)
    return (mul,)
)",
                              false, false);
  std::string text = printed(*r.graph);
  EXPECT_NE(text.find("t = torch.ops.aten.t.default(x)"), std::string::npos) << text;
  EXPECT_NE(text.find("mul = torch.ops.aten.mul.Tensor(t, 2)"), std::string::npos) << text;
  EXPECT_TRUE(r.meta.inputs[0].mutates_metadata);
  EXPECT_FALSE(r.meta.inputs[0].mutates_data);
  EXPECT_EQ(r.meta.mutated_inputs_returned, std::vector<int>{0});
}

TEST(Functionalize, OutputAliasKinds) {
  FunctionalizeResult r = run(R"(
def forward(self, x: "f32[2, 3]"):
    view = torch.ops.aten.view.default(x, [6])
    relu = torch.ops.aten.relu.default(x)
    return (x, view, relu, None)
)",
                              false, false);
  ASSERT_EQ(r.meta.outputs.size(), 4u);
  EXPECT_EQ(r.meta.outputs[0].kind, OutputKind::kIsInput);
  EXPECT_EQ(r.meta.outputs[1].kind, OutputKind::kAliasOfInput);
  EXPECT_EQ(r.meta.outputs[1].input, 0);
  EXPECT_EQ(r.meta.outputs[2].kind, OutputKind::kFresh);
  EXPECT_EQ(r.meta.outputs[3].kind, OutputKind::kNone);
}

TEST(Functionalize, WriteThroughAViewWithoutInverseIsAnError) {
  // A write into an expanded view is rejected when the graph is built (overlapping memory); a
  // write through a view of an expand of a fresh tensor that does not overlap has no inverse.
  auto g = parse_graph(R"(
def forward(self, x: "f32[1, 3]"):
    clone = torch.ops.aten.clone.default(x)
    expand = torch.ops.aten.expand.default(clone, [1, 3])
    add_ = torch.ops.aten.add_.Tensor(expand, 1)
    return (clone,)
)",
                       aten_ops());
  try {
    functionalize(*g);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("node 'add_'"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("expanded"), std::string::npos) << e.message();
  }
}

// Regressions found by the randomized differential test
// (tests/runtime/functionalize_random_test.cc).

// copy_ gives the destination src's values in a fresh tensor laid out as the destination (PyTorch
// 2.x's copy()); libtorch 1.13's aten::copy would return src itself, laid out as src.
TEST(Functionalize, CopyIntoAnInputIsAFreshTensorLaidOutAsTheInput) {
  FunctionalizeResult r = run(R"(
def forward(self, x: "f32[3, 4]", y: "f32[4, 3]"):
    t = torch.ops.aten.t.default(y)
    copy_ = torch.ops.aten.copy_.default(x, t)
    return (x,)
)");
  EXPECT_EQ(printed(*r.graph), normalized(R"(
def forward(self, arg0_1, arg1_1):
    t = torch.ops.aten.t.default(arg1_1);  arg1_1 = None
    slice_scatter = torch.ops.aten.slice_scatter.default(arg0_1, t);  arg0_1 = t = None
    return (slice_scatter, slice_scatter)
)"));
  EXPECT_EQ(r.graph->find("slice_scatter")->tensor_meta().annotation(), "f32[3, 4][4, 1]cpu");
}

TEST(Functionalize, CopyCastsAndBroadcastsItsSource) {
  FunctionalizeResult r = run(R"(
def forward(self, x: "f64[2, 3]", y: "f32[3]"):
    copy_ = torch.ops.aten.copy_.default(x, y)
    return (x,)
)");
  EXPECT_EQ(printed(*r.graph), normalized(R"(
def forward(self, arg0_1, arg1_1):
    _to_copy = torch.ops.aten._to_copy.default(arg1_1, dtype = torch.float64);  arg1_1 = None
    expand = torch.ops.aten.expand.default(_to_copy, [2, 3]);  _to_copy = None
    slice_scatter = torch.ops.aten.slice_scatter.default(arg0_1, expand);  arg0_1 = expand = None
    return (slice_scatter, slice_scatter)
)"));
}

// mul_ of an f32 tensor by an f64 one stores f32: the promoted functional result is cast back.
TEST(Functionalize, InPlaceOpKeepsItsArgumentsDtype) {
  FunctionalizeResult r = run(R"(
def forward(self, x: "f32[3]", y: "f64[3]"):
    mul_ = torch.ops.aten.mul_.Tensor(x, y)
    return (mul_,)
)");
  EXPECT_EQ(printed(*r.graph), normalized(R"(
def forward(self, arg0_1, arg1_1):
    mul = torch.ops.aten.mul.Tensor(arg0_1, arg1_1);  arg0_1 = arg1_1 = None
    _to_copy = torch.ops.aten._to_copy.default(mul, dtype = torch.float32);  mul = None
    return (_to_copy, _to_copy)
)"));
}

// An element of a split taken after its storage was written sees the write.
TEST(Functionalize, GetitemAfterAWriteIsReplayedFromTheNewBase) {
  FunctionalizeResult r = run(R"(
def forward(self, x: "f32[4]"):
    clone = torch.ops.aten.clone.default(x)
    split = torch.ops.aten.split.Tensor(clone, 2)
    add_ = torch.ops.aten.add_.Tensor(clone, 1)
    getitem = split[0]
    return (getitem,)
)");
  EXPECT_EQ(printed(*r.graph), normalized(R"(
def forward(self, arg0_1):
    clone = torch.ops.aten.clone.default(arg0_1);  arg0_1 = None
    add = torch.ops.aten.add.Tensor(clone, 1);  clone = None
    split_1 = torch.ops.aten.split.Tensor(add, 2);  add = None
    getitem_1 = split_1[0];  split_1 = None
    return (getitem_1,)
)"));
}

// unbind[0] twice is one tensor: a metadata mutation through one is seen through the other.
TEST(Functionalize, RepeatedGetitemIsOneTensor) {
  FunctionalizeResult r = run(R"(
def forward(self, x: "f32[2, 3]"):
    unbind = torch.ops.aten.unbind.int(x)
    getitem = unbind[0]
    getitem_1 = unbind[0]
    unsqueeze_ = torch.ops.aten.unsqueeze_.default(getitem, 0)
    mul = torch.ops.aten.mul.Tensor(getitem_1, 2)
    return (mul,)
)");
  EXPECT_EQ(printed(*r.graph), normalized(R"(
def forward(self, arg0_1):
    unbind = torch.ops.aten.unbind.int(arg0_1);  arg0_1 = None
    getitem = unbind[0];  unbind = None
    unsqueeze = torch.ops.aten.unsqueeze.default(getitem, 0);  getitem = None
    mul = torch.ops.aten.mul.Tensor(unsqueeze, 2);  unsqueeze = None
    return (mul,)
)"));
}

// as_strided's offset is absolute in the storage, whatever view it is taken of: the write goes
// into the storage's base at that offset. The in-place op reads the old value from the base too,
// as eager's backward of it does (CopySlices), not through the slice (PyTorch's graph reads
// as_strided(slice_1)).
TEST(Functionalize, WriteThroughAsStridedOfAnOffsetViewScattersIntoTheBase) {
  FunctionalizeResult r = run(R"(
def forward(self, x: "f32[8]"):
    slice_1 = torch.ops.aten.slice.Tensor(x, 0, 2, 8)
    as_strided = torch.ops.aten.as_strided.default(slice_1, [2], [1], 5)
    fill_ = torch.ops.aten.fill_.Scalar(as_strided, 1.0)
    return (x,)
)");
  EXPECT_EQ(printed(*r.graph), normalized(R"(
def forward(self, arg0_1):
    as_strided_1 = torch.ops.aten.as_strided.default(arg0_1, [2], [1], 5)
    fill = torch.ops.aten.fill.Scalar(as_strided_1, 1.0);  as_strided_1 = None
    as_strided_scatter = torch.ops.aten.as_strided_scatter.default(arg0_1, fill, [2], [1], 5);  arg0_1 = fill = None
    return (as_strided_scatter, as_strided_scatter)
)"));
}

// The runtime restrides the input, then copies the new value in: with as_strided_ that would drop
// writes outside the final view, so it is refused.
TEST(Functionalize, AsStridedAndDataMutationOfAnInputIsAnError) {
  auto g = parse_graph(R"(
def forward(self, x: "f32[6]"):
    mul_ = torch.ops.aten.mul_.Scalar(x, 2)
    as_strided_ = torch.ops.aten.as_strided_.default(x, [2], [1], 1)
    return (as_strided_,)
)",
                       aten_ops());
  try {
    functionalize(*g);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("as_strided_"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("not supported"), std::string::npos) << e.message();
  }
}

// Views of written inputs that eager leaves behind are replayed from the inputs in input_views, so
// the runtime can rebuild them on the caller's tensors with eager's strides.
TEST(Functionalize, InputViewsReplayEagersViewsOfInputs) {
  FunctionalizeResult r = run(R"(
def forward(self, x: "f32[2, 3]", y: "f32[2, 3]"):
    add_ = torch.ops.aten.add_.Tensor(x, 1)
    t = torch.ops.aten.t.default(x)
    unsqueeze_ = torch.ops.aten.unsqueeze_.default(y, 0)
    return (t, y)
)");
  EXPECT_EQ(printed(*r.input_views), normalized(R"(
def forward(self, arg0_1, arg1_1):
    unsqueeze = torch.ops.aten.unsqueeze.default(arg1_1, 0);  arg1_1 = None
    t = torch.ops.aten.t.default(arg0_1);  arg0_1 = None
    return (unsqueeze, t)
)"));
  EXPECT_EQ(r.meta.inputs[0].view, -1);
  EXPECT_EQ(r.meta.inputs[1].view, 0);
  EXPECT_EQ(r.meta.outputs[0].view, 1);
  EXPECT_EQ(r.meta.outputs[1].view, -1);  // y itself
}

// The functional nodes made for a node tagged for recomputation carry its tag (§13.25).
TEST(Functionalize, FunctionalNodesInheritTheRecomputePolicy) {
  auto g = parse_graph(R"(
def forward(self, x: "f32[4]"):
    native_dropout = torch.ops.aten.native_dropout.default(x, 0.5, True)
    getitem = native_dropout[0]
    clone = torch.ops.aten.clone.default(getitem)
    mul_ = torch.ops.aten.mul_.Tensor(clone, 2)
    relu = torch.ops.aten.relu.default(mul_)
    return (relu,)
)",
                       aten_ops());
  g->find("native_dropout")->info().recompute = RecomputePolicy::MustRecompute;
  g->find("mul_")->info().recompute = RecomputePolicy::PreferRecompute;
  FunctionalizeResult r = functionalize(*g);
  verify(*r.graph);
  std::map<std::string, RecomputePolicy> by_op;
  for (const Node* n : r.graph->nodes())
    if (n->kind() == NodeKind::Call) by_op[n->op()->name] = n->info().recompute;
  EXPECT_EQ(by_op.at("aten::native_dropout"), RecomputePolicy::MustRecompute);
  EXPECT_EQ(by_op.at("aten::clone"), RecomputePolicy::None);
  EXPECT_EQ(by_op.at("aten::mul.Tensor"),
            RecomputePolicy::PreferRecompute);  // mul_'s functional form
  EXPECT_EQ(by_op.at("aten::relu"), RecomputePolicy::None);
}

// §13.31 effect tokens: the graph PyTorch's aot_export_module prints for a module that prints
// "moo", adds, prints "moo" (test_with_effects.py's test_print): the token is the first input
// (arg0_1), each _print is with_effects on the current token, the final token the first output;
// the None getitem of an op without results takes its name (getitem_1), so the second token is
// getitem_2.
TEST(Functionalize, Seed13_31_EffectTokensThreadThePrints) {
  FunctionalizeResult r = run(R"(
def forward(self, x: "f32[3]"):
    _print = torch.ops.aten._print.default('moo')
    add = torch.ops.aten.add.Tensor(x, x)
    _print_1 = torch.ops.aten._print.default('moo')
    return (add,)
)");
  EXPECT_EQ(printed(*r.graph), normalized(R"(
def forward(self, arg0_1, arg1_1):
    with_effects = torch.ops.higher_order.with_effects(arg0_1, torch.ops.aten._print.default, 'moo');  arg0_1 = None
    getitem = with_effects[0];  with_effects = None
    add = torch.ops.aten.add.Tensor(arg1_1, arg1_1);  arg1_1 = None
    with_effects_1 = torch.ops.higher_order.with_effects(getitem, torch.ops.aten._print.default, 'moo');  getitem = None
    getitem_2 = with_effects_1[0];  with_effects_1 = None
    return (getitem_2, add)
)"));
  EXPECT_EQ(r.meta.num_tokens, 1);
  EXPECT_EQ(r.meta.inputs.size(), 1u);  // the token is not a user input
  EXPECT_EQ(r.meta.outputs.size(), 1u);
  EXPECT_EQ(r.graph->placeholders()[0]->meta().annotation(), "f32[0][1]cpu");
  // The text parses back to the same graph.
  PrintOptions p;
  std::string text = print_graph(*r.graph, p);
  EXPECT_EQ(print_graph(*parse_graph(text, aten_ops()), p), text);
  // No effectful call: no token.
  EXPECT_EQ(run(kSgdStep).meta.num_tokens, 0);
}

// test_print_with_buffer_mutations: the final token comes before the mutated input's new value.
TEST(Functionalize, EffectTokenComesBeforeMutatedInputs) {
  FunctionalizeResult r = run(R"(
def forward(self, buf: "f32[3]", x: "f32[3]"):
    _print = torch.ops.aten._print.default('moo')
    add = torch.ops.aten.add.Tensor(x, x)
    add_ = torch.ops.aten.add_.Tensor(buf, add)
    add_1 = torch.ops.aten.add.Tensor(buf, x)
    _print_1 = torch.ops.aten._print.default('moo')
    return (add_1,)
)");
  EXPECT_EQ(printed(*r.graph), normalized(R"(
def forward(self, arg0_1, arg1_1, arg2_1):
    with_effects = torch.ops.higher_order.with_effects(arg0_1, torch.ops.aten._print.default, 'moo');  arg0_1 = None
    getitem = with_effects[0];  with_effects = None
    add = torch.ops.aten.add.Tensor(arg2_1, arg2_1)
    add_1 = torch.ops.aten.add.Tensor(arg1_1, add);  arg1_1 = add = None
    add_2 = torch.ops.aten.add.Tensor(add_1, arg2_1);  arg2_1 = None
    with_effects_1 = torch.ops.higher_order.with_effects(getitem, torch.ops.aten._print.default, 'moo');  getitem = None
    getitem_2 = with_effects_1[0];  with_effects_1 = None
    return (getitem_2, add_1, add_2)
)"));
  EXPECT_EQ(r.meta.mutated_inputs_returned, std::vector<int>{0});
  EXPECT_TRUE(r.meta.inputs[0].mutates_data);
}

// Without input names the token is `token`; a graph already threaded is left as it is.
TEST(Functionalize, TokenNameAndAlreadyThreadedGraphs) {
  FunctionalizeResult r = run(R"(
def forward(self, x: "f32[3]"):
    _print = torch.ops.aten._print.default('a')
    return (x,)
)",
                              false, /*rename=*/false);
  EXPECT_EQ(r.graph->placeholders()[0]->name(), "token");
  FunctionalizeResult again = run(print_graph(*r.graph), false, false);
  EXPECT_EQ(again.meta.num_tokens, 0);
  EXPECT_EQ(printed(*again.graph), printed(*r.graph));
}

}  // namespace
}  // namespace aotgrad
