// Masked-LM and distillation: the heads under HF's names, the masking, the corpus (packed or a
// line a sample), the losses against their definitions, the heads unpadded (model.unpad), the
// student's start from its teacher, and the cost model.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <fstream>
#include <numeric>
#include <set>

#include "support/cli.hpp"
#include "support/expect_error.hpp"
#include "tbench/data/data.hpp"
#include "tbench/data/data_sources.hpp"
#include "tbench/models/masked_lm.hpp"
#include "tbench/models/model_cost.hpp"
#include "tbench/models/safetensors.hpp"
#include "tbench/models/student_init.hpp"
#include "tbench/results/records.hpp"
#include "tbench/train/objective.hpp"
#include "tbench/train/trainer.hpp"

namespace tbench {
namespace {

using testing::expect_input_error;
using testing::ScratchDir;

std::unique_ptr<Tokenizer> fixture_wordpiece() {
  TokenizerOptions o;
  o.kind = TokenizerKind::wordpiece;
  o.vocab_file = std::string(TBENCH_SOURCE_DIR) + "/tests/data/tokenizers/wordpiece-uncased/vocab.txt";
  return load_tokenizer(o);
}

std::vector<std::string> mlm_parameter_names(const torch::nn::Module& m) {
  std::vector<std::string> names;
  for (const auto& item : m.named_parameters()) names.push_back(item.key());
  return names;
}

bool lists(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// ---- heads ---------------------------------------------------------------------------------------

// The head's parameters carry HF's *ForMaskedLM names; the decoder's weight is the word
// embeddings (tied), so it is not a parameter of its own and is saved once, as HF saves it.
TEST(MaskedLmHeads, ParameterNamesAreHfs) {
  const auto bert = mlm_parameter_names(*build_masked_lm(shipped_model_config("tiny-bert")));
  for (const char* name : {"cls.predictions.transform.dense.weight", "cls.predictions.transform.dense.bias",
                           "cls.predictions.transform.LayerNorm.weight", "cls.predictions.transform.LayerNorm.bias",
                           "cls.predictions.bias", "bert.embeddings.word_embeddings.weight"}) {
    EXPECT_TRUE(lists(bert, name)) << name;
  }
  EXPECT_FALSE(lists(bert, "cls.predictions.decoder.weight"));
  EXPECT_FALSE(lists(bert, "bert.pooler.dense.weight"));  // BertForMaskedLM has no pooler

  const auto distil = mlm_parameter_names(*build_masked_lm(shipped_model_config("tiny-distilbert")));
  for (const char* name : {"vocab_transform.weight", "vocab_transform.bias", "vocab_layer_norm.weight",
                           "vocab_layer_norm.bias", "vocab_projector.bias"}) {
    EXPECT_TRUE(lists(distil, name)) << name;
  }
  EXPECT_FALSE(lists(distil, "vocab_projector.weight"));

  const auto roberta = mlm_parameter_names(*build_masked_lm(shipped_model_config("tiny-roberta")));
  for (const char* name : {"lm_head.dense.weight", "lm_head.dense.bias", "lm_head.layer_norm.weight",
                           "lm_head.layer_norm.bias", "lm_head.bias"}) {
    EXPECT_TRUE(lists(roberta, name)) << name;
  }
  EXPECT_FALSE(lists(roberta, "lm_head.decoder.weight"));
  EXPECT_THROW(build_masked_lm(shipped_model_config("tiny-xlnet")), Error);
}

// scores = LayerNorm(act(W h + b)) E^T + bias: the tie means the word embeddings get a gradient
// for every token, not only for those in the input.
TEST(MaskedLmHeads, DecoderIsTiedToTheWordEmbeddings) {
  torch::manual_seed(1);
  auto model = build_masked_lm(shipped_model_config("tiny-bert"));
  model->eval();
  const auto ids = torch::full({1, 4}, 7, torch::kLong);
  const ModelInputs in{ids, torch::ones({1, 4}, torch::kLong), torch::zeros({1, 4}, torch::kLong), /*has_padding=*/false};
  const auto out = model->forward(in);
  EXPECT_EQ(out.logits.sizes(), (std::vector<int64_t>{1, 4, 1000}));
  EXPECT_EQ(out.hidden.sizes(), (std::vector<int64_t>{1, 4, 32}));
  out.logits.sum().backward();
  const auto params = model->named_parameters();
  const auto grad = params["bert.embeddings.word_embeddings.weight"].grad();
  ASSERT_TRUE(grad.defined());
  EXPECT_GT(grad[500].abs().sum().item<double>(), 0.0);  // token 500 is not in the input
}

// Saved with HF's names, loaded back: the same scores. A checkpoint holding HF's redundant tied
// keys (cls.predictions.decoder.*) loads too, those keys ignored as HF ignores them.
TEST(MaskedLmHeads, CheckpointKeysRoundTrip) {
  ScratchDir dir;
  for (const char* name : {"tiny-bert", "tiny-distilbert", "tiny-roberta"}) {
    const ModelConfig c = shipped_model_config(name);
    torch::manual_seed(3);
    auto saved = build_masked_lm(c);
    saved->eval();
    const std::string path = dir.file(std::string(name) + ".safetensors");
    save_hf_weights(*saved, path);
    const SafetensorsFile file(path);
    std::set<std::string> keys;
    for (const auto& [key, entry] : file.entries()) keys.insert(key);
    EXPECT_EQ(keys.size(), mlm_parameter_names(*saved).size()) << name;

    torch::manual_seed(4);
    auto loaded = build_masked_lm(c);
    loaded->eval();
    const auto report = load_hf_weights(*loaded, path);
    EXPECT_TRUE(report.initialised.empty()) << name;
    EXPECT_TRUE(report.unexpected.empty()) << name;
    const auto ids = torch::randint(5, 900, {2, 6}, torch::kLong);
    const ModelInputs in{ids, torch::ones({2, 6}, torch::kLong), torch::zeros({2, 6}, torch::kLong), /*has_padding=*/false};
    EXPECT_TRUE(torch::equal(saved->forward(in).logits, loaded->forward(in).logits)) << name;
  }

  // HF's BertForPreTraining layout: decoder weight and bias saved beside cls.predictions.bias.
  const ModelConfig c = shipped_model_config("tiny-bert");
  auto source = build_masked_lm(c);
  auto params = source->named_parameters();
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& item : params) tensors.emplace_back(item.key(), item.value());
  tensors.emplace_back("cls.predictions.decoder.weight", params["bert.embeddings.word_embeddings.weight"]);
  tensors.emplace_back("cls.predictions.decoder.bias", params["cls.predictions.bias"]);
  save_safetensors(dir.file("pretraining.safetensors"), tensors);
  auto target = build_masked_lm(c);
  const auto report = load_hf_weights(*target, dir.file("pretraining.safetensors"));
  EXPECT_EQ(report.unexpected.size(), 2u);
  EXPECT_TRUE(torch::equal(target->named_parameters()["cls.predictions.bias"], params["cls.predictions.bias"]));
}

// ---- masking -------------------------------------------------------------------------------------

TokenizedSamples framed_samples(int64_t count, int64_t length) {
  TokenizedSamples s;
  for (int64_t i = 0; i < count; ++i) {
    std::vector<int64_t> ids = {2};  // [CLS]
    for (int64_t t = 1; t < length - 1; ++t) ids.push_back(10 + (i * 7 + t * 13) % 900);
    ids.push_back(3);  // [SEP]
    s.add(ids, {}, 0);
  }
  return s;
}

CollateOptions masked_collate(int64_t seq_len) {
  CollateOptions o;
  o.seq_len = seq_len;
  o.masking.enabled = true;
  o.masking.mask_token_id = 4;
  o.masking.vocab_size = 1000;
  o.masking.special_ids = {0, 2, 3};
  o.masking.seed = 11;
  return o;
}

// DataCollatorForLanguageModeling's statistics: 15% picked, of those 80% [MASK], 10% random,
// 10% kept; special tokens and padding never picked.
TEST(Masking, FifteenPercentSplit80_10_10AndNeverSpecialTokens) {
  const int64_t seq_len = 64;
  TokenizedSamples samples = framed_samples(400, 48);  // 16 padding positions each
  const CollateOptions o = masked_collate(seq_len);
  int64_t eligible = 0, picked = 0, as_mask = 0, kept = 0, special_picked = 0, padding_picked = 0;
  for (int64_t epoch = 1; epoch <= 5; ++epoch) {
    for (int64_t first = 0; first < samples.size(); first += 16) {
      std::vector<int64_t> indices(16);
      std::iota(indices.begin(), indices.end(), first);
      const Batch b = collate(samples, indices, o, epoch);
      ASSERT_EQ(b.labels.sizes(), (std::vector<int64_t>{16, seq_len}));
      const auto ids = b.inputs.input_ids.accessor<int64_t, 2>(), labels = b.labels.accessor<int64_t, 2>();
      const auto real = b.inputs.attention_mask.accessor<int64_t, 2>();
      for (int64_t r = 0; r < 16; ++r) {
        for (int64_t t = 0; t < seq_len; ++t) {
          const int64_t label = labels[r][t], id = ids[r][t];
          const bool is_real = real[r][t] == 1;
          const bool special = is_real && (t == 0 || t == 47);
          if (!is_real) padding_picked += label != kIgnoreLabel;
          if (special) special_picked += label != kIgnoreLabel || (id != 2 && id != 3);
          if (!is_real || special) continue;
          ++eligible;
          if (label == kIgnoreLabel) continue;
          ++picked;
          as_mask += id == 4;
          kept += id == label;
        }
      }
    }
  }
  EXPECT_EQ(special_picked, 0);
  EXPECT_EQ(padding_picked, 0);
  const double rate = static_cast<double>(picked) / static_cast<double>(eligible);
  EXPECT_NEAR(rate, 0.15, 0.005) << picked << " of " << eligible;  // ~92k eligible: sd 0.0012
  EXPECT_NEAR(static_cast<double>(as_mask) / static_cast<double>(picked), 0.80, 0.015);
  // Kept: the 10% left alone, plus random draws that happen to hit the same token (1/1000).
  EXPECT_NEAR(static_cast<double>(kept) / static_cast<double>(picked), 0.10, 0.012);
  const double random = 1.0 - static_cast<double>(as_mask + kept) / static_cast<double>(picked);
  EXPECT_NEAR(random, 0.10, 0.012);
}

// A sample's masks depend on (seed, epoch, sample) alone: not on its batch-mates, so a
// data-parallel rank masks its share as a single process would. Each epoch draws new ones.
TEST(Masking, MasksDependOnTheSampleAndEpochNotTheBatch) {
  const TokenizedSamples samples = framed_samples(8, 40);
  const CollateOptions o = masked_collate(40);
  const Batch alone = collate(samples, {5}, o, 2);
  const Batch in_batch = collate(samples, {1, 5, 7}, o, 2);
  EXPECT_TRUE(torch::equal(alone.labels[0], in_batch.labels[1]));
  EXPECT_TRUE(torch::equal(alone.inputs.input_ids[0], in_batch.inputs.input_ids[1]));
  const Batch next_epoch = collate(samples, {5}, o, 3);
  EXPECT_FALSE(torch::equal(alone.labels[0], next_epoch.labels[0]));
  CollateOptions other_seed = o;
  other_seed.masking.seed = 12;
  EXPECT_FALSE(torch::equal(alone.labels[0], collate(samples, {5}, other_seed, 2).labels[0]));
}

// mlm.sparse_prediction: the batch lists its masked positions, flat and in order, found on the
// host with the masks; without the option it lists none (the head scores every position).
TEST(Masking, ListsTheMaskedPositionsOnlyWhenAsked) {
  const TokenizedSamples samples = framed_samples(6, 30);
  CollateOptions o = masked_collate(40);  // 10 padding positions per sample
  EXPECT_FALSE(collate(samples, {0, 1, 2}, o, 1).inputs.scored_positions.defined());
  o.masking.list_scored_positions = true;
  const Batch b = collate(samples, {0, 1, 2, 3, 4, 5}, o, 1);
  ASSERT_TRUE(b.inputs.scored_positions.defined());
  EXPECT_EQ(b.inputs.scored_positions.scalar_type(), torch::kLong);
  const auto expected = b.labels.reshape({-1}).ne(kIgnoreLabel).nonzero().reshape({-1});
  ASSERT_GT(expected.numel(), 0);
  EXPECT_TRUE(torch::equal(b.inputs.scored_positions, expected));
  // The same masks as without the list.
  o.masking.list_scored_positions = false;
  EXPECT_TRUE(torch::equal(collate(samples, {0, 1, 2, 3, 4, 5}, o, 1).labels, b.labels));
}

// ---- corpora -------------------------------------------------------------------------------------

// run_mlm's grouping: every line encoded with [CLS] .. [SEP], concatenated, cut into blocks; the
// tail shorter than a block dropped; blank lines skipped; a folder's .txt files in path order.
TEST(Corpus, LinesAreEncodedConcatenatedAndCutIntoBlocks) {
  ScratchDir dir;
  std::filesystem::create_directories(dir.file("books/b"));
  dir.write("books/b/second.txt", "the island\n");
  dir.write("books/a.txt", "the ship sailed\n\n   \nat dawn\r\n");
  dir.write("books/notes.md", "not a corpus file\n");
  const auto files = corpus_files(dir.file("books"));
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0], dir.file("books/a.txt"));
  const auto tokenizer = fixture_wordpiece();
  std::vector<int64_t> expected;
  for (const char* line : {"the ship sailed", "at dawn", "the island"}) {
    const auto e = tokenizer->encode(line, nullptr, 0);
    expected.insert(expected.end(), e.input_ids.begin(), e.input_ids.end());
  }
  const int64_t block = 4;
  const TokenizedSamples packed = pack_corpus(files, *tokenizer, block, 0);
  ASSERT_EQ(packed.size(), static_cast<int64_t>(expected.size()) / block);
  for (int64_t i = 0; i < packed.size() * block; ++i) EXPECT_EQ(packed.ids[static_cast<std::size_t>(i)], expected[static_cast<std::size_t>(i)]) << i;
  EXPECT_EQ(pack_corpus(files, *tokenizer, block, 1).size(), 1);  // data.num_samples caps the blocks
  EXPECT_EQ(pack_corpus(files, *tokenizer, 1000, 0).size(), 0);   // less than one block
  std::filesystem::create_directories(dir.file("empty"));
  EXPECT_THROW(corpus_files(dir.file("empty")), Error);
  EXPECT_THROW(corpus_files(dir.file("missing")), Error);
}

