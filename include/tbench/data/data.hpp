#pragma once
// Training data, from samples to device-ready batches:
//   sources (synthetic, pre-tokenized JSONL, CSV/TSV/JSONL text + a tokenizer; src/data/*)
//     -> TokenizedSamples (every sample's ids, truncated to seq_len, and its label)
//     -> plan_epoch: the seeded order of each epoch cut into steps and micro-batches (optionally
//        bucketed by length, sharded across data-parallel ranks)
//     -> collate: pad to seq_len or to the longest in the batch (left for XLNet); for masked-LM
//        tasks, then mask (apply_masking: dynamic, seeded per sample and epoch)
//     -> BatchLoader: collates on a background thread, a bounded number of batches ahead.
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include "tbench/models/classifier.hpp"
#include "tbench/spec/spec.hpp"
#include "tbench/tokenize/tokenizer.hpp"

namespace tbench {

struct Batch {
  ModelInputs inputs;
  torch::Tensor labels;  // [B] int64 class; masked LM: [B, S] int64, the original id where masked, else kIgnoreLabel
  int64_t samples = 0;
  int64_t tokens = 0;       // computed tokens: batch x padded length
  int64_t real_tokens = 0;  // tokens that are not padding
  std::vector<int64_t> lengths;  // each sample's real tokens, in row order
};

// Every sample of a dataset, tokens stored back to back (a few bytes per token, not a tensor per
// sample: IMDB-sized sets stay small and load from the cache in one read).
struct TokenizedSamples {
  std::vector<int32_t> ids;         // all samples' token ids, concatenated
  std::vector<int8_t> type_ids;     // same layout; empty when every token type is 0
  std::vector<int64_t> offsets{0};  // sample i is [offsets[i], offsets[i+1])
  std::vector<int64_t> labels;
  int64_t truncated = 0;            // samples cut to seq_len

  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  int64_t length(int64_t i) const { return offsets[static_cast<std::size_t>(i) + 1] - offsets[static_cast<std::size_t>(i)]; }
  double mean_length() const {
    return size() == 0 ? 0.0 : static_cast<double>(offsets.back() - offsets.front()) / static_cast<double>(size());
  }
  void add(const std::vector<int64_t>& sample_ids, const std::vector<int64_t>& sample_type_ids, int64_t label);
  // The samples at `indices`, in that order (used for the train/eval split).
  TokenizedSamples subset(const std::vector<int64_t>& indices) const;
};

// --- synthetic data -----------------------------------------------------------------------------

// How long synthetic samples are. fixed: every sample seq_len tokens. uniform/normal/lognormal:
// drawn per sample, rounded and clipped to [min_length, seq_len]. histogram: drawn from a measured
// length histogram (e.g. of the user's own data), read from a file of "length count" lines.
struct LengthDistribution {
  LengthDistributionKind kind = LengthDistributionKind::fixed;
  int64_t min_length = 2;
  double mean = 0;    // normal: mean length; lognormal: mean of the length (not of its log)
  double stddev = 0;  // normal, lognormal: standard deviation of the length
  std::map<int64_t, double> histogram;  // length -> weight
};
// Reads a histogram file: one "length count" (or "length,count") pair per line, '#' comments.
// Throws a bad-input Error naming the file and line.
std::map<int64_t, double> read_length_histogram(const std::string& path);
std::vector<int64_t> sample_lengths(const LengthDistribution& d, int64_t n, int64_t max_length, int64_t seed);

struct SyntheticOptions {
  int64_t num_samples = 0;
  int64_t seq_len = 0;
  int64_t vocab_size = 0;
  int64_t pad_token_id = 0;
  int64_t num_labels = 2;
  int64_t seed = 0;
  LengthDistribution lengths;
};

// Seeded random token ids (never the padding id), segment 0. The label is a function of the
// second token (id mod num_labels), so there is a signal to learn and the loss falls as it does
// in real fine-tuning.
TokenizedSamples make_synthetic_samples(const SyntheticOptions& options);

// --- plain-text corpora (masked LM, distillation) ---------------------------------------------------

// The .txt files of a corpus: `path` itself, or every *.txt under a folder (recursively), sorted
// by path so the packing is the same on every machine. Throws a bad-input Error naming the path.
std::vector<std::string> corpus_files(const std::string& path);

// HF's run_mlm without line_by_line: every non-blank line is encoded with the model's special
// tokens ([CLS] line [SEP]), all of them concatenated in file order and cut into blocks of exactly
// `block_size` tokens; the remainder (less than one block) is dropped. `max_blocks` > 0 stops there.
TokenizedSamples pack_corpus(const std::vector<std::string>& files, const Tokenizer& tokenizer, int64_t block_size,
                             int64_t max_blocks);

// HF's run_mlm with --line_by_line: every non-blank line is a sample of its own, encoded with the
// model's special tokens and truncated to `seq_len` (counted in `truncated`), in file order; the
// batches pad them (data.padding). `max_lines` > 0 stops there.
TokenizedSamples corpus_lines(const std::vector<std::string>& files, const Tokenizer& tokenizer, int64_t seq_len,
                              int64_t max_lines);

// --- masked-LM corruption ---------------------------------------------------------------------------

inline constexpr int64_t kIgnoreLabel = -100;  // labels of unmasked positions: no loss (HF's -100)

// HF's DataCollatorForLanguageModeling: each real, non-special token is picked with `probability`;
// a picked token becomes the mask token with mask_fraction, a random id in [0, vocab_size) with
// random_fraction, and stays itself otherwise; its label is its original id. The draws for a
// sample come from (seed, epoch, sample index) alone, so a sample's masks do not depend on the
// batch it lands in, the prefetch depth or the number of data-parallel ranks, and each epoch
// draws new ones (dynamic masking, as RoBERTa and HF do).
struct MaskingOptions {
  bool enabled = false;
  double probability = 0.15;
  double mask_fraction = 0.8;
  double random_fraction = 0.1;
  int64_t mask_token_id = 0;
  int64_t vocab_size = 0;
  std::vector<int64_t> special_ids;  // never picked: [CLS], [SEP], [PAD], <s>, </s>, ...
  int64_t seed = 0;
  // mlm.sparse_prediction: the batch also lists its masked positions (inputs.scored_positions),
  // found here on the host, so the device never waits to learn how many there are.
  bool list_scored_positions = false;

