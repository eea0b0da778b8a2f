#pragma once
// Inputs for the model tests, made the same way wherever a test needs them.
#include <cstdint>
#include <vector>

#include "tbench/models/classifier.hpp"

namespace tbench::testing {

// `batch` samples of `seq` random ids (seeded), every token real and of segment 0.
ModelInputs random_inputs(const ModelConfig& c, int64_t batch, int64_t seq);

// Three samples of 12, 9 and 5 real tokens (or `real`'s, at most 12), padded to 12 on the right
// (XLNet: on the left, as its tokenizer pads), with their last six positions in a second segment
// where the model has one.
ModelInputs padded_inputs(const ModelConfig& c, const std::vector<int64_t>& real = {12, 9, 5});

}  // namespace tbench::testing
