// WordPiece (BERT, DistilBERT) on small hand-written vocabularies: HF's BertNormalizer,
// BertPreTokenizer and greedy longest-match pieces, special tokens in the text, the template, and
// malformed vocab.txt files. Parity with HF on real output is tokenizer_parity_test.cpp's job.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tbench/errors.hpp"
#include "tbench/tokenize/tokenizer.hpp"
#include "tbench/tokenize/unicode_text.hpp"

namespace tbench {
namespace {

namespace fs = std::filesystem;
using Pieces = std::vector<std::string>;

const std::vector<std::string> kVocab = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",                   // 0-4
    "un", "##aff", "##able", "hello", "world", ",", "!", "$", "a",  // 5-13
    "##a", "b", "c", "##c", "cafe", "café", "中", "文", "中文",      // 14-22
    "σασ", "i", "i\u0307", "[", "]", "mask", "x", "©x", "ﬁ",       // 23-31
};

// A file in the temporary folder, named after the running test so that tests run in parallel
// never share one.
fs::path write_file(const std::string& name, const std::string& contents) {
  const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  const fs::path path = fs::path(::testing::TempDir()) / ("tbench_wordpiece_" + test + "_" + name);
  std::ofstream(path, std::ios::binary) << contents;
  return path;
}

fs::path write_vocab(const std::string& name, const std::vector<std::string>& tokens) {
  std::string contents;
  for (const std::string& token : tokens) contents += token + "\n";
  return write_file(name, contents);
}

std::unique_ptr<Tokenizer> wordpiece(bool lowercase = true, std::optional<bool> strip_accents = std::nullopt,
                                     bool chinese_chars = true, const std::vector<std::string>& vocab = kVocab) {
  TokenizerOptions options;
  options.kind = TokenizerKind::wordpiece;
  options.vocab_file = write_vocab("vocab.txt", vocab).string();
  options.lowercase = lowercase;
  options.strip_accents = strip_accents;
  options.tokenize_chinese_chars = chinese_chars;
  return load_wordpiece_tokenizer(options);
}

// The message of the bad-input Error loading `vocab_file` throws.
std::string load_error(const fs::path& vocab_file) {
  TokenizerOptions options;
  options.vocab_file = vocab_file.string();
  try {
    load_wordpiece_tokenizer(options);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    return e.what();
  }
  ADD_FAILURE() << "no error for " << vocab_file;
  return "";
}

// ---- pieces ----

TEST(WordPiece, GreedyLongestMatchWithContinuationPrefix) {
  const auto tokenizer = wordpiece();
  EXPECT_EQ(tokenizer->tokenize("unaffable"), (Pieces{"un", "##aff", "##able"}));
  EXPECT_EQ(tokenizer->encode_text("unaffable"), (std::vector<int64_t>{5, 6, 7}));
  EXPECT_EQ(tokenizer->tokenize("aaa cc"), (Pieces{"a", "##a", "##a", "c", "##c"}));
}

TEST(WordPiece, WordWithAnUnmatchablePartIsUnknownWhole) {
  const auto tokenizer = wordpiece();
  EXPECT_EQ(tokenizer->tokenize("unaffablez hello"), (Pieces{"[UNK]", "hello"}));
  EXPECT_EQ(tokenizer->encode_text("zzz"), (std::vector<int64_t>{1}));
}

TEST(WordPiece, WordsOverOneHundredCharactersAreUnknown) {
  const auto tokenizer = wordpiece();
  EXPECT_EQ(tokenizer->tokenize(std::string(100, 'a')).size(), 100U);
  EXPECT_EQ(tokenizer->tokenize(std::string(101, 'a')), (Pieces{"[UNK]"}));
  // Characters, not bytes: 100 two-byte characters are still one word to match.
  std::string accented;
  for (int i = 0; i < 100; ++i) accented += "á";
  EXPECT_EQ(tokenizer->tokenize(accented).size(), 100U);
}

TEST(WordPiece, EmptyAndBlankTextsHaveNoPieces) {
  const auto tokenizer = wordpiece();
  EXPECT_TRUE(tokenizer->tokenize("").empty());
  EXPECT_TRUE(tokenizer->encode_text(" \t\r\n\u3000 ").empty());
}

// ---- BertPreTokenizer ----

TEST(WordPiece, PunctuationIsAWordOfItsOwn) {
  const auto tokenizer = wordpiece();
  EXPECT_EQ(tokenizer->tokenize("hello,world!"), (Pieces{"hello", ",", "world", "!"}));
  // All ASCII symbols count ($ is Sc in Unicode); other symbols (© is So) do not.
  EXPECT_EQ(tokenizer->tokenize("$a"), (Pieces{"$", "a"}));
  EXPECT_EQ(tokenizer->tokenize("©x"), (Pieces{"©x"}));
  EXPECT_EQ(tokenizer->tokenize("a[b]c"), (Pieces{"a", "[", "b", "]", "c"}));
}

// ---- BertNormalizer ----

TEST(WordPiece, CleansControlCharactersAndWhiteSpace) {
  const auto tokenizer = wordpiece();
  // BEL (Cc), zero-width space (Cf), U+FFFD and NUL are dropped; tab, newline and NBSP split words.
  EXPECT_EQ(tokenizer->tokenize(std::string("hel\alo\u200b wor\xEF\xBF\xBDld") + std::string(1, '\0') + "!"),
            (Pieces{"hello", "world", "!"}));
  EXPECT_EQ(tokenizer->tokenize("a\tb\nc\u00a0a\u2003b"), (Pieces{"a", "b", "c", "a", "b"}));
  // A malformed UTF-8 byte reads as U+FFFD, which is dropped.
  EXPECT_EQ(tokenizer->tokenize("hel\xFFlo"), (Pieces{"hello"}));
}

TEST(WordPiece, CjkIdeographsAreWordsOfTheirOwn) {
  EXPECT_EQ(wordpiece()->tokenize("中文"), (Pieces{"中", "文"}));
  EXPECT_EQ(wordpiece()->tokenize("a中b"), (Pieces{"a", "中", "b"}));
  EXPECT_EQ(wordpiece(true, std::nullopt, /*chinese_chars=*/false)->tokenize("中文"), (Pieces{"中文"}));
}

TEST(WordPiece, AccentsFollowLowercaseUnlessSet) {
  EXPECT_EQ(wordpiece(true)->tokenize("CAFÉ Café"), (Pieces{"cafe", "cafe"}));
  EXPECT_EQ(wordpiece(true, false)->tokenize("CAFÉ"), (Pieces{"café"}));
  EXPECT_EQ(wordpiece(false)->tokenize("café Cafe"), (Pieces{"café", "[UNK]"}));
  EXPECT_EQ(wordpiece(false, true)->tokenize("café"), (Pieces{"cafe"}));
  // A combining accent is stripped as the precomposed one is.
  EXPECT_EQ(wordpiece(true)->tokenize("cafe\u0301"), (Pieces{"cafe"}));
}

TEST(WordPiece, LowercasesEachCharacterWithoutContext) {
  // No final-sigma rule (Rust's char::to_lowercase): ΣΑΣ becomes σασ, not σας.
  EXPECT_EQ(wordpiece(true)->tokenize("ΣΑΣ"), (Pieces{"σασ"}));
  // Full mappings: İ becomes i + U+0307, which accent stripping then drops.
  EXPECT_EQ(wordpiece(true, false)->tokenize("İ"), (Pieces{"i\u0307"}));
  EXPECT_EQ(wordpiece(true)->tokenize("İ"), (Pieces{"i"}));
  // No compatibility folding: the ligature stays a ligature.
  EXPECT_EQ(wordpiece(true)->tokenize("ﬁ"), (Pieces{"ﬁ"}));
}

// ---- special tokens ----

TEST(WordPiece, SpecialTokensInTheTextAreMatchedBeforeNormalizing) {
  const auto tokenizer = wordpiece();
  EXPECT_EQ(tokenizer->tokenize("a [MASK] b"), (Pieces{"a", "[MASK]", "b"}));
  EXPECT_EQ(tokenizer->encode_text("a [MASK] b"), (std::vector<int64_t>{13, 4, 15}));
  EXPECT_EQ(tokenizer->encode_text("x[SEP]x[CLS][PAD][UNK]"), (std::vector<int64_t>{29, 3, 29, 2, 0, 1}));
  // Exact and case-sensitive: lowercased or broken, it is plain text.
  EXPECT_EQ(tokenizer->tokenize("[mask] [MASK"), (Pieces{"[", "mask", "]", "[", "mask"}));
}

TEST(WordPiece, MaskIsOptionalInTheVocabulary) {
  std::vector<std::string> vocab = kVocab;
  vocab[4] = "[unused0]";
  const auto tokenizer = wordpiece(true, std::nullopt, true, vocab);
  EXPECT_EQ(tokenizer->tokenize("[MASK]"), (Pieces{"[", "mask", "]"}));
}

// ---- template, ids ----

TEST(WordPiece, TemplateAndTokenTypes) {
  const auto tokenizer = wordpiece();
  EXPECT_EQ(tokenizer->num_special_tokens(false), 2);
  EXPECT_EQ(tokenizer->num_special_tokens(true), 3);
  const std::vector<int64_t> a{8, 9}, b{13};
  const Encoding single = tokenizer->add_special_tokens(a, nullptr);
  EXPECT_EQ(single.input_ids, (std::vector<int64_t>{2, 8, 9, 3}));
  EXPECT_EQ(single.token_type_ids, (std::vector<int64_t>{0, 0, 0, 0}));
  const Encoding pair = tokenizer->add_special_tokens(a, &b);
  EXPECT_EQ(pair.input_ids, (std::vector<int64_t>{2, 8, 9, 3, 13, 3}));
  EXPECT_EQ(pair.token_type_ids, (std::vector<int64_t>{0, 0, 0, 0, 1, 1}));
  const std::string second = "a b c";
  const Encoding truncated = tokenizer->encode("hello world hello", &second, 6);  // 3 + 3 -> 1 + 2
  EXPECT_EQ(truncated.input_ids, (std::vector<int64_t>{2, 8, 3, 13, 15, 3}));
}

// When truncating, HF stops encoding a text after the word that brings it to max_length ids, so a
// word's pieces are never split there; encode() then sees 9 ids against 8, not 8 against 8, and
// the longer first text keeps the odd token of a budget of 5.
TEST(WordPiece, EncodingForTruncationStopsAtTheEndOfAWord) {
  const auto tokenizer = wordpiece();
  const std::string three_words = "unaffable unaffable unaffable";
  EXPECT_EQ(tokenizer->encode_text_until(three_words, 2), (std::vector<int64_t>{5, 6, 7}));
  EXPECT_EQ(tokenizer->encode_text_until(three_words, 3), (std::vector<int64_t>{5, 6, 7}));
  EXPECT_EQ(tokenizer->encode_text_until(three_words, 4).size(), 6U);
  // Special tokens count, but only a word of text ends the encoding (as measured on HF).
  EXPECT_EQ(tokenizer->encode_text_until("a [MASK] b c", 2), (std::vector<int64_t>{13, 4, 15}));
  EXPECT_EQ(tokenizer->encode_text_until("[MASK] [MASK] [MASK] b c", 2), (std::vector<int64_t>{4, 4, 4, 15}));
  EXPECT_EQ(tokenizer->encode_text_until("a b [MASK] c", 2), (std::vector<int64_t>{13, 15}));
  EXPECT_EQ(tokenizer->encode_text_until(three_words, 100), tokenizer->encode_text(three_words));
  const std::string eight_words = "a b c a b c a b";
  const Encoding e = tokenizer->encode(three_words, &eight_words, 8);
  EXPECT_EQ(e.input_ids, (std::vector<int64_t>{2, 5, 6, 7, 3, 13, 15, 3}));
}

TEST(WordPiece, SpecialIdsAndVocabularyLookups) {
  const auto tokenizer = wordpiece();
  const SpecialTokenIds special = tokenizer->special_tokens();
  EXPECT_EQ(special.pad, 0);
  EXPECT_EQ(special.unk, 1);
  EXPECT_EQ(special.cls, 2);
  EXPECT_EQ(special.sep, 3);
  EXPECT_EQ(tokenizer->vocab_size(), static_cast<int64_t>(kVocab.size()));
  EXPECT_EQ(tokenizer->token_to_id("##able"), 7);
  EXPECT_EQ(tokenizer->token_to_id("able"), std::nullopt);
  EXPECT_EQ(tokenizer->kind(), TokenizerKind::wordpiece);
  EXPECT_FALSE(tokenizer->pads_left());
  EXPECT_EQ(tokenizer->pad_token_type_id(), 0);
}

TEST(WordPiece, FingerprintFollowsSwitchesAndContents) {
  const std::string base = wordpiece(true)->fingerprint();
  EXPECT_EQ(wordpiece(true)->fingerprint(), base);
  EXPECT_EQ(wordpiece(true, true)->fingerprint(), base);  // unset strip_accents follows lowercase
  EXPECT_NE(wordpiece(false)->fingerprint(), base);
  EXPECT_NE(wordpiece(true, false)->fingerprint(), base);
  EXPECT_NE(wordpiece(true, std::nullopt, false)->fingerprint(), base);
  std::vector<std::string> other = kVocab;
  other.push_back("extra");
  EXPECT_NE(wordpiece(true, std::nullopt, true, other)->fingerprint(), base);
}

// ---- vocab.txt ----

TEST(WordPieceVocab, CrlfAndTrailingSpacesAreTrimmedAndEmptyLinesKeepTheirId) {
  TokenizerOptions options;
  options.vocab_file = write_file("crlf.txt", "[PAD]\r\n[UNK]  \r\n[CLS]\r\n\r\n[SEP]\r\nhello\r\nworld").string();
  const auto tokenizer = load_wordpiece_tokenizer(options);
  EXPECT_EQ(tokenizer->vocab_size(), 7);
  EXPECT_EQ(tokenizer->special_tokens().unk, 1);
  EXPECT_EQ(tokenizer->special_tokens().sep, 4);
  EXPECT_EQ(tokenizer->encode_text("hello world"), (std::vector<int64_t>{5, 6}));
}

TEST(WordPieceVocab, MalformedFilesNameFileAndLine) {
  const fs::path empty = write_file("empty.txt", "");
  EXPECT_NE(load_error(empty).find(empty.string() + ": empty"), std::string::npos);

  const fs::path duplicate = write_file("duplicate.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\nworld\nhello\n");
  const std::string duplicate_message = load_error(duplicate);
  EXPECT_NE(duplicate_message.find(duplicate.string() + ":7: duplicate token 'hello' (first on line 5)"),
            std::string::npos)
      << duplicate_message;

  const fs::path bad_utf8 = write_file("bad_utf8.txt", "[PAD]\n[UNK]\nab\xC3\n[CLS]\n[SEP]\n");
  const std::string utf8_message = load_error(bad_utf8);
  EXPECT_NE(utf8_message.find(bad_utf8.string() + ":3: "), std::string::npos) << utf8_message;
  EXPECT_NE(utf8_message.find("UTF-8"), std::string::npos) << utf8_message;
}

TEST(WordPieceVocab, MissingSpecialTokenNamesFileAndToken) {
  const fs::path no_cls = write_file("no_cls.txt", "[PAD]\n[UNK]\n[SEP]\nhello\n");
  const std::string message = load_error(no_cls);
  EXPECT_NE(message.find(no_cls.string()), std::string::npos) << message;
  EXPECT_NE(message.find("[CLS]"), std::string::npos) << message;
}

TEST(WordPieceVocab, UnreadablePathsNameThePath) {
  const std::string missing = load_error("/nonexistent/tbench/vocab.txt");
  EXPECT_NE(missing.find("/nonexistent/tbench/vocab.txt"), std::string::npos) << missing;
  const std::string directory = load_error(::testing::TempDir());
  EXPECT_NE(directory.find("directory"), std::string::npos) << directory;
}

// ---- Unicode as HF's tokenizers see it ----
// The unicode_categories crate behind BertNormalizer and BertPreTokenizer has Unicode 8.0 tables.

TEST(HfUnicode, CategoriesAreUnicodeEight) {
  EXPECT_TRUE(unicode::is_punctuation(U'!'));
  EXPECT_TRUE(unicode::is_punctuation(U'\u201C'));     // “ (Pi)
  EXPECT_FALSE(unicode::is_punctuation(U'$'));         // Sc: BERT adds the ASCII symbols itself
  EXPECT_TRUE(unicode::is_ascii_punctuation(U'$'));
  EXPECT_FALSE(unicode::is_ascii_punctuation(U'\u201C'));
  EXPECT_TRUE(unicode::is_punctuation(U'\u166D'));     // Po in 8.0, So since Unicode 12
  EXPECT_FALSE(unicode::is_punctuation(U'\u2E52'));    // Po, but only since Unicode 13
  EXPECT_TRUE(unicode::is_other(U'\u200B'));           // Cf
  EXPECT_TRUE(unicode::is_other(U'\uE000'));           // Co
  EXPECT_FALSE(unicode::is_other(U'\u0890'));          // Cf since Unicode 14
  EXPECT_TRUE(unicode::is_nonspacing_mark(U'\u0301'));
  EXPECT_FALSE(unicode::is_nonspacing_mark(U'\u1885'));  // Mn since Unicode 9
}

TEST(HfUnicode, WhiteSpaceIsRusts) {
  EXPECT_TRUE(unicode::is_white_space(U'\u3000'));
  EXPECT_TRUE(unicode::is_white_space(U'\u0085'));
  EXPECT_FALSE(unicode::is_white_space(U'\u001C'));  // Python's isspace says yes
  EXPECT_FALSE(unicode::is_white_space(U'\u200B'));
}

TEST(HfUnicode, DecompositionAndLowercase) {
  EXPECT_EQ(unicode::nfd(U"\u00E9"), U"e\u0301");
  EXPECT_EQ(unicode::nfd(U"\U00011938"), U"\U00011938");  // decomposed only since Unicode 13
  EXPECT_EQ(unicode::nfd(U"a\u0301\u0323"), U"a\u0323\u0301");  // canonical order
  EXPECT_EQ(unicode::to_lowercase(U"ΟΔΥΣΣΕΥΣ"), U"οδυσσευσ");
  EXPECT_EQ(unicode::to_lowercase(U"\u0130"), U"i\u0307");
  EXPECT_EQ(unicode::to_lowercase(U"ＡＢ\U00010400"), U"ａｂ\U00010428");
}

}  // namespace
}  // namespace tbench
