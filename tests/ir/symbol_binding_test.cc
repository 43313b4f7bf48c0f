// aotgrad: tests of bind_symbols -- which input size binds each size symbol, which are checks.
#include "aotgrad/ir/symbol_binding.h"

#include <gtest/gtest.h>

#include <string>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

// The bindings as text: `s0 = x[1] / 2` per symbol (x[-1]: a SymInt input), then `check y[0] ==
// 2*s0` per check, one a line.
std::string bindings_text(const std::string& graph_text) {
  std::unique_ptr<Graph> g = parse_graph(graph_text, aten_ops());
  SymbolBindings b = bind_symbols(*g);
  std::vector<Node*> phs = g->placeholders();
  auto at = [&](const InputSize& s) {
    return phs[s.input]->name() + "[" + std::to_string(s.dim) + "]";
  };
  std::string out;
  for (const SymbolSource& s : b.symbols)
    out += s.symbol + " = " + at(s.at) + (s.divisor == 1 ? "" : " / " + std::to_string(s.divisor)) +
           "\n";
  for (const InputSize& c : b.checks) out += "check " + at(c) + " == " + c.size.to_string() + "\n";
  return out;
}

std::string error_of(const std::string& graph_text) {
  try {
    bindings_text(graph_text);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(SymbolBinding, StaticGraphBindsNothing) {
  std::unique_ptr<Graph> g = parse_graph(R"FX(
def forward(self, x: "f32[4, 8]"):
    neg = torch.ops.aten.neg.default(x)
    return (neg,)
)FX",
                                         aten_ops());
  SymbolBindings b = bind_symbols(*g);
  EXPECT_TRUE(b.empty());
  EXPECT_TRUE(b.checks.empty());
  EXPECT_EQ(b.find("s0"), -1);
}

// The first bare occurrence binds, in input order and dimension order; later ones are checks.
TEST(SymbolBinding, FirstBareSizeBinds) {
  EXPECT_EQ(bindings_text(R"FX(
def forward(self, x: "f32[s0, s1]", y: "f32[s1, s0]"):
    t = torch.ops.aten.t.default(y)
    add = torch.ops.aten.add.Tensor(x, t)
    return (add,)
)FX"),
            "s0 = x[0]\n"
            "s1 = x[1]\n"
            "check y[0] == s1\n"
            "check y[1] == s0\n");
}

// A bare size binds even when a multiple of the symbol comes first; with no bare size the first
// multiple binds and divides. Expressions are always checks.
TEST(SymbolBinding, BareSizeBeforeMultipleElseFirstMultiple) {
  EXPECT_EQ(bindings_text(R"FX(
def forward(self, x: "f32[2*s0, 4*s1]", y: "f32[s0]", z: "f32[3*s1, s0 + 1]"):
    neg = torch.ops.aten.neg.default(x)
    return (neg, y, z)
)FX"),
            "s0 = y[0]\n"
            "s1 = x[1] / 4\n"
            "check x[0] == 2*s0\n"
            "check z[0] == 3*s1\n"
            "check z[1] == s0 + 1\n");
}

// A SymInt input binds like a size (dimension -1), before a later tensor dimension.
TEST(SymbolBinding, SymIntInputBinds) {
  EXPECT_EQ(bindings_text(R"FX(
def forward(self, n: "Sym(s0)", x: "f32[s0, 3]"):
    neg = torch.ops.aten.neg.default(x)
    return (neg,)
)FX"),
            "s0 = n[-1]\n"
            "check x[0] == s0\n");
}

TEST(SymbolBinding, SymbolNoInputBindsIsAnError) {
  EXPECT_EQ(error_of(R"FX(
def forward(self, x: "f32[2*s0 + 1]"):
    neg = torch.ops.aten.neg.default(x)
    return (neg,)
)FX"),
            "size symbol s0 (in input 'x', 2*s0 + 1) is bound by no input: no input has a size or "
            "SymInt value that is just s0 or a multiple of it");
  // Bound symbols do not excuse another one in the same expression.
  EXPECT_EQ(error_of(R"FX(
def forward(self, x: "f32[s0]", y: "f32[s0*s1]"):
    neg = torch.ops.aten.neg.default(x)
    return (neg, y)
)FX"),
            "size symbol s1 (in input 'y', s0*s1) is bound by no input: no input has a size or "
            "SymInt value that is just s1 or a multiple of it");
}

}  // namespace
}  // namespace aotgrad
