// The FLOPs model (model_cost.cpp), which MFU and every FLOP figure stand on, against the matrix
// products a forward pass actually runs. Each product's FLOPs come from the shapes its operator
// was called with (aten::mm, addmm, bmm, ...: 2 m k n), seen through LibTorch's RecordFunction
// hooks; the model's forward FLOPs for the batch, less what the batch does not spend
// (batch_train_flops_saved, in training units: 3 x forward), must equal them. Every architecture,
// with every switch that changes the work. Elementwise work (LayerNorm, softmax, GELU) is in
// neither count.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include <ATen/record_function.h>

#include "tbench/models/classifier.hpp"
#include "tbench/models/masked_lm.hpp"
#include "tbench/models/model_cost.hpp"
#include "support/model_inputs.hpp"

namespace tbench {
namespace {

// Multiply-adds of one matrix product, counted 2 a multiply-add; 0 for any other operator.
// `inputs` as the operator got them: (a, b) for mm and bmm, (c, a, b) for addmm and baddbmm.
double product_flops(const char* name, c10::ArrayRef<const c10::IValue> inputs) {
  const auto sizes = [&](std::size_t i) { return inputs[i].toTensor().sizes(); };
  const auto is = [&](const char* op) { return std::strcmp(name, op) == 0; };
  if (is("aten::mm") || is("aten::addmm")) {
    const std::size_t a = is("aten::mm") ? 0 : 1;
    return 2.0 * static_cast<double>(sizes(a)[0] * sizes(a)[1] * sizes(a + 1)[1]);
  }
  if (is("aten::bmm") || is("aten::baddbmm")) {
    const std::size_t a = is("aten::bmm") ? 0 : 1;
    return 2.0 * static_cast<double>(sizes(a)[0] * sizes(a)[1] * sizes(a)[2] * sizes(a + 1)[2]);
  }
  if (is("aten::mv") || is("aten::addmv")) {
    const std::size_t a = is("aten::mv") ? 0 : 1;
    return 2.0 * static_cast<double>(sizes(a)[0] * sizes(a)[1]);
  }
  if (is("aten::dot")) return 2.0 * static_cast<double>(sizes(0)[0]);
  return 0.0;
}

bool is_product(const char* name) {
  for (const char* op : {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::mv", "aten::addmv", "aten::dot"}) {
    if (std::strcmp(name, op) == 0) return true;
  }
  return false;
}

// The products' FLOPs on this thread while it lives. An operator one of them calls is part of it,
// so only the outermost product counts.
class CountedProducts {
 public:
  CountedProducts() {
    flops_ = 0;
    depth_ = 0;
    handle_ = at::addThreadLocalCallback(
        at::RecordFunctionCallback(&CountedProducts::on_start, &CountedProducts::on_end).needsInputs(true));
  }
  ~CountedProducts() { at::removeCallback(handle_); }
  CountedProducts(const CountedProducts&) = delete;
  CountedProducts& operator=(const CountedProducts&) = delete;

  double flops() const { return flops_; }

 private:
  static std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
    if (!is_product(fn.name())) return nullptr;
    if (depth_++ == 0) flops_ += product_flops(fn.name(), fn.inputs());
    return nullptr;
  }
  static void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
    if (is_product(fn.name())) --depth_;
  }

