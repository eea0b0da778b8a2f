// BERT (Devlin et al., 2018) for sequence classification and masked LM, laid out as HF's
// BertForSequenceClassification and BertForMaskedLM so state_dict keys match:
//   bert.embeddings.{word,position,token_type}_embeddings, bert.embeddings.LayerNorm
//   bert.encoder.layer.N.attention.self.{query,key,value}, ...attention.output.{dense,LayerNorm}
//   bert.encoder.layer.N.intermediate.dense, ...output.{dense,LayerNorm}
//   classifier: bert.pooler.dense, classifier
//   masked LM (no pooler): cls.predictions.transform.{dense,LayerNorm}, cls.predictions.bias; the
//     decoder's weight is bert.embeddings.word_embeddings.weight (tied)
#include "tbench/models/architectures.hpp"
#include "tbench/models/bert.hpp"
#include "tbench/models/residual_layer_norm.hpp"

namespace tbench::bert {

using layers::add_group;

EmbeddingsImpl::EmbeddingsImpl(const ModelConfig& c) {
  const int64_t h = c.hidden_size;
  word_embeddings = register_module(
      "word_embeddings", torch::nn::Embedding(torch::nn::EmbeddingOptions(c.vocab_size, h).padding_idx(c.pad_token_id)));
  auto positions = torch::nn::EmbeddingOptions(c.max_position_embeddings, h);
  if (c.arch == Architecture::roberta) positions.padding_idx(c.pad_token_id);  // RoBERTa's positions skip padding
  position_embeddings = register_module("position_embeddings", torch::nn::Embedding(positions));
  if (c.type_vocab_size > 0) {  // 0 for DistilBERT, which has no token types
    token_type_embeddings =
        register_module("token_type_embeddings", torch::nn::Embedding(c.type_vocab_size, h));
  }
  norm = register_module("LayerNorm", layers::layer_norm(h, c.layer_norm_eps));
  dropout = register_module("dropout", layers::Dropout(c.hidden_dropout));
}

torch::Tensor EmbeddingsImpl::forward(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids,
                                      const torch::Tensor& position_ids) {
  auto x = word_embeddings(input_ids) + position_embeddings(position_ids);
  if (token_type_embeddings) x = x + token_type_embeddings(token_type_ids);
  return dropout(norm(x));
}

LayerImpl::LayerImpl(const ModelConfig& c)
    : num_heads_(c.num_heads),
      attention_dropout_(c.attention_dropout),
      attention_kernel_(c.attention),
      fused_qkv_(c.fused_qkv),
      fused_layer_norm_(c.fused_layer_norm),
      activation_(c.activation) {
  const int64_t h = c.hidden_size, f = c.intermediate_size;
  auto attention = add_group(*this, "attention");
  auto self = add_group(*attention, "self");
  query = self->register_module("query", layers::linear(h, h));
  key = self->register_module("key", layers::linear(h, h));
  value = self->register_module("value", layers::linear(h, h));
  auto attention_output = add_group(*attention, "output");
  attention_out = attention_output->register_module("dense", layers::linear(h, h));
  attention_norm = attention_output->register_module("LayerNorm", layers::layer_norm(h, c.layer_norm_eps));
  intermediate = add_group(*this, "intermediate")->register_module("dense", layers::linear(h, f));
  auto out = add_group(*this, "output");
  output = out->register_module("dense", layers::linear(f, h));
  output_norm = out->register_module("LayerNorm", layers::layer_norm(h, c.layer_norm_eps));
  dropout = register_module("dropout", layers::Dropout(c.hidden_dropout));
}

torch::Tensor LayerImpl::self_attention(const torch::Tensor& x, const torch::Tensor& bias,
                                        const layers::TokenLayout& layout, std::optional<int64_t> at) {
  return layers::self_attention(x, bias, layout, at, query, key, value,
                                {num_heads_, fused_qkv_, attention_dropout_, is_training(), attention_kernel_});
}

layers::NormedHidden LayerImpl::add_and_norm(const torch::Tensor& sublayer, const torch::Tensor& residual,
                                             torch::nn::LayerNorm& norm) {
  return layers::residual_layer_norm(sublayer, residual, norm, dropout->p(), is_training(), fused_layer_norm_);
}

layers::NormedHidden LayerImpl::forward(const layers::NormedHidden& x, const torch::Tensor& bias,
                                       const layers::TokenLayout& layout, std::optional<int64_t> at) {
  // x' = LayerNorm(x + Dropout(W_o · MultiHeadAttention(x)))
  auto attended = add_and_norm(attention_out(self_attention(x.matmul_input, bias, layout, at)),
                               layers::rows_at(x.stream, layout, at), attention_norm);
  // y = LayerNorm(x' + Dropout(W_2 · act(W_1 · x')))
  auto hidden = layers::activation(activation_, intermediate(attended.matmul_input));
  return add_and_norm(output(hidden), attended.stream, output_norm);
}

EncoderImpl::EncoderImpl(const ModelConfig& c) : mask_every_batch_(c.mask_every_batch) {
  layers = register_module("layer", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_layers; ++i) layers->push_back(Layer(c));
}

torch::Tensor EncoderImpl::forward(torch::Tensor x, const ModelInputs& in, const layers::TokenLayout& layout,
                                   std::optional<int64_t> last_layer_at) {
  const auto bias = layers::attention_bias(in, mask_every_batch_, x.scalar_type());
  const auto count = layers->size();
  auto hidden = layers::NormedHidden::of(x);
  for (std::size_t i = 0; i < count; ++i) {
    hidden = layers[i]->as<Layer>()->forward(hidden, bias, layout, i + 1 == count ? last_layer_at : std::nullopt);
  }
  return hidden.stream;
}

namespace {

// The encoder's output in `layout`: embeddings at absolute positions 0..S-1, then every layer (the
// last one at `last_layer_at` only, if given).
torch::Tensor encode(Embeddings& embeddings, Encoder& encoder, const ModelInputs& in, const layers::TokenLayout& layout,
                     std::optional<int64_t> last_layer_at = std::nullopt) {
  const auto seq_len = in.input_ids.size(1);
  auto positions = torch::arange(seq_len, in.input_ids.options()).unsqueeze(0).expand_as(in.input_ids);
  auto x = embeddings(layout.to_rows(in.input_ids), layout.to_rows(in.token_type_ids), layout.to_rows(positions));
  return encoder(x, in, layout, last_layer_at);
}

class ForSequenceClassification : public SequenceClassifier {
 public:
  ForSequenceClassification(const ModelConfig& c, int64_t num_labels)
      : sparse_last_layer_(c.sparse_last_layer), unpad_(c.unpad), unpad_by_sample_(c.unpad_attention_by_sample) {
    auto bert = add_group(*this, "bert");
    embeddings_ = bert->register_module("embeddings", Embeddings(c));
    encoder_ = bert->register_module("encoder", Encoder(c));
    pooler_ = add_group(*bert, "pooler")->register_module("dense", layers::linear(c.hidden_size, c.hidden_size));
    dropout_ = register_module("dropout", layers::Dropout(c.classifier_dropout));
    classifier_ = register_module("classifier", layers::linear(c.hidden_size, num_labels));
    layers::init_weights(*this, c.initializer_range);
  }

