// XLNet's permutation-LM targets and factorisation order, as HF's
// DataCollatorForPermutationLanguageModeling draws them, seeded per sample (see data.hpp).
#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "sample_random.hpp"
#include "tbench/data/data.hpp"

namespace tbench {
namespace {

// Spans of 1..max_span_length targets, one at a random place in each context of
// floor(span / probability) tokens, from the row's start to its end.
std::vector<bool> draw_target_spans(SampleRandom& random, int64_t width, const PermutationOptions& o) {
  std::vector<bool> target(static_cast<std::size_t>(width), false);
  for (int64_t done = 0; done < width;) {
    const int64_t span = 1 + random.below(o.max_span_length);
    // Python's int(): the floor, whole even past the row's end, so the start is drawn over the
    // same range as HF's (a short row's spans start in it no more often); bounded only so that a
    // tiny probability cannot overflow.
    const auto context = static_cast<int64_t>(std::min(static_cast<double>(span) / o.probability, 1e15));
    const int64_t start = done + random.below(context - span + 1);
    for (int64_t t = start; t < std::min(start + span, width); ++t) target[static_cast<std::size_t>(t)] = true;
    done += context;
  }
  return target;
}

// The factorisation order: a random permutation of the first half's positions, and the same one
// shifted by half for the second half, so neither half's order crosses into the other.
std::vector<int64_t> draw_order(SampleRandom& random, int64_t width) {
  const int64_t half = width / 2;
  std::vector<int64_t> first(static_cast<std::size_t>(half));
  std::iota(first.begin(), first.end(), 0);
  for (int64_t i = half - 1; i > 0; --i) std::swap(first[static_cast<std::size_t>(i)], first[static_cast<std::size_t>(random.below(i + 1))]);
  std::vector<int64_t> order(static_cast<std::size_t>(width));
  for (int64_t p = 0; p < half; ++p) {
    order[static_cast<std::size_t>(p)] = first[static_cast<std::size_t>(p)];
    order[static_cast<std::size_t>(p + half)] = first[static_cast<std::size_t>(p)] + half;
  }
  return order;
}

}  // namespace

void apply_permutation_masking(Batch& batch, const std::vector<int64_t>& indices, const PermutationOptions& o,
                               int64_t epoch) {
  auto& ids = batch.inputs.input_ids;
  const int64_t rows = ids.size(0), width = ids.size(1);
  if (width % 2 != 0) throw std::logic_error("permutation LM: an odd padded length " + std::to_string(width));
  auto labels = torch::full({rows, width}, kIgnoreLabel, torch::kLong);
  // Bool, not HF's float: the model reads perm_mask > 0, and a quarter of the bytes travel to the device.
  auto perm_mask = torch::zeros({rows, width, width}, torch::kBool);
  int64_t* id = ids.data_ptr<int64_t>();
  const int64_t* real = batch.inputs.attention_mask.data_ptr<int64_t>();
  int64_t* label = labels.data_ptr<int64_t>();
  bool* hidden = perm_mask.data_ptr<bool>();
  for (int64_t row = 0; row < rows; ++row) {
    SampleRandom random(o.seed, epoch, indices[static_cast<std::size_t>(row)]);
    const std::vector<bool> span = draw_target_spans(random, width, o);
    std::vector<int64_t> order = draw_order(random, width);
    std::vector<bool> target(static_cast<std::size_t>(width), false);
    for (int64_t p = 0; p < width; ++p) {
      const int64_t t = row * width + p;
      const bool functional = real[t] == 0 || o.never_masks(id[t]);  // padding, <cls>, <sep>, ...
      const bool is_target = span[static_cast<std::size_t>(p)] && !functional;
      target[static_cast<std::size_t>(p)] = is_target;
      if (is_target) {
        label[t] = id[t];
        id[t] = o.mask_token_id;
      } else if (!functional) {
        order[static_cast<std::size_t>(p)] = -1;  // first in the order: seen by all, sees no target
      }
    }
    // Query i may not see key j when j is a target that comes no earlier in the order than i.
    bool* row_mask = hidden + row * width * width;
    for (int64_t i = 0; i < width; ++i) {
      for (int64_t j = 0; j < width; ++j) {
        const bool hides = target[static_cast<std::size_t>(j)] &&
                           order[static_cast<std::size_t>(i)] <= order[static_cast<std::size_t>(j)];
        row_mask[i * width + j] = hides;
      }
    }
  }
  batch.labels = labels;
  batch.inputs.perm_mask = perm_mask;
  // One identity for the whole batch (an expanded view): it travels to the device once.
  batch.inputs.target_mapping = torch::eye(width, torch::kFloat).expand({rows, width, width});
  // HF's collator hands the model no attention mask and no token types: padding stays visible.
  batch.inputs.attention_mask = torch::Tensor();
  batch.inputs.token_type_ids = torch::Tensor();
}

}  // namespace tbench
