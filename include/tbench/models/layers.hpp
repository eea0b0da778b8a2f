#pragma once
// Pieces every architecture shares, written once: multi-head attention arithmetic, the padding
// mask, activations and HF's weight initialisation. Module layouts (and so parameter names) stay
// in each architecture's own file.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "tbench/models/classifier.hpp"
#include "tbench/models/dropout.hpp"
#include "tbench/models/model_config.hpp"
#include "tbench/spec/spec.hpp"

namespace tbench::layers {

// gelu (exact erf form, HF's "gelu"), gelu_new (tanh approximation) or relu.
torch::Tensor activation(const std::string& name, const torch::Tensor& x);

// [B, S] of 1 (real token) / 0 (padding) -> additive bias [B, 1, 1, S]: 0 where attended,
// the dtype's most negative value where masked, exactly as HF builds its extended mask.
torch::Tensor padding_bias(const torch::Tensor& attention_mask, torch::ScalarType dtype);

// The attention bias a batch needs: padding_bias, or none (an undefined tensor) for a batch the
// host knows has no padding, unless `mask_every_batch` (model.padding_mask always). Without a
// mask SDPA may use its flash kernel, which takes none; HF's sdpa path drops an all-ones mask too.
torch::Tensor attention_bias(const ModelInputs& inputs, bool mask_every_batch, torch::ScalarType dtype);

struct QueryKeyValue {
  torch::Tensor query, key, value;
};

// [B, S, H*D] -> [B, H, S, D] and back.
torch::Tensor split_heads(const torch::Tensor& x, int64_t num_heads);
torch::Tensor merge_heads(const torch::Tensor& x);

// softmax(q k^T / sqrt(D) + bias) v, with dropout on the probabilities while training.
// q, k, v: [B, H, S, D]; bias broadcastable to [B, H, S, S], or undefined for none. `kernel` sdpa uses
// at::scaled_dot_product_attention (only in torch >= 2.0 builds; eager otherwise).
torch::Tensor attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        const torch::Tensor& bias, double dropout_p, bool training,
                        AttentionKernel kernel = AttentionKernel::eager);

// What `auto` needs to know of the run.
struct AttentionUse {
  bool on_cuda = false;
  // An fp32 model that trains with attention dropout drawn by tbench's fused CPU kernel
  // (cpu.dropout: fused); false for a frozen teacher, which never drops out.
  bool fused_cpu_dropout = false;
};

// Whether `auto` takes eager attention even where SDPA exists: on CPU when the attention
// probabilities are dropped out in fp32 training. SDPA's CPU path draws that dropout with
// LibTorch's element-by-element generator; eager attention with tbench's fused kernel measured
// 1.03-1.09x faster (LibTorch 2.14), while without dropout SDPA was level or up to 1.09x faster.
// bf16 on CPU was not measured, so it keeps SDPA.
bool auto_attention_prefers_eager(const AttentionUse& use);

// The spec's model.attention in this build: auto is sdpa where the torch version has it, unless
// auto_attention_prefers_eager. "sdpa" without it is refused by the spec before this is called.
AttentionKernel resolve_attention(AttentionChoice requested, const AttentionUse& use = {});

// HF's _init_weights: Linear and Embedding weights ~ N(0, std), biases 0, the padding row of an
// embedding 0, LayerNorm weight 1 and bias 0.
void init_weights(torch::nn::Module& module, double std);

// A bare named module that only groups children, so parameter names follow HF's nesting
// (e.g. "attention.self.query.weight") without a class per level.
std::shared_ptr<torch::nn::Module> add_group(torch::nn::Module& parent, const std::string& name);

// torch::nn::Linear with the forward Python's nn.Linear has: ATen's linear, which runs a 3-D input
// as one addmm with the bias folded in. LibTorch 1.13's C++ functional::linear runs it as matmul
// then `+= bias`: BLAS zero-fills the output first, and the bias is another pass over it. On the
// 2-core CPU that was the largest difference between a tbench step and PyTorch eager's.
class LinearImpl : public torch::nn::LinearImpl {
 public:
  using torch::nn::LinearImpl::LinearImpl;
  torch::Tensor forward(const torch::Tensor& input) { return torch::linear(input, weight, bias); }
};
TORCH_MODULE(Linear);

Linear linear(int64_t in, int64_t out);

// Where a batch's tokens sit in the hidden states between the layers. Padded (the default, as HF
// keeps them): [B, S, H], padding included, and to_rows and to_grid are the identity. Unpadded
// (model.unpad): the T real tokens alone, as rows [1, T, H] in sample-then-position order, so the
// work done token by token (projections, MLP, LayerNorms, activation, dropout) skips the padding.
// Attention alone needs the [B, S] grid: queries, keys and values go back to it with the padding
// as zeros (the padding mask keeps those keys out of every score, and the padding's queries are
// never read), and the context comes back to rows. A token's
// output depends on the padding only through those masked scores, so the rows are HF's outputs
// at the real tokens, and the logits, loss and gradients are HF's.
class TokenLayout {
 public:
  TokenLayout() = default;  // padded
  // Unpadded where `unpad` and the batch has padding (in.token_positions, else found from the mask);
  // a batch without padding stays padded, which is then the same thing without the copies. With
  // `by_sample` (a CPU run) the layout also learns where each sample's rows begin and end, so
  // attention can run sample by sample (attention_by_sample) instead of on the grid.
  static TokenLayout of(const ModelInputs& in, bool unpad, bool by_sample = false);

