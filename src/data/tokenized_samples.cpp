#include "tbench/data/data.hpp"

#include <limits>

namespace tbench {

void TokenizedSamples::add(const std::vector<int64_t>& sample_ids, const std::vector<int64_t>& sample_type_ids,
                           int64_t label) {
  const bool has_types = std::any_of(sample_type_ids.begin(), sample_type_ids.end(), [](int64_t t) { return t != 0; });
  // Token types are stored only once some sample has a non-zero one; earlier samples get zeros.
  if (has_types && type_ids.size() < ids.size()) type_ids.resize(ids.size(), 0);
  for (const int64_t id : sample_ids) ids.push_back(static_cast<int32_t>(id));
  if (!type_ids.empty() || has_types) {
    if (sample_type_ids.empty()) {
      type_ids.resize(ids.size(), 0);
    } else {
      // Types are below the model's type_vocab_size, which parse_model_config keeps to kMaxTokenTypes.
      static_assert(kMaxTokenTypes - 1 <= std::numeric_limits<int8_t>::max(), "a token type must fit type_ids");
      for (const int64_t t : sample_type_ids) type_ids.push_back(static_cast<int8_t>(t));
    }
  }
  offsets.push_back(static_cast<int64_t>(ids.size()));
  labels.push_back(label);
}

TokenizedSamples TokenizedSamples::subset(const std::vector<int64_t>& indices) const {
  TokenizedSamples out;
  for (const int64_t i : indices) {
    const auto begin = static_cast<std::size_t>(offsets[static_cast<std::size_t>(i)]);
    const auto end = static_cast<std::size_t>(offsets[static_cast<std::size_t>(i) + 1]);
    out.ids.insert(out.ids.end(), ids.begin() + static_cast<std::ptrdiff_t>(begin), ids.begin() + static_cast<std::ptrdiff_t>(end));
    if (!type_ids.empty()) {
      out.type_ids.insert(out.type_ids.end(), type_ids.begin() + static_cast<std::ptrdiff_t>(begin),
                          type_ids.begin() + static_cast<std::ptrdiff_t>(end));
    }
    out.offsets.push_back(static_cast<int64_t>(out.ids.size()));
    out.labels.push_back(labels[static_cast<std::size_t>(i)]);
  }
  return out;
}

}  // namespace tbench
