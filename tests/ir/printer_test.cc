// aotgrad: tests of the graph printer -- the canonical text, FX's release statements, Python
// float repr, and print(parse(text)) as a fixed point.
#include "aotgrad/ir/printer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The text without its full-line comments (the printer does not keep comments).
std::string strip_comment_lines(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) {
    size_t first = line.find_first_not_of(" \t");
    if (first != std::string::npos && line[first] == '#') continue;
    out += line + "\n";
  }
  return out;
}

std::string reprint(const std::string& text) {
  auto g = parse_graph(text, aten_ops());
  verify(*g);
  return print_graph(*g);
}

std::vector<fs::path> fx_files(const fs::path& dir, bool recursive) {
  std::vector<fs::path> out;
  if (!fs::exists(dir)) return out;
  auto add = [&](const fs::directory_entry& e) {
    if (e.is_regular_file() && e.path().extension() == ".fx") out.push_back(e.path());
  };
  if (recursive)
    for (auto& e : fs::recursive_directory_iterator(dir)) add(e);
  else
    for (auto& e : fs::directory_iterator(dir)) add(e);
  std::sort(out.begin(), out.end());
  return out;
}

bool is_unknown_op(const Error& e) { return e.message().rfind("unknown op", 0) == 0; }

TEST(Printer, HandWrittenGraphsAreInCanonicalForm) {
  // tests/data/text holds graphs written in the printer's canonical form (plus comments).
  auto files = fx_files(fs::path(AOTGRAD_TEST_DATA) / "text", false);
  ASSERT_FALSE(files.empty());
  int checked = 0;
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    std::string text = read(f);
    try {
      EXPECT_EQ(reprint(text), strip_comment_lines(text));
      ++checked;
    } catch (const Error& e) {
      if (!is_unknown_op(e)) ADD_FAILURE() << f.filename() << ":" << e.formatted();
      // else: an op family that is not registered yet
    }
  }
  if (checked == 0) GTEST_SKIP() << "every graph uses an op that is not registered yet";
}

TEST(Printer, PrintingIsAFixedPointOnAllDataGraphs) {
  auto files = fx_files(fs::path(AOTGRAD_TEST_DATA), true);
  int checked = 0;
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    std::string once;
    try {
      once = print_graph(*parse_graph(read(f), aten_ops()));
    } catch (const Error& e) {
      continue;  // bad inputs (error tests, ops not registered yet) are other tests' business
    }
    std::string twice = print_graph(*parse_graph(once, aten_ops()));
    EXPECT_EQ(twice, once);
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST(Printer, CanonicalTextIsReproducedExactly) {
  const std::string text = R"fx(class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "f32[4, 8][8, 1]cpu", arg1_1: "Sym(s0)", arg2_1: "f32[s0, 8][8, 1]cpu"):
        split = torch.ops.aten.split.Tensor(arg0_1, 2)
        getitem: "f32[2, 8][8, 1]cpu" = split[0]
        getitem_1: "f32[2, 8][8, 1]cpu" = split[1];  split = None
        add: "f32[2, 8][8, 1]cpu" = torch.ops.aten.add.Tensor(getitem, getitem_1, alpha = 0.5);  getitem = getitem_1 = None
        mul: "f32[s0, 8][8, 1]cpu" = torch.ops.aten.mul.Scalar(arg2_1, arg1_1);  arg2_1 = arg1_1 = None
        gelu: "f32[4, 8][8, 1]cpu" = torch.ops.aten.gelu.default(arg0_1, approximate = 'tanh');  arg0_1 = gelu = None
        return (add, mul)
)fx";
  EXPECT_EQ(reprint(text), text);
}

// x -> relu -> (add(relu, relu), sigmoid(x)); returns add.
std::unique_ptr<Graph> small_graph() {
  const OpTable& ops = aten_ops();
  auto g = std::make_unique<Graph>();
  Node* x = g->add_placeholder("x", ValueMeta::of(make_tensor_meta(ScalarType::Float32, {4})));
  Node* unused =
      g->add_placeholder("unused", ValueMeta::of(make_tensor_meta(ScalarType::Int64, {})));
  (void)unused;
  Node* relu = g->add_call(ops.get("aten::relu"), {x});
  Node* add = g->add_call(ops.get("aten::add.Tensor"), {relu, relu});
  g->add_call(ops.get("aten::sigmoid"), {x});
  g->set_output(Arg::of_tuple({add}));
  return g;
}

