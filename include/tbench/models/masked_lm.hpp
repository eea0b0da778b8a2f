#pragma once
// The masked-LM interface: token ids in, a score for every vocabulary entry at every position out,
// with parameter names that match HF's *ForMaskedLM state_dict keys, so pre-training checkpoints
// load and saved weights load back into HF. Every head here scores against the word-embedding
// table (HF ties the decoder's weight to it): that table is one parameter, trained and saved once,
// under the embeddings' name, as HF's safetensors files keep it.
#include <memory>

#include <torch/torch.h>

#include "tbench/models/classifier.hpp"

namespace tbench {

struct MaskedLmOutputs {
  torch::Tensor logits;  // [B, S, vocab_size], every position (as HF computes them); XLNet: [B, M, V]
  torch::Tensor hidden;  // [B, S, H]: the last layer's hidden states, before the head (XLNet: [B, M, H])
};

class MaskedLanguageModel : public torch::nn::Module {
 public:
  virtual MaskedLmOutputs forward(const ModelInputs& inputs) = 0;
};

// Builds the *ForMaskedLM model for `config` with HF's random initialisation (seed torch first).
// BERT, DistilBERT and RoBERTa; XLNet pre-trains with permutation LM, not MLM (the spec refuses it).
std::shared_ptr<MaskedLanguageModel> build_masked_lm(const ModelConfig& config);

// XLNet's XLNetLMHeadModel, which scores tokens the same way: given inputs.perm_mask and
// inputs.target_mapping ([B, M, S]), logits [B, M, V] for the M targets (the query stream's),
// against the tied word embeddings. Only XLNet (task plm).
std::shared_ptr<MaskedLanguageModel> build_permutation_lm(const ModelConfig& config);

}  // namespace tbench
