// The byte-level BPE tokenizer (RoBERTa) on small hand-made vocab.json + merges.txt files: merge
// order, GPT-2's byte mapping and pre-tokenization, special tokens, the template and bad files.
// Parity with HF on a trained vocabulary is in tokenizer_parity_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/cli.hpp"
#include "tbench/errors.hpp"
#include "tbench/tokenize/tokenizer.hpp"

namespace tbench {
namespace {

using Tokens = std::vector<std::string>;

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

// GPT-2's bytes_to_unicode, written out from its definition: printable Latin-1 bytes stand for
// themselves, the others take U+0100, U+0101, ... in byte order.
std::vector<std::string> gpt2_byte_chars() {
  std::vector<std::string> chars(256);
  char32_t next = 0x100;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    append_utf8(chars[b], printable ? static_cast<char32_t>(b) : next++);
  }
  return chars;
}

// vocab.json + merges.txt where byte b is id b, the specials follow, and each of `words` (in
// byte-level characters) is built by merging left to right; earlier words get lower ranks.
struct BpeFiles {
  std::string vocab;
  std::string merges;
};

BpeFiles write_bpe_files(const testing::ScratchDir& dir, const std::vector<std::vector<std::string>>& words,
                         bool with_mask = true) {
  nlohmann::ordered_json vocab;
  const std::vector<std::string> byte_chars = gpt2_byte_chars();
  for (int b = 0; b < 256; ++b) vocab[byte_chars[b]] = b;
  for (const char* special : {"<s>", "<pad>", "</s>", "<unk>", "<mask>"}) {
    if (with_mask || std::string(special) != "<mask>") vocab[special] = static_cast<int>(vocab.size());
  }
  std::string merges = "#version: 0.2\n";
  for (const auto& word : words) {
    std::string built = word.at(0);
    for (std::size_t i = 1; i < word.size(); ++i) {
      const std::string merged = built + word[i];
      if (!vocab.contains(merged)) {  // each merge once, at its first (lowest) rank
        merges += built + " " + word[i] + "\n";
        vocab[merged] = static_cast<int>(vocab.size());
      }
      built = merged;
    }
  }
  return {dir.write("vocab.json", vocab.dump()), dir.write("merges.txt", merges)};
}

std::unique_ptr<Tokenizer> load(const BpeFiles& files, bool add_prefix_space = false) {
  TokenizerOptions options;
  options.kind = TokenizerKind::byte_level_bpe;
  options.vocab_file = files.vocab;
  options.merges_file = files.merges;
  options.add_prefix_space = add_prefix_space;
  return load_byte_level_bpe_tokenizer(options);
}

// vocab.json + merges.txt with the given merges, in rank order (a pair may come twice: the later
// rank holds); each merged token enters the vocabulary once, after the bytes and the specials.
BpeFiles write_bpe_merges(const testing::ScratchDir& dir, const std::vector<std::pair<std::string, std::string>>& merges) {
  nlohmann::ordered_json vocab;
  const std::vector<std::string> byte_chars = gpt2_byte_chars();
  for (int b = 0; b < 256; ++b) vocab[byte_chars[b]] = b;
  for (const char* special : {"<s>", "<pad>", "</s>", "<unk>", "<mask>"}) vocab[special] = static_cast<int>(vocab.size());
  std::string lines = "#version: 0.2\n";
  for (const auto& [left, right] : merges) {
    if (!vocab.contains(left + right)) vocab[left + right] = static_cast<int>(vocab.size());
    lines += left + " " + right + "\n";
  }
  return {dir.write("vocab.json", vocab.dump()), dir.write("merges.txt", lines)};
}

// Splits a word into its characters ("Ġwe" -> {"Ġ", "w", "e"}), for write_bpe_files.
std::vector<std::string> chars(const std::string& word) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < word.size();) {
    std::size_t size = 1;
    const auto lead = static_cast<unsigned char>(word[i]);
    if (lead >= 0xF0) size = 4;
    else if (lead >= 0xE0) size = 3;
    else if (lead >= 0xC0) size = 2;
    out.push_back(word.substr(i, size));
    i += size;
  }
  return out;
}

