#include "tbench/model_cost.hpp"

namespace tbench {
namespace {

int64_t linear_params(int64_t in, int64_t out) { return in * out + out; }
int64_t layer_norm_params(int64_t h) { return 2 * h; }

// One BERT-style block: Q, K, V, O projections, two LayerNorms, the two FFN matmuls.
int64_t encoder_layer_params(const ModelConfig& c) {
  const int64_t h = c.hidden_size, f = c.intermediate_size;
  return 4 * linear_params(h, h) + linear_params(h, f) + linear_params(f, h) + 2 * layer_norm_params(h);
}

// Forward FLOPs of one block for one sequence of s tokens (a multiply-add counts 2).
double encoder_layer_flops(const ModelConfig& c, int64_t s) {
  const double h = static_cast<double>(c.hidden_size), f = static_cast<double>(c.intermediate_size);
  const double projections = 2.0 * 4 * h * h * s;  // Q, K, V, O
  const double ffn = 2.0 * 2 * h * f * s;
  const double attention = 2.0 * 2 * s * s * h;    // QK^T and PV over all heads
  return projections + ffn + attention;
}

}  // namespace

ModelCost model_cost(const ModelConfig& c, int64_t num_labels, int64_t seq_len) {
  const int64_t h = c.hidden_size;
  const int64_t embeddings = c.vocab_size * h + c.max_position_embeddings * h + c.type_vocab_size * h +
                             layer_norm_params(h);
  const int64_t encoder = c.num_layers * encoder_layer_params(c);
  ModelCost cost;
  double head_flops = 0;
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
      break;  // not built yet
  }
  double flops = head_flops;
  for (int64_t i = 0; i < c.num_layers; ++i) flops += encoder_layer_flops(c, seq_len);
  cost.forward_flops_per_sample = flops;
  cost.train_flops_per_sample = 3.0 * flops;  // backward costs about twice the forward
  return cost;
}

}  // namespace tbench
