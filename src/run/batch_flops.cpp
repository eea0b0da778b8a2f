#include "tbench/run/batch_flops.hpp"

#include <algorithm>

#include "tbench/data/data.hpp"
#include "tbench/data/data_sources.hpp"
#include "tbench/run/runner.hpp"

namespace tbench {

BatchFlops::BatchFlops(const RunSpec& spec, const ModelConfig& model, const ModelConfig* teacher)
    : model_(model),
      task_(spec.task),
      sparse_prediction_(task_work(spec, teacher).sparse_prediction),
      num_labels_(spec.num_labels),
      head_per_position_(masked_lm_head_train_flops_per_position(model, teacher)) {
  if (teacher) teacher_ = *teacher;
}

double BatchFlops::operator()(const Batch& batch) {
  std::optional<int64_t> scored;
  if (batch.inputs.scored_positions.defined()) scored = batch.inputs.scored_positions.numel();
  return (*this)(batch.inputs.input_ids.size(1), batch.lengths, scored);
}

double BatchFlops::operator()(int64_t width, const std::vector<int64_t>& lengths, std::optional<int64_t> scored) {
  auto [at_width, added] = per_sample_at_width_.try_emplace(width, 0.0);
  if (added) {
    at_width->second = run_train_flops_per_sample(model_, teacher_ ? &*teacher_ : nullptr, num_labels_, width, task_);
  }
  const auto samples = static_cast<int64_t>(lengths.size());
  double flops = static_cast<double>(samples) * at_width->second;
  // Sparse masked-LM prediction: the head ran at the scored positions only.
  if (scored) flops -= static_cast<double>(samples * width - *scored) * head_per_position_;
  // model.unpad: the per-token work and a masked-LM head ran at the real tokens only (and on the
  // CPU, attention too); XLNet without dropout: one copy of the encodings for the batch.
  return flops - batch_train_flops_saved(model_, width, lengths, task());
}

std::vector<double> planned_epoch_step_train_flops(const RunSpec& spec, const ModelConfig& model,
                                                   const ModelConfig* teacher, const PreparedData& data,
                                                   const SamplerOptions& sampler, const PlanningLimits& limits) {
  if (task_work(spec, teacher).sparse_prediction || data.train.size() == 0) return {};
  const bool epochs_alike = limits.one_where_alike && data.collate.padding == Padding::max_length && !model.unpad;
  const int64_t affordable = std::max<int64_t>(1, limits.sample_visits / data.train.size());
  const int64_t epochs = epochs_alike ? 1 : std::max<int64_t>(1, std::min(limits.epochs, affordable));
  BatchFlops batch_flops(spec, model, teacher);
  std::vector<double> planned;
  for (int64_t epoch = 1; epoch <= epochs; ++epoch) {
    double flops = 0;
    const int64_t steps = for_each_planned_micro_batch(
        data.train, sampler, data.collate, epoch,
        [&](const PlannedMicroBatch& micro) { flops += batch_flops(micro.width, micro.lengths); });
    if (steps == 0) return {};
    planned.push_back(flops / static_cast<double>(steps));
  }
  return planned;
}

}  // namespace tbench
