// aotgrad tests: tools/export.py's example models in libtorch's C++ frontend (see eager_models.h).
// Each class mirrors its Python class line by line: the same submodules registered in the same
// order (so parameters and buffers come out in the exported placeholder order) and the same
// forward, down to the way each op is spelled (F.linear, .split, .view/.transpose/.reshape, ...).
#include "models/eager_models.h"

#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/GradMode.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "aotgrad/ir/error.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/runtime/safetensors.h"
#include "aotgrad/runtime/tensor_io.h"

namespace aotgrad::models {
namespace {

namespace F = torch::nn::functional;

// --- the models ---------------------------------------------------------------------------------

/// class MLP: Linear-ReLU-Linear-ReLU-Linear with an MSE loss.
struct MLPImpl : torch::nn::Module {
  explicit MLPImpl(int64_t d_in = 8, int64_t width = 32, int64_t d_out = 4) {
    fc1 = register_module("fc1", torch::nn::Linear(d_in, width));
    fc2 = register_module("fc2", torch::nn::Linear(width, width));
    fc3 = register_module("fc3", torch::nn::Linear(width, d_out));
  }
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& y) {
    torch::Tensor h = F::relu(fc1(x));
    h = F::relu(fc2(h));
    return F::mse_loss(fc3(h), y);
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
};

/// class CausalSelfAttention.
struct CausalSelfAttentionImpl : torch::nn::Module {
  CausalSelfAttentionImpl(int64_t d, int64_t heads, int64_t seq) : heads(heads) {
    qkv = register_module("qkv", torch::nn::Linear(d, 3 * d));
    proj = register_module("proj", torch::nn::Linear(d, d));
    causal_mask = register_buffer("causal_mask", torch::ones({seq, seq}, torch::kBool).tril());
  }
  torch::Tensor forward(const torch::Tensor& x) {
    using torch::indexing::None;
    using torch::indexing::Slice;
    // Sizes as SymInts, as Python's x.size() gives them: the block traces symbolically.
    const c10::SymInt b = x.sym_size(0), t = x.sym_size(1);
    const int64_t d = x.size(2);
    const int64_t h = heads, hd = d / heads;
    std::vector<torch::Tensor> qkv_parts = qkv(x).split(d, /*dim=*/2);
    // (b, t, d) -> (b * h, t, hd)
    auto heads_first = [&](const torch::Tensor& p) {
      return p.view_symint({b, t, h, hd}).transpose(1, 2).reshape_symint({b * h, t, hd});
    };
    torch::Tensor q = heads_first(qkv_parts[0]);
    torch::Tensor k = heads_first(qkv_parts[1]);
    torch::Tensor v = heads_first(qkv_parts[2]);
    torch::Tensor att =
        torch::bmm(q, k.transpose(1, 2)) * (1.0 / std::sqrt(static_cast<double>(hd)));
    att = att.masked_fill(~causal_mask.index({Slice(None, t), Slice(None, t)}),
                          -std::numeric_limits<double>::infinity());
    att = F::softmax(att, F::SoftmaxFuncOptions(-1));
    torch::Tensor y = torch::bmm(att, v);  // (b * h, t, hd)
    y = y.view_symint({b, h, t, hd}).transpose(1, 2).reshape_symint({b, t, d});
    return proj(y);
  }
  int64_t heads;
  torch::nn::Linear qkv{nullptr}, proj{nullptr};
  torch::Tensor causal_mask;
};

/// class GPTBlock: token + position embedding, one pre-norm transformer block, a final norm and the
/// LM head, with a cross-entropy loss against integer targets.
struct GPTBlockImpl : torch::nn::Module {
  explicit GPTBlockImpl(int64_t vocab = 64, int64_t d = 32, int64_t heads = 2, int64_t seq = 8) {
    tok_emb = register_module("tok_emb", torch::nn::Embedding(vocab, d));
    pos_emb = register_module("pos_emb", torch::nn::Embedding(seq, d));
    ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
    attn = register_module("attn", std::make_shared<CausalSelfAttentionImpl>(d, heads, seq));
    ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
    fc = register_module("fc", torch::nn::Linear(d, 4 * d));
    fc_proj = register_module("fc_proj", torch::nn::Linear(4 * d, d));
    ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
    head = register_module("head", torch::nn::Linear(d, vocab));
  }
  torch::Tensor forward(const torch::Tensor& idx, const torch::Tensor& targets) {
    const c10::SymInt b = idx.sym_size(0), t = idx.sym_size(1);
    torch::Tensor pos = torch::arange(
        0, c10::Scalar(t), torch::TensorOptions().dtype(torch::kLong).device(idx.device()));
    torch::Tensor x = tok_emb(idx) + pos_emb(pos);
    x = x + attn->forward(ln1(x));
    x = x + fc_proj(F::gelu(fc(ln2(x))));
    torch::Tensor logits = head(ln_f(x));
    return F::cross_entropy(logits.view_symint({b * t, -1}), targets.view_symint({b * t}));
  }
  torch::nn::Embedding tok_emb{nullptr}, pos_emb{nullptr};
  torch::nn::LayerNorm ln1{nullptr}, ln2{nullptr}, ln_f{nullptr};
  std::shared_ptr<CausalSelfAttentionImpl> attn;
  torch::nn::Linear fc{nullptr}, fc_proj{nullptr}, head{nullptr};
};

/// class CNNBN: Conv-BN-ReLU_-MaxPool-Conv-BN-ReLU_-AdaptiveAvgPool-Flatten-Linear with a
/// cross-entropy loss; batch norm in training mode updates its running statistics.
struct CNNBNImpl : torch::nn::Module {
  explicit CNNBNImpl(int64_t classes = 10) {
    conv1 =
        register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).padding(1)));
    bn1 = register_module("bn1", torch::nn::BatchNorm2d(8));
    relu1 = register_module("relu1", torch::nn::ReLU(torch::nn::ReLUOptions(/*inplace=*/true)));
    pool = register_module("pool", torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2)));
    conv2 =
        register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 16, 3).padding(1)));
    bn2 = register_module("bn2", torch::nn::BatchNorm2d(16));
    relu2 = register_module("relu2", torch::nn::ReLU(torch::nn::ReLUOptions(/*inplace=*/true)));
    avgpool = register_module("avgpool",
                              torch::nn::AdaptiveAvgPool2d(torch::nn::AdaptiveAvgPool2dOptions(1)));
    fc = register_module("fc", torch::nn::Linear(16, classes));
  }
  torch::Tensor forward(const torch::Tensor& input, const torch::Tensor& target) {
    torch::Tensor x = pool(relu1(bn1(conv1(input))));
    x = relu2(bn2(conv2(x)));
    x = torch::flatten(avgpool(x), 1);
    return F::cross_entropy(fc(x), target);
  }
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};
  torch::nn::ReLU relu1{nullptr}, relu2{nullptr};
  torch::nn::MaxPool2d pool{nullptr};
  torch::nn::AdaptiveAvgPool2d avgpool{nullptr};
  torch::nn::Linear fc{nullptr};
};

