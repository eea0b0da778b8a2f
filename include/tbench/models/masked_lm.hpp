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
  // [B, S, vocab_size], every position (as HF computes them); with inputs.scored_positions
  // (mlm.sparse_prediction) [N, vocab_size] at those; unpadded, [1, T, vocab_size] at the real
  // tokens, `positions`' order. XLNet: [B, M, V].
  torch::Tensor logits;
  // The last layer's hidden states, before the head: [B, S, H], or unpadded the real tokens' rows
  // [1, T, H] (XLNet: [B, M, H]).
  torch::Tensor hidden;
  // model.unpad: the flat grid positions (b * S + s) of the rows of `hidden` (and of dense
  // `logits`), [T]; undefined where they are the grid.
  torch::Tensor positions{};
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