// make_fx's tensor constants are get_attr nodes; aotgrad reads them as lifted placeholders (after
// the inputs) and prints them back as PyTorch does, at the top of the body.
TEST(Printer, TensorConstantsAreGetAttrs) {
  const char* pytorch = R"(def forward(self, x_1: "f32[4, 3]"):
    _tensor_constant0: "i64[2]" = self._tensor_constant0
    index_select = torch.ops.aten.index_select.default(x_1, 0, _tensor_constant0)
    return (index_select,)
)";
  auto g = parse_graph(pytorch, aten_ops());
  std::vector<Node*> ph = g->placeholders();
  ASSERT_EQ(ph.size(), 2u);
  EXPECT_EQ(ph[1]->name(), "_tensor_constant0");
  EXPECT_TRUE(ph[1]->info().lifted_constant);
  EXPECT_FALSE(ph[0]->info().lifted_constant);
  PrintOptions o;
  o.class_header = false;
  std::string printed = print_graph(*g, o);
  EXPECT_EQ(
      printed,
      "def forward(self, x_1: \"f32[4, 3][3, 1]cpu\"):\n"
      "    _tensor_constant0: \"i64[2][1]cpu\" = self._tensor_constant0\n"
      "    index_select: \"f32[2, 3][3, 1]cpu\" = torch.ops.aten.index_select.default(x_1, 0, "
      "_tensor_constant0);  x_1 = _tensor_constant0 = None\n"
      "    return (index_select,)\n");
  EXPECT_EQ(print_graph(*parse_graph(printed, aten_ops()), o), printed);
  auto error = [](const char* text) {
    try {
      parse_graph(text, aten_ops());
    } catch (const Error& e) {
      return std::to_string(e.loc().line) + ": " + e.message();
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("def forward(self, x: \"f32[2]\"):\n    c = self.c\n    return (c,)\n"),
            "2: unknown subgraph 'c' (no nested class c(torch.nn.Module) defines it), or a tensor "
            "constant without a type annotation");
  EXPECT_EQ(error("def forward(self, x: \"f32[2]\"):\n    c: \"f32[2]\" = self.d\n"
                  "    return (c,)\n"),
            "2: 'c = self.d': a tensor constant must be assigned to its own name");
}

TEST(Printer, ReleaseStatementsFollowFx) {
  auto g = small_graph();
  // relu is released once (argument order, duplicates once) where it is last used; x at its last
  // use; sigmoid (no users) right after itself; an unused placeholder never; add (used by the
  // output) never.
  EXPECT_EQ(print_graph(*g), R"fx(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[4][1]cpu", unused: "i64[][]cpu"):
        relu: "f32[4][1]cpu" = torch.ops.aten.relu.default(x)
        add: "f32[4][1]cpu" = torch.ops.aten.add.Tensor(relu, relu);  relu = None
        sigmoid: "f32[4][1]cpu" = torch.ops.aten.sigmoid.default(x);  x = sigmoid = None
        return (add,)
)fx");
}

TEST(Printer, Options) {
  auto g = small_graph();
  PrintOptions o;
  o.class_header = false;
  o.annotations = false;
  o.release_statements = false;
  EXPECT_EQ(print_graph(*g, o), R"fx(def forward(self, x, unused):
    relu = torch.ops.aten.relu.default(x)
    add = torch.ops.aten.add.Tensor(relu, relu)
    sigmoid = torch.ops.aten.sigmoid.default(x)
    return (add,)
)fx");
  o.annotations = true;
  std::string no_header = print_graph(*g, o);
  EXPECT_EQ(no_header.rfind("def forward(self, x: \"f32[4][1]cpu\", unused: \"i64[][]cpu\"):\n", 0),
            0u)
      << no_header;
  EXPECT_EQ(print_graph(*parse_graph(no_header, aten_ops()), o), no_header);
  // Placeholders only: the text parses back to the same graph.
  o.annotations = false;
  o.placeholder_annotations = true;
  std::string inputs_only = print_graph(*g, o);
  EXPECT_EQ(inputs_only, R"fx(def forward(self, x: "f32[4][1]cpu", unused: "i64[][]cpu"):
    relu = torch.ops.aten.relu.default(x)
    add = torch.ops.aten.add.Tensor(relu, relu)
    sigmoid = torch.ops.aten.sigmoid.default(x)
    return (add,)
)fx");
  EXPECT_EQ(print_graph(*parse_graph(inputs_only, aten_ops())), print_graph(*g));
}