/// torchvision's resnet.BasicBlock: conv3x3-BN-ReLU_-conv3x3-BN, plus the input (through a
/// 1x1 convolution and BN where the stride or the width changes), then ReLU_.
struct BasicBlockImpl : torch::nn::Module {
  BasicBlockImpl(int64_t in, int64_t out, int64_t stride) {
    auto conv3x3 = [](int64_t i, int64_t o, int64_t s) {
      return torch::nn::Conv2d(torch::nn::Conv2dOptions(i, o, 3).stride(s).padding(1).bias(false));
    };
    conv1 = register_module("conv1", conv3x3(in, out, stride));
    bn1 = register_module("bn1", torch::nn::BatchNorm2d(out));
    conv2 = register_module("conv2", conv3x3(out, out, 1));
    bn2 = register_module("bn2", torch::nn::BatchNorm2d(out));
    if (stride != 1 || in != out)
      downsample = register_module(
          "downsample",
          torch::nn::Sequential(
              torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 1).stride(stride).bias(false)),
              torch::nn::BatchNorm2d(out)));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out = bn1(conv1(x)).relu_();
    out = bn2(conv2(out));
    out += downsample ? downsample->forward(x) : x;
    return out.relu_();
  }
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};
  torch::nn::Sequential downsample{nullptr};
};
TORCH_MODULE(BasicBlock);

