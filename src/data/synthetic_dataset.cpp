#include <ATen/CPUGeneratorImpl.h>

#include "tbench/data.hpp"

namespace tbench {

SyntheticDataset::SyntheticDataset(const SyntheticOptions& o) {
  auto generator = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(o.seed));
  input_ids_ = torch::randint(0, o.vocab_size, {o.num_samples, o.seq_len}, generator, torch::kLong);
  // Keep the padding id out of real text: it changes RoBERTa's position ids and masks nothing.
  input_ids_.masked_fill_(input_ids_.eq(o.pad_token_id), (o.pad_token_id + 1) % o.vocab_size);
  labels_ = input_ids_.select(1, 1).remainder(o.num_labels).contiguous();
}

Batch SyntheticDataset::collate(const std::vector<int64_t>& indices) const {
  auto index = torch::tensor(indices, torch::kLong);
  Batch batch;
  batch.inputs.input_ids = input_ids_.index_select(0, index);
  batch.inputs.attention_mask = torch::ones_like(batch.inputs.input_ids);
  batch.inputs.token_type_ids = torch::zeros_like(batch.inputs.input_ids);
  batch.labels = labels_.index_select(0, index);
  batch.samples = static_cast<int64_t>(indices.size());
  batch.tokens = batch.inputs.input_ids.numel();
  batch.real_tokens = batch.tokens;
  return batch;
}

std::vector<int64_t> epoch_order(int64_t n, int64_t seed, int64_t epoch) {
  auto generator = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(seed) * 1000003ULL +
                                                             static_cast<uint64_t>(epoch));
  auto perm = torch::randperm(n, generator, torch::kLong);
  return std::vector<int64_t>(perm.data_ptr<int64_t>(), perm.data_ptr<int64_t>() + n);
}

std::vector<int64_t> shard_order(const std::vector<int64_t>& order, int rank, int world_size) {
  std::vector<int64_t> shard;
  shard.reserve(order.size() / static_cast<std::size_t>(world_size) + 1);
  for (std::size_t i = static_cast<std::size_t>(rank); i < order.size(); i += static_cast<std::size_t>(world_size)) {
    shard.push_back(order[i]);
  }
  return shard;
}

}  // namespace tbench
