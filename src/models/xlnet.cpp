// XLNet for sequence classification (Yang et al., 2019), laid out as HF's
// XLNetForSequenceClassification so state_dict keys match:
//   transformer.word_embedding, transformer.mask_emb
//   transformer.layer.N.rel_attn.{q,k,v,o,r}            [d_model, n_head, d_head], no biases
//   transformer.layer.N.rel_attn.{r_r,r_s,r_w}_bias      [n_head, d_head]
//   transformer.layer.N.rel_attn.seg_embed               [2, n_head, d_head]
//   transformer.layer.N.rel_attn.layer_norm, transformer.layer.N.ff.{layer_1,layer_2,layer_norm}
//   sequence_summary.summary, logits_proj
//
// This is the model HF fine-tunes: the content stream only (no query stream, permutation mask or
// memory; mask_emb exists but is unused), bidirectional attention over relative positions without
// clamping, and a head on the last token, which is <cls> because XLNet's tokenizer pads on the
// left. Tensors are batch-first here ([B, S, d_model], heads [B, n_head, S, d_head]); HF works in
// [S, B] but computes the same sums.
#include "tbench/models/xlnet.hpp"

#include <cmath>

#include "tbench/models/architectures.hpp"
#include "tbench/models/layers.hpp"

namespace tbench::xlnet {

using layers::add_group;

torch::Tensor relative_positions(int64_t qlen, int64_t klen, torch::Device device) {
  return torch::arange(klen, -qlen, -1, torch::TensorOptions(torch::kLong).device(device)).to(torch::kFloat);
}

torch::Tensor positional_encoding(const torch::Tensor& positions, int64_t d_model) {
  // inv_freq_k = 1 / 10000^(2k / d_model), in float32 like HF.
  auto freq = torch::arange(0, d_model, 2, positions.options().dtype(torch::kLong)).to(torch::kFloat);
  auto inv_freq = torch::reciprocal(torch::pow(10000.0, freq / d_model));
  auto angle = positions.unsqueeze(1) * inv_freq.unsqueeze(0);  // [P, d_model / 2]
  return torch::cat({torch::sin(angle), torch::cos(angle)}, -1);
}

torch::Tensor rel_shift(const torch::Tensor& x, int64_t klen) {
  // Read the [qlen, P] scores of each head as [P, qlen], drop the first row and read them back as
  // [qlen, P - 1]: row i moves left by qlen - i, so column j now holds distance i - j.
  const auto b = x.size(0), h = x.size(1), q = x.size(2), p = x.size(3);
  return x.reshape({b, h, p, q}).narrow(2, 1, p - 1).reshape({b, h, q, p - 1}).narrow(3, 0, klen);
}

namespace {

// [B, L, d_model] x W [d_model, n_head, d_head] -> [B, n_head, L, d_head] (HF: "ibh,hnd->ibnd").
torch::Tensor project_heads(const torch::Tensor& x, const torch::Tensor& w) {
  const auto heads = w.size(1), head_dim = w.size(2);
  return torch::matmul(x, w.view({w.size(0), heads * head_dim}))
      .view({x.size(0), x.size(1), heads, head_dim})
      .transpose(1, 2);
}

// Relative multi-head attention (HF's XLNetRelativeAttention, content stream). For query i and key
// j, with R_{i-j} the sinusoid of their distance:
//   score_ij = [ (q_i + r_w_bias) . k_j                 content            (HF's ac)
//              + (q_i + r_r_bias) . (W_r R_{i-j})       position           (bd)
//              + (q_i + r_s_bias) . seg_embed[s_ij] ]   segment            (ef)
//              / sqrt(d_head) + mask_ij
// where s_ij is 0 if tokens i and j have the same token type and 1 if not.
class RelativeAttentionImpl : public torch::nn::Module {
 public:
  explicit RelativeAttentionImpl(const ModelConfig& c)
      : heads_(c.num_heads), head_dim_(c.head_dim()), dropout_p_(c.attention_dropout),
        scale_(1.0 / std::sqrt(static_cast<double>(c.head_dim()))) {
    const int64_t d = c.hidden_size;
    q_ = register_parameter("q", torch::empty({d, heads_, head_dim_}));
    k_ = register_parameter("k", torch::empty({d, heads_, head_dim_}));
    v_ = register_parameter("v", torch::empty({d, heads_, head_dim_}));
    o_ = register_parameter("o", torch::empty({d, heads_, head_dim_}));
    r_ = register_parameter("r", torch::empty({d, heads_, head_dim_}));
    r_r_bias_ = register_parameter("r_r_bias", torch::empty({heads_, head_dim_}));
    r_s_bias_ = register_parameter("r_s_bias", torch::empty({heads_, head_dim_}));
    r_w_bias_ = register_parameter("r_w_bias", torch::empty({heads_, head_dim_}));
    seg_embed_ = register_parameter("seg_embed", torch::empty({2, heads_, head_dim_}));
    layer_norm_ = register_module("layer_norm", layers::layer_norm(d, c.layer_norm_eps));
    dropout_ = register_module("dropout", torch::nn::Dropout(c.hidden_dropout));
  }

