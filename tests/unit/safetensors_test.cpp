// safetensors: round trips, files written byte by byte to the format's spec, every kind of
// corruption rejected with a message, and HF weights loaded by name into the classifiers.
#include <gtest/gtest.h>

#include <fstream>
#include <limits>

#include "support/cli.hpp"
#include "support/expect_error.hpp"
#include "tbench/errors.hpp"
#include "tbench/models/classifier.hpp"
#include "tbench/models/safetensors.hpp"

namespace tbench {
namespace {

using nlohmann::json;

// A safetensors file assembled by hand from the format description (not by save_safetensors):
// little-endian u64 header length, JSON header, data.
std::string raw_file(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string floats(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

std::string safetensors_error_of(const std::string& path) {
  try {
    SafetensorsFile file(path);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    return e.what();
  }
  ADD_FAILURE() << "no error for " << path;
  return "";
}

TEST(Safetensors, ReadsAFileWrittenToTheSpec) {
  testing::ScratchDir dir;
  const std::string header = R"({"__metadata__":{"format":"pt"},"b":{"dtype":"F32","shape":[3],"data_offsets":[8,20]},)"
                             R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const auto path = dir.write("m.safetensors", raw_file(header, floats({1, 2, 3, 4, 5})));
  SafetensorsFile file(path);
  EXPECT_EQ(file.metadata().at("format"), "pt");
  EXPECT_TRUE(torch::equal(file.tensor("a"), torch::tensor({1.0f, 2.0f})));
  EXPECT_TRUE(torch::equal(file.tensor("b"), torch::tensor({3.0f, 4.0f, 5.0f})));
}

// Another job rewrites the checkpoint while tbench reads it: the file shrinks after its header
// was checked. A mapping would die of SIGBUS here; the reader must give a clear error.
TEST(Safetensors, AFileThatShrinksWhileReadIsAnErrorNotACrash) {
  testing::ScratchDir dir;
  const std::string path = dir.file("m.safetensors");
  save_safetensors(path, {{"a", torch::ones({1000})}, {"b", torch::ones({1000})}});
  SafetensorsFile file(path);
  EXPECT_TRUE(torch::equal(file.tensor("a"), torch::ones({1000})));
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 2000);
  try {
    file.tensor("b");
    ADD_FAILURE() << "no error for a file cut short while read";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find("m.safetensors: tensor 'b': the file became shorter while it was read"),
              std::string::npos) << e.what();
  }
}

TEST(Safetensors, RoundTripsEveryDtype) {
  testing::ScratchDir dir;
  std::vector<std::pair<std::string, torch::Tensor>> tensors = {
      {"f32", torch::randn({3, 4})},
      {"f16", torch::randn({5}).to(torch::kHalf)},
      {"bf16", torch::randn({2, 2}).to(torch::kBFloat16)},
      {"i64", torch::arange(7)},
      {"u8", torch::arange(4).to(torch::kByte)},
      {"bool", torch::tensor({true, false})},
      {"empty", torch::zeros({0, 3})},
      {"scalar", torch::tensor(2.5)},
  };
  const auto path = dir.file("all.safetensors");
  save_safetensors(path, tensors, {{"who", "test"}});
  SafetensorsFile file(path);
  EXPECT_EQ(file.metadata().at("who"), "test");
  for (const auto& [name, t] : tensors) {
    const auto back = file.tensor(name);
    EXPECT_EQ(back.scalar_type(), t.scalar_type()) << name;
    EXPECT_TRUE(torch::equal(back, t)) << name;
  }
}

struct Corruption {
  std::string name;
  std::string bytes;
  std::string expected;
};

class CorruptSafetensors : public ::testing::TestWithParam<Corruption> {};

TEST_P(CorruptSafetensors, IsAClearErrorNotACrash) {
  testing::ScratchDir dir;
  const auto path = dir.write("bad.safetensors", GetParam().bytes);
  const auto message = safetensors_error_of(path);
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find(GetParam().expected), std::string::npos) << message;
}

const std::string kOk = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";

INSTANTIATE_TEST_SUITE_P(
    Safetensors, CorruptSafetensors,
    ::testing::Values(
        Corruption{"empty_file", "", "shorter than the 8-byte header length"},
        Corruption{"header_longer_than_file", raw_file(kOk, floats({1, 2})).substr(0, 20), "header claims"},
        Corruption{"truncated_data", raw_file(kOk, floats({1})), "outside the data section"},
        Corruption{"bad_json", raw_file("{\"a\": [", ""), "not valid JSON"},
        Corruption{"not_an_object", raw_file("[1,2]", ""), "not a JSON object"},
        Corruption{"unknown_dtype", raw_file(R"({"a":{"dtype":"F8","shape":[2],"data_offsets":[0,2]}})", "xx"),
                   "unsupported dtype"},
        Corruption{"size_mismatch", raw_file(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", floats({1, 2})),
                   "need 12"},
        Corruption{"offsets_reversed", raw_file(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", floats({1, 2})),
                   "outside the data section"},
        Corruption{"negative_dim", raw_file(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", floats({1, 2})),
                   "negative or too large"},
        Corruption{"overflowing_shape",
                   raw_file(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,8]}})", floats({1, 2})),
                   "negative or too large"},
        Corruption{"negative_offset", raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}})", floats({1, 2})),
                   "two non-negative integers"},
        Corruption{"overlap", raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                       R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", floats({1, 2})),
                   "overlap"},
        Corruption{"missing_fields", raw_file(R"({"a":{"dtype":"F32"}})", ""), "needs dtype, shape and data_offsets"},
        Corruption{"bad_metadata", raw_file(R"({"__metadata__":{"x":1}})", ""), "__metadata__.x"}),
    [](const auto& info) { return info.param.name; });

