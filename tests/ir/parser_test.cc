// aotgrad: tests of the graph text parser -- accepted forms and error positions.
#include "aotgrad/ir/parser.h"

#include <gtest/gtest.h>

#include "aotgrad/ir/printer.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

TEST(Parser, Smoke) {
  auto g = parse_graph(
      "def forward(self, x: \"f32[4]\"):\n    y = torch.ops.aten.relu.default(x)\n    return "
      "(y,)\n",
      aten_ops());
  EXPECT_EQ(g->size(), 3u);
}

}  // namespace
}  // namespace aotgrad
