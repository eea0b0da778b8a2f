// XLNet (Yang et al., 2019), laid out as HF's XLNetForSequenceClassification and XLNetLMHeadModel
// so state_dict keys match:
//   transformer.word_embedding, transformer.mask_emb
//   transformer.layer.N.rel_attn.{q,k,v,o,r}            [d_model, n_head, d_head], no biases
//   transformer.layer.N.rel_attn.{r_r,r_s,r_w}_bias      [n_head, d_head]
//   transformer.layer.N.rel_attn.seg_embed               [2, n_head, d_head]
//   transformer.layer.N.rel_attn.layer_norm, transformer.layer.N.ff.{layer_1,layer_2,layer_norm}
//   classifier: sequence_summary.summary, logits_proj
//   permutation LM: lm_loss.bias; lm_loss.weight is transformer.word_embedding.weight (tied)
//
// Fine-tuning runs the content stream only: bidirectional attention over relative positions
// without clamping, and a head on the last token, which is <cls> because XLNet's tokenizer pads on
// the left. Pre-training (permutation LM) adds the query stream, which starts from mask_emb at
// each target and attends under the permutation mask. No memory (mems) in either. Tensors are
// batch-first here ([B, S, d_model], heads [B, n_head, S, d_head]); HF works in [S, B] but
// computes the same sums.
#include "tbench/models/xlnet.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

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

// [..., d_model] x W [d_model, n_head, d_head] -> [..., n_head * d_head] (HF: "ibh,hnd->ibnd").
torch::Tensor project(const torch::Tensor& x, const torch::Tensor& w) {
  return torch::matmul(x, w.view({w.size(0), w.size(1) * w.size(2)}));
}

// The same into heads: [B, L, d_model] -> [B, n_head, L, d_head].
torch::Tensor project_heads(const torch::Tensor& x, const torch::Tensor& w) {
  return layers::split_heads(project(x, w), w.size(1));
}

// x in `layout` projected into heads on the padded grid, [B, n_head, S, d_head], for attention.
torch::Tensor project_heads(const torch::Tensor& x, const layers::TokenLayout& layout, const torch::Tensor& w) {
  return layers::split_heads(layout.to_grid(project(x, w)), w.size(1));
}

