// The shared tokenizer layer: kind names, padding conventions, HF's longest_first truncation and
// Tokenizer::encode's budget (template tokens, the per-text cut), on a stand-in tokenizer with one
// id per word; and encode_text against encode_text_until on one small tokenizer of each kind.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <sstream>
#include <tuple>

#include "support/cli.hpp"
#include "tbench/errors.hpp"
#include "tbench/tokenize/tokenizer.hpp"

namespace tbench {
namespace {

std::vector<int64_t> ids(std::size_t n, int64_t first = 1) {
  std::vector<int64_t> out(n);
  std::iota(out.begin(), out.end(), first);
  return out;
}

// ---- kind names ----

TEST(TokenizerKind, NamesRoundTrip) {
  for (const TokenizerKind kind : {TokenizerKind::wordpiece, TokenizerKind::byte_level_bpe, TokenizerKind::sentencepiece}) {
    EXPECT_EQ(tokenizer_kind_from_string(to_string(kind)), kind);
  }
  EXPECT_STREQ(to_string(TokenizerKind::byte_level_bpe), "bpe");
  EXPECT_EQ(tokenizer_kind_from_string("byte_level_bpe"), TokenizerKind::byte_level_bpe);
  EXPECT_EQ(tokenizer_kind_from_string("WordPiece"), std::nullopt);
  EXPECT_EQ(tokenizer_kind_from_string(""), std::nullopt);
}

// ---- truncate_longest_first ----

TEST(TruncateLongestFirst, SingleTextKeepsItsFirstTokens) {
  std::vector<int64_t> a = ids(10);
  truncate_longest_first(a, nullptr, 4);
  EXPECT_EQ(a, ids(4));
  truncate_longest_first(a, nullptr, 9);
  EXPECT_EQ(a, ids(4));
  truncate_longest_first(a, nullptr, 0);
  EXPECT_TRUE(a.empty());
  std::vector<int64_t> b = ids(3);
  truncate_longest_first(b, nullptr, -5);  // a budget below zero holds nothing
  EXPECT_TRUE(b.empty());
}

// The lengths HF's truncation.rs gives (its own unit test uses a budget of 7 and lengths 0, 2, 4, 8).
TEST(TruncateLongestFirst, SplitsABudgetOfSevenAsHuggingFace) {
  const std::vector<std::tuple<std::size_t, std::size_t, std::size_t, std::size_t>> table = {
      // a, b -> kept a, kept b
      {0, 0, 0, 0}, {0, 2, 0, 2}, {0, 4, 0, 4}, {0, 8, 0, 7},  //
      {2, 0, 2, 0}, {2, 2, 2, 2}, {2, 4, 2, 4}, {2, 8, 2, 5},  //
      {4, 0, 4, 0}, {4, 2, 4, 2}, {4, 4, 3, 4}, {4, 8, 3, 4},  //
      {8, 0, 7, 0}, {8, 2, 5, 2}, {8, 4, 4, 3}, {8, 8, 3, 4},
  };
  for (const auto& [a_length, b_length, a_kept, b_kept] : table) {
    std::vector<int64_t> a = ids(a_length, 1);
    std::vector<int64_t> b = ids(b_length, 100);
    truncate_longest_first(a, &b, 7);
    EXPECT_EQ(a, ids(a_kept, 1)) << "a " << a_length << ", b " << b_length;
    EXPECT_EQ(b, ids(b_kept, 100)) << "a " << a_length << ", b " << b_length;
  }
}

TEST(TruncateLongestFirst, OddTokenGoesToTheLongerAndOnATieToTheSecond) {
  std::vector<int64_t> a = ids(9), b = ids(6);
  truncate_longest_first(a, &b, 5);  // both over half: 2 + 3, the 3 to the longer
  EXPECT_EQ(a.size(), 3U);
  EXPECT_EQ(b.size(), 2U);
  a = ids(6), b = ids(9);
  truncate_longest_first(a, &b, 5);
  EXPECT_EQ(a.size(), 2U);
  EXPECT_EQ(b.size(), 3U);
  a = ids(6), b = ids(6);
  truncate_longest_first(a, &b, 5);
  EXPECT_EQ(a.size(), 2U);
  EXPECT_EQ(b.size(), 3U);
  a = ids(9), b = ids(8);
  truncate_longest_first(a, &b, 6);  // an even budget halves
  EXPECT_EQ(a.size(), 3U);
  EXPECT_EQ(b.size(), 3U);
}

TEST(TruncateLongestFirst, ShorterKeepsAllWhenTheLongerCanTakeTheCut) {
  std::vector<int64_t> a = ids(3), b = ids(20, 50);
  truncate_longest_first(a, &b, 10);
  EXPECT_EQ(a, ids(3));
  EXPECT_EQ(b, ids(7, 50));
}

TEST(TruncateLongestFirst, ZeroBudgetEmptiesBoth) {
  std::vector<int64_t> a = ids(3), b = ids(1);
  truncate_longest_first(a, &b, 0);
  EXPECT_TRUE(a.empty());
  EXPECT_TRUE(b.empty());
}

// ---- Tokenizer::encode ----

// One id per space-separated word (its length), and a BERT-like template: 101 a 102 (b 102).
// With one id per word, HF's stop after the word that reaches max_length cuts at max_length.
class WordLengthTokenizer final : public Tokenizer {
 public:
  TokenizerKind kind() const override { return TokenizerKind::wordpiece; }
  std::vector<std::string> tokenize(const std::string& text) const override {
    std::istringstream in(text);
    std::vector<std::string> words;
    for (std::string word; in >> word;) words.push_back(word);
    return words;
  }
  std::vector<int64_t> encode_text_until(const std::string& text, std::size_t max_length) const override {
    std::vector<int64_t> out;
    for (const std::string& word : tokenize(text)) {
      if (out.size() >= max_length) break;
      out.push_back(static_cast<int64_t>(word.size()));
    }
    return out;
  }
  int64_t vocab_size() const override { return 200; }
  std::optional<int64_t> token_to_id(const std::string&) const override { return std::nullopt; }
  SpecialTokenIds special_tokens() const override { return {0, 100, 101, 102}; }
  Encoding add_special_tokens(const std::vector<int64_t>& a, const std::vector<int64_t>* b) const override {
    Encoding out;
    out.input_ids.push_back(101);
    out.input_ids.insert(out.input_ids.end(), a.begin(), a.end());
    out.input_ids.push_back(102);
    out.token_type_ids.assign(out.input_ids.size(), 0);
    if (b) {
      out.input_ids.insert(out.input_ids.end(), b->begin(), b->end());
      out.input_ids.push_back(102);
      out.token_type_ids.resize(out.input_ids.size(), 1);
    }
    return out;
  }
  int64_t num_special_tokens(bool pair) const override { return pair ? 3 : 2; }
  std::string fingerprint() const override { return "word-length"; }
};

// n words whose ids are 1, 2, ..., n (a word of k letters has id k).
std::string words(std::size_t n) {
  std::string out;
  for (std::size_t k = 1; k <= n; ++k) out += std::string(k, 'x') + " ";
  return out;
}

TEST(TokenizerEncode, NoMaxLengthKeepsEverything) {
  const WordLengthTokenizer tokenizer;
  const std::string text = words(30);
  const Encoding e = tokenizer.encode(text, nullptr, 0);
  EXPECT_EQ(e.input_ids.size(), 32U);
  EXPECT_EQ(e.input_ids.front(), 101);
  EXPECT_EQ(e.input_ids.back(), 102);
  EXPECT_EQ(tokenizer.encode(text, nullptr, -1).input_ids.size(), 32U);
}

TEST(TokenizerEncode, MaxLengthCountsTheTemplate) {
  const WordLengthTokenizer tokenizer;
  const std::string text = words(10);
  EXPECT_EQ(tokenizer.encode(text, nullptr, 6).input_ids, (std::vector<int64_t>{101, 1, 2, 3, 4, 102}));
  const std::string pair = words(10);
  const Encoding e = tokenizer.encode(text, &pair, 7);  // 4 ids of text: 2 + 2
  EXPECT_EQ(e.input_ids, (std::vector<int64_t>{101, 1, 2, 102, 1, 2, 102}));
  EXPECT_EQ(e.token_type_ids, (std::vector<int64_t>{0, 0, 0, 0, 1, 1, 1}));
}

// HF stops encoding each text near max_length before splitting the budget (exactly at it where
// every word is one id, as here): 13 and 11 tokens with max_length 10 become 10 and 10, a tie, so
// the second text gets the odd token (3 + 4), where the split alone would give it to the longer
// first text (4 + 3).
TEST(TokenizerEncode, EachTextIsCutToMaxLengthBeforeTheSplit) {
  const WordLengthTokenizer tokenizer;
  const std::string a = words(13), b = words(11);
  const Encoding cut = tokenizer.encode(a, &b, 10);
  EXPECT_EQ(cut.input_ids, (std::vector<int64_t>{101, 1, 2, 3, 102, 1, 2, 3, 4, 102}));
  const std::string shorter_b = words(6);  // under max_length: the longer text keeps the odd token
  const Encoding kept = tokenizer.encode(words(8), &shorter_b, 10);
  EXPECT_EQ(kept.input_ids, (std::vector<int64_t>{101, 1, 2, 3, 4, 102, 1, 2, 3, 102}));
}

TEST(TokenizerEncode, SaysWhetherItTruncated) {
  const WordLengthTokenizer tokenizer;
  const std::string pair = words(3);
  EXPECT_FALSE(tokenizer.encode(words(5), nullptr, 0).truncated);
  EXPECT_FALSE(tokenizer.encode(words(5), nullptr, 7).truncated);
  EXPECT_TRUE(tokenizer.encode(words(5), nullptr, 6).truncated);
  EXPECT_FALSE(tokenizer.encode(words(5), &pair, 11).truncated);
  EXPECT_TRUE(tokenizer.encode(words(5), &pair, 10).truncated);
}

TEST(TokenizerEncode, EncodeTextUntilCutsAtMaxLength) {
  const WordLengthTokenizer tokenizer;
  EXPECT_EQ(tokenizer.encode_text_until(words(5), 3), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(tokenizer.encode_text_until(words(2), 3), (std::vector<int64_t>{1, 2}));
}

TEST(TokenizerEncode, MaxLengthBelowTheTemplateLeavesOnlyTheTemplate) {
  const WordLengthTokenizer tokenizer;
  const std::string pair = words(3);
  EXPECT_EQ(tokenizer.encode(words(5), nullptr, 2).input_ids, (std::vector<int64_t>{101, 102}));
  EXPECT_EQ(tokenizer.encode(words(5), &pair, 2).input_ids, (std::vector<int64_t>{101, 102, 102}));
  EXPECT_EQ(tokenizer.encode(words(5), nullptr, 1).input_ids, (std::vector<int64_t>{101, 102}));
}

TEST(TokenizerEncode, EmptyTextsGiveTheTemplate) {
  const WordLengthTokenizer tokenizer;
  const std::string empty;
  const Encoding e = tokenizer.encode(empty, &empty, 8);
  EXPECT_EQ(e.input_ids, (std::vector<int64_t>{101, 102, 102}));
  EXPECT_EQ(e.token_type_ids, (std::vector<int64_t>{0, 0, 1}));
}

TEST(TokenizerEncode, EncodeTextIsEncodeTextUntilWithNoLimit) {
  const WordLengthTokenizer tokenizer;
  EXPECT_EQ(tokenizer.encode_text(words(7)), ids(7));
}

// ---- padding conventions ----

TEST(PaddingConvention, XlnetPadsLeftWithTypeThreeTheOthersRightWithZero) {
  const PaddingConvention xlnet = padding_convention(TokenizerKind::sentencepiece);
  EXPECT_TRUE(xlnet.pads_left);
  EXPECT_EQ(xlnet.pad_token_type_id, 3);
  for (const TokenizerKind kind : {TokenizerKind::wordpiece, TokenizerKind::byte_level_bpe}) {
    EXPECT_FALSE(padding_convention(kind).pads_left) << to_string(kind);
    EXPECT_EQ(padding_convention(kind).pad_token_type_id, 0) << to_string(kind);
  }
}

// ---- one small tokenizer of each kind ----

namespace small_tokenizers {

// A loaded tokenizer and a text that has words, special tokens and (but for BPE, which has no
// unknown token) a word outside the vocabulary.
struct Case {
  std::unique_ptr<Tokenizer> tokenizer;
  std::string text;
};

// Uncased BERT: "[CLS] [SEP] ..." ids 0-4, then hello 5, world 6, ##s 7, ! 8.
Case wordpiece(const testing::ScratchDir& dir) {
  TokenizerOptions options;
  options.kind = TokenizerKind::wordpiece;
  options.vocab_file = dir.write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\nworld\n##s\n!\n");
  return {load_tokenizer(options), "Hello worlds! [SEP] hello [MASK] xyz"};
}

// RoBERTa's specials 0-4, then h 5, i 6, "Ġ" (the byte-level space) 7, hi 8, Ġhi 9, ! 10.
Case bpe(const testing::ScratchDir& dir) {
  TokenizerOptions options;
  options.kind = TokenizerKind::byte_level_bpe;
  options.vocab_file = dir.write("vocab.json",
                                 R"({"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "<mask>": 4, "h": 5, "i": 6,)"
                                 "\"\xC4\xA0\": 7, \"hi\": 8, \"\xC4\xA0hi\": 9, \"!\": 10}");
  options.merges_file = dir.write("merges.txt", "#version: 0.2\nh i\n\xC4\xA0 hi\n");
  return {load_tokenizer(options), "hi hi! <mask> hi</s>"};
}

// XLNet: the fixture's model (<unk> <s> </s> <cls> <sep> <pad> <mask> <eod> <eop> are ids 0-8).
Case sentencepiece() {
  TokenizerOptions options;
  options.kind = TokenizerKind::sentencepiece;
  options.vocab_file = std::string(TBENCH_TEST_DATA) + "/tokenizers/sentencepiece/spiece.model";
  options.lowercase = false;
  return {load_tokenizer(options), "Hello world, <sep> a <mask> b\u16A0<cls>"};
}

std::vector<Case> all(const testing::ScratchDir& dir) {
  std::vector<Case> cases;
  cases.push_back(wordpiece(dir));
  cases.push_back(bpe(dir));
  cases.push_back(sentencepiece());
  return cases;
}

}  // namespace small_tokenizers

TEST(SmallTokenizers, EncodeTheirTexts) {
  const testing::ScratchDir dir;
  EXPECT_EQ(small_tokenizers::wordpiece(dir).tokenizer->encode_text("Hello worlds! [SEP] hello [MASK] xyz"),
            (std::vector<int64_t>{5, 6, 7, 8, 3, 5, 4, 1}));
  EXPECT_EQ(small_tokenizers::bpe(dir).tokenizer->encode_text("hi hi! <mask> hi</s>"),
            (std::vector<int64_t>{8, 9, 10, 4, 9, 2}));
}

TEST(SmallTokenizers, EncodeTextIsEncodeTextUntilWithNoLimit) {
  const testing::ScratchDir dir;
  for (const small_tokenizers::Case& c : small_tokenizers::all(dir)) {
    const Tokenizer& tokenizer = *c.tokenizer;
    const std::vector<int64_t> encoded = tokenizer.encode_text(c.text);
    EXPECT_GE(encoded.size(), 6U) << to_string(tokenizer.kind());
    EXPECT_EQ(encoded, tokenizer.encode_text_until(c.text, std::numeric_limits<std::size_t>::max()))
        << to_string(tokenizer.kind());
    // A limit the text never reaches does not stop it either (at encoded.size() it may: a special
    // token after the last word is left out once that word reaches the limit).
    EXPECT_EQ(encoded, tokenizer.encode_text_until(c.text, encoded.size() + 1)) << to_string(tokenizer.kind());
  }
}

TEST(SmallTokenizers, PadAsTheirKindsConventionSays) {
  const testing::ScratchDir dir;
  for (const small_tokenizers::Case& c : small_tokenizers::all(dir)) {
    const bool xlnet = c.tokenizer->kind() == TokenizerKind::sentencepiece;
    EXPECT_EQ(c.tokenizer->pads_left(), xlnet) << to_string(c.tokenizer->kind());
    EXPECT_EQ(c.tokenizer->pad_token_type_id(), xlnet ? 3 : 0) << to_string(c.tokenizer->kind());
  }
}

TEST(SmallTokenizers, TheirTemplatesCloseWithTheCountClosingSpecialTokensSays) {
  // Pre-tokenized data is cut before this many ids: they must be exactly the template's tail.
  const testing::ScratchDir dir;
  const std::vector<int64_t> text{5, 6, 5};
  for (const small_tokenizers::Case& c : small_tokenizers::all(dir)) {
    const Tokenizer& tokenizer = *c.tokenizer;
    for (const bool pair : {false, true}) {
      const Encoding encoding = tokenizer.add_special_tokens(text, pair ? &text : nullptr);
      const auto closing = static_cast<std::size_t>(closing_special_tokens(tokenizer.kind()));
      ASSERT_GT(encoding.input_ids.size(), closing);
      const std::vector<int64_t> tail(encoding.input_ids.end() - static_cast<std::ptrdiff_t>(closing), encoding.input_ids.end());
      const std::vector<int64_t> before(encoding.input_ids.end() - static_cast<std::ptrdiff_t>(closing) - 3,
                                        encoding.input_ids.end() - static_cast<std::ptrdiff_t>(closing));
      EXPECT_EQ(before, text) << to_string(tokenizer.kind()) << (pair ? " pair" : "");
      const SpecialTokenIds special = tokenizer.special_tokens();
      for (const int64_t id : tail) {
        EXPECT_TRUE(id == special.sep || id == special.cls) << to_string(tokenizer.kind()) << ": " << id;
      }
    }
  }
}

// ---- load_tokenizer ----

TEST(LoadTokenizer, DispatchesOnKind) {
  const std::filesystem::path vocab = std::filesystem::path(::testing::TempDir()) / "tbench_dispatch_vocab.txt";
  std::ofstream(vocab) << "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n";
  TokenizerOptions options;
  options.kind = TokenizerKind::wordpiece;
  options.vocab_file = vocab.string();
  const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(options);
  EXPECT_EQ(tokenizer->kind(), TokenizerKind::wordpiece);
  EXPECT_EQ(tokenizer->encode_text("hello"), (std::vector<int64_t>{4}));
}

TEST(LoadTokenizer, MissingFileIsBadInputNamingIt) {
  for (const TokenizerKind kind : {TokenizerKind::wordpiece, TokenizerKind::byte_level_bpe, TokenizerKind::sentencepiece}) {
    TokenizerOptions options;
    options.kind = kind;
    options.vocab_file = "/nonexistent/tbench/vocab-file";
    options.merges_file = "/nonexistent/tbench/merges-file";
    try {
      load_tokenizer(options);
      ADD_FAILURE() << "no error for " << to_string(kind);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::bad_input) << to_string(kind);
      EXPECT_NE(std::string(e.what()).find("/nonexistent/tbench/"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace tbench
