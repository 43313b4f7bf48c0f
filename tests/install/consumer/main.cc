// Uses the installed headers and library as a user would: parses, verifies and prints a graph,
// then trains a libtorch module one step with aot_module and checks it against eager.
#include <torch/nn/modules/linear.h>

#include <cmath>
#include <iostream>

#include "aotgrad/aotgrad.h"
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

  torch::nn::Linear model(4, 2);
  auto module = model.ptr();
  aotgrad::AOTModule m = aotgrad::aot_module(module, [module](const std::vector<at::Tensor>& in) {
    return std::vector<at::Tensor>{module->forward(in[0]).relu().sum()};
  });
  at::Tensor x = at::randn({3, 4});
  at::Tensor loss = m({x})[0];
  loss.backward();
  at::Tensor grad = module->weight.grad().clone();
  module->weight.mutable_grad().zero_();
  at::Tensor want = module->forward(x).relu().sum();
  want.backward();
  bool same = std::abs(loss.item<double>() - want.item<double>()) < 1e-5 &&
              at::allclose(grad, module->weight.grad(), 1e-5, 1e-6);
  std::cout << (same ? "aot_module matches eager\n" : "aot_module differs from eager\n");
  return same ? 0 : 1;
}
