// The op world through aot_function: common libtorch calls, most of them ops the registry does not
// declare, captured on fake tensors, compiled, trained, and compared with eager libtorch (outputs
// and every input's gradient).
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "aotgrad/aotgrad.h"

namespace aotgrad {
namespace {

namespace F = torch::nn::functional;

struct Case {
  std::string name;
  std::function<std::vector<at::Tensor>()> inputs;  // floating inputs require grad
  TensorFunction fn;
};

at::Tensor r(std::vector<int64_t> sizes) { return at::randn(sizes); }
at::Tensor idx(std::vector<int64_t> values) { return torch::tensor(values, at::kLong); }

std::vector<Case> cases() {
  using V = std::vector<at::Tensor>;
  return {
      {"to_dtype",
       [] {
         return V{r({3, 4})};
       },
       [](const V& a) -> V {
         return {a[0].to(at::kDouble).sin(), a[0].to(at::kDouble).to(at::kFloat)};
       }},
      {"chunk",
       [] {
         return V{r({6, 4})};
       },
       [](const V& a) -> V {
         auto parts = a[0].chunk(3, 0);
         return {parts[0] * parts[2], parts[1].exp()};
       }},
      {"einsum",
       [] {
         return V{r({2, 3, 4}), r({2, 4, 5})};
       },
       [](const V& a) -> V {
         return {at::einsum("bij,bjk->bik", {a[0], a[1]})};
       }},
      {"group_norm",
       [] {
         return V{r({2, 6, 5}), r({6}), r({6})};
       },
       [](const V& a) -> V { return {at::group_norm(a[0], 3, a[1], a[2])}; }},
      {"cumsum_logsumexp",
       [] {
         return V{r({3, 5})};
       },
       [](const V& a) -> V {
         return {a[0].cumsum(1), a[0].logsumexp({1})};
       }},
      {"leaky_relu_softplus",
       [] {
         return V{r({4, 5})};
       },
       [](const V& a) -> V {
         return {at::leaky_relu(a[0], 0.1), at::softplus(a[0], 2.0)};
       }},
      {"repeat_flip_tril",
       [] {
         return V{r({3, 3})};
       },
       [](const V& a) -> V {
         return {a[0].repeat({2, 1}).flip({0}), a[0].tril()};
       }},
      {"norm_topk",
       [] {
         return V{r({4, 6})};
       },
       [](const V& a) -> V {
         return {a[0].norm(), a[0].norm(2, {1}), std::get<0>(a[0].topk(2, 1))};
       }},
      {"bce_with_logits",
       [] {
         return V{r({4, 3}), at::rand({4, 3})};
       },
       [](const V& a) -> V { return {at::binary_cross_entropy_with_logits(a[0], a[1].detach())}; }},
      {"upsample_nearest2d",
       [] {
         return V{r({1, 2, 3, 3})};
       },
       [](const V& a) -> V {
         return {F::interpolate(a[0], F::InterpolateFuncOptions()
                                          .scale_factor(std::vector<double>{2, 2})
                                          .mode(torch::kNearest))};
       }},
      {"interpolate_bilinear",
       [] {
         return V{r({1, 2, 3, 3})};
       },
       [](const V& a) -> V {
         return {F::interpolate(a[0], F::InterpolateFuncOptions()
                                          .size(std::vector<int64_t>{5, 4})
                                          .mode(torch::kBilinear)
                                          .align_corners(false))};
       }},
      {"scatter_gather",
       [] {
         return V{r({3, 4}), r({3, 2})};
       },
       [](const V& a) -> V {
         at::Tensor index = idx({0, 2, 1, 3, 3, 0}).view({3, 2});
         return {a[0].scatter(1, index, a[1]), a[0].gather(1, index)};
       }},
      {"advanced_indexing",
       [] {
         return V{r({5, 3})};
       },
       [](const V& a) -> V {
         return {a[0].index({idx({4, 0, 2})}) * 2};
       }},
      {"constant_masks",
       [] {
         return V{r({3, 4})};
       },
       [](const V& a) -> V {
         // Masks the function makes: their values fix the results' shapes (see Note [Masks the
         // function made]).
         at::Tensor mask = at::arange(12).view({3, 4}).remainder(3) == 0;
         at::Tensor rows = torch::tensor({true, false, true});
         return {a[0].masked_select(mask), a[0].index({rows}).exp()};
       }},
      {"write_through_undeclared_view",
       [] {
         return V{r({3, 4})};
       },
       [](const V& a) -> V {
         // unfold is a view the registry does not declare: its write goes back into the base
         // through as_strided_scatter.
         at::Tensor x = a[0] * 1;
         x.unfold(1, 2, 2).mul_(3);
         return {x};
       }},
      {"index_put_",
       [] {
         return V{r({5, 3}), r({2, 3})};
       },
       [](const V& a) -> V {
         at::Tensor x = a[0] * 1;
         x.index_put_({idx({1, 3})}, a[1]);
         return {x};
       }},
      {"pad",
       [] {
         return V{r({2, 3, 4})};
       },
       [](const V& a) -> V {
         return {F::pad(a[0], F::PadFuncOptions({1, 2, 0, 1}).value(0.5)),
                 at::constant_pad_nd(a[0], {2, 0})};
       }},
      {"softmax_with_dtype",
       [] {
         return V{r({3, 4})};
       },
       [](const V& a) -> V {
         return {at::softmax(a[0], 1, at::kDouble), at::log_softmax(a[0], 0, at::kDouble)};
       }},
      {"masked_fill_where",
       [] {
         return V{r({3, 4}), r({3, 4})};
       },
       [](const V& a) -> V {
         at::Tensor mask = a[0] > 0;
         return {a[0].masked_fill(mask, -1.5), at::where(mask, a[0], a[1])};
       }},
      {"embedding_bag",
       [] {
         return V{r({10, 3})};
       },
       [](const V& a) -> V {
         return {std::get<0>(at::embedding_bag(a[0], idx({1, 2, 4, 5, 4, 3, 2, 9}), idx({0, 4}),
                                               false, /*mode=*/1))};
       }},
      {"cross_entropy_label_smoothing",
       [] {
         return V{r({4, 5})};
       },
       [](const V& a) -> V {
         return {F::cross_entropy(a[0], idx({1, 0, 4, 2}),
                                  F::CrossEntropyFuncOptions().label_smoothing(0.1))};
       }},
      {"lstm_cell",
       [] {
         return V{r({2, 3}), r({2, 4}), r({2, 4}), r({16, 3}), r({16, 4}), r({16})};
       },
       [](const V& a) -> V {
         auto [h, c] = at::lstm_cell(a[0], {a[1], a[2]}, a[3], a[4], a[5]);
         return {h, c};
       }},
      {"gru_cell",
       [] {
         return V{r({2, 3}), r({2, 4}), r({12, 3}), r({12, 4})};
       },
       [](const V& a) -> V { return {at::gru_cell(a[0], a[1], a[2], a[3])}; }},
      // Backward formulas that write into tensors they make (fft_r2c_backward copies into a
      // slice of zeros, fft_c2r_backward doubles a narrowed slice, linalg_matrix_exp's works in
      // place): the traced backward is functionalized before it is spliced.
      {"rfft_irfft",
       [] {
         return V{r({3, 8})};
       },
       [](const V& a) -> V {
         return {at::view_as_real(at::fft_rfft(a[0])), at::fft_irfft(at::fft_rfft(a[0] * 2), 8)};
       }},
      // Backwards that read data (Note [Eager backward]): left to libtorch's autograd at run time,
      // zeros included.
      {"prod_cumprod_with_zeros",
       [] {
         at::Tensor t = r({3, 4});
         t[0][1] = 0;
         t[2][0] = 0;
         t[2][3] = 0;
         return V{t};
       },
       [](const V& a) -> V {
         return {a[0].prod(), a[0].prod(1), a[0].cumprod(1)};
       }},
      // Their keyword-only arguments (cumprod's dtype, index_reduce's include_self) stay keywords.
      {"eager_backward_keyword_arguments",
       [] {
         at::Tensor t = r({3, 4}), src = r({2, 4});
         t[1][2] = 0;
         src[0][0] = 0;
         return V{t, src};
       },
       [](const V& a) -> V {
         at::Tensor index = at::tensor(std::vector<int64_t>{2, 0});
         return {a[0].cumprod(1, at::kFloat), a[0].index_reduce(0, index, a[1], "prod", false)};
       }},
      {"max_median",
       [] {
         return V{r({3, 5})};
       },
       [](const V& a) -> V {
         return {a[0].max(), a[0].median(), a[0].min() * 2};
       }},
      {"matrix_exp_svdvals",
       [] {
         return V{r({3, 3}) * 0.3};
       },
       [](const V& a) -> V {
         return {at::linalg_matrix_exp(a[0]), at::linalg_svdvals(a[0])};
       }},
  };
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class OpWorld : public ::testing::TestWithParam<Case> {};

TEST_P(OpWorld, TrainsAsEager) {
  const Case& c = GetParam();
  at::manual_seed(0);
  std::vector<at::Tensor> in = c.inputs();
  for (at::Tensor& t : in) t.requires_grad_(true);
  std::vector<at::Tensor> eager_in;
  for (const at::Tensor& t : in) eager_in.push_back(t.detach().clone().requires_grad_(true));

  AOTFunction compiled = aot_function(c.fn);
  std::vector<at::Tensor> out = compiled(in);
  std::vector<at::Tensor> want = c.fn(eager_in);
  ASSERT_EQ(out.size(), want.size());
  at::Tensor loss = at::zeros({}, at::kDouble), eager_loss = at::zeros({}, at::kDouble);
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_EQ(out[i].sizes(), want[i].sizes()) << "output " << i;
    ASSERT_EQ(out[i].scalar_type(), want[i].scalar_type()) << "output " << i;
    EXPECT_TRUE(at::allclose(out[i], want[i], 1e-5, 1e-6)) << "output " << i;
    at::Tensor w = at::randn(want[i].sizes(), want[i].options().requires_grad(false));
    loss = loss + (out[i] * w).sum().to(at::kDouble);
    eager_loss = eager_loss + (want[i] * w).sum().to(at::kDouble);
  }
  loss.backward();
  eager_loss.backward();
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(in[i].grad().defined(), eager_in[i].grad().defined()) << "grad of input " << i;
    if (in[i].grad().defined())
      EXPECT_TRUE(at::allclose(in[i].grad(), eager_in[i].grad(), 1e-4, 1e-5))
          << "grad of input " << i << "\n"
          << in[i].grad() << "\n"
          << eager_in[i].grad();
  }
  EXPECT_EQ(compiled.num_compilations(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Calls, OpWorld, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

}  // namespace
}  // namespace aotgrad