class HfWeights : public ::testing::Test {
 protected:
  testing::ScratchDir dir;
  std::shared_ptr<SequenceClassifier> make(const std::string& name, int seed) {
    torch::manual_seed(static_cast<uint64_t>(seed));
    return build_classifier(shipped_model_config(name), 2);
  }
  // The model's named parameters, optionally renamed or filtered, as a checkpoint file.
  std::string checkpoint(const torch::nn::Module& m, const std::string& file,
                         const std::function<std::string(const std::string&)>& rename = nullptr) {
    std::vector<std::pair<std::string, torch::Tensor>> tensors;
    for (const auto& p : m.named_parameters()) {
      const std::string key = rename ? rename(p.key()) : p.key();
      if (!key.empty()) tensors.emplace_back(key, p.value());
    }
    const auto path = dir.file(file);
    save_safetensors(path, tensors);
    return path;
  }
  static bool same_parameters(const torch::nn::Module& a, const torch::nn::Module& b) {
    const auto pa = a.named_parameters(), pb = b.named_parameters();
    for (const auto& item : pa) {
      if (!torch::equal(item.value(), pb[item.key()])) return false;
    }
    return true;
  }
};

TEST_F(HfWeights, SavedWeightsLoadBackExactlyForEveryArchitecture) {
  for (const char* name : {"tiny-bert", "tiny-distilbert", "tiny-roberta", "tiny-xlnet"}) {
    const auto trained = make(name, 1), fresh = make(name, 2);
    ASSERT_FALSE(same_parameters(*trained, *fresh));
    const auto path = dir.file(std::string(name) + ".safetensors");
    save_hf_weights(*trained, path);
    const auto report = load_hf_weights(*fresh, path);
    EXPECT_TRUE(same_parameters(*trained, *fresh)) << name;
    EXPECT_TRUE(report.initialised.empty()) << name;
    EXPECT_TRUE(report.unexpected.empty()) << name;
  }
}

TEST_F(HfWeights, PretrainedCheckpointWithoutHeadInitialisesTheHead) {
  const auto source = make("tiny-bert", 1), target = make("tiny-bert", 2);
  const auto before = target->named_parameters()["classifier.weight"].clone();
  // A pre-training checkpoint: base model + an MLM head the classifier does not have.
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& p : source->named_parameters()) {
    if (p.key().rfind("bert.", 0) == 0) tensors.emplace_back(p.key(), p.value());
  }
  tensors.emplace_back("cls.predictions.bias", torch::zeros({1000}));
  const auto path = dir.file("pretrained.safetensors");
  save_safetensors(path, tensors);
  const auto report = load_hf_weights(*target, path);
  EXPECT_EQ(report.initialised, (std::vector<std::string>{"classifier.weight", "classifier.bias"}));
  EXPECT_EQ(report.unexpected, (std::vector<std::string>{"cls.predictions.bias"}));
  EXPECT_TRUE(torch::equal(target->named_parameters()["classifier.weight"], before));
  EXPECT_TRUE(torch::equal(target->named_parameters()["bert.pooler.dense.weight"],
                           source->named_parameters()["bert.pooler.dense.weight"]));
}

TEST_F(HfWeights, BaseModelKeysWithoutPrefixAndTfEraNamesLoad) {
  const auto source = make("tiny-bert", 1), target = make("tiny-bert", 2);
  const auto path = checkpoint(*source, "base.safetensors", [](const std::string& key) {
    if (key.rfind("bert.", 0) != 0) return std::string();  // BertModel.save: no head, no prefix
    std::string k = key.substr(5);
    if (k.size() > 17 && k.compare(k.size() - 17, 17, "LayerNorm.weight") == 0) k.replace(k.size() - 6, 6, "gamma");
    return k;
  });
  const auto report = load_hf_weights(*target, path);
  EXPECT_EQ(report.initialised.size(), 2u);
  EXPECT_TRUE(torch::equal(target->named_parameters()["bert.embeddings.LayerNorm.weight"],
                           source->named_parameters()["bert.embeddings.LayerNorm.weight"]));
}