  bool never_masks(int64_t token) const {
    return std::find(special_ids.begin(), special_ids.end(), token) != special_ids.end();
  }
};

// Masks a collated batch in place: input_ids corrupted, labels replaced by [B, S] targets.
// `indices`: the batch's sample indices, row by row.
void apply_masking(Batch& batch, const std::vector<int64_t>& indices, const MaskingOptions& options, int64_t epoch);

// --- permutation-LM corruption (XLNet) ------------------------------------------------------------

// HF's DataCollatorForPermutationLanguageModeling. Along each row, spans of 1..max_span_length
// tokens (uniform) are drawn, each at a uniform place inside a context of
// floor(span / probability) tokens, context after context; their real, non-special tokens are the
// targets, replaced by the mask token, with their original ids as labels. A factorisation order
// permutes the first half of the positions and the second half alike (the length must be even);
// a target hides from every position that comes no later in that order, and the other real
// tokens come first, seeing no target. The batch then holds input_ids, labels, inputs.perm_mask,
// and target_mapping = the identity (every position predicted, non-targets labelled
// kIgnoreLabel), and, as HF's collator, no attention mask or token types. Draws are seeded per
// sample and epoch, as apply_masking's.
struct PermutationOptions {
  bool enabled = false;
  double probability = 1.0 / 6.0;
  int64_t max_span_length = 5;
  int64_t mask_token_id = 0;
  std::vector<int64_t> special_ids;  // never targets: <pad>, <cls>, <sep>, <mask>, ...
  int64_t seed = 0;

