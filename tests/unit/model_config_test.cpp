#include <gtest/gtest.h>

#include "tbench/errors.hpp"
#include "tbench/models/model_config.hpp"

namespace tbench {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_model_config(text, "m", "m/config.json");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    return e.what();
  }
  ADD_FAILURE() << "no error for " << text;
  return "";
}

TEST(ModelConfig, ReadsEachArchitecturesNames) {
  const ModelConfig bert = shipped_model_config("bert-base-cased");
  EXPECT_EQ(bert.arch, Architecture::bert);
  EXPECT_EQ(bert.vocab_size, 28996);
  EXPECT_EQ(bert.hidden_size, 768);
  EXPECT_EQ(bert.num_layers, 12);
  EXPECT_EQ(bert.type_vocab_size, 2);
  EXPECT_DOUBLE_EQ(bert.layer_norm_eps, 1e-12);

  const ModelConfig distil = shipped_model_config("distilbert-base-uncased");
  EXPECT_EQ(distil.arch, Architecture::distilbert);
  EXPECT_EQ(distil.hidden_size, 768);
  EXPECT_EQ(distil.num_layers, 6);
  EXPECT_EQ(distil.intermediate_size, 3072);
  EXPECT_EQ(distil.type_vocab_size, 0);
  EXPECT_DOUBLE_EQ(distil.classifier_dropout, 0.2);

  const ModelConfig roberta = shipped_model_config("roberta-base");
  EXPECT_EQ(roberta.arch, Architecture::roberta);
  EXPECT_EQ(roberta.pad_token_id, 1);
  EXPECT_EQ(roberta.max_position_embeddings, 514);
  EXPECT_DOUBLE_EQ(roberta.layer_norm_eps, 1e-5);
}

TEST(ModelConfig, UnknownShippedNameSuggestsTheClosest) {
  try {
    shipped_model_config("bert-base-cassed");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'bert-base-cased'"), std::string::npos) << e.what();
  }
}

TEST(ModelConfig, BadConfigsNameTheKey) {
  EXPECT_NE(error_of("{").find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "gpt2"})").find("model_type"), std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "bert"})").find("vocab_size: missing"), std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "bert", "vocab_size": 10, "hidden_size": 30, "num_hidden_layers": 1,
      "num_attention_heads": 4, "intermediate_size": 8, "max_position_embeddings": 8})")
                .find("num_attention_heads"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "bert", "vocab_size": -3})").find("vocab_size"), std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "bert", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1,
      "num_attention_heads": 2, "intermediate_size": 8, "max_position_embeddings": 8, "hidden_act": "swish"})")
                .find("hidden_act"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "bert", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1,
      "num_attention_heads": 2, "intermediate_size": 8, "max_position_embeddings": 8, "hidden_dropout_prob": 1.5})")
                .find("hidden_dropout_prob"),
            std::string::npos);
  // Both index embedding tables: out of range they would fail inside LibTorch at the first step.
  const std::string small = R"({"model_type": "bert", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1,
      "num_attention_heads": 2, "intermediate_size": 8, "max_position_embeddings": 8, )";
  EXPECT_NE(error_of(small + R"("pad_token_id": 10})").find("pad_token_id"), std::string::npos);
  EXPECT_NE(error_of(small + R"("pad_token_id": -1})").find("pad_token_id"), std::string::npos);
  EXPECT_NE(error_of(small + R"("type_vocab_size": -2})").find("type_vocab_size"), std::string::npos);
}

// Found by review: samples store token types in one byte, so with type_vocab_size 200 a valid type
// 150 wrapped to -106 and failed inside LibTorch at step 1 (exit 4). Such a table is refused.
TEST(ModelConfig, MoreTokenTypesThanSamplesStoreAreRefusedNamingTheKey) {
  const std::string config = R"({"model_type": "bert", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1,
      "num_attention_heads": 2, "intermediate_size": 8, "max_position_embeddings": 8, "type_vocab_size": )";
  const std::string error = error_of(config + "129}");
  EXPECT_NE(error.find("m/config.json: type_vocab_size: 129"), std::string::npos) << error;
  EXPECT_NE(error.find("at most 128"), std::string::npos) << error;
  EXPECT_EQ(parse_model_config(config + "128}", "m", "m/config.json").type_vocab_size, 128);
}

TEST(ModelConfig, NameComesFromThePath) {
  EXPECT_EQ(model_name_from_config_path("models/bert-base-cased.json"), "bert-base-cased");
  EXPECT_EQ(model_name_from_config_path("ckpt/my-bert/config.json"), "my-bert");
  EXPECT_EQ(model_name_from_config_path("config.json"), "config");
}

}  // namespace
}  // namespace tbench
