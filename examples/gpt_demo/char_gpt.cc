// aotgrad demo: the character-level GPT and its text (see char_gpt.h).
#include "char_gpt.h"

#include <torch/torch.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "aotgrad/ir/error.h"

namespace aotgrad::demo {

namespace F = torch::nn::functional;

namespace {

/// One block as a custom autograd function: forward without history (autograd::Function runs it
/// under no_grad), saving only the block's input; backward recomputes the block with history and
/// differentiates it for the input and the block's parameters (passed as inputs so that their
/// gradients accumulate).
struct CheckpointedBlock : torch::autograd::Function<CheckpointedBlock> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               BlockImpl* block, at::TensorList params) {
    (void)params;
    ctx->saved_data["block"] = reinterpret_cast<int64_t>(block);
    ctx->save_for_backward({x});
    return block->forward(x);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_out) {
    auto* block = reinterpret_cast<BlockImpl*>(ctx->saved_data["block"].toInt());
    torch::Tensor x = ctx->get_saved_variables()[0].detach().requires_grad_(true);
    std::vector<torch::Tensor> inputs{x};
    for (const torch::Tensor& p : block->parameters()) inputs.push_back(p);
    torch::Tensor y;
    {
      torch::AutoGradMode enable(true);
      y = block->forward(x);
    }
    torch::autograd::variable_list grads =
        torch::autograd::grad({y}, inputs, {grad_out[0]}, /*retain_graph=*/false,
                              /*create_graph=*/false, /*allow_unused=*/true);
    // One entry per forward argument: x, the block (not a tensor), then each parameter.
    torch::autograd::variable_list out{grads[0], torch::Tensor()};
    out.insert(out.end(), grads.begin() + 1, grads.end());
    return out;
  }
};

}  // namespace

CausalSelfAttentionImpl::CausalSelfAttentionImpl(int64_t d, int64_t heads, int64_t seq)
    : heads(heads) {
  if (heads <= 0 || d % heads != 0)
    throw Error("CausalSelfAttention: d (" + std::to_string(d) + ") must be a multiple of heads (" +
                std::to_string(heads) + ")");
  c_attn = register_module("c_attn", torch::nn::Linear(d, 3 * d));
  c_proj = register_module("c_proj", torch::nn::Linear(d, d));
  future = register_buffer("future", torch::ones({seq, seq}, torch::kBool).triu(/*diagonal=*/1));
}

torch::Tensor CausalSelfAttentionImpl::forward(const torch::Tensor& x) {
  using torch::indexing::None;
  using torch::indexing::Slice;
  // The batch and sequence length as SymInts (Python's x.size()): a dynamic capture traces the
  // block once with them symbolic.
  const c10::SymInt b = x.sym_size(0), t = x.sym_size(1);
  const int64_t d = x.size(2), hd = d / heads;
  std::vector<torch::Tensor> qkv = c_attn(x).split(d, /*dim=*/2);
  torch::Tensor q = qkv[0].view_symint({b, t, heads, hd}).transpose(1, 2);
  torch::Tensor k = qkv[1].view_symint({b, t, heads, hd}).transpose(1, 2);
  torch::Tensor v = qkv[2].view_symint({b, t, heads, hd}).transpose(1, 2);
  torch::Tensor att =
      torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(hd)));
  att = att.masked_fill(future.index({Slice(None, t), Slice(None, t)}),
                        -std::numeric_limits<double>::infinity());
  att = F::softmax(att, F::SoftmaxFuncOptions(-1));
  torch::Tensor y = torch::matmul(att, v).transpose(1, 2).reshape_symint({b, t, d});
  return c_proj(y);
}

BlockImpl::BlockImpl(int64_t d, int64_t heads, int64_t seq) {
  ln_1 = register_module("ln_1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
  attn = register_module("attn", std::make_shared<CausalSelfAttentionImpl>(d, heads, seq));
  ln_2 = register_module("ln_2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
  mlp_fc = register_module("mlp_fc", torch::nn::Linear(d, 4 * d));
  mlp_proj = register_module("mlp_proj", torch::nn::Linear(4 * d, d));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x) {
  torch::Tensor h = x + attn->forward(ln_1(x));
  return h + mlp_proj(F::gelu(mlp_fc(ln_2(h))));
}

CharGPTImpl::CharGPTImpl(const CharGPTConfig& config) : config(config) {
  if (config.vocab <= 0 || config.seq <= 0 || config.d <= 0 || config.layers <= 0)
    throw Error("CharGPT: vocab, seq, d and layers must be positive");
  wte = register_module("wte", torch::nn::Embedding(config.vocab, config.d));
  wpe = register_module("wpe", torch::nn::Embedding(config.seq, config.d));
  for (int64_t i = 0; i < config.layers; ++i)
    blocks.push_back(register_module(
        "h" + std::to_string(i), std::make_shared<BlockImpl>(config.d, config.heads, config.seq)));
  ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({config.d})));
  lm_head = register_module(
      "lm_head", torch::nn::Linear(torch::nn::LinearOptions(config.d, config.vocab).bias(false)));
  // nanoGPT's initialization.
  torch::NoGradGuard no_grad;
  for (auto& p : named_parameters()) {
    const std::string& name = p.key();
    if (name.size() >= 4 && name.compare(name.size() - 4, 4, "bias") == 0)
      p.value().zero_();
    else if (name.find("ln_") == std::string::npos)
      p.value().normal_(0.0, 0.02);
  }
}

