// Tests for aot_module and aot_export: a libtorch module trains as eagerly (outputs, .grad of the
// parameters, BatchNorm's buffers), the module is not written during capture, eval mode compiles
// anew, and the exported graphs have the lifted placeholders and the buffers to mutate.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "aotgrad/aotgrad.h"
#include "aotgrad/ir/printer.h"

namespace aotgrad {
namespace {

void expect_close(const at::Tensor& got, const at::Tensor& want, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what;
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  EXPECT_TRUE(at::allclose(got, want, 1e-4, 1e-5)) << what << "\n" << got << "\n" << want;
}

struct CnnImpl : torch::nn::Module {
  CnnImpl() {
    conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).padding(1)));
    bn = register_module("bn", torch::nn::BatchNorm2d(8));
    fc = register_module("fc", torch::nn::Linear(8, 5));
  }
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor h = torch::relu(bn->forward(conv->forward(x)));
    return fc->forward(h.mean({2, 3}));
  }
  torch::nn::Conv2d conv{nullptr};
  torch::nn::BatchNorm2d bn{nullptr};
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(Cnn);

/// A module whose forward writes in place and through views.
struct InPlaceImpl : torch::nn::Module {
  InPlaceImpl() {
    w = register_parameter("w", torch::randn({6, 4}));
    register_buffer("count", torch::zeros({2}));
  }
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor h = torch::matmul(x, w);  // [n, 4]
    h.narrow(1, 0, 2).mul_(2);           // write through a view
    h.relu_();
    named_buffers()["count"].add_(1);
    return h.t().sum(1);
  }
  at::Tensor w;
};
TORCH_MODULE(InPlace);

std::vector<at::Tensor> loss_of(Cnn m, const at::Tensor& x, const at::Tensor& target) {
  return {torch::mse_loss(m->forward(x), target)};
}

void copy_state(const torch::nn::Module& from, torch::nn::Module& to) {
  torch::NoGradGuard no_grad;
  ModuleState a = module_state(from), b = module_state(to);
  ASSERT_EQ(a.names, b.names);
  for (size_t i = 0; i < a.tensors.size(); ++i) b.tensors[i].copy_(a.tensors[i]);
}

void expect_same_state(const torch::nn::Module& got, const torch::nn::Module& want,
                       const std::string& what) {
  ModuleState a = module_state(got), b = module_state(want);
  ASSERT_EQ(a.names, b.names);
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    expect_close(a.tensors[i].to(at::kDouble), b.tensors[i].to(at::kDouble),
                 what + " " + a.names[i]);
    if (i < a.num_parameters) {
      ASSERT_EQ(a.tensors[i].grad().defined(), b.tensors[i].grad().defined()) << a.names[i];
      if (b.tensors[i].grad().defined())
        expect_close(a.tensors[i].grad(), b.tensors[i].grad(), what + " grad " + a.names[i]);
    }
  }
}

TEST(ModuleState, ParametersThenBuffersByDottedName) {
  Cnn m;
  ModuleState s = module_state(*m);
  EXPECT_EQ(s.names, (std::vector<std::string>{"conv.weight", "conv.bias", "bn.weight", "bn.bias",
                                               "fc.weight", "fc.bias", "bn.running_mean",
                                               "bn.running_var", "bn.num_batches_tracked"}));
  EXPECT_EQ(s.num_parameters, 6u);
}

