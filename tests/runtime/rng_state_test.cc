// Tests of RNG-safe recomputation against libtorch (§13.25): the generator state's size and the
// run_and_save_rng_state / run_with_rng_state ops in the interpreter.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/runtime/compiled_function.h"
#include "aotgrad/runtime/interpreter.h"

namespace aotgrad {
namespace {

at::Tensor cpu_state() {
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

TEST(RngState, CpuGeneratorStateIsTheDeclaredU8Tensor) {
  at::Tensor s = cpu_state();
  EXPECT_EQ(s.scalar_type(), at::kByte);
  ASSERT_EQ(s.dim(), 1);
  EXPECT_EQ(s.numel(), kCpuRngStateBytes);
  EXPECT_EQ(s.numel(), cpu_rng_state_meta().sizes[0].value());
}

TEST(RngState, InterpreterReplaysTheSavedStateAndRestoresTheGenerator) {
  auto g = std::shared_ptr<const Graph>(parse_graph(R"(
def forward(self, x: "f32[64]"):
    run_and_save_rng_state = torch.ops.higher_order.run_and_save_rng_state(torch.ops.aten.rand_like.default, x)
    getitem = run_and_save_rng_state[0]
    getitem_1 = run_and_save_rng_state[1]
    rand_like = torch.ops.aten.rand_like.default(x)
    run_with_rng_state = torch.ops.higher_order.run_with_rng_state(getitem, torch.ops.aten.rand_like.default, x)
    rand_like_1 = torch.ops.aten.rand_like.default(x)
    return (getitem, getitem_1, rand_like, run_with_rng_state, rand_like_1)
)",
                                                    aten_ops()));
  Interpreter interp(g);
  at::Tensor x = at::zeros({64});
  at::manual_seed(7);
  at::Tensor seeded = cpu_state();
  std::vector<c10::IValue> out = interp.run({x});
  at::Tensor after = cpu_state();
  at::manual_seed(7);
  at::Tensor first = at::rand_like(x), second = at::rand_like(x), third = at::rand_like(x);
  EXPECT_TRUE(at::equal(cpu_state(), after));  // three draws, as eager
  EXPECT_TRUE(at::equal(out[0].toTensor(), seeded));
  EXPECT_TRUE(at::equal(out[1].toTensor(), first));
  EXPECT_TRUE(at::equal(out[2].toTensor(), second));
  EXPECT_TRUE(at::equal(out[3].toTensor(), first));  // replayed bit for bit
  EXPECT_TRUE(at::equal(out[4].toTensor(), third));  // the generator was put back
}

TEST(RngState, ABadStateIsAnErrorAndLeavesTheGeneratorAlone) {
  auto g = std::shared_ptr<const Graph>(parse_graph(R"(
def forward(self, s: "u8[10]", x: "f32[4]"):
    run_with_rng_state = torch.ops.higher_order.run_with_rng_state(s, torch.ops.aten.rand_like.default, x)
    return (run_with_rng_state,)
)",
                                                    aten_ops()));
  Interpreter interp(g);
  at::manual_seed(3);
  at::Tensor before = cpu_state();
  try {
    interp.run({at::zeros({10}, at::kByte), at::zeros({4})});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.message(),
                testing::StartsWith("node 'run_with_rng_state' (higher_order::run_with_rng_state): "
                                    "cannot set the CPU generator's state: "));
  }
  EXPECT_TRUE(at::equal(cpu_state(), before));
}

}  // namespace
}  // namespace aotgrad