  bool never_masks(int64_t token) const {
    return std::find(special_ids.begin(), special_ids.end(), token) != special_ids.end();
  }
};

void apply_permutation_masking(Batch& batch, const std::vector<int64_t>& indices, const PermutationOptions& options,
                               int64_t epoch);

// --- batches ------------------------------------------------------------------------------------

struct CollateOptions {
  int64_t seq_len = 0;  // max_length padding pads to this
  Padding padding = Padding::max_length;
  int64_t pad_id = 0;
  int64_t pad_type_id = 0;  // XLNet: 3
  bool pad_left = false;    // XLNet pads on the left
  MaskingOptions masking;   // masked-LM tasks: applied after padding
  PermutationOptions permutation;  // task plm: applied after padding, which it rounds up to an even length
  // model.unpad: a padded batch also lists its real tokens' positions (inputs.token_positions), found
  // here on the host, so the device never waits to learn how many there are.
  bool list_token_positions = false;
};

// Whether any batch collated from `samples` can hold padding: max_length pads every sample
// shorter than seq_len, longest pads wherever lengths differ.
bool batches_can_pad(const TokenizedSamples& samples, const CollateOptions& options);

// The padded length of a batch whose longest sample is `longest`: seq_len with max_length padding,
// else `longest`, rounded up to even for permutation LM.
int64_t padded_width(const CollateOptions& options, int64_t longest);

// `epoch` seeds the masking (0 for evaluation: the same masks every epoch).
Batch collate(const TokenizedSamples& samples, const std::vector<int64_t>& indices, const CollateOptions& options,
              int64_t epoch = 0);

struct SamplerOptions {
  int64_t batch_size = 1;     // per micro-batch, per rank
  int64_t accum_steps = 1;    // micro-batches per optimizer step
  int world_size = 1;
  int rank = 0;
  bool bucket_by_length = false;
  bool drop_last = true;      // false: a last, smaller step takes the remainder
  int64_t seed = 0;
};

// One optimizer step of one rank: its micro-batches, each a list of sample indices.
using StepBatches = std::vector<std::vector<int64_t>>;

// An epoch's steps for this rank. Every rank draws the same seeded order, so a step's global
// batch is the same whatever the world size; rank r takes every world_size-th sample of it.
// Bucketed: HF's group_by_length order (LengthGroupedSampler): mega-batches of up to 50 steps,
// each sorted longest first, the longest sample moved to the first step so an out-of-memory shows
// at once.
std::vector<StepBatches> plan_epoch(const TokenizedSamples& samples, const SamplerOptions& options, int64_t epoch);
int64_t steps_per_epoch(int64_t num_samples, const SamplerOptions& options);

// One planned micro-batch as collate pads it: its samples, their real tokens, and its width.
struct PlannedMicroBatch {
  const std::vector<int64_t>& indices;
  const std::vector<int64_t>& lengths;
  int64_t width;
};
// Visits each non-empty micro-batch of `epoch`'s plan in the order the run trains on them, padded
// as `collate` pads: what the run's planned FLOPs and `tbench data` count without collating.
// Returns the epoch's optimizer steps.
int64_t for_each_planned_micro_batch(const TokenizedSamples& samples, const SamplerOptions& sampler,
                                     const CollateOptions& collate, int64_t epoch,
                                     const std::function<void(const PlannedMicroBatch&)>& visit);

// A permutation of [0, n) that depends only on (seed, epoch): runs are reproducible and each
// epoch sees a new order.
std::vector<int64_t> epoch_order(int64_t n, int64_t seed, int64_t epoch);

// Data parallelism: rank `rank` of `world_size` takes order[rank], order[rank + world_size], ...
std::vector<int64_t> shard_order(const std::vector<int64_t>& order, int rank, int world_size);

// Host-to-device moves of a batch's tensors. A tensor broadcast over the batch (an expanded view,
// stride 0 along dim 0, such as permutation LM's identity target_mapping) is copied as one slice
// and expanded again, not materialised B times.
torch::Tensor pinned(const torch::Tensor& t);  // in page-locked memory, for non_blocking copies
torch::Tensor moved_to(const torch::Tensor& t, const torch::Device& device, bool non_blocking);

// Collates the batches of an epoch on a background thread, at most `prefetch` ahead of the
// trainer, pinning them when the device is CUDA so the copy can be non-blocking. prefetch 0:
// collated on the caller's thread when asked for.
class BatchLoader {
 public:
  BatchLoader(const TokenizedSamples& samples, CollateOptions collate, int64_t prefetch, bool pin_memory);
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // Replaces whatever is queued with this epoch's micro-batches, in step order.
  void start_epoch(const std::vector<StepBatches>& steps, int64_t epoch = 0);
  // The next micro-batch; blocks until it is ready. Rethrows what the collating thread threw.
  Batch next();

 private:
  Batch make(const std::vector<int64_t>& indices, int64_t epoch) const;
  void work();

  const TokenizedSamples& samples_;
  const CollateOptions collate_;
  const std::size_t prefetch_;
  const bool pin_memory_;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::vector<int64_t>> pending_;  // micro-batches not yet collated
  std::deque<Batch> ready_;
  std::exception_ptr error_;
  uint64_t generation_ = 0;  // bumped by start_epoch: a batch collated for an older epoch is dropped
  int64_t epoch_ = 0;        // the epoch being loaded (seeds the masking)
  bool busy_ = false;        // the worker is collating a batch (next() must wait for it)
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace tbench