TEST(ByteLevelBpeTokenizer, MergesTheLowestRankedPairFirst) {
  testing::ScratchDir dir;
  // "b c" outranks "a b": abc -> a + bc.
  auto tokenizer = load(write_bpe_files(dir, {{"b", "c"}, {"a", "b"}}));
  EXPECT_EQ(tokenizer->tokenize("abc"), (Tokens{"a", "bc"}));
  testing::ScratchDir other;
  auto reversed = load(write_bpe_files(other, {{"a", "b"}, {"b", "c"}}));
  EXPECT_EQ(reversed->tokenize("abc"), (Tokens{"ab", "c"}));
}

TEST(ByteLevelBpeTokenizer, RepeatedPairsMergeFromTheLeft) {
  testing::ScratchDir dir;
  auto tokenizer = load(write_bpe_files(dir, {{"a", "a"}, {"aa", "aa"}}));
  EXPECT_EQ(tokenizer->tokenize("aaa"), (Tokens{"aa", "a"}));
  EXPECT_EQ(tokenizer->tokenize("aaaaa"), (Tokens{"aaaa", "a"}));
}

TEST(ByteLevelBpeTokenizer, EveryByteMapsToGpt2sCharacter) {
  testing::ScratchDir dir;
  auto tokenizer = load(write_bpe_files(dir, {}));
  const std::vector<std::string> byte_chars = gpt2_byte_chars();
  for (int b = 0; b < 256; ++b) {
    // Single bytes, malformed UTF-8 included: byte-level BPE has no unknown input.
    const std::string text(1, static_cast<char>(b));
    EXPECT_EQ(tokenizer->encode_text(text), (std::vector<int64_t>{b})) << "byte " << b;
  }
  EXPECT_EQ(tokenizer->tokenize(" \n"), (Tokens{"Ġ", "Ċ"}));
  // é is two UTF-8 bytes, so two characters.
  EXPECT_EQ(tokenizer->tokenize("é"), (Tokens{"Ã", "©"}));
}

TEST(ByteLevelBpeTokenizer, SplitsContractionsAsGpt2) {
  testing::ScratchDir dir;
  // The wrong splits come first (lowest ranks): if the pre-tokenizer left "don't" whole, the
  // merges would build it.
  auto tokenizer = load(write_bpe_files(dir, {chars("don't"), chars("Ġwe're"), chars("don"), chars("'t"),
                                              chars("Ġwe"), chars("'re"), chars("ĠI"), chars("LL")}));
  EXPECT_EQ(tokenizer->tokenize("don't we're"), (Tokens{"don", "'t", "Ġwe", "'re"}));
  // Only lower-case contractions are special; "'LL" is a symbol then letters.
  EXPECT_EQ(tokenizer->tokenize(" I'LL"), (Tokens{"ĠI", "'", "LL"}));
}

TEST(ByteLevelBpeTokenizer, ARunOfSpacesLeavesItsLastSpaceToTheNextWord) {
  testing::ScratchDir dir;
  auto tokenizer = load(write_bpe_files(dir, {chars("ĠĠĠ"), chars("ĠĠ"), chars("Ġb")}));
  EXPECT_EQ(tokenizer->tokenize("a   b"), (Tokens{"a", "ĠĠ", "Ġb"}));
  EXPECT_EQ(tokenizer->tokenize("a   "), (Tokens{"a", "ĠĠĠ"}));  // at the end the run stays whole
  EXPECT_EQ(tokenizer->tokenize("a\t b"), (Tokens{"a", "ĉ", "Ġb"}));
  EXPECT_EQ(tokenizer->tokenize("a \tb"), (Tokens{"a", "Ġ", "ĉ", "b"}));  // a lone space before \t
}

TEST(ByteLevelBpeTokenizer, SeparatesLettersNumbersAndSymbolsByUnicodeCategory) {
  testing::ScratchDir dir;
  // Traps first: each of these would appear if two categories were not split apart.
  auto tokenizer = load(write_bpe_files(dir, {chars("Ġ12"), chars("ab12"), chars("12!?"), chars("ab"), chars("12"),
                                              chars("!?"), chars("ĠÃ©t"), chars("Ã©t"), chars("Î±Î²Ù£"),
                                              chars("Î±Î²"), chars("Ù£")}));
  EXPECT_EQ(tokenizer->tokenize("ab12!? 12"), (Tokens{"ab", "12", "!?", "Ġ12"}));
  // é (U+00E9) is a letter, so " ét" is one word: its three UTF-8 bytes merge back.
  EXPECT_EQ(tokenizer->tokenize(" ét"), (Tokens{"ĠÃ©t"}));
  // Greek letters and an Arabic-Indic digit (bytes CE B1 CE B2, D9 A3) are letters and a number.
  EXPECT_EQ(tokenizer->tokenize("αβ٣"), (Tokens{"Î±Î²", "Ù£"}));
}

