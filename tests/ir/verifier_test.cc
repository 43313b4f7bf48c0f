// aotgrad: tests of the graph verifier -- each invariant, broken through the Graph API.
#include "aotgrad/ir/verifier.h"

#include <gtest/gtest.h>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

ValueMeta f32(SymIntVector sizes) {
  return ValueMeta::of(make_tensor_meta(ScalarType::Float32, std::move(sizes)));
}

const OpDef& op(std::string_view name) { return aten_ops().get(name); }

// The message of the Error verify(g) throws ("" when it passes).
std::string verify_error(const Graph& g, SourceLoc* loc = nullptr) {
  try {
    verify(g);
  } catch (const Error& e) {
    if (loc) *loc = e.loc();
    return e.message();
  }
  return "";
}

// x: f32[4] -> relu -> sigmoid; returns (sigmoid,).
struct Chain {
  Graph g;
  Node* x;
  Node* relu;
  Node* sigmoid;
  Chain() {
    x = g.add_placeholder("x", f32({4}));
    relu = g.add_call(op("aten::relu"), {x});
    sigmoid = g.add_call(op("aten::sigmoid"), {relu});
    g.set_output(Arg::of_tuple({sigmoid}));
  }
};

TEST(Verifier, AcceptsValidGraphs) {
  Chain c;
  EXPECT_EQ(verify_error(c.g), "");
  Graph g;
  Node* x = g.add_placeholder("x", f32({4, 8}));
  Node* s = g.add_placeholder("s", ValueMeta::of_sym(SymInt::symbol("s0")));
  Node* split = g.add_call(op("aten::split.Tensor"), {x, Arg::of_int(2)});
  Node* a = g.add_getitem(split, 0);
  Node* b = g.add_getitem(split, 1);
  Node* m = g.add_call(op("aten::mul.Tensor"), {a, b});
  Node* k = g.add_call(op("aten::mul.Scalar"), {m, Arg(s)});
  g.set_output(Arg::of_list({k, Arg::none(), m}));
  EXPECT_EQ(verify_error(g), "");
}

TEST(Verifier, RecordedMetadataMustEqualInferred) {
  Graph g;
  Node* x = g.add_placeholder("x", f32({4, 1}));
  Node* y = g.add_placeholder("y", f32({4}));
  auto [args, given] = bind_arguments(op("aten::add.Tensor"), {x, y}, {});
  Node* add = g.add_call_raw(op("aten::add.Tensor"), args, given, f32({4}), "add");
  add->info().loc = {7, 9};
  g.set_output(Arg(add));
  SourceLoc loc;
  EXPECT_EQ(verify_error(g, &loc),
            "node 'add' (aten::add.Tensor): recorded metadata f32[4][1]cpu differs from inferred "
            "f32[4, 4][4, 1]cpu");
  EXPECT_EQ(loc.line, 7);
  EXPECT_EQ(loc.col, 9);
  // dtype, strides and storage offset count too.
  add->mutable_meta() = f32({4, 4});
  EXPECT_EQ(verify_error(g), "");
  add->mutable_meta().tensor.dtype = ScalarType::Float64;
  EXPECT_NE(verify_error(g).find("recorded metadata f64[4, 4][4, 1]cpu differs"),
            std::string::npos);
  add->mutable_meta() = f32({4, 4});
  add->mutable_meta().tensor.strides = {1, 4};
  EXPECT_NE(verify_error(g).find("f32[4, 4][1, 4]cpu differs"), std::string::npos);
  add->mutable_meta() = f32({4, 4});
  add->mutable_meta().tensor.storage_offset = 3;
  EXPECT_NE(verify_error(g).find("differs"), std::string::npos);
  add->mutable_meta() = ValueMeta::none();
  EXPECT_NE(verify_error(g).find("recorded metadata None differs"), std::string::npos);
}