  // HF's _init_weights draws all of these from N(0, std).
  void init_weights(double std) {
    torch::NoGradGuard no_grad;
    for (auto* p : {&q_, &k_, &v_, &o_, &r_, &r_r_bias_, &r_s_bias_, &r_w_bias_, &seg_embed_}) p->normal_(0.0, std);
  }

  // h: [B, S, d_model]; positions: the encodings of distances S .. 1-S, [B or 1, 2S, d_model];
  // other_segment: [B, 1, S, S] bool, or undefined for no segment term; mask: [B, 1, S, S] or undefined.
  torch::Tensor forward(const torch::Tensor& h, const torch::Tensor& positions, const torch::Tensor& other_segment,
                        const torch::Tensor& mask) {
    const auto batch = h.size(0), seq = h.size(1);
    const auto per_head = [&](const torch::Tensor& bias) { return bias.view({heads_, 1, head_dim_}); };
    auto q = project_heads(h, q_);
    auto k = project_heads(h, k_);
    auto v = project_heads(h, v_);
    auto k_r = project_heads(positions, r_);  // [B or 1, H, 2S, D]

    auto ac = torch::matmul(q + per_head(r_w_bias_), k.transpose(-1, -2));                             // [B, H, S, S]
    auto bd = rel_shift(torch::matmul(q + per_head(r_r_bias_), k_r.transpose(-1, -2)), seq);           // [B, H, S, S]
    auto scores = ac + bd;
    if (other_segment.defined()) {
      auto ef = torch::matmul(q + per_head(r_s_bias_), seg_embed_.permute({1, 2, 0}));  // [B, H, S, 2]
      scores = scores + torch::where(other_segment, ef.narrow(-1, 1, 1), ef.narrow(-1, 0, 1));
    }
    scores = scores * scale_;
    if (mask.defined()) scores = scores + mask;
    auto probs = torch::dropout(torch::softmax(scores, -1), dropout_p_, is_training());

    auto context = torch::matmul(probs, v).transpose(1, 2).reshape({batch, seq, heads_ * head_dim_});
    auto out = torch::matmul(context, o_.view({o_.size(0), heads_ * head_dim_}).t());  // HF: "ibnd,hnd->ibh"
    // Post-attention: LayerNorm(h + Dropout(W_o · attention))
    return layer_norm_(dropout_(out) + h);
  }

 private:
  int64_t heads_, head_dim_;
  double dropout_p_, scale_;
  torch::Tensor q_, k_, v_, o_, r_, r_r_bias_, r_s_bias_, r_w_bias_, seg_embed_;
  torch::nn::LayerNorm layer_norm_{nullptr};
  torch::nn::Dropout dropout_{nullptr};
};
TORCH_MODULE(RelativeAttention);

// y = LayerNorm(x + Dropout(W_2 · Dropout(act(W_1 · x))))
class FeedForwardImpl : public torch::nn::Module {
 public:
  explicit FeedForwardImpl(const ModelConfig& c) : activation_(c.activation) {
    layer_norm_ = register_module("layer_norm", layers::layer_norm(c.hidden_size, c.layer_norm_eps));
    layer_1_ = register_module("layer_1", layers::linear(c.hidden_size, c.intermediate_size));
    layer_2_ = register_module("layer_2", layers::linear(c.intermediate_size, c.hidden_size));
    dropout_ = register_module("dropout", torch::nn::Dropout(c.hidden_dropout));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    auto y = dropout_(layer_2_(dropout_(layers::activation(activation_, layer_1_(x)))));
    return layer_norm_(y + x);
  }

 private:
  std::string activation_;
  torch::nn::LayerNorm layer_norm_{nullptr};
  layers::Linear layer_1_{nullptr}, layer_2_{nullptr};
  torch::nn::Dropout dropout_{nullptr};
};
TORCH_MODULE(FeedForward);

class LayerImpl : public torch::nn::Module {
 public:
  explicit LayerImpl(const ModelConfig& c) {
    rel_attn = register_module("rel_attn", RelativeAttention(c));
    ff = register_module("ff", FeedForward(c));
  }

