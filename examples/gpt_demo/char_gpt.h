// aotgrad demo: a character-level GPT in libtorch's C++ modules, and the text it trains on.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace aotgrad::demo {

/// The model's sizes.
struct CharGPTConfig {
  int64_t vocab = 0;   // distinct characters of the text
  int64_t seq = 64;    // context length (the longest window the model sees)
  int64_t d = 96;      // embedding width
  int64_t heads = 4;   // attention heads; d must be a multiple of heads
  int64_t layers = 3;  // transformer blocks
  // Eager training only: each block is checkpointed by hand, as torch.utils.checkpoint's reentrant
  // variant -- its forward keeps no activations but its input, and the backward runs the block
  // again with autograd before differentiating it (the baseline of the memory benchmarks).
  bool checkpoint_blocks = false;
};

/// Causal self-attention as nanoGPT writes it: one qkv projection split three ways, (b, heads, t,
/// hd) tensors, matmul for the scores and the weighted sum, and a bool buffer marking the future
/// positions each query must not see (masked to -inf before the softmax).
struct CausalSelfAttentionImpl : torch::nn::Module {
  CausalSelfAttentionImpl(int64_t d, int64_t heads, int64_t seq);
  torch::Tensor forward(const torch::Tensor& x);

  int64_t heads;
  torch::nn::Linear c_attn{nullptr}, c_proj{nullptr};
  torch::Tensor future;  // [seq, seq] bool, true above the diagonal
};

/// A pre-norm transformer block: x + attn(ln_1(x)), then x + mlp(ln_2(x)) with a GELU MLP of
/// width 4 * d.
struct BlockImpl : torch::nn::Module {
  BlockImpl(int64_t d, int64_t heads, int64_t seq);
  torch::Tensor forward(const torch::Tensor& x);

  torch::nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  std::shared_ptr<CausalSelfAttentionImpl> attn;
  torch::nn::Linear mlp_fc{nullptr}, mlp_proj{nullptr};
};

/// A GPT-2-style language model over characters: token and position embeddings, `layers` blocks,
/// a final layer norm and an (untied) LM head. Weights start as nanoGPT's: N(0, 0.02), zero biases,
/// drawn from libtorch's default generator (seed it first for a reproducible model).
struct CharGPTImpl : torch::nn::Module {
  explicit CharGPTImpl(const CharGPTConfig& config);

  /// idx: [b, t] int64 character ids with t <= seq; returns the logits, [b, t, vocab].
  torch::Tensor logits(const torch::Tensor& idx);
  /// The mean cross-entropy of the logits of `idx` against `targets` ([b, t] int64): the training
  /// loss, a 0-dim tensor.
  torch::Tensor forward(const torch::Tensor& idx, const torch::Tensor& targets);

  CharGPTConfig config;
  torch::nn::Embedding wte{nullptr}, wpe{nullptr};
  std::vector<std::shared_ptr<BlockImpl>> blocks;
  torch::nn::LayerNorm ln_f{nullptr};
  torch::nn::Linear lm_head{nullptr};
};

/// A text as character ids: the vocabulary is the text's distinct bytes, in byte order.
class CharText {
 public:
  /// Throws aotgrad::Error naming `path` when it cannot be read or is too short for one window.
  static CharText load(const std::string& path, int64_t seq);

  int64_t vocab_size() const { return static_cast<int64_t>(chars_.size()); }
  int64_t size() const { return static_cast<int64_t>(ids_.size()); }
  /// Ids of `text`'s characters; a character not in the vocabulary is an Error.
  std::vector<int64_t> encode(const std::string& text) const;
  std::string decode(const std::vector<int64_t>& ids) const;

  /// `batch` windows at random offsets drawn from `rng`: inputs [batch, seq] and targets, the
  /// same windows shifted one character on.
  std::pair<torch::Tensor, torch::Tensor> random_batch(int64_t batch, int64_t seq,
                                                       std::mt19937_64& rng) const;

 private:
  std::vector<char> chars_;     // id -> character
  std::vector<int64_t> id_of_;  // byte -> id, -1 when absent
  std::vector<int64_t> ids_;    // the text
};

/// Samples `length` characters after `prompt` from `model`, eagerly and without grad: each from the
/// softmax of the last position's logits (temperature 1) with a generator seeded by `seed`, the
/// model seeing the last seq characters.
std::string generate(CharGPTImpl& model, const CharText& text, const std::string& prompt,
                     int64_t length, uint64_t seed);

}  // namespace aotgrad::demo
