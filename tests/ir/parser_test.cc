// aotgrad: tests of the graph text parser -- the forms it accepts and what it builds from them.
#include "aotgrad/ir/parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "aotgrad/ir/printer.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

std::unique_ptr<Graph> parse(std::string_view text) { return parse_graph(text, aten_ops()); }

// The graph of `def forward(self, x: "f32[4, 8]", ...)` with `body` (one statement per line).
std::string with_body(const std::string& params, const std::string& body) {
  return "def forward(self, " + params + "):\n" + body;
}

std::vector<Node*> calls(const Graph& g) {
  std::vector<Node*> out;
  for (Node* n : g.nodes())
    if (n->kind() == NodeKind::Call || n->kind() == NodeKind::GetItem) out.push_back(n);
  return out;
}

// The (only) call node's argument i, from `y = <call>` in a graph with x: f32[4, 8].
Arg call_arg(const std::string& call, size_t i) {
  auto g = parse(with_body("x: \"f32[4, 8]\"", "    y = " + call + "\n    return y\n"));
  return g->find("y")->arg(i);
}

TEST(Parser, BuildsNodesArgumentsAndMetadata) {
  auto g = parse(R"fx(class GraphModule(torch.nn.Module):
    def forward(self, primals_1: "f32[4, 8][8, 1]cpu", primals_2: "f32[8][1]cpu"):
        # comments are ignored
        mul: "f32[4, 8][8, 1]cpu" = torch.ops.aten.mul.Tensor(primals_1, primals_2);  primals_2 = None
        relu: "f32[4, 8][8, 1]cpu" = torch.ops.aten.relu.default(mul);  mul = None
        add: "f32[4, 8][8, 1]cpu" = torch.ops.aten.add.Tensor(relu, primals_1, alpha = -0.1)
        return (add, primals_1, relu)
)fx");
  ASSERT_EQ(g->size(), 6u);
  EXPECT_EQ(g->signature, Signature::Plain);
  auto ph = g->placeholders();
  ASSERT_EQ(ph.size(), 2u);
  EXPECT_EQ(ph[0]->name(), "primals_1");
  EXPECT_EQ(ph[0]->meta().annotation(), "f32[4, 8][8, 1]cpu");
  EXPECT_EQ(ph[0]->info().loc.line, 2);
  EXPECT_EQ(ph[0]->info().loc.col, 23);
  Node* add = g->find("add");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->kind(), NodeKind::Call);
  EXPECT_EQ(add->op()->name, "aten::add.Tensor");
  ASSERT_EQ(add->args().size(), 3u);
  EXPECT_EQ(add->arg(0).node, g->find("relu"));
  EXPECT_EQ(add->arg(1).node, ph[0]);
  EXPECT_EQ(add->arg(2).kind, Arg::Kind::Float);
  EXPECT_EQ(add->arg(2).f, -0.1);
  EXPECT_EQ(add->given_mask(), 0b111u);
  EXPECT_EQ(add->info().loc.line, 6);
  EXPECT_EQ(add->info().loc.col, 9);
  EXPECT_EQ(g->find("relu")->given_mask(), 0b1u);
  EXPECT_EQ(g->find("mul")->users().size(), 1u);
  EXPECT_EQ(ph[0]->users().size(), 3u);  // mul, add, output
  const Arg& out = g->output()->arg(0);
  ASSERT_EQ(out.kind, Arg::Kind::Tuple);
  ASSERT_EQ(out.list.size(), 3u);
  EXPECT_EQ(out.list[2].node, g->find("relu"));
  EXPECT_NO_THROW(verify(*g));
}

TEST(Parser, ClassLineIsOptionalAndMayNameAnyClass) {
  const std::string def = "def forward(self, x: \"f32[4]\"):\n    return (x,)\n";
  for (const std::string& prefix :
       {std::string(), std::string("class GraphModule(torch.nn.Module):\n"),
        std::string("class joint_fn(torch.nn.Module):\n"),
        std::string("class <lambda>(torch.nn.Module):\n")}) {
    auto g = parse(prefix + def);
    EXPECT_EQ(g->placeholders().size(), 1u) << prefix;
  }
}