// run_mlm's --line_by_line: each non-blank line a sample of its own with [CLS] .. [SEP], in file
// order, truncated to seq_len (and counted), no token types; data.num_samples caps the lines.
TEST(Corpus, LineByLineMakesEachNonBlankLineASample) {
  ScratchDir dir;
  std::filesystem::create_directories(dir.file("books/b"));
  dir.write("books/b/second.txt", "the island\n");
  dir.write("books/a.txt", "the ship sailed\n\n   \nat dawn\r\nthe ship sailed at dawn to the island");
  const auto files = corpus_files(dir.file("books"));
  const auto tokenizer = fixture_wordpiece();
  const int64_t seq_len = 6;
  const TokenizedSamples lines = corpus_lines(files, *tokenizer, seq_len, 0);
  const std::vector<std::string> expected = {"the ship sailed", "at dawn", "the ship sailed at dawn to the island",
                                             "the island"};
  ASSERT_EQ(lines.size(), 4);
  for (int64_t i = 0; i < lines.size(); ++i) {
    const auto e = tokenizer->encode(expected[static_cast<std::size_t>(i)], nullptr, seq_len);
    const auto begin = lines.ids.begin() + lines.offsets[static_cast<std::size_t>(i)];
    EXPECT_EQ(std::vector<int64_t>(begin, begin + lines.length(i)), e.input_ids) << i;
    EXPECT_EQ(lines.labels[static_cast<std::size_t>(i)], 0);
  }
  EXPECT_EQ(lines.length(2), seq_len);  // truncated, [SEP] kept last
  EXPECT_EQ(lines.ids[static_cast<std::size_t>(lines.offsets[3] - 1)], tokenizer->encode("x", nullptr, 0).input_ids.back());
  int64_t longer = 0;
  for (const auto& line : expected) longer += tokenizer->encode(line, nullptr, 0).input_ids.size() > seq_len ? 1 : 0;
  ASSERT_GT(longer, 0);
  EXPECT_EQ(lines.truncated, longer);
  EXPECT_TRUE(lines.type_ids.empty());
  EXPECT_EQ(corpus_lines(files, *tokenizer, seq_len, 2).size(), 2);  // data.num_samples caps the lines
  // Blank as Python's str.isspace sees it (HF's run_mlm asks it): NBSP, U+3000, U+001C too.
  dir.write("blank/only.txt", "\n  \n\t\n\xC2\xA0\xE3\x80\x80\x1C\v\n");
  EXPECT_EQ(corpus_lines(corpus_files(dir.file("blank")), *tokenizer, seq_len, 0).size(), 0);
  // A lone \r ends a line too (old Mac files), as Python's universal newlines read it.
  dir.write("mac/old.txt", "the ship\rat dawn\r\rthe island\n");
  EXPECT_EQ(corpus_lines(corpus_files(dir.file("mac")), *tokenizer, seq_len, 0).size(), 3);
  // A Latin-1 file is refused at its line, not read each tokenizer's own way.
  dir.write("latin1/caf.txt", "the ship\nat the caf\xe9\n");
  expect_input_error([&] { corpus_lines(corpus_files(dir.file("latin1")), *tokenizer, seq_len, 0); },
                     {"caf.txt:2:", "not UTF-8 (byte 0xE9)"});
}