TEST(AotModule, CnnWithBatchNormTrainsAsEagerly) {
  torch::manual_seed(0);
  Cnn compiled_model, eager_model;
  copy_state(*compiled_model, *eager_model);
  AOTModule m =
      aot_module(compiled_model.ptr(), [compiled_model](const std::vector<at::Tensor>& in) {
        return loss_of(compiled_model, in[0], in[1]);
      });
  torch::optim::SGD opt_c(compiled_model->parameters(), 0.1), opt_e(eager_model->parameters(), 0.1);
  for (int step = 0; step < 3; ++step) {
    at::Tensor x = torch::randn({4, 3, 6, 6}), target = torch::randn({4, 5});
    opt_c.zero_grad();
    opt_e.zero_grad();
    at::Tensor loss = m({x, target})[0];
    at::Tensor want = loss_of(eager_model, x, target)[0];
    expect_close(loss, want, "loss at step " + std::to_string(step));
    // The module's buffers were written once, by the compiled call, not by capture.
    expect_same_state(*compiled_model, *eager_model, "after forward " + std::to_string(step));
    loss.backward();
    want.backward();
    expect_same_state(*compiled_model, *eager_model, "after backward " + std::to_string(step));
    opt_c.step();
    opt_e.step();
  }
  EXPECT_EQ(m.num_compilations(), 1u);
  EXPECT_EQ(compiled_model->bn->num_batches_tracked.item<int64_t>(), 3);

  // Eval mode is another compilation, which reads the running stats and writes nothing.
  compiled_model->eval();
  eager_model->eval();
  at::Tensor x = torch::randn({2, 3, 6, 6}), target = torch::randn({2, 5});
  {
    torch::NoGradGuard no_grad;
    expect_close(m({x, target})[0], loss_of(eager_model, x, target)[0], "eval loss");
  }
  EXPECT_EQ(m.num_compilations(), 2u);
  expect_same_state(*compiled_model, *eager_model, "after eval");
  std::shared_ptr<const Graph> g;
  {
    torch::NoGradGuard no_grad;
    g = m.captured_graph({x, target});
  }
  ASSERT_TRUE(g);
  const std::string text = print_graph(*g);
  EXPECT_NE(text.find("p_bn_running_mean"), std::string::npos) << text;
  EXPECT_NE(text.find("arg1_1"), std::string::npos) << text;
}

TEST(AotModule, InPlaceWritesAndViewsTrainAsEagerly) {
  torch::manual_seed(1);
  InPlace compiled_model, eager_model;
  copy_state(*compiled_model, *eager_model);
  AOTConfig cfg;
  cfg.input_names = {"x"};
  AOTModule m = aot_module(
      compiled_model.ptr(),
      [mod = compiled_model.ptr()](const std::vector<at::Tensor>& in) {
        return std::vector<at::Tensor>{mod->forward(in[0])};
      },
      cfg);
  for (int step = 0; step < 2; ++step) {
    at::Tensor x = torch::randn({5, 6});
    at::Tensor out = m({x})[0];
    at::Tensor want = eager_model->forward(x);
    expect_close(out, want, "output");
    (out * torch::arange(4)).sum().backward();
    (want * torch::arange(4)).sum().backward();
    expect_same_state(*compiled_model, *eager_model, "step " + std::to_string(step));
  }
  EXPECT_EQ(m.num_compilations(), 1u);
}

