// Numerical parity with HF transformers, from fixtures HF itself made (scripts/hf_reference.py, run
// by scripts/hf-fixtures): the same weights and inputs must give HF's logits, loss and gradients
// (fp32, CPU).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "support/cli.hpp"
#include "support/permutation_checks.hpp"
#include "tbench/data/data.hpp"
#include "tbench/env/torch_features.hpp"
#include "tbench/models/classifier.hpp"
#include "tbench/models/masked_lm.hpp"
#include "tbench/models/model_config.hpp"
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

// The fixtures are committed, so a missing one fails the test: a skip would let parity stop being
// checked without anyone noticing.
constexpr const char* kMissingFixture =
    "HF fixture missing (make it with scripts/hf-fixtures make, which runs scripts/hf_reference.py): ";

// fp32 tolerances, 10x what tbench on LibTorch 1.13 needed against transformers 5.12 on torch 2.14:
// logits within 1e-6 relative, losses within 1 float ulp, gradients within 1e-5 relative. The
// margin is for other LibTorch versions and BLAS builds, not for a different computation.
constexpr double kLogitRtol = 1e-5;
constexpr double kLogitAtol = 1e-6;
constexpr double kLossRtol = 1e-6;
constexpr double kGradientRtol = 1e-4;
constexpr double kGradientAtol = 1e-6;

std::string parity_fixture_dir(const std::string& name) { return std::string(TBENCH_TEST_DATA) + "/parity/" + name; }

// The gradients a fixture lists, against HF's (the first 64 values and the norm).
void expect_gradients_match(const nlohmann::json& ref, torch::nn::Module& model) {
  auto params = model.named_parameters();
  for (const auto& item : ref["gradients"].items()) {
    ASSERT_TRUE(params.contains(item.key())) << item.key();
    const auto grad = params[item.key()].grad().flatten().slice(0, 0, static_cast<int64_t>(item.value().size()));
    EXPECT_TRUE(torch::allclose(grad, float_tensor(item.value()), kGradientRtol, kGradientAtol)) << item.key();
    EXPECT_NEAR(params[item.key()].grad().norm().item<double>(), ref["gradient_norms"][item.key()].get<double>(),
                kGradientRtol * (1 + ref["gradient_norms"][item.key()].get<double>()))
        << item.key();
  }
}

// The model as a user gets it from HF's checkpoint folder: config.json as transformers wrote it,
// with each setting a spec can pick for the layers (model.attention, model.fused_qkv,
// model.fused_layer_norm, and for a `classifier` model.sparse_last_layer and model.unpad, with its
// attention on the grid or sample by sample); every one of them must compute HF's network. XLNet
// has only the sparse last layer and unpadding.
std::vector<std::pair<std::string, ModelConfig>> configs_to_check(const std::string& dir, bool classifier) {
  const ModelConfig base = read_model_config(dir + "/config.json");
  std::vector<std::pair<std::string, ModelConfig>> configs{{"eager attention", base}};
  if (classifier) {
    ModelConfig sparse = base;
    sparse.sparse_last_layer = true;
    configs.emplace_back("eager attention, sparse last layer", sparse);
    ModelConfig unpadded = base;
    unpadded.unpad = true;
    configs.emplace_back("eager attention, unpadded", unpadded);
    unpadded.sparse_last_layer = true;
    configs.emplace_back("eager attention, unpadded, sparse last layer", unpadded);
    // As a CPU run attends, unpadded.
    ModelConfig by_sample = base;
    by_sample.unpad = true;
    by_sample.unpad_attention_by_sample = true;
    configs.emplace_back("eager attention, unpadded, attention sample by sample", by_sample);
    by_sample.sparse_last_layer = true;
    configs.emplace_back("eager attention, unpadded, attention sample by sample, sparse last layer", by_sample);
  }
  if (base.arch == Architecture::xlnet) return configs;
  ModelConfig fused = base;
  fused.fused_qkv = true;
  configs.emplace_back("eager attention, fused QKV", fused);
  ModelConfig fused_norm = base;
  fused_norm.fused_layer_norm = true;
  configs.emplace_back("eager attention, fused residual LayerNorm", fused_norm);
  if (classifier) {  // the sparse layer's residual is a strided view of one position
    fused_norm.sparse_last_layer = true;
    configs.emplace_back("eager attention, fused residual LayerNorm, sparse last layer", fused_norm);
  }
  if (features::kSdpa) {
    ModelConfig sdpa = base;
    sdpa.attention = AttentionKernel::sdpa;
    configs.emplace_back("SDPA", sdpa);
    sdpa.fused_qkv = true;
    configs.emplace_back("SDPA, fused QKV", sdpa);
    sdpa.fused_layer_norm = true;
    configs.emplace_back("SDPA, fused QKV and residual LayerNorm", sdpa);
    if (classifier) {
      sdpa.sparse_last_layer = true;
      configs.emplace_back("SDPA, fused QKV and residual LayerNorm, sparse last layer", sdpa);
      sdpa.unpad = true;
      configs.emplace_back("SDPA, fused QKV and residual LayerNorm, sparse last layer, unpadded", sdpa);
      sdpa.unpad_attention_by_sample = true;
      configs.emplace_back("SDPA, fused QKV and residual LayerNorm, sparse last layer, unpadded, by sample", sdpa);
    }
  }
  return configs;
}