/// tools/export.py's resnet18_with_loss: torchvision's resnet18 (BasicBlock, [2, 2, 2, 2]) with a
/// cross-entropy loss.
struct ResNet18Impl : torch::nn::Module {
  explicit ResNet18Impl(int64_t classes = 10) {
    conv1 = register_module(
        "conv1",
        torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 64, 7).stride(2).padding(3).bias(false)));
    bn1 = register_module("bn1", torch::nn::BatchNorm2d(64));
    int64_t in = 64;
    for (int l = 0; l < 4; ++l) {
      int64_t out = 64 << l;
      torch::nn::Sequential layer(BasicBlock(in, out, l == 0 ? 1 : 2), BasicBlock(out, out, 1));
      layers.push_back(register_module("layer" + std::to_string(l + 1), layer));
      in = out;
    }
    fc = register_module("fc", torch::nn::Linear(512, classes));
  }
  torch::Tensor forward(const torch::Tensor& input, const torch::Tensor& target) {
    torch::Tensor x = bn1(conv1(input)).relu_();
    x = F::max_pool2d(x, F::MaxPool2dFuncOptions(3).stride(2).padding(1));
    for (auto& layer : layers) x = layer->forward(x);
    x = torch::flatten(F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions(1)), 1);
    return F::cross_entropy(fc(x), target);
  }
  torch::nn::Conv2d conv1{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr};
  std::vector<torch::nn::Sequential> layers;
  torch::nn::Linear fc{nullptr};
};

/// Conv2dNormActivation's convolution: "same" padding, no bias.
torch::nn::Conv2dOptions same_conv(int64_t in, int64_t out, int64_t kernel, int64_t stride,
                                   int64_t groups) {
  return torch::nn::Conv2dOptions(in, out, kernel)
      .stride(stride)
      .padding((kernel - 1) / 2)
      .groups(groups)
      .bias(false);
}

/// torchvision's Conv2dNormActivation with ReLU6: conv (no bias, "same" padding)-BN-ReLU6_,
/// registered as "0", "1" (and "2", without parameters) as its Sequential.
struct ConvBNReLU6Impl : torch::nn::Module {
  ConvBNReLU6Impl(int64_t in, int64_t out, int64_t kernel, int64_t stride = 1, int64_t groups = 1) {
    conv = register_module("0", torch::nn::Conv2d(same_conv(in, out, kernel, stride, groups)));
    bn = register_module("1", torch::nn::BatchNorm2d(out));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return F::hardtanh(bn(conv(x)), F::HardtanhFuncOptions().min_val(0).max_val(6).inplace(true));
  }
  torch::nn::Conv2d conv{nullptr};
  torch::nn::BatchNorm2d bn{nullptr};
};
TORCH_MODULE(ConvBNReLU6);

/// torchvision's mobilenetv2.InvertedResidual: an optional 1x1 expansion, a 3x3 depthwise
/// convolution, a 1x1 projection with BN; the input added when the shape stays.
struct InvertedResidualImpl : torch::nn::Module {
  InvertedResidualImpl(int64_t in, int64_t out, int64_t stride, int64_t expand)
      : residual(stride == 1 && in == out) {
    int64_t hidden = in * expand;
    torch::nn::Sequential layers;
    if (expand != 1) layers->push_back(ConvBNReLU6(in, hidden, 1));
    layers->push_back(ConvBNReLU6(hidden, hidden, 3, stride, hidden));
    layers->push_back(
        torch::nn::Conv2d(torch::nn::Conv2dOptions(hidden, out, 1).stride(1).bias(false)));
    layers->push_back(torch::nn::BatchNorm2d(out));
    conv = register_module("conv", layers);
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return residual ? x + conv->forward(x) : conv->forward(x);
  }
  bool residual;
  torch::nn::Sequential conv{nullptr};
};
TORCH_MODULE(InvertedResidual);

