// aotgrad: tests of the RNG-state higher-order ops -- the OpDefs derived per wrapped op (schema,
// tags, metadata), the table's cache, and what cannot be wrapped.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "../error_of.h"
#include "aotgrad/ir/error.h"
#include "aotgrad/ir/graph.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

using testing::HasSubstr;

const OpDef& dropout() { return aten_ops().get("native_dropout"); }

TEST(HigherOrderOps, DerivedSchemaIsLeadingArgumentsOpThenTheWrappedOpsArguments) {
  const OpDef& save = aten_ops().higher_order(kRunAndSaveRngState, dropout());
  EXPECT_EQ(save.name, "higher_order::run_and_save_rng_state");
  EXPECT_EQ(save.short_name, "run_and_save_rng_state");
  EXPECT_EQ(save.base_name, "run_and_save_rng_state");
  EXPECT_EQ(save.schema.text,
            "higher_order::run_and_save_rng_state(Any op, Tensor input, float p, bool? train) -> "
            "(Tensor, Any)");
  EXPECT_EQ(save.wrapped, &dropout());
  EXPECT_EQ(save.wrapped_arg, 0);
  EXPECT_TRUE(save.has_tag(kNondeterministicSeeded));  // impure: DCE keeps it, CSE skips it
  EXPECT_TRUE(save.non_differentiable);

  const OpDef& with = aten_ops().higher_order("higher_order.run_with_rng_state", dropout());
  EXPECT_EQ(with.schema.text,
            "higher_order::run_with_rng_state(Tensor rng_state, Any op, Tensor input, float p, "
            "bool? train) -> (Tensor, Tensor)");
  EXPECT_EQ(with.wrapped_arg, 1);
  EXPECT_EQ(with.tags, 0u);  // leaves the generator as it was

  // Keyword-only arguments stay keyword-only.
  const OpDef& bern = aten_ops().higher_order(kRunWithRngState, aten_ops().get("bernoulli.p"));
  EXPECT_EQ(bern.schema.text,
            "higher_order::run_with_rng_state(Tensor rng_state, Any op, Tensor self, float p, *, "
            "Generator? generator=None) -> Tensor");
}

TEST(HigherOrderOps, OneOpDefPerFamilyAndWrappedOpAcrossThreads) {
  const OpDef* first = &aten_ops().higher_order(kRunAndSaveRngState, aten_ops().get("rand_like"));
  std::vector<const OpDef*> seen(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < seen.size(); ++i)
    threads.emplace_back([&, i] {
      seen[i] = &aten_ops().higher_order(kRunAndSaveRngState, aten_ops().get("rand_like"));
    });
  for (auto& t : threads) t.join();
  for (const OpDef* op : seen) EXPECT_EQ(op, first);
  EXPECT_NE(&aten_ops().higher_order(kRunWithRngState, aten_ops().get("rand_like")), first);
  // Families are not ops: they are not listed, and find() does not see them.
  EXPECT_EQ(aten_ops().find(kRunAndSaveRngState), nullptr);
  EXPECT_NE(aten_ops().find_higher_order("torch.ops.higher_order.run_and_save_rng_state"), nullptr);
  for (const OpDef* op : aten_ops().all()) EXPECT_EQ(op->wrapped, nullptr) << op->name;
}

TEST(HigherOrderOps, MetadataIsTheStateAndTheWrappedOpsResult) {
  auto g = parse_graph(R"(
def forward(self, x: "f32[4, 8]"):
    run_and_save_rng_state = torch.ops.higher_order.run_and_save_rng_state(torch.ops.aten.native_dropout.default, x, 0.5, True)
    getitem = run_and_save_rng_state[0]
    getitem_1 = run_and_save_rng_state[1]
    run_with_rng_state = torch.ops.higher_order.run_with_rng_state(getitem, torch.ops.aten.native_dropout.default, x, 0.5, True)
    return (getitem_1, run_with_rng_state)
)",
                       aten_ops());
  const ValueMeta& saved = g->find("run_and_save_rng_state")->meta();
  ASSERT_EQ(saved.kind, ValueMeta::Kind::Tuple);
  ASSERT_EQ(saved.elems.size(), 2u);
  EXPECT_EQ(saved.elems[0].annotation(), "u8[5056][1]cpu");
  EXPECT_EQ(cpu_rng_state_meta().annotation(), "u8[5056][1]cpu");
  ASSERT_EQ(saved.elems[1].kind, ValueMeta::Kind::Tuple);
  EXPECT_EQ(saved.elems[1].elems[0].annotation(), "f32[4, 8][8, 1]cpu");
  EXPECT_EQ(saved.elems[1].elems[1].annotation(), "b8[4, 8][8, 1]cpu");
  const ValueMeta& replayed = g->find("run_with_rng_state")->meta();
  EXPECT_TRUE(replayed.same_as(saved.elems[1]));
}