TEST(Printer, PositionalDefaultsAndKeywordOnlyArguments) {
  const OpTable& ops = aten_ops();
  Graph g;
  Node* x = g.add_placeholder("x", ValueMeta::of(make_tensor_meta(ScalarType::Float32, {4})));
  // max given by keyword: it is positional in the schema, so min's default is printed before it.
  Node* c = g.add_call(ops.get("aten::clamp"), {x}, {{"max", Arg::of_float(6.0)}});
  // alpha is keyword-only: printed as `alpha = 2` only when given.
  Node* a1 = g.add_call(ops.get("aten::add.Tensor"), {c, x});
  Node* a2 = g.add_call(ops.get("aten::add.Tensor"), {a1, x}, {{"alpha", Arg::of_int(2)}});
  // Given explicitly with the default value: still printed.
  Node* a3 = g.add_call(ops.get("aten::add.Tensor"), {a2, x}, {{"alpha", Arg::of_int(1)}});
  g.set_output(Arg(a3));
  std::string s = print_graph(g);
  EXPECT_NE(s.find("clamp: \"f32[4][1]cpu\" = torch.ops.aten.clamp.default(x, None, 6.0)\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("= torch.ops.aten.add.Tensor(clamp, x);  clamp = None\n"), std::string::npos)
      << s;
  EXPECT_NE(s.find("= torch.ops.aten.add.Tensor(add, x, alpha = 2);  add = None\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("= torch.ops.aten.add.Tensor(add_1, x, alpha = 1);  add_1 = x = None\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("        return add_2\n"), std::string::npos) << s;
}

TEST(Printer, ReturnForms) {
  auto printed_return = [](Arg value) {
    Graph g;
    Node* x = g.add_placeholder("x", ValueMeta::of(make_tensor_meta(ScalarType::Float32, {2})));
    Node* y = g.add_placeholder("y", ValueMeta::of(make_tensor_meta(ScalarType::Float32, {2})));
    for (Arg* a : {&value})
      if (a->is_list())
        for (auto& e : a->list)
          if (e.kind == Arg::Kind::Int) e = e.i == 0 ? Arg(x) : Arg(y);
    if (value.kind == Arg::Kind::Int) value = value.i == 0 ? Arg(x) : Arg(y);
    g.set_output(std::move(value));
    std::string s = print_graph(g);
    EXPECT_EQ(print_graph(*parse_graph(s, aten_ops())), s);
    size_t r = s.find("return ");
    return s.substr(r, s.size() - r - 1);
  };
  EXPECT_EQ(printed_return(Arg::of_tuple({Arg::of_int(0), Arg::of_int(1)})), "return (x, y)");
  EXPECT_EQ(printed_return(Arg::of_tuple({Arg::of_int(0)})), "return (x,)");
  EXPECT_EQ(printed_return(Arg::of_list({Arg::of_int(0), Arg::none()})), "return [x, None]");
  EXPECT_EQ(printed_return(Arg::of_int(1)), "return y");
  EXPECT_EQ(printed_return(Arg::none()), "return None");
  EXPECT_EQ(printed_return(Arg::of_tuple({})), "return ()");
}

TEST(Printer, JointGraphHeaderAndReturn) {
  const std::string text = R"fx(class GraphModule(torch.nn.Module):
    def forward(self, primals, tangents):
        primals_1: "f32[4][1]cpu"; tangents_1: "f32[4][1]cpu"; 
    
        primals_1, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        sigmoid: "f32[4][1]cpu" = torch.ops.aten.sigmoid.default(primals_1);  primals_1 = None
        sigmoid_backward: "f32[4][1]cpu" = torch.ops.aten.sigmoid_backward.default(tangents_1, sigmoid);  tangents_1 = None
        return pytree.tree_unflatten([sigmoid, sigmoid_backward], self._out_spec)
)fx";
  EXPECT_EQ(reprint(text), text);
  PrintOptions o;
  o.class_header = false;
  auto g = parse_graph(text, aten_ops());
  std::string s = print_graph(*g, o);
  EXPECT_EQ(s.rfind(R"fx(def forward(self, primals, tangents):
    primals_1: "f32[4][1]cpu"; tangents_1: "f32[4][1]cpu"; 

    primals_1, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
    sigmoid: )fx",
                    0),
            0u)
      << s;
  EXPECT_EQ(print_graph(*parse_graph(s, aten_ops()), o), s);
}

TEST(Printer, PythonFloatRepr) {
  auto repr = [](double v) {
    std::string s;
    append_python_float(s, v);
    return s;
  };
  EXPECT_EQ(repr(0.1), "0.1");
  EXPECT_EQ(repr(1e-05), "1e-05");
  EXPECT_EQ(repr(2.0), "2.0");
  EXPECT_EQ(repr(1e16), "1e+16");
  EXPECT_EQ(repr(1.5e-07), "1.5e-07");
  EXPECT_EQ(repr(-0.0001), "-0.0001");
  EXPECT_EQ(repr(123456789.0), "123456789.0");
  EXPECT_EQ(repr(1e15), "1000000000000000.0");
  EXPECT_EQ(repr(0.0001), "0.0001");
  EXPECT_EQ(repr(-0.1), "-0.1");
  EXPECT_EQ(repr(0.0), "0.0");
  EXPECT_EQ(repr(-0.0), "-0.0");
  EXPECT_EQ(repr(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(repr(2.5e-300), "2.5e-300");
  EXPECT_EQ(repr(1.7976931348623157e308), "1.7976931348623157e+308");
  EXPECT_EQ(repr(5e-324), "5e-324");
  EXPECT_EQ(repr(123456789012345678.0), "1.2345678901234568e+17");
  EXPECT_EQ(repr(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(repr(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(repr(std::nan("")), "nan");
}

TEST(Printer, FloatsSurvivePrintAndParseExactly) {
  std::mt19937_64 rng(1234);
  std::string body;
  std::vector<double> values;
  for (int i = 0; i < 300; ++i) {
    uint64_t bits = rng();
    double v;
    std::memcpy(&v, &bits, sizeof v);
    if (std::isnan(v)) continue;
    if (i % 3 == 0) v = static_cast<double>(static_cast<int64_t>(bits % 2000000) - 1000000) / 1000;
    values.push_back(v);
  }
  Graph g;
  Node* x = g.add_placeholder("x", ValueMeta::of(make_tensor_meta(ScalarType::Float32, {2})));
  Node* prev = x;
  for (double v : values)
    prev = g.add_call(aten_ops().get("aten::mul.Scalar"), {prev, Arg::of_float(v)});
  g.set_output(Arg(prev));
  std::string s = print_graph(g);
  auto back = parse_graph(s, aten_ops());
  size_t k = 0;
  for (Node* n : back->nodes()) {
    if (n->kind() != NodeKind::Call) continue;
    ASSERT_EQ(n->arg(1).kind, Arg::Kind::Float);
    double v = values[k++];
    EXPECT_EQ(std::memcmp(&n->arg(1).f, &v, sizeof v), 0) << v;
  }
  EXPECT_EQ(k, values.size());
  EXPECT_EQ(print_graph(*back), s);
}

TEST(Printer, TupleValuedAndUnannotatedNodes) {
  Graph g;
  Node* x = g.add_placeholder("x", ValueMeta::of(make_tensor_meta(ScalarType::Float32, {4, 2})));
  Node* split = g.add_call(aten_ops().get("aten::split.Tensor"), {x, Arg::of_int(2)});
  Node* gi = g.add_getitem(split, 1);
  Node* r = g.add_call_raw(aten_ops().get("aten::relu"), {Arg(gi)}, 1, ValueMeta::none(), "relu");
  g.set_output(Arg::of_list({r}));
  std::string s = print_graph(g);
  EXPECT_NE(s.find("        split = torch.ops.aten.split.Tensor(x, 2);  x = None\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("        getitem: \"f32[2, 2][2, 1]cpu\" = split[1];  split = None\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("        relu = torch.ops.aten.relu.default(getitem);  getitem = None\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("        return [relu]\n"), std::string::npos) << s;
}

TEST(Printer, SeedMutationGraphReleasesLikeFx) {
  // Section 13.13's graph with keep_inference_input_mutations=True, as PyTorch printed it (here
  // without annotations): the copy_ back into arg0_1 releases its inputs and itself.
  const std::string text = R"fx(def forward(self, arg0_1: "f32[4]", arg1_1: "f32[4]"):
    add = torch.ops.aten.add.Tensor(arg0_1, arg1_1, alpha = -0.1)
    mul = torch.ops.aten.mul.Tensor(add, 2)
    sum_1 = torch.ops.aten.sum.default(mul)
    copy_ = torch.ops.aten.copy_.default(arg0_1, add)
    return (sum_1,)
)fx";
  auto g = parse_graph(text, aten_ops());
  verify(*g);
  PrintOptions o;
  o.class_header = false;
  o.annotations = false;
  EXPECT_EQ(print_graph(*g, o), R"fx(def forward(self, arg0_1, arg1_1):
    add = torch.ops.aten.add.Tensor(arg0_1, arg1_1, alpha = -0.1);  arg1_1 = None
    mul = torch.ops.aten.mul.Tensor(add, 2)
    sum_1 = torch.ops.aten.sum.default(mul);  mul = None
    copy_ = torch.ops.aten.copy_.default(arg0_1, add);  arg0_1 = add = copy_ = None
    return (sum_1,)
)fx");
}

TEST(Printer, MultiResultOpsAndPositionalKeywords) {
  auto g = parse_graph(R"fx(def forward(self, x: "f32[4, 16]", w: "f32[16]"):
    native_layer_norm = torch.ops.aten.native_layer_norm.default(x, [16], weight = w, bias = None, eps = 1e-05)
    getitem: "f32[4, 16][16, 1]cpu" = native_layer_norm[0]
    getitem_1 = native_layer_norm[1]
    sum_1 = torch.ops.aten.sum.dim_IntList(getitem, [0], keepdim = True)
    view = torch.ops.aten.view.default(sum_1, [16])
    return (view, getitem_1)
)fx",
                       aten_ops());
  verify(*g);
  std::string s = print_graph(*g);
  // Positional schema arguments given by keyword print positionally; the tuple-valued node has
  // no annotation; its getitems do.
  EXPECT_NE(s.find("        native_layer_norm = torch.ops.aten.native_layer_norm.default(x, [16], "
                   "w, None, 1e-05);  x = w = None\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("getitem_1: \"f32[4, 1][1, 1]cpu\" = native_layer_norm[1];  "
                   "native_layer_norm = None\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("sum_1: \"f32[1, 16][16, 1]cpu\" = torch.ops.aten.sum.dim_IntList(getitem, "
                   "[0], True);  getitem = None\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("view: \"f32[16][1]cpu\" = torch.ops.aten.view.default(sum_1, [16]);  "
                   "sum_1 = None\n"),
            std::string::npos)
      << s;
  EXPECT_EQ(print_graph(*parse_graph(s, aten_ops())), s);
}

// Higher-order ops take the op they wrap as an argument, printed as FX prints an op (§13.25):
// the text PyTorch prints for a partition with a recomputed random op parses and prints back.
TEST(Printer, HigherOrderOpsAndOpReferencesRoundTrip) {
  const std::string text = R"fx(class GraphModule(torch.nn.Module):
    def forward(self, primals_1: "f32[4, 8][8, 1]cpu"):
        run_and_save_rng_state = torch.ops.higher_order.run_and_save_rng_state(torch.ops.aten.native_dropout.default, primals_1, 0.5, True)
        getitem: "u8[5056][1]cpu" = run_and_save_rng_state[0]
        getitem_1 = run_and_save_rng_state[1];  run_and_save_rng_state = None
        getitem_2: "f32[4, 8][8, 1]cpu" = getitem_1[0];  getitem_1 = None
        run_with_rng_state: "f32[4, 8][8, 1]cpu" = torch.ops.higher_order.run_with_rng_state(getitem, torch.ops.aten.bernoulli.p, primals_1, 0.5, generator = None);  primals_1 = None
        return (getitem_2, getitem, run_with_rng_state)
)fx";
  EXPECT_EQ(reprint(text), text);
  auto g = parse_graph(text, aten_ops());
  const Node* save = g->find("run_and_save_rng_state");
  EXPECT_EQ(save->op()->name, "higher_order::run_and_save_rng_state");
  EXPECT_EQ(save->op()->wrapped, &aten_ops().get("native_dropout"));
  EXPECT_EQ(save->arg(0).kind, Arg::Kind::Op);
  EXPECT_EQ(save->arg(0).op, &aten_ops().get("native_dropout"));
  EXPECT_EQ(save->given_mask(), 0b1111u);
  const Node* with = g->find("run_with_rng_state");
  EXPECT_EQ(with->op()->wrapped, &aten_ops().get("bernoulli.p"));
  EXPECT_EQ(with->arg(0).node, g->find("getitem"));
  EXPECT_EQ(with->given_mask(), 0b11111u);
  // One OpDef per wrapped op: a second parse binds the same one.
  EXPECT_EQ(parse_graph(text, aten_ops())->find("run_with_rng_state")->op(), with->op());
  EXPECT_EQ(arg_to_string(Arg::of_op(aten_ops().get("add.Tensor"))), "torch.ops.aten.add.Tensor");
  EXPECT_EQ(arg_to_string(Arg::of_op(*with->op())), "torch.ops.higher_order.run_with_rng_state");
  EXPECT_TRUE(Arg::of_op(aten_ops().get("t")) == Arg::of_op(aten_ops().get("t.default")));
  EXPECT_FALSE(Arg::of_op(aten_ops().get("t")) == Arg::of_op(aten_ops().get("relu")));
}

}  // namespace
}  // namespace aotgrad