TEST(ByteLevelBpeTokenizer, SpecialTokensInTheTextAreSplitOut) {
  testing::ScratchDir dir;
  auto tokenizer = load(write_bpe_files(dir, {chars("hi")}));
  const int64_t s = *tokenizer->token_to_id("<s>"), end = *tokenizer->token_to_id("</s>");
  const int64_t hi = *tokenizer->token_to_id("hi");
  EXPECT_EQ(tokenizer->encode_text("<s>hi</s>"), (std::vector<int64_t>{s, hi, end}));
  EXPECT_EQ(tokenizer->tokenize("<pad><unk>"), (Tokens{"<pad>", "<unk>"}));
  // Near misses are plain text.
  EXPECT_EQ(tokenizer->tokenize("<s >").size(), 4u);
}

TEST(ByteLevelBpeTokenizer, MaskAbsorbsTheSpacesOnItsLeft) {
  testing::ScratchDir dir;
  auto tokenizer = load(write_bpe_files(dir, {chars("Ġsat")}));
  const int64_t mask = *tokenizer->token_to_id("<mask>");
  // As HF: the token's text keeps the spaces it took; the next word keeps its own space.
  EXPECT_EQ(tokenizer->tokenize("a  <mask> sat"), (Tokens{"a", "  <mask>", "Ġsat"}));
  EXPECT_EQ(tokenizer->encode_text("a <mask>"), (std::vector<int64_t>{'a', mask}));
  EXPECT_EQ(tokenizer->encode_text("<mask><mask>"), (std::vector<int64_t>{mask, mask}));
  // Other special tokens keep the space before them in the text.
  EXPECT_EQ(tokenizer->tokenize("a </s>"), (Tokens{"a", "Ġ", "</s>"}));
}

TEST(ByteLevelBpeTokenizer, TruncatingStopsAfterTheWordThatReachesTheLimit) {
  testing::ScratchDir dir;
  auto tokenizer = load(write_bpe_files(dir, {chars("Ġa")}));
  const int64_t a = 'a', space_a = *tokenizer->token_to_id("Ġa"), mask = *tokenizer->token_to_id("<mask>");
  EXPECT_EQ(tokenizer->encode_text_until("a a a a a", 3), (std::vector<int64_t>{a, space_a, space_a}));
  // An added token reaching the limit does not stop it (as in HF): the next word still comes.
  EXPECT_EQ(tokenizer->encode_text_until("a a <mask> a a", 3), (std::vector<int64_t>{a, space_a, mask, space_a}));
  EXPECT_EQ(tokenizer->encode_text("a a <mask> a a").size(), 5u);
}

TEST(ByteLevelBpeTokenizer, AddPrefixSpaceGivesTheFirstWordASpace) {
  testing::ScratchDir dir;
  const BpeFiles files = write_bpe_files(dir, {chars("Ġhi")});
  EXPECT_EQ(load(files, false)->tokenize("hi"), (Tokens{"h", "i"}));
  EXPECT_EQ(load(files, true)->tokenize("hi"), (Tokens{"Ġhi"}));
  EXPECT_EQ(load(files, true)->tokenize(" hi"), (Tokens{"Ġhi"}));  // no second space
  EXPECT_NE(load(files, false)->fingerprint(), load(files, true)->fingerprint());
}

