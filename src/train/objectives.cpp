// The classification and masked-LM objectives, and the loss functions every objective uses.
#include "tbench/data/data.hpp"
#include "tbench/train/objective.hpp"
#include "tbench/train/precision.hpp"

namespace tbench {

EvalSums zero_eval_sums(const torch::Device& device) {
  const auto on = [&](torch::ScalarType type) { return torch::zeros({}, torch::TensorOptions().dtype(type).device(device)); };
  return {on(torch::kDouble), on(torch::kLong), on(torch::kLong)};
}

torch::Tensor masked_cross_entropy(const torch::Tensor& logits, const torch::Tensor& labels) {
  namespace F = torch::nn::functional;
  const auto sum = F::cross_entropy(logits, labels, F::CrossEntropyFuncOptions().reduction(torch::kSum).ignore_index(kIgnoreLabel));
  return sum / labels.ne(kIgnoreLabel).sum().clamp_min(1).to(sum.scalar_type());
}

namespace {

// Per selected row, weighted and averaged over the selected rows; no row selection by index, so
// nothing waits for the device to learn how many rows there are.
torch::Tensor mean_over_selected(const torch::Tensor& per_row, const torch::Tensor& selected) {
  const auto weights = selected.to(per_row.scalar_type());
  return (per_row * weights).sum() / weights.sum().clamp_min(1);
}

// HF's *ForSequenceClassification: cross-entropy of the class logits.
class Classification final : public TrainingObjective {
 public:
  Classification(SequenceClassifier& model, Precision precision, const torch::Device& device)
      : model_(model), precision_(precision), device_(device) {}

  torch::nn::Module& trained() override { return model_; }

  LossTerms loss(const ModelInputs& inputs, const torch::Tensor& labels) override {
    return {torch::nn::functional::cross_entropy(logits(inputs), labels), {}};
  }

  void score(const ModelInputs& inputs, const torch::Tensor& labels, EvalSums& sums) override {
    namespace F = torch::nn::functional;
    const auto scores = logits(inputs);
    sums.loss_sum += F::cross_entropy(scores, labels, F::CrossEntropyFuncOptions().reduction(torch::kSum)).to(torch::kDouble);
    sums.correct += scores.argmax(-1).eq(labels).sum();
    sums.count += labels.size(0);
  }

 private:
  torch::Tensor logits(const ModelInputs& inputs) {
    AutocastGuard autocast(precision_, device_);
    return model_.forward(inputs).to(torch::kFloat);
  }

  SequenceClassifier& model_;
  Precision precision_;
  torch::Device device_;
};

// HF's *ForMaskedLM: cross-entropy over the masked positions, every position projected (or, with
// mlm.sparse_prediction, only the masked ones: the same loss).
class MaskedLm final : public TrainingObjective {
 public:
  MaskedLm(MaskedLanguageModel& model, Precision precision, const torch::Device& device)
      : model_(model), precision_(precision), device_(device) {}

  torch::nn::Module& trained() override { return model_; }
  bool reports_perplexity() const override { return true; }

  LossTerms loss(const ModelInputs& inputs, const torch::Tensor& labels) override {
    const MaskedLmOutputs out = forward(inputs);
    const auto scores = out.logits.view({-1, out.logits.size(-1)});
    return {masked_cross_entropy(scores, scored_labels(labels, inputs, out.positions)), {}};
  }

  void score(const ModelInputs& inputs, const torch::Tensor& labels, EvalSums& sums) override {
    const MaskedLmOutputs out = forward(inputs);
    add_masked_lm_scores(out.logits, scored_labels(labels, inputs, out.positions), sums);
  }

  torch::Tensor masked_lm_scores(const ModelInputs& inputs) override { return forward(inputs).logits; }

 private:
  MaskedLmOutputs forward(const ModelInputs& inputs) {
    AutocastGuard autocast(precision_, device_);
    MaskedLmOutputs out = model_.forward(inputs);
    out.logits = out.logits.to(torch::kFloat);
    return out;
  }

  MaskedLanguageModel& model_;
  Precision precision_;
  torch::Device device_;
};

}  // namespace

torch::Tensor distillation_kl(const torch::Tensor& student, const torch::Tensor& teacher, double temperature,
                              const torch::Tensor& selected) {
  const auto teacher_log_p = torch::log_softmax(teacher / temperature, -1);
  const auto student_log_p = torch::log_softmax(student / temperature, -1);
  const auto per_row = (teacher_log_p.exp() * (teacher_log_p - student_log_p)).sum(-1);
  return mean_over_selected(per_row, selected) * (temperature * temperature);
}

torch::Tensor cosine_distance(const torch::Tensor& student, const torch::Tensor& teacher, const torch::Tensor& selected) {
  const auto per_row = 1.0 - torch::cosine_similarity(student, teacher, -1);
  return mean_over_selected(per_row, selected);
}

torch::Tensor at_positions(const torch::Tensor& grid, const torch::Tensor& positions) {
  const auto flat = grid.reshape({-1});
  return positions.defined() ? flat.index_select(0, positions) : flat;
}

torch::Tensor scored_labels(const torch::Tensor& labels, const ModelInputs& inputs, const torch::Tensor& unpadded) {
  return at_positions(labels, inputs.scored_positions.defined() ? inputs.scored_positions : unpadded);
}

void add_masked_lm_scores(const torch::Tensor& logits, const torch::Tensor& labels, EvalSums& sums) {
  namespace F = torch::nn::functional;
  const auto flat = logits.view({-1, logits.size(-1)});
  const auto targets = labels.view({-1});
  const auto masked = targets.ne(kIgnoreLabel);
  sums.loss_sum += F::cross_entropy(flat, targets, F::CrossEntropyFuncOptions().reduction(torch::kSum).ignore_index(kIgnoreLabel))
                       .to(torch::kDouble);
  sums.correct += (flat.argmax(-1).eq(targets) & masked).sum();
  sums.count += masked.sum();
}

std::unique_ptr<TrainingObjective> classification_objective(SequenceClassifier& model, Precision precision,
                                                            const torch::Device& device) {
  return std::make_unique<Classification>(model, precision, device);
}

std::unique_ptr<TrainingObjective> masked_lm_objective(MaskedLanguageModel& model, Precision precision,
                                                       const torch::Device& device) {
  return std::make_unique<MaskedLm>(model, precision, device);
}

}  // namespace tbench