// Relative multi-head attention (HF's XLNetRelativeAttention). For query i and key j, with R_{i-j}
// the sinusoid of their distance:
//   score_ij = [ (q_i + r_w_bias) . k_j                 content            (HF's ac)
//              + (q_i + r_r_bias) . (W_r R_{i-j})       position           (bd)
//              + (q_i + r_s_bias) . seg_embed[s_ij] ]   segment            (ef)
//              / sqrt(d_head) + mask_ij
// where s_ij is 0 if tokens i and j have the same token type and 1 if not. Keys and values always
// come from the content stream h. Pre-training adds a second stream of queries, g (two-stream
// attention): it attends with the same weights, under a mask that also hides each target from
// itself, so g_i can predict token i without seeing it.
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
    dropout_ = register_module("dropout", layers::Dropout(c.hidden_dropout));
  }

  // HF's _init_weights draws all of these from N(0, std).
  void init_weights(double std) {
    torch::NoGradGuard no_grad;
    for (auto* p : {&q_, &k_, &v_, &o_, &r_, &r_r_bias_, &r_s_bias_, &r_w_bias_, &seg_embed_}) p->normal_(0.0, std);
  }

  // The content stream alone (fine-tuning). h: [B, S, d_model], or in an unpadded `layout` the real
  // tokens' rows [1, T, d_model]; positions: the encodings of distances S .. 1-S, [B or 1, 2S,
  // d_model]; other_segment: [B, 1, S, S] bool, or undefined for no segment term; mask: [B, 1, S, S]
  // additive, or undefined. With `at`, the output at that position only ([B, 1, d_model]): one
  // query against every key.
  torch::Tensor forward(const torch::Tensor& h, const layers::TokenLayout& layout, const torch::Tensor& positions,
                        const torch::Tensor& other_segment, const torch::Tensor& mask,
                        std::optional<int64_t> at = std::nullopt) {
    if (layout.attends_by_sample()) return forward_by_sample(h, layout, positions, other_segment, at);
    const Keys keys = keys_of(h, layout, positions, at);
    const auto query_row = [&](const torch::Tensor& t) { return at && t.defined() ? t.narrow(2, *at, 1) : t; };
    const auto rows = layers::rows_at(h, layout, at);
    const auto queries = at ? project_heads(rows, q_) : project_heads(h, layout, q_);
    const auto heads = attend(queries, keys, query_row(other_segment), query_row(mask));
    return post_attention(rows, layers::context_rows(merge(heads), layout, at));
  }

  // Both streams (pre-training). g: [B, M, d_model], the query stream at the M targets;
  // target_mapping: [B, M, S], one-hot rows placing target m at its position; mask_g also hides
  // each position from itself. Returns the new h and g.
  std::pair<torch::Tensor, torch::Tensor> forward(const torch::Tensor& h, const torch::Tensor& g,
                                                  const torch::Tensor& positions, const torch::Tensor& other_segment,
                                                  const torch::Tensor& mask_h, const torch::Tensor& mask_g,
                                                  const torch::Tensor& target_mapping) {
    const Keys keys = keys_of(h, layers::TokenLayout{}, positions);
    auto out_h = post_attention(h, merge(attend(project_heads(h, q_), keys, other_segment, mask_h)));
    // g's queries move to their targets' positions, attend there, and the results move back.
    const auto mapping = target_mapping.unsqueeze(1);                                   // [B, 1, M, S]
    const auto q_g = torch::matmul(mapping.transpose(-1, -2), project_heads(g, q_));    // [B, H, S, D]
    const auto heads_g = torch::matmul(mapping, attend(q_g, keys, other_segment, mask_g));  // [B, H, M, D]
    return {out_h, post_attention(g, merge(heads_g))};
  }

 private:
  // On the grid; one sample's (attending by sample) has its L tokens for S and batch 1.
  struct Keys {
    torch::Tensor k, v;    // content keys and values [B, H, S, D]
    torch::Tensor k_r;     // the distances' keys [B or 1, H, 2S, D], or for one query row [B or 1, H, S, D]:
    bool one_row = false;  //   that row's distance to each key, in the keys' order (nothing to shift)
  };

  // Keys and values on the padded grid whatever h's layout; the distances' keys depend on positions only.
  Keys keys_of(const torch::Tensor& h, const layers::TokenLayout& layout, const torch::Tensor& positions,
               std::optional<int64_t> at = std::nullopt) {
    const auto encodings = encodings_read(positions, positions.size(1) / 2, at);
    return {project_heads(h, layout, k_), project_heads(h, layout, v_), project_heads(encodings, r_), at.has_value()};
  }

  // The encodings that queries read against `length` keys, from positions (distance d at index S - d
  // of S .. 1-S): distances length .. 1-length for all the queries, which the shift turns into each
  // row's own; or for one query at place p among the keys, its distance to each key in the keys'
  // order: query i's distance to key j is i - j, so that row reads `length` consecutive encodings
  // already in place, and only those are projected.
  static torch::Tensor encodings_read(const torch::Tensor& positions, int64_t length, std::optional<int64_t> query_place) {
    const auto span = encodings_span(positions.size(1) / 2, length, query_place);
    return positions.narrow(1, span.first, span.count);
  }

  // Where encodings_read's encodings sit in positions of 2 * seq: the first and how many.
  struct Span {
    int64_t first, count;
  };
  static Span encodings_span(int64_t seq, int64_t length, std::optional<int64_t> query_place) {
    return query_place ? Span{seq - *query_place, length} : Span{seq - length, 2 * length};
  }

  // model.unpad on the CPU: each sample attends over its own L real tokens (rows [1, T, d_model])
  // as a sequence of L tokens would. The distance between two of its tokens does not depend on
  // where its padding put them, so its scores are the grid's at the real tokens, against the
  // encodings of its own distances alone. Within a sample no key is hidden (the padding mask only
  // hides padding), so there is no mask. With `at`, each sample's one query there ([B, 1, d_model]).
  torch::Tensor forward_by_sample(const torch::Tensor& h, const layers::TokenLayout& layout,
                                  const torch::Tensor& positions, const torch::Tensor& other_segment,
                                  std::optional<int64_t> at) {
    // A sample is a sequence of its own only if no padding sits between its tokens: the loader pads
    // on one side. Refused rather than run on the grid, whose work the step's FLOPs would not count.
    TORCH_CHECK(!layout.sample_starts().empty(),
                "XLNet attends sample by sample only where each sample's real tokens are consecutive positions");
    const auto rows = layers::rows_at(h, layout, at);
    const auto queries = project(rows, q_), keys = project(h, k_), values = project(h, v_);  // one GEMM each
    const auto samples = static_cast<int64_t>(layout.sample_rows().size());
    std::vector<Span> spans;  // each sample's encodings in positions
    for (int64_t b = 0; b < samples; ++b) {
      const auto length = layout.sample_rows()[b].second;
      std::optional<int64_t> query_place;  // with `at`: its place among the sample's keys
      if (at) query_place = *at - layout.sample_starts()[b];
      spans.push_back(encodings_span(positions.size(1) / 2, length, query_place));
    }
    const SharedKeys shared = shared_distance_keys(positions, spans);
    std::vector<torch::Tensor> contexts;
    for (int64_t b = 0; b < samples; ++b) {
      const auto [first, length] = layout.sample_rows()[b];
      const int64_t start = layout.sample_starts()[b];  // the sample's first position in the grid
      const auto own = [&, first = first, length = length](const torch::Tensor& t) {
        return layers::split_heads(t.narrow(1, first, length), heads_);
      };
      const Span span = spans[b];
      const auto distance_keys =
          shared.keys.defined() ? shared.keys.narrow(2, span.first - shared.first, span.count)
                                : project_heads(positions.narrow(0, b, 1).narrow(1, span.first, span.count), r_);
      const Keys sample{own(keys), own(values), distance_keys, at.has_value()};
      const auto q = at ? layers::split_heads(queries.narrow(0, b, 1), heads_) : own(queries);
      torch::Tensor segment;  // the grid's, at the sample's queries and keys
      if (other_segment.defined()) {
        segment = other_segment.narrow(0, b, 1).narrow(2, at ? *at : start, at ? 1 : length).narrow(3, start, length);
      }
      contexts.push_back(merge(attend(q, sample, segment, /*mask=*/{})));
    }
    return post_attention(rows, torch::cat(contexts, at ? 0 : 1));  // [B, 1, d_model] or the rows [1, T, d_model]
  }

  // Without dropout the samples read one row of encodings (positions [1, 2S, d_model]): one GEMM
  // projects the window that all their spans cover (the longest sample's: the spans nest, centred
  // on distance 0, or for one query row ending, or starting, together as the padding side aligns the
  // samples), and each sample takes its span of it. With dropout each
  // sample drew its own encodings ([B, 2S, d_model]) and projects its span itself: keys undefined.
  struct SharedKeys {
    torch::Tensor keys;  // [1, H, window, D]
    int64_t first = 0;   // the window's first encoding in positions
  };
  SharedKeys shared_distance_keys(const torch::Tensor& positions, const std::vector<Span>& spans) {
    if (positions.size(0) != 1 || spans.empty()) return {};
    int64_t first = spans.front().first, end = first;
    for (const Span& s : spans) {
      first = std::min(first, s.first);
      end = std::max(end, s.first + s.count);
    }
    return {project_heads(positions.narrow(1, first, end - first), r_), first};
  }

  // HF's rel_attn_core: the per-head attention of queries q [B, H, S, D] (or one row, [B, H, 1, D])
  // over the keys, into [B, H, S, D] (or [B, H, 1, D]).
  torch::Tensor attend(const torch::Tensor& q, const Keys& keys, const torch::Tensor& other_segment,
                       const torch::Tensor& mask) {
    const auto seq = keys.k.size(2);
    const auto per_head = [&](const torch::Tensor& bias) { return bias.view({heads_, 1, head_dim_}); };
    auto ac = torch::matmul(q + per_head(r_w_bias_), keys.k.transpose(-1, -2));                        // [B, H, S, S]
    auto bd = torch::matmul(q + per_head(r_r_bias_), keys.k_r.transpose(-1, -2));  // [B, H, S, 2S] ([B, H, 1, S])
    if (!keys.one_row) bd = rel_shift(bd, seq);                                      // [B, H, S, S]
    auto scores = ac + bd;
    if (other_segment.defined()) {
      auto ef = torch::matmul(q + per_head(r_s_bias_), seg_embed_.permute({1, 2, 0}));  // [B, H, S, 2]
      scores = scores + torch::where(other_segment, ef.narrow(-1, 1, 1), ef.narrow(-1, 0, 1));
    }
    scores = scores * scale_;
    if (mask.defined()) scores = scores + mask;
    auto probs = layers::dropout(torch::softmax(scores, -1), dropout_p_, is_training());
    return torch::matmul(probs, keys.v);
  }

  // heads [B, H, L, D] -> context [B, L, H * D]
  static torch::Tensor merge(const torch::Tensor& heads) { return layers::merge_heads(heads); }

  // LayerNorm(residual + Dropout(W_o · context)), in the residual's layout.
  torch::Tensor post_attention(const torch::Tensor& residual, const torch::Tensor& context) {
    auto out = torch::matmul(context, o_.view({o_.size(0), heads_ * head_dim_}).t());  // HF: "ibnd,hnd->ibh"
    return layer_norm_(dropout_(out) + residual);
  }

  int64_t heads_, head_dim_;
  double dropout_p_, scale_;
  torch::Tensor q_, k_, v_, o_, r_, r_r_bias_, r_s_bias_, r_w_bias_, seg_embed_;
  torch::nn::LayerNorm layer_norm_{nullptr};
  layers::Dropout dropout_{nullptr};
};
TORCH_MODULE(RelativeAttention);