// ---- losses --------------------------------------------------------------------------------------

// Perplexity is exp of the mean cross-entropy over the masked tokens, computed here by hand.
TEST(MaskedLmLoss, PerplexityMatchesAHandComputation) {
  const auto logits = torch::tensor({1.0f, 2.0f, 0.5f, 0.0f, -1.0f, 3.0f, 2.0f, 2.0f, 2.0f}).view({1, 3, 3});
  const auto labels = torch::tensor({int64_t{1}, kIgnoreLabel, int64_t{0}}).view({1, 3});
  EvalSums sums = zero_eval_sums(torch::kCPU);
  add_masked_lm_scores(logits, labels, sums);
  // Position 0: -log(e^2 / (e^1 + e^2 + e^0.5)); position 2: -log(1/3); position 1 not masked.
  const double ce0 = -2.0 + std::log(std::exp(1.0) + std::exp(2.0) + std::exp(0.5));
  const double ce2 = std::log(3.0);
  EXPECT_EQ(sums.count.item<int64_t>(), 2);
  EXPECT_NEAR(sums.loss_sum.item<double>(), ce0 + ce2, 1e-6);
  EXPECT_NEAR(std::exp(sums.loss_sum.item<double>() / 2), std::exp((ce0 + ce2) / 2), 1e-5);
  EXPECT_EQ(sums.correct.item<int64_t>(), 2);  // argmax 1 at position 0; ties pick 0 at position 2
  EXPECT_NEAR(masked_cross_entropy(logits.view({3, 3}), labels.view({3})).item<double>(), (ce0 + ce2) / 2, 1e-6);
  // No masked token: 0, where a mean over nothing would be NaN.
  EXPECT_EQ(masked_cross_entropy(logits.view({3, 3}), torch::full({3}, kIgnoreLabel)).item<double>(), 0.0);
}

