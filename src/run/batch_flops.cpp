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

std::optional<double> expected_step_train_flops(const RunSpec& spec, const ModelConfig& model,
                                                const ModelConfig* teacher, const PreparedData& data,
                                                const SamplerOptions& sampler, int64_t epochs) {
  if (task_work(spec, teacher).sparse_prediction) return std::nullopt;
  BatchFlops batch_flops(spec, model, teacher);
  double flops = 0;
  int64_t steps = 0;
  for (int64_t epoch = 1; epoch <= epochs; ++epoch) {
    for (const StepBatches& step : plan_epoch(data.train, sampler, epoch)) {
      for (const auto& micro : step) {
        if (micro.empty()) continue;
        std::vector<int64_t> lengths;
        for (const int64_t i : micro) lengths.push_back(data.train.length(i));
        flops += batch_flops(padded_width(data.collate, *std::max_element(lengths.begin(), lengths.end())), lengths);
      }
      ++steps;
    }
  }
  if (steps == 0) return std::nullopt;
  return flops / static_cast<double>(steps);
}

}  // namespace tbench
