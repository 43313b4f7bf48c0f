// The in-place foreach ops (seed §13.30: an optimizer's _foreach_*_ calls need their own
// functionalization): a hand-written SGD-with-momentum step over lists of parameters, captured from
// C++ through aot_function, functionalizes to the functional foreach ops and writes every element
// back, as eagerly.
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

#include "../graph_text.h"
#include "aotgrad/aotgrad.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/runtime/compiled_graph.h"

namespace aotgrad {
namespace {

// args: params (2), grads (2), momentum buffers (2): buf = 0.9 * buf + grad; param -= 0.1 * buf.
std::vector<at::Tensor> sgd_momentum_step(const std::vector<at::Tensor>& a) {
  std::vector<at::Tensor> params{a[0], a[1]}, grads{a[2], a[3]}, bufs{a[4], a[5]};
  at::_foreach_mul_(bufs, 0.9);
  at::_foreach_add_(bufs, grads);
  at::_foreach_add_(params, bufs, -0.1);
  return {};
}

std::vector<at::Tensor> step_inputs() {
  return {at::randn({4, 3}), at::randn({5}),    at::randn({4, 3}),
          at::randn({5}),    at::randn({4, 3}), at::randn({5})};
}

std::vector<at::Tensor> clones(const std::vector<at::Tensor>& v) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& t : v) out.push_back(t.clone());
  return out;
}

TEST(Foreach, OptimizerStepWritesEveryElementBack) {
  c10::NoGradGuard no_grad;  // an optimizer step
  AOTFunction f = aot_function(sgd_momentum_step);
  for (int step = 0; step < 3; ++step) {
    std::vector<at::Tensor> got = step_inputs(), want = clones(got);
    f(got);
    sgd_momentum_step(want);
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(at::allclose(got[i], want[i])) << "step " << step << " input " << i;
  }
  EXPECT_EQ(f.num_compilations(), 1u);
}

// The functional graph: each in-place foreach call becomes its functional overload, whose list
// items are the new values of the written elements.
TEST(Foreach, FunctionalizesToTheFunctionalOverloads) {
  std::shared_ptr<Graph> g = parse_text(R"(
def forward(self, p0: "f32[4, 3]", p1: "f32[5]", g0: "f32[4, 3]", g1: "f32[5]"):
    _foreach_add_ = torch.ops.aten._foreach_add_.List([p0, p1], [g0, g1], alpha = -0.1)
    return ()
)");
  CompiledGraph compiled(g);
  const Specialization& s = compiled.plain();
  std::string text = print_graph(*s.fw);
  EXPECT_NE(
      text.find(
          "_foreach_add = torch.ops.aten._foreach_add.List([arg0_1, arg1_1], [arg2_1, arg3_1], "
          "alpha = -0.1)"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("getitem: \"f32[4, 3][3, 1]cpu\" = _foreach_add[0]"), std::string::npos)
      << text;
  EXPECT_NE(text.find("return (getitem, getitem_1)"), std::string::npos) << text;
  EXPECT_EQ(s.meta.mutated_inputs_returned, (std::vector<int>{0, 1}));

  std::vector<at::Tensor> in = step_inputs(), want = clones(in);
  compiled({in[0], in[1], in[2], in[3]});
  at::_foreach_add_(std::vector<at::Tensor>{want[0], want[1]},
                    std::vector<at::Tensor>{want[2], want[3]}, -0.1);
  EXPECT_TRUE(at::allclose(in[0], want[0]));
  EXPECT_TRUE(at::allclose(in[1], want[1]));
  EXPECT_TRUE(at::equal(in[2], want[2]));
}

}  // namespace
}  // namespace aotgrad
