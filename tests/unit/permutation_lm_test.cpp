// XLNet's permutation LM: the collator (HF's algorithm, seeded per sample), XLNetLMHeadModel's
// parameters, tied head and checkpoint keys, and its cost. HF parity is in parity_test.cpp.
#include <gtest/gtest.h>

#include <numeric>

#include "support/cli.hpp"
#include "support/permutation_checks.hpp"
#include "tbench/data/data.hpp"
#include "tbench/models/masked_lm.hpp"
#include "tbench/models/model_config.hpp"
#include "tbench/models/model_cost.hpp"
#include "tbench/models/safetensors.hpp"
#include "tbench/train/objective.hpp"

namespace tbench {
namespace {

constexpr int64_t kPad = 5, kSep = 4, kCls = 3, kMask = 6;

// XLNet-style samples: tokens, then <sep> <cls>, of lengths 20..35 (left-padded when collated).
TokenizedSamples xlnet_samples(int64_t count) {
  TokenizedSamples s;
  for (int64_t i = 0; i < count; ++i) {
    std::vector<int64_t> ids;
    const int64_t length = 20 + i % 16;
    for (int64_t t = 0; t < length - 2; ++t) ids.push_back(10 + (i * 7 + t * 13) % 900);
    ids.push_back(kSep);
    ids.push_back(kCls);
    s.add(ids, {}, 0);
  }
  return s;
}

CollateOptions permutation_collate(int64_t seq_len, Padding padding) {
  CollateOptions o;
  o.seq_len = seq_len;
  o.padding = padding;
  o.pad_id = kPad;
  o.pad_left = true;
  o.permutation.enabled = true;
  o.permutation.mask_token_id = kMask;
  o.permutation.special_ids = {kCls, kSep, kPad, kMask};
  o.permutation.seed = 3;
  return o;
}

testing::PermutationBatch checked(const TokenizedSamples& samples, const std::vector<int64_t>& indices,
                                  const CollateOptions& o, int64_t epoch) {
  CollateOptions plain = o;
  plain.permutation.enabled = false;
  const Batch before = collate(samples, indices, plain, epoch);
  const Batch after = collate(samples, indices, o, epoch);
  // An odd longest length gets one more padding column (on the left, as XLNet pads).
  auto original = before.inputs.input_ids;
  const int64_t extra = after.inputs.input_ids.size(1) - original.size(1);
  if (extra > 0) original = torch::cat({torch::full({original.size(0), extra}, kPad, torch::kLong), original}, 1);
  testing::PermutationBatch b{original, after.inputs.input_ids, after.labels, after.inputs.perm_mask,
                              after.inputs.target_mapping, kMask, o.permutation.special_ids};
  EXPECT_FALSE(after.inputs.attention_mask.defined()) << "HF's collator passes no attention mask";
  EXPECT_FALSE(after.inputs.token_type_ids.defined()) << "nor token types";
  return b;
}

// About one token in six that may be a target is one, as with HF's collator (plm_probability 1/6).
void expect_a_sixth_are_targets(int64_t targets, int64_t eligible) {
  const double share = static_cast<double>(targets) / static_cast<double>(eligible);
  EXPECT_GT(share, 0.12) << targets << " of " << eligible;
  EXPECT_LT(share, 0.21) << targets << " of " << eligible;
}

// HF's rules hold in every batch, and about one real token in six is a target (a span of mean 3
// in a context of six times its length).
TEST(PermutationMasking, FollowsHfsRulesWithASixthOfTheTokensAsTargets) {
  const TokenizedSamples samples = xlnet_samples(96);
  const CollateOptions o = permutation_collate(36, Padding::max_length);
  int64_t targets = 0, eligible = 0;
  for (int64_t epoch = 1; epoch <= 2; ++epoch) {
    for (int64_t first = 0; first < samples.size(); first += 8) {
      std::vector<int64_t> indices(8);
      std::iota(indices.begin(), indices.end(), first);
      const auto b = checked(samples, indices, o, epoch);
      testing::expect_valid_permutation_batch(b);
      targets += b.labels.ne(kIgnoreLabel).sum().item<int64_t>();
      const auto ids = b.original_ids;
      eligible += (ids.ne(kPad) & ids.ne(kSep) & ids.ne(kCls)).sum().item<int64_t>();
    }
  }
  expect_a_sixth_are_targets(targets, eligible);
}

// A short row takes as many targets as HF's collator gives it: a span's context is floor(span / 1/6)
// even where it runs past the row's end, so a span starts in an 8-wide row less often than in a
// context cut to the row (which made 29% of its positions targets, against HF's 16%).
TEST(PermutationMasking, ShortRowsTakeHfsShareOfTargets) {
  TokenizedSamples samples;
  for (int64_t i = 0; i < 512; ++i) {
    std::vector<int64_t> ids;
    for (int64_t t = 0; t < 6; ++t) ids.push_back(10 + (i * 7 + t * 13) % 900);
    ids.push_back(kSep);
    ids.push_back(kCls);
    samples.add(ids, {}, 0);
  }
  const CollateOptions o = permutation_collate(36, Padding::longest);  // rows of 8
  int64_t targets = 0, eligible = 0;
  for (int64_t epoch = 1; epoch <= 2; ++epoch) {
    for (int64_t first = 0; first < samples.size(); first += 16) {
      std::vector<int64_t> indices(16);
      std::iota(indices.begin(), indices.end(), first);
      const auto b = checked(samples, indices, o, epoch);
      ASSERT_EQ(b.input_ids.size(1), 8);
      targets += b.labels.ne(kIgnoreLabel).sum().item<int64_t>();
      eligible += 16 * 6;
    }
  }
  expect_a_sixth_are_targets(targets, eligible);
}

// Dynamic padding to an odd longest length adds one more padding column: the halves need it.
TEST(PermutationMasking, PadsAnOddLongestLengthToEven) {
  const TokenizedSamples samples = xlnet_samples(16);
  const auto b = checked(samples, {1, 3}, permutation_collate(36, Padding::longest), 1);  // lengths 21 and 23
  EXPECT_EQ(b.input_ids.size(1), 24);
  EXPECT_EQ(b.input_ids[1][0].item<int64_t>(), kPad);
  testing::expect_valid_permutation_batch(b);
}

// As masked LM: a sample's targets and order depend on its index and the epoch, not its batch.
TEST(PermutationMasking, DrawsDependOnTheSampleAndEpochNotTheBatch) {
  const TokenizedSamples samples = xlnet_samples(16);
  const CollateOptions o = permutation_collate(36, Padding::max_length);
  const Batch alone = collate(samples, {5}, o, 2);
  const Batch among = collate(samples, {9, 5, 1}, o, 2);
  EXPECT_TRUE(torch::equal(alone.labels[0], among.labels[1]));
  EXPECT_TRUE(torch::equal(alone.inputs.perm_mask[0], among.inputs.perm_mask[1]));
  const Batch next_epoch = collate(samples, {5}, o, 3);
  EXPECT_FALSE(torch::equal(alone.inputs.perm_mask, next_epoch.inputs.perm_mask));
}

// The identity target_mapping is one matrix expanded over the batch, and stays one when moved.
TEST(PermutationMasking, TheTargetMappingTravelsOnce) {
  const TokenizedSamples samples = xlnet_samples(8);
  const Batch b = collate(samples, {0, 1, 2, 3}, permutation_collate(36, Padding::max_length), 1);
  EXPECT_EQ(b.inputs.target_mapping.stride(0), 0);
  EXPECT_EQ(b.inputs.perm_mask.scalar_type(), torch::kBool);
  const auto moved = moved_to(b.inputs.target_mapping, torch::kCPU, false);
  EXPECT_EQ(moved.stride(0), 0);
  EXPECT_TRUE(torch::equal(moved, torch::eye(36).expand({4, 36, 36})));
  EXPECT_TRUE(torch::equal(moved_to(b.labels, torch::kCPU, false), b.labels));
}

ModelConfig tiny_xlnet() { return shipped_model_config("tiny-xlnet"); }

// XLNetLMHeadModel's names: the transformer's and lm_loss.bias; lm_loss.weight is the word
// embedding (tied, one parameter), so checkpoints hold it once, as HF's do.
TEST(PermutationLmHead, ParametersAreHfsWithTheHeadTiedToTheEmbedding) {
  torch::manual_seed(0);
  auto model = build_permutation_lm(tiny_xlnet());
  const auto params = model->named_parameters();
  EXPECT_TRUE(params.contains("transformer.word_embedding.weight"));
  EXPECT_TRUE(params.contains("transformer.mask_emb"));
  EXPECT_TRUE(params.contains("lm_loss.bias"));
  EXPECT_FALSE(params.contains("lm_loss.weight"));
  EXPECT_FALSE(params.contains("sequence_summary.summary.weight"));
  const ModelCost cost = model_cost(tiny_xlnet(), 2, 32, Task::plm);
  EXPECT_EQ(count_parameters(*model), cost.classifier_params);
  EXPECT_EQ(cost.classifier_params, cost.base_params + 1000);

  // Scores at the targets move the embedding through the head and the query stream's start.
  ModelInputs in;
  in.input_ids = torch::randint(10, 1000, {2, 8}, torch::kLong);
  in.perm_mask = torch::zeros({2, 8, 8});
  in.perm_mask.index_put_({torch::indexing::Slice(), torch::indexing::Slice(), 3}, 1.0);  // position 3 is a target
  in.target_mapping = torch::eye(8).expand({2, 8, 8});
  const auto out = model->forward(in);
  EXPECT_EQ(out.logits.sizes(), torch::IntArrayRef({2, 8, 1000}));
  out.logits.select(1, 3).logsumexp(-1).sum().backward();
  EXPECT_GT(params["transformer.mask_emb"].grad().norm().item<double>(), 0);
  EXPECT_GT(params["transformer.word_embedding.weight"].grad().norm().item<double>(), 0);
}

TEST(PermutationLmHead, CheckpointRoundTripsUnderHfsKeys) {
  testing::ScratchDir dir;
  torch::manual_seed(1);
  auto saved = build_permutation_lm(tiny_xlnet());
  const std::string path = dir.file("model.safetensors");
  save_hf_weights(*saved, path);
  torch::manual_seed(2);
  auto loaded = build_permutation_lm(tiny_xlnet());
  const auto report = load_hf_weights(*loaded, path);
  EXPECT_TRUE(report.initialised.empty());
  EXPECT_TRUE(report.unexpected.empty());
  for (const auto& p : saved->named_parameters()) {
    EXPECT_TRUE(torch::equal(p.value(), loaded->named_parameters()[p.key()])) << p.key();
  }
}

// Each target adds a query stream position in every block and a head projection: the same model
// costs more as a permutation LM than as a classifier, by the query stream and the head.
TEST(PermutationLmCost, QueryStreamAndHeadOnEveryPosition) {
  const ModelConfig c = tiny_xlnet();
  const int64_t s = 32;
  const double plm = model_cost(c, 2, s, Task::plm).forward_flops_per_sample;
  const double classifier = model_cost(c, 2, s, Task::classification).forward_flops_per_sample;
  const double h = 32, f = 64, heads = 32, v = 1000;
  const double query_stream = 2.0 * 2 * h * heads * s + 2.0 * 2 * s * s * heads + 2.0 * 2 * h * f * s +
                              2.0 * s * s * heads + 2.0 * s * 2 * s * heads + 2.0 * s * 2 * heads + 2.0 * s * s * heads;
  const double classifier_head = 2.0 * h * h + 2.0 * h * 2;
  EXPECT_DOUBLE_EQ(plm - classifier, c.num_layers * query_stream + 2.0 * s * h * v - classifier_head);
}

}  // namespace
}  // namespace tbench
