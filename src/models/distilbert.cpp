// DistilBERT (Sanh et al., 2019) for sequence classification and masked LM, laid out as HF's
// DistilBertForSequenceClassification and DistilBertForMaskedLM: BERT with half the layers, no
// token types, no pooler.
//   distilbert.embeddings.{word_embeddings,position_embeddings,LayerNorm} (BERT's embeddings; the
//     config's type_vocab_size of 0 leaves out the token-type table)
//   distilbert.transformer.layer.N.attention.{q_lin,k_lin,v_lin,out_lin}, ...sa_layer_norm
//   distilbert.transformer.layer.N.ffn.{lin1,lin2}, ...output_layer_norm
//   classifier: pre_classifier, classifier
//   masked LM: vocab_transform, vocab_layer_norm, vocab_projector.bias; the projector's weight is
//     distilbert.embeddings.word_embeddings.weight (tied)
#include <cmath>

#include "tbench/models/architectures.hpp"
#include "tbench/models/bert.hpp"
#include "tbench/models/residual_layer_norm.hpp"

namespace tbench::distilbert {
namespace {

using layers::add_group;

// Fixed sin/cos table of "Attention is all you need" (sinusoidal_pos_embds: true).
void fill_sinusoidal(torch::Tensor table) {
  const int64_t positions = table.size(0), dim = table.size(1);
  auto pos = torch::arange(positions, torch::kDouble).unsqueeze(1);
  auto i = torch::arange(dim, torch::kDouble);
  auto angle = pos / torch::pow(10000.0, 2 * torch::floor_divide(i, 2) / dim);
  auto values = torch::empty({positions, dim}, torch::kDouble);
  values.index_put_({torch::indexing::Slice(), torch::indexing::Slice(0, torch::indexing::None, 2)},
                    torch::sin(angle.index({torch::indexing::Slice(), torch::indexing::Slice(0, torch::indexing::None, 2)})));
  values.index_put_({torch::indexing::Slice(), torch::indexing::Slice(1, torch::indexing::None, 2)},
                    torch::cos(angle.index({torch::indexing::Slice(), torch::indexing::Slice(1, torch::indexing::None, 2)})));
  torch::NoGradGuard no_grad;
  table.copy_(values);
  table.set_requires_grad(false);
}

class TransformerBlockImpl : public torch::nn::Module {
 public:
  explicit TransformerBlockImpl(const ModelConfig& c)
      : num_heads_(c.num_heads),
        attention_dropout_(c.attention_dropout),
        attention_kernel_(c.attention),
        fused_qkv_(c.fused_qkv),
        fused_layer_norm_(c.fused_layer_norm),
        activation_(c.activation) {
    const int64_t h = c.hidden_size;
    auto attention = add_group(*this, "attention");
    q_lin_ = attention->register_module("q_lin", layers::linear(h, h));
    k_lin_ = attention->register_module("k_lin", layers::linear(h, h));
    v_lin_ = attention->register_module("v_lin", layers::linear(h, h));
    out_lin_ = attention->register_module("out_lin", layers::linear(h, h));
    sa_layer_norm_ = register_module("sa_layer_norm", layers::layer_norm(h, c.layer_norm_eps));
    auto ffn = add_group(*this, "ffn");
    lin1_ = ffn->register_module("lin1", layers::linear(h, c.intermediate_size));
    lin2_ = ffn->register_module("lin2", layers::linear(c.intermediate_size, h));
    output_layer_norm_ = register_module("output_layer_norm", layers::layer_norm(h, c.layer_norm_eps));
    dropout_ = register_module("dropout", layers::Dropout(c.hidden_dropout));
  }

  // The block's output at every token of x (in `layout`), or with `at` only at that position (the
  // query, the residual and the FFN there; keys and values from every token). x's matmul input
  // feeds the projections, its stream the residual; the output comes the same way for the next block.
  layers::NormedHidden forward(const layers::NormedHidden& x, const torch::Tensor& bias,
                               const layers::TokenLayout& layout, std::optional<int64_t> at = std::nullopt) {
    auto context = layers::self_attention(x.matmul_input, bias, layout, at, q_lin_, k_lin_, v_lin_,
                                          {num_heads_, fused_qkv_, attention_dropout_, is_training(), attention_kernel_});
    // Unlike BERT, DistilBERT applies no dropout to the attention output projection.
    auto attended = layers::residual_layer_norm(out_lin_(context), layers::rows_at(x.stream, layout, at),
                                                sa_layer_norm_, /*dropout_p=*/0.0, is_training(), fused_layer_norm_);
    auto ffn = lin2_(layers::activation(activation_, lin1_(attended.matmul_input)));
    return layers::residual_layer_norm(ffn, attended.stream, output_layer_norm_, dropout_->p(), is_training(),
                                       fused_layer_norm_);
  }

 private:
  int64_t num_heads_;
  double attention_dropout_;
  AttentionKernel attention_kernel_;
  bool fused_qkv_;
  bool fused_layer_norm_;
  std::string activation_;
  layers::Linear q_lin_{nullptr}, k_lin_{nullptr}, v_lin_{nullptr}, out_lin_{nullptr};
  layers::Linear lin1_{nullptr}, lin2_{nullptr};
  torch::nn::LayerNorm sa_layer_norm_{nullptr}, output_layer_norm_{nullptr};
  layers::Dropout dropout_{nullptr};
};
TORCH_MODULE(TransformerBlock);

// The body both heads share, under "distilbert.": embeddings and the transformer blocks.
struct Body {
  bert::Embeddings embeddings{nullptr};
  torch::nn::ModuleList blocks{nullptr};
  bool mask_every_batch = false;

