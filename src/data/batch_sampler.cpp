#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>

#include "tbench/data/data.hpp"

namespace tbench {
namespace {

// HF's group_by_length sorts "mega-batches" of 50 batches: long enough to group similar lengths,
// short enough that the order stays random across the epoch.
constexpr int64_t kStepsPerBucket = 50;

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

std::vector<std::vector<int64_t>> bucketed_steps(const TokenizedSamples& samples, std::vector<int64_t> order,
                                                 const SamplerOptions& o, int64_t epoch) {
  const int64_t per_step = samples_per_step(o);
  if (o.drop_last) order.resize(order.size() - order.size() % static_cast<std::size_t>(per_step));
  const auto longer = [&](int64_t a, int64_t b) { return samples.length(a) > samples.length(b); };
  const std::size_t bucket = static_cast<std::size_t>(per_step * kStepsPerBucket);
  for (std::size_t first = 0; first < order.size(); first += bucket) {
    const auto end = order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), first + bucket));
    std::stable_sort(order.begin() + static_cast<std::ptrdiff_t>(first), end, longer);
  }
  auto steps = cut_steps(order, per_step, o.drop_last);
  // Shuffle the steps so lengths do not trend through the epoch, then put the longest first:
  // a batch size that does not fit fails in the first step, not an hour in.
  const auto shuffled = epoch_order(static_cast<int64_t>(steps.size()), o.seed + 1, epoch);
  std::vector<std::vector<int64_t>> result;
  for (const int64_t i : shuffled) result.push_back(std::move(steps[static_cast<std::size_t>(i)]));
  const auto longest = std::max_element(result.begin(), result.end(), [&](const auto& a, const auto& b) {
    return samples.length(a.front()) < samples.length(b.front());
  });
  if (longest != result.end()) std::iter_swap(result.begin(), longest);
  return result;
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
  const auto steps = o.bucket_by_length ? bucketed_steps(samples, std::move(order), o, epoch)
                                        : cut_steps(order, samples_per_step(o), o.drop_last);
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