TEST(Parser, AnnotationForms) {
  auto g = parse(
      R"fx(def forward(self, a: "f32[4, 8]", b: "f32[4, 8][1, 4]cpu", c: "i64[][]cpu", d: "Sym(s0)", e: "bf16[s0, 2*s0][2*s0, 1]cpu", f: "b8[3][1]cuda:0", h: f32[2, 3]):
    return (a, b, c, d, e, f, h)
)fx");
  auto ph = g->placeholders();
  ASSERT_EQ(ph.size(), 7u);
  EXPECT_EQ(ph[0]->meta().annotation(), "f32[4, 8][8, 1]cpu");  // contiguous strides, cpu
  EXPECT_EQ(ph[1]->meta().annotation(), "f32[4, 8][1, 4]cpu");
  EXPECT_EQ(ph[2]->meta().annotation(), "i64[][]cpu");
  EXPECT_EQ(ph[2]->tensor_meta().dim(), 0);
  EXPECT_EQ(ph[3]->meta().kind, ValueMeta::Kind::SymInt);
  EXPECT_TRUE(ph[3]->meta().sym == SymInt::symbol("s0"));
  EXPECT_EQ(ph[4]->meta().annotation(), "bf16[s0, 2*s0][2*s0, 1]cpu");
  EXPECT_EQ(ph[5]->tensor_meta().device.type, DeviceType::CUDA);
  EXPECT_EQ(ph[5]->tensor_meta().device.index, 0);
  EXPECT_EQ(ph[6]->meta().annotation(), "f32[2, 3][3, 1]cpu");  // older, unquoted form
}

TEST(Parser, UnannotatedNodesGetInferredMetadata) {
  auto g = parse(with_body("x: \"f32[4, 1]\", y: \"f32[3]\"",
                           "    add = torch.ops.aten.add.Tensor(x, y)\n"
                           "    wrong: \"f32[7][1]cpu\" = torch.ops.aten.relu.default(add)\n"
                           "    return (wrong,)\n"));
  EXPECT_EQ(g->find("add")->meta().annotation(), "f32[4, 3][3, 1]cpu");
  // An annotated node keeps what the text says; the verifier compares it with the inferred one.
  EXPECT_EQ(g->find("wrong")->meta().annotation(), "f32[7][1]cpu");
  try {
    verify(*g);
    FAIL() << "verify accepted a wrong annotation";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(),
              "node 'wrong' (aten::relu): recorded metadata f32[7][1]cpu differs from "
              "inferred f32[4, 3][3, 1]cpu");
    EXPECT_EQ(e.loc().line, 3);
    EXPECT_EQ(e.loc().col, 5);
  }
}

TEST(Parser, OpSpellings) {
  for (const char* callee :
       {"torch.ops.aten.relu.default", "torch.ops.aten.relu", "aten.relu.default", "aten.relu"}) {
    auto g =
        parse(with_body("x: \"f32[4]\"", std::string("    r = ") + callee + "(x)\n    return r\n"));
    EXPECT_EQ(g->find("r")->op()->name, "aten::relu") << callee;
  }
  auto g =
      parse(with_body("x: \"f32[4]\"",
                      "    a = aten.add.Tensor(x, x)\n    b = torch.ops.aten.add.Scalar(a, 2)\n"
                      "    return b\n"));
  EXPECT_EQ(g->find("a")->op()->name, "aten::add.Tensor");
  EXPECT_EQ(g->find("b")->op()->name, "aten::add.Scalar");
}

TEST(Parser, GetItemForms) {
  auto g = parse(with_body("x: \"f32[4, 8]\"",
                           "    split = torch.ops.aten.split.Tensor(x, 2)\n"
                           "    getitem: \"f32[2, 8][8, 1]cpu\" = split[0]\n"
                           "    getitem_1 = operator.getitem(split, 1);  split = None\n"
                           "    return (getitem, getitem_1)\n"));
  Node* split = g->find("split");
  EXPECT_EQ(split->meta().kind, ValueMeta::Kind::Tuple);
  Node* g0 = g->find("getitem");
  Node* g1 = g->find("getitem_1");
  EXPECT_EQ(g0->kind(), NodeKind::GetItem);
  EXPECT_EQ(g0->getitem_input(), split);
  EXPECT_EQ(g0->getitem_index(), 0);
  EXPECT_EQ(g1->getitem_index(), 1);
  EXPECT_EQ(g1->meta().annotation(), "f32[2, 8][8, 1]cpu");
  EXPECT_EQ(split->users().size(), 2u);
  EXPECT_NO_THROW(verify(*g));
  // An annotation on a getitem is kept, and the verifier compares it with the tuple element.
  auto bad = parse(with_body("x: \"f32[4, 8]\"",
                             "    split = torch.ops.aten.split.Tensor(x, 2)\n"
                             "    getitem: \"f32[4, 8][8, 1]cpu\" = split[1]\n"
                             "    return getitem\n"));
  EXPECT_THROW(verify(*bad), Error);
}