  Body(torch::nn::Module& model, const ModelConfig& c) : mask_every_batch(c.mask_every_batch) {
    auto distilbert = add_group(model, "distilbert");
    embeddings = distilbert->register_module("embeddings", bert::Embeddings(c));
    blocks = add_group(*distilbert, "transformer")->register_module("layer", torch::nn::ModuleList());
    for (int64_t i = 0; i < c.num_layers; ++i) blocks->push_back(TransformerBlock(c));
  }

  // Called after the model's init_weights, which leaves fixed tables as they are.
  void fill_positions(const ModelConfig& c) {
    if (c.sinusoidal_positions) fill_sinusoidal(embeddings->position_embeddings->weight);
  }

  // The hidden states in `layout`; the last block at `last_layer_at` only, if given ([B, 1, H] out).
  torch::Tensor forward(const ModelInputs& in, const layers::TokenLayout& layout,
                        std::optional<int64_t> last_layer_at = std::nullopt) {
    const auto seq_len = in.input_ids.size(1);
    auto positions = torch::arange(seq_len, in.input_ids.options()).unsqueeze(0).expand_as(in.input_ids);
    // No token types: the embeddings are Dropout(LayerNorm(word + position)).
    auto x = embeddings(layout.to_rows(in.input_ids), /*token_type_ids=*/torch::Tensor(), layout.to_rows(positions));
    const auto bias = layers::attention_bias(in, mask_every_batch, x.scalar_type());
    const auto count = blocks->size();
    auto hidden = layers::NormedHidden::of(x);
    for (std::size_t i = 0; i < count; ++i) {
      hidden = blocks[i]->as<TransformerBlock>()->forward(hidden, bias, layout,
                                                           i + 1 == count ? last_layer_at : std::nullopt);
    }
    return hidden.stream;
  }
};

class ForSequenceClassification : public SequenceClassifier {
 public:
  ForSequenceClassification(const ModelConfig& c, int64_t num_labels)
      : body_(*this, c),
        sparse_last_layer_(c.sparse_last_layer),
        unpad_(c.unpad),
        unpad_by_sample_(c.unpad_attention_by_sample) {
    const int64_t h = c.hidden_size;
    pre_classifier_ = register_module("pre_classifier", layers::linear(h, h));
    classifier_ = register_module("classifier", layers::linear(h, num_labels));
    classifier_dropout_ = register_module("dropout", layers::Dropout(c.classifier_dropout));
    body_.fill_positions(c);
    layers::init_weights(*this, c.initializer_range);
  }

  torch::Tensor forward(const ModelInputs& in) override {
    // The head reads [CLS] alone, so a sparse last layer computes only that position.
    const auto layout = layers::TokenLayout::of(in, unpad_, unpad_by_sample_);
    const auto x = body_.forward(in, layout, sparse_last_layer_ ? std::optional<int64_t>(0) : std::nullopt);
    // Head on [CLS]: pre_classifier -> ReLU -> dropout(seq_classif_dropout) -> classifier.
    auto h = torch::relu(pre_classifier_(layers::head_position(x, layout, 0, sparse_last_layer_)));
    return classifier_(classifier_dropout_(h));
  }

 private:
  Body body_;
  bool sparse_last_layer_, unpad_, unpad_by_sample_;
  layers::Linear pre_classifier_{nullptr}, classifier_{nullptr};
  layers::Dropout classifier_dropout_{nullptr};
};

// HF's DistilBertForMaskedLM: vocab_transform -> activation -> vocab_layer_norm (eps 1e-12, fixed
// in HF) -> vocab_projector.
class ForMaskedLM : public MaskedLanguageModel {
 public:
  explicit ForMaskedLM(const ModelConfig& c)
      : body_(*this, c), activation_(c.activation), unpad_(c.unpad), unpad_by_sample_(c.unpad_attention_by_sample) {
    vocab_transform_ = register_module("vocab_transform", layers::linear(c.hidden_size, c.hidden_size));
    vocab_layer_norm_ = register_module("vocab_layer_norm", layers::layer_norm(c.hidden_size, 1e-12));
    bias_ = add_group(*this, "vocab_projector")->register_parameter("bias", torch::zeros({c.vocab_size}));
    body_.fill_positions(c);
    layers::init_weights(*this, c.initializer_range);
  }

  MaskedLmOutputs forward(const ModelInputs& in) override {
    const auto layout = layers::TokenLayout::of(in, unpad_, unpad_by_sample_);
    auto hidden = body_.forward(in, layout);
    auto logits = layers::masked_lm_scores(hidden, layout, in.scored_positions, vocab_transform_, activation_,
                                           vocab_layer_norm_, body_.embeddings->word_embeddings->weight, bias_);
    return {logits, hidden, layout.positions()};
  }

 private:
  Body body_;
  std::string activation_;
  bool unpad_, unpad_by_sample_;
  layers::Linear vocab_transform_{nullptr};
  torch::nn::LayerNorm vocab_layer_norm_{nullptr};
  torch::Tensor bias_;
};

}  // namespace

std::shared_ptr<SequenceClassifier> make_classifier(const ModelConfig& c, int64_t num_labels) {
  return std::make_shared<ForSequenceClassification>(c, num_labels);
}

std::shared_ptr<MaskedLanguageModel> make_masked_lm(const ModelConfig& c) { return std::make_shared<ForMaskedLM>(c); }

}  // namespace tbench::distilbert