// y = LayerNorm(x + Dropout(W_2 · Dropout(act(W_1 · x))))
class FeedForwardImpl : public torch::nn::Module {
 public:
  explicit FeedForwardImpl(const ModelConfig& c) : activation_(c.activation) {
    layer_norm_ = register_module("layer_norm", layers::layer_norm(c.hidden_size, c.layer_norm_eps));
    layer_1_ = register_module("layer_1", layers::linear(c.hidden_size, c.intermediate_size));
    layer_2_ = register_module("layer_2", layers::linear(c.intermediate_size, c.hidden_size));
    dropout_ = register_module("dropout", layers::Dropout(c.hidden_dropout));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    auto y = dropout_(layer_2_(dropout_(layers::activation(activation_, layer_1_(x)))));
    return layer_norm_(y + x);
  }

 private:
  std::string activation_;
  torch::nn::LayerNorm layer_norm_{nullptr};
  layers::Linear layer_1_{nullptr}, layer_2_{nullptr};
  layers::Dropout dropout_{nullptr};
};
TORCH_MODULE(FeedForward);

// One block: relative attention, then the feed-forward network, applied to each stream.
class LayerImpl : public torch::nn::Module {
 public:
  explicit LayerImpl(const ModelConfig& c) {
    rel_attn = register_module("rel_attn", RelativeAttention(c));
    ff = register_module("ff", FeedForward(c));
  }