// HF's distiller: KLDivLoss(batchmean) of the softened distributions over the selected rows,
// times T^2; CosineEmbeddingLoss(target 1) over the selected rows.
TEST(DistillationLoss, MatchesHfsDefinitions) {
  torch::manual_seed(5);
  const auto s = torch::randn({2, 5, 7}), t = torch::randn({2, 5, 7});
  const auto selected = torch::tensor({1, 0, 0, 1, 1, 0, 1, 0, 0, 0}).view({2, 5}).to(torch::kBool);
  const double T = 2.0;
  const auto rows = selected.view({-1}).nonzero().view({-1});
  const auto s_sel = s.view({-1, 7}).index_select(0, rows), t_sel = t.view({-1, 7}).index_select(0, rows);
  namespace F = torch::nn::functional;
  const auto expected_kl = F::kl_div(F::log_softmax(s_sel / T, -1), F::softmax(t_sel / T, -1),
                                     F::KLDivFuncOptions().reduction(torch::kBatchMean)) * (T * T);
  EXPECT_NEAR(distillation_kl(s, t, T, selected).item<double>(), expected_kl.item<double>(), 1e-5);

  const auto hs = torch::randn({2, 5, 4}), ht = torch::randn({2, 5, 4});
  const auto hs_sel = hs.view({-1, 4}).index_select(0, rows), ht_sel = ht.view({-1, 4}).index_select(0, rows);
  const auto expected_cos = F::cosine_embedding_loss(hs_sel, ht_sel, torch::ones({rows.size(0)}));
  EXPECT_NEAR(cosine_distance(hs, ht, selected).item<double>(), expected_cos.item<double>(), 1e-5);
  // A student equal to its teacher has nothing left to learn from it.
  EXPECT_NEAR(distillation_kl(t, t, T, selected).item<double>(), 0.0, 1e-6);
  EXPECT_NEAR(cosine_distance(ht, ht, selected).item<double>(), 0.0, 1e-6);
}

// The KL term covers every real token by default (DistilBERT's training), the masked ones with
// restrict_ce_to_mask; padding never counts.
TEST(DistillationLoss, KlOverRealTokensOrOnlyTheMaskedOnes) {
  torch::manual_seed(6);
  auto teacher = build_masked_lm(shipped_model_config("tiny-bert"));
  auto student = build_masked_lm(shipped_model_config("tiny-distilbert"));
  TokenizedSamples samples = framed_samples(3, 12);
  samples.add(std::vector<int64_t>{2, 50, 60, 3}, {}, 0);  // a short one: padding in its row
  const Batch batch = collate(samples, {0, 1, 2, 3}, masked_collate(12), 1);
  const ModelInputs& in = batch.inputs;
  student->eval();
  teacher->eval();
  torch::NoGradGuard no_grad;
  const auto s = student->forward(in), t = teacher->forward(in);
  for (const bool restrict : {false, true}) {
    DistillationLoss settings;
    settings.restrict_ce_to_mask = restrict;
    auto objective = distillation_objective(*student, *teacher, settings, Precision::fp32, torch::kCPU);
    student->eval();  // the objective put nothing in train mode; dropout stays off
    const LossTerms terms = objective->loss(in, batch.labels);
    const auto rows = restrict ? batch.labels.ne(kIgnoreLabel) : in.attention_mask.ne(0);
    EXPECT_NEAR(terms.parts[0].item<double>(), distillation_kl(s.logits, t.logits, 2.0, rows).item<double>(), 1e-6);
  }
}

// ---- the student's start -------------------------------------------------------------------------

