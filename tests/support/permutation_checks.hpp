#pragma once
// What any permutation-LM batch must satisfy, whoever drew it: tbench's collator
// (apply_permutation_masking) and HF's own (the parity fixture). Checking both against the same
// rules ties tbench's reading of HF's algorithm to HF's actual output.
#include <cstdint>
#include <vector>

#include <torch/torch.h>

namespace tbench::testing {

struct PermutationBatch {
  torch::Tensor original_ids;    // [B, S] before corruption
  torch::Tensor input_ids;       // [B, S] after: targets replaced by the mask token
  torch::Tensor labels;          // [B, S]: the original id at targets, -100 elsewhere
  torch::Tensor perm_mask;       // [B, S, S] float
  torch::Tensor target_mapping;  // [B, S, S] float
  int64_t mask_token_id = 0;
  std::vector<int64_t> functional_ids;  // padding and special tokens: never targets
};

// Adds a gtest failure for each rule a batch breaks:
//  - labels hold the original id exactly at the targets, which read the mask token, and no
//    functional token is a target; target_mapping is the identity;
//  - a key hides only if it is a target, and every target hides from itself;
//  - two targets never see each other both ways: the visibility among targets is one strict order;
//  - the order puts the first half before the second: a second-half target hides from every
//    first-half position, and a first-half target is seen by every second-half target; and it
//    orders the second half as the first (pairs p, q and p + S/2, q + S/2 see each other alike);
//  - a real non-target token sees no target.
void expect_valid_permutation_batch(const PermutationBatch& batch);

}  // namespace tbench::testing