/// tools/export.py's mobilenet_v2_with_loss: torchvision's mobilenet_v2 (width 1, no dropout)
/// with a cross-entropy loss.
struct MobileNetV2Impl : torch::nn::Module {
  explicit MobileNetV2Impl(int64_t classes = 10) {
    // torchvision's inverted_residual_setting: expansion t, channels c, repeats n, stride s.
    const int64_t settings[][4] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                   {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
    torch::nn::Sequential f;
    f->push_back(ConvBNReLU6(3, 32, 3, 2));
    int64_t in = 32;
    for (const auto& s : settings)
      for (int64_t i = 0; i < s[2]; ++i) {
        f->push_back(InvertedResidual(in, s[1], i == 0 ? s[3] : 1, s[0]));
        in = s[1];
      }
    f->push_back(ConvBNReLU6(in, 1280, 1));
    features = register_module("features", f);
    // classifier: Dropout(p=0) (no parameters, and the exported graph has no dropout), Linear.
    classifier = register_module(
        "classifier",
        torch::nn::Sequential(torch::nn::Identity(), torch::nn::Linear(1280, classes)));
  }
  torch::Tensor forward(const torch::Tensor& input, const torch::Tensor& target) {
    torch::Tensor x = features->forward(input);
    x = torch::flatten(F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions(1)), 1);
    return F::cross_entropy(classifier->forward(x), target);
  }
  torch::nn::Sequential features{nullptr}, classifier{nullptr};
};

/// torchvision's Conv2dNormActivation with SiLU (or no activation): a convolution without bias,
/// BatchNorm, SiLU(inplace=True).
struct ConvBNSiLUImpl : torch::nn::Module {
  ConvBNSiLUImpl(int64_t in, int64_t out, int64_t kernel, int64_t stride = 1, int64_t groups = 1,
                 bool activation = true)
      : activation(activation) {
    conv = register_module("0", torch::nn::Conv2d(same_conv(in, out, kernel, stride, groups)));
    bn = register_module("1", torch::nn::BatchNorm2d(out));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = bn(conv(x));
    return activation ? torch::silu_(y) : y;
  }
  bool activation;
  torch::nn::Conv2d conv{nullptr};
  torch::nn::BatchNorm2d bn{nullptr};
};
TORCH_MODULE(ConvBNSiLU);

/// torchvision's ops.SqueezeExcitation with SiLU(inplace=True) and Sigmoid: the input scaled by
/// sigmoid(fc2(silu(fc1(mean over space)))).
struct SqueezeExcitationImpl : torch::nn::Module {
  SqueezeExcitationImpl(int64_t channels, int64_t squeeze) {
    fc1 = register_module("fc1", torch::nn::Conv2d(torch::nn::Conv2dOptions(channels, squeeze, 1)));
    fc2 = register_module("fc2", torch::nn::Conv2d(torch::nn::Conv2dOptions(squeeze, channels, 1)));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor scale = fc1(F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions(1)));
    torch::silu_(scale);
    return torch::sigmoid(fc2(scale)) * x;
  }
  torch::nn::Conv2d fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(SqueezeExcitation);

