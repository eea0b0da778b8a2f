#pragma once
// The interface every architecture implements: token ids in, class logits out, with parameter
// names that match HF's *ForSequenceClassification state_dict keys.
#include <memory>

#include <torch/torch.h>

#include "tbench/models/model_config.hpp"

namespace tbench {

struct ModelInputs {
  torch::Tensor input_ids;       // [B, S] int64
  torch::Tensor attention_mask;  // [B, S] int64, 1 = real token, 0 = padding
  torch::Tensor token_type_ids;  // [B, S] int64 (segment ids; ignored by DistilBERT, compared pairwise by XLNet)
  // Whether any position may be padding, as the host knows it from collation (reading the mask
  // would wait for the device). false lets the attention run without a mask.
  bool has_padding = true;
  // Masked LM with mlm.sparse_prediction: the flat positions (row * S + column) whose vocabulary
  // scores the loss reads, the masked ones; the head scores only these, in this order, and returns
  // [N, vocab_size]. Undefined: every position, [B, S, vocab_size], as HF does.
  torch::Tensor scored_positions{};
  // model.unpad: the flat positions (row * S + column) of the batch's real tokens, in order, [T]
  // int64, listed by the loader on the host; undefined where it did not (the model then finds
  // them from attention_mask). See layers::TokenLayout.
  torch::Tensor token_positions{};
  // XLNet's permutation LM (task plm), as HF's DataCollatorForPermutationLanguageModeling makes
  // them: perm_mask [B, S, S], non-zero (1, or true) where query i may not see key j under the
  // sampled factorisation order; target_mapping [B, M, S] float, row m one-hot at the m-th
  // target's position (may be one [M, S] expanded over the batch). Undefined for other tasks.
  torch::Tensor perm_mask{};
  torch::Tensor target_mapping{};
};

class SequenceClassifier : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(const ModelInputs& inputs) = 0;  // logits [B, num_labels]
};

// Builds the classifier for `config` with HF's random initialisation (seed torch first).
std::shared_ptr<SequenceClassifier> build_classifier(const ModelConfig& config, int64_t num_labels);

int64_t count_parameters(const torch::nn::Module& module);

}  // namespace tbench