TEST(Verifier, StridesOfSizeOneDimensionsAndEmptyTensorsAreNotSignificant) {
  // threshold_backward(grad, self) keeps grad's layout; after a decomposition changes grad's stride
  // of a size-1 dimension (deepspeech's [2, 1, 10, 32]), the recorded result still agrees.
  Graph g;
  Node* x = g.add_placeholder("x", f32({2, 1, 10, 32}));
  Node* y = g.add_placeholder("y", f32({2, 1, 10, 32}));
  auto [args, given] = bind_arguments(op("aten::add.Tensor"), {x, y}, {});
  Node* add = g.add_call_raw(op("aten::add.Tensor"), args, given, f32({2, 1, 10, 32}), "add");
  g.set_output(Arg(add));
  add->mutable_meta().tensor.strides = {320, 640, 32, 1};
  EXPECT_EQ(verify_error(g), "");
  add->mutable_meta().tensor.strides = {320, 320, 1, 10};  // a significant stride differs
  EXPECT_NE(verify_error(g).find("f32[2, 1, 10, 32][320, 320, 1, 10]cpu differs"),
            std::string::npos);
  // No elements: no stride is significant; sizes and dtype still are.
  Graph e;
  Node* a = e.add_placeholder("a", f32({0, 3}));
  Node* b = e.add_placeholder("b", f32({0, 3}));
  auto [eargs, egiven] = bind_arguments(op("aten::mul.Tensor"), {a, b}, {});
  Node* mul = e.add_call_raw(op("aten::mul.Tensor"), eargs, egiven, f32({0, 3}), "mul");
  e.set_output(Arg(mul));
  mul->mutable_meta().tensor.strides = {1, 1};
  EXPECT_EQ(verify_error(e), "");
  mul->mutable_meta() = f32({0, 4});
  EXPECT_NE(verify_error(e).find("differs"), std::string::npos);
}

TEST(Verifier, StructureLevelSkipsOnlyTheMetadataReinference) {
  Graph g;
  Node* x = g.add_placeholder("x", f32({4, 1}));
  Node* y = g.add_placeholder("y", f32({4}));
  auto [args, given] = bind_arguments(op("aten::add.Tensor"), {x, y}, {});
  Node* add = g.add_call_raw(op("aten::add.Tensor"), args, given, f32({4}), "add");
  g.set_output(Arg(add));
  EXPECT_THROW(verify(g), Error);
  EXPECT_NO_THROW(verify(g, VerifyLevel::kStructure));
  // An argument of the wrong type is structural.
  add->set_arg(1, Arg::of_str("y"));
  try {
    verify(g, VerifyLevel::kStructure);
    ADD_FAILURE() << "a string where the schema has a Tensor passed";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("argument 'other'"), std::string::npos) << e.message();
  }
}

TEST(Verifier, ParsedGraphErrorsCarryTheSourcePosition) {
  auto g = parse_graph(R"fx(def forward(self, x: "f32[4]"):
    relu: "f32[4][1]cpu" = torch.ops.aten.relu.default(x)
    mul: "i64[4][1]cpu" = torch.ops.aten.mul.Tensor(relu, relu)
    return mul
)fx",
                       aten_ops());
  SourceLoc loc;
  EXPECT_EQ(verify_error(*g, &loc),
            "node 'mul' (aten::mul.Tensor): recorded metadata i64[4][1]cpu differs from inferred "
            "f32[4][1]cpu");
  EXPECT_EQ(loc.line, 3);
  EXPECT_EQ(loc.col, 5);
}

