#pragma once
// What a training step minimises and how a held-out batch is scored: the one part of the loop that
// differs between tasks. The trainer runs the forward pass through an objective, then backward and
// the optimizer around it, and knows nothing of heads, labels or teachers.
//   classification: cross-entropy of the class logits (HF's *ForSequenceClassification loss)
//   masked LM:      cross-entropy over the masked positions (labels kIgnoreLabel elsewhere)
//   distillation:   alpha_ce T^2 KL + alpha_mlm MLM + alpha_cos (1 - cos), DistilBERT's loss
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "tbench/models/classifier.hpp"
#include "tbench/models/masked_lm.hpp"
#include "tbench/spec/spec.hpp"

namespace tbench {

struct LossTerms {
  torch::Tensor total;               // 0-dim float: what backward runs on
  std::vector<torch::Tensor> parts;  // 0-dim floats, detached, in term_names() order (empty: one term)
};

// Running sums over held-out batches, kept on the device (read once, at the end).
struct EvalSums {
  torch::Tensor loss_sum;  // double: the loss summed over the scored items
  torch::Tensor correct;   // long: items predicted right (argmax)
  torch::Tensor count;     // long: items scored: samples, or masked tokens
};
EvalSums zero_eval_sums(const torch::Device& device);

class TrainingObjective {
 public:
  virtual ~TrainingObjective() = default;
  // The module whose parameters train: they are synchronised, clipped, stepped and saved.
  virtual torch::nn::Module& trained() = 0;
  // The loss's parts, recorded per iteration under these names; empty when it is one term.
  virtual std::vector<std::string> term_names() const { return {}; }
  // One micro-batch's loss (its forward under the run's autocast).
  virtual LossTerms loss(const ModelInputs& inputs, const torch::Tensor& labels) = 0;
  // Adds a held-out batch to `sums` (called in eval mode, without gradients).
  virtual void score(const ModelInputs& inputs, const torch::Tensor& labels, EvalSums& sums) = 0;
  // Eval reports a perplexity, exp(mean loss per masked token): the masked-LM tasks.
  virtual bool reports_perplexity() const { return false; }
  // The trained masked LM's scores [B, S, V] as float (undefined for a classifier): pseudo-perplexity,
  // whose batches have no padding (an unpadding model would score the real tokens' rows otherwise).
  virtual torch::Tensor masked_lm_scores(const ModelInputs& inputs) { return {}; }
};

std::unique_ptr<TrainingObjective> classification_objective(SequenceClassifier& model, Precision precision,
                                                            const torch::Device& device);
std::unique_ptr<TrainingObjective> masked_lm_objective(MaskedLanguageModel& model, Precision precision,
                                                       const torch::Device& device);

struct DistillationLoss {
  double temperature = 2.0;
  double alpha_ce = 5.0, alpha_mlm = 2.0, alpha_cos = 1.0;
  bool restrict_ce_to_mask = false;  // the KL over the masked tokens only; false: every real token
  Precision teacher_precision = Precision::fp32;
};
// The teacher is put in eval mode, frozen, and only ever run forward without gradients.
std::unique_ptr<TrainingObjective> distillation_objective(MaskedLanguageModel& student, MaskedLanguageModel& teacher,
                                                          const DistillationLoss& loss, Precision precision,
                                                          const torch::Device& device);

// The loss functions, on float tensors, exposed for their tests. Rows are chosen by a 0/1
// `selected` mask rather than gathered, so the number of rows is never read back from the device.
// Mean cross-entropy over the positions whose label is not kIgnoreLabel (0 when there are none,
// where HF's mean over no positions would be NaN). logits [N, V], labels [N].
torch::Tensor masked_cross_entropy(const torch::Tensor& logits, const torch::Tensor& labels);
// T^2 KL(softmax(teacher/T) || softmax(student/T)), summed over the vocabulary and averaged over
// the selected rows: HF's KLDivLoss("batchmean") on the masked positions. student, teacher [..., V].
torch::Tensor distillation_kl(const torch::Tensor& student, const torch::Tensor& teacher, double temperature,
                              const torch::Tensor& selected);
// 1 - cos(student_i, teacher_i) averaged over the selected rows: HF's CosineEmbeddingLoss with
// target 1 on the real tokens' hidden states. student, teacher [..., H].
torch::Tensor cosine_distance(const torch::Tensor& student, const torch::Tensor& teacher, const torch::Tensor& selected);
// A [B, S] tensor at the listed flat positions (b * S + s), in their order, [N]; at every
// position, [B*S], where `positions` is undefined.
torch::Tensor at_positions(const torch::Tensor& grid, const torch::Tensor& positions);
// The labels of the positions the masked-LM head scored, in its order: with
// inputs.scored_positions (mlm.sparse_prediction) only those, [N]; else, unpadded, the real
// tokens' (`unpadded`, MaskedLmOutputs::positions), [T]; else every position's, flat [B*S].
torch::Tensor scored_labels(const torch::Tensor& labels, const ModelInputs& inputs,
                            const torch::Tensor& unpadded = {});
// Adds masked-token cross-entropy (summed), right predictions and the masked-token count.
void add_masked_lm_scores(const torch::Tensor& logits, const torch::Tensor& labels, EvalSums& sums);

}  // namespace tbench
