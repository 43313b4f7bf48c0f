// aotgrad: tests of the graph text parser's errors -- each names the line, column and what was
// expected, and hostile input never crashes.
#include <gtest/gtest.h>

#include <string>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

struct ErrorCase {
  std::string name;
  std::string text;
  int line;
  int col;
  std::string message;  // the whole message, or a prefix when it ends with "..."
};

// `x: f32[4]` and `y: f32[4]` placeholders, then `body`.
std::string body(const std::string& b) {
  return "def forward(self, x: \"f32[4]\", y: \"f32[4]\"):\n" + b;
}

void expect_error(const ErrorCase& c) {
  SCOPED_TRACE(c.name);
  try {
    parse_graph(c.text, aten_ops());
    ADD_FAILURE() << c.name << ": parsed without error";
  } catch (const Error& e) {
    EXPECT_EQ(e.loc().line, c.line) << e.formatted();
    EXPECT_EQ(e.loc().col, c.col) << e.formatted();
    const std::string& m = c.message;
    if (m.size() > 3 && m.compare(m.size() - 3, 3, "...") == 0)
      EXPECT_EQ(e.message().substr(0, m.size() - 3), m.substr(0, m.size() - 3)) << e.message();
    else
      EXPECT_EQ(e.message(), m);
  }
}

TEST(ParserErrors, Syntax) {
  for (const auto& c : std::vector<ErrorCase>{
           {"missing close paren",
            body("    a = torch.ops.aten.add.Tensor(x, y z)\n    return a\n"), 2, 40,
            "expected ')' after arguments, got 'z'"},
           {"truncated call", body("    a = torch.ops.aten.add.Tensor(x, "), 2, 38,
            "unexpected end of input (expected ')' after arguments)"},
           {"truncated in list", body("    a = torch.ops.aten.add.Tensor(x, [1, 2"), 2, 43,
            "unexpected end of input (expected ',' or ']' in the list)"},
           {"truncated def", "def forward(self, x: \"f32[4]\"", 1, 30,
            "unexpected end of input (expected ')' after the parameters of forward)"},
           {"empty input", "", 1, 1,
            "unexpected end of input (expected 'def forward(self, ...):')"},
           {"only comments", "# nothing\n\n", 3, 1,
            "unexpected end of input (expected 'def forward(self, ...):')"},
           {"no def", "x = 1\n", 1, 1, "expected 'def forward(self, ...):', got 'x'"},
           {"no self", "def forward(x: \"f32[4]\"):\n    return x\n", 1, 13,
            "expected 'self' as the first parameter of forward, got 'x'"},
           {"missing colon", "def forward(self)\n    return None\n", 1, 18,
            "expected ':' after 'def forward(...)', got end of line"},
           {"statement is not a name", body("    42\n"), 2, 5, "expected a statement, got '42'"},
           {"no equals", body("    a torch.ops.aten.relu.default(x)\n"), 2, 7,
            "expected '=' after 'a', got 'torch'"},
           {"junk after statement", body("    a = torch.ops.aten.relu.default(x) x\n"), 2, 40,
            "expected ';' or the end of the line, got 'x'"},
           {"call without parens", body("    a = torch.ops.aten.relu.default\n"), 2, 36,
            "expected '(' after the op name, got end of line"},
           {"unterminated string",
            body("    a = torch.ops.aten.gelu.default(x, approximate='tanh)\n"), 2, 52,
            "unterminated string literal (expected a closing ')"},
           {"binary garbage", body("    a = \x01\xff\n"), 2, 9,
            "unexpected character '\\x01' (the graph text is ASCII Python code)"},
           {"non-ascii outside strings", body("    a\xc3\xa9 = x\n"), 2, 6,
            "unexpected character '\\xc3' (the graph text is ASCII Python code)"},
           {"statement after return",
            body("    return x\n    a = torch.ops.aten.relu.default(x)\n"), 3, 5,
            "unexpected statement after the return statement"},
           {"second def", body("    return x\ndef forward(self):\n"), 3, 1,
            "unexpected statement after the return statement"},
           {"no return", body("    a = torch.ops.aten.relu.default(x)\n"), 3, 1,
            "the graph has no return statement"},
           {"no return, no newline", body("    a = torch.ops.aten.relu.default(x)"), 2, 39,
            "the graph has no return statement"},
           {"positional after keyword",
            body("    a = torch.ops.aten.add.Tensor(x, other=y, 2)\n    return a\n"), 2, 47,
            "positional argument follows keyword argument"},
           {"minus without number",
            body("    a = torch.ops.aten.mul.Scalar(x, -y)\n    return a\n"), 2, 39,
            "expected a number after '-', got 'y'"},
           {"bad getitem index", body("    a = x[y]\n    return a\n"), 2, 11,
            "expected an integer index, got 'y'"},
       })
    expect_error(c);
}

