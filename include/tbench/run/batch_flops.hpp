#pragma once
// The training FLOPs a run counts for each micro-batch it trains on: every step's `train_flops`,
// and `tbench data`'s figures per padding choice, come from here.
#include <map>
#include <optional>
#include <vector>

#include "tbench/models/model_cost.hpp"
#include "tbench/spec/spec.hpp"

namespace tbench {

struct Batch;
struct PreparedData;
struct SamplerOptions;

// A micro-batch's training FLOPs: each sample's figure at the batch's padded width, less what the
// batch does not spend: the masked-LM head at the positions mlm.sparse_prediction does not score,
// and model.unpad's skipped work and XLNet's shared encodings (batch_train_flops_saved).
class BatchFlops {
 public:
  // `teacher`: a distillation run's teacher, else null. Both models are copied.
  BatchFlops(const RunSpec& spec, const ModelConfig& model, const ModelConfig* teacher);

  // A batch as collate made it (scored_positions listed where sparse prediction scores).
  double operator()(const Batch& batch);
  // Samples of `lengths` real tokens padded to `width`, the head scoring `scored` positions (none
  // given: every position, as without sparse prediction).
  double operator()(int64_t width, const std::vector<int64_t>& lengths, std::optional<int64_t> scored = std::nullopt);

 private:
  TaskWork task() const { return {task_, teacher_ ? &*teacher_ : nullptr, sparse_prediction_}; }

  ModelConfig model_;
  std::optional<ModelConfig> teacher_;
  Task task_;
  bool sparse_prediction_;
  int64_t num_labels_;
  double head_per_position_;
  std::map<int64_t, double> per_sample_at_width_;  // a handful of distinct padded widths per run
};

// How much planning the epochs behind a run's planned FLOPs may take.
struct PlanningLimits {
  int64_t epochs = 8;                      // at most this many epochs are planned
  int64_t sample_visits = 4'000'000;       // nor more than this many samples in all (at least one epoch)
  bool one_where_alike = true;             // false: plan every epoch even where all count alike (tests)
};

// Each of the first epochs a run plans: the mean training FLOPs of one rank's optimizer step (its
// share, by `sampler`), each step counted as the run counts it. With dynamic padding each epoch's
// batches pad to other widths, so no one epoch's mean is the next's. One figure where every
// epoch's steps count alike (a micro-batch's count is its sample count's: fixed widths without
// model.unpad); fewer than `limits.epochs` where they would visit more than `limits.sample_visits`
// samples. Empty where a step's count needs more than its samples' lengths (mlm.sparse_prediction's
// masks) or there are no steps.
std::vector<double> planned_epoch_step_train_flops(const RunSpec& spec, const ModelConfig& model,
                                                   const ModelConfig* teacher, const PreparedData& data,
                                                   const SamplerOptions& sampler, const PlanningLimits& limits = {});

}  // namespace tbench