TEST(StudentInit, EvenlySpacedTeacherLayersAsDistilBert) {
  EXPECT_EQ(teacher_layers_for(6, 12), (std::vector<int64_t>{0, 2, 4, 7, 9, 11}));
  EXPECT_EQ(teacher_layers_for(2, 2), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(teacher_layers_for(1, 12), (std::vector<int64_t>{0}));
  EXPECT_EQ(teacher_layers_for(3, 24), (std::vector<int64_t>{0, 12, 23}));
}

TEST(StudentInit, DistilBertStartsFromBertsLayersAndHead) {
  ModelConfig teacher_config = shipped_model_config("tiny-bert");
  teacher_config.num_layers = 4;
  const ModelConfig student_config = shipped_model_config("tiny-distilbert");  // 2 layers
  torch::manual_seed(8);
  auto teacher = build_masked_lm(teacher_config);
  auto student = build_masked_lm(student_config);
  const auto set = init_student_from_teacher(*student, student_config, *teacher, teacher_config);
  const auto t = teacher->named_parameters();
  const auto s = student->named_parameters();
  // Layers 0 and 3 of 4 (the first and the last).
  EXPECT_TRUE(torch::equal(s["distilbert.transformer.layer.1.attention.q_lin.weight"],
                           t["bert.encoder.layer.3.attention.self.query.weight"]));
  EXPECT_TRUE(torch::equal(s["distilbert.transformer.layer.0.ffn.lin2.bias"], t["bert.encoder.layer.0.output.dense.bias"]));
  EXPECT_TRUE(torch::equal(s["distilbert.transformer.layer.1.output_layer_norm.weight"],
                           t["bert.encoder.layer.3.output.LayerNorm.weight"]));
  EXPECT_TRUE(torch::equal(s["distilbert.embeddings.word_embeddings.weight"], t["bert.embeddings.word_embeddings.weight"]));
  EXPECT_TRUE(torch::equal(s["vocab_transform.weight"], t["cls.predictions.transform.dense.weight"]));
  EXPECT_TRUE(torch::equal(s["vocab_layer_norm.bias"], t["cls.predictions.transform.LayerNorm.bias"]));
  EXPECT_TRUE(torch::equal(s["vocab_projector.bias"], t["cls.predictions.bias"]));
  EXPECT_EQ(set.size(), s.size());  // every student tensor has a source

  // Widths that differ, or a pair without a mapping, are refused with the reason.
  ModelConfig wide = student_config;
  wide.hidden_size = 64;
  EXPECT_NE(student_init_mismatch(wide, teacher_config).find("hidden_size"), std::string::npos);
  EXPECT_NE(student_init_mismatch(shipped_model_config("tiny-roberta"), teacher_config).find("roberta"), std::string::npos);
  ModelConfig one_type = teacher_config;
  one_type.type_vocab_size = 1;
  EXPECT_NE(student_init_mismatch(one_type, teacher_config).find("type_vocab_size"), std::string::npos);
  EXPECT_EQ(student_init_mismatch(teacher_config, teacher_config), "");
}

// ---- cost ----------------------------------------------------------------------------------------

// The parameter formula matches the built *ForMaskedLM modules (tied decoder counted once), and
// the head's FLOPs are the H x V projection at every position.
TEST(MaskedLmCost, ParametersMatchTheModulesAndTheHeadProjectsEveryPosition) {
  for (const char* name : {"tiny-bert", "tiny-distilbert", "tiny-roberta", "bert-base-uncased", "distilbert-base-uncased"}) {
    const ModelConfig c = shipped_model_config(name);
    EXPECT_EQ(count_parameters(*build_masked_lm(c)), model_cost(c, 2, 128, Task::mlm).classifier_params) << name;
  }
  const ModelConfig c = shipped_model_config("bert-base-uncased");
  const double mlm = model_cost(c, 2, 128, Task::mlm).forward_flops_per_sample;
  const double cls = model_cost(c, 2, 128).forward_flops_per_sample;
  const double h = 768, v = 30522;
  EXPECT_NEAR(mlm - cls, 128 * (2 * h * h + 2 * h * v) - (2 * h * h + 2 * h * 2), 1.0);
  // Distillation: the student's forward and backward plus the teacher's forward.
  const ModelConfig student = shipped_model_config("distilbert-base-uncased");
  EXPECT_DOUBLE_EQ(run_train_flops_per_sample(student, &c, 2, 128, Task::distillation),
                   model_cost(student, 2, 128, Task::mlm).train_flops_per_sample + mlm);
}

// Sparse prediction skips the head at every unscored position: its transform (H x H) and its
// projection (H x V), forward and backward for the trained model, forward for a teacher.
TEST(MaskedLmCost, SparsePredictionSavesTheHeadPerUnscoredPosition) {
  const ModelConfig teacher = shipped_model_config("bert-base-uncased");
  const ModelConfig student = shipped_model_config("distilbert-base-uncased");
  const double h = 768, v = 30522, head = 2 * h * h + 2 * h * v;
  EXPECT_DOUBLE_EQ(masked_lm_head_train_flops_per_position(student, nullptr), 3 * head);
  EXPECT_DOUBLE_EQ(masked_lm_head_train_flops_per_position(student, &teacher), 4 * head);
}

// ---- sparse prediction ---------------------------------------------------------------------------

// A masked batch with padding, its masked positions listed.
Batch sparse_batch(int64_t seed) {
  CollateOptions o = masked_collate(24);
  o.masking.list_scored_positions = true;
  o.masking.probability = 0.3;
  TokenizedSamples samples = framed_samples(4, 18);
  samples.add({2, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 3}, {}, 0);  // a shorter one
  return collate(samples, {0, 1, 2, 3, 4}, o, seed);
}

ModelInputs every_position(ModelInputs inputs) {
  inputs.scored_positions = torch::Tensor();
  return inputs;
}

struct LossAndGradients {
  LossTerms loss;
  std::map<std::string, torch::Tensor> gradients;
};

LossAndGradients loss_and_gradients(TrainingObjective& objective, const ModelInputs& inputs, const torch::Tensor& labels) {
  objective.trained().zero_grad();
  LossAndGradients out{objective.loss(inputs, labels), {}};
  out.loss.total.backward();
  for (const auto& p : objective.trained().named_parameters()) {
    if (p.value().grad().defined()) out.gradients[p.key()] = p.value().grad().clone();
  }
  return out;
}

void expect_same(const LossAndGradients& sparse, const LossAndGradients& full, const std::string& name) {
  EXPECT_NEAR(sparse.loss.total.item<double>(), full.loss.total.item<double>(), 1e-6 * std::abs(full.loss.total.item<double>()))
      << name;
  ASSERT_EQ(sparse.loss.parts.size(), full.loss.parts.size()) << name;
  for (std::size_t i = 0; i < full.loss.parts.size(); ++i) {
    EXPECT_NEAR(sparse.loss.parts[i].item<double>(), full.loss.parts[i].item<double>(),
                1e-5 * std::abs(full.loss.parts[i].item<double>()) + 1e-7)  // KL: a small difference of logs
        << name << " term " << i;
  }
  ASSERT_EQ(sparse.gradients.size(), full.gradients.size()) << name;
  for (const auto& [param, grad] : full.gradients) {
    ASSERT_TRUE(sparse.gradients.count(param)) << name << " " << param;
    EXPECT_TRUE(torch::allclose(sparse.gradients.at(param), grad, 1e-4, 1e-7))
        << name << " " << param << ": max difference "
        << (sparse.gradients.at(param) - grad).abs().max().item<double>();
  }
}

// The head on the masked positions alone gives the loss and every gradient that HF's head on
// every position gives: the other positions' scores never reach the loss. Dropout is off (eval
// mode) so the two forwards are the same network.
TEST(SparsePrediction, SameLossAndGradientsAsScoringEveryPosition) {
  torch::set_num_threads(1);
  const Batch batch = sparse_batch(3);
  const int64_t scored = batch.inputs.scored_positions.numel();
  ASSERT_GT(scored, 0);
  for (const char* name : {"tiny-bert", "tiny-distilbert", "tiny-roberta"}) {
    torch::manual_seed(21);
    auto model = build_masked_lm(shipped_model_config(name));
    model->eval();
    EXPECT_EQ(model->forward(batch.inputs).logits.sizes(), (std::vector<int64_t>{scored, 1000})) << name;
    EXPECT_EQ(model->forward(every_position(batch.inputs)).logits.sizes(), (std::vector<int64_t>{5, 24, 1000})) << name;
    auto objective = masked_lm_objective(*model, Precision::fp32, torch::kCPU);
    expect_same(loss_and_gradients(*objective, batch.inputs, batch.labels),
                loss_and_gradients(*objective, every_position(batch.inputs), batch.labels), name);
    // Held-out scores: the same sums.
    EvalSums sparse = zero_eval_sums(torch::kCPU), full = zero_eval_sums(torch::kCPU);
    torch::NoGradGuard no_grad;
    objective->score(batch.inputs, batch.labels, sparse);
    objective->score(every_position(batch.inputs), batch.labels, full);
    EXPECT_NEAR(sparse.loss_sum.item<double>(), full.loss_sum.item<double>(), 1e-6 * full.loss_sum.item<double>()) << name;
    EXPECT_EQ(sparse.correct.item<int64_t>(), full.correct.item<int64_t>()) << name;
    EXPECT_EQ(sparse.count.item<int64_t>(), scored) << name;
    EXPECT_EQ(full.count.item<int64_t>(), scored) << name;
  }
}

// Distillation with the KL term restricted to the masked tokens (the only form the spec lets
// sparse prediction take): the student's and the teacher's heads both score the masked positions,
// and every term and gradient is the full computation's.
TEST(SparsePrediction, DistillationOnTheMaskedTokensIsTheSame) {
  torch::set_num_threads(1);
  const Batch batch = sparse_batch(4);
  torch::manual_seed(22);
  auto teacher = build_masked_lm(shipped_model_config("tiny-bert"));
  auto student = build_masked_lm(shipped_model_config("tiny-distilbert"));
  student->eval();
  DistillationLoss loss;
  loss.restrict_ce_to_mask = true;
  auto objective = distillation_objective(*student, *teacher, loss, Precision::fp32, torch::kCPU);
  expect_same(loss_and_gradients(*objective, batch.inputs, batch.labels),
              loss_and_gradients(*objective, every_position(batch.inputs), batch.labels), "distillation");
  // Without the restriction the KL term needs every real token's scores: refused.
  DistillationLoss every_token;
  auto unrestricted = distillation_objective(*student, *teacher, every_token, Precision::fp32, torch::kCPU);
  EXPECT_THROW(unrestricted->loss(batch.inputs, batch.labels), c10::Error);
}

// ---- model.unpad ---------------------------------------------------------------------------------

// The same tokens with the real tokens' positions listed (as the loader lists them for model.unpad),
// or not (the model then finds them from the mask).
ModelInputs listing_real_tokens(ModelInputs inputs, bool listed) {
  inputs.token_positions = listed ? inputs.attention_mask.reshape({-1}).nonzero().reshape({-1}) : torch::Tensor();
  return inputs;
}

ModelConfig unpadded(ModelConfig c, bool by_sample) {
  c.unpad = true;
  c.unpad_attention_by_sample = by_sample;
  return c;
}

// A model built for `c` with `source`'s weights.
std::shared_ptr<MaskedLanguageModel> masked_lm_like(const ModelConfig& c, MaskedLanguageModel& source) {
  auto model = build_masked_lm(c);
  torch::NoGradGuard no_grad;
  const auto weights = source.named_parameters();
  for (auto& p : model->named_parameters()) p.value().copy_(weights[p.key()]);
  return model;
}

// Unpadded, a masked LM scores the real tokens alone, [1, T, V] (or with sparse prediction its
// masked ones, [N, V]), and its loss and every gradient are the padded model's, whose padding
// rows never reach the loss: attention on the grid and sample by sample, listed or found tokens.
// Dropout is off (eval mode) so the two forwards are the same network.
TEST(UnpaddedMaskedLm, SameLossAndGradientsAsThePaddedModel) {
  torch::set_num_threads(1);
  const Batch batch = sparse_batch(5);
  const int64_t real = batch.inputs.attention_mask.sum().item<int64_t>();
  ASSERT_LT(real, batch.inputs.attention_mask.numel());
  for (const char* name : {"tiny-bert", "tiny-distilbert", "tiny-roberta"}) {
    torch::manual_seed(23);
    auto padded = build_masked_lm(shipped_model_config(name));
    padded->eval();
    auto padded_objective = masked_lm_objective(*padded, Precision::fp32, torch::kCPU);
    const auto full = loss_and_gradients(*padded_objective, every_position(batch.inputs), batch.labels);
    const auto sparse = loss_and_gradients(*padded_objective, batch.inputs, batch.labels);
    for (const bool by_sample : {false, true}) {
      const std::string setting = std::string(name) + (by_sample ? ", by sample" : ", on the grid");
      auto model = masked_lm_like(unpadded(shipped_model_config(name), by_sample), *padded);
      model->eval();
      auto objective = masked_lm_objective(*model, Precision::fp32, torch::kCPU);
      for (const bool listed : {true, false}) {
        const ModelInputs in = listing_real_tokens(every_position(batch.inputs), listed);
        torch::NoGradGuard no_grad;
        const MaskedLmOutputs out = model->forward(in);
        EXPECT_EQ(out.logits.sizes(), (std::vector<int64_t>{1, real, 1000})) << setting;
        EXPECT_EQ(out.hidden.sizes(), (std::vector<int64_t>{1, real, 32})) << setting;
        EXPECT_TRUE(torch::equal(out.positions, batch.inputs.attention_mask.reshape({-1}).nonzero().reshape({-1})));
      }
      expect_same(loss_and_gradients(*objective, listing_real_tokens(every_position(batch.inputs), true), batch.labels),
                  full, setting);
      expect_same(loss_and_gradients(*objective, listing_real_tokens(batch.inputs, true), batch.labels), sparse,
                  setting + ", sparse prediction");
      EvalSums unpadded_sums = zero_eval_sums(torch::kCPU), padded_sums = zero_eval_sums(torch::kCPU);
      torch::NoGradGuard no_grad;
      objective->score(listing_real_tokens(every_position(batch.inputs), true), batch.labels, unpadded_sums);
      padded_objective->score(every_position(batch.inputs), batch.labels, padded_sums);
      EXPECT_NEAR(unpadded_sums.loss_sum.item<double>(), padded_sums.loss_sum.item<double>(),
                  1e-5 * padded_sums.loss_sum.item<double>()) << setting;
      EXPECT_EQ(unpadded_sums.correct.item<int64_t>(), padded_sums.correct.item<int64_t>()) << setting;
      EXPECT_EQ(unpadded_sums.count.item<int64_t>(), padded_sums.count.item<int64_t>()) << setting;
    }
  }
}

// Distillation with both models unpadded: the KL term over every real token (or the masked ones),
// the masked-LM term and the hidden states' cosine term are the padded run's, as is every gradient.
TEST(UnpaddedMaskedLm, DistillationTermsAndGradientsAreThePaddedOnes) {
  torch::set_num_threads(1);
  const Batch batch = sparse_batch(6);
  torch::manual_seed(24);
  auto teacher = build_masked_lm(shipped_model_config("tiny-bert"));
  auto student = build_masked_lm(shipped_model_config("tiny-distilbert"));
  student->eval();
  for (const bool by_sample : {false, true}) {
    auto unpadded_teacher = masked_lm_like(unpadded(shipped_model_config("tiny-bert"), by_sample), *teacher);
    auto unpadded_student = masked_lm_like(unpadded(shipped_model_config("tiny-distilbert"), by_sample), *student);
    unpadded_student->eval();
    for (const bool restrict : {false, true}) {
      DistillationLoss loss;
      loss.restrict_ce_to_mask = restrict;
      auto padded_run = distillation_objective(*student, *teacher, loss, Precision::fp32, torch::kCPU);
      auto unpadded_run = distillation_objective(*unpadded_student, *unpadded_teacher, loss, Precision::fp32, torch::kCPU);
      const std::string setting = std::string(by_sample ? "by sample" : "on the grid") + (restrict ? ", KL on the masked" : "");
      const ModelInputs in = every_position(batch.inputs);
      const auto padded = loss_and_gradients(*padded_run, in, batch.labels);
      expect_same(loss_and_gradients(*unpadded_run, listing_real_tokens(in, true), batch.labels), padded, setting);
      if (restrict) {  // sparse prediction too: both heads at the masked tokens' rows
        expect_same(loss_and_gradients(*unpadded_run, listing_real_tokens(batch.inputs, true), batch.labels), padded,
                    setting + ", sparse prediction");
      }
      // A teacher that does not unpad beside a student that does: refused, not misread.
      auto mixed = distillation_objective(*unpadded_student, *teacher, loss, Precision::fp32, torch::kCPU);
      EXPECT_THROW(mixed->loss(listing_real_tokens(in, true), batch.labels), c10::Error) << setting;
    }
  }
}

// ---- training ------------------------------------------------------------------------------------

// A tiny masked LM learns a small repetitive corpus: the loss falls, eval perplexity is exp(eval loss).
TEST(MaskedLmTraining, LossDecreasesOnATinyModel) {
  ScratchDir dir;
  std::string text;
  const std::vector<std::string> lines = {"the ship sailed into the harbour at dawn", "every sailor looked at the mountain",
                                          "the old friend was waiting with a book", "the island was quiet at night"};
  for (int i = 0; i < 120; ++i) text += lines[static_cast<std::size_t>(i % 4)] + "\n";
  dir.write("corpus.txt", text);
  torch::set_num_threads(1);
  torch::manual_seed(9);
  const ModelConfig c = shipped_model_config("tiny-bert");
  PreparedData data;
  data.train = pack_corpus({dir.file("corpus.txt")}, *fixture_wordpiece(), 32, 0);
  data.eval = data.train.subset({0, 1, 2, 3, 4, 5, 6, 7});
  data.collate = masked_collate(32);
  auto model = build_masked_lm(c);
  auto objective = masked_lm_objective(*model, Precision::fp32, torch::kCPU);
  TrainerConfig config;
  config.epochs = 6;
  config.batch_size = 8;
  config.lr = 3e-3;
  config.prefetch = 0;
  Trainer trainer(config, *objective, data, torch::kCPU);
  std::atomic<bool> stop{false};
  const TrainRun run = trainer.run({}, stop);
  ASSERT_EQ(run.outcome.status, RunStatus::completed) << run.outcome.error;
  const auto& epochs = run.records.epochs;
  ASSERT_EQ(epochs.size(), 6u);
  EXPECT_LT(epochs.back().loss, epochs.front().loss - 1.0);
  ASSERT_TRUE(epochs.back().eval_perplexity.has_value());
  EXPECT_NEAR(*epochs.back().eval_perplexity, std::exp(*epochs.back().eval_loss), 1e-9);
  EXPECT_LT(*epochs.back().eval_perplexity, *epochs.front().eval_perplexity);
}

// Held-out samples with no masked token score nothing: their loss and accuracy are none, as
// HF's NaN says, not 0.0 beside a missing perplexity (found by an audit).
TEST(MaskedLmEval, NothingScoredIsNoLossRatherThanZero) {
  torch::manual_seed(12);
  auto model = build_masked_lm(shipped_model_config("tiny-bert"));
  PreparedData data;
  data.train = framed_samples(4, 10);
  data.eval = framed_samples(2, 10);
  data.collate = masked_collate(10);
  data.collate.masking.probability = 0.0;
  auto objective = masked_lm_objective(*model, Precision::fp32, torch::kCPU);
  TrainerConfig config;
  config.batch_size = 2;
  config.prefetch = 0;
  Trainer trainer(config, *objective, data, torch::kCPU);
  std::atomic<bool> stop{false};
  const TrainRun run = trainer.run({}, stop);
  ASSERT_EQ(run.outcome.status, RunStatus::completed) << run.outcome.error;
  const EpochRecord& epoch = run.records.epochs.front();
  EXPECT_EQ(epoch.eval_samples, 2);
  EXPECT_FALSE(epoch.eval_loss.has_value());
  EXPECT_FALSE(epoch.eval_accuracy.has_value());
  EXPECT_FALSE(epoch.eval_perplexity.has_value());
  nlohmann::json record;
  to_json(record, epoch);
  EXPECT_TRUE(record["eval"]["loss"].is_null()) << record.dump();
}

// Pseudo-perplexity (Salazar et al.): each non-special token masked alone, scored by one forward
// of its own, here computed token by token and compared with the trainer's batched version.
TEST(MaskedLmEval, PseudoPerplexityMatchesOneForwardPerToken) {
  torch::manual_seed(12);
  const ModelConfig c = shipped_model_config("tiny-bert");
  auto model = build_masked_lm(c);
  PreparedData data;
  data.train = framed_samples(4, 10);
  data.eval = framed_samples(2, 10);
  data.collate = masked_collate(10);
  auto objective = masked_lm_objective(*model, Precision::fp32, torch::kCPU);
  TrainerConfig config;
  config.batch_size = 3;  // positions scored 3 at a time: chunks of 3, 3, 2 per sample
  config.prefetch = 0;
  config.pseudo_perplexity_fraction = 1.0;
  Trainer trainer(config, *objective, data, torch::kCPU);
  const EvalResult eval = trainer.evaluate();
  ASSERT_TRUE(eval.pseudo_perplexity.has_value());
  EXPECT_EQ(eval.pseudo_perplexity_tokens, 16);  // 2 samples x 8 tokens between [CLS] and [SEP]

  model->eval();
  torch::NoGradGuard no_grad;
  double log_p = 0;
  for (int64_t i = 0; i < 2; ++i) {
    const auto begin = data.eval.ids.begin() + data.eval.offsets[static_cast<std::size_t>(i)];
    const std::vector<int64_t> ids(begin, begin + 10);
    for (int64_t t = 1; t < 9; ++t) {
      auto masked = torch::tensor(ids, torch::kLong).unsqueeze(0);
      masked[0][t] = 4;
      const ModelInputs in{masked, torch::ones({1, 10}, torch::kLong), torch::zeros({1, 10}, torch::kLong), /*has_padding=*/false};
      log_p += torch::log_softmax(model->forward(in).logits[0][t], -1)[ids[static_cast<std::size_t>(t)]].item<double>();
    }
  }
  EXPECT_NEAR(*eval.pseudo_perplexity, std::exp(-log_p / 16), 1e-4 * std::exp(-log_p / 16));
  // A random tiny model is near uniform over its 1000 tokens.
  EXPECT_GT(*eval.pseudo_perplexity, 100);
}

// Distillation records its three terms per step, and the step's loss is their weighted sum.
TEST(DistillationTraining, RecordsEachTermAndTheirWeightedSum) {
  torch::set_num_threads(1);
  torch::manual_seed(10);
  const ModelConfig teacher_config = shipped_model_config("tiny-bert");
  const ModelConfig student_config = shipped_model_config("tiny-distilbert");
  PreparedData data;
  data.train = framed_samples(32, 16);
  data.collate = masked_collate(16);
  auto teacher = build_masked_lm(teacher_config);
  auto student = build_masked_lm(student_config);
  DistillationLoss loss;  // T 2, alphas 5 / 2 / 1
  auto objective = distillation_objective(*student, *teacher, loss, Precision::fp32, torch::kCPU);
  TrainerConfig config;
  config.batch_size = 4;
  config.grad_accum_steps = 2;
  config.prefetch = 0;
  Trainer trainer(config, *objective, data, torch::kCPU);
  std::atomic<bool> stop{false};
  const TrainRun run = trainer.run({}, stop);
  ASSERT_EQ(run.outcome.status, RunStatus::completed) << run.outcome.error;
  ASSERT_EQ(run.records.iterations.size(), 4u);
  for (const auto& it : run.records.iterations) {
    ASSERT_EQ(it.loss_terms.size(), 3u);
    EXPECT_EQ(it.loss_terms[0].first, "ce");
    EXPECT_EQ(it.loss_terms[1].first, "mlm");
    EXPECT_EQ(it.loss_terms[2].first, "cos");
    const double weighted = 5 * it.loss_terms[0].second + 2 * it.loss_terms[1].second + 1 * it.loss_terms[2].second;
    EXPECT_NEAR(it.loss, weighted, 1e-4 * std::abs(weighted));
    EXPECT_GT(it.loss_terms[1].second, 0);
  }
  // The teacher is frozen: no gradient, unchanged.
  for (const auto& p : teacher->parameters()) EXPECT_FALSE(p.requires_grad());
}

}  // namespace
}  // namespace tbench
