#include <cstring>
#include <stdexcept>
#include <string>

#include "tbench/data/data.hpp"

namespace tbench {

int64_t padded_width(const CollateOptions& o, int64_t longest) {
  const int64_t width = o.padding == Padding::max_length ? o.seq_len : longest;
  return o.permutation.enabled && width % 2 != 0 ? width + 1 : width;  // the permutation needs two equal halves
}

Batch collate(const TokenizedSamples& samples, const std::vector<int64_t>& indices, const CollateOptions& o,
              int64_t epoch) {
  int64_t longest = 0, real_tokens = 0;
  for (const int64_t i : indices) {
    longest = std::max(longest, samples.length(i));
    real_tokens += samples.length(i);
  }
  const int64_t rows = static_cast<int64_t>(indices.size());
  const int64_t width = padded_width(o, longest);
  // Samples are truncated to seq_len when read; a longer one here would be written past its row.
  if (longest > width) {
    throw std::length_error("collate: a sample of " + std::to_string(longest) + " tokens does not fit the padded length " +
                            std::to_string(width));
  }

  auto input_ids = torch::full({rows, width}, o.pad_id, torch::kLong);
  auto attention_mask = torch::zeros({rows, width}, torch::kLong);
  auto token_type_ids = torch::full({rows, width}, o.pad_type_id, torch::kLong);
  auto labels = torch::empty({rows}, torch::kLong);
  std::vector<int64_t> lengths;
  lengths.reserve(indices.size());
  int64_t* ids_out = input_ids.data_ptr<int64_t>();
  int64_t* mask_out = attention_mask.data_ptr<int64_t>();
  int64_t* types_out = token_type_ids.data_ptr<int64_t>();

  for (int64_t row = 0; row < rows; ++row) {
    const int64_t sample = indices[static_cast<std::size_t>(row)];
    const int64_t length = samples.length(sample);
    const auto begin = static_cast<std::size_t>(samples.offsets[static_cast<std::size_t>(sample)]);
    // XLNet reads its summary from the last position, so its padding goes on the left.
    const int64_t first = row * width + (o.pad_left ? width - length : 0);
    for (int64_t t = 0; t < length; ++t) {
      ids_out[first + t] = samples.ids[begin + static_cast<std::size_t>(t)];
      mask_out[first + t] = 1;
      types_out[first + t] = samples.type_ids.empty() ? 0 : samples.type_ids[begin + static_cast<std::size_t>(t)];
    }
    labels[row] = samples.labels[static_cast<std::size_t>(sample)];
    lengths.push_back(length);
  }

  Batch batch;
  batch.inputs = {input_ids, attention_mask, token_type_ids, /*has_padding=*/real_tokens < rows * width};
  batch.labels = labels;
  batch.samples = rows;
  batch.tokens = rows * width;
  batch.real_tokens = real_tokens;
  batch.lengths = std::move(lengths);
  if (o.list_token_positions && batch.inputs.has_padding) {
    batch.inputs.token_positions = attention_mask.reshape({-1}).nonzero().reshape({-1});
  }
  if (o.masking.enabled) apply_masking(batch, indices, o.masking, epoch);
  if (o.permutation.enabled) apply_permutation_masking(batch, indices, o.permutation, epoch);
  return batch;
}

bool batches_can_pad(const TokenizedSamples& samples, const CollateOptions& options) {
  if (samples.size() == 0) return false;
  int64_t shortest = samples.length(0), longest = samples.length(0);
  for (int64_t i = 1; i < samples.size(); ++i) {
    shortest = std::min(shortest, samples.length(i));
    longest = std::max(longest, samples.length(i));
  }
  return options.padding == Padding::max_length ? shortest < options.seq_len : shortest < longest;
}

}  // namespace tbench
