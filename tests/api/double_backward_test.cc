// aotgrad: double backward through aot_function (issue 44, item 3; Note [Double backward] in
// src/runtime/compiled_function.cc) -- a backward with create_graph gives grads that are
// differentiable again, and their derivatives equal eager's: the sin-pow case, a WGAN-GP gradient
// penalty on a small MLP, a Hessian-vector product of a GPT block's loss, with allow_unused both
// ways. Float64, so that the compiled and eager results agree to rounding.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"

namespace aotgrad {
namespace {

using Tensors = std::vector<at::Tensor>;

void expect_close(const at::Tensor& got, const at::Tensor& want, const std::string& what) {
  ASSERT_EQ(got.defined(), want.defined()) << what;
  if (!want.defined()) return;
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  EXPECT_TRUE(at::allclose(got, want, 1e-9, 1e-10))
      << what << ": largest difference " << (got - want).abs().max().item<double>();
}

// Fresh leaves with the same values (and requires_grad) as `ts`.
Tensors leaves_like(const Tensors& ts) {
  Tensors out;
  for (const at::Tensor& t : ts)
    out.push_back(t.detach().clone().requires_grad_(t.requires_grad()));
  return out;
}

at::TensorOptions f64() { return at::TensorOptions().dtype(at::kDouble); }

// d2/dx2 of sum(sin(x)^3): the second derivative through the first, and the first again with
// allow_unused for an input the function does not read (None both ways, as eagerly).
TEST(DoubleBackward, SinPowSecondDerivativeEqualsEager) {
  TensorFunction fn = [](const Tensors& a) -> Tensors { return {a[0].sin().pow(3).sum()}; };
  auto f = aot_function(fn);
  at::Tensor x = at::randn({5}, f64()).requires_grad_();
  at::Tensor unused = at::randn({2}, f64()).requires_grad_();
  Tensors xe = leaves_like({x});
  Tensors g = torch::autograd::grad(f({x}), {x}, {}, true, /*create_graph=*/true);
  Tensors ge = torch::autograd::grad(fn(xe), xe, {}, true, /*create_graph=*/true);
  expect_close(g[0], ge[0], "first derivative");
  ASSERT_TRUE(g[0].requires_grad());
  Tensors h = torch::autograd::grad({g[0].sum()}, {x, unused}, {}, true, false,
                                    /*allow_unused=*/true);
  Tensors he = torch::autograd::grad({ge[0].sum()}, {xe[0], unused}, {}, true, false,
                                     /*allow_unused=*/true);
  expect_close(h[0], he[0], "second derivative");
  EXPECT_FALSE(h[1].defined());
  EXPECT_FALSE(he[1].defined());
  // Without allow_unused, asking for the unused input is libtorch's error, as eagerly.
  EXPECT_ANY_THROW(torch::autograd::grad({g[0].sum()}, {unused}, {}, true));
  EXPECT_ANY_THROW(torch::autograd::grad({ge[0].sum()}, {unused}, {}, true));
  // The closed form: d2/dx2 sin^3 = 6 sin cos^2 - 3 sin^3.
  at::Tensor s = x.detach().sin(), c = x.detach().cos();
  expect_close(h[0], 6 * s * c * c - 3 * s * s * s, "closed form");
  // A third order nests: d/dx of the second derivative's sum.
  Tensors h2 = torch::autograd::grad({g[0].sum()}, {x}, {}, true, /*create_graph=*/true);
  Tensors t = torch::autograd::grad({h2[0].sum()}, {x});
  Tensors he2 = torch::autograd::grad({ge[0].sum()}, xe, {}, true, /*create_graph=*/true);
  Tensors te = torch::autograd::grad({he2[0].sum()}, xe);
  expect_close(t[0], te[0], "third derivative");
}

// WGAN-GP: the critic's gradient penalty at interpolated points, differentiated with respect to
// the critic's parameters.
TEST(DoubleBackward, WganGpGradientPenaltyEqualsEager) {
  TensorFunction critic = [](const Tensors& a) -> Tensors {
    at::Tensor h = at::tanh(at::linear(a[0], a[1], a[2]));
    return {at::linear(h, a[3], a[4]).sum()};
  };
  auto f = aot_function(critic);
  at::Tensor x_hat = at::randn({6, 4}, f64()).requires_grad_();
  Tensors params = {
      at::randn({8, 4}, f64()).requires_grad_(), at::randn({8}, f64()).requires_grad_(),
      at::randn({1, 8}, f64()).requires_grad_(), at::randn({1}, f64()).requires_grad_()};
  auto penalty = [](const at::Tensor& grad) { return (grad.norm(2, {1}) - 1).pow(2).mean(); };
  Tensors args = {x_hat};
  args.insert(args.end(), params.begin(), params.end());
  Tensors eager = leaves_like(args);
  at::Tensor gp =
      penalty(torch::autograd::grad(f(args), {x_hat}, {}, true, /*create_graph=*/true)[0]);
  at::Tensor gpe =
      penalty(torch::autograd::grad(critic(eager), {eager[0]}, {}, true, /*create_graph=*/true)[0]);
  expect_close(gp, gpe, "penalty");
  gp.backward();
  gpe.backward();
  for (size_t i = 0; i < args.size(); ++i)
    expect_close(args[i].grad(), eager[i].grad(), "grad of argument " + std::to_string(i));
  // The output bias does not reach the gradient with respect to x_hat: None, as eagerly.
  EXPECT_FALSE(args[4].grad().defined());
}

// A GPT block: layer norm (libtorch's, or written out of reductions), causal attention, GELU MLP.
TensorFunction gpt_block(bool libtorch_layer_norm) {
  const int64_t B = 2, T = 5, C = 8, H = 2;
  return [=](const Tensors& a) -> Tensors {
    const at::Tensor &x = a[0], &ln_w = a[1], &ln_b = a[2], &qkv_w = a[3], &proj_w = a[4],
                     &fc_w = a[5], &fc2_w = a[6];
    at::Tensor h;
    if (libtorch_layer_norm) {
      h = at::layer_norm(x, {C}, ln_w, ln_b);
    } else {
      at::Tensor centered = x - x.mean({-1}, true);
      h = centered * (centered.pow(2).mean({-1}, true) + 1e-5).rsqrt() * ln_w + ln_b;
    }
    Tensors qkv = at::linear(h, qkv_w).split(C, -1);
    auto heads = [&](const at::Tensor& t) { return t.view({B, T, H, C / H}).transpose(1, 2); };
    at::Tensor q = heads(qkv[0]), k = heads(qkv[1]), v = heads(qkv[2]);
    at::Tensor att = at::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(C / H));
    at::Tensor mask = at::ones({T, T}, at::kBool).triu(1);
    att = at::softmax(att.masked_fill(mask, -1e9), -1);
    at::Tensor y = at::matmul(att, v).transpose(1, 2).reshape({B, T, C});
    at::Tensor r = x + at::linear(y, proj_w);
    at::Tensor out = r + at::linear(at::gelu(at::linear(r, fc_w)), fc2_w);
    return {out.pow(2).mean()};
  };
}

Tensors gpt_block_args() {
  const int64_t B = 2, T = 5, C = 8;
  return {at::randn({B, T, C}, f64()),
          (1 + 0.1 * at::randn({C}, f64())).requires_grad_(),
          (0.1 * at::randn({C}, f64())).requires_grad_(),
          (0.3 * at::randn({3 * C, C}, f64())).requires_grad_(),
          (0.3 * at::randn({C, C}, f64())).requires_grad_(),
          (0.3 * at::randn({4 * C, C}, f64())).requires_grad_(),
          (0.3 * at::randn({C, 4 * C}, f64())).requires_grad_()};
}

// A Hessian-vector product of a GPT block's loss with respect to its parameters.
TEST(DoubleBackward, GptBlockHessianVectorProductEqualsEager) {
  TensorFunction block = gpt_block(/*libtorch_layer_norm=*/false);
  auto f = aot_function(block);
  Tensors args = gpt_block_args();
  Tensors params(args.begin() + 1, args.end());
  Tensors eager = leaves_like(args);
  Tensors eager_params(eager.begin() + 1, eager.end());
  Tensors vs;
  for (const at::Tensor& p : params) vs.push_back(at::randn_like(p));
  auto hvp = [&](const at::Tensor& loss, const Tensors& ps) {
    Tensors g = torch::autograd::grad({loss}, ps, {}, true, /*create_graph=*/true);
    at::Tensor dot = at::zeros({}, f64());
    for (size_t i = 0; i < g.size(); ++i) dot = dot + (g[i] * vs[i]).sum();
    return torch::autograd::grad({dot}, ps, {}, false, false, /*allow_unused=*/true);
  };
  Tensors hv = hvp(f(args)[0], params), hve = hvp(block(eager)[0], eager_params);
  for (size_t i = 0; i < hv.size(); ++i)
    expect_close(hv[i], hve[i], "Hessian-vector product, parameter " + std::to_string(i));
}

// libtorch's layer norm: its backward's derivative rule has no gradient for the saved mean and
// rstd (derivatives.yaml: not implemented), so the first-order grads come with create_graph as
// eagerly, and differentiating them again is an error naming the op, never a wrong product.
TEST(DoubleBackward, LayerNormSecondDerivativeIsAClearError) {
  TensorFunction block = gpt_block(/*libtorch_layer_norm=*/true);
  auto f = aot_function(block);
  Tensors args = gpt_block_args(), eager = leaves_like(args);
  Tensors params(args.begin() + 1, args.end()), eager_params(eager.begin() + 1, eager.end());
  Tensors g = torch::autograd::grad(f(args), params, {}, true, /*create_graph=*/true);
  Tensors ge = torch::autograd::grad(block(eager), eager_params, {}, true, /*create_graph=*/true);
  for (size_t i = 0; i < g.size(); ++i)
    expect_close(g[i], ge[i], "first-order grad of parameter " + std::to_string(i));
  try {
    torch::autograd::grad({g[3].sum()}, params);
    ADD_FAILURE() << "no error";
  } catch (const std::exception& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("double backward through this aotgrad compiled function is not "
                        "supported: its backward cannot be differentiated"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("native_layer_norm_backward"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace aotgrad
