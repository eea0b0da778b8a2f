#include "support/permutation_checks.hpp"

#include <algorithm>

#include <gtest/gtest.h>

namespace tbench::testing {

void expect_valid_permutation_batch(const PermutationBatch& b) {
  const int64_t rows = b.input_ids.size(0), width = b.input_ids.size(1), half = width / 2;
  ASSERT_EQ(width % 2, 0);
  ASSERT_EQ(b.perm_mask.sizes(), torch::IntArrayRef({rows, width, width}));
  EXPECT_TRUE(torch::equal(b.target_mapping.contiguous(), torch::eye(width).expand({rows, width, width})))
      << "every position is predicted, in place";
  const auto original = b.original_ids.contiguous(), ids = b.input_ids.contiguous(), labels = b.labels.contiguous();
  const auto hides = b.perm_mask.to(torch::kFloat).contiguous();  // HF's is float, tbench's bool
  const auto functional = [&](int64_t token) {
    return std::find(b.functional_ids.begin(), b.functional_ids.end(), token) != b.functional_ids.end();
  };
  for (int64_t r = 0; r < rows; ++r) {
    SCOPED_TRACE("row " + std::to_string(r));
    std::vector<bool> target(static_cast<std::size_t>(width)), ordered(static_cast<std::size_t>(width));
    for (int64_t p = 0; p < width; ++p) {
      const int64_t before = original[r][p].item<int64_t>();
      const bool is_target = labels[r][p].item<int64_t>() != -100;
      target[static_cast<std::size_t>(p)] = is_target;
      ordered[static_cast<std::size_t>(p)] = is_target || functional(before);  // has its place in the order
      if (is_target) {
        EXPECT_FALSE(functional(before)) << "position " << p << ": a special or padding token is a target";
        EXPECT_EQ(labels[r][p].item<int64_t>(), before) << "position " << p;
        EXPECT_EQ(ids[r][p].item<int64_t>(), b.mask_token_id) << "position " << p;
      } else {
        EXPECT_EQ(ids[r][p].item<int64_t>(), before) << "position " << p;
      }
    }
    const auto hidden = [&](int64_t q, int64_t k) { return hides[r][q][k].item<float>() != 0.0f; };
    for (int64_t q = 0; q < width; ++q) {
      for (int64_t k = 0; k < width; ++k) {
        const auto value = hides[r][q][k].item<float>();
        EXPECT_TRUE(value == 0.0f || value == 1.0f) << q << "," << k;
        const bool tq = target[static_cast<std::size_t>(q)], tk = target[static_cast<std::size_t>(k)];
        if (!tk) {
          EXPECT_FALSE(hidden(q, k)) << "only targets hide: " << q << " -> " << k;
          continue;
        }
        if (q == k) {
          EXPECT_TRUE(hidden(q, k)) << "target " << k << " sees itself";
        }
        if (tq && q != k) {
          EXPECT_NE(hidden(q, k), hidden(k, q)) << "targets " << q << ", " << k << " are not ordered";
        }
        if (!ordered[static_cast<std::size_t>(q)]) {
          EXPECT_TRUE(hidden(q, k)) << "real token " << q << " sees target " << k;
        }
        if (q < half && k >= half) {
          EXPECT_TRUE(hidden(q, k)) << q << " sees a later half's target " << k;
        }
        if (tq && q >= half && k < half) {
          EXPECT_FALSE(hidden(q, k)) << q << " does not see the first half's target " << k;
        }
        if (q < half && k < half && ordered[static_cast<std::size_t>(q)] && ordered[static_cast<std::size_t>(q + half)] &&
            target[static_cast<std::size_t>(k + half)]) {
          EXPECT_EQ(hidden(q, k), hidden(q + half, k + half)) << "the halves are ordered differently at " << q << ", " << k;
        }
      }
    }
  }
}

}  // namespace tbench::testing