TEST(ByteLevelBpeTokenizer, TemplateIsRobertasWithOneTokenType) {
  testing::ScratchDir dir;
  auto tokenizer = load(write_bpe_files(dir, {}));
  const SpecialTokenIds special = tokenizer->special_tokens();
  EXPECT_EQ(special.cls, *tokenizer->token_to_id("<s>"));
  EXPECT_EQ(special.sep, *tokenizer->token_to_id("</s>"));
  EXPECT_EQ(special.pad, *tokenizer->token_to_id("<pad>"));
  EXPECT_EQ(special.unk, *tokenizer->token_to_id("<unk>"));
  const std::vector<int64_t> a{10, 11}, b{12};
  const Encoding single = tokenizer->add_special_tokens(a, nullptr);
  EXPECT_EQ(single.input_ids, (std::vector<int64_t>{special.cls, 10, 11, special.sep}));
  EXPECT_EQ(single.token_type_ids, (std::vector<int64_t>(4, 0)));
  const Encoding pair = tokenizer->add_special_tokens(a, &b);
  EXPECT_EQ(pair.input_ids, (std::vector<int64_t>{special.cls, 10, 11, special.sep, special.sep, 12, special.sep}));
  EXPECT_EQ(pair.token_type_ids, (std::vector<int64_t>(7, 0)));
  EXPECT_EQ(tokenizer->num_special_tokens(false), 2);
  EXPECT_EQ(tokenizer->num_special_tokens(true), 4);
  EXPECT_FALSE(tokenizer->pads_left());
  EXPECT_EQ(tokenizer->kind(), TokenizerKind::byte_level_bpe);
  EXPECT_EQ(tokenizer->vocab_size(), 261);  // 256 bytes + 5 specials
}

// The Error a load throws, with the message checked to name `where`.
void expect_bad_input(const BpeFiles& files, const std::string& where) {
  try {
    load(files);
    FAIL() << "expected a bad-input error naming " << where;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find(where), std::string::npos) << e.what();
  }
}

TEST(ByteLevelBpeTokenizer, BadVocabJsonIsABadInputErrorNamingTheFile) {
  testing::ScratchDir dir;
  const BpeFiles good = write_bpe_files(dir, {});
  expect_bad_input({dir.write("a.json", "{\"a\": 1,"), good.merges}, dir.file("a.json") + ": not valid JSON");
  expect_bad_input({dir.write("b.json", "[1, 2]"), good.merges}, dir.file("b.json"));
  expect_bad_input({dir.write("c.json", "{\"a\": \"1\"}"), good.merges}, dir.file("c.json") + ": \"a\"");
  expect_bad_input({dir.write("d.json", "{\"a\": -1}"), good.merges}, dir.file("d.json") + ": \"a\"");
  expect_bad_input({dir.file("missing.json"), good.merges}, dir.file("missing.json"));
  testing::ScratchDir no_mask;
  expect_bad_input(write_bpe_files(no_mask, {}, false), no_mask.file("vocab.json") + ": special token <mask>");
}

TEST(ByteLevelBpeTokenizer, BadMergesTxtIsABadInputErrorNamingFileAndLine) {
  testing::ScratchDir dir;
  const BpeFiles good = write_bpe_files(dir, {chars("ab")});
  const std::string three_pieces = dir.write("m1.txt", "#version: 0.2\na b\na b c\n");
  expect_bad_input({good.vocab, three_pieces}, three_pieces + ":3: expected two pieces");
  const std::string one_piece = dir.write("m2.txt", "ab\n");
  expect_bad_input({good.vocab, one_piece}, one_piece + ":1: expected two pieces");
  // Both pieces are in the vocabulary but what they merge into, "ba", is not.
  const std::string unknown = dir.write("m3.txt", "#version: 0.2\nb a\n");
  expect_bad_input({good.vocab, unknown}, unknown + ":2: \"ba\" is not in the vocabulary");
  const std::string unknown_piece = dir.write("m4.txt", "#version: 0.2\nxy z\n");
  expect_bad_input({good.vocab, unknown_piece}, unknown_piece + ":2: \"xy\" is not in the vocabulary");
}

TEST(ByteLevelBpeTokenizer, FingerprintFollowsTheFiles) {
  testing::ScratchDir one, two;
  const std::string a = load(write_bpe_files(one, {chars("ab")}))->fingerprint();
  const std::string b = load(write_bpe_files(two, {chars("ba")}))->fingerprint();
  EXPECT_NE(a, b);
  EXPECT_EQ(a, load(write_bpe_files(two, {chars("ab")}))->fingerprint());
}