  static thread_local double flops_;
  static thread_local int depth_;
  at::CallbackHandle handle_;
};

thread_local double CountedProducts::flops_ = 0;
thread_local int CountedProducts::depth_ = 0;

using testing::padded_inputs;

// The same tokens with none of them padding, as a batch the host knows has none.
ModelInputs unpadded_inputs(const ModelConfig& c) {
  ModelInputs in = testing::random_inputs(c, 3, 12);
  in.has_padding = false;
  return in;
}

std::vector<int64_t> lengths_of(const ModelInputs& in) {
  const auto sums = in.attention_mask.sum(1).contiguous();
  return {sums.data_ptr<int64_t>(), sums.data_ptr<int64_t>() + sums.numel()};
}

// What the model says a forward pass over `in` costs: every sample's figure at the batch's width,
// less what the batch does not spend.
double modelled_forward_flops(const ModelConfig& c, const ModelInputs& in, Task task, int64_t num_labels,
                              bool sparse_prediction = false) {
  const int64_t width = in.input_ids.size(1);
  const auto lengths = lengths_of(in);
  return static_cast<double>(lengths.size()) * model_cost(c, num_labels, width, task).forward_flops_per_sample -
         batch_train_flops_saved(c, width, lengths, {task, nullptr, sparse_prediction}) / 3.0;
}

double counted_forward_flops(torch::nn::Module& model, const std::function<void()>& forward) {
  model.eval();  // no dropout: XLNet's encodings are then one copy for the batch (dropout_in_training false)
  torch::NoGradGuard no_grad;
  CountedProducts counted;
  forward();
  return counted.flops();
}

class ModelFlops : public ::testing::TestWithParam<const char*> {};

// A classifier in each setting that changes its work: the model counts what runs, to the FLOP.
TEST_P(ModelFlops, ClassifierCountsEveryProductItRuns) {
  ModelConfig base = shipped_model_config(GetParam());
  base.dropout_in_training = false;  // eval mode
  struct Setting {
    std::string name;
    bool sparse, unpad, by_sample, fused_qkv, unpadded_batch, all_shorter = false;
  };
  const std::vector<Setting> settings{
      {"padded", false, false, false, false, false},
      {"sparse last layer", true, false, false, false, false},
      {"unpadded, attention on the grid", false, true, false, false, false},
      {"unpadded, attention by sample", false, true, true, false, false},
      {"unpadded by sample, sparse last layer", true, true, true, false, false},
      {"unpadded by sample, every sample shorter than the width", false, true, true, false, false, true},
      {"unpadded by sample, sparse last layer, every sample shorter", true, true, true, false, false, true},
      {"unpadded on the grid, sparse last layer", true, true, false, false, false},
      {"unpad on a batch without padding", false, true, true, false, true},
      {"fused QKV", false, false, false, true, false},
      {"fused QKV, unpadded by sample", false, true, true, true, false},
  };
  for (const auto& s : settings) {
    if (s.fused_qkv && base.arch == Architecture::xlnet) continue;  // XLNet has no fused projection
    SCOPED_TRACE(s.name);
    ModelConfig c = base;
    c.sparse_last_layer = s.sparse;
    c.unpad = s.unpad;
    c.unpad_attention_by_sample = s.by_sample;
    c.fused_qkv = s.fused_qkv;
    torch::manual_seed(5);
    const auto model = build_classifier(c, 3);
    const ModelInputs in = s.unpadded_batch ? unpadded_inputs(c)
                           : s.all_shorter  ? padded_inputs(c, {9, 5, 7})
                                            : padded_inputs(c);
    const double counted = counted_forward_flops(*model, [&] { model->forward(in); });
    ASSERT_GT(counted, 0.0);
    EXPECT_NEAR(modelled_forward_flops(c, in, Task::classification, 3), counted, 1e-9 * counted);
  }
}

// With dropout, XLNet draws each sample's own dropout on the encodings and projects them per
// sample, as the model's per-sample figure counts them (nothing saved). Dropout probabilities of
// 1e-12 keep every value (the draws' threshold rounds to 0) while the training path runs.
TEST(ModelFlopsXlnet, WithDropoutProjectsTheEncodingsPerSample) {
  ModelConfig c = shipped_model_config("tiny-xlnet");
  c.hidden_dropout = c.attention_dropout = c.classifier_dropout = 1e-12;
  torch::manual_seed(5);
  const auto model = build_classifier(c, 3);
  const ModelInputs in = padded_inputs(c);
  model->train();
  torch::NoGradGuard no_grad;
  CountedProducts counted;
  model->forward(in);
  EXPECT_NEAR(modelled_forward_flops(c, in, Task::classification, 3), counted.flops(), 1e-9 * counted.flops());
  EXPECT_EQ(batch_train_flops_saved(c, 12, lengths_of(in), {}), 0.0);
}

// XLNet's permutation LM: the query stream at every position (HF's collator makes each one a
// target, as tbench's does), its two target mappings, and the head at every target, beside the
// content stream, which alone projects the keys and the encodings.
TEST(ModelFlopsXlnet, PermutationLmCountsBothStreams) {
  ModelConfig c = shipped_model_config("tiny-xlnet");
  c.dropout_in_training = false;
  torch::manual_seed(5);
  const auto model = build_permutation_lm(c);
  const int64_t batch = 3, width = 12;
  ModelInputs in;
  in.input_ids = torch::randint(c.pad_token_id + 1, c.vocab_size, {batch, width}, torch::kLong);
  in.token_type_ids = torch::zeros({batch, width}, torch::kLong);
  in.has_padding = false;
  in.perm_mask = torch::randint(0, 2, {batch, width, width}, torch::kFloat);
  in.target_mapping = torch::eye(width, torch::kFloat).expand({batch, width, width});
  const double counted = counted_forward_flops(*model, [&] { model->forward(in); });
  ASSERT_GT(counted, 0.0);
  const std::vector<int64_t> lengths(batch, width);
  const double modelled = static_cast<double>(batch) * model_cost(c, 2, width, Task::plm).forward_flops_per_sample -
                          batch_train_flops_saved(c, width, lengths, {}) / 3.0;
  EXPECT_NEAR(modelled, counted, 1e-9 * counted);
}

// The masked-LM heads score every position against the vocabulary, or with mlm.sparse_prediction
// only the listed ones (each step's count leaves the others out: the trainer's FLOPs model);
// unpadded (model.unpad), every real token, or the listed ones among them.
TEST_P(ModelFlops, MaskedLmCountsEveryProductItRuns) {
  ModelConfig base = shipped_model_config(GetParam());
  if (base.arch == Architecture::xlnet) GTEST_SKIP() << "XLNet pre-trains with permutation LM (task plm)";
  base.dropout_in_training = false;
  for (const auto& [name, unpad, by_sample] : std::vector<std::tuple<std::string, bool, bool>>{
           {"padded", false, false}, {"unpadded, attention on the grid", true, false}, {"unpadded by sample", true, true}}) {
    SCOPED_TRACE(name);
    ModelConfig c = base;
    c.unpad = unpad;
    c.unpad_attention_by_sample = by_sample;
    torch::manual_seed(5);
    const auto model = build_masked_lm(c);
    ModelInputs in = padded_inputs(c);
    const double dense = counted_forward_flops(*model, [&] { model->forward(in); });
    ASSERT_GT(dense, 0.0);
    EXPECT_NEAR(modelled_forward_flops(c, in, Task::mlm, 2), dense, 1e-9 * dense);

    in.scored_positions = torch::tensor({0, 5, 13, 26}, torch::kLong);  // real tokens (12, 9 and 5 of 12)
    const double sparse = counted_forward_flops(*model, [&] { model->forward(in); });
    const double skipped = static_cast<double>(in.input_ids.numel() - in.scored_positions.numel()) *
                           masked_lm_head_train_flops_per_position(c, nullptr) / 3.0;
    EXPECT_NEAR(modelled_forward_flops(c, in, Task::mlm, 2, /*sparse_prediction=*/true) - skipped, sparse, 1e-9 * sparse);
  }
}

// Distillation, in the units a run's steps count (the student's forward and backward as 3x its
// forward, the teacher's forward once): the student's and the teacher's products, padded and both
// unpadded, against run_train_flops_per_sample less batch_train_flops_saved with the teacher.
TEST(ModelFlopsDistillation, CountsTheStudentsTrainingAndTheTeachersForward) {
  for (const auto& [name, unpad, by_sample] : std::vector<std::tuple<std::string, bool, bool>>{
           {"padded", false, false}, {"unpadded, attention on the grid", true, false}, {"unpadded by sample", true, true}}) {
    SCOPED_TRACE(name);
    ModelConfig student = shipped_model_config("tiny-distilbert"), teacher = shipped_model_config("tiny-bert");
    for (ModelConfig* c : {&student, &teacher}) {
      c->unpad = unpad;
      c->unpad_attention_by_sample = by_sample;
      c->dropout_in_training = false;
    }
    torch::manual_seed(6);
    const auto student_model = build_masked_lm(student), teacher_model = build_masked_lm(teacher);
    const ModelInputs in = padded_inputs(student);
    const double counted = 3.0 * counted_forward_flops(*student_model, [&] { student_model->forward(in); }) +
                           counted_forward_flops(*teacher_model, [&] { teacher_model->forward(in); });
    const int64_t width = in.input_ids.size(1);
    const auto lengths = lengths_of(in);
    const double modelled =
        static_cast<double>(lengths.size()) * run_train_flops_per_sample(student, &teacher, 2, width, Task::distillation) -
        batch_train_flops_saved(student, width, lengths, {Task::distillation, &teacher, false});
    EXPECT_NEAR(modelled, counted, 1e-9 * counted);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, ModelFlops, ::testing::Values("tiny-bert", "tiny-distilbert", "tiny-roberta", "tiny-xlnet"));

}  // namespace
}  // namespace tbench
