#pragma once
// Analytic size and work of a model: parameter counts (as HF reports them) and training FLOPs per
// sample (matmuls and attention, forward + backward = 3 x forward). Used by `tbench models`, MFU
// and prediction; tests check the parameter formulas against the built modules. The head is the
// task's: a classifier on one position, or a masked-LM head on every position (HF projects every
// position onto the vocabulary: 2 H V FLOPs per token, forward, the largest matmul of a small model).
#include <cstdint>
#include <vector>

#include "tbench/models/model_config.hpp"
#include "tbench/spec/spec.hpp"

namespace tbench {

struct ModelCost {
  int64_t base_params = 0;        // the pre-trained base model, as HF counts it (with BERT's pooler)
  int64_t classifier_params = 0;  // the model tbench trains: *ForSequenceClassification or *ForMaskedLM
  double forward_flops_per_sample = 0;
  double train_flops_per_sample = 0;
};

// `task` picks the head: classification, the masked-LM head for mlm and distillation (the
// student; a distillation teacher's forward is added by the caller, see teacher_forward_flops), or
// for plm XLNet's query stream and LM head on every position.
ModelCost model_cost(const ModelConfig& config, int64_t num_labels, int64_t seq_len, Task task = Task::classification);

// Training FLOPs per sample of a run: the trained model's forward and backward, plus a
// distillation teacher's forward (no backward) when there is one.
double run_train_flops_per_sample(const ModelConfig& model, const ModelConfig* teacher, int64_t num_labels,
                                  int64_t seq_len, Task task);

// Training FLOPs of the masked-LM head at one position: the trained model's forward and backward,
// plus a distillation teacher's forward. mlm.sparse_prediction does this work only at the masked
// positions, so a step's FLOPs are the per-sample figure less this for every position it skips.
double masked_lm_head_train_flops_per_position(const ModelConfig& model, const ModelConfig* teacher);

// Training FLOPs of a classifier's work token by token, for one token: its projections and MLP in
// every layer (in a sparse last layer, its key and value alone). HF does this work at padding
// tokens too; model.unpad does not, so a step's FLOPs are the per-sample figure less this for
// every padding token. (Attention runs on the padded grid either way.)
double per_token_train_flops(const ModelConfig& model);

// Training FLOPs that attention skips when an unpadded model attends sample by sample
// (ModelConfig::unpad_attention_by_sample) rather than on the padded grid: each sample's queries
// score its own `lengths[b]` tokens instead of all `seq_len`, in every layer (a sparse last layer's
// one query too), and XLNet's read only the encodings of the sample's own distances. 0 for a
// model that attends on the grid.
double attention_by_sample_train_flops_saved(const ModelConfig& model, int64_t seq_len, const std::vector<int64_t>& lengths);

// Training FLOPs that model.unpad skips in a batch of samples of `lengths` real tokens padded to
// `width`: the per-token work of every padding token in the encoder, and where attention runs by
// sample, the padding's share of it (a task's head: run_unpad_train_flops_saved). 0 for a model
// that does not unpad.
double unpad_train_flops_saved(const ModelConfig& model, int64_t width, const std::vector<int64_t>& lengths);

// XLNet projects the distances' encodings once for a batch of samples of `lengths` real tokens
// where no dropout draws them per sample (ModelConfig::dropout_in_training, hidden_dropout); HF and
// the per-sample figure project them once per sample: the training FLOPs of the copies it does not
// make. On the grid every sample reads the encodings at `width`; attending by sample, each reads
// its own length's (attention_by_sample_train_flops_saved counts that) and the batch projects the
// longest sample's once. 0 for other models, with dropout, and for one sample.
double shared_encodings_train_flops_saved(const ModelConfig& model, int64_t width, const std::vector<int64_t>& lengths,
                                          bool by_sample);

// What a run's task computes beside its model's encoder, for the work model.unpad skips: the task's
// head (a masked-LM head scores every position, padding included, unless mlm.sparse_prediction
// keeps it to the masked ones) and a distillation teacher's forward (unpadded as the student is).
struct TaskWork {
  Task task = Task::classification;
  const ModelConfig* teacher = nullptr;
  bool sparse_prediction = false;
};

// Training FLOPs that model.unpad skips in a run's batch: the model's (unpad_train_flops_saved),
// and for mlm and distillation the dense masked-LM head's at each padding token and the teacher's
// forward share of both. 0 for a model that does not unpad.
double run_unpad_train_flops_saved(const ModelConfig& model, const TaskWork& task, int64_t width,
                                   const std::vector<int64_t>& lengths);

// Training FLOPs a batch of samples of `lengths` real tokens padded to `width` does not spend
// against its samples' figure at that width: model.unpad's (run_unpad_train_flops_saved), and
// XLNet's shared encodings. A run's steps and `tbench data` both count with it.
double batch_train_flops_saved(const ModelConfig& model, int64_t width, const std::vector<int64_t>& lengths,
                               const TaskWork& task);

}  // namespace tbench
