#pragma once
// A model's hyper-parameters, read from an HF-format config.json and normalised across
// architectures (BERT's hidden_size is DistilBERT's dim and XLNet's d_model).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tbench {

enum class Architecture { bert, distilbert, roberta, xlnet };
const char* to_string(Architecture a);

// How BERT, DistilBERT and RoBERTa compute self-attention: explicit matmul + softmax, or
// at::scaled_dot_product_attention (fused kernels, torch >= 2.0). XLNet's is always explicit.
enum class AttentionKernel { eager, sdpa };
const char* to_string(AttentionKernel k);

// The most token types a model may have: samples store a type in one byte (int8).
inline constexpr int64_t kMaxTokenTypes = 128;

struct ModelConfig {
  std::string name;     // "bert-base-cased", or the config file's stem
  std::string source;   // "<shipped>" or the config file's path, for error messages
  Architecture arch = Architecture::bert;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t intermediate_size = 0;
  int64_t max_position_embeddings = 0;  // 0: no learned absolute positions (XLNet)
  int64_t type_vocab_size = 0;          // 0: no token-type embeddings (DistilBERT)
  int64_t pad_token_id = 0;
  double layer_norm_eps = 1e-12;
  double hidden_dropout = 0.1;
  double attention_dropout = 0.1;
  double classifier_dropout = 0.1;  // dropout before the classification head
  double initializer_range = 0.02;
  std::string activation = "gelu";
  bool sinusoidal_positions = false;  // DistilBERT's sinusoidal_pos_embds
  // Not in config.json: how the spec asks the layers to run (model.attention, .padding_mask, .fused_qkv,
  // .fused_layer_norm, .sparse_last_layer, .unpad).
  AttentionKernel attention = AttentionKernel::eager;
  bool mask_every_batch = false;  // pass the padding mask even to batches without padding
  bool fused_qkv = false;         // one GEMM over [W_q; W_k; W_v] instead of three
  bool fused_layer_norm = false;  // LayerNorm(residual + Dropout(x)) in one pass
  // A classifier's last layer computes its output only at the position its head reads (the first
  // token; XLNet's last): keys and values still come from every position, so the logits, loss and
  // gradients are those of the full layer, whose other outputs nothing reads.
  bool sparse_last_layer = false;
  // The per-token work (and a masked-LM head) runs on the real tokens alone, attention on the padded
  // grid or by sample (layers::TokenLayout): the logits, loss and gradients of the padded model,
  // without the padding's work. Classifiers, masked LMs and a distillation teacher.
  bool unpad = false;
  // Unpadded, attention runs sample by sample over each sample's own tokens (on the CPU, where a
  // small GEMM costs no kernel launch) rather than on the padded grid.
  bool unpad_attention_by_sample = false;
  // The run trains with dropout (train.dropout; false trains in eval mode). XLNet then draws each
  // sample's own dropout on the distances' encodings, so it projects them once per sample; without
  // it, once for the batch (ModelCost: shared_encodings_train_flops_saved).
  bool dropout_in_training = true;
  nlohmann::json raw;                 // the config.json as read

  int64_t head_dim() const { return hidden_size / num_heads; }
  // The longest sequence it takes: its learned positions (RoBERTa's start after the padding id, so
  // it has pad + 1 fewer); 0 for none (XLNet's relative positions take any length).
  int64_t usable_positions() const {
    if (max_position_embeddings == 0) return 0;
    return max_position_embeddings - (arch == Architecture::roberta ? pad_token_id + 1 : 0);
  }
};

// Parses an HF config.json text; errors name `source` and the offending key.
ModelConfig parse_model_config(const std::string& text, const std::string& name, const std::string& source);
ModelConfig read_model_config(const std::string& path);

// A model's name from its config path: "x/bert-tiny.json" -> "bert-tiny", and in HF's layout
// "checkpoints/my-bert/config.json" -> "my-bert".
std::string model_name_from_config_path(const std::string& path);

// The configs shipped in models/ (compiled into the binary), by name.
std::vector<std::string> shipped_model_names();
ModelConfig shipped_model_config(const std::string& name);  // throws with a did-you-mean

}  // namespace tbench
