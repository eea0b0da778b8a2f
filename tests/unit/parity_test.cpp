// Numerical parity with HF transformers, from fixtures HF itself made (scripts/hf_reference.py):
// the same weights and inputs must give HF's logits, loss and gradients (fp32, CPU).
#include <gtest/gtest.h>

#include <filesystem>

#include "support/cli.hpp"
#include "tbench/data/data.hpp"
#include "tbench/models/classifier.hpp"
#include "tbench/models/masked_lm.hpp"
#include "tbench/models/safetensors.hpp"
#include "tbench/train/objective.hpp"

namespace tbench {
namespace {

torch::Tensor long_tensor(const nlohmann::json& rows) {
  std::vector<int64_t> flat;
  for (const auto& row : rows) {
    for (const auto& v : row) flat.push_back(v.get<int64_t>());
  }
  return torch::tensor(flat, torch::kLong).view({static_cast<int64_t>(rows.size()), -1});
}

torch::Tensor float_tensor(const nlohmann::json& values) {
  std::vector<float> flat;
  for (const auto& row : values) {
    if (row.is_array()) {
      for (const auto& v : row) flat.push_back(v.get<float>());
    } else {
      flat.push_back(row.get<float>());
    }
  }
  return torch::tensor(flat);
}

// The gradients a fixture lists, against HF's (the first 64 values and the norm).
void expect_gradients_match(const nlohmann::json& ref, torch::nn::Module& model) {
  auto params = model.named_parameters();
  for (const auto& item : ref["gradients"].items()) {
    ASSERT_TRUE(params.contains(item.key())) << item.key();
    const auto grad = params[item.key()].grad().flatten().slice(0, 0, static_cast<int64_t>(item.value().size()));
    EXPECT_TRUE(torch::allclose(grad, float_tensor(item.value()), 1e-3, 1e-6)) << item.key();
    EXPECT_NEAR(params[item.key()].grad().norm().item<double>(), ref["gradient_norms"][item.key()].get<double>(),
                1e-4 * (1 + ref["gradient_norms"][item.key()].get<double>()))
        << item.key();
  }
}

class HfParity : public ::testing::TestWithParam<std::string> {};

TEST_P(HfParity, LogitsLossAndGradientsMatchHf) {
  const std::string dir = std::string(TBENCH_TEST_DATA) + "/parity/" + GetParam();
  if (!std::filesystem::exists(dir + "/reference.json")) {
    GTEST_SKIP() << "no HF fixture in " << dir << " yet: run scripts/hf_reference.py where transformers is installed";
  }
  const auto ref = testing::read_json(dir + "/reference.json");
  const ModelConfig config = shipped_model_config(GetParam());
  auto model = build_classifier(config, 2);
  const auto report = load_hf_weights(*model, dir);
  EXPECT_TRUE(report.initialised.empty()) << "HF's checkpoint should hold every parameter";
  model->eval();

  ModelInputs in{long_tensor(ref["input_ids"]), long_tensor(ref["attention_mask"]), long_tensor(ref["token_type_ids"]), /*has_padding=*/true};
  const auto logits = model->forward(in);
  const auto expected = float_tensor(ref["logits"]).view_as(logits);
  EXPECT_TRUE(torch::allclose(logits, expected, 1e-4, 1e-5)) << logits << "\nHF:\n" << expected;

  const auto labels = torch::tensor(ref["labels"].get<std::vector<int64_t>>(), torch::kLong);
  const auto loss = torch::nn::functional::cross_entropy(logits, labels);
  EXPECT_NEAR(loss.item<double>(), ref["loss"].get<double>(), 1e-5);
  loss.backward();
  expect_gradients_match(ref, *model);
}

class HfMaskedLmParity : public ::testing::TestWithParam<std::string> {};

// HF's *ForMaskedLM: the same scores at the labelled positions, loss and gradients (the tied word
// embeddings included) from HF's own checkpoint of the head.
TEST_P(HfMaskedLmParity, ScoresLossAndGradientsMatchHf) {
  const std::string dir = std::string(TBENCH_TEST_DATA) + "/parity/" + GetParam() + "-mlm";
  if (!std::filesystem::exists(dir + "/reference.json")) {
    GTEST_SKIP() << "no HF fixture in " << dir << " yet: run scripts/hf_reference.py where transformers is installed";
  }
  const auto ref = testing::read_json(dir + "/reference.json");
  auto model = build_masked_lm(shipped_model_config(GetParam()));
  const auto report = load_hf_weights(*model, dir);
  EXPECT_TRUE(report.initialised.empty()) << "HF's checkpoint should hold every parameter";
  model->eval();
  ModelInputs in{long_tensor(ref["input_ids"]), long_tensor(ref["attention_mask"]), long_tensor(ref["token_type_ids"]), /*has_padding=*/true};
  const auto labels = long_tensor(ref["labels"]);
  const auto logits = model->forward(in).logits;
  const auto picked = logits.index({labels.ne(kIgnoreLabel)});
  const auto expected = float_tensor(ref["logits_at_labels"]).view_as(picked);
  EXPECT_TRUE(torch::allclose(picked, expected, 1e-4, 1e-5)) << picked << "\nHF:\n" << expected;
  EXPECT_NEAR(logits.norm().item<double>(), ref["logits_norm"].get<double>(), 1e-4 * ref["logits_norm"].get<double>());
  const auto loss = masked_cross_entropy(logits.view({-1, logits.size(-1)}), labels.view({-1}));
  EXPECT_NEAR(loss.item<double>(), ref["loss"].get<double>(), 1e-5);
  loss.backward();
  expect_gradients_match(ref, *model);
}

INSTANTIATE_TEST_SUITE_P(Parity, HfMaskedLmParity, ::testing::Values("tiny-bert", "tiny-distilbert", "tiny-roberta"));

INSTANTIATE_TEST_SUITE_P(Parity, HfParity,
                         ::testing::Values("tiny-bert", "tiny-distilbert", "tiny-roberta", "tiny-xlnet"));

}  // namespace
}  // namespace tbench