TEST(Parser, AnnotatedViewsKeepTheirStorageOffset) {
  // Annotations have no storage offset; a view's comes from its inferred metadata.
  auto g =
      parse(with_body("x: \"f32[4, 8]\"",
                      "    s: \"f32[2, 8][8, 1]cpu\" = torch.ops.aten.slice.Tensor(x, 0, 1, 3)\n"
                      "    t: \"f32[8, 2][1, 8]cpu\" = torch.ops.aten.t.default(s)\n"
                      "    return (s, t)\n"));
  EXPECT_EQ(g->find("s")->tensor_meta().storage_offset, 8);
  EXPECT_EQ(g->find("t")->tensor_meta().storage_offset, 8);
  EXPECT_NO_THROW(verify(*g));
  // A getitem's element metadata carries its offset too.
  auto g2 = parse(with_body("x: \"f32[4, 8]\"",
                            "    split = torch.ops.aten.split.Tensor(x, 2)\n"
                            "    getitem_1: \"f32[2, 8][8, 1]cpu\" = split[1]\n"
                            "    return getitem_1\n"));
  EXPECT_EQ(g2->find("getitem_1")->tensor_meta().storage_offset, 16);
  EXPECT_NO_THROW(verify(*g2));
}

TEST(Parser, ReleaseStatementsAreIgnoredWherever) {
  auto g = parse(with_body("x: \"f32[4]\", y: \"f32[4]\"",
                           "    a = torch.ops.aten.add.Tensor(x, y);  x = y = None\n"
                           "    b = torch.ops.aten.relu.default(a);  a = None;  \n"
                           "    b = None\n"
                           "    return (b,);  b = None\n"));
  EXPECT_EQ(g->size(), 5u);
  EXPECT_EQ(g->find("b")->users().size(), 1u);
}

TEST(Parser, KeywordArguments) {
  auto g = parse(with_body("x: \"f32[4]\", y: \"f32[4]\"",
                           "    a = torch.ops.aten.add.Tensor(x, y, alpha=2)\n"
                           "    b = torch.ops.aten.add.Tensor(x, other = a)\n"
                           "    c = torch.ops.aten.add.Tensor(self = b, other = a, alpha = 0.5)\n"
                           "    d = torch.ops.aten.clamp.default(c, max = 6.0)\n"
                           "    return d\n"));
  Node* a = g->find("a");
  EXPECT_EQ(a->arg(2).kind, Arg::Kind::Int);
  EXPECT_EQ(a->arg(2).i, 2);
  EXPECT_EQ(a->given_mask(), 0b111u);
  // Positional schema arguments given by keyword are bound to their position.
  Node* b = g->find("b");
  EXPECT_EQ(b->arg(1).node, a);
  EXPECT_EQ(b->given_mask(), 0b011u);
  EXPECT_EQ(b->arg(2).kind, Arg::Kind::Int);  // alpha's default, 1
  EXPECT_EQ(b->arg(2).i, 1);
  Node* c = g->find("c");
  EXPECT_EQ(c->arg(0).node, b);
  EXPECT_EQ(c->arg(2).f, 0.5);
  Node* d = g->find("d");
  EXPECT_EQ(d->given_mask(), 0b101u);
  EXPECT_TRUE(d->arg(1).is_none());
  std::string printed = print_graph(*g);
  EXPECT_NE(printed.find("torch.ops.aten.add.Tensor(x, a)"), std::string::npos) << printed;
  EXPECT_NE(printed.find("torch.ops.aten.add.Tensor(b, a, alpha = 0.5)"), std::string::npos);
  EXPECT_NE(printed.find("torch.ops.aten.clamp.default(c, None, 6.0)"), std::string::npos);
}