TEST(ParserErrors, NamesAndValues) {
  for (const auto& c : std::vector<ErrorCase>{
           {"used before defined",
            body("    a = torch.ops.aten.add.Tensor(x, b)\n    b = torch.ops.aten.relu.default(x)\n"
                 "    return a\n"),
            2, 38, "'b' used before it is defined"},
           {"undefined in return", body("    return (x, nope)\n"), 2, 16,
            "'nope' used before it is defined"},
           {"defined twice",
            body("    add = torch.ops.aten.add.Tensor(x, y)\n    add = "
                 "torch.ops.aten.add.Tensor(x, y)\n"
                 "    return add\n"),
            3, 5, "name 'add' is defined twice"},
           {"redefines a placeholder",
            body("    x = torch.ops.aten.relu.default(y)\n    return x\n"), 2, 5,
            "name 'x' is defined twice"},
           {"unknown recompute policy",
            body("    relu = torch.ops.aten.relu.default(y)  # recompute=SOMETIMES\n"
                 "    return relu\n"),
            2, 5,
            "unknown recompute policy 'SOMETIMES' of 'relu'; expected MUST_SAVE, PREFER_SAVE, "
            "MUST_RECOMPUTE or PREFER_RECOMPUTE"},
           // Found by tests/fuzz/graph_text_fuzz: the policy's bytes were quoted unescaped.
           {"recompute policy of binary bytes",
            body("    relu = torch.ops.aten.relu.default(y)  # recompute=MUST\x01\xff\n"
                 "    return relu\n"),
            2, 5,
            "unknown recompute policy 'MUST\\x01\\xff' of 'relu'; expected MUST_SAVE, "
            "PREFER_SAVE, MUST_RECOMPUTE or PREFER_RECOMPUTE"},
           {"duplicate parameter",
            "def forward(self, x: \"f32[4]\", x: \"f32[4]\"):\n    return x\n", 1, 32,
            "name 'x' is defined twice"},
           {"reserved name", body("    None = torch.ops.aten.relu.default(x)\n    return x\n"), 2,
            5, "'None' cannot name a value"},
           {"output is reserved",
            body("    output = torch.ops.aten.relu.default(x)\n    return output\n"), 2, 5,
            "name 'output' is reserved for the graph's output node"},
           {"huge int",
            body("    a = torch.ops.aten.mul.Scalar(x, 99999999999999999999)\n    return a\n"), 2,
            38, "integer '99999999999999999999' is out of range for a 64-bit int"},
           {"int just past the minimum",
            body("    a = torch.ops.aten.mul.Scalar(x, -9223372036854775809)\n    return a\n"), 2,
            39, "integer -'9223372036854775809' is out of range for a 64-bit int"},
           {"unknown torch attribute",
            body("    a = torch.ops.aten._to_copy.default(x, dtype=torch.float99)\n    return a\n"),
            2, 56,
            "unknown value 'torch.float99' (expected a dtype such as torch.float32, a layout such "
            "as "
            "torch.strided, a memory format such as torch.contiguous_format, or "
            "torch.device(...))"},
           {"unknown device",
            body("    a = torch.ops.aten._to_copy.default(x, device=device(type='tpu'))\n"
                 "    return a\n"),
            2, 63, "unknown device 'tpu' (expected cpu, cuda or meta)"},
           {"device without type",
            body("    a = torch.ops.aten._to_copy.default(x, device=device())\n"), 2, 58,
            "device(...) needs a type such as 'cpu'"},
       })
    expect_error(c);
}