/// torchvision's efficientnet.MBConv without stochastic depth: an optional 1x1 expansion, a
/// depthwise convolution, squeeze-excitation, a 1x1 projection with BN; the input added in place
/// when the shape stays.
struct MBConvImpl : torch::nn::Module {
  MBConvImpl(int64_t expand, int64_t kernel, int64_t stride, int64_t in, int64_t out)
      : residual(stride == 1 && in == out) {
    int64_t hidden = in * expand;  // torchvision's _make_divisible(in * expand, 8) for B0
    torch::nn::Sequential layers;
    if (hidden != in) layers->push_back(ConvBNSiLU(in, hidden, 1));
    layers->push_back(ConvBNSiLU(hidden, hidden, kernel, stride, hidden));
    layers->push_back(SqueezeExcitation(hidden, std::max<int64_t>(1, in / 4)));
    layers->push_back(ConvBNSiLU(hidden, out, 1, 1, 1, /*activation=*/false));
    block = register_module("block", layers);
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor result = block->forward(x);
    if (residual) result += x;
    return result;
  }
  bool residual;
  torch::nn::Sequential block{nullptr};
};
TORCH_MODULE(MBConv);

/// tools/export.py's efficientnet_b0_with_loss: torchvision's efficientnet_b0 (no dropout, no
/// stochastic depth) with a cross-entropy loss. `features` is a ModuleList (the C++ Sequential
/// cannot hold a Sequential), registered as Python's Sequential: the stem, the seven stages, the
/// head.
struct EfficientNetB0Impl : torch::nn::Module {
  explicit EfficientNetB0Impl(int64_t classes = 10) {
    // torchvision's B0 setting: expansion, kernel, stride, input and output channels, layers.
    const int64_t settings[][6] = {
        {1, 3, 1, 32, 16, 1},  {6, 3, 2, 16, 24, 2},   {6, 5, 2, 24, 40, 2},  {6, 3, 2, 40, 80, 3},
        {6, 5, 1, 80, 112, 3}, {6, 5, 2, 112, 192, 4}, {6, 3, 1, 192, 320, 1}};
    torch::nn::ModuleList f;
    stem = ConvBNSiLU(3, 32, 3, 2);
    f->push_back(stem);
    for (const auto& s : settings) {
      torch::nn::ModuleList stage;
      blocks.emplace_back();
      for (int64_t i = 0; i < s[5]; ++i) {
        blocks.back().push_back(MBConv(s[0], s[1], i == 0 ? s[2] : 1, i == 0 ? s[3] : s[4], s[4]));
        stage->push_back(blocks.back().back());
      }
      f->push_back(stage);
    }
    head = ConvBNSiLU(320, 1280, 1);
    f->push_back(head);
    features = register_module("features", f);
    // classifier: Dropout(p=0) (no parameters, nothing in the exported graph), Linear.
    classifier = register_module(
        "classifier",
        torch::nn::Sequential(torch::nn::Identity(), torch::nn::Linear(1280, classes)));
  }
  torch::Tensor forward(const torch::Tensor& input, const torch::Tensor& target) {
    torch::Tensor x = stem(input);
    for (auto& stage : blocks)
      for (MBConv& b : stage) x = b(x);
    x = head(x);
    x = torch::flatten(F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions(1)), 1);
    return F::cross_entropy(classifier->forward(x), target);
  }
  ConvBNSiLU stem{nullptr}, head{nullptr};
  std::vector<std::vector<MBConv>> blocks;
  torch::nn::ModuleList features{nullptr};
  torch::nn::Sequential classifier{nullptr};
};

// --- EagerModel over a torch::nn::Module ---------------------------------------------------------

std::string placeholder_of(const std::string& dotted) {
  std::string out = "p_" + dotted;
  for (char& c : out)
    if (c == '.') c = '_';
  return out;
}

template <class M>
class ModuleModel final : public EagerModel {
 public:
  /// `ctor` are the module's constructor arguments (its sizes).
  template <class... Ctor>
  ModuleModel(std::string name, std::vector<std::string> inputs, Ctor... ctor)
      : name_(std::move(name)), inputs_(std::move(inputs)), module_(std::make_shared<M>(ctor...)) {}

  std::string name() const override { return name_; }
  std::vector<std::string> input_names() const override { return inputs_; }

