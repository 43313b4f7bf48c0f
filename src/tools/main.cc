// aotgrad: the command line (placeholder until the CLI lands).
#include <iostream>

#include "aotgrad/ops/registry.h"

int main() {
  for (const auto* op : aotgrad::aten_ops().all()) std::cout << op->name << "\n";
  return 0;
}