TEST(ParserErrors, OpsAndArguments) {
  for (const auto& c : std::vector<ErrorCase>{
           {"unknown op", body("    a = torch.ops.aten.foo.default(x)\n    return a\n"), 2, 9,
            "unknown op 'aten::foo.default'"},
           {"unknown overload", body("    a = torch.ops.aten.add.Nope(x, y)\n    return a\n"), 2, 9,
            "unknown op 'aten::add.Nope'"},
           {"unknown namespace", body("    a = torch.ops.prims.add.default(x, y)\n    return a\n"),
            2, 9, "unknown op 'prims::add.default'"},
           {"not an op path", body("    a = foo(x)\n    return a\n"), 2, 9,
            "expected an op such as torch.ops.aten.add.Tensor, got 'foo'"},
           {"wrong argument type",
            body("    a = torch.ops.aten.add.Tensor(x, 'a')\n    return a\n"), 2, 38,
            "aten::add.Tensor argument 'other': expected Tensor, got str 'a'"},
           // Found by tests/fuzz/graph_text_fuzz: a string's bytes were quoted unescaped.
           {"wrong argument type, binary string",
            body("    a = torch.ops.aten.add.Tensor(x, 'f32[4]\xe9"
                 "cpu')\n    return a\n"),
            2, 38, "aten::add.Tensor argument 'other': expected Tensor, got str 'f32[4]\\xe9cpu'"},
           {"wrong argument type, binary strings in a list",
            body("    a = torch.ops.aten.add.Tensor(x, ['\x01'])\n    return a\n"), 2, 38,
            "aten::add.Tensor argument 'other': expected Tensor, got list ['\\x01']"},
           {"wrong keyword type",
            body("    a = torch.ops.aten.add.Tensor(x, y, alpha = x)\n    return a\n"), 2, 49,
            "aten::add.Tensor argument 'alpha': expected Scalar, got 'x' (tensor f32[4][1]cpu)"},
           {"unknown keyword",
            body("    a = torch.ops.aten.add.Tensor(x, y, beta = 2)\n    return a\n"), 2, 48,
            "aten::add.Tensor has no argument 'beta'"},
           {"keyword twice",
            body("    a = torch.ops.aten.add.Tensor(x, y, other = y)\n    return a\n"), 2, 49,
            "aten::add.Tensor got argument 'other' twice"},
           {"too many positional",
            body("    a = torch.ops.aten.add.Tensor(x, y, 2)\n    return a\n"), 2, 41,
            "aten::add.Tensor takes at most 2 positional arguments, got 3"},
           {"missing argument", body("    a = torch.ops.aten.add.Tensor(x)\n    return a\n"), 2, 9,
            "aten::add.Tensor is missing argument 'other' (Tensor)"},
           {"meta function rejects",
            "def forward(self, x: \"f32[4]\", y: \"f32[3]\"):\n    a = "
            "torch.ops.aten.add.Tensor(x, y)\n"
            "    return a\n",
            2, 9,
            "aten::add.Tensor: the size of tensor a (4) must match the size of tensor b (3)..."},
           // Found by tests/fuzz/cache_entry_fuzz: the meta function's message quoted the string
           // argument's bytes unescaped.
           {"meta function rejects a binary string",
            body("    a = torch.ops.aten.div.Tensor_mode(x, y, rounding_mode = 'fl\xffor')\n"
                 "    return a\n"),
            2, 9,
            "aten::div.Tensor_mode: div expected rounding_mode to be one of None, 'trunc', or "
            "'floor' but found 'fl\\xffor'"},
           {"getitem of a tensor", body("    a = x[0]\n    return a\n"), 2, 9,
            "getitem on placeholder 'x', which is not a tuple (tensor f32[4][1]cpu)"},
           {"getitem out of range",
            "def forward(self, x: \"f32[4, 8]\"):\n    s = torch.ops.aten.split.Tensor(x, 2)\n"
            "    a = operator.getitem(s, 5)\n    return a\n",
            3, 29,
            "getitem index 5 is out of range for node 's' (aten::split.Tensor) with 2 results"},
           {"nesting too deep",
            body("    a = torch.ops.aten.mul.Scalar(x, " + std::string(5000, '[') + "\n"), 2, 139,
            "nesting is too deep (more than 100 levels)"},
       })
    expect_error(c);
}

TEST(ParserErrors, Annotations) {
  for (const auto& c : std::vector<ErrorCase>{
           {"unknown dtype", "def forward(self, x: \"f99[4]\"):\n    return x\n", 1, 22,
            "annotation \"f99[4]\": unknown dtype 'f99' (expected one of f64 f32 f16 bf16 i64 i32 "
            "i16 i8 u8 b8 c64 c128)"},
           {"placeholder without annotation",
            "def forward(self, x: \"f32[4]\", y):\n    return x\n", 1, 32,
            "placeholder 'y' has no type annotation"},
           {"single placeholder without annotation", "def forward(self, x):\n    return x\n", 1, 19,
            "placeholder 'x' has no type annotation"},
           {"bad node annotation",
            body("    a: \"f32[4\" = torch.ops.aten.relu.default(x)\n    return a\n"), 2, 8,
            "annotation \"f32[4\": expected ']' after sizes"},
           {"bad size expression", "def forward(self, x: \"f32[s0 +]\"):\n    return x\n", 1, 22,
            "annotation \"f32[s0 +]\": in size expression 's0 +': unexpected end"},
           {"strides do not match", "def forward(self, x: \"f32[4, 4][1]\"):\n    return x\n", 1,
            22, "annotation \"f32[4, 4][1]\": 2 sizes but 1 strides"},
           {"unknown annotation device", "def forward(self, x: \"f32[4][1]tpu\"):\n    return x\n",
            1, 22,
            "annotation \"f32[4][1]tpu\": unknown device 'tpu' (expected cpu, cuda or meta)"},
           {"annotation is not a string or type", "def forward(self, x: 42):\n    return x\n", 1,
            22, "expected a type annotation such as \"f32[4, 8]\", got '42'"},
           {"joint: missing declaration",
            "def forward(self, primals, tangents):\n    primals_1: \"f32[4]\";\n"
            "    primals_1, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], "
            "self._in_spec)\n    return [primals_1]\n",
            3, 16, "placeholder 'tangents_1' has no type annotation"},
           {"joint: annotation not unpacked",
            "def forward(self, primals, tangents):\n    primals_1: \"f32[4]\"; extra: \"f32[4]\";\n"
            "    primals_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)\n"
            "    return [primals_1]\n",
            2, 26, "'extra' is annotated but not unpacked by fx_pytree.tree_flatten_spec"},
           {"joint: no unpacking line",
            "def forward(self, primals, tangents):\n    primals_1: \"f32[4]\";\n    return "
            "[primals_1]\n",
            1, 19, "placeholder 'primals' has no type annotation"},
           {"joint: unknown pytree argument",
            "def forward(self, primals, tangents):\n    primals_1: \"f32[4]\";\n"
            "    primals_1, = fx_pytree.tree_flatten_spec([primals, other], self._in_spec)\n"
            "    return [primals_1]\n",
            3, 56, "'other' is not a parameter of forward"},
       })
    expect_error(c);
}

