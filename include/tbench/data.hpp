#pragma once
// Training data: datasets that hand out collated batches, and the seeded per-epoch sample order.
#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "tbench/models/classifier.hpp"

namespace tbench {

struct Batch {
  ModelInputs inputs;
  torch::Tensor labels;  // [B] int64
  int64_t samples = 0;
  int64_t tokens = 0;       // computed tokens: batch x padded length
  int64_t real_tokens = 0;  // tokens that are not padding
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  virtual Batch collate(const std::vector<int64_t>& indices) const = 0;
};

struct SyntheticOptions {
  int64_t num_samples = 0;
  int64_t seq_len = 0;
  int64_t vocab_size = 0;
  int64_t pad_token_id = 0;
  int64_t num_labels = 2;
  int64_t seed = 0;
};

// Seeded random token ids (never the padding id) at a fixed length, all attended, segment 0.
// The label is a function of the second token (id mod num_labels), so there is a signal to
// learn and the loss falls as it does in real fine-tuning.
class SyntheticDataset : public Dataset {
 public:
  explicit SyntheticDataset(const SyntheticOptions& options);
  int64_t size() const override { return input_ids_.size(0); }
  Batch collate(const std::vector<int64_t>& indices) const override;

 private:
  torch::Tensor input_ids_;  // [N, S]
  torch::Tensor labels_;     // [N]
};

// A permutation of [0, n) that depends only on (seed, epoch): runs are reproducible and each
// epoch sees a new order.
std::vector<int64_t> epoch_order(int64_t n, int64_t seed, int64_t epoch);

// Data parallelism: rank `rank` of `world_size` takes order[rank], order[rank + world_size], ...
std::vector<int64_t> shard_order(const std::vector<int64_t>& order, int rank, int world_size);

}  // namespace tbench