  at::Tensor loss(const std::vector<at::Tensor>& inputs) override {
    if (inputs.size() != inputs_.size())
      throw std::invalid_argument(name_ + ": loss() takes " + std::to_string(inputs_.size()) +
                                  " inputs, got " + std::to_string(inputs.size()));
    return module_->forward(inputs[0], inputs[1]);
  }
  void to(c10::Device device) override { module_->to(device); }

 protected:
  std::vector<Named> named_parameters() const override {
    std::vector<Named> out;
    for (const auto& item : module_->named_parameters(/*recurse=*/true))
      out.push_back({placeholder_of(item.key()), item.value()});
    return out;
  }
  std::vector<Named> named_buffers() const override {
    std::vector<Named> out;
    for (const auto& item : module_->named_buffers(/*recurse=*/true))
      out.push_back({placeholder_of(item.key()), item.value()});
    return out;
  }
  void set_training(bool on) override { module_->train(on); }

 private:
  std::string name_;
  std::vector<std::string> inputs_;
  std::shared_ptr<M> module_;
};

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

// --- EagerModel
// -----------------------------------------------------------------------------------

EagerModel::~EagerModel() = default;

std::vector<std::string> EagerModel::parameter_names() const {
  std::vector<std::string> out;
  for (const Named& n : named_parameters()) out.push_back(n.placeholder);
  return out;
}

std::vector<std::string> EagerModel::buffer_names() const {
  std::vector<std::string> out;
  for (const Named& n : named_buffers()) out.push_back(n.placeholder);
  return out;
}

std::vector<std::string> EagerModel::placeholder_names() const {
  std::vector<std::string> out = parameter_names();
  for (auto& n : buffer_names()) out.push_back(n);
  for (auto& n : input_names()) out.push_back(n);
  return out;
}

TensorMap EagerModel::parameters() const {
  TensorMap out;
  for (const Named& n : named_parameters()) out.emplace(n.placeholder, n.tensor);
  return out;
}

TensorMap EagerModel::buffers() const {
  TensorMap out;
  for (const Named& n : named_buffers()) out.emplace(n.placeholder, n.tensor);
  return out;
}

void EagerModel::load_state(const TensorMap& values) {
  std::vector<Named> state = named_parameters();
  for (Named& n : named_buffers()) state.push_back(std::move(n));
  torch::NoGradGuard no_grad;
  for (const Named& n : state) {
    auto it = values.find(n.placeholder);
    if (it == values.end()) throw std::invalid_argument(name() + ": no value for " + n.placeholder);
    const at::Tensor& v = it->second;
    if (v.sizes() != n.tensor.sizes() || v.scalar_type() != n.tensor.scalar_type()) {
      std::ostringstream msg;
      msg << name() << ": " << n.placeholder << " is " << n.tensor.scalar_type() << n.tensor.sizes()
          << ", the value is " << v.scalar_type() << v.sizes();
      throw std::invalid_argument(msg.str());
    }
    n.tensor.copy_(v);
  }
}

void EagerModel::zero_grad() {
  for (const Named& n : named_parameters()) n.tensor.mutable_grad() = at::Tensor();
}

void EagerModel::train(bool on) { set_training(on); }