TEST(ParserErrors, AllErrorsAreAotgradErrors) {
  // Truncating a valid graph at every byte gives either a graph or an Error, never a crash or
  // another exception type.
  const std::string text = R"fx(class GraphModule(torch.nn.Module):
    def forward(self, primals, tangents):
        primals_1: "f32[4, 8][8, 1]cpu"; tangents_1: "f32[4, 8][8, 1]cpu"; 
    
        primals_1, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        split = torch.ops.aten.split.Tensor(primals_1, 2)
        getitem: "f32[2, 8][8, 1]cpu" = split[0]
        getitem_1 = operator.getitem(split, 1);  split = None
        mul: "f32[2, 8][8, 1]cpu" = torch.ops.aten.mul.Tensor(getitem, getitem_1, );  getitem = None
        gelu = torch.ops.aten.gelu.default(mul, approximate = 'tanh')
        clamp = torch.ops.aten.clamp.default(gelu, -inf, 1e-05)
        return pytree.tree_unflatten([clamp, (mul, [None, getitem_1])], self._out_spec)
)fx";
  parse_graph(text, aten_ops());  // the whole text is valid
  int errors = 0;
  for (size_t n = 0; n < text.size(); ++n) {
    try {
      parse_graph(text.substr(0, n), aten_ops());
    } catch (const Error& e) {
      ++errors;
      EXPECT_GT(e.loc().line, 0) << "no position for the error at length " << n << ": "
                                 << e.message();
    }
  }
  EXPECT_GT(errors, static_cast<int>(text.size()) - 10);
}

TEST(ParserErrors, HigherOrderOpsAndOpReferences) {
  const std::string save = "    a = torch.ops.higher_order.run_and_save_rng_state(";
  const int arg_col = static_cast<int>(save.size()) + 1;
  for (const auto& c : std::vector<ErrorCase>{
           {"value for the op", body(save + "x, 0.5)\n    return a\n"), 2, arg_col,
            "expected the op higher_order::run_and_save_rng_state wraps, such as "
            "torch.ops.aten.native_dropout.default, got x"},
           {"unknown op reference", body(save + "torch.ops.aten.nope.default, x)\n    return a\n"),
            2, arg_col, "unknown op 'aten::nope.default'"},
           {"higher-order op as an argument",
            body(save + "torch.ops.higher_order.run_with_rng_state, x)\n    return a\n"), 2,
            arg_col,
            "the higher-order op 'torch.ops.higher_order.run_with_rng_state' cannot be an "
            "argument"},
           {"too many arguments for the wrapped op",
            body(save + "torch.ops.aten.relu.default, x, y)\n    return a\n"), 2, arg_col + 32,
            "higher_order::run_and_save_rng_state takes at most 2 positional arguments, got 3"},
           {"unknown higher-order op",
            body("    a = torch.ops.higher_order.nope(x)\n    return a\n"), 2, 9,
            "unknown higher-order op 'torch.ops.higher_order.nope'"},
           {"no state", body("    a = torch.ops.higher_order.run_with_rng_state()\n    return a\n"),
            2, 51, "expected argument 'rng_state' of higher_order::run_with_rng_state, got ')'"},
           {"op reference for a tensor",
            body("    a = torch.ops.aten.add.Tensor(x, torch.ops.aten.relu.default)\n    return "
                 "a\n"),
            2, 38,
            "aten::add.Tensor argument 'other': expected Tensor, got op "
            "torch.ops.aten.relu.default"},
       })
    expect_error(c);
}

}  // namespace
}  // namespace aotgrad
