// DistilBERT's training loss (Sanh et al., 2019), as HF's distillation example computes it
// (examples/research_projects/distillation/distiller.py):
//   L = alpha_ce  * T^2 KL(softmax(t/T) || softmax(s/T))   over the real tokens (or, with
//                                                           restrict_ce_to_mask, the masked ones)
//     + alpha_mlm * CE(s, masked-LM labels)                 over the masked positions
//     + alpha_cos * (1 - cos(h_s, h_t))                     over the real tokens' last hidden states
// The teacher runs forward only, frozen, in eval mode (no dropout) and without gradients.
#include "tbench/data/data.hpp"
#include "tbench/train/objective.hpp"
#include "tbench/train/precision.hpp"

namespace tbench {
namespace {

class Distillation final : public TrainingObjective {
 public:
  Distillation(MaskedLanguageModel& student, MaskedLanguageModel& teacher, const DistillationLoss& loss,
               Precision precision, const torch::Device& device)
      : student_(student), teacher_(teacher), loss_(loss), precision_(precision), device_(device) {
    teacher_.eval();
    for (auto& p : teacher_.parameters()) p.set_requires_grad(false);
  }

  torch::nn::Module& trained() override { return student_; }
  // As HF's distiller, a term of weight 0 is neither computed nor reported: its time is not the
  // run's, and a cosine term of weight 0 lets the teacher be of another width.
  std::vector<std::string> term_names() const override {
    std::vector<std::string> names = {"ce"};
    if (loss_.alpha_mlm > 0) names.push_back("mlm");
    if (loss_.alpha_cos > 0) names.push_back("cos");
    return names;
  }
  bool reports_perplexity() const override { return true; }  // of the student

  LossTerms loss(const ModelInputs& inputs, const torch::Tensor& labels) override {
    const MaskedLmOutputs s = student(inputs);
    const MaskedLmOutputs t = teacher(inputs);
    // Scores are rows of [positions, vocab]: every position's (unpadded, every real token's), or
    // with sparse prediction the masked ones' (which the spec allows only with restrict_ce_to_mask).
    // Both models are unpadded alike (model.unpad), so their rows are the same tokens.
    TORCH_CHECK(s.positions.defined() == t.positions.defined(), "the student and the teacher must both unpad or neither");
    const auto vocab = s.logits.size(-1);
    const auto student_scores = s.logits.view({-1, vocab}), teacher_scores = t.logits.view({-1, vocab});
    const auto targets = scored_labels(labels, inputs, s.positions);
    const auto masked = targets.ne(kIgnoreLabel);
    TORCH_CHECK(loss_.restrict_ce_to_mask || !inputs.scored_positions.defined(),
                "mlm.sparse_prediction needs distillation.restrict_ce_to_mask");
    const auto real = at_positions(inputs.attention_mask.ne(0), s.positions);  // unpadded, every row
    const auto ce = distillation_kl(student_scores, teacher_scores, loss_.temperature, loss_.restrict_ce_to_mask ? masked : real);
    LossTerms out{loss_.alpha_ce * ce, {ce.detach()}};
    if (loss_.alpha_mlm > 0) {
      const auto mlm = masked_cross_entropy(student_scores, targets);
      out.total = out.total + loss_.alpha_mlm * mlm;
      out.parts.push_back(mlm.detach());
    }
    if (loss_.alpha_cos > 0) {
      const auto width = s.hidden.size(-1);
      const auto cos = cosine_distance(s.hidden.reshape({-1, width}), t.hidden.reshape({-1, width}), real);
      out.total = out.total + loss_.alpha_cos * cos;
      out.parts.push_back(cos.detach());
    }
    return out;
  }

  void score(const ModelInputs& inputs, const torch::Tensor& labels, EvalSums& sums) override {
    const MaskedLmOutputs s = student(inputs);
    add_masked_lm_scores(s.logits, scored_labels(labels, inputs, s.positions), sums);
  }

  torch::Tensor masked_lm_scores(const ModelInputs& inputs) override { return student(inputs).logits; }

 private:
  MaskedLmOutputs student(const ModelInputs& inputs) {
    AutocastGuard autocast(precision_, device_);
    MaskedLmOutputs out = student_.forward(inputs);
    return {out.logits.to(torch::kFloat), out.hidden.to(torch::kFloat), out.positions};
  }

  MaskedLmOutputs teacher(const ModelInputs& inputs) {
    torch::NoGradGuard no_grad;
    AutocastGuard autocast(loss_.teacher_precision, device_);
    MaskedLmOutputs out = teacher_.forward(inputs);
    return {out.logits.to(torch::kFloat), out.hidden.to(torch::kFloat), out.positions};
  }

  MaskedLanguageModel& student_;
  MaskedLanguageModel& teacher_;
  DistillationLoss loss_;
  Precision precision_;
  torch::Device device_;
};

}  // namespace

std::unique_ptr<TrainingObjective> distillation_objective(MaskedLanguageModel& student, MaskedLanguageModel& teacher,
                                                          const DistillationLoss& loss, Precision precision,
                                                          const torch::Device& device) {
  return std::make_unique<Distillation>(student, teacher, loss, precision, device);
}

}  // namespace tbench
