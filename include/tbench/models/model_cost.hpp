#pragma once
// Analytic size and work of a model: parameter counts (as HF reports them) and training FLOPs per
// sample (matmuls and attention, forward + backward = 3 x forward). Used by `tbench models`, MFU
// and prediction; tests check the parameter formulas against the built modules.
#include <cstdint>

#include "tbench/models/model_config.hpp"

namespace tbench {

struct ModelCost {
  int64_t base_params = 0;        // the pre-trained base model, as HF counts it (with BERT's pooler)
  int64_t classifier_params = 0;  // the *ForSequenceClassification model tbench trains
  double forward_flops_per_sample = 0;
  double train_flops_per_sample = 0;
};

ModelCost model_cost(const ModelConfig& config, int64_t num_labels, int64_t seq_len);

}  // namespace tbench