torch::Tensor CharGPTImpl::logits(const torch::Tensor& idx) {
  const c10::SymInt t = idx.sym_size(1);
  if (t > config.seq)
    throw Error("CharGPT: a window of " + c10::str(t) + " characters is longer than seq (" +
                std::to_string(config.seq) + ")");
  // On idx's device, as nanoGPT's arange(0, t, device=device): under aot_module's capture the
  // positions are then an op of the graph over the sequence length, not a constant.
  torch::Tensor pos = torch::arange(c10::Scalar(t), idx.options().dtype(torch::kLong));
  torch::Tensor x = wte(idx) + wpe(pos);
  for (const auto& block : blocks) {
    if (config.checkpoint_blocks && torch::GradMode::is_enabled()) {
      std::vector<torch::Tensor> params = block->parameters();
      x = CheckpointedBlock::apply(x, block.get(), at::TensorList(params));
    } else {
      x = block->forward(x);
    }
  }
  return lm_head(ln_f(x));
}

torch::Tensor CharGPTImpl::forward(const torch::Tensor& idx, const torch::Tensor& targets) {
  torch::Tensor out = logits(idx);
  return F::cross_entropy(out.view({-1, out.size(-1)}), targets.view({-1}));
}

CharText CharText::load(const std::string& path, int64_t seq) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot read the training text");
  std::ostringstream buf;
  buf << in.rdbuf();
  std::string text = buf.str();
  if (static_cast<int64_t>(text.size()) < seq + 2)
    throw Error(path + ": the training text has " + std::to_string(text.size()) +
                " characters, fewer than one window of " + std::to_string(seq + 1));
  CharText out;
  std::vector<bool> seen(256, false);
  for (unsigned char c : text) seen[c] = true;
  out.id_of_.assign(256, -1);
  for (int c = 0; c < 256; ++c)
    if (seen[c]) {
      out.id_of_[c] = static_cast<int64_t>(out.chars_.size());
      out.chars_.push_back(static_cast<char>(c));
    }
  out.ids_ = out.encode(text);
  return out;
}

std::vector<int64_t> CharText::encode(const std::string& text) const {
  std::vector<int64_t> ids;
  ids.reserve(text.size());
  for (unsigned char c : text) {
    if (id_of_[c] < 0)
      throw Error("CharText::encode: character " + std::to_string(static_cast<int>(c)) +
                  " is not in the text's vocabulary");
    ids.push_back(id_of_[c]);
  }
  return ids;
}

std::string CharText::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  out.reserve(ids.size());
  for (int64_t id : ids) {
    if (id < 0 || id >= vocab_size())
      throw Error("CharText::decode: id " + std::to_string(id) + " is outside the vocabulary");
    out.push_back(chars_[id]);
  }
  return out;
}

std::pair<torch::Tensor, torch::Tensor> CharText::random_batch(int64_t batch, int64_t seq,
                                                               std::mt19937_64& rng) const {
  if (size() < seq + 2)
    throw Error("CharText::random_batch: the text is shorter than one window of " +
                std::to_string(seq + 1));
  std::uniform_int_distribution<int64_t> offset(0, size() - seq - 1);
  torch::Tensor x = torch::empty({batch, seq}, torch::kLong);
  torch::Tensor y = torch::empty({batch, seq}, torch::kLong);
  int64_t* xp = x.data_ptr<int64_t>();
  int64_t* yp = y.data_ptr<int64_t>();
  for (int64_t i = 0; i < batch; ++i) {
    int64_t o = offset(rng);
    for (int64_t j = 0; j < seq; ++j) {
      xp[i * seq + j] = ids_[o + j];
      yp[i * seq + j] = ids_[o + j + 1];
    }
  }
  return {x, y};
}

std::string generate(CharGPTImpl& model, const CharText& text, const std::string& prompt,
                     int64_t length, uint64_t seed) {
  torch::NoGradGuard no_grad;
  std::vector<int64_t> ids = text.encode(prompt);
  if (ids.empty()) throw Error("generate: the prompt is empty");
  std::mt19937_64 rng(seed);
  const int64_t seq = model.config.seq;
  for (int64_t n = 0; n < length; ++n) {
    int64_t start = std::max<int64_t>(0, static_cast<int64_t>(ids.size()) - seq);
    std::vector<int64_t> window(ids.begin() + start, ids.end());
    torch::Tensor idx =
        torch::tensor(window, torch::kLong).view({1, static_cast<int64_t>(window.size())});
    // On the model's device; the distribution is drawn from on the CPU.
    idx = idx.to(model.parameters().front().device());
    torch::Tensor last = model.logits(idx).select(1, -1).squeeze(0);
    torch::Tensor probs =
        F::softmax(last.to(torch::kDouble), F::SoftmaxFuncOptions(-1)).cpu().contiguous();
    const double* p = probs.data_ptr<double>();
    std::vector<double> weights(p, p + probs.numel());
    std::discrete_distribution<int64_t> pick(weights.begin(), weights.end());
    ids.push_back(pick(rng));
  }
  return text.decode(
      std::vector<int64_t>(ids.begin() + static_cast<int64_t>(prompt.size()), ids.end()));
}

}  // namespace aotgrad::demo