  RelativeAttention rel_attn{nullptr};
  FeedForward ff{nullptr};
};
TORCH_MODULE(Layer);

// HF's XLNetModel without memory ("bi" attention, no mems): the embedding, the blocks, and the
// masks. With inputs.target_mapping the query stream runs beside the content stream and is what
// comes out; without it, the content stream.
class TransformerImpl : public torch::nn::Module {
 public:
  explicit TransformerImpl(const ModelConfig& c) : d_model_(c.hidden_size), dropout_p_(c.hidden_dropout) {
    word_embedding = register_module("word_embedding", torch::nn::Embedding(c.vocab_size, c.hidden_size));
    // The query stream's starting point at every target: a learnt <mask> embedding.
    mask_emb_ = register_parameter("mask_emb", torch::empty({1, 1, c.hidden_size}));
    layers_ = register_module("layer", torch::nn::ModuleList());
    for (int64_t i = 0; i < c.num_layers; ++i) layers_->push_back(Layer(c));
    dropout = register_module("dropout", layers::Dropout(c.hidden_dropout));
  }

  void init_weights(double std) {
    torch::NoGradGuard no_grad;
    mask_emb_.normal_(0.0, std);
    for (const auto& layer : *layers_) layer->as<Layer>()->rel_attn->init_weights(std);
  }