std::unique_ptr<EagerModel> make_eager_model(const std::string& name) {
  if (name == "mlp")
    return std::make_unique<ModuleModel<MLPImpl>>(name, std::vector<std::string>{"x", "y"});
  if (name == "gpt_block")
    return std::make_unique<ModuleModel<GPTBlockImpl>>(name,
                                                       std::vector<std::string>{"idx", "targets"});
  if (name ==
      "gpt_block_wide")  // tools/export.py's gpt_block_wide: vocab 64, d 64, 4 heads, seq 64
    return std::make_unique<ModuleModel<GPTBlockImpl>>(
        name, std::vector<std::string>{"idx", "targets"}, int64_t{64}, int64_t{64}, int64_t{4},
        int64_t{64});
  if (name == "gpt_block_dyn")  // tools/export.py's gpt_block_long (context 64), exported dynamic
    return std::make_unique<ModuleModel<GPTBlockImpl>>(
        name, std::vector<std::string>{"idx", "targets"}, int64_t{64}, int64_t{32}, int64_t{2},
        int64_t{64});
  if (name == "cnn_bn" || name == "cnn_bn_dyn")
    return std::make_unique<ModuleModel<CNNBNImpl>>(name, std::vector<std::string>{"x", "target"});
  if (name == "resnet18")
    return std::make_unique<ModuleModel<ResNet18Impl>>(name,
                                                       std::vector<std::string>{"x", "target"});
  if (name == "mobilenet_v2")
    return std::make_unique<ModuleModel<MobileNetV2Impl>>(name,
                                                          std::vector<std::string>{"x", "target"});
  if (name == "efficientnet_b0")
    return std::make_unique<ModuleModel<EfficientNetB0Impl>>(
        name, std::vector<std::string>{"x", "target"});
  throw std::invalid_argument("no eager model '" + name +
                              "' (mlp, gpt_block, gpt_block_wide, cnn_bn, gpt_block_dyn, "
                              "cnn_bn_dyn, resnet18, mobilenet_v2, efficientnet_b0)");
}

std::vector<std::string> eager_model_names() {
  return {"mlp",        "gpt_block", "gpt_block_wide", "cnn_bn",         "gpt_block_dyn",
          "cnn_bn_dyn", "resnet18",  "mobilenet_v2",   "efficientnet_b0"};
}

bool is_vision_model(const std::string& name) {
  return name == "resnet18" || name == "mobilenet_v2" || name == "efficientnet_b0";
}

// --- exported model files
// -------------------------------------------------------------------------

ModelData load_model_data(const std::string& dir, const std::string& name) {
  ModelData d;
  d.graph_text = read_text(dir + "/" + name + ".fx");
  TensorFile file = load_safetensors(dir + "/" + name + ".inputs.safetensors");
  for (const TensorRecord& rec : file.tensors) {
    d.names.push_back(rec.name);
    d.values.emplace(rec.name, to_tensor(rec));
  }
  auto it = file.metadata.find("outputs");
  if (it != file.metadata.end()) d.outputs_json = it->second;
  return d;
}

ModelData model_data_from_eager(const std::string& dir, const EagerModel& model, uint64_t seed) {
  ModelData d;
  d.graph_text = read_text(dir + "/" + model.name() + ".fx");
  d.names = model.placeholder_names();
  c10::NoGradGuard no_grad;
  for (const auto& part : {model.parameters(), model.buffers()})
    for (const auto& [name, t] : part) d.values.emplace(name, t.detach().clone());
  std::shared_ptr<Graph> graph = parse_graph(d.graph_text, aten_ops());
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  std::vector<std::string> inputs = model.input_names();
  for (const Node* p : graph->placeholders()) {
    if (std::find(inputs.begin(), inputs.end(), p->name()) == inputs.end()) continue;
    const TensorMeta& m = p->tensor_meta();
    std::vector<int64_t> sizes;
    for (const SymInt& s : m.sizes) sizes.push_back(s.value());
    d.values.emplace(p->name(), is_floating(m.dtype) ? at::randn(sizes, gen)
                                                     : at::randint(0, 10, sizes, gen, at::kLong));
  }
  for (const std::string& n : d.names)
    if (!d.values.count(n)) throw std::invalid_argument(model.name() + ": no value for " + n);
  return d;
}

std::vector<at::Tensor> cloned(const TensorMap& values, const std::vector<std::string>& names) {
  std::vector<at::Tensor> out;
  for (const std::string& n : names) {
    auto it = values.find(n);
    if (it == values.end()) throw std::invalid_argument("no value for " + n);
    out.push_back(it->second.clone());
  }
  return out;
}

}  // namespace aotgrad::models
