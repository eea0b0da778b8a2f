#pragma once
// BERT's embeddings and encoder, shared with RoBERTa (which differs only in its position ids,
// its missing pooler and its classification head). DistilBERT uses the embeddings alone.
#include "tbench/models/classifier.hpp"
#include "tbench/models/layers.hpp"
#include "tbench/models/residual_layer_norm.hpp"

namespace tbench::bert {

// word + position (+ token type) embeddings -> LayerNorm -> dropout. A config with
// type_vocab_size 0 (DistilBERT) has no token-type table, so no token_type_embeddings parameter,
// and forward ignores token_type_ids (which may then be undefined).
class EmbeddingsImpl : public torch::nn::Module {
 public:
  explicit EmbeddingsImpl(const ModelConfig& c);
  torch::Tensor forward(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids,
                        const torch::Tensor& position_ids);

  torch::nn::Embedding word_embeddings{nullptr}, position_embeddings{nullptr}, token_type_embeddings{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  layers::Dropout dropout{nullptr};
};
TORCH_MODULE(Embeddings);

// One post-LayerNorm transformer block, named as HF's BertLayer.
class LayerImpl : public torch::nn::Module {
 public:
  explicit LayerImpl(const ModelConfig& c);
  // The block over x (in `layout`: [B, S, H], or the real tokens' rows [1, T, H]): its output at every
  // token, or with `at` only at that position ([B, 1, H]): the query, the residual and the MLP
  // there, keys and values from every token. x's matmul input feeds the projections, its stream
  // the residual; the output comes the same way for the next block.
  layers::NormedHidden forward(const layers::NormedHidden& x, const torch::Tensor& bias,
                               const layers::TokenLayout& layout, std::optional<int64_t> at = std::nullopt);

 private:
  torch::Tensor self_attention(const torch::Tensor& x, const torch::Tensor& bias, const layers::TokenLayout& layout,
                               std::optional<int64_t> at);
  // LayerNorm(residual + Dropout(sublayer)): the "add & norm" after attention and after the MLP.
  layers::NormedHidden add_and_norm(const torch::Tensor& sublayer, const torch::Tensor& residual,
                                    torch::nn::LayerNorm& norm);

  int64_t num_heads_;
  double attention_dropout_;
  AttentionKernel attention_kernel_;
  bool fused_qkv_;
  bool fused_layer_norm_;
  std::string activation_;
  layers::Linear query{nullptr}, key{nullptr}, value{nullptr}, attention_out{nullptr};
  torch::nn::LayerNorm attention_norm{nullptr};
  layers::Linear intermediate{nullptr}, output{nullptr};
  torch::nn::LayerNorm output_norm{nullptr};
  layers::Dropout dropout{nullptr};
};
TORCH_MODULE(Layer);

class EncoderImpl : public torch::nn::Module {
 public:
  explicit EncoderImpl(const ModelConfig& c);
  // Every layer over x (in `layout`), attending to the real tokens of `in` (layers::attention_bias).
  // With `last_layer_at` (a classifier's sparse_last_layer) the last layer's output is [B, 1, H], at
  // that position only.
  torch::Tensor forward(torch::Tensor x, const ModelInputs& in, const layers::TokenLayout& layout,
                        std::optional<int64_t> last_layer_at = std::nullopt);

  torch::nn::ModuleList layers{nullptr};

 private:
  bool mask_every_batch_;
};
TORCH_MODULE(Encoder);

}  // namespace tbench::bert