  // The last block's output, [B, S, d_model] (content stream; in an unpadded `layout`, the real
  // tokens' rows [1, T, d_model]) or [B, M, d_model] (query stream), before the final dropout, which
  // callers apply where they read it. With `last_layer_at` (content stream only) the last block
  // computes that position alone: [B, 1, d_model].
  torch::Tensor forward(const ModelInputs& in, const layers::TokenLayout& layout = {},
                        std::optional<int64_t> last_layer_at = std::nullopt) {
    const auto seq = in.input_ids.size(1);
    const auto batch = in.input_ids.size(0);
    const auto dtype = word_embedding->weight.scalar_type();
    auto h = dropout(word_embedding(layout.to_rows(in.input_ids)));  // [B, S, d_model] or [1, T, d_model]
    torch::Tensor g;
    if (in.target_mapping.defined()) {
      g = dropout(mask_emb_.expand({batch, in.target_mapping.size(1), -1}));  // [B, M, d_model]
    }

    // Encodings of the distances S .. 1-S, shared by all layers. HF expands them over the batch
    // before dropout, so each sequence gets its own dropout mask while training.
    auto positions = positional_encoding(relative_positions(seq, seq, h.device()), d_model_).to(dtype).unsqueeze(0);
    if (is_training() && dropout_p_ > 0) positions = positions.expand({batch, -1, -1});
    positions = dropout(positions);

    // Segments are relative: only whether two tokens' token types differ matters.
    torch::Tensor other_segment;
    if (in.token_type_ids.defined()) {
      other_segment = in.token_type_ids.unsqueeze(2).ne(in.token_type_ids.unsqueeze(1)).unsqueeze(1);  // [B, 1, S, S]
    }

    // Attending by sample, no key within a sample is hidden: no masks to build.
    const auto hidden = layout.attends_by_sample() ? torch::Tensor() : hidden_keys(in, seq);
    torch::Tensor mask_h, mask_g;
    if (hidden.defined()) {  // [B, S, S] bool
      // HF's non_tgt_mask: the content stream always sees its own position.
      auto index = torch::arange(seq, torch::TensorOptions(torch::kLong).device(h.device()));
      auto off_diagonal = index.unsqueeze(1).ne(index.unsqueeze(0)).unsqueeze(0);  // [1, S, S]
      mask_h = additive(torch::logical_and(hidden, off_diagonal), dtype);
      mask_g = additive(hidden, dtype);
    }

    const auto count = layers_->size();
    for (std::size_t i = 0; i < count; ++i) {
      auto& layer = *layers_[i]->as<Layer>();
      if (g.defined()) {
        auto [new_h, new_g] = layer.rel_attn->forward(h, g, positions, other_segment, mask_h, mask_g, in.target_mapping);
        g = layer.ff(new_g);
        h = layer.ff(new_h);
      } else {
        const auto at = i + 1 == count ? last_layer_at : std::nullopt;
        h = layer.ff(layer.rel_attn->forward(h, layout, positions, other_segment, mask_h, at));
      }
    }
    return g.defined() ? g : h;
  }

  torch::nn::Embedding word_embedding{nullptr};
  layers::Dropout dropout{nullptr};

 private:
  // HF's data mask: key j is hidden from query i when j is padding (attention_mask 0) or when
  // the permutation puts j at or after i (perm_mask 1). Undefined: nothing is hidden.
  static torch::Tensor hidden_keys(const ModelInputs& in, int64_t seq) {
    torch::Tensor hidden;
    if (in.attention_mask.defined()) hidden = in.attention_mask.lt(1).unsqueeze(1).expand({-1, seq, -1});
    if (in.perm_mask.defined()) {
      const auto permuted = in.perm_mask.gt(0);
      hidden = hidden.defined() ? torch::logical_or(hidden, permuted) : permuted;
    }
    return hidden;
  }