ModelInputs fixture_inputs(const nlohmann::json& ref) {
  return {long_tensor(ref["input_ids"]), long_tensor(ref["attention_mask"]), long_tensor(ref["token_type_ids"]),
          /*has_padding=*/true};
}

void expect_loss_matches(const torch::Tensor& loss, const nlohmann::json& ref) {
  EXPECT_NEAR(loss.item<double>(), ref["loss"].get<double>(), kLossRtol * (1 + ref["loss"].get<double>()));
}

class HfParity : public ::testing::TestWithParam<std::string> {};

TEST_P(HfParity, LogitsLossAndGradientsMatchHf) {
  const std::string dir = parity_fixture_dir(GetParam());
  ASSERT_TRUE(std::filesystem::exists(dir + "/reference.json")) << kMissingFixture << dir;
  const auto ref = testing::read_json(dir + "/reference.json");
  for (const auto& [what, config] : configs_to_check(dir, /*classifier=*/true)) {
    SCOPED_TRACE(what);
    auto model = build_classifier(config, 2);
    const auto report = load_hf_weights(*model, dir);
    EXPECT_TRUE(report.initialised.empty()) << "HF's checkpoint should hold every parameter";
    model->eval();

    const auto logits = model->forward(fixture_inputs(ref));
    const auto expected = float_tensor(ref["logits"]).view_as(logits);
    EXPECT_TRUE(torch::allclose(logits, expected, kLogitRtol, kLogitAtol)) << logits << "\nHF:\n" << expected;

    const auto labels = torch::tensor(ref["labels"].get<std::vector<int64_t>>(), torch::kLong);
    const auto loss = torch::nn::functional::cross_entropy(logits, labels);
    expect_loss_matches(loss, ref);
    loss.backward();
    expect_gradients_match(ref, *model);
  }
}

class HfMaskedLmParity : public ::testing::TestWithParam<std::string> {};

// HF's *ForMaskedLM: the same scores at the labelled positions, loss and gradients (the tied word
// embeddings included) from HF's own checkpoint of the head.
TEST_P(HfMaskedLmParity, ScoresLossAndGradientsMatchHf) {
  const std::string dir = parity_fixture_dir(GetParam() + "-mlm");
  ASSERT_TRUE(std::filesystem::exists(dir + "/reference.json")) << kMissingFixture << dir;
  const auto ref = testing::read_json(dir + "/reference.json");
  const auto labels = long_tensor(ref["labels"]);
  for (const auto& [what, config] : configs_to_check(dir, /*classifier=*/false)) {
    SCOPED_TRACE(what);
    auto model = build_masked_lm(config);
    const auto report = load_hf_weights(*model, dir);
    EXPECT_TRUE(report.initialised.empty()) << "HF's checkpoint should hold every parameter";
    model->eval();
    const auto logits = model->forward(fixture_inputs(ref)).logits;
    const auto picked = logits.index({labels.ne(kIgnoreLabel)});
    const auto expected = float_tensor(ref["logits_at_labels"]).view_as(picked);
    EXPECT_TRUE(torch::allclose(picked, expected, kLogitRtol, kLogitAtol)) << picked << "\nHF:\n" << expected;
    EXPECT_NEAR(logits.norm().item<double>(), ref["logits_norm"].get<double>(),
                kLogitRtol * ref["logits_norm"].get<double>());
    const auto loss = masked_cross_entropy(logits.view({-1, logits.size(-1)}), labels.view({-1}));
    expect_loss_matches(loss, ref);
    loss.backward();
    expect_gradients_match(ref, *model);
  }
}