  bool unpadded() const { return positions_.defined(); }
  // Unpadded, the flat grid positions (b * S + s) of the rows, [T]; undefined on the grid.
  const torch::Tensor& positions() const { return positions_; }
  // The rows holding these flat grid positions (a masked-LM head's scored ones), which must be
  // real tokens: a padding position has no row and reads row 0. On the grid, the positions themselves.
  torch::Tensor rows_of(const torch::Tensor& grid_positions) const;
  bool attends_by_sample() const { return !sample_rows_.empty(); }
  // Each sample's rows, in order: the first, and how many (its real tokens), in the unpadded rows.
  const std::vector<std::pair<int64_t, int64_t>>& sample_rows() const { return sample_rows_; }
  // Attending by sample, each sample's first real token's position in its sequence, where every
  // sample has real tokens and they are consecutive positions (as the loader pads them, on one
  // side); empty otherwise. XLNet's relative attention needs it: a sample by itself is a sequence
  // of its length only if no padding sits between its tokens.
  const std::vector<int64_t>& sample_starts() const { return sample_starts_; }
  // [B, S, ...] on the grid -> [1, T, ...] at the real tokens (ids, positions, token types); an
  // undefined tensor (DistilBERT's token types) stays undefined.
  torch::Tensor to_rows(const torch::Tensor& grid) const;
  // [1, T, C] -> [B, S, C], zeros at the padding.
  torch::Tensor to_grid(const torch::Tensor& rows) const;
  // x at one grid position of every sample, [B, 1, C]; unpadded, that position must be a real token
  // in every sample, or this reads another token's row. A classifier's is: the first token with
  // right padding (BERT, DistilBERT, RoBERTa), the last with XLNet's left padding; the padding
  // side is the model family's (the tokenizer must match it) and no sample is empty.
  torch::Tensor at_position(const torch::Tensor& x, int64_t position) const;

 private:
  // Each sample's rows and first position, read from the mask [B, S].
  void find_samples(const torch::Tensor& attention_mask);

  torch::Tensor positions_;  // [T] flat grid positions b * S + s of the real tokens
  torch::Tensor row_of_;     // [B, S]: the row holding each grid position (0 at the padding, never read)
  int64_t batch_ = 0, seq_len_ = 0;
  std::vector<std::pair<int64_t, int64_t>> sample_rows_;  // by_sample: each sample's first row and count
  std::vector<int64_t> sample_starts_;                    // by_sample: each sample's first real position
};

// Query, key and value [B, H, S, D] from x (in `layout`, H*D wide): three projections, or `fused`,
// one GEMM over the three weights stacked ([3HD, HD]), split afterwards. The parameters stay HF's
// three, so checkpoints and optimizer state are the same either way.
QueryKeyValue project_qkv(const torch::Tensor& x, const TokenLayout& layout, Linear& query, Linear& key, Linear& value,
                          int64_t heads, bool fused);

// The same with the query at one position only ([B, H, 1, D]), keys and values at every position:
// a sparse last layer's (model.sparse_last_layer), which computes its output where the head reads it.
QueryKeyValue project_qkv_at(const torch::Tensor& x, const TokenLayout& layout, int64_t position, Linear& query,
                             Linear& key, Linear& value, int64_t heads);

// x at the positions a block computes its output for: all of them (x itself), or only `position` ([B, 1, H]).
torch::Tensor rows_at(const torch::Tensor& x, const TokenLayout& layout, std::optional<int64_t> position);

// The encoder's output at the position a classifier's head reads, [B, H]: all a sparse last layer
// computed ([B, 1, H]), else read there from every token's output.
torch::Tensor head_position(const torch::Tensor& x, const TokenLayout& layout, int64_t position, bool sparse_last_layer);

// How a block's self-attention runs (BERT, DistilBERT, RoBERTa).
struct SelfAttentionSettings {
  int64_t heads = 1;
  bool fused_qkv = false;
  double dropout_p = 0.0;
  bool training = false;
  AttentionKernel kernel = AttentionKernel::eager;
};

// Multi-head self-attention's context, before the output projection, in the layout of the
// block's other work: x's ([B, S, H], or the real tokens' rows [1, T, H]), or with `at` that one
// position, [B, 1, H]. On the grid, or where the layout attends by sample, sample by sample.
torch::Tensor self_attention(const torch::Tensor& x, const torch::Tensor& bias, const TokenLayout& layout,
                             std::optional<int64_t> at, Linear& query, Linear& key, Linear& value,
                             const SelfAttentionSettings& settings);

// Attention's context [B, S or 1, H] back in the layout the block's other work runs in: rows where
// unpadded, unless the block computes one position only.
torch::Tensor context_rows(const torch::Tensor& context, const TokenLayout& layout, std::optional<int64_t> position);
torch::nn::LayerNorm layer_norm(int64_t size, double eps);

// The masked-LM head every architecture here shares, under its own names: a transform
// LayerNorm(act(W x + b)), then a score against every word embedding (the decoder's weight is the
// embedding table, tied as in HF) plus a bias per token. hidden [B, S, H] -> [B, S, vocab_size] at
// every position when scored_positions is undefined, else [N, vocab_size] at the N listed flat
// positions only (ModelInputs::scored_positions, mlm.sparse_prediction). hidden is in `layout`:
// unpadded ([1, T, H], model.unpad), every position means every real token, [1, T, vocab_size].
torch::Tensor masked_lm_scores(const torch::Tensor& hidden, const TokenLayout& layout,
                               const torch::Tensor& scored_positions, Linear& transform,
                               const std::string& activation_name, torch::nn::LayerNorm& norm,
                               const torch::Tensor& word_embeddings, const torch::Tensor& bias);

}  // namespace tbench::layers