TEST_F(HfWeights, ShardedCheckpointThroughItsIndex) {
  const auto source = make("tiny-distilbert", 1), target = make("tiny-distilbert", 2);
  json weight_map = json::object();
  std::vector<std::pair<std::string, torch::Tensor>> shard1, shard2;
  int i = 0;
  for (const auto& p : source->named_parameters()) {
    auto& shard = (i++ % 2) ? shard2 : shard1;
    shard.emplace_back(p.key(), p.value());
    weight_map[p.key()] = (&shard == &shard1) ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
  }
  save_safetensors(dir.file("ckpt/model-00001-of-00002.safetensors"), shard1);
  save_safetensors(dir.file("ckpt/model-00002-of-00002.safetensors"), shard2);
  dir.write("ckpt/model.safetensors.index.json", json{{"metadata", json::object()}, {"weight_map", weight_map}}.dump());
  const auto report = load_hf_weights(*target, dir.file("ckpt"));  // the folder finds the index
  EXPECT_EQ(report.files.size(), 2u);
  EXPECT_TRUE(same_parameters(*source, *target));
}

TEST_F(HfWeights, MissingOrMisShapedTensorsAreErrorsNamingThem) {
  const auto source = make("tiny-bert", 1), target = make("tiny-bert", 2);
  const auto missing = checkpoint(*source, "missing.safetensors", [](const std::string& k) {
    return k == "bert.encoder.layer.1.output.dense.weight" ? std::string() : k;
  });
  try {
    load_hf_weights(*target, missing);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bert.encoder.layer.1.output.dense.weight"), std::string::npos) << e.what();
  }
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& p : source->named_parameters()) {
    tensors.emplace_back(p.key(), p.key() == "bert.embeddings.word_embeddings.weight" ? torch::zeros({999, 32}) : p.value());
  }
  save_safetensors(dir.file("shape.safetensors"), tensors);
  try {
    load_hf_weights(*target, dir.file("shape.safetensors"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[999, 32]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[1000, 32]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_hf_weights(*target, dir.path()), Error);  // a folder without a checkpoint
}

// Found by an audit: a BERT *ForMaskedLM checkpoint (tbench's own mlm runs save one) has no pooler,
// and was refused for classification as "lacking" it, where HF starts the pooler fresh. A weight
// stored as integers loaded as 1.0s, and a NaN loaded silently (it failed steps later as a
// diverged loss, blamed on the learning rate).
TEST_F(HfWeights, APoolerlessCheckpointLoadsAndNonFloatOrNonFiniteWeightsAreRefused) {
  const auto source = make("tiny-bert", 1), target = make("tiny-bert", 2);
  const auto masked_lm = checkpoint(*source, "mlm.safetensors", [](const std::string& k) {
    return k.rfind("bert.pooler.", 0) == 0 || k.rfind("classifier.", 0) == 0 ? std::string() : k;
  });
  const auto report = load_hf_weights(*target, masked_lm);
  EXPECT_EQ(report.initialised, (std::vector<std::string>{"bert.pooler.dense.weight", "bert.pooler.dense.bias",
                                                          "classifier.weight", "classifier.bias"}));
  EXPECT_TRUE(torch::equal(target->named_parameters()["bert.embeddings.word_embeddings.weight"],
                           source->named_parameters()["bert.embeddings.word_embeddings.weight"]));

  const auto with = [&](const std::string& file, const torch::Tensor& replacement) {
    std::vector<std::pair<std::string, torch::Tensor>> tensors;
    for (const auto& p : source->named_parameters()) {
      tensors.emplace_back(p.key(), p.key() == "bert.encoder.layer.0.attention.self.query.weight" ? replacement : p.value());
    }
    save_safetensors(dir.file(file), tensors);
    return dir.file(file);
  };
  const auto query = source->named_parameters()["bert.encoder.layer.0.attention.self.query.weight"];
  testing::expect_input_error([&] { load_hf_weights(*target, with("int.safetensors", torch::ones_like(query, torch::kLong))); },
                     {"int.safetensors", "'bert.encoder.layer.0.attention.self.query.weight'", "Long", "floating-point"});
  auto nan = query.clone();
  nan[0][0] = std::numeric_limits<float>::quiet_NaN();
  nan[1][1] = std::numeric_limits<float>::infinity();
  testing::expect_input_error([&] { load_hf_weights(*target, with("nan.safetensors", nan)); },
                     {"nan.safetensors", "query.weight", "2 NaN or infinite"});
}

}  // namespace
}  // namespace tbench
