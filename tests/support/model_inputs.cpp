#include "support/model_inputs.hpp"

namespace tbench::testing {

ModelInputs random_inputs(const ModelConfig& c, int64_t batch, int64_t seq) {
  torch::manual_seed(3);
  ModelInputs in;
  in.input_ids = torch::randint(c.pad_token_id + 1, c.vocab_size, {batch, seq}, torch::kLong);
  in.attention_mask = torch::ones({batch, seq}, torch::kLong);
  in.token_type_ids = torch::zeros({batch, seq}, torch::kLong);
  return in;
}

ModelInputs padded_inputs(const ModelConfig& c, const std::vector<int64_t>& real) {
  const auto rows = static_cast<int64_t>(real.size());
  ModelInputs in = random_inputs(c, rows, 12);
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t length = real[static_cast<std::size_t>(row)];
    const int64_t pad = 12 - length;
    const int64_t start = c.arch == Architecture::xlnet ? 0 : length;  // XLNet pads on the left
    in.input_ids[row].narrow(0, start, pad).fill_(c.pad_token_id);
    in.attention_mask[row].narrow(0, start, pad).fill_(0);
    in.token_type_ids[row].narrow(0, 6, 6).fill_(c.type_vocab_size > 1 || c.arch == Architecture::xlnet ? 1 : 0);
  }
  in.has_padding = true;
  return in;
}

}  // namespace tbench::testing