  torch::Tensor forward(const torch::Tensor& h, const torch::Tensor& positions, const torch::Tensor& other_segment,
                        const torch::Tensor& mask) {
    return ff(rel_attn(h, positions, other_segment, mask));
  }

  RelativeAttention rel_attn{nullptr};
  FeedForward ff{nullptr};
};
TORCH_MODULE(Layer);

class ForSequenceClassification : public SequenceClassifier {
 public:
  ForSequenceClassification(const ModelConfig& c, int64_t num_labels)
      : d_model_(c.hidden_size), dropout_p_(c.hidden_dropout) {
    const int64_t d = c.hidden_size;
    auto transformer = add_group(*this, "transformer");
    word_embedding_ = transformer->register_module("word_embedding", torch::nn::Embedding(c.vocab_size, d));
    // The query stream's <mask> embedding: pre-training only, but part of HF's state_dict.
    mask_emb_ = transformer->register_parameter("mask_emb", torch::empty({1, 1, d}));
    layers_ = transformer->register_module("layer", torch::nn::ModuleList());
    for (int64_t i = 0; i < c.num_layers; ++i) layers_->push_back(Layer(c));
    dropout_ = transformer->register_module("dropout", torch::nn::Dropout(c.hidden_dropout));
    auto sequence_summary = add_group(*this, "sequence_summary");
    summary_ = sequence_summary->register_module("summary", layers::linear(d, d));
    summary_dropout_ = sequence_summary->register_module("last_dropout", torch::nn::Dropout(c.classifier_dropout));
    logits_proj_ = register_module("logits_proj", layers::linear(d, num_labels));

    layers::init_weights(*this, c.initializer_range);
    torch::NoGradGuard no_grad;
    mask_emb_.normal_(0.0, c.initializer_range);
    for (const auto& layer : *layers_) layer->as<Layer>()->rel_attn->init_weights(c.initializer_range);
  }

  torch::Tensor forward(const ModelInputs& in) override {
    const auto seq = in.input_ids.size(1);
    const auto dtype = word_embedding_->weight.scalar_type();
    auto h = dropout_(word_embedding_(in.input_ids));  // [B, S, d_model]

    // Encodings of the distances S .. 1-S, shared by all layers. HF expands them over the batch
    // before dropout, so each sequence gets its own dropout mask while training.
    auto positions = positional_encoding(relative_positions(seq, seq, h.device()), d_model_).to(dtype).unsqueeze(0);
    if (is_training() && dropout_p_ > 0) positions = positions.expand({h.size(0), -1, -1});
    positions = dropout_(positions);

    // Padding keys are masked (HF's non_tgt_mask: input_mask = 1 - attention_mask, except on the
    // diagonal, so a padding query still attends to itself), with HF's additive -1e30.
    torch::Tensor mask;
    if (in.attention_mask.defined()) {
      auto padding_key = in.attention_mask.lt(1).unsqueeze(1);  // [B, 1, S]
      auto index = torch::arange(seq, in.attention_mask.options().dtype(torch::kLong));
      auto off_diagonal = index.unsqueeze(1).ne(index.unsqueeze(0)).unsqueeze(0);  // [1, S, S]
      auto masked = torch::logical_and(padding_key, off_diagonal);             // [B, S, S]
      mask = masked.unsqueeze(1).to(dtype) * (dtype == torch::kHalf ? -65500.0 : -1e30);
    }
    // Segments are relative: only whether two tokens' token types differ matters.
    torch::Tensor other_segment;
    if (in.token_type_ids.defined()) {
      other_segment = in.token_type_ids.unsqueeze(2).ne(in.token_type_ids.unsqueeze(1)).unsqueeze(1);  // [B, 1, S, S]
    }

    for (const auto& layer : *layers_) h = layer->as<Layer>()->forward(h, positions, other_segment, mask);

    // Sequence summary on the last token: dropout -> summary -> tanh -> dropout -> logits_proj.
    // (HF drops out every position's output; only the last one is read.)
    auto last = dropout_(h.select(1, seq - 1));
    return logits_proj_(summary_dropout_(torch::tanh(summary_(last))));
  }

 private:
  int64_t d_model_;
  double dropout_p_;
  torch::nn::Embedding word_embedding_{nullptr};
  torch::Tensor mask_emb_;
  torch::nn::ModuleList layers_{nullptr};
  torch::nn::Dropout dropout_{nullptr}, summary_dropout_{nullptr};
  layers::Linear summary_{nullptr}, logits_proj_{nullptr};
};

}  // namespace

std::shared_ptr<SequenceClassifier> make_classifier(const ModelConfig& c, int64_t num_labels) {
  return std::make_shared<ForSequenceClassification>(c, num_labels);
}

}  // namespace tbench::xlnet
