// Dynamic masking for masked-LM training, as HF's DataCollatorForLanguageModeling draws it, but
// seeded per sample so that a run's masks are reproducible whatever its batching and world size.
#include "tbench/data/data.hpp"

namespace tbench {
namespace {

// SplitMix64: a well-mixed 64-bit stream from any seed (a bare counter would do: each value is
// mixed). Its own generator, not <random>'s distributions, whose output differs between libraries.
class SampleRandom {
 public:
  SampleRandom(int64_t seed, int64_t epoch, int64_t sample)
      : state_(mix(mix(mix(static_cast<uint64_t>(seed)) ^ static_cast<uint64_t>(epoch)) ^ static_cast<uint64_t>(sample))) {}

  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  int64_t below(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }

 private:
  static uint64_t mix(uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t next() { return mix(state_++); }

  uint64_t state_;
};

}  // namespace

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
