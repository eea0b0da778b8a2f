// The classifiers: HF's parameter counts and names, output shapes, and padding masked as HF does.
#include <gtest/gtest.h>

#include <set>

#include "tbench/model_cost.hpp"
#include "tbench/models/classifier.hpp"

namespace tbench {
namespace {

ModelInputs random_inputs(const ModelConfig& c, int64_t batch, int64_t seq) {
  torch::manual_seed(3);
  ModelInputs in;
  in.input_ids = torch::randint(c.pad_token_id + 1, c.vocab_size, {batch, seq}, torch::kLong);
  in.attention_mask = torch::ones({batch, seq}, torch::kLong);
  in.token_type_ids = torch::zeros({batch, seq}, torch::kLong);
  return in;
}

std::set<std::string> parameter_names(const torch::nn::Module& m) {
  std::set<std::string> names;
  for (const auto& p : m.named_parameters()) names.insert(p.key());
  return names;
}

// HF's published base-model sizes (the checkpoints' parameter counts).
TEST(Models, BaseParameterCountsEqualHuggingFace) {
  EXPECT_EQ(model_cost(shipped_model_config("bert-base-cased"), 2, 128).base_params, 108310272);
  EXPECT_EQ(model_cost(shipped_model_config("bert-base-uncased"), 2, 128).base_params, 109482240);
  EXPECT_EQ(model_cost(shipped_model_config("roberta-base"), 2, 128).base_params, 124645632);
  EXPECT_EQ(model_cost(shipped_model_config("distilbert-base-uncased"), 2, 128).base_params, 66362880);
}

// The analytic counts (used by `tbench models`) equal what the built modules hold, for every
// shipped config: so the HF equality above holds for the modules tbench trains.
TEST(Models, BuiltModulesMatchTheAnalyticCountForEveryShippedConfig) {
  for (const auto& name : shipped_model_names()) {
    const ModelConfig c = shipped_model_config(name);
    if (c.arch == Architecture::xlnet) continue;
    const auto model = build_classifier(c, 3);
    EXPECT_EQ(count_parameters(*model), model_cost(c, 3, 128).classifier_params) << name;
  }
}

TEST(Models, ParameterNamesFollowHuggingFaceKeys) {
  const auto bert = parameter_names(*build_classifier(shipped_model_config("tiny-bert"), 2));
  for (const char* key :
       {"bert.embeddings.word_embeddings.weight", "bert.embeddings.position_embeddings.weight",
        "bert.embeddings.token_type_embeddings.weight", "bert.embeddings.LayerNorm.weight",
        "bert.encoder.layer.0.attention.self.query.weight", "bert.encoder.layer.1.attention.self.value.bias",
        "bert.encoder.layer.0.attention.output.dense.weight", "bert.encoder.layer.0.attention.output.LayerNorm.bias",
        "bert.encoder.layer.1.intermediate.dense.weight", "bert.encoder.layer.1.output.dense.bias",
        "bert.encoder.layer.1.output.LayerNorm.weight", "bert.pooler.dense.weight", "classifier.weight"}) {
    EXPECT_TRUE(bert.count(key)) << key;
  }
  const auto distil = parameter_names(*build_classifier(shipped_model_config("tiny-distilbert"), 2));
  for (const char* key :
       {"distilbert.embeddings.word_embeddings.weight", "distilbert.embeddings.LayerNorm.bias",
        "distilbert.transformer.layer.0.attention.q_lin.weight", "distilbert.transformer.layer.1.attention.out_lin.bias",
        "distilbert.transformer.layer.0.sa_layer_norm.weight", "distilbert.transformer.layer.0.ffn.lin1.weight",
        "distilbert.transformer.layer.1.ffn.lin2.bias", "distilbert.transformer.layer.1.output_layer_norm.weight",
        "pre_classifier.weight", "classifier.bias"}) {
    EXPECT_TRUE(distil.count(key)) << key;
  }
  const auto roberta = parameter_names(*build_classifier(shipped_model_config("tiny-roberta"), 2));
  for (const char* key : {"roberta.embeddings.word_embeddings.weight", "roberta.encoder.layer.1.output.dense.weight",
                          "classifier.dense.weight", "classifier.out_proj.bias"}) {
    EXPECT_TRUE(roberta.count(key)) << key;
  }
  EXPECT_FALSE(roberta.count("roberta.pooler.dense.weight"));
}

TEST(Models, HfInitialisation) {
  torch::manual_seed(0);
  const ModelConfig c = shipped_model_config("tiny-bert");
  const auto model = build_classifier(c, 2);
  for (const auto& p : model->named_parameters()) {
    const std::string& name = p.key();
    if (name.find("LayerNorm.weight") != std::string::npos) {
      EXPECT_TRUE(torch::all(p.value() == 1).item<bool>()) << name;
    } else if (name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0) {
      EXPECT_TRUE(torch::all(p.value() == 0).item<bool>()) << name;
    } else if (name == "bert.embeddings.word_embeddings.weight") {
      EXPECT_TRUE(torch::all(p.value()[c.pad_token_id] == 0).item<bool>()) << "padding row";
      EXPECT_NEAR(p.value().std().item<double>(), c.initializer_range, 0.003);
    }
  }
}

class ArchitectureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ArchitectureTest, LogitsHaveShapeBatchByLabels) {
  const ModelConfig c = shipped_model_config(GetParam());
  const auto model = build_classifier(c, 5);
  model->eval();
  const auto logits = model->forward(random_inputs(c, 3, 12));
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{3, 5}));
  EXPECT_TRUE(torch::isfinite(logits).all().item<bool>());
}

