#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>

#include "tbench/data/data.hpp"

namespace tbench {
namespace {

int64_t samples_per_step(const SamplerOptions& o) { return o.batch_size * o.accum_steps * o.world_size; }

// Cuts `order` into global steps; with drop_last the partial remainder is left out.
std::vector<std::vector<int64_t>> cut_steps(const std::vector<int64_t>& order, int64_t per_step, bool drop_last) {
  std::vector<std::vector<int64_t>> steps;
  for (std::size_t first = 0; first < order.size(); first += static_cast<std::size_t>(per_step)) {
    const std::size_t last = std::min(order.size(), first + static_cast<std::size_t>(per_step));
    if (drop_last && last - first < static_cast<std::size_t>(per_step)) break;
    steps.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(first), order.begin() + static_cast<std::ptrdiff_t>(last));
  }
  return steps;
}

// HF's group_by_length (LengthGroupedSampler: trainer_pt_utils.get_length_grouped_indices): the
// shuffled order is cut into mega-batches of min(n / (4 steps), 50) steps (at least one), each
// sorted longest first (stably: ties keep the shuffled order), and the longest sample of all
// trades places with the first sample, so a batch size that does not fit fails in step 1. The
// mega-batches stay in order; drop_last then drops the partial last step, as HF's DataLoader does.
// HF groups by its per-device batch x accumulation steps; with several ranks, tbench by the
// global step, which each rank then shares.
std::vector<int64_t> length_grouped_order(const TokenizedSamples& samples, std::vector<int64_t> order, int64_t per_step) {
  const auto n = static_cast<int64_t>(order.size());
  const int64_t steps_per_megabatch = std::max<int64_t>(1, std::min<int64_t>(n / (4 * per_step), 50));
  const auto megabatch = static_cast<std::size_t>(steps_per_megabatch * per_step);
  const auto longer = [&](int64_t a, int64_t b) { return samples.length(a) > samples.length(b); };
  std::size_t longest_first = 0;
  for (std::size_t first = 0; first < order.size(); first += megabatch) {
    const auto begin = order.begin() + static_cast<std::ptrdiff_t>(first);
    std::stable_sort(begin, order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), first + megabatch)), longer);
    if (samples.length(order[first]) > samples.length(order[longest_first])) longest_first = first;
  }
  if (!order.empty()) std::swap(order[0], order[longest_first]);
  return order;
}

StepBatches this_ranks_micro_batches(const std::vector<int64_t>& step, const SamplerOptions& o) {
  const auto share = shard_order(step, o.rank, o.world_size);
  StepBatches micro;
  for (std::size_t first = 0; first < share.size(); first += static_cast<std::size_t>(o.batch_size)) {
    const std::size_t last = std::min(share.size(), first + static_cast<std::size_t>(o.batch_size));
    micro.emplace_back(share.begin() + static_cast<std::ptrdiff_t>(first), share.begin() + static_cast<std::ptrdiff_t>(last));
  }
  return micro;
}

}  // namespace

int64_t steps_per_epoch(int64_t num_samples, const SamplerOptions& o) {
  const int64_t per_step = samples_per_step(o);
  return o.drop_last ? num_samples / per_step : (num_samples + per_step - 1) / per_step;
}

std::vector<StepBatches> plan_epoch(const TokenizedSamples& samples, const SamplerOptions& o, int64_t epoch) {
  auto order = epoch_order(samples.size(), o.seed, epoch);
  if (o.bucket_by_length) order = length_grouped_order(samples, std::move(order), samples_per_step(o));
  const auto steps = cut_steps(order, samples_per_step(o), o.drop_last);
  std::vector<StepBatches> plan;
  plan.reserve(steps.size());
  for (const auto& step : steps) plan.push_back(this_ranks_micro_batches(step, o));
  return plan;
}

int64_t for_each_planned_micro_batch(const TokenizedSamples& samples, const SamplerOptions& sampler,
                                     const CollateOptions& collate, int64_t epoch,
                                     const std::function<void(const PlannedMicroBatch&)>& visit) {
  const std::vector<StepBatches> plan = plan_epoch(samples, sampler, epoch);
  std::vector<int64_t> lengths;
  for (const StepBatches& step : plan) {
    for (const auto& micro : step) {
      if (micro.empty()) continue;  // a rank's share of a partial last step can be none
      lengths.clear();
      for (const int64_t i : micro) lengths.push_back(samples.length(i));
      visit({micro, lengths, padded_width(collate, *std::max_element(lengths.begin(), lengths.end()))});
    }
  }
  return static_cast<int64_t>(plan.size());
}

std::vector<int64_t> epoch_order(int64_t n, int64_t seed, int64_t epoch) {
  auto generator = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(seed) * 1000003ULL +
                                                             static_cast<uint64_t>(epoch));
  auto perm = torch::randperm(n, generator, torch::kLong);
  return std::vector<int64_t>(perm.data_ptr<int64_t>(), perm.data_ptr<int64_t>() + n);
}

std::vector<int64_t> shard_order(const std::vector<int64_t>& order, int rank, int world_size) {
  std::vector<int64_t> shard;
  shard.reserve(order.size() / static_cast<std::size_t>(world_size) + 1);
  for (std::size_t i = static_cast<std::size_t>(rank); i < order.size(); i += static_cast<std::size_t>(world_size)) {
    shard.push_back(order[i]);
  }
  return shard;
}

}  // namespace tbench