TEST(AotExport, ModuleGraphsWithLiftedPlaceholdersAndBuffersToMutate) {
  Cnn model;
  at::Tensor before = model->bn->running_mean.clone();
  auto forward = [model](const std::vector<at::Tensor>& in) {
    return loss_of(model, in[0], in[1]);
  };
  std::vector<at::Tensor> inputs = {torch::randn({2, 3, 4, 4}), torch::randn({2, 5})};
  AOTConfig cfg;
  cfg.input_names = {"x", "target"};

  ExportedGraphs e = aot_export_module(*model, forward, inputs, /*trace_joint=*/false, cfg);
  EXPECT_EQ(e.parameters, (std::vector<std::string>{"p_conv_weight", "p_conv_bias", "p_bn_weight",
                                                    "p_bn_bias", "p_fc_weight", "p_fc_bias"}));
  EXPECT_EQ(e.buffers, (std::vector<std::string>{"p_bn_running_mean", "p_bn_running_var",
                                                 "p_bn_num_batches_tracked"}));
  EXPECT_EQ(e.user_inputs, (std::vector<std::string>{"x", "target"}));
  EXPECT_EQ(e.inputs_to_mutate, e.buffers);
  ASSERT_TRUE(e.forward);
  EXPECT_FALSE(e.joint);
  const std::string text = print_graph(*e.forward);
  EXPECT_EQ(text.find("add_"), std::string::npos) << "the forward is functional\n" << text;
  EXPECT_NE(text.find("def forward(self, p_conv_weight"), std::string::npos) << text;
  EXPECT_TRUE(at::equal(model->bn->running_mean, before)) << "export wrote the module";

  ExportedGraphs j = aot_export_module(*model, forward, inputs, /*trace_joint=*/true, cfg);
  ASSERT_TRUE(j.joint && j.fw && j.bw);
  EXPECT_EQ(j.inputs_to_mutate, j.buffers);
  EXPECT_FALSE(j.saved.empty());
  EXPECT_NE(print_graph(*j.bw).find("convolution_backward"), std::string::npos);
  EXPECT_TRUE(at::equal(model->bn->running_mean, before)) << "export wrote the module";
}

TEST(AotExport, FunctionWithInputMutation) {
  auto fn = [](const std::vector<at::Tensor>& a) {
    a[0].add_(a[1], -0.1);
    return std::vector<at::Tensor>{(a[0] * 2).sum()};
  };
  at::Tensor p = torch::randn({3}), g = torch::randn({3});
  at::Tensor p0 = p.clone();
  ExportedGraphs e = aot_export(fn, {p, g}, /*trace_joint=*/false);
  EXPECT_EQ(e.inputs_to_mutate, std::vector<std::string>{"arg0_1"});
  EXPECT_TRUE(at::equal(p, p0)) << "export ran the function on the caller's tensors";
  // The seed's §13.13 graph: the new value is returned before the user output (libtorch's
  // `Tensor * int` is mul.Scalar where Python's is mul.Tensor).
  EXPECT_EQ(print_graph(*e.forward),
            "class GraphModule(torch.nn.Module):\n"
            "    def forward(self, arg0_1: \"f32[3][1]cpu\", arg1_1: \"f32[3][1]cpu\"):\n"
            "        add: \"f32[3][1]cpu\" = torch.ops.aten.add.Tensor(arg0_1, arg1_1, alpha = "
            "-0.1);  arg0_1 = arg1_1 = None\n"
            "        mul: \"f32[3][1]cpu\" = torch.ops.aten.mul.Scalar(add, 2)\n"
            "        sum_1: \"f32[][]cpu\" = torch.ops.aten.sum.default(mul);  mul = None\n"
            "        return (add, sum_1)\n");
  AOTConfig keep;
  keep.keep_inference_input_mutations = true;
  ExportedGraphs k = aot_export(fn, {p, g}, /*trace_joint=*/false, keep);
  EXPECT_TRUE(k.inputs_to_mutate.empty());
  EXPECT_NE(print_graph(*k.forward).find("copy_"), std::string::npos);
}

TEST(AotExport, Errors) {
  auto fn = [](const std::vector<at::Tensor>& a) { return std::vector<at::Tensor>{a[0] * 2}; };
  at::Tensor x = torch::randn({2});
  EXPECT_THROW(aot_export(fn, {x}, /*trace_joint=*/true), Error);  // nothing requires grad
  EXPECT_THROW(aot_export(fn, {x, x}, /*trace_joint=*/false), Error);
  EXPECT_THROW(aot_export(fn, {at::Tensor()}, /*trace_joint=*/false), Error);
  try {
    aot_export(fn, {x}, /*trace_joint=*/true);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("requires grad"), std::string::npos) << e.what();
  }
  Cnn model;
  EXPECT_THROW(aot_module(nullptr, fn), Error);
  EXPECT_THROW(aot_module(model.ptr(), nullptr), Error);
}

}  // namespace
}  // namespace aotgrad