// Appending padding (mask 0) must not change the first token's logits: HF's additive mask.
TEST_P(ArchitectureTest, PaddingDoesNotChangeTheLogits) {
  const ModelConfig c = shipped_model_config(GetParam());
  torch::manual_seed(1);
  const auto model = build_classifier(c, 2);
  model->eval();
  torch::NoGradGuard no_grad;
  const ModelInputs short_inputs = random_inputs(c, 2, 10);
  ModelInputs padded;
  const auto pad = torch::full({2, 6}, c.pad_token_id, torch::kLong);
  padded.input_ids = torch::cat({short_inputs.input_ids, pad}, 1);
  padded.attention_mask = torch::cat({short_inputs.attention_mask, torch::zeros({2, 6}, torch::kLong)}, 1);
  padded.token_type_ids = torch::zeros_like(padded.input_ids);
  const auto a = model->forward(short_inputs);
  const auto b = model->forward(padded);
  EXPECT_TRUE(torch::allclose(a, b, 1e-5, 1e-5)) << a << "\n" << b;
  // ...while attending to those same tokens does change them (the mask is doing the work).
  padded.attention_mask.fill_(1);
  EXPECT_FALSE(torch::allclose(a, model->forward(padded), 1e-5, 1e-5));
}

TEST_P(ArchitectureTest, DropoutOnlyInTrainMode) {
  const ModelConfig c = shipped_model_config(GetParam());
  const auto model = build_classifier(c, 2);
  const ModelInputs in = random_inputs(c, 2, 8);
  torch::NoGradGuard no_grad;
  model->eval();
  EXPECT_TRUE(torch::equal(model->forward(in), model->forward(in)));
  model->train();
  EXPECT_FALSE(torch::equal(model->forward(in), model->forward(in)));
}

INSTANTIATE_TEST_SUITE_P(Models, ArchitectureTest, ::testing::Values("tiny-bert", "tiny-distilbert", "tiny-roberta"));

TEST(ModelCost, FlopsGrowWithSequenceLengthAndLayers) {
  const ModelConfig c = shipped_model_config("bert-base-cased");
  const ModelCost at128 = model_cost(c, 2, 128), at512 = model_cost(c, 2, 512);
  EXPECT_DOUBLE_EQ(at128.train_flops_per_sample, 3 * at128.forward_flops_per_sample);
  // About 6 x non-embedding params per token, plus attention.
  const double per_token = at128.train_flops_per_sample / 128;
  EXPECT_GT(per_token, 6.0 * 85e6);
  EXPECT_LT(per_token, 6.0 * 85e6 * 1.2);
  EXPECT_GT(at512.train_flops_per_sample, 4 * at128.train_flops_per_sample);
}

}  // namespace
}  // namespace tbench