TEST(HigherOrderOps, BadStatesAndOpArgumentsAreErrors) {
  auto parse = [](const std::string& call) {
    return error_of([&] {
      parse_graph("def forward(self, x: \"f32[4]\", s: \"f32[5056]\"):\n    y = " + call +
                      "\n    return (y,)\n",
                  aten_ops());
    });
  };
  EXPECT_THAT(
      parse("torch.ops.higher_order.run_with_rng_state(s, torch.ops.aten.rand_like.default, x)"),
      HasSubstr("argument 'rng_state' must be a CPU generator state (u8[N]cpu), got "
                "f32[5056][1]cpu"));
  // The wrapped op's own checks apply.
  EXPECT_THAT(parse("torch.ops.higher_order.run_and_save_rng_state(torch.ops.aten.native_dropout."
                    "default, x, 1.5, True)"),
              HasSubstr("aten::native_dropout"));
  EXPECT_THAT(
      error_of([] {
        aten_ops().higher_order(kRunAndSaveRngState,
                                aten_ops().higher_order(kRunAndSaveRngState, dropout()));
      }),
      HasSubstr("cannot wrap higher_order::run_and_save_rng_state, itself a higher-order op"));
  EXPECT_THAT(error_of([] { aten_ops().higher_order("higher_order::no_such", dropout()); }),
              HasSubstr("unknown higher-order op 'higher_order::no_such'"));
  OpTable other;
  const OpDef& foreign = other.def("foo(Tensor self) -> Tensor").op();
  EXPECT_THAT(error_of([&] { aten_ops().higher_order(kRunWithRngState, foreign); }),
              HasSubstr("cannot wrap aten::foo: it is not an op of this op table"));
}

// with_effects (torch/_higher_order_ops/effects.py, Note [Effect tokens]): the token, the op, the
// op's arguments; results: a new token, then the op's.
TEST(HigherOrderOps, WithEffectsSchemaTagsAndMetadata) {
  const OpDef& print = aten_ops().get("aten::_print");
  EXPECT_EQ(print.schema.text, "aten::_print(str s) -> ()");
  EXPECT_EQ(tag_names(print.tags), "effectful");
  const OpDef& with = aten_ops().higher_order(kWithEffects, print);
  EXPECT_EQ(with.schema.text, "higher_order::with_effects(Tensor token, Any op, str s) -> Tensor");
  EXPECT_EQ(tag_names(with.tags), "effectful");
  EXPECT_EQ(with.wrapped_arg, 1);
  EXPECT_TRUE(with.non_differentiable);
  EXPECT_EQ(effect_token_meta().annotation(), "f32[0][1]cpu");

  const std::string text = R"(def forward(self, arg0_1: "f32[0][1]cpu"):
    with_effects = torch.ops.higher_order.with_effects(arg0_1, torch.ops.aten._print.default, 'moo');  arg0_1 = None
    getitem: "f32[0][1]cpu" = with_effects[0];  with_effects = None
    return (getitem,)
)";
  auto g = parse_graph(text, aten_ops());
  const ValueMeta& m = g->find("with_effects")->meta();
  ASSERT_EQ(m.kind, ValueMeta::Kind::Tuple);
  ASSERT_EQ(m.elems.size(), 1u);  // an op without results: the token only
  EXPECT_EQ(m.elems[0].annotation(), "f32[0][1]cpu");
  PrintOptions p;
  p.class_header = false;
  EXPECT_EQ(print_graph(*g, p), text);  // text round trip
}

TEST(HigherOrderOps, WithEffectsErrors) {
  auto parse = [](const std::string& call) {
    return error_of([&] {
      parse_graph("def forward(self, t: \"f32[0]\", x: \"f32[4]\"):\n    y = " + call +
                      "\n    return (y,)\n",
                  aten_ops());
    });
  };
  // An op that is not effectful.
  EXPECT_THAT(
      parse("torch.ops.higher_order.with_effects(t, torch.ops.aten.neg.default, x)"),
      HasSubstr("higher_order::with_effects cannot wrap aten::neg: it is not effectful (declare it "
                "with the effectful tag, or register it with register_effectful_op)"));
  // The token left out.
  EXPECT_THAT(parse("torch.ops.higher_order.with_effects(torch.ops.aten._print.default, 'moo')"),
              HasSubstr("argument 'token' of higher_order::with_effects is missing: it comes "
                        "before the op, got torch.ops.aten._print.default"));
  // A token that is not one.
  EXPECT_THAT(parse("torch.ops.higher_order.with_effects(x, torch.ops.aten._print.default, 'moo')"),
              HasSubstr("argument 'token' must be an effect token (an empty f32[0] tensor), got "
                        "f32[4][1]cpu"));
  // The wrapped op's own arguments are checked.
  EXPECT_THAT(parse("torch.ops.higher_order.with_effects(t, torch.ops.aten._print.default, 3)"),
              HasSubstr("'s'"));
}

}  // namespace
}  // namespace aotgrad