  torch::Tensor forward(const ModelInputs& in) override {
    // The head reads [CLS] alone, so a sparse last layer computes only that position.
    const auto layout = layers::TokenLayout::of(in, unpad_, unpad_by_sample_);
    const auto x = encode(embeddings_, encoder_, in, layout, sparse_last_layer_ ? std::optional<int64_t>(0) : std::nullopt);
    // Pooler: tanh(W_p · h_[CLS]), then dropout and the linear classifier.
    auto pooled = torch::tanh(pooler_(layers::head_position(x, layout, 0, sparse_last_layer_)));
    return classifier_(dropout_(pooled));
  }

 private:
  bool sparse_last_layer_, unpad_, unpad_by_sample_;
  Embeddings embeddings_{nullptr};
  Encoder encoder_{nullptr};
  layers::Linear pooler_{nullptr}, classifier_{nullptr};
  layers::Dropout dropout_{nullptr};
};

// HF's BertForMaskedLM: the encoder without its pooler, then BertOnlyMLMHead.
class ForMaskedLM : public MaskedLanguageModel {
 public:
  explicit ForMaskedLM(const ModelConfig& c)
      : activation_(c.activation), unpad_(c.unpad), unpad_by_sample_(c.unpad_attention_by_sample) {
    auto bert = add_group(*this, "bert");
    embeddings_ = bert->register_module("embeddings", Embeddings(c));
    encoder_ = bert->register_module("encoder", Encoder(c));
    auto predictions = add_group(*add_group(*this, "cls"), "predictions");
    auto transform = add_group(*predictions, "transform");
    transform_ = transform->register_module("dense", layers::linear(c.hidden_size, c.hidden_size));
    transform_norm_ = transform->register_module("LayerNorm", layers::layer_norm(c.hidden_size, c.layer_norm_eps));
    bias_ = predictions->register_parameter("bias", torch::zeros({c.vocab_size}));
    layers::init_weights(*this, c.initializer_range);
  }

  MaskedLmOutputs forward(const ModelInputs& in) override {
    const auto layout = layers::TokenLayout::of(in, unpad_, unpad_by_sample_);
    auto hidden = encode(embeddings_, encoder_, in, layout);
    // scores = LayerNorm(act(W_t h + b_t)) E^T + b, with E the word embeddings.
    auto logits = layers::masked_lm_scores(hidden, layout, in.scored_positions, transform_, activation_,
                                           transform_norm_, embeddings_->word_embeddings->weight, bias_);
    return {logits, hidden, layout.positions()};
  }

 private:
  std::string activation_;
  bool unpad_, unpad_by_sample_;
  Embeddings embeddings_{nullptr};
  Encoder encoder_{nullptr};
  layers::Linear transform_{nullptr};
  torch::nn::LayerNorm transform_norm_{nullptr};
  torch::Tensor bias_;
};

}  // namespace

std::shared_ptr<SequenceClassifier> make_classifier(const ModelConfig& c, int64_t num_labels) {
  return std::make_shared<ForSequenceClassification>(c, num_labels);
}

std::shared_ptr<MaskedLanguageModel> make_masked_lm(const ModelConfig& c) { return std::make_shared<ForMaskedLM>(c); }

}  // namespace tbench::bert
