// Uses the installed headers and library: parses, verifies and prints a graph.
#include <iostream>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"

int main() {
  const char* text =
      "def forward(self, x: \"f32[2, 3]\"):\n"
      "    relu = torch.ops.aten.relu.default(x)\n"
      "    return (relu,)\n";
  auto g = aotgrad::parse_graph(text, aotgrad::aten_ops());
  aotgrad::verify(*g);
  std::cout << aotgrad::print_graph(*g);
  return 0;
}