TEST(Verifier, MetaFunctionFailures) {
  Graph g;
  Node* x = g.add_placeholder("x", f32({4}));
  Node* y = g.add_placeholder("y", f32({3}));
  auto [args, given] = bind_arguments(op("aten::add.Tensor"), {x, y}, {});
  Node* add = g.add_call_raw(op("aten::add.Tensor"), args, given, f32({4}), "add");
  g.set_output(Arg(add));
  EXPECT_EQ(verify_error(g),
            "node 'add' (aten::add.Tensor): cannot infer metadata: aten::add.Tensor: the size of "
            "tensor a (4) must match the size of tensor b (3) at non-singleton dimension 0");
  // Found by tests/fuzz/cache_entry_fuzz: a string argument the meta function quotes is escaped.
  Graph g2;
  Node* a = g2.add_placeholder("a", f32({4}));
  Node* b = g2.add_placeholder("b", f32({4}));
  auto [args2, given2] = bind_arguments(op("aten::div.Tensor_mode"), {a, b},
                                        {{"rounding_mode", Arg::of_str("fl\xffor")}});
  Node* div = g2.add_call_raw(op("aten::div.Tensor_mode"), args2, given2, f32({4}), "div");
  g2.set_output(Arg(div));
  EXPECT_EQ(verify_error(g2),
            "node 'div' (aten::div.Tensor_mode): cannot infer metadata: aten::div.Tensor_mode: div "
            "expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'fl\\xffor'");
}

TEST(Verifier, ArgumentsMustFitTheSchema) {
  Graph g;
  Node* x = g.add_placeholder("x", f32({4}));
  Node* bad = g.add_call_raw(op("aten::add.Tensor"), {Arg(x), Arg::of_str("a"), Arg::of_int(1)}, 7,
                             f32({4}), "add");
  g.set_output(Arg(bad));
  EXPECT_EQ(verify_error(g),
            "node 'add' (aten::add.Tensor): argument 'other': expected Tensor, got str 'a'");
  Graph g2;
  Node* x2 = g2.add_placeholder("x", f32({4}));
  Node* short_args =
      g2.add_call_raw(op("aten::add.Tensor"), {Arg(x2), Arg(x2)}, 3, f32({4}), "add");
  g2.set_output(Arg(short_args));
  EXPECT_EQ(verify_error(g2),
            "node 'add' (aten::add.Tensor): has 2 arguments but the schema has 3");
  Graph g3;
  Node* x3 = g3.add_placeholder("x", f32({4}));
  Node* relu = g3.add_call_raw(op("aten::relu"), {Arg(x3)}, 0b11, f32({4}), "relu");
  g3.set_output(Arg(relu));
  EXPECT_EQ(verify_error(g3),
            "node 'relu' (aten::relu): marks an argument given beyond the schema's 1");
}

TEST(Verifier, GetItemMustIndexATupleInRange) {
  Graph g;
  Node* x = g.add_placeholder("x", f32({4, 8}));
  Node* split = g.add_call(op("aten::split.Tensor"), {x, Arg::of_int(2)});
  Node* gi = g.add_getitem(split, 1);
  g.set_output(Arg(gi));
  EXPECT_EQ(verify_error(g), "");
  gi->mutable_meta() = f32({2, 8});  // element 1 has storage offset 16
  EXPECT_EQ(verify_error(g),
            "node 'getitem' (getitem): recorded metadata f32[2, 8][8, 1]cpu differs from element 1 "
            "of split, f32[2, 8][8, 1]cpu");
  // A placeholder's metadata is not inferred, so a tuple placeholder isolates the getitem checks.
  Graph g2;
  Node* t = g2.add_placeholder("t", ValueMeta::tuple({f32({2}), f32({3})}));
  Node* second = g2.add_getitem(t, 1);
  g2.set_output(Arg(second));
  EXPECT_EQ(verify_error(g2), "");
  t->mutable_meta().elems.pop_back();
  EXPECT_EQ(verify_error(g2),
            "node 'getitem' (getitem): index 1 is out of range for placeholder 't' with 1 results");
  t->mutable_meta() = f32({4, 8});
  EXPECT_EQ(verify_error(g2),
            "node 'getitem' (getitem): indexes placeholder 't', which is not a tuple (tensor "
            "f32[4, 8][8, 1]cpu)");
}

TEST(Verifier, ArgumentsMustBeDefinedEarlier) {
  Chain c;
  // sigmoid now uses a node defined after it.
  Node* late = c.g.add_call(op("aten::neg"), {c.x});
  c.g.replace_all_uses_with(c.relu, late);
  EXPECT_EQ(verify_error(c.g), "node 'sigmoid' (aten::sigmoid): 'neg' used before it is defined");
}

