// RoBERTa for sequence classification (Liu et al., 2019), laid out as HF's
// RobertaForSequenceClassification: the BERT encoder under "roberta." without a pooler, position
// ids that count only real tokens and start after the padding id, and a two-layer head on <s>:
//   roberta.embeddings.*, roberta.encoder.layer.N.*, classifier.dense, classifier.out_proj
#include "tbench/models/architectures.hpp"
#include "tbench/models/bert.hpp"

namespace tbench::roberta {
namespace {

using layers::add_group;

class ForSequenceClassification : public SequenceClassifier {
 public:
  ForSequenceClassification(const ModelConfig& c, int64_t num_labels) : pad_(c.pad_token_id) {
    auto roberta = add_group(*this, "roberta");
    embeddings_ = roberta->register_module("embeddings", bert::Embeddings(c));
    encoder_ = roberta->register_module("encoder", bert::Encoder(c));
    auto head = add_group(*this, "classifier");
    dense_ = head->register_module("dense", layers::linear(c.hidden_size, c.hidden_size));
    out_proj_ = head->register_module("out_proj", layers::linear(c.hidden_size, num_labels));
    dropout_ = register_module("dropout", torch::nn::Dropout(c.classifier_dropout));
    layers::init_weights(*this, c.initializer_range);
  }

  torch::Tensor forward(const ModelInputs& in) override {
    // position_i = pad + (number of real tokens up to and including i), pad for padding tokens.
    auto real = in.input_ids.ne(pad_).to(torch::kLong);
    auto positions = torch::cumsum(real, 1) * real + pad_;
    auto x = embeddings_(in.input_ids, in.token_type_ids, positions);
    x = encoder_(x, layers::padding_bias(in.attention_mask, x.scalar_type()));
    // Head on <s>: dropout -> dense -> tanh -> dropout -> out_proj.
    auto h = torch::tanh(dense_(dropout_(x.select(1, 0))));
    return out_proj_(dropout_(h));
  }

 private:
  int64_t pad_;
  bert::Embeddings embeddings_{nullptr};
  bert::Encoder encoder_{nullptr};
  layers::Linear dense_{nullptr}, out_proj_{nullptr};
  torch::nn::Dropout dropout_{nullptr};
};

}  // namespace

std::shared_ptr<SequenceClassifier> make_classifier(const ModelConfig& c, int64_t num_labels) {
  return std::make_shared<ForSequenceClassification>(c, num_labels);
}

}  // namespace tbench::roberta
