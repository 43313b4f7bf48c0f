// Training through MinCutOptions::recompute_pointwise_from_saved: the graphs of
// tests/data/text/{gelu_layer_norm_mlp,silu_batch_norm_cnn,silu_residual_cnn,squeeze_excitation}.fx,
// whose activations the backward recomputes from their saved inputs, give eager autograd's outputs
// (bit for bit: the same kernels on the same values) and grads, with the option on and off.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "../graph_text.h"
#include "aotgrad/runtime/compiled_function.h"

namespace aotgrad {
namespace {

std::shared_ptr<Graph> text_graph(const std::string& name) {
  return parse_text(read_text(std::string(AOTGRAD_TEST_DATA) + "/text/" + name + ".fx"));
}

/// Leaves that require grad, copies of `values` (the first, the input x, does not).
std::vector<at::Tensor> leaves(const std::vector<at::Tensor>& values) {
  std::vector<at::Tensor> out;
  for (size_t i = 0; i < values.size(); ++i) {
    at::Tensor t = values[i].clone();
    out.push_back(i == 0 ? t : t.requires_grad_());
  }
  return out;
}

/// The compiled step's output and grads against eager's (`eager` computes the output from leaves).
template <typename Eager>
void expect_trains_as_eager(const std::string& name, const std::vector<at::Tensor>& values,
                            Eager eager) {
  for (bool recompute : {true, false}) {
    SCOPED_TRACE(recompute ? "recompute_pointwise_from_saved" : "off");
    TrainOptions o;
    o.pipeline.cache_dir = "off";
    o.pipeline.min_cut.recompute_pointwise_from_saved = recompute;
    std::vector<bool> rg(values.size(), true);
    rg[0] = false;
    CompiledFunction f(text_graph(name), rg, o);
    std::vector<at::Tensor> a = leaves(values), e = leaves(values);
    std::vector<at::Tensor> out = f(a);
    ASSERT_EQ(out.size(), 1u);
    at::Tensor ref = eager(e);
    at::Tensor go = at::randn(ref.sizes(), at::TensorOptions().dtype(at::kFloat));
    out[0].backward(go);
    ref.backward(go);
    EXPECT_TRUE(at::equal(out[0], ref)) << (out[0] - ref).abs().max();
    for (size_t i = 1; i < values.size(); ++i) {
      ASSERT_TRUE(a[i].grad().defined()) << "input " << i;
      EXPECT_TRUE(at::allclose(a[i].grad(), e[i].grad(), 1e-5, 1e-6))
          << "grad of input " << i << ": max |diff| " << (a[i].grad() - e[i].grad()).abs().max();
    }
  }
}

TEST(RecomputePointwise, GeluLayerNormMlpTrainsAsEager) {
  at::manual_seed(0);
  std::vector<at::Tensor> v{at::randn({8, 16}), at::randn({32, 16}), at::randn({32}),
                            at::randn({32}),    at::randn({32}),     at::randn({16, 32}),
                            at::randn({16})};
  expect_trains_as_eager("gelu_layer_norm_mlp", v, [](const std::vector<at::Tensor>& p) {
    at::Tensor h = at::gelu(at::addmm(p[2], p[0], p[1].t()));
    h = at::layer_norm(h, {32}, p[3], p[4], 1e-5);
    return at::addmm(p[6], h, p[5].t());
  });
}

TEST(RecomputePointwise, SiluBatchNormCnnTrainsAsEager) {
  at::manual_seed(0);
  std::vector<at::Tensor> v{at::randn({2, 3, 8, 8}), at::randn({8, 3, 3, 3}), at::randn({8}),
                            at::randn({8}),          at::randn({8, 8, 3, 3}), at::randn({8}),
                            at::randn({8})};
  expect_trains_as_eager("silu_batch_norm_cnn", v, [](const std::vector<at::Tensor>& p) {
    at::Tensor h = at::convolution(p[0], p[1], {}, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1);
    h = at::silu(at::batch_norm(h, p[2], p[3], {}, {}, true, 0.1, 1e-5, false));
    h = at::silu(at::convolution(h, p[4], {}, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1));
    h = at::batch_norm(h, p[5], p[6], {}, {}, true, 0.1, 1e-5, false);
    return h.mean({-1, -2});
  });
}

TEST(RecomputePointwise, SiluResidualCnnTrainsAsEager) {
  at::manual_seed(0);
  std::vector<at::Tensor> v{at::randn({2, 3, 6, 6}), at::randn({8, 3, 3, 3}),
                            at::randn({8}),          at::randn({8}),
                            at::randn({8, 8, 3, 3}), at::randn({8, 8, 3, 3})};
  expect_trains_as_eager("silu_residual_cnn", v, [](const std::vector<at::Tensor>& p) {
    auto conv = [](const at::Tensor& x, const at::Tensor& w) {
      return at::convolution(x, w, {}, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1);
    };
    at::Tensor silu =
        at::silu(at::batch_norm(conv(p[0], p[1]), p[2], p[3], {}, {}, true, 0.1, 1e-5, false));
    at::Tensor sum = at::silu(conv(silu, p[4])) + silu;
    return conv(sum, p[5]).mean({-1, -2});
  });
}

TEST(RecomputePointwise, SqueezeExcitationTrainsAsEager) {
  at::manual_seed(0);
  std::vector<at::Tensor> v{at::randn({2, 3, 4, 4}), at::randn({8, 3, 3, 3}),
                            at::randn({4, 8, 1, 1}), at::randn({4}),
                            at::randn({8, 4, 1, 1}), at::randn({8})};
  expect_trains_as_eager("squeeze_excitation", v, [](const std::vector<at::Tensor>& p) {
    auto conv = [](const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, int64_t stride,
                   int64_t pad) {
      return at::convolution(x, w, b, {stride, stride}, {pad, pad}, {1, 1}, false, {0, 0}, 1);
    };
    at::Tensor silu = at::silu(conv(p[0], p[1], {}, 2, 1));
    at::Tensor scale = at::silu(conv(silu.mean({-1, -2}, true), p[2], p[3], 1, 0));
    return (silu * at::sigmoid(conv(scale, p[4], p[5], 1, 0))).mean({-1, -2});
  });
}

}  // namespace
}  // namespace aotgrad