// Any nested list of numbers as a tensor of its shape.
torch::Tensor nested_tensor(const nlohmann::json& values, torch::ScalarType type) {
  std::vector<int64_t> shape;
  for (const nlohmann::json* level = &values; level->is_array(); level = &level->front()) {
    shape.push_back(static_cast<int64_t>(level->size()));
    if (level->empty()) break;
  }
  std::vector<double> flat;
  const auto collect = [&](const auto& self, const nlohmann::json& node) -> void {
    if (!node.is_array()) {
      flat.push_back(node.get<double>());
      return;
    }
    for (const auto& child : node) self(self, child);
  };
  collect(collect, values);
  return torch::tensor(flat, torch::kDouble).view(shape).to(type);
}

// XLNet's permutation LM (XLNetLMHeadModel): the query stream, the tied head and the loss, on the
// batch HF's own collator made and on the general two-stream input (padding, segments, a target
// mapping that picks four positions).
TEST(HfPermutationLmParity, ScoresLossAndGradientsMatchHf) {
  const std::string dir = parity_fixture_dir("tiny-xlnet-plm");
  ASSERT_TRUE(std::filesystem::exists(dir + "/reference.json")) << kMissingFixture << dir;
  const auto ref = testing::read_json(dir + "/reference.json");
  ASSERT_EQ(ref["cases"].size(), 2u);
  auto model = build_permutation_lm(read_model_config(dir + "/config.json"));
  const auto report = load_hf_weights(*model, dir);
  EXPECT_TRUE(report.initialised.empty()) << "HF's checkpoint should hold every parameter";
  model->eval();
  for (const auto& c : ref["cases"]) {
    SCOPED_TRACE(c["case"].get<std::string>());
    ModelInputs inputs;
    inputs.input_ids = long_tensor(c["input_ids"]);
    if (c.contains("attention_mask")) inputs.attention_mask = long_tensor(c["attention_mask"]);
    if (c.contains("token_type_ids")) inputs.token_type_ids = long_tensor(c["token_type_ids"]);
    inputs.perm_mask = nested_tensor(c["perm_mask"], torch::kFloat);
    inputs.target_mapping = nested_tensor(c["target_mapping"], torch::kFloat);
    const auto labels = long_tensor(c["labels"]);
    model->zero_grad();
    const auto logits = model->forward(inputs).logits;
    ASSERT_EQ(logits.size(1), inputs.target_mapping.size(1));
    const auto picked = logits.index({labels.ne(kIgnoreLabel)});
    const auto expected = float_tensor(c["logits_at_labels"]).view_as(picked);
    EXPECT_TRUE(torch::allclose(picked, expected, kLogitRtol, kLogitAtol)) << picked << "\nHF:\n" << expected;
    EXPECT_NEAR(logits.norm().item<double>(), c["logits_norm"].get<double>(), kLogitRtol * c["logits_norm"].get<double>());
    const auto loss = masked_cross_entropy(logits.view({-1, logits.size(-1)}), labels.view({-1}));
    expect_loss_matches(loss, c);
    loss.backward();
    expect_gradients_match(c, *model);
  }
}

// HF's collator output obeys the rules tbench's collator is tested against (data_test.cpp).
TEST(HfPermutationLmParity, HfsCollatorFollowsTheRulesTbenchsDoes) {
  const std::string dir = parity_fixture_dir("tiny-xlnet-plm");
  ASSERT_TRUE(std::filesystem::exists(dir + "/reference.json")) << kMissingFixture << dir;
  const auto ref = testing::read_json(dir + "/reference.json");
  const auto& collated = ref["cases"][0];
  testing::PermutationBatch batch;
  batch.original_ids = long_tensor(ref["cases"][1]["input_ids"]);  // the general case's ids are the collator's input
  batch.input_ids = long_tensor(collated["input_ids"]);
  batch.labels = long_tensor(collated["labels"]);
  batch.perm_mask = nested_tensor(collated["perm_mask"], torch::kFloat);
  batch.target_mapping = nested_tensor(collated["target_mapping"], torch::kFloat);
  batch.mask_token_id = 6;
  batch.functional_ids = {0, 1, 2, 3, 4, 5, 6};  // the fixture's special ids (scripts/hf_reference.py)
  testing::expect_valid_permutation_batch(batch);
  EXPECT_GT(batch.labels.ne(kIgnoreLabel).sum().item<int64_t>(), 0) << "the fixture should hold targets";
}

INSTANTIATE_TEST_SUITE_P(Parity, HfMaskedLmParity, ::testing::Values("tiny-bert", "tiny-distilbert", "tiny-roberta"));

INSTANTIATE_TEST_SUITE_P(Parity, HfParity,
                         ::testing::Values("tiny-bert", "tiny-distilbert", "tiny-roberta", "tiny-xlnet"));

}  // namespace
}  // namespace tbench
