// The classifiers: HF's parameter counts and names, output shapes, and padding masked as HF does.
#include <gtest/gtest.h>

#include <ATen/record_function.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tbench/errors.hpp"
#include "tbench/models/model_cost.hpp"
#include "tbench/models/bert.hpp"
#include "tbench/models/classifier.hpp"
#include "tbench/models/xlnet.hpp"
#include "tbench/train/precision.hpp"
#include "support/model_inputs.hpp"

namespace tbench {
namespace {

using testing::padded_inputs;
using testing::random_inputs;

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
  EXPECT_EQ(model_cost(shipped_model_config("xlnet-base-cased"), 2, 128).base_params, 116718336);
}

// The analytic counts (used by `tbench models`) equal what the built modules hold, for every
// shipped config: so the HF equality above holds for the modules tbench trains.
TEST(Models, BuiltModulesMatchTheAnalyticCountForEveryShippedConfig) {
  for (const auto& name : shipped_model_names()) {
    const ModelConfig c = shipped_model_config(name);
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

// DistilBERT uses BERT's embeddings without the token-type table, which its checkpoints lack:
// the output is LayerNorm(word + position) alone.
TEST(Models, DistilBertEmbeddingsAreWordPlusPositionThroughLayerNorm) {
  const ModelConfig c = shipped_model_config("tiny-distilbert");
  torch::manual_seed(6);
  const auto model = build_classifier(c, 2);
  for (const auto& name : parameter_names(*model)) EXPECT_EQ(name.find("token_type"), std::string::npos) << name;

  std::map<std::string, torch::Tensor> p;
  for (const auto& item : model->named_parameters()) p[item.key()] = item.value();
  const auto& norm_weight = p.at("distilbert.embeddings.LayerNorm.weight");
  const auto& norm_bias = p.at("distilbert.embeddings.LayerNorm.bias");
  torch::NoGradGuard no_grad;
  // Away from HF's init (1, 0), so a LayerNorm that skipped its weight or bias would be told apart.
  norm_weight.normal_(1.0, 0.3);
  norm_bias.normal_(0.0, 0.3);
  model->eval();

  const ModelInputs in = random_inputs(c, 2, 7);
  const auto positions = torch::arange(7, torch::kLong).unsqueeze(0).expand_as(in.input_ids);
  const auto modules = model->named_modules();
  const auto* embeddings = modules.find("distilbert.embeddings");
  ASSERT_NE(embeddings, nullptr);
  auto* bert_embeddings = (*embeddings)->as<bert::Embeddings>();
  ASSERT_NE(bert_embeddings, nullptr);
  const auto out = bert_embeddings->forward(in.input_ids, /*token_type_ids=*/torch::Tensor(), positions);

  const auto word = torch::embedding(p.at("distilbert.embeddings.word_embeddings.weight"), in.input_ids);
  const auto position = torch::embedding(p.at("distilbert.embeddings.position_embeddings.weight"), positions);
  const auto expected = torch::layer_norm(word + position, {c.hidden_size}, norm_weight, norm_bias, c.layer_norm_eps);
  EXPECT_TRUE(torch::equal(out, expected)) << out << "\n" << expected;
}

// XLNet's names are HF's exactly, nothing more: the attention tensors are bare parameters.
TEST(Models, XLNetParameterNamesAndShapesAreHuggingFaces) {
  const ModelConfig c = shipped_model_config("tiny-xlnet");
  const auto model = build_classifier(c, 3);
  std::set<std::string> expected = {"transformer.word_embedding.weight", "transformer.mask_emb",
                                    "sequence_summary.summary.weight",  "sequence_summary.summary.bias",
                                    "logits_proj.weight",               "logits_proj.bias"};
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string layer = "transformer.layer." + std::to_string(i) + ".";
    for (const char* name : {"q", "k", "v", "o", "r", "r_r_bias", "r_s_bias", "r_w_bias", "seg_embed",
                             "layer_norm.weight", "layer_norm.bias"}) {
      expected.insert(layer + "rel_attn." + name);
    }
    for (const char* name : {"layer_1.weight", "layer_1.bias", "layer_2.weight", "layer_2.bias", "layer_norm.weight",
                             "layer_norm.bias"}) {
      expected.insert(layer + "ff." + name);
    }
  }
  EXPECT_EQ(parameter_names(*model), expected);

  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& p : model->named_parameters()) shapes[p.key()] = p.value().sizes().vec();
  const int64_t d = c.hidden_size, n = c.num_heads, h = c.head_dim();
  EXPECT_EQ(shapes["transformer.mask_emb"], (std::vector<int64_t>{1, 1, d}));
  EXPECT_EQ(shapes["transformer.layer.1.rel_attn.q"], (std::vector<int64_t>{d, n, h}));
  EXPECT_EQ(shapes["transformer.layer.1.rel_attn.r"], (std::vector<int64_t>{d, n, h}));
  EXPECT_EQ(shapes["transformer.layer.0.rel_attn.r_w_bias"], (std::vector<int64_t>{n, h}));
  EXPECT_EQ(shapes["transformer.layer.0.rel_attn.seg_embed"], (std::vector<int64_t>{2, n, h}));
  EXPECT_EQ(shapes["transformer.layer.0.ff.layer_1.weight"], (std::vector<int64_t>{c.intermediate_size, d}));
  EXPECT_EQ(shapes["logits_proj.weight"], (std::vector<int64_t>{3, d}));
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

// HF's _init_weights for XLNet also draws mask_emb and every attention tensor from N(0, 0.02).
TEST(Models, XLNetHfInitialisation) {
  torch::manual_seed(0);
  const ModelConfig c = shipped_model_config("tiny-xlnet");
  const auto model = build_classifier(c, 2);
  for (const auto& p : model->named_parameters()) {
    const std::string& name = p.key();
    const auto& value = p.value();
    if (name.find("layer_norm.weight") != std::string::npos) {
      EXPECT_TRUE(torch::all(value == 1).item<bool>()) << name;
    } else if (name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0) {
      EXPECT_TRUE(torch::all(value == 0).item<bool>()) << name;
    } else {
      EXPECT_NEAR(value.mean().item<double>(), 0.0, 0.015) << name;
      EXPECT_NEAR(value.std().item<double>(), c.initializer_range, 0.01) << name;
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

// Padding (mask 0) must not change the logits: HF's additive mask. BERT-like models read the
// first token and are padded on the right; XLNet reads the last token, and its tokenizer pads on
// the left. There the real tokens' distances to each other stay the same, so with the padding
// masked the logits are unchanged too.
TEST_P(ArchitectureTest, PaddingDoesNotChangeTheLogits) {
  const ModelConfig c = shipped_model_config(GetParam());
  torch::manual_seed(1);
  const auto model = build_classifier(c, 2);
  model->eval();
  torch::NoGradGuard no_grad;
  const ModelInputs short_inputs = random_inputs(c, 2, 10);
  const auto join = [&](const torch::Tensor& real, const torch::Tensor& padding) {
    return c.arch == Architecture::xlnet ? torch::cat({padding, real}, 1) : torch::cat({real, padding}, 1);
  };
  ModelInputs padded;
  padded.input_ids = join(short_inputs.input_ids, torch::full({2, 6}, c.pad_token_id, torch::kLong));
  padded.attention_mask = join(short_inputs.attention_mask, torch::zeros({2, 6}, torch::kLong));
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

// Weights larger than HF's init make every attention term (positions, segments) move the logits
// far above float noise, so a wrong term cannot hide below a test's tolerance.
void spread_weights(torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  for (auto& p : model.named_parameters()) {
    if (p.key().find("layer_norm") == std::string::npos) p.value().normal_(0.0, 0.3);
  }
}

// A layer setting that must compute the same network: same weights, the padded inputs, and the
// logits and every parameter's gradient must be those of the model built from `base`, in eval
// mode (no dropout draws to differ), to `rtol` (a wrong row or position moves them by far more).
// `rtol` holds the logits, and ten times it each gradient element. Where a gradient passes through
// bf16 matmuls (`bf16_gradients`), a float difference of 1e-7 may round an element of it to the
// next bf16 value, and that rounding carries on through the matmuls behind it, so each gradient is
// held instead within four bf16 steps of its largest element (4 × 2⁻⁸, 1.6 %; + 1e-3). How many
// steps it takes depends on the CPU's bf16 GEMM kernels: 1 % held on the machines this was written
// on, and an AVX2-only AMD EPYC put DistilBERT's out_lin.weight gradient two steps (1.3 %) off; a
// wrong row or a lost gradient term moves one by far more.
void expect_same_logits_and_gradients(const ModelConfig& base, const ModelConfig& variant, const ModelInputs& in,
                                      double rtol = 1e-5, bool bf16_gradients = false) {
  torch::manual_seed(5);
  const auto full = build_classifier(base, 3);
  spread_weights(*full);
  const auto other = build_classifier(variant, 3);
  {
    torch::NoGradGuard no_grad;
    const auto source = full->named_parameters();
    for (auto& p : other->named_parameters()) p.value().copy_(source[p.key()]);
  }
  full->eval();
  other->eval();
  const auto labels = torch::tensor({0, 2, 1}, torch::kLong);

  const auto full_logits = full->forward(in);
  const auto other_logits = other->forward(in);
  ASSERT_TRUE(torch::allclose(other_logits, full_logits, rtol, 1e-6)) << other_logits << "\nfull:\n" << full_logits;
  torch::nn::functional::cross_entropy(full_logits, labels).backward();
  torch::nn::functional::cross_entropy(other_logits, labels).backward();
  const auto full_params = full->named_parameters();
  for (const auto& p : other->named_parameters()) {
    const auto& expected = full_params[p.key()].grad();
    if (!expected.defined()) {
      EXPECT_FALSE(p.value().grad().defined()) << p.key();
      continue;
    }
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    const double largest = expected.abs().max().item<double>();
    const double difference = (p.value().grad() - expected).abs().max().item<double>();
    if (bf16_gradients) {
      constexpr double kBf16Step = 1.0 / 256;  // bf16's 8-bit significand: 2⁻⁸ relative
      EXPECT_LE(difference, 1e-3 + 4 * kBf16Step * largest) << p.key() << ": largest element " << largest;
    } else {
      EXPECT_TRUE(torch::allclose(p.value().grad(), expected, 10 * rtol, 1e-6))
          << p.key() << ": " << difference << " off, largest element " << largest;
    }
  }
}

// The unpadded layout's moves: rows of the real tokens in sample-then-position order, back to the
// grid with zeros at the padding, and one position of every sample.
TEST(TokenLayout, MovesRealTokensBetweenRowsAndTheGrid) {
  ModelInputs in;
  in.attention_mask = torch::tensor({1, 1, 1, 0, 1, 1, 0, 0}, torch::kLong).view({2, 4});
  in.input_ids = torch::arange(8, torch::kLong).view({2, 4});
  in.has_padding = true;
  const auto layout = layers::TokenLayout::of(in, /*unpad=*/true);
  ASSERT_TRUE(layout.unpadded());
  const auto ids = layout.to_rows(in.input_ids);
  EXPECT_TRUE(torch::equal(ids, torch::tensor({0, 1, 2, 4, 5}, torch::kLong).view({1, 5}))) << ids;
  EXPECT_FALSE(layout.to_rows(torch::Tensor()).defined());

  const auto rows = torch::arange(10, torch::kFloat).view({1, 5, 2}) + 1;
  const auto grid = layout.to_grid(rows);
  const auto expected = torch::tensor({1, 2, 3, 4, 5, 6, 0, 0, 7, 8, 9, 10, 0, 0, 0, 0}, torch::kFloat).view({2, 4, 2});
  EXPECT_TRUE(torch::equal(grid, expected)) << grid;
  EXPECT_TRUE(torch::equal(layout.to_rows(grid), rows));
  EXPECT_TRUE(torch::equal(layout.at_position(rows, 1), torch::tensor({3, 4, 9, 10}, torch::kFloat).view({2, 1, 2})));

  // A batch without padding, or a model that does not unpad, keeps the padded layout.
  in.has_padding = false;
  EXPECT_FALSE(layers::TokenLayout::of(in, true).unpadded());
  in.has_padding = true;
  const auto padded = layers::TokenLayout::of(in, false);
  EXPECT_FALSE(padded.unpadded());
  EXPECT_TRUE(torch::equal(padded.to_rows(in.input_ids), in.input_ids));
  EXPECT_TRUE(torch::equal(padded.at_position(grid, 1), grid.narrow(1, 1, 1)));
}

// Attending by sample, the layout gives each sample's rows and, where every sample's real tokens are
// consecutive positions, where each starts. XLNet's relative attention needs that: a mask with a
// hole inside a sample is refused, not run on the grid behind the step's FLOPs.
TEST(TokenLayout, FindsWhereEachSampleStartsForAttentionBySample) {
  ModelInputs in;
  in.attention_mask = torch::tensor({1, 1, 1, 0, 0, 0, 1, 1}, torch::kLong).view({2, 4});
  in.input_ids = torch::arange(8, torch::kLong).view({2, 4});
  in.has_padding = true;
  EXPECT_TRUE(layers::TokenLayout::of(in, true).sample_starts().empty());  // on the grid: not needed
  const auto layout = layers::TokenLayout::of(in, true, /*by_sample=*/true);
  EXPECT_EQ(layout.sample_rows(), (std::vector<std::pair<int64_t, int64_t>>{{0, 3}, {3, 2}}));
  EXPECT_EQ(layout.sample_starts(), (std::vector<int64_t>{0, 2}));

  in.attention_mask = torch::tensor({1, 0, 1, 1, 1, 1, 1, 0}, torch::kLong).view({2, 4});
  const auto holed = layers::TokenLayout::of(in, true, true);
  EXPECT_EQ(holed.sample_rows(), (std::vector<std::pair<int64_t, int64_t>>{{0, 3}, {3, 3}}));
  EXPECT_TRUE(holed.sample_starts().empty());

  ModelConfig c = shipped_model_config("tiny-xlnet");
  c.unpad = c.unpad_attention_by_sample = true;
  in.input_ids = torch::randint(5, c.vocab_size, {2, 4}, torch::kLong);
  in.token_type_ids = torch::zeros({2, 4}, torch::kLong);
  const auto model = build_classifier(c, 2);
  model->eval();
  EXPECT_THROW(model->forward(in), c10::Error);
}

// model.sparse_last_layer: the last layer at the head's position only.
TEST_P(ArchitectureTest, SparseLastLayerGivesTheFullLayersLogitsAndGradients) {
  const ModelConfig c = shipped_model_config(GetParam());
  ModelConfig sparse = c;
  sparse.sparse_last_layer = true;
  expect_same_logits_and_gradients(c, sparse, padded_inputs(c));
}

// model.unpad: the per-token work on the real tokens' rows, attention on the padded grid or (as on
// the CPU) sample by sample, XLNet's with its left padding; with the positions found from the mask or
// listed by the loader, with a sparse last layer, and (BERT family) with the fused QKV projection
// and residual LayerNorm. The GEMMs run over other row counts, so BLAS may sum in another order:
// LibTorch 2.6's differed from the padded model's in the fifth digit of distilbert's fused logits
// (1.13's did not).
TEST_P(ArchitectureTest, UnpaddedTokensGiveThePaddedLogitsAndGradients) {
  const ModelConfig c = shipped_model_config(GetParam());
  const double rtol = 1e-4;
  // A batch whose longest sample fills the width, and one where every sample is shorter (XLNet's
  // samples then read a window of encodings that starts inside the grid's).
  for (const auto& lengths : {std::vector<int64_t>{12, 9, 5}, std::vector<int64_t>{9, 5, 7}}) {
    for (const bool by_sample : {false, true}) {
      SCOPED_TRACE(by_sample ? "attention sample by sample" : "attention on the grid");
      SCOPED_TRACE("longest " + std::to_string(*std::max_element(lengths.begin(), lengths.end())) + " of 12");
      ModelConfig unpadded = c;
      unpadded.unpad = true;
      unpadded.unpad_attention_by_sample = by_sample;
      ModelInputs in = padded_inputs(c, lengths);
      {
        SCOPED_TRACE("positions found from the mask");
        expect_same_logits_and_gradients(c, unpadded, in, rtol);
      }
      in.token_positions = in.attention_mask.reshape({-1}).nonzero().reshape({-1});
      {
        SCOPED_TRACE("positions listed by the loader");
        expect_same_logits_and_gradients(c, unpadded, in, rtol);
      }
      {
        SCOPED_TRACE("with a sparse last layer");
        ModelConfig sparse = unpadded;
        sparse.sparse_last_layer = true;
        expect_same_logits_and_gradients(c, sparse, in, rtol);
      }
      if (c.arch != Architecture::xlnet) {
        SCOPED_TRACE("with the fused QKV projection and residual LayerNorm");
        ModelConfig fused = unpadded;
        fused.fused_qkv = true;
        fused.fused_layer_norm = true;
        expect_same_logits_and_gradients(c, fused, in, rtol);
      }
    }
  }
}

// Calls check(plain, fused) under CPU bf16 autocast for each tiny model with a fused residual
// LayerNorm (XLNet has none): its shipped config, and the same with model.fused_layer_norm.
template <typename Check>
void for_each_fused_norm_model_under_autocast(Check check) {
  for (const char* name : {"tiny-bert", "tiny-distilbert", "tiny-roberta"}) {
    SCOPED_TRACE(name);
    const ModelConfig plain = shipped_model_config(name);
    ModelConfig fused = plain;
    fused.fused_layer_norm = true;
    AutocastGuard autocast(Precision::bf16, torch::kCPU);
    check(plain, fused);
  }
}

// Under autocast the fused residual LayerNorm hands each block's matmuls its own bf16 copy of the
// float stream, and its one-pass backward merges the two gradients: the logits and gradients are
// the unfused model's, whose matmuls cast the stream themselves, within bf16's rounding.
TEST(FusedLayerNorm, UnderAutocastGivesTheCastingModelsLogitsAndGradients) {
  for_each_fused_norm_model_under_autocast([](const ModelConfig& plain, const ModelConfig& fused) {
    expect_same_logits_and_gradients(plain, fused, padded_inputs(plain), 2e-2, /*bf16_gradients=*/true);
  });
}

// The activations a forward casts from float to bf16 (aten::_to_copy of a 3-D tensor, [B, S, H]
// or the unpadded rows [1, T, H]; the weights are 1-D and 2-D), counted by a RecordFunction
// callback on this thread.
int casts_counted = 0;  // a callback is a plain function pointer, so the count lives here

int activation_casts_in_forward(SequenceClassifier& model, const ModelInputs& in) {
  casts_counted = 0;
  const auto handle = at::addThreadLocalCallback(
      at::RecordFunctionCallback([](const at::RecordFunction& fn) -> std::unique_ptr<at::ObserverContext> {
        if (std::string(fn.name()) != "aten::_to_copy") return nullptr;
        const auto inputs = fn.inputs();  // self, then dtype (optional), ...
        if (inputs.size() < 2 || !inputs[0].isTensor() || inputs[1].isNone()) return nullptr;
        const auto& self = inputs[0].toTensor();
        if (self.dim() == 3 && self.scalar_type() == torch::kFloat && inputs[1].toScalarType() == torch::kBFloat16) {
          ++casts_counted;
        }
        return nullptr;
      }).needsInputs(true));
  model.forward(in);
  at::removeCallback(handle);
  return casts_counted;
}

// What the copy saves: every matmul that reads a fused norm's output under autocast finds it in
// bf16 already and casts nothing. A block's norms feed its FFN's first matmul and the next block's
// three projections (query, key, value), so the fused model casts 1 + 3 activations fewer a block,
// less the three projections of the first block, which read the embeddings.
TEST(FusedLayerNorm, UnderAutocastSavesTheMatmulsCasts) {
  for_each_fused_norm_model_under_autocast([](const ModelConfig& plain, const ModelConfig& fused) {
    const auto in = padded_inputs(plain);
    const int plain_casts = activation_casts_in_forward(*build_classifier(plain, 3), in);
    const int fused_casts = activation_casts_in_forward(*build_classifier(fused, 3), in);
    EXPECT_EQ(plain_casts - fused_casts, 4 * static_cast<int>(plain.num_layers) - 3) << plain_casts << " casts unfused";
    EXPECT_EQ(fused_casts, 3) << "only the embeddings, into the first block's three projections";
  });
}

// Unpadded, nothing is computed at the padding: with the padding token's embedding poisoned
// (NaN), the padded model's logits turn NaN for every sample with padding (its padding rows reach
// each score, masked, and NaN stays NaN under the mask), while the unpadded model's stay those of
// the clean weights.
TEST_P(ArchitectureTest, UnpaddedModelComputesNothingAtThePadding) {
  ModelConfig c = shipped_model_config(GetParam());
  const ModelInputs in = padded_inputs(c);
  torch::manual_seed(5);
  const auto clean = build_classifier(c, 3);
  spread_weights(*clean);
  clean->eval();
  torch::NoGradGuard no_grad;
  const auto expected = clean->forward(in);
  for (auto& p : clean->named_parameters()) {
    if (p.key().find("word_embedding") != std::string::npos) p.value()[c.pad_token_id].fill_(NAN);
  }
  const auto poisoned_rows = torch::isnan(clean->forward(in)).any(1);  // the first row has no padding
  EXPECT_TRUE(torch::equal(poisoned_rows, torch::tensor({false, true, true}))) << poisoned_rows;
  c.unpad = true;
  for (const bool by_sample : {false, true}) {
    c.unpad_attention_by_sample = by_sample;
    const auto unpadded = build_classifier(c, 3);
    const auto source = clean->named_parameters();
    for (auto& p : unpadded->named_parameters()) p.value().copy_(source[p.key()]);
    unpadded->eval();
    const auto logits = unpadded->forward(in);
    EXPECT_TRUE(torch::allclose(logits, expected, 1e-4, 1e-6)) << by_sample << ": " << logits << "\nclean:\n" << expected;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, ArchitectureTest,
                         ::testing::Values("tiny-bert", "tiny-distilbert", "tiny-roberta", "tiny-xlnet"));

// rel_shift turns scores against the encoded distances S .. 1-S into scores for distance i - j.
// Fill each column with the distance it encodes (plus a row tag) and read the shifted result.
TEST(XLNet, RelShiftPutsDistanceIMinusJAtIJ) {
  const int64_t s = 5;
  const auto distances = xlnet::relative_positions(s, s);
  ASSERT_EQ(distances.size(0), 2 * s);
  EXPECT_EQ(distances[0].item<float>(), static_cast<float>(s));
  EXPECT_EQ(distances[2 * s - 1].item<float>(), static_cast<float>(1 - s));
  const auto row = torch::arange(s, torch::kFloat).view({1, 1, s, 1});
  const auto scores = (distances.view({1, 1, 1, 2 * s}) + 100 * row).expand({2, 3, s, 2 * s}).contiguous();
  const auto shifted = xlnet::rel_shift(scores, s);
  ASSERT_EQ(shifted.sizes(), (std::vector<int64_t>{2, 3, s, s}));
  const auto i = torch::arange(s, torch::kFloat).view({s, 1}), j = torch::arange(s, torch::kFloat).view({1, s});
  const auto expected = (i - j + 100 * i).expand({2, 3, s, s});
  EXPECT_TRUE(torch::equal(shifted, expected)) << shifted[0][0];
}

TEST(XLNet, PositionalEncodingIsSinesThenCosines) {
  const auto enc = xlnet::positional_encoding(torch::tensor({0.0F, 3.0F}), 8);
  ASSERT_EQ(enc.sizes(), (std::vector<int64_t>{2, 8}));
  for (int64_t k = 0; k < 4; ++k) {
    const double angle = 3.0 / std::pow(10000.0, 2.0 * k / 8);
    EXPECT_FLOAT_EQ(enc[0][k].item<float>(), 0.0F);
    EXPECT_FLOAT_EQ(enc[0][4 + k].item<float>(), 1.0F);
    EXPECT_NEAR(enc[1][k].item<float>(), std::sin(angle), 1e-6);
    EXPECT_NEAR(enc[1][4 + k].item<float>(), std::cos(angle), 1e-6);
  }
}

// Segments are relative in XLNet: only whether two tokens' types differ enters the scores. So
// renaming every segment changes nothing, while splitting the sequence in two does.
TEST(XLNet, TokenTypesEnterThroughTheSegmentBias) {
  const ModelConfig c = shipped_model_config("tiny-xlnet");
  torch::manual_seed(4);
  const auto model = build_classifier(c, 2);
  spread_weights(*model);
  model->eval();
  torch::NoGradGuard no_grad;
  ModelInputs in = random_inputs(c, 2, 10);
  const auto one_segment = model->forward(in);
  in.token_type_ids.fill_(1);
  EXPECT_TRUE(torch::allclose(one_segment, model->forward(in), 1e-5, 1e-6));
  in.token_type_ids.narrow(1, 0, 5).fill_(0);
  EXPECT_FALSE(torch::allclose(one_segment, model->forward(in), 1e-3, 1e-3));
}

// XLNetForSequenceClassification written out the way HF's modeling_xlnet computes it: [S, B]
// layout, einsums, a one-hot segment matrix, the padding mask with its unmasked diagonal and
// -1e30, and, instead of rel_shift, the sinusoid of each distance i - j built directly
// (direction -1 builds j - i instead). The model's batched path (shifted scores, broadcast segment
// bias) must give the same logits.
torch::Tensor xlnet_reference_logits(const torch::nn::Module& model, const ModelConfig& c, const ModelInputs& in,
                                     int64_t direction = 1) {
  std::map<std::string, torch::Tensor> p;
  for (const auto& item : model.named_parameters()) p[item.key()] = item.value();
  const int64_t s = in.input_ids.size(1), d = c.hidden_size;
  auto h = torch::embedding(p.at("transformer.word_embedding.weight"), in.input_ids.t());  // [i, b, h]

  const auto i = torch::arange(s).view({s, 1}), j = torch::arange(s).view({1, s});
  const auto inv_freq = 1.0 / torch::pow(10000.0, torch::arange(0, d, 2).to(torch::kFloat) / d);
  const auto angle = (direction * (i - j)).to(torch::kFloat).unsqueeze(-1) * inv_freq;  // [i, j, d/2]
  const auto r = torch::cat({torch::sin(angle), torch::cos(angle)}, -1);  // [i, j, h]: R_{i-j}

  const auto input_mask = 1.0 - in.attention_mask.t().to(torch::kFloat);  // [j, b]
  const auto non_tgt = ((input_mask.unsqueeze(0) - torch::eye(s).unsqueeze(-1)) > 0).to(torch::kFloat);  // [i, j, b]
  const auto types = in.token_type_ids.t();
  const auto seg_mat =
      torch::one_hot(types.unsqueeze(1).ne(types.unsqueeze(0)).to(torch::kLong), 2).to(torch::kFloat);  // [i, j, b, s]

  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string prefix = "transformer.layer." + std::to_string(l) + ".";
    const auto w = [&](const std::string& name) { return p.at(prefix + name); };
    const auto q = torch::einsum("ibh,hnd->ibnd", {h, w("rel_attn.q")});
    const auto k = torch::einsum("ibh,hnd->ibnd", {h, w("rel_attn.k")});
    const auto v = torch::einsum("ibh,hnd->ibnd", {h, w("rel_attn.v")});
    const auto k_r = torch::einsum("ijh,hnd->ijnd", {r, w("rel_attn.r")});
    const auto ac = torch::einsum("ibnd,jbnd->bnij", {q + w("rel_attn.r_w_bias"), k});
    const auto bd = torch::einsum("ibnd,ijnd->bnij", {q + w("rel_attn.r_r_bias"), k_r});
    const auto seg_scores = torch::einsum("ibnd,snd->ibns", {q + w("rel_attn.r_s_bias"), w("rel_attn.seg_embed")});
    const auto ef = torch::einsum("ijbs,ibns->bnij", {seg_mat, seg_scores});
    auto score = (ac + bd + ef) * (1.0 / std::sqrt(static_cast<double>(c.head_dim())));
    score = score - 1e30 * torch::einsum("ijb->bij", {non_tgt}).unsqueeze(1);
    const auto vec = torch::einsum("bnij,jbnd->ibnd", {torch::softmax(score, 3), v});
    const auto out = torch::einsum("ibnd,hnd->ibh", {vec, w("rel_attn.o")});
    h = torch::layer_norm(out + h, {d}, w("rel_attn.layer_norm.weight"), w("rel_attn.layer_norm.bias"),
                          c.layer_norm_eps);
    const auto ff = torch::linear(torch::gelu(torch::linear(h, w("ff.layer_1.weight"), w("ff.layer_1.bias"))),
                                  w("ff.layer_2.weight"), w("ff.layer_2.bias"));
    h = torch::layer_norm(ff + h, {d}, w("ff.layer_norm.weight"), w("ff.layer_norm.bias"), c.layer_norm_eps);
  }
  const auto summary = torch::tanh(
      torch::linear(h[s - 1], p.at("sequence_summary.summary.weight"), p.at("sequence_summary.summary.bias")));
  return torch::linear(summary, p.at("logits_proj.weight"), p.at("logits_proj.bias"));
}

TEST(XLNet, MatchesAReferenceWrittenLikeHuggingFaces) {
  const ModelConfig c = shipped_model_config("tiny-xlnet");
  torch::manual_seed(5);
  const auto model = build_classifier(c, 3);
  spread_weights(*model);
  model->eval();
  torch::NoGradGuard no_grad;
  ModelInputs in = random_inputs(c, 3, 9);
  // Left padding in two rows, two segments plus XLNet's <cls> segment (2) on the last token.
  in.input_ids.narrow(1, 0, 3)[0].fill_(c.pad_token_id);
  in.attention_mask.narrow(1, 0, 3)[0].fill_(0);
  in.input_ids.narrow(1, 0, 1)[2].fill_(c.pad_token_id);
  in.attention_mask.narrow(1, 0, 1)[2].fill_(0);
  in.token_type_ids.narrow(1, 5, 3).fill_(1);
  in.token_type_ids.narrow(1, 8, 1).fill_(2);
  const auto logits = model->forward(in);
  const auto reference = xlnet_reference_logits(*model, c, in);
  EXPECT_TRUE(torch::allclose(logits, reference, 1e-4, 1e-5)) << logits << "\n" << reference;
  // The check can fail: a shift that scored distance j - i instead would be told apart.
  EXPECT_FALSE(torch::allclose(logits, xlnet_reference_logits(*model, c, in, -1), 1e-2, 1e-2));
}

// XLNet configs that ask for something HF's fine-tuning does not do are refused, naming the key.
TEST(XLNet, ConfigsOutsideFineTuningAreRefusedByKey) {
  const ModelConfig base = shipped_model_config("xlnet-base-cased");
  EXPECT_EQ(base.hidden_size, 768);
  EXPECT_EQ(base.head_dim(), 64);
  EXPECT_EQ(base.pad_token_id, 5);
  EXPECT_DOUBLE_EQ(base.classifier_dropout, 0.1);
  const auto error_for = [&](const nlohmann::json& changes) {
    nlohmann::json raw = base.raw;
    for (const auto& [key, value] : changes.items()) raw[key] = value;
    try {
      parse_model_config(raw.dump(), "x", "x/config.json");
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::bad_input);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::vector<std::pair<std::string, nlohmann::json>> refused = {
      {"attn_type", {{"attn_type", "uni"}}},
      {"bi_data", {{"bi_data", true}}},
      {"clamp_len", {{"clamp_len", 512}}},
      {"d_head", {{"d_head", 32}}},
      {"n_head", {{"n_head", 7}}},
      {"d_model", {{"d_model", 9}, {"n_head", 3}, {"d_head", 3}}},
      {"summary_type", {{"summary_type", "first"}}},
      {"summary_use_proj", {{"summary_use_proj", false}}},
      {"summary_activation", {{"summary_activation", nullptr}}},
      {"summary_proj_to_labels", {{"summary_proj_to_labels", true}}},
      {"summary_first_dropout", {{"summary_first_dropout", 0.1}}},
      {"ff_activation", {{"ff_activation", "swish"}}}};
  for (const auto& [key, changes] : refused) {
    const std::string message = error_for(changes);
    EXPECT_NE(message.find("x/config.json: " + key + ":"), std::string::npos) << key << ": " << message;
  }
  // Settings HF ignores when fine-tuning, or that mean "off", are accepted.
  EXPECT_EQ(error_for({{"clamp_len", 0}}), "no error");
  EXPECT_EQ(error_for({{"mem_len", 512}}), "no error");
  EXPECT_EQ(error_for({{"same_length", true}}), "no error");
  EXPECT_EQ(error_for({{"summary_first_dropout", 0.0}}), "no error");
}

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

// A sparse last layer computes one position's query, output projection, MLP and attention row
// instead of S; XLNet's also reads S encodings of distance instead of 2S. Masked-LM heads read every
// position, so their cost does not change.
TEST(ModelCost, SparseLastLayerSavesAllButOnePositionOfTheLastLayer) {
  const int64_t s = 128;
  ModelConfig bert = shipped_model_config("bert-base-cased");
  const double h = 768, f = 3072;
  const double full = model_cost(bert, 2, s).forward_flops_per_sample;
  bert.sparse_last_layer = true;
  const double saved = full - model_cost(bert, 2, s).forward_flops_per_sample;
  EXPECT_NEAR(saved, (s - 1) * (2 * 2 * h * h + 2 * 2 * h * f + 2 * 2 * s * h), 1.0);
  EXPECT_NEAR(saved / full, 0.83 / 12, 0.01);  // about 10 of a layer's 12 h^2 per token, in 1 of 12 layers
  EXPECT_DOUBLE_EQ(model_cost(bert, 2, s, Task::mlm).forward_flops_per_sample,
                   [&] { bert.sparse_last_layer = false; return model_cost(bert, 2, s, Task::mlm).forward_flops_per_sample; }());

  ModelConfig xlnet = shipped_model_config("xlnet-base-cased");
  const double xl_full = model_cost(xlnet, 2, s).forward_flops_per_sample;
  xlnet.sparse_last_layer = true;
  const double xl_saved = xl_full - model_cost(xlnet, 2, s).forward_flops_per_sample;
  const double rows = s - 1;
  const double expected = rows * (2 * 2 * h * h + 2 * 2 * h * f)  // q, o and the FFN at the other rows
                          + 2 * h * h * s                          // r over S encodings, not 2S
                          + rows * 2 * s * h * 2                   // ac and probabilities x values
                          + (2.0 * s * 2 * s - 2.0 * s) * h        // bd: S x 2S scores before the shift; 1 x S
                          + rows * 2 * 2 * h;                      // ef
  EXPECT_NEAR(xl_saved, expected, 1.0);
}

// model.unpad skips, at each padding token, the projections and the MLP of every layer: 12 h^2
// per layer for BERT (Q, K, V, O and the 4h-wide MLP), trained at 3x the forward. A sparse last
// layer computes only a key and a value there. Attention stays on the padded grid, so this is
// also what one more token adds to a sample, less the attention it adds.
TEST(ModelCost, UnpaddingSavesTheProjectionsAndMlpOfEveryPaddingToken) {
  ModelConfig bert = shipped_model_config("bert-base-cased");
  const double h = 768, f = 3072, layers = 12;
  EXPECT_NEAR(per_token_train_flops(bert), 3 * layers * (2 * 4 * h * h + 2 * 2 * h * f), 1.0);
  const int64_t s = 100;
  const double one_more = model_cost(bert, 2, s + 1).train_flops_per_sample - model_cost(bert, 2, s).train_flops_per_sample;
  const double attention_added = 3 * layers * 2 * 2 * h * (2.0 * s + 1);  // a row and a column of QK^T and PV
  EXPECT_NEAR(per_token_train_flops(bert), one_more - attention_added, 1.0);
  bert.sparse_last_layer = true;
  EXPECT_NEAR(per_token_train_flops(bert), 3 * ((layers - 1) * (2 * 4 * h * h + 2 * 2 * h * f) + 2 * 2 * h * h), 1.0);

  const ModelConfig xlnet = shipped_model_config("xlnet-base-cased");
  EXPECT_NEAR(per_token_train_flops(xlnet), 3 * layers * (2 * 4 * h * h + 2 * 2 * h * f), 1.0);  // q, k, v, o: r is per distance
}

// Unpadded attention sample by sample: each sample's L queries score L keys, not the grid's S x S
// (QK^T and PV: 4h FLOPs a pair, every layer, trained at 3x), and a sparse last layer's one query
// L keys, not S. On the grid, nothing is saved.
TEST(ModelCost, AttentionBySampleSavesThePaddingsScores) {
  ModelConfig bert = shipped_model_config("bert-base-cased");
  const double h = 768, layers = 12, s = 128;
  const std::vector<int64_t> lengths{128, 40, 7};
  bert.unpad = true;
  EXPECT_EQ(attention_by_sample_train_flops_saved(bert, 128, lengths), 0.0);
  bert.unpad_attention_by_sample = true;
  const double pairs = (s * s - 128.0 * 128) + (s * s - 40.0 * 40) + (s * s - 7.0 * 7);
  EXPECT_NEAR(attention_by_sample_train_flops_saved(bert, 128, lengths), 3 * layers * 4 * h * pairs, 1.0);
  bert.sparse_last_layer = true;
  const double last = (s - 128) + (s - 40) + (s - 7);
  EXPECT_NEAR(attention_by_sample_train_flops_saved(bert, 128, lengths), 3 * 4 * h * ((layers - 1) * pairs + last), 1.0);
}

// XLNet without dropout projects the distances' encodings (2S of them, S for a sparse last layer's
// one row) once for the batch, not once per sample: 2 h^2 FLOPs an encoding, trained at 3x. On the
// grid every sample's copy is S's, and all but one are saved; by sample each reads its own length's
// and the batch projects the longest's once. With dropout each sample draws its own; other models
// have none.
TEST(ModelCost, XlnetWithoutDropoutProjectsTheEncodingsOncePerBatch) {
  ModelConfig xlnet = shipped_model_config("xlnet-base-cased");
  const double h = 768, layers = 12, s = 128, batch = 8;
  const std::vector<int64_t> grid(8, 128), one(1, 128);
  EXPECT_EQ(shared_encodings_train_flops_saved(xlnet, 128, grid, false), 0.0);  // dropout drawn per sample
  xlnet.dropout_in_training = false;
  const double per_copy = 3 * layers * 2 * h * h * 2 * s;
  EXPECT_NEAR(shared_encodings_train_flops_saved(xlnet, 128, grid, false), (batch - 1) * per_copy, 1.0);
  EXPECT_EQ(shared_encodings_train_flops_saved(xlnet, 128, one, false), 0.0);
  const std::vector<int64_t> lengths{40, 128, 7};  // by sample: 40's and 7's copies saved
  EXPECT_NEAR(shared_encodings_train_flops_saved(xlnet, 128, lengths, /*by_sample=*/true),
              3 * layers * 2 * h * h * 2 * (40 + 7), 1.0);
  EXPECT_EQ(shared_encodings_train_flops_saved(xlnet, 128, {40}, true), 0.0);
  xlnet.sparse_last_layer = true;
  EXPECT_NEAR(shared_encodings_train_flops_saved(xlnet, 128, grid, false),
              (batch - 1) * 3 * 2 * h * h * ((layers - 1) * 2 * s + s), 1.0);
  EXPECT_NEAR(shared_encodings_train_flops_saved(xlnet, 128, lengths, true),
              3 * 2 * h * h * ((layers - 1) * 2 * (40 + 7) + (40 + 7)), 1.0);
  xlnet.sparse_last_layer = false;
  xlnet.dropout_in_training = true;
  xlnet.hidden_dropout = 0;
  EXPECT_NEAR(shared_encodings_train_flops_saved(xlnet, 128, grid, false), (batch - 1) * per_copy, 1.0);

  ModelConfig bert = shipped_model_config("bert-base-cased");
  bert.dropout_in_training = false;
  EXPECT_EQ(shared_encodings_train_flops_saved(bert, 128, grid, false), 0.0);
  // A batch's savings: unpadding's and the shared encodings' (by sample where the batch has padding).
  xlnet.unpad = xlnet.unpad_attention_by_sample = true;
  const std::vector<int64_t> full{128, 128}, padded{128, 40};
  EXPECT_NEAR(batch_train_flops_saved(xlnet, 128, full, {}), shared_encodings_train_flops_saved(xlnet, 128, full, false), 1.0);
  EXPECT_NEAR(batch_train_flops_saved(xlnet, 128, padded, {}),
              unpad_train_flops_saved(xlnet, 128, padded) + 3 * layers * 2 * h * h * 2 * 40, 1.0);
}

// XLNet by sample also encodes only the sample's own distances: per layer and sample, QK^T and PV
// (2h FLOPs a pair each), the position scores against 2L encodings (4h a query and key), the
// segment scores (4h a query) and the r projection of 2L encodings (4h^2 a token); a sparse last
// layer's one query reads L encodings (2h^2 a token) and scores them (2h).
TEST(ModelCost, XlnetAttentionBySampleSavesThePaddingsScoresAndDistances) {
  ModelConfig xlnet = shipped_model_config("xlnet-base-cased");
  const double h = 768, layers = 12, s = 128;
  const std::vector<int64_t> lengths{128, 40, 7};
  xlnet.unpad = true;
  xlnet.unpad_attention_by_sample = true;
  double pairs = 0, tokens = 0;
  for (const double l : {128.0, 40.0, 7.0}) pairs += s * s - l * l, tokens += s - l;
  const double per_layer = 8 * h * pairs + 4 * h * tokens + 4 * h * h * tokens;
  EXPECT_NEAR(attention_by_sample_train_flops_saved(xlnet, 128, lengths), 3 * layers * per_layer, 1.0);
  xlnet.sparse_last_layer = true;
  const double last = (6 * h + 2 * h * h) * tokens;
  EXPECT_NEAR(attention_by_sample_train_flops_saved(xlnet, 128, lengths), 3 * ((layers - 1) * per_layer + last), 1.0);
}

}  // namespace
}  // namespace tbench