TEST(Parser, NumberForms) {
  auto f = [](const std::string& text) {
    Arg a = call_arg("torch.ops.aten.mul.Scalar(x, " + text + ")", 1);
    EXPECT_EQ(a.kind, Arg::Kind::Float) << text;
    return a.f;
  };
  auto i = [](const std::string& text) {
    Arg a = call_arg("torch.ops.aten.mul.Scalar(x, " + text + ")", 1);
    EXPECT_EQ(a.kind, Arg::Kind::Int) << text;
    return a.i;
  };
  EXPECT_EQ(f("1e-05"), 1e-05);
  EXPECT_EQ(f("-0.1"), -0.1);
  EXPECT_EQ(f("2."), 2.0);
  EXPECT_EQ(f(".5"), 0.5);
  EXPECT_EQ(f("1E3"), 1000.0);
  EXPECT_EQ(f("1.5e+300"), 1.5e300);
  EXPECT_EQ(f("inf"), std::numeric_limits<double>::infinity());
  EXPECT_EQ(f("-inf"), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(f("nan")));
  EXPECT_EQ(f("1e999"), std::numeric_limits<double>::infinity());  // as Python rounds it
  EXPECT_EQ(f("1e-999"), 0.0);
  EXPECT_TRUE(std::signbit(f("-0.0")));
  EXPECT_EQ(i("0"), 0);
  EXPECT_EQ(i("-3"), -3);
  EXPECT_EQ(i("9223372036854775807"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(i("-9223372036854775808"), std::numeric_limits<int64_t>::min());
  Arg t = call_arg("torch.ops.aten.mul.Scalar(x, True)", 1);
  EXPECT_EQ(t.kind, Arg::Kind::Bool);
  EXPECT_EQ(t.i, 1);
  EXPECT_EQ(call_arg("torch.ops.aten.mul.Scalar(x, False)", 1).i, 0);
  EXPECT_TRUE(call_arg("torch.ops.aten.clamp.default(x, None, 1)", 1).is_none());
}

TEST(Parser, StringForms) {
  EXPECT_EQ(call_arg("torch.ops.aten.gelu.default(x, approximate = 'tanh')", 1).str, "tanh");
  EXPECT_EQ(call_arg("torch.ops.aten.gelu.default(x, approximate = \"tanh\")", 1).str, "tanh");
  EXPECT_EQ(call_arg("torch.ops.aten.gelu.default(x, approximate='none')", 1).str, "none");
  auto g =
      parse(with_body("x: \"f32[4]\"",
                      "    # annotated, so the meta function (which rejects the mode) is not run\n"
                      "    y: \"f32[4]\" = torch.ops.aten.div.Tensor_mode(x, x, "
                      "rounding_mode = 'a\\'b\\\\c\\n\\x41')\n"
                      "    return y\n"));
  EXPECT_EQ(g->find("y")->arg(2).str, "a'b\\c\nA");
  std::string printed = print_graph(*g);
  EXPECT_NE(printed.find("rounding_mode = 'a\\'b\\\\c\\nA'"), std::string::npos) << printed;
}

TEST(Parser, DtypesDevicesLayoutsAndMemoryFormats) {
  const OpDef* to_copy = aten_ops().find("aten::_to_copy");
  if (!to_copy) GTEST_SKIP() << "aten::_to_copy is not registered yet";
  auto arg = [](const std::string& kwargs, const std::string& name) {
    auto g =
        parse(with_body("x: \"f32[2, 3, 4, 5]\"", "    y = torch.ops.aten._to_copy.default(x, " +
                                                      kwargs + ")\n    return y\n"));
    Node* y = g->find("y");
    return y->arg(y->op()->schema.arg_index(name));
  };
  for (int k = 0; k < kNumScalarTypes; ++k) {
    auto t = static_cast<ScalarType>(k);
    Arg a = arg("dtype = torch." + std::string(torch_name(t)), "dtype");
    EXPECT_EQ(a.kind, Arg::Kind::Dtype);
    EXPECT_EQ(a.dtype(), t) << torch_name(t);
  }
  EXPECT_EQ(arg("dtype = torch.float", "dtype").dtype(), ScalarType::Float32);
  EXPECT_EQ(arg("dtype = torch.long", "dtype").dtype(), ScalarType::Int64);
  EXPECT_EQ(arg("dtype = torch.half", "dtype").dtype(), ScalarType::Float16);
  EXPECT_EQ(arg("dtype = torch.double", "dtype").dtype(), ScalarType::Float64);
  EXPECT_EQ(arg("layout = torch.strided", "layout").kind, Arg::Kind::Layout);
  EXPECT_EQ(arg("layout = torch.strided", "layout").i, static_cast<int>(Layout::Strided));
  for (auto [text, fmt] : std::vector<std::pair<std::string, MemoryFormat>>{
           {"torch.contiguous_format", MemoryFormat::Contiguous},
           {"torch.preserve_format", MemoryFormat::Preserve},
           {"torch.channels_last", MemoryFormat::ChannelsLast}}) {
    Arg a = arg("memory_format = " + text, "memory_format");
    EXPECT_EQ(a.kind, Arg::Kind::MemoryFormat) << text;
    EXPECT_EQ(a.i, static_cast<int>(fmt)) << text;
  }
  struct DeviceCase {
    std::string text;
    Device expected;
  };
  for (const auto& c :
       std::vector<DeviceCase>{{"device(type='cpu')", {DeviceType::CPU, -1}},
                               {"device(type='cuda', index=0)", {DeviceType::CUDA, 0}},
                               {"device(type = 'cuda', index = 1)", {DeviceType::CUDA, 1}},
                               {"torch.device('cpu')", {DeviceType::CPU, -1}},
                               {"torch.device(type='cpu')", {DeviceType::CPU, -1}},
                               {"torch.device('cuda:2')", {DeviceType::CUDA, 2}},
                               {"torch.device('cuda', 3)", {DeviceType::CUDA, 3}},
                               {"device(type='meta')", {DeviceType::Meta, -1}}}) {
    Arg a = arg("device = " + c.text, "device");
    EXPECT_EQ(a.kind, Arg::Kind::Device) << c.text;
    EXPECT_EQ(a.device, c.expected) << c.text;
  }
}

TEST(Parser, ListsAndTuplesInArguments) {
  auto g = parse(with_body("x: \"f32[4, 8]\"",
                           "    s = torch.ops.aten.split_with_sizes.default(x, [1, 3,], 0)\n"
                           "    t = torch.ops.aten.split_with_sizes.default(x, (2, 2))\n"
                           "    return (s, t)\n"));
  const Arg& l = g->find("s")->arg(1);
  ASSERT_EQ(l.kind, Arg::Kind::List);
  ASSERT_EQ(l.list.size(), 2u);
  EXPECT_EQ(l.list[1].i, 3);
  EXPECT_EQ(g->find("t")->arg(1).kind, Arg::Kind::Tuple);
}

TEST(Parser, ReturnForms) {
  auto out = [](const std::string& ret) {
    auto g = parse(with_body("x: \"f32[4]\", y: \"f32[4]\"", "    " + ret + "\n"));
    return arg_to_string(g->output()->arg(0)) + " " +
           std::to_string(static_cast<int>(g->output()->arg(0).kind));
  };
  auto kind = [](Arg::Kind k) { return std::to_string(static_cast<int>(k)); };
  EXPECT_EQ(out("return (x, y)"), "(x, y) " + kind(Arg::Kind::Tuple));
  EXPECT_EQ(out("return (x,)"), "(x,) " + kind(Arg::Kind::Tuple));
  EXPECT_EQ(out("return ()"), "() " + kind(Arg::Kind::Tuple));
  EXPECT_EQ(out("return [x, None]"), "[x, None] " + kind(Arg::Kind::List));
  EXPECT_EQ(out("return x"), "x " + kind(Arg::Kind::Node));
  EXPECT_EQ(out("return (x)"), "x " + kind(Arg::Kind::Node));
  EXPECT_EQ(out("return None"), "None " + kind(Arg::Kind::None));
  EXPECT_EQ(out("return"), "None " + kind(Arg::Kind::None));
  EXPECT_EQ(out("return x, y"), "(x, y) " + kind(Arg::Kind::Tuple));
  EXPECT_EQ(out("return ((x, y), [None, (x,)])"),
            "((x, y), [None, (x,)]) " + kind(Arg::Kind::Tuple));
  EXPECT_EQ(out("return pytree.tree_unflatten([x, None, y], self._out_spec)"),
            "[x, None, y] " + kind(Arg::Kind::List));
}

TEST(Parser, JointHeader) {
  auto g = parse(R"fx(class joint_fn(torch.nn.Module):
    def forward(self, primals, tangents):
        primals_1: "f32[4, 8][8, 1]cpu"; primals_2: "f32[8][1]cpu"; tangents_1: "f32[4, 8][8, 1]cpu"; 
    
        primals_1, primals_2, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        mul: "f32[4, 8][8, 1]cpu" = torch.ops.aten.mul.Tensor(primals_1, primals_2)
        mul_1: "f32[4, 8][8, 1]cpu" = torch.ops.aten.mul.Tensor(tangents_1, primals_2);  tangents_1 = primals_2 = None
        return pytree.tree_unflatten([mul, mul_1, None], self._out_spec)
)fx");
  EXPECT_EQ(g->signature, Signature::Joint);
  auto ph = g->placeholders();
  ASSERT_EQ(ph.size(), 3u);
  EXPECT_EQ(ph[0]->name(), "primals_1");
  EXPECT_EQ(ph[1]->meta().annotation(), "f32[8][1]cpu");
  EXPECT_EQ(ph[2]->name(), "tangents_1");
  EXPECT_EQ(ph[2]->info().loc.line, 5);
  EXPECT_EQ(g->output()->arg(0).kind, Arg::Kind::List);
  EXPECT_NO_THROW(verify(*g));
  // The declarations may come in any order; the unpacking line decides the placeholder order.
  auto g2 = parse(R"fx(def forward(self, primals, tangents):
    tangents_1: "f32[4]";
    primals_1: "f32[4]"
    primals_1, tangents_1 = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
    return [primals_1, tangents_1]
)fx");
  EXPECT_EQ(g2->placeholders()[0]->name(), "primals_1");
}

TEST(Parser, CallsMaySpanLinesAndContinue) {
  auto g = parse(
      "def forward(self,\n        x: \"f32[4]\",\n        y: \"f32[4]\",\n):\n"
      "    add = torch.ops.aten.add.Tensor(  # first\n"
      "        x,\n\n"
      "        # a comment line inside the call\n"
      "        y,\n"
      "        alpha = 2,\n"
      "    )\n"
      "    mul = \\\n"
      "        torch.ops.aten.mul.Tensor(add, add)\n"
      "    return (mul,\n            add)\n");
  EXPECT_EQ(g->find("add")->arg(2).i, 2);
  EXPECT_EQ(g->find("mul")->info().loc.line, 12);
  EXPECT_NO_THROW(verify(*g));
}

TEST(Parser, BlankLinesCommentsTabsAndCrLf) {
  auto g = parse(
      "\n\n# header comment\r\n\tclass GraphModule(torch.nn.Module):  # trailing\r\n"
      "\r\n    def forward(self, x: \"f32[4]\"):\r\n"
      "        \t# indented comment\r\n"
      "        r = torch.ops.aten.relu.default(x)   # trailing comment\r\n\r\n"
      "        return r\r\n# end");
  EXPECT_EQ(g->find("r")->info().loc.line, 8);
  EXPECT_NO_THROW(verify(*g));
}

TEST(Parser, SkipsAUtf8ByteOrderMark) {
  auto g = parse(
      "\xEF\xBB\xBF"
      "def forward(self, x: \"f32[4]\"):\n    return x\n");
  EXPECT_EQ(g->placeholders()[0]->info().loc.col, 19);
}

TEST(Parser, NoPlaceholdersAndConstantsOnly) {
  auto g = parse("def forward(self):\n    return (1, 2.5, 'a', None)\n");
  EXPECT_TRUE(g->placeholders().empty());
  EXPECT_EQ(arg_to_string(g->output()->arg(0)), "(1, 2.5, 'a', None)");
}

TEST(Parser, SymIntValuesInArguments) {
  auto g = parse(with_body("s: \"Sym(s0)\", x: \"f32[s0, 4]\"",
                           "    y = torch.ops.aten.mul.Scalar(x, s)\n    return (y, s)\n"));
  EXPECT_EQ(g->find("y")->arg(1).node, g->find("s"));
  EXPECT_EQ(g->find("y")->meta().annotation(), "f32[s0, 4][4, 1]cpu");
  EXPECT_NO_THROW(verify(*g));
}

// A value of schema type `t` as text and as an Arg, or false when the test cannot make one.
bool sample_value(const TypeRef& t, Node* x, std::string* text, Arg* arg) {
  if (t.optional) {
    *text = "None";
    *arg = Arg::none();
    return true;
  }
  auto scalar = [&](const std::string& s, Arg a) {
    if (t.list) {
      *text = "[" + s + "]";
      *arg = Arg::of_list({a});
    } else {
      *text = s;
      *arg = a;
    }
    return true;
  };
  switch (t.base) {
    case BaseType::Tensor: return scalar("x", Arg(x));
    case BaseType::Int:
    case BaseType::SymInt: return scalar("1", Arg::of_int(1));
    case BaseType::Float: return scalar("1.0", Arg::of_float(1.0));
    case BaseType::Bool: return scalar("False", Arg::of_bool(false));
    case BaseType::Scalar: return scalar("1", Arg::of_int(1));
    case BaseType::ScalarType: return scalar("torch.float32", Arg::of_dtype(ScalarType::Float32));
    case BaseType::Str: return scalar("'none'", Arg::of_str("none"));
    case BaseType::Device: return scalar("device(type='cpu')", Arg::of_device(Device{}));
    case BaseType::Layout: return scalar("torch.strided", Arg::of_layout(Layout::Strided));
    case BaseType::MemoryFormat:
      return scalar("torch.contiguous_format", Arg::of_memory_format(MemoryFormat::Contiguous));
    default: return false;
  }
}

TEST(Parser, BindsArgumentsLikeBindArgumentsForEveryOp) {
  // The parser binds calls itself (with each op's defaults converted once); the result must be
  // what bind_arguments gives, for every op in the registry: same arguments, same given mask.
  int checked = 0;
  for (const OpDef* op : aten_ops().all()) {
    SCOPED_TRACE(op->name);
    Graph scratch;
    Node* x =
        scratch.add_placeholder("x", ValueMeta::of(make_tensor_meta(ScalarType::Float32, {2, 2})));
    std::string call;
    std::vector<Arg> positional;
    bool ok = true;
    for (const SchemaArg& a : op->schema.args) {
      if (a.has_default) continue;
      std::string text;
      Arg value;
      if (!sample_value(a.type, x, &text, &value)) {
        ok = false;
        break;
      }
      if (a.kwarg_only) {
        call += (call.empty() ? "" : ", ") + a.name + " = " + text;
      } else {
        call += (call.empty() ? "" : ", ") + text;
        positional.push_back(value);
      }
    }
    if (!ok) continue;
    std::vector<std::pair<std::string, Arg>> kwargs;
    for (const SchemaArg& a : op->schema.args) {
      if (a.has_default || !a.kwarg_only) continue;
      std::string text;
      Arg value;
      sample_value(a.type, x, &text, &value);
      kwargs.emplace_back(a.name, value);
    }
    std::string ns = op->schema.name.substr(0, op->schema.name.find("::"));
    // Annotated, so that no meta function runs on these arbitrary arguments.
    std::string text = "def forward(self, x: \"f32[2, 2]\"):\n    y: \"f32[2, 2]\" = torch.ops." +
                       ns + "." + op->short_name + "(" + call + ")\n    return y\n";
    std::unique_ptr<Graph> g;
    try {
      g = parse(text);
    } catch (const Error& e) {
      ADD_FAILURE() << text << e.formatted();
      continue;
    }
    auto [want, want_given] = bind_arguments(*op, positional, kwargs);
    Node* y = g->find("y");
    ASSERT_EQ(y->args().size(), want.size());
    EXPECT_EQ(y->given_mask(), want_given);
    for (size_t i = 0; i < want.size(); ++i) {
      // Node references differ only by graph: compare them by name.
      std::string got_s = arg_to_string(y->args()[i]), want_s = arg_to_string(want[i]);
      EXPECT_EQ(got_s, want_s) << "argument " << op->schema.args[i].name;
      EXPECT_EQ(y->args()[i].kind, want[i].kind) << "argument " << op->schema.args[i].name;
    }
    ++checked;
  }
  EXPECT_GT(checked, 100);
  std::printf("%d ops bound alike\n", checked);
}

// PyTorch 2.x's dynamic graphs: SymInt arithmetic as FX prints operator.mul & co. (inline), and
// operator.mul(a, b) written out; printed back inline.
TEST(Parser, SymIntOperators) {
  const char* text = R"FX(def forward(self, x: "f32[s0, s1]"):
    sym_size_int: "Sym(s0)" = torch.ops.aten.sym_size.int(x, 0)
    sym_size_int_1: "Sym(s1)" = torch.ops.aten.sym_size.int(x, 1)
    mul: "Sym(s0*s1)" = sym_size_int * sym_size_int_1
    add: "Sym(s0*s1 + 2)" = mul + 2
    sub: "Sym(s0*s1 + 1)" = add - 1
    floordiv: "Sym((s0//2))" = sym_size_int // 2
    mod: "Sym((s1 % 3))" = sym_size_int_1 % 3
    neg: "Sym(-s0)" = -sym_size_int
    mul_1: "Sym(2*s1)" = 2 * sym_size_int_1
    view: "f32[s0*s1][1]" = torch.ops.aten.view.default(x, [mul])
    return (view, sub, floordiv, mod, neg, mul_1)
)FX";
  auto g = parse(text);
  verify(*g);
  EXPECT_EQ(g->find("mul")->op()->name, "operator::mul");
  EXPECT_EQ(g->find("floordiv")->op()->name, "operator::floordiv");
  EXPECT_EQ(g->find("neg")->op()->name, "operator::neg");
  EXPECT_EQ(g->find("mul_1")->arg(0).kind, Arg::Kind::Int);
  std::string printed = print_graph(*g);
  for (const char* line :
       {"mul: \"Sym(s0*s1)\" = sym_size_int * sym_size_int_1", "add: \"Sym(s0*s1 + 2)\" = mul + 2",
        "sub: \"Sym(s0*s1 + 1)\" = add - 1", "floordiv: \"Sym((s0//2))\" = sym_size_int // 2",
        "mod: \"Sym((s1 % 3))\" = sym_size_int_1 % 3", "neg: \"Sym(-s0)\" = -sym_size_int",
        "mul_1: \"Sym(2*s1)\" = 2 * sym_size_int_1"})
    EXPECT_NE(printed.find(line), std::string::npos) << line << "\n" << printed;
  EXPECT_EQ(print_graph(*parse(printed)), printed);
  auto h = parse(with_body("x: \"f32[s0]\"",
                           "    s = torch.ops.aten.sym_size.int(x, 0)\n"
                           "    m = operator.mul(s, 4)\n    return (m,)\n"));
  EXPECT_EQ(h->find("m")->meta().sym.to_string(), "4*s0");
  EXPECT_THROW(parse(with_body("x: \"f32[4]\"", "    m = x * 2\n    return (m,)\n")), Error);
}

// Hints (the sizes a dynamic graph was traced at) from a `# hints:` comment or the caller.
TEST(Parser, SymbolHints) {
  std::string text = "# hints: s0=8, s1=3\n" + with_body("x: \"f32[s0, s1]\"",
                                                         "    neg = torch.ops.aten.neg.default(x)\n"
                                                         "    return (neg,)\n");
  auto g = parse(text);
  EXPECT_EQ(g->find("neg")->tensor_meta().numel().hint(), 24);
  auto h = parse_graph(text, aten_ops(), SymbolHints{{"s1", 5}});
  EXPECT_EQ(h->find("neg")->tensor_meta().numel().hint(), 40);
  auto none = parse(with_body("x: \"f32[s0]\"", "    return (x,)\n"));
  EXPECT_FALSE(none->find("x")->tensor_meta().numel().hint().has_value());
  SymbolHints out;
  std::string err;
  EXPECT_TRUE(parse_symbol_hints("s0=2, s1 = 16", out, &err));
  EXPECT_EQ(out, (SymbolHints{{"s0", 2}, {"s1", 16}}));
  EXPECT_FALSE(parse_symbol_hints("s0", out, &err));
  EXPECT_NE(err.find("SYMBOL=SIZE"), std::string::npos) << err;
  EXPECT_FALSE(parse_symbol_hints("s0=x", out, &err));
}

}  // namespace
}  // namespace aotgrad
