// Dynamic masking for masked-LM training, as HF's DataCollatorForLanguageModeling draws it, but
// seeded per sample so that a run's masks are reproducible whatever its batching and world size.
#include "sample_random.hpp"
#include "tbench/data/data.hpp"

namespace tbench {
void apply_masking(Batch& batch, const std::vector<int64_t>& indices, const MaskingOptions& o, int64_t epoch) {
  auto& ids = batch.inputs.input_ids;
  const int64_t rows = ids.size(0), width = ids.size(1);
  auto labels = torch::full({rows, width}, kIgnoreLabel, torch::kLong);
  int64_t* id = ids.data_ptr<int64_t>();
  const int64_t* real = batch.inputs.attention_mask.data_ptr<int64_t>();
  int64_t* label = labels.data_ptr<int64_t>();
  std::vector<int64_t> picked;  // flat positions, row by row
  for (int64_t row = 0; row < rows; ++row) {
    SampleRandom random(o.seed, epoch, indices[static_cast<std::size_t>(row)]);
    for (int64_t t = row * width; t < (row + 1) * width; ++t) {
      // Three draws per position, taken whether or not they are used, so that a token's fate
      // depends only on its sample and its place in it.
      const double pick = random.uniform(), how = random.uniform();
      const int64_t replacement = random.below(o.vocab_size);
      if (real[t] == 0 || o.never_masks(id[t]) || pick >= o.probability) continue;
      label[t] = id[t];
      picked.push_back(t);
      if (how < o.mask_fraction) {
        id[t] = o.mask_token_id;
      } else if (how < o.mask_fraction + o.random_fraction) {
        id[t] = replacement;
      }
    }
  }
  batch.labels = labels;
  if (o.list_scored_positions) {
    batch.inputs.scored_positions = torch::tensor(picked, torch::kLong);
  }
}

}  // namespace tbench