TEST(Verifier, ArgumentsMustBelongToTheGraph) {
  Chain other;
  Graph g;
  Node* x = g.add_placeholder("x", f32({4}));
  Node* r = g.add_call(op("aten::relu"), {other.relu});  // a node of another graph
  g.set_output(Arg::of_tuple({r, x}));
  EXPECT_EQ(verify_error(g), "node 'relu' (aten::relu): uses a value that is not in this graph");
  // And the other graph's use list now names a node it does not own.
  EXPECT_EQ(verify_error(other.g),
            "node 'relu' (aten::relu): its use list holds a node that is not in this graph");
}

TEST(Verifier, UseListsStayConsistentThroughTheGraphApi) {
  Chain c;
  Node* add = c.g.add_call(op("aten::add.Tensor"), {c.relu, c.relu});
  c.g.set_output(Arg::of_tuple({c.sigmoid, add}));
  EXPECT_EQ(verify_error(c.g), "");
  EXPECT_EQ(c.relu->users().size(), 3u);  // sigmoid once, add twice
  add->set_arg(1, Arg(c.x));
  EXPECT_EQ(verify_error(c.g), "");
  c.g.replace_all_uses_with(c.relu, c.x);
  c.g.erase(c.relu);
  EXPECT_EQ(verify_error(c.g), "");
  // Moving the uses to a node of another graph leaves arguments pointing out of this one.
  Chain other;
  c.g.replace_all_uses_with(c.sigmoid, other.sigmoid);
  EXPECT_EQ(verify_error(c.g), "output: uses a value that is not in this graph");
  EXPECT_EQ(verify_error(other.g),
            "node 'sigmoid' (aten::sigmoid): its use list holds a node that is not in this graph");
}

TEST(Verifier, PlaceholdersFirstAndOneOutputLast) {
  {
    Chain c;
    c.g.set_insertion_point(c.x);  // a call before the placeholder
    Node* early =
        c.g.add_call_raw(op("aten::relu"), {Arg::of_int(1)}, 1, ValueMeta::none(), "early");
    (void)early;
    EXPECT_EQ(verify_error(c.g),
              "placeholder 'x': comes after a call (placeholders must come first)");
  }
  {
    Graph g;
    Node* x = g.add_placeholder("x", f32({4}));
    g.add_call(op("aten::relu"), {x});
    EXPECT_EQ(verify_error(g), "the graph has no output node");
  }
}

TEST(Verifier, ErrorsNameTheNodeAndOp) {
  Chain c;
  c.relu->mutable_meta() = f32({5});
  std::string err = verify_error(c.g);
  // relu's own metadata is wrong (its users are then checked against it, but relu comes first).
  EXPECT_EQ(err.rfind("node 'relu' (aten::relu): recorded metadata f32[5][1]cpu", 0), 0u) << err;
}

TEST(Verifier, HigherOrderOpsReferenceTheOpTheyWrap) {
  Graph g;
  Node* x = g.add_placeholder("x", f32({4}));
  const OpDef& save =
      aten_ops().higher_order("higher_order::run_and_save_rng_state", op("aten::rand_like"));
  Node* ok = g.add_call(save, {Arg::of_op(op("aten::rand_like")), Arg(x)});
  EXPECT_EQ(ok->meta().elems.at(0).annotation(), "u8[5056][1]cpu");
  Node* bad = g.add_call_raw(
      save, {Arg::of_op(op("aten::randn_like")), Arg(x), Arg(), Arg(), Arg(), Arg(), Arg()}, 0b11,
      ok->meta(), "bad");
  g.set_output(Arg::of_tuple({Arg(ok), Arg(bad)}));
  EXPECT_EQ(verify_error(g),
            "node 'bad' (higher_order::run_and_save_rng_state): argument 'op' must be "
            "torch.ops.aten.rand_like.default, got torch.ops.aten.randn_like.default");
}

}  // namespace
}  // namespace aotgrad
