// The SentencePiece tokenizer (XLNet) on the fixture's spiece.model (a tiny unigram model trained
// with XLNet's recipe: <unk> <s> </s> <cls> <sep> <pad> <mask> <eod> <eop> are ids 0..8):
// normalization, Metaspace, unknown runs, pieces matched in the text, the template, truncation's
// early stop and bad files. Parity with HF on every case is in tokenizer_parity_test.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "support/cli.hpp"
#include "tbench/errors.hpp"
#include "tbench/tokenize/tokenizer.hpp"

namespace tbench {
namespace {

using Tokens = std::vector<std::string>;
using Ids = std::vector<int64_t>;

std::string fixture_model() { return std::string(TBENCH_TEST_DATA) + "/tokenizers/sentencepiece/spiece.model"; }

std::unique_ptr<Tokenizer> load(const std::string& model, bool strip_accents = true, bool lowercase = false) {
  TokenizerOptions options;
  options.kind = TokenizerKind::sentencepiece;
  options.vocab_file = model;
  options.lowercase = lowercase;
  options.strip_accents = strip_accents;
  return load_sentencepiece_tokenizer(options);
}

std::string joined(const Tokens& tokens) {
  std::string out;
  for (const std::string& token : tokens) out += token;
  return out;
}

TEST(SentencePieceTokenizer, SpecialTokensAreTheModelsPieces) {
  auto tokenizer = load(fixture_model());
  const SpecialTokenIds special = tokenizer->special_tokens();
  EXPECT_EQ(special.unk, 0);
  EXPECT_EQ(special.cls, 3);
  EXPECT_EQ(special.sep, 4);
  EXPECT_EQ(special.pad, 5);
  EXPECT_EQ(tokenizer->token_to_id("<mask>"), 6);
  EXPECT_EQ(tokenizer->token_to_id("no such piece"), std::nullopt);
  EXPECT_EQ(tokenizer->vocab_size(), 800);
  EXPECT_EQ(tokenizer->kind(), TokenizerKind::sentencepiece);
}

TEST(SentencePieceTokenizer, TemplateIsXlnetsWithClsLastAndLeftPadding) {
  auto tokenizer = load(fixture_model());
  const Ids a{100, 101}, b{102};
  const Encoding single = tokenizer->add_special_tokens(a, nullptr);
  EXPECT_EQ(single.input_ids, (Ids{100, 101, 4, 3}));
  EXPECT_EQ(single.token_type_ids, (Ids{0, 0, 0, 2}));
  const Encoding pair = tokenizer->add_special_tokens(a, &b);
  EXPECT_EQ(pair.input_ids, (Ids{100, 101, 4, 102, 4, 3}));
  EXPECT_EQ(pair.token_type_ids, (Ids{0, 0, 0, 1, 1, 2}));
  EXPECT_EQ(tokenizer->num_special_tokens(false), 2);
  EXPECT_EQ(tokenizer->num_special_tokens(true), 3);
  EXPECT_TRUE(tokenizer->pads_left());
  EXPECT_EQ(tokenizer->pad_token_type_id(), 3);
}

TEST(SentencePieceTokenizer, NormalizesAsXlnetConverterDoes) {
  // `` and '' become ", accents go (NFKD, then marks dropped), runs of spaces become one.
  EXPECT_EQ(joined(load(fixture_model())->tokenize("``Café''  naïve")), "▁\"Cafe\"▁naive");
  EXPECT_EQ(joined(load(fixture_model(), false)->tokenize("``Café''  naïve")), "▁\"Café\"▁naïve");
  EXPECT_EQ(joined(load(fixture_model(), true, true)->tokenize("``Café''  NAÏVE")), "▁\"cafe\"▁naive");
  // Spaces at the edges stay (one each): XLNet's fast tokenizer does not strip.
  EXPECT_EQ(joined(load(fixture_model())->tokenize("  a   b  ")), "▁a▁b▁");
}

TEST(SentencePieceTokenizer, ThePrecompiledCharsmapMapsSpacesAndCompatibilityForms) {
  // Without NFKD (keep accents) the model's own charsmap still maps these.
  auto tokenizer = load(fixture_model(), false);
  EXPECT_EQ(joined(tokenizer->tokenize("a\tb\r\nc")), "▁a▁b▁c");
  EXPECT_EQ(joined(tokenizer->tokenize("ＡＢＣ ﬁne")), "▁ABC▁fine");
  EXPECT_EQ(joined(tokenizer->tokenize("zero\u200Bwidth")), "▁zero▁width");
}

TEST(SentencePieceTokenizer, UnknownRunsFuseIntoOneUnknownToken) {
  auto tokenizer = load(fixture_model());
  // Runes are not in the model: one <unk> whose text is the whole run, as in HF.
  EXPECT_EQ(tokenizer->tokenize("ᚠᚢᚦ"), (Tokens{"▁", "ᚠᚢᚦ"}));
  EXPECT_EQ(tokenizer->encode_text("ᚠᚢᚦ"), (Ids{*tokenizer->token_to_id("▁"), 0}));
  // Malformed UTF-8 reads as U+FFFD, unknown too.
  EXPECT_EQ(tokenizer->encode_text("\xFF").back(), 0);
}

TEST(SentencePieceTokenizer, ControlAndUserDefinedPiecesAreMatchedInTheText) {
  auto tokenizer = load(fixture_model());
  EXPECT_EQ(tokenizer->encode_text("<cls><sep><eod><eop>"), (Ids{3, 4, 7, 8}));
  // "." is a user-defined piece: split out before the text around it is normalized, so the
  // word after it gets its own "▁" (HF's behaviour, unlike spm_encode's "b").
  const Tokens tokens = tokenizer->tokenize("a.b");
  EXPECT_EQ(joined(tokens), "▁a.▁b");
  ASSERT_GE(tokens.size(), 3u);
  EXPECT_EQ(tokens[1], ".");
}

TEST(SentencePieceTokenizer, MaskTakesTheSpacesBeforeIt) {
  auto tokenizer = load(fixture_model());
  EXPECT_EQ(tokenizer->tokenize("a   <mask>"), (Tokens{"▁a", "   <mask>"}));
  EXPECT_EQ(tokenizer->encode_text("a <mask>"), (Ids{*tokenizer->token_to_id("▁a"), 6}));
}

TEST(SentencePieceTokenizer, PiecesEndingInDigitCommaAreScoredDown) {
  auto tokenizer = load(fixture_model());
  // XLNetConverter lowers "2," by 100, so "2," splits as the slow tokenizer splits it.
  ASSERT_TRUE(tokenizer->token_to_id("2,").has_value());
  EXPECT_EQ(tokenizer->tokenize("2,"), (Tokens{"▁2", ","}));
}

TEST(SentencePieceTokenizer, TruncatingStopsAfterTheWordThatReachesTheLimit) {
  auto tokenizer = load(fixture_model());
  const int64_t a = *tokenizer->token_to_id("▁a");
  EXPECT_EQ(tokenizer->encode_text_until("a a a a a", 3), (Ids{a, a, a}));
  // An added token reaching the limit does not stop it: the next word still comes.
  EXPECT_EQ(tokenizer->encode_text_until("a a <mask> a a", 3), (Ids{a, a, 6, a}));
  EXPECT_EQ(tokenizer->encode_text("a a <mask> a a").size(), 5u);
}

TEST(SentencePieceTokenizer, FingerprintFollowsTheSwitches) {
  const std::string plain = load(fixture_model())->fingerprint();
  EXPECT_NE(plain, load(fixture_model(), false)->fingerprint());
  EXPECT_NE(plain, load(fixture_model(), true, true)->fingerprint());
  EXPECT_EQ(plain, load(fixture_model())->fingerprint());
}

// --- Hand-made model files ------------------------------------------------------------------------

std::string varint(uint64_t value) {
  std::string out;
  do {
    out += static_cast<char>((value & 0x7F) | (value > 0x7F ? 0x80 : 0));
    value >>= 7;
  } while (value);
  return out;
}

std::string field_bytes(int field, const std::string& bytes) { return varint(field << 3 | 2) + varint(bytes.size()) + bytes; }
std::string field_varint(int field, uint64_t value) { return varint(field << 3) + varint(value); }

std::string piece(const std::string& text, float score, int type) {
  char score_bytes[4];
  std::memcpy(score_bytes, &score, 4);  // little-endian, as protobuf's fixed32
  return field_bytes(1, field_bytes(1, text) + varint(2 << 3 | 5) + std::string(score_bytes, 4) + field_varint(3, type));
}

// A ModelProto: <unk> <s> </s>, the control pieces, "▁" and "a", and the model type (1 unigram, 2 BPE).
std::string model_proto(const std::vector<std::string>& control_pieces, int model_type) {
  constexpr int kNormal = 1, kUnknown = 2, kControl = 3;
  std::string proto = piece("<unk>", 0, kUnknown) + piece("<s>", 0, kControl) + piece("</s>", 0, kControl);
  for (const std::string& control : control_pieces) proto += piece(control, 0, kControl);
  proto += piece("\xE2\x96\x81", -1, kNormal) + piece("a", -2, kNormal);
  proto += field_bytes(2, field_varint(3, model_type));
  return proto;
}

void expect_bad_input(const std::string& model, const std::string& message) {
  try {
    load(model);
    FAIL() << "expected a bad-input error with " << message;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find(model), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST(SentencePieceTokenizer, AHandMadeModelLoads) {
  testing::ScratchDir dir;
  const std::string path = dir.write("ok.model", model_proto({"<cls>", "<sep>", "<pad>", "<mask>"}, 1));
  auto tokenizer = load(path);
  // No "▁a" piece and no charsmap (so no Precompiled step): "▁" then "a".
  EXPECT_EQ(tokenizer->tokenize("a  a"), (Tokens{"▁", "a", "▁", "a"}));
  EXPECT_EQ(tokenizer->encode_text("a"), (Ids{7, 8}));
  EXPECT_EQ(tokenizer->special_tokens().pad, 5);
}

TEST(SentencePieceTokenizer, BadModelsAreBadInputErrorsNamingTheFile) {
  testing::ScratchDir dir;
  expect_bad_input(dir.file("missing.model"), "cannot open the sentencepiece model");
  expect_bad_input(dir.write("garbage.model", "this is not a protobuf"), "not a valid SentencePiece model");
  expect_bad_input(dir.write("no_cls.model", model_proto({"<sep>", "<pad>", "<mask>"}, 1)), "has no <cls> piece");
  expect_bad_input(dir.write("bpe.model", model_proto({"<cls>", "<sep>", "<pad>", "<mask>"}, 2)), "needs a unigram");
}

}  // namespace
}  // namespace tbench
