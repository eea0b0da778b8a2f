// RoBERTa (Liu et al., 2019) for sequence classification and masked LM, laid out as HF's
// RobertaForSequenceClassification and RobertaForMaskedLM: the BERT encoder under "roberta."
// without a pooler, and position ids that count only real tokens and start after the padding id.
//   roberta.embeddings.*, roberta.encoder.layer.N.*
//   classifier: a two-layer head on <s>, classifier.dense, classifier.out_proj
//   masked LM: lm_head.dense, lm_head.layer_norm, lm_head.bias; the decoder's weight is
//     roberta.embeddings.word_embeddings.weight (tied)
#include "tbench/models/architectures.hpp"
#include "tbench/models/bert.hpp"

namespace tbench::roberta {
namespace {

using layers::add_group;

// The encoder's output (the last layer at `last_layer_at` only, if given). position_i = pad +
// (number of real tokens up to and including i), and pad for padding tokens.
torch::Tensor encode(bert::Embeddings& embeddings, bert::Encoder& encoder, const ModelInputs& in, int64_t pad,
                     const layers::TokenLayout& layout, std::optional<int64_t> last_layer_at = std::nullopt) {
  auto real = in.input_ids.ne(pad).to(torch::kLong);
  auto positions = torch::cumsum(real, 1) * real + pad;
  auto x = embeddings(layout.to_rows(in.input_ids), layout.to_rows(in.token_type_ids), layout.to_rows(positions));
  return encoder(x, in, layout, last_layer_at);
}

class ForSequenceClassification : public SequenceClassifier {
 public:
  ForSequenceClassification(const ModelConfig& c, int64_t num_labels)
      : pad_(c.pad_token_id),
        sparse_last_layer_(c.sparse_last_layer),
        unpad_(c.unpad),
        unpad_by_sample_(c.unpad_attention_by_sample) {
    auto roberta = add_group(*this, "roberta");
    embeddings_ = roberta->register_module("embeddings", bert::Embeddings(c));
    encoder_ = roberta->register_module("encoder", bert::Encoder(c));
    auto head = add_group(*this, "classifier");
    dense_ = head->register_module("dense", layers::linear(c.hidden_size, c.hidden_size));
    out_proj_ = head->register_module("out_proj", layers::linear(c.hidden_size, num_labels));
    dropout_ = register_module("dropout", layers::Dropout(c.classifier_dropout));
    layers::init_weights(*this, c.initializer_range);
  }

  torch::Tensor forward(const ModelInputs& in) override {
    // The head reads <s> alone, so a sparse last layer computes only that position.
    const auto layout = layers::TokenLayout::of(in, unpad_, unpad_by_sample_);
    const auto x =
        encode(embeddings_, encoder_, in, pad_, layout, sparse_last_layer_ ? std::optional<int64_t>(0) : std::nullopt);
    // Head on <s>: dropout -> dense -> tanh -> dropout -> out_proj.
    auto h = torch::tanh(dense_(dropout_(layers::head_position(x, layout, 0, sparse_last_layer_))));
    return out_proj_(dropout_(h));
  }

 private:
  int64_t pad_;
  bool sparse_last_layer_, unpad_, unpad_by_sample_;
  bert::Embeddings embeddings_{nullptr};
  bert::Encoder encoder_{nullptr};
  layers::Linear dense_{nullptr}, out_proj_{nullptr};
  layers::Dropout dropout_{nullptr};
};

// HF's RobertaForMaskedLM: RobertaLMHead applies the exact gelu, whatever the config's hidden_act.
class ForMaskedLM : public MaskedLanguageModel {
 public:
  explicit ForMaskedLM(const ModelConfig& c)
      : pad_(c.pad_token_id), unpad_(c.unpad), unpad_by_sample_(c.unpad_attention_by_sample) {
    auto roberta = add_group(*this, "roberta");
    embeddings_ = roberta->register_module("embeddings", bert::Embeddings(c));
    encoder_ = roberta->register_module("encoder", bert::Encoder(c));
    auto head = add_group(*this, "lm_head");
    dense_ = head->register_module("dense", layers::linear(c.hidden_size, c.hidden_size));
    norm_ = head->register_module("layer_norm", layers::layer_norm(c.hidden_size, c.layer_norm_eps));
    bias_ = head->register_parameter("bias", torch::zeros({c.vocab_size}));
    layers::init_weights(*this, c.initializer_range);
  }

  MaskedLmOutputs forward(const ModelInputs& in) override {
    const auto layout = layers::TokenLayout::of(in, unpad_, unpad_by_sample_);
    auto hidden = encode(embeddings_, encoder_, in, pad_, layout);
    auto logits = layers::masked_lm_scores(hidden, layout, in.scored_positions, dense_, "gelu", norm_,
                                           embeddings_->word_embeddings->weight, bias_);
    return {logits, hidden, layout.positions()};
  }

 private:
  int64_t pad_;
  bool unpad_, unpad_by_sample_;
  bert::Embeddings embeddings_{nullptr};
  bert::Encoder encoder_{nullptr};
  layers::Linear dense_{nullptr};
  torch::nn::LayerNorm norm_{nullptr};
  torch::Tensor bias_;
};

}  // namespace

std::shared_ptr<SequenceClassifier> make_classifier(const ModelConfig& c, int64_t num_labels) {
  return std::make_shared<ForSequenceClassification>(c, num_labels);
}

std::shared_ptr<MaskedLanguageModel> make_masked_lm(const ModelConfig& c) { return std::make_shared<ForMaskedLM>(c); }

}  // namespace tbench::roberta