// Found by review: one huge id (2^31 - 1) made the id -> token table 64 GiB before anything was
// checked (std::bad_alloc, exit 1). vocab.json numbers its n tokens 0..n-1.
// HF loads a vocab.json whose ids leave holes; the embedding rows it needs are the largest id + 1.
// A huge id made a table of one string per id (2^31 - 1: 64 GiB, bad_alloc, exit 1): ids are now
// looked up, and the run refuses a vocabulary larger than its model's embedding table.
TEST(ByteLevelBpeTokenizer, IdsWithHolesLoadAndTheVocabularySizeIsTheLargestIdPlusOne) {
  testing::ScratchDir dir;
  const BpeFiles good = write_bpe_files(dir, {});
  std::ifstream in(good.vocab);
  const nlohmann::json vocab = nlohmann::json::parse(in);  // 261 tokens: ids 0..260
  const auto reference = load({good.vocab, good.merges});
  const std::string text = "hello <mask> world";
  for (const int64_t id : {int64_t{2147483647}, int64_t{261}}) {
    nlohmann::json holes = vocab;
    holes["<mask>"] = id;  // its old id is now a hole
    const auto tokenizer = load({dir.write("vocab-" + std::to_string(id) + ".json", holes.dump()), good.merges});
    EXPECT_EQ(tokenizer->vocab_size(), id + 1);
    EXPECT_EQ(tokenizer->special_tokens().mask, id);
    EXPECT_EQ(tokenizer->tokenize(text), reference->tokenize(text));
  }
}

// The straightforward BPE that merge_word must agree with token for token: rescan the word, merge
// the lowest-ranked adjacent pair (the leftmost on a tie), until no pair merges.
Tokens reference_bpe(const std::string& word, const std::map<std::pair<std::string, std::string>, int>& ranks) {
  Tokens symbols;
  for (const char c : word) symbols.emplace_back(1, c);
  while (symbols.size() > 1) {
    std::size_t best = symbols.size();
    int best_rank = 0;
    for (std::size_t i = 0; i + 1 < symbols.size(); ++i) {
      const auto it = ranks.find({symbols[i], symbols[i + 1]});
      if (it != ranks.end() && (best == symbols.size() || it->second < best_rank)) best = i, best_rank = it->second;
    }
    if (best == symbols.size()) break;
    symbols[best] += symbols[best + 1];
    symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
  return symbols;
}

// The heap-based merge against the reference on random merge tables over three letters, which
// make repeated pairs (ties), one token reached by two pairs ("ab c" and "a bc"), and pairs listed
// twice (the later rank holds) common.
TEST(ByteLevelBpeTokenizer, MergesAsTheStraightforwardAlgorithmOnRandomWords) {
  std::mt19937 rng(20261127);
  for (int table = 0; table < 25; ++table) {
    std::vector<std::string> tokens = {"a", "b", "c"};
    std::vector<std::pair<std::string, std::string>> merges;
    std::map<std::pair<std::string, std::string>, int> ranks;
    while (merges.size() < 40) {
      const std::string left = tokens[rng() % tokens.size()], right = tokens[rng() % tokens.size()];
      if (left.size() + right.size() > 6) continue;
      ranks[{left, right}] = static_cast<int>(merges.size());
      merges.emplace_back(left, right);
      if (std::find(tokens.begin(), tokens.end(), left + right) == tokens.end()) tokens.push_back(left + right);
    }
    testing::ScratchDir dir;
    const auto tokenizer = load(write_bpe_merges(dir, merges));
    for (int w = 0; w < 200; ++w) {
      std::string word(1 + rng() % 40, 'a');
      for (char& c : word) c = static_cast<char>('a' + rng() % 3);
      ASSERT_EQ(tokenizer->tokenize(word), reference_bpe(word, ranks)) << "table " << table << ", word " << word;
    }
  }
}

// Found by review: each merge rescanned the word and erased from a vector, so one 160k-character
// unbroken word (a base64 blob, a DNA read) took 30 s. This one would take minutes that way.
TEST(ByteLevelBpeTokenizer, AVeryLongWordMergesInNLogNTime) {
  std::vector<std::pair<std::string, std::string>> merges;
  for (std::string piece = "a"; piece.size() < 1024; piece += piece) merges.emplace_back(piece, piece);  // up to 1024 a's
  testing::ScratchDir dir;
  const auto tokenizer = load(write_bpe_merges(dir, merges));
  // Pairs merge from the left, so 200000 = 195 x 1024 + 256 + 64 splits as its binary digits.
  Tokens expected(195, std::string(1024, 'a'));
  expected.push_back(std::string(256, 'a'));
  expected.push_back(std::string(64, 'a'));
  EXPECT_EQ(tokenizer->tokenize(std::string(200000, 'a')), expected);
  EXPECT_EQ(tokenizer->encode("x" + std::string(200000, 'a'), nullptr, 16).input_ids.size(), 16u);
}

}  // namespace
}  // namespace tbench
