// Tests for arguments that are views of one storage (§13.23): training keeps unwritten overlapping
// views as independent inputs (PyTorch's merge_view_inputs happy path), refuses written ones with a
// clear error, and the export path raises on overlapping views that the graph writes, as PyTorch's.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <functional>

#include "aotgrad/aotgrad.h"

namespace aotgrad {
namespace {

std::vector<at::Tensor> product_sum(const std::vector<at::Tensor>& in) {
  return {(in[0] * in[1]).sum()};
}

std::vector<at::Tensor> write_first(const std::vector<at::Tensor>& in) {
  at::Tensor x = in[0];
  x.mul_(2);
  return {x + in[1]};
}

// The message of what `f` throws ("(no error)" when it returns).
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(AliasedInputs, UnwrittenOverlappingSlicesOfOneParameterTrain) {
  at::Tensor p = at::randn({10}).requires_grad_();
  AOTFunction f = aot_function(product_sum);
  at::Tensor loss = f({p.slice(0, 0, 6), p.slice(0, 4, 10)})[0];
  loss.backward();
  at::Tensor got = p.grad().clone();
  EXPECT_EQ(f.trains({p.slice(0, 0, 6), p.slice(0, 4, 10)}), std::optional<bool>(true));
  p.mutable_grad() = at::Tensor();
  product_sum({p.slice(0, 0, 6), p.slice(0, 4, 10)})[0].backward();
  EXPECT_TRUE(at::allclose(got, p.grad(), 1e-6, 1e-6)) << got << p.grad();
  EXPECT_TRUE(at::allclose(loss, product_sum({p.slice(0, 0, 6), p.slice(0, 4, 10)})[0]));
}

std::vector<at::Tensor> write_first_scaled(const std::vector<at::Tensor>& in) {
  return {write_first(in)[0] * in[2]};
}

TEST(AliasedInputs, WrittenOverlappingViewsInTrainingAreAClearError) {
  at::Tensor base = at::randn({10}), w = at::randn({6}).requires_grad_();
  AOTFunction f = aot_function(write_first_scaled);
  std::string m = error_of([&] { f({base.slice(0, 0, 6), base.slice(0, 4, 10), w}); });
  EXPECT_NE(m.find("arguments 0 and 1 are overlapping views of one storage and the function "
                   "writes argument 0"),
            std::string::npos)
      << m;
  // Under no_grad the inference path gives them a synthetic base, as eager computes.
  at::NoGradGuard no_grad;
  at::Tensor want_base = base.clone();
  at::Tensor want = write_first_scaled({want_base.slice(0, 0, 6), want_base.slice(0, 4, 10), w})[0];
  at::Tensor got = f({base.slice(0, 0, 6), base.slice(0, 4, 10), w})[0];
  EXPECT_TRUE(at::equal(got, want));
  EXPECT_TRUE(at::equal(base, want_base));
}

TEST(AliasedInputs, ExportRaisesOnOverlappingViewsTheGraphWrites) {
  at::Tensor base = at::randn({10});
  std::string m = error_of([&] {
    aot_export(write_first, {base.slice(0, 0, 6), base.slice(0, 4, 10)}, false);
  });
  EXPECT_NE(m.find("aot_export: encountered aliased inputs that are mutated in the graph you "
                   "are trying to export: inputs arg0_1 and arg1_1"),
            std::string::npos)
      << m;
  // Views of one storage that do not overlap (f(base[:5], base[5:])) export as two inputs.
  ExportedGraphs g = aot_export(write_first, {base.slice(0, 0, 5), base.slice(0, 5, 10)}, false);
  EXPECT_EQ(g.forward->placeholders().size(), 2u);
  EXPECT_EQ(g.inputs_to_mutate, (std::vector<std::string>{"arg0_1"}));
  // Overlapping views that the graph only reads export too.
  EXPECT_NO_THROW(aot_export(product_sum, {base.slice(0, 0, 6), base.slice(0, 4, 10)}, false));
}

}  // namespace
}  // namespace aotgrad
