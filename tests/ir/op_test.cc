// OpTable's op provider: ops a table does not declare, asked of its provider once and kept.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "aotgrad/ir/error.h"
#include "aotgrad/ir/graph.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"

namespace aotgrad {
namespace {

ValueMeta same_as_self(const MetaArgs& a) { return ValueMeta::of(a.tensor(0)); }

// Gives `toy::scale(Tensor self, float factor) -> Tensor`, refuses `toy::bad` as a provider refuses
// a schema it cannot describe, and knows nothing else; counts what it is asked.
class ToyProvider final : public OpProvider {
 public:
  std::unique_ptr<OpDef> provide(const std::string& name) const override {
    ++asked;
    if (name == "toy::bad") throw Error("toy::bad: argument 'x' has type Storage");
    std::string schema;
    if (name == "toy::scale") schema = "toy::scale(Tensor self, float factor) -> Tensor";
    if (name == "toy::scale.twice") schema = "toy::scale.twice(Tensor self) -> Tensor";
    if (schema.empty()) return nullptr;
    auto op = std::make_unique<OpDef>();
    op->schema = parse_schema(schema);
    op->name = op->schema.qualified_name();
    op->base_name = "scale";
    op->short_name = "scale." + (op->schema.overload.empty() ? "default" : op->schema.overload);
    op->tags = kPointwise;  // as a provider reads them off its schema
    op->meta = same_as_self;
    return op;
  }
  std::string source() const override { return "the toy provider"; }
  mutable std::atomic<int> asked{0};
};

TEST(OpProvider, GivesUndeclaredOpsOnceAndKeepsThem) {
  OpTable t;
  t.def("abs(Tensor self) -> Tensor").meta(same_as_self);
  t.finalize();
  EXPECT_EQ(t.find("toy::scale"), nullptr);  // no provider yet
  ToyProvider p;
  t.set_provider(&p);
  const OpDef* scale = t.find("toy::scale");
  ASSERT_NE(scale, nullptr);
  EXPECT_TRUE(scale->provided);
  EXPECT_FALSE(t.find("abs")->provided);
  EXPECT_EQ(t.find("toy::scale"), scale);
  EXPECT_EQ(p.asked.load(), 1);  // declared ops never reach the provider; given ones are kept
  EXPECT_EQ(t.provided_ops(), std::vector<const OpDef*>{scale});
  EXPECT_EQ(t.find("toy::nothing"), nullptr);
  // Removing the provider keeps what it gave (graphs hold the OpDefs).
  t.set_provider(nullptr);
  EXPECT_EQ(t.find("toy::scale"), scale);
}

// Facts about an op the table does not declare (OpTable::tag_provided) reach every overload of its
// packet that the provider gives; a declared packet's partitioner classes (kPacketTags) reach the
// overloads it does not declare.
TEST(OpProvider, ProvidedOpsGetTheFactsDeclaredForTheirPacket) {
  OpTable t;
  t.tag_provided("toy::scale", kComputeIntensive);
  t.finalize();
  ToyProvider p;
  t.set_provider(&p);
  EXPECT_EQ(tag_names(t.get("toy::scale").tags), "pointwise,compute_intensive");
  EXPECT_EQ(tag_names(t.get("toy::scale.twice").tags), "pointwise,compute_intensive");
}

TEST(OpProvider, ProvidedOverloadsShareTheirDeclaredPacketsClasses) {
  OpTable t;
  t.def("toy::scale(Tensor self, float factor) -> Tensor")
      .meta(same_as_self)
      .tags(kRecomputable | kCore);
  t.finalize();
  EXPECT_EQ(t.provided_tags().at("toy::scale"), kRecomputable);  // the class, not core
  ToyProvider p;
  t.set_provider(&p);
  EXPECT_EQ(tag_names(t.get("toy::scale.twice").tags), "pointwise,recomputable");
  EXPECT_EQ(tag_names(t.get("toy::scale").tags), "core,recomputable");  // as declared
}

TEST(OpProvider, ErrorsNameTheOpAndTheProvider) {
  OpTable t;
  t.finalize();
  ToyProvider p;
  t.set_provider(&p);
  try {
    t.get("toy::nothing");
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(),
              "unknown op 'toy::nothing': neither aotgrad's op registry nor the toy provider has "
              "such an overload");
  }
  EXPECT_THROW(t.find("toy::bad"), Error);
}

TEST(OpProvider, ParserReadsProvidedOpsAndReportsRefusals) {
  OpTable t;
  t.finalize();
  ToyProvider p;
  t.set_provider(&p);
  const char* text =
      "def forward(self, x: \"f32[4][1]cpu\"):\n"
      "    scale: \"f32[4][1]cpu\" = torch.ops.toy.scale.default(x, 2.0);  x = None\n"
      "    return (scale,)\n";
  auto g = parse_graph(text, t);
  PrintOptions plain;
  plain.class_header = false;
  EXPECT_EQ(print_graph(*g, plain), std::string(text));
  try {
    parse_graph(
        "def forward(self, x: \"f32[4]\"):\n    y = torch.ops.toy.bad.default(x)\n"
        "    return (y,)\n",
        t);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.loc().line, 2);
    EXPECT_NE(e.message().find("argument 'x' has type Storage"), std::string::npos) << e.message();
  }
  try {
    parse_graph(
        "def forward(self, x: \"f32[4]\"):\n    y = torch.ops.toy.other.default(x)\n"
        "    return (y,)\n",
        t);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(
        e.message().find("unknown op 'toy::other.default' (the toy provider has none either)"),
        std::string::npos)
        << e.message();
  }
}

TEST(OpProvider, ThreadsAskingAtOnceGetOneOpDef) {
  OpTable t;
  t.finalize();
  ToyProvider p;
  t.set_provider(&p);
  std::vector<const OpDef*> seen(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < seen.size(); ++i)
    threads.emplace_back([&, i] { seen[i] = t.find("toy::scale"); });
  for (auto& th : threads) th.join();
  for (const OpDef* op : seen) EXPECT_EQ(op, seen[0]);
  EXPECT_EQ(t.provided_ops().size(), 1u);
}

}  // namespace
}  // namespace aotgrad
