#include "tbench/models/model_cost.hpp"

#include <algorithm>

namespace tbench {
namespace {

int64_t linear_params(int64_t in, int64_t out) { return in * out + out; }
int64_t layer_norm_params(int64_t h) { return 2 * h; }

// One BERT-style block: Q, K, V, O projections, two LayerNorms, the two FFN matmuls.
int64_t encoder_layer_params(const ModelConfig& c) {
  const int64_t h = c.hidden_size, f = c.intermediate_size;
  return 4 * linear_params(h, h) + linear_params(h, f) + linear_params(f, h) + 2 * layer_norm_params(h);
}

// One XLNet block: q, k, v, o, r [d_model, n_head, d_head] without biases, the r_w, r_r and r_s
// biases [n_head, d_head], seg_embed [2, n_head, d_head], two LayerNorms and the FFN.
int64_t xlnet_layer_params(const ModelConfig& c) {
  const int64_t h = c.hidden_size, f = c.intermediate_size, heads = c.num_heads * c.head_dim();
  return 5 * h * heads + 3 * heads + 2 * heads + linear_params(h, f) + linear_params(f, h) + 2 * layer_norm_params(h);
}

// Forward FLOPs of a block's work token by token, for one token (a multiply-add counts 2): the
// projections and the MLP, or with `keys_only` (a sparse last layer's other tokens) its key and
// value alone.
double layer_flops_per_token(const ModelConfig& c, bool keys_only) {
  const double h = static_cast<double>(c.hidden_size), f = static_cast<double>(c.intermediate_size);
  const double heads = static_cast<double>(c.num_heads * c.head_dim());  // = h: the config check asks h % heads == 0
  const double keys_and_values = 2.0 * 2 * h * heads;
  return keys_only ? keys_and_values : keys_and_values + 2.0 * 2 * h * heads + 2.0 * 2 * h * f;  // + Q, O; MLP
}

// Forward FLOPs of a block's work over the sequence as a whole, for one sequence of s tokens, with
// its output at all s or (`one_row`, a sparse last layer) one: attention's q x s scores and their
// weighted sum of the values. XLNet adds the r projection of the 2s relative distances' encodings,
// the position scores against them (before the shift keeps s) and the segment scores against 2
// segments; one row reads s encodings.
double attention_flops(const ModelConfig& c, int64_t s, bool one_row) {
  const double heads = static_cast<double>(c.num_heads * c.head_dim());  // = hidden_size
  const double q = one_row ? 1.0 : static_cast<double>(s), keys = static_cast<double>(s);
  const double scores_and_sum = 2.0 * q * keys * heads + 2.0 * q * keys * heads;  // QK^T (HF's ac), PV
  if (c.arch != Architecture::xlnet) return scores_and_sum;
  const double encodings = one_row ? keys : 2.0 * keys;
  return scores_and_sum + 2.0 * static_cast<double>(c.hidden_size) * heads * encodings  // r
         + 2.0 * q * encodings * heads                                                  // position scores (bd)
         + 2.0 * q * 2 * heads;                                                         // segment scores (ef)
}

// Forward FLOPs of one block for one sequence of s tokens, with its output at all of them or (a
// sparse last layer) at one: keys and values at all s, the rest at the output's positions, and
// attention.
double layer_flops(const ModelConfig& c, int64_t s, bool one_row) {
  const double keys_and_values = layer_flops_per_token(c, /*keys_only=*/true);
  const double the_rest = layer_flops_per_token(c, /*keys_only=*/false) - keys_and_values;  // Q, O, MLP
  return keys_and_values * static_cast<double>(s) + the_rest * (one_row ? 1.0 : static_cast<double>(s)) +
         attention_flops(c, s, one_row);
}

// Permutation LM's query stream, m targets over s positions, in each block: its q and o
// projections and FFN at the targets, the two target-mapping matmuls, and its own scores over all
// s positions against the content stream's keys (k, v and r are the content stream's, counted there).
double xlnet_query_stream_flops(const ModelConfig& c, int64_t s, int64_t m) {
  const double h = static_cast<double>(c.hidden_size), f = static_cast<double>(c.intermediate_size);
  const double heads = static_cast<double>(c.num_heads * c.head_dim());
  const double projections = 2.0 * 2 * h * heads * m;  // q, o
  const double mapping = 2.0 * 2 * m * s * heads;       // targets to positions and back
  const double ffn = 2.0 * 2 * h * f * m;
  const double attention = 2.0 * s * s * heads + 2.0 * s * (2 * s) * heads + 2.0 * s * 2 * heads + 2.0 * s * s * heads;
  return projections + mapping + ffn + attention;
}

// HF's masked-LM heads: transform dense + LayerNorm + a bias per token (the decoder's weight is the
// tied word embeddings, counted once there).
int64_t masked_lm_head_params(const ModelConfig& c) {
  return linear_params(c.hidden_size, c.hidden_size) + layer_norm_params(c.hidden_size) + c.vocab_size;
}

// Every position: the transform (H x H) and the projection onto the vocabulary (H x V).
double masked_lm_head_flops(const ModelConfig& c, int64_t s) {
  const double h = static_cast<double>(c.hidden_size), v = static_cast<double>(c.vocab_size);
  return static_cast<double>(s) * (2.0 * h * h + 2.0 * h * v);
}

// The padding tokens of samples of `lengths` real tokens padded to `width`.
double padding_tokens(int64_t width, const std::vector<int64_t>& lengths) {
  double padding = 0;
  for (const int64_t length : lengths) padding += static_cast<double>(width - length);
  return padding;
}

}  // namespace

ModelCost model_cost(const ModelConfig& c, int64_t num_labels, int64_t seq_len, Task task) {
  const int64_t h = c.hidden_size;
  const int64_t embeddings = c.vocab_size * h + c.max_position_embeddings * h + c.type_vocab_size * h +
                             layer_norm_params(h);
  const int64_t encoder = c.num_layers * encoder_layer_params(c);
  ModelCost cost;
  double head_flops = 0;
  // A classifier's sparse last layer computes its output at the one position the head reads.
  const bool one_row = c.sparse_last_layer && task == Task::classification;
  double full_layer_flops = layer_flops(c, seq_len, /*one_row=*/false);
  double last_layer_flops = layer_flops(c, seq_len, one_row);
  switch (c.arch) {
    case Architecture::bert:
      cost.base_params = embeddings + encoder + linear_params(h, h);  // + pooler
      cost.classifier_params = cost.base_params + linear_params(h, num_labels);
      head_flops = 2.0 * h * h + 2.0 * h * num_labels;
      break;
    case Architecture::roberta:
      // HF's roberta-base checkpoint has a pooler; the classifier drops it for a two-layer head.
      cost.base_params = embeddings + encoder + linear_params(h, h);
      cost.classifier_params = embeddings + encoder + linear_params(h, h) + linear_params(h, num_labels);
      head_flops = 2.0 * h * h + 2.0 * h * num_labels;
      break;
    case Architecture::distilbert:
      cost.base_params = embeddings + encoder;
      cost.classifier_params = cost.base_params + linear_params(h, h) + linear_params(h, num_labels);
      head_flops = 2.0 * h * h + 2.0 * h * num_labels;
      break;
    case Architecture::xlnet:
      // word_embedding + mask_emb + the blocks; no position or token-type tables, no pooler.
      cost.base_params = c.vocab_size * h + h + c.num_layers * xlnet_layer_params(c);
      // + sequence_summary.summary and logits_proj
      cost.classifier_params = cost.base_params + linear_params(h, h) + linear_params(h, num_labels);
      head_flops = 2.0 * h * h + 2.0 * h * num_labels;
      break;
  }
  if (task == Task::plm) {
    // XLNetLMHeadModel, every position a target (HF's collator): the query stream beside the
    // content stream, then lm_loss (weight tied to the word embedding, so only its bias is new).
    cost.classifier_params = cost.base_params + c.vocab_size;
    full_layer_flops += xlnet_query_stream_flops(c, seq_len, seq_len);
    last_layer_flops = full_layer_flops;
    head_flops = 2.0 * static_cast<double>(seq_len) * static_cast<double>(h) * static_cast<double>(c.vocab_size);
  } else if (task != Task::classification) {
    // *ForMaskedLM: the base without a pooler, then the masked-LM head on every position.
    const bool has_pooler = c.arch == Architecture::bert || c.arch == Architecture::roberta;
    const int64_t base = cost.base_params - (has_pooler ? linear_params(h, h) : 0);
    cost.classifier_params = base + masked_lm_head_params(c);
    head_flops = masked_lm_head_flops(c, seq_len);
  }
  double flops = head_flops;
  for (int64_t i = 0; i + 1 < c.num_layers; ++i) flops += full_layer_flops;
  if (c.num_layers > 0) flops += last_layer_flops;
  cost.forward_flops_per_sample = flops;
  cost.train_flops_per_sample = 3.0 * flops;  // backward costs about twice the forward
  return cost;
}

double run_train_flops_per_sample(const ModelConfig& model, const ModelConfig* teacher, int64_t num_labels,
                                  int64_t seq_len, Task task) {
  double flops = model_cost(model, num_labels, seq_len, task).train_flops_per_sample;
  if (teacher) flops += model_cost(*teacher, num_labels, seq_len, Task::mlm).forward_flops_per_sample;
  return flops;
}

double masked_lm_head_train_flops_per_position(const ModelConfig& model, const ModelConfig* teacher) {
  return 3.0 * masked_lm_head_flops(model, 1) + (teacher ? masked_lm_head_flops(*teacher, 1) : 0.0);
}

double attention_by_sample_train_flops_saved(const ModelConfig& model, int64_t seq_len,
                                             const std::vector<int64_t>& lengths) {
  if (!model.unpad_attention_by_sample || model.num_layers == 0) return 0.0;
  const bool sparse = model.sparse_last_layer;
  const double full_layers = static_cast<double>(model.num_layers - (sparse ? 1 : 0));
  double saved = 0;  // forward: each sample's attention over its own length instead of seq_len
  for (const int64_t length : lengths) {
    saved += full_layers * (attention_flops(model, seq_len, false) - attention_flops(model, length, false));
    if (sparse) saved += attention_flops(model, seq_len, true) - attention_flops(model, length, true);
  }
  return 3.0 * saved;
}

double shared_encodings_train_flops_saved(const ModelConfig& model, int64_t width, const std::vector<int64_t>& lengths,
                                          bool by_sample) {
  const bool drawn_per_sample = model.dropout_in_training && model.hidden_dropout > 0;
  if (model.arch != Architecture::xlnet || drawn_per_sample || lengths.size() < 2 || model.num_layers == 0) {
    return 0.0;
  }
  const double h = static_cast<double>(model.hidden_size), heads = static_cast<double>(model.num_heads * model.head_dim());
  const bool one_row = model.sparse_last_layer;  // a classifier's last layer reads `length` encodings
  const auto encodings = [&](int64_t length) {  // what one sample of `length` tokens reads, over the layers
    const double l = static_cast<double>(length);
    return static_cast<double>(model.num_layers - (one_row ? 1 : 0)) * 2.0 * l + (one_row ? l : 0.0);
  };
  // On the grid each sample reads `width`'s; by sample, its own, and the batch projects the longest's.
  double per_sample = 0;
  for (const int64_t length : lengths) per_sample += encodings(by_sample ? length : width);
  const int64_t longest = by_sample ? *std::max_element(lengths.begin(), lengths.end()) : width;
  return 3.0 * 2.0 * h * heads * (per_sample - encodings(longest));
}

double batch_train_flops_saved(const ModelConfig& model, int64_t width, const std::vector<int64_t>& lengths,
                               const TaskWork& task) {
  const bool padded = std::any_of(lengths.begin(), lengths.end(), [&](int64_t l) { return l < width; });
  const bool by_sample = model.unpad && model.unpad_attention_by_sample && padded;  // else the grid
  return run_unpad_train_flops_saved(model, task, width, lengths) +
         shared_encodings_train_flops_saved(model, width, lengths, by_sample);
}

double run_unpad_train_flops_saved(const ModelConfig& model, const TaskWork& task, int64_t width,
                                   const std::vector<int64_t>& lengths) {
  if (!model.unpad) return 0.0;
  double saved = unpad_train_flops_saved(model, width, lengths);
  const bool masked_lm = task.task == Task::mlm || task.task == Task::distillation;
  if (masked_lm && !task.sparse_prediction) {  // the teacher's head too
    saved += padding_tokens(width, lengths) * masked_lm_head_train_flops_per_position(model, task.teacher);
  }
  // The teacher runs forward only: a third of its training figure.
  if (task.teacher) saved += unpad_train_flops_saved(*task.teacher, width, lengths) / 3.0;
  return saved;
}

double unpad_train_flops_saved(const ModelConfig& model, int64_t width, const std::vector<int64_t>& lengths) {
  if (!model.unpad) return 0.0;
  return padding_tokens(width, lengths) * per_token_train_flops(model) +
         attention_by_sample_train_flops_saved(model, width, lengths);
}

double per_token_train_flops(const ModelConfig& model) {
  if (model.num_layers == 0) return 0.0;
  const double others = static_cast<double>(model.num_layers - 1) * layer_flops_per_token(model, false);
  return 3.0 * (others + layer_flops_per_token(model, /*keys_only=*/model.sparse_last_layer));
}

}  // namespace tbench