  // HF adds -1e30 where a key is hidden (-65500 in fp16).
  static torch::Tensor additive(const torch::Tensor& hidden, torch::ScalarType dtype) {
    return hidden.unsqueeze(1).to(dtype) * (dtype == torch::kHalf ? -65500.0 : -1e30);
  }

  int64_t d_model_;
  double dropout_p_;
  torch::Tensor mask_emb_;
  torch::nn::ModuleList layers_{nullptr};
};
TORCH_MODULE(Transformer);

class ForSequenceClassification : public SequenceClassifier {
 public:
  ForSequenceClassification(const ModelConfig& c, int64_t num_labels)
      : sparse_last_layer_(c.sparse_last_layer), unpad_(c.unpad), unpad_by_sample_(c.unpad_attention_by_sample) {
    const int64_t d = c.hidden_size;
    transformer_ = register_module("transformer", Transformer(c));
    auto sequence_summary = add_group(*this, "sequence_summary");
    summary_ = sequence_summary->register_module("summary", layers::linear(d, d));
    summary_dropout_ = sequence_summary->register_module("last_dropout", layers::Dropout(c.classifier_dropout));
    logits_proj_ = register_module("logits_proj", layers::linear(d, num_labels));

    layers::init_weights(*this, c.initializer_range);
    transformer_->init_weights(c.initializer_range);
  }

  torch::Tensor forward(const ModelInputs& in) override {
    // The head reads the last token (<cls>) alone, so a sparse last layer computes only that position.
    const auto last_token = in.input_ids.size(1) - 1;
    const auto layout = layers::TokenLayout::of(in, unpad_, unpad_by_sample_);
    const auto h =
        transformer_->forward(in, layout, sparse_last_layer_ ? std::optional<int64_t>(last_token) : std::nullopt);
    // Sequence summary on the last token: dropout -> summary -> tanh -> dropout -> logits_proj.
    // (HF drops out every position's output; only the last one is read.)
    auto last = transformer_->dropout(layers::head_position(h, layout, last_token, sparse_last_layer_));
    return logits_proj_(summary_dropout_(torch::tanh(summary_(last))));
  }

 private:
  bool sparse_last_layer_, unpad_, unpad_by_sample_;
  Transformer transformer_{nullptr};
  layers::Dropout summary_dropout_{nullptr};
  layers::Linear summary_{nullptr}, logits_proj_{nullptr};
};

// HF's XLNetLMHeadModel: the query stream's output at each target, scored against the word
// embeddings (lm_loss.weight is tied to them) plus lm_loss.bias. inputs.scored_positions, if
// given, picks the [B * M] rows to score, as the masked-LM heads do.
class LMHeadModel : public MaskedLanguageModel {
 public:
  explicit LMHeadModel(const ModelConfig& c) {
    transformer_ = register_module("transformer", Transformer(c));
    lm_bias_ = add_group(*this, "lm_loss")->register_parameter("bias", torch::zeros({c.vocab_size}));
    layers::init_weights(*this, c.initializer_range);
    transformer_->init_weights(c.initializer_range);
  }

  MaskedLmOutputs forward(const ModelInputs& in) override {
    auto hidden = transformer_->dropout(transformer_->forward(in));
    const auto rows = in.scored_positions.defined()
                          ? hidden.reshape({-1, hidden.size(-1)}).index_select(0, in.scored_positions)
                          : hidden;
    return {torch::linear(rows, transformer_->word_embedding->weight, lm_bias_), hidden};
  }

 private:
  Transformer transformer_{nullptr};
  torch::Tensor lm_bias_;
};

}  // namespace

std::shared_ptr<SequenceClassifier> make_classifier(const ModelConfig& c, int64_t num_labels) {
  return std::make_shared<ForSequenceClassification>(c, num_labels);
}

std::shared_ptr<MaskedLanguageModel> make_permutation_lm(const ModelConfig& c) { return std::make_shared<LMHeadModel>(c); }

}  // namespace tbench::xlnet
