// RoBERTa's byte-level BPE as HF's fast tokenizer runs it (RobertaConverter): the input is split
// on the special tokens, each other part is cut by the GPT-2 pattern, every byte of a word becomes
// one printable character (GPT-2's bytes_to_unicode), and the word's characters are merged by the
// rank of merges.txt. Template: <s> a </s> and <s> a </s></s> b </s>, token types all 0.
#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tbench/errors.hpp"
#include "tbench/tokenize/tokenizer.hpp"
#include "tbench/tokenize/unicode_text.hpp"
#include "tbench/files.hpp"
#include "tbench/json_text.hpp"
#include "tokenizer_support.hpp"

namespace tbench {

namespace {

using tokenize::AddedToken;
using tokenize::decode_utf8;

// ---------------------------------------------------------------------------------------------
// GPT-2 pre-tokenization: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// std::regex has no \p{..}, so the pattern is matched by hand on Unicode categories.

enum class CharClass { letter, number, whitespace, other };

struct TextChar {
  std::size_t offset;
  std::size_t size;
  char32_t value;
  CharClass cls;
};

CharClass classify(const tokenize::CodePoint& cp) {
  if (!cp.valid) return CharClass::other;  // a stray byte: still tokenized, byte by byte
  if (unicode::is_letter(cp.value)) return CharClass::letter;
  if (unicode::is_number(cp.value)) return CharClass::number;
  if (unicode::is_white_space(cp.value)) return CharClass::whitespace;
  return CharClass::other;
}

std::vector<TextChar> decode_chars(std::string_view text) {
  std::vector<TextChar> chars;
  for (std::size_t pos = 0; pos < text.size();) {
    const tokenize::CodePoint cp = decode_utf8(text, pos);
    chars.push_back({pos, cp.size, cp.value, classify(cp)});
    pos += cp.size;
  }
  return chars;
}

// 's 't 'm 'd (2 chars) or 're 've 'll (3 chars) at `i`; 0 when none. Case-sensitive, as in GPT-2.
std::size_t contraction_length(const std::vector<TextChar>& chars, std::size_t i) {
  auto is = [&](std::size_t k, char32_t c) { return i + k < chars.size() && chars[i + k].value == c; };
  if (!is(0, U'\'')) return 0;
  if (is(1, U's') || is(1, U't') || is(1, U'm') || is(1, U'd')) return 2;
  if ((is(1, U'r') && is(2, U'e')) || (is(1, U'v') && is(2, U'e')) || (is(1, U'l') && is(2, U'l'))) return 3;
  return 0;
}

std::size_t run_end(const std::vector<TextChar>& chars, std::size_t i, CharClass cls) {
  while (i < chars.size() && chars[i].cls == cls) ++i;
  return i;
}

// End (exclusive, in chars) of the pattern's match at `i`, trying the alternatives in order.
std::size_t gpt2_match_end(const std::vector<TextChar>& chars, std::size_t i) {
  if (const std::size_t n = contraction_length(chars, i)) return i + n;
  // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: only U+0020 may lead, and only one class fits.
  const std::size_t body = (chars[i].value == U' ' && i + 1 < chars.size()) ? i + 1 : i;
  if (chars[body].cls != CharClass::whitespace) return run_end(chars, body, chars[body].cls);
  // `\s+(?!\S)` leaves the last space of a run for the word after it; `\s+` takes a lone one.
  const std::size_t end = run_end(chars, i, CharClass::whitespace);
  if (end == chars.size() || end - i == 1) return end;
  return end - 1;
}

std::vector<std::string_view> split_gpt2_words(std::string_view text) {
  const std::vector<TextChar> chars = decode_chars(text);
  std::vector<std::string_view> words;
  for (std::size_t i = 0; i < chars.size();) {
    const std::size_t end = gpt2_match_end(chars, i);
    const std::size_t end_offset = end < chars.size() ? chars[end].offset : text.size();
    words.push_back(text.substr(chars[i].offset, end_offset - chars[i].offset));
    i = end;
  }
  return words;
}

// ---------------------------------------------------------------------------------------------
// GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the other 68 bytes take
// the code points from U+0100 on, in byte order. So every word is a string of vocabulary chars.
std::array<std::string, 256> make_byte_to_char() {
  std::array<std::string, 256> table;
  auto printable = [](int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE); };
  char32_t next_spare = 256;
  for (int b = 0; b < 256; ++b) {
    tokenize::append_utf8(table[b], printable(b) ? static_cast<char32_t>(b) : next_spare++);
  }
  return table;
}

const std::array<std::string, 256>& byte_to_char() {
  static const std::array<std::string, 256> table = make_byte_to_char();
  return table;
}

// ---------------------------------------------------------------------------------------------
// Files.

using BpeVocabulary = std::unordered_map<std::string, int64_t>;

struct Merge {
  int64_t rank;
  int64_t merged_id;
};
using MergeTable = std::unordered_map<uint64_t, Merge>;  // key: the two ids

uint64_t pair_key(int64_t left, int64_t right) {
  return (static_cast<uint64_t>(left) << 32) | static_cast<uint64_t>(right);
}

BpeVocabulary parse_vocab_json(const std::string& path, const std::string& bytes) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(bytes);
  } catch (const nlohmann::json::exception& e) {
    throw input_error(path + ": not valid JSON: " + e.what());
  }
  if (!json.is_object()) throw input_error(path + ": expected a JSON object of token -> id");
  BpeVocabulary vocab;
  for (const auto& [token, id] : json.items()) {
    // ids index the embedding table, so they must fit it (and the 32-bit merge keys).
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
      throw input_error(path + ": \"" + token + "\": id must be a non-negative integer, got " + json_text(id));
    }
    vocab[token] = id.get<int64_t>();
  }
  if (vocab.empty()) throw input_error(path + ": the vocabulary is empty");
  return vocab;
}

int64_t vocab_id_or_throw(const BpeVocabulary& vocab, const std::string& piece, const std::string& where) {
  const std::optional<int64_t> id = tokenize::find_id(vocab, piece);
  if (!id) throw input_error(where + ": \"" + piece + "\" is not in the vocabulary");
  return *id;
}

// HF's reader: "#version" lines are skipped, every other line is exactly two pieces separated by
// one space; both pieces and their concatenation must be in vocab.json. A later duplicate of a
// merge takes the later rank, as HF's map does.
MergeTable parse_merges_txt(const std::string& path, const std::string& bytes, const BpeVocabulary& vocab) {
  MergeTable merges;
  int64_t rank = 0;
  tokenize::for_each_line(bytes, [&](std::string_view line, std::size_t line_number) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.rfind("#version", 0) == 0) return;
    const std::string where = path + ":" + std::to_string(line_number);
    const std::size_t space = line.find(' ');
    if (space == std::string_view::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string_view::npos) {
      throw input_error(where + ": expected two pieces separated by one space, got \"" + std::string(line) + "\"");
    }
    const std::string left(line.substr(0, space));
    const std::string right(line.substr(space + 1));
    const int64_t left_id = vocab_id_or_throw(vocab, left, where);
    const int64_t right_id = vocab_id_or_throw(vocab, right, where);
    const int64_t merged_id = vocab_id_or_throw(vocab, left + right, where);
    merges[pair_key(left_id, right_id)] = {rank++, merged_id};
  });
  return merges;
}

// ---------------------------------------------------------------------------------------------

class ByteLevelBpeTokenizer final : public Tokenizer {
 public:
  ByteLevelBpeTokenizer(BpeVocabulary vocab, MergeTable merges, const std::string& vocab_path, bool add_prefix_space,
                        std::string fingerprint)
      : vocab_(std::move(vocab)),
        merges_(std::move(merges)),
        add_prefix_space_(add_prefix_space),
        fingerprint_(std::move(fingerprint)) {
    // HF's vocab.json numbers its n tokens 0..n-1, but it loads one with holes too: ids are looked up,
    // not indexed, so a huge id (2^31 - 1) costs nothing here. The run refuses a vocabulary larger
    // than the model's embedding table, naming data.tokenizer and both sizes.
    for (const auto& [token, id] : vocab_) {
      id_to_token_.emplace(id, token);
      vocab_size_ = std::max(vocab_size_, id + 1);
    }
    auto special = [&](const char* token) {
      const std::optional<int64_t> id = tokenize::find_id(vocab_, token);
      if (!id) throw input_error(vocab_path + ": special token " + token + " is missing");
      return *id;
    };
    special_ = {special("<pad>"), special("<unk>"), special("<s>"), special("</s>"), special("<mask>")};
    // RobertaTokenizer's <mask> is an AddedToken with lstrip=True: "a <mask>" is "a" + "<mask>".
    added_tokens_ = {{"<s>", special("<s>"), false},     {"<pad>", special("<pad>"), false},
                     {"</s>", special("</s>"), false},   {"<unk>", special("<unk>"), false},
                     {"<mask>", special("<mask>"), true}};
  }

  TokenizerKind kind() const override { return TokenizerKind::byte_level_bpe; }

  std::vector<std::string> tokenize(const std::string& text) const override {
    std::vector<std::string> tokens;
    for_each_token(text, std::numeric_limits<std::size_t>::max(),
                   [&](std::string_view token, int64_t) { tokens.emplace_back(token); });
    return tokens;
  }

  std::vector<int64_t> encode_text_until(const std::string& text, std::size_t max_length) const override {
    std::vector<int64_t> ids;
    for_each_token(text, max_length, [&](std::string_view, int64_t id) { ids.push_back(id); });
    return ids;
  }

  int64_t vocab_size() const override { return vocab_size_; }

  std::optional<int64_t> token_to_id(const std::string& token) const override {
    return tokenize::find_id(vocab_, token);
  }

  SpecialTokenIds special_tokens() const override { return special_; }

  Encoding add_special_tokens(const std::vector<int64_t>& a, const std::vector<int64_t>* b) const override {
    Encoding encoding;
    auto& ids = encoding.input_ids;
    ids.push_back(special_.cls);
    ids.insert(ids.end(), a.begin(), a.end());
    ids.push_back(special_.sep);
    if (b) {
      ids.push_back(special_.sep);
      ids.insert(ids.end(), b->begin(), b->end());
      ids.push_back(special_.sep);
    }
    encoding.token_type_ids.assign(ids.size(), 0);  // RoBERTa has a single token type
    return encoding;
  }

  int64_t num_special_tokens(bool pair) const override { return pair ? 4 : 2; }

  std::string fingerprint() const override { return fingerprint_; }

 private:
  // Calls visit(token text, id) for each token of `text`, in order, as tokenize::for_each_token
  // walks it (which also says where max_tokens stops it).
  template <typename Visit>
  void for_each_token(const std::string& text, std::size_t max_tokens, Visit&& visit) const {
    const auto words = [&](std::string_view segment, auto&& on_word) {
      // HF's ByteLevel(add_prefix_space) gives every part between added tokens its leading space.
      std::string plain(segment);
      if (add_prefix_space_ && plain.front() != ' ') plain.insert(0, 1, ' ');
      for (const std::string_view word : split_gpt2_words(plain)) {
        if (!on_word(word)) return;
      }
    };
    const auto tokens = [&](std::string_view word, auto&& on_token) {
      const std::vector<int64_t> ids =
          cache_.ids_of(std::string(word), [&](const std::string& uncached) { return merge_word(uncached); });
      for (const int64_t id : ids) on_token(id_to_token_.at(id), id);
    };
    tokenize::for_each_token(text, added_tokens_, max_tokens, words, tokens, visit);
  }

  // One symbol per byte, then the lowest-ranked adjacent pair is merged (the leftmost on a tie)
  // until no pair has a merge: the order HF's priority queue produces. The symbols form a linked
  // list over an array and the candidate pairs wait in a min-heap keyed by (rank, left position),
  // so a word of n bytes takes O(n log n), not the O(n^2) of rescanning it after every merge (a
  // 160k-byte unbroken word took 30 s). A symbol keeps its first byte's position, so positions
  // still order the symbols left to right.
  std::vector<int64_t> merge_word(std::string_view word) const {
    std::vector<Symbol> symbols = byte_symbols(word);
    CandidateHeap candidates;
    for (std::size_t i = 0; i + 1 < symbols.size(); ++i) push_candidate(symbols, i, candidates);
    while (!candidates.empty()) {
      const auto [rank, left] = candidates.top();
      candidates.pop();
      // An entry is stale once either of its symbols merged with another: the pair at `left` is
      // then another one, or none. Each pair has its own rank (its line in merges.txt), so the
      // rank tells them apart.
      const std::optional<Merge> merge = merge_at(symbols, left);
      if (!merge || merge->rank != rank) continue;
      const std::size_t right = symbols[left].next;
      symbols[left].id = merge->merged_id;
      symbols[left].next = symbols[right].next;
      symbols[right].alive = false;
      if (symbols[left].next != kNone) symbols[symbols[left].next].prev = left;
      if (symbols[left].prev != kNone) push_candidate(symbols, symbols[left].prev, candidates);
      push_candidate(symbols, left, candidates);
    }
    std::vector<int64_t> ids;
    for (const Symbol& symbol : symbols) {
      if (symbol.alive) ids.push_back(symbol.id);
    }
    return ids;
  }

  static constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

  struct Symbol {
    int64_t id;
    std::size_t prev;  // kNone at the word's ends
    std::size_t next;
    bool alive;        // false once merged into the symbol on its left
  };

  // (merge rank, position of the pair's left symbol), smallest first.
  using Candidate = std::pair<int64_t, std::size_t>;
  using CandidateHeap = std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>>;

  // A symbol per byte, linked in order. A byte char missing from the vocabulary is dropped, as
  // HF's BPE does without an unk token.
  std::vector<Symbol> byte_symbols(std::string_view word) const {
    std::vector<Symbol> symbols;
    symbols.reserve(word.size());
    for (const char byte : word) {
      const auto id = token_to_id(byte_to_char()[static_cast<unsigned char>(byte)]);
      if (!id) continue;
      const std::size_t at = symbols.size();
      symbols.push_back({*id, at == 0 ? kNone : at - 1, kNone, true});
      if (at > 0) symbols[at - 1].next = at;
    }
    return symbols;
  }

  // The merge of the live symbol at `left` with the one after it, if it has one and they merge.
  std::optional<Merge> merge_at(const std::vector<Symbol>& symbols, std::size_t left) const {
    if (!symbols[left].alive || symbols[left].next == kNone) return std::nullopt;
    const auto it = merges_.find(pair_key(symbols[left].id, symbols[symbols[left].next].id));
    if (it == merges_.end()) return std::nullopt;
    return it->second;
  }

  void push_candidate(const std::vector<Symbol>& symbols, std::size_t left, CandidateHeap& candidates) const {
    if (const std::optional<Merge> merge = merge_at(symbols, left)) candidates.push({merge->rank, left});
  }

  BpeVocabulary vocab_;
  MergeTable merges_;
  bool add_prefix_space_;
  std::string fingerprint_;
  std::unordered_map<int64_t, std::string> id_to_token_;  // every id a token of vocab_ has
  int64_t vocab_size_ = 0;                                 // the largest id + 1: the embedding rows it needs
  SpecialTokenIds special_;
  std::vector<AddedToken> added_tokens_;
  mutable tokenize::WordIdCache cache_;  // each word's merged ids
};

}  // namespace

std::unique_ptr<Tokenizer> load_byte_level_bpe_tokenizer(const TokenizerOptions& options) {
  if (options.vocab_file.empty()) throw input_error("tokenizer: bpe needs vocab.json (vocab_file)");
  if (options.merges_file.empty()) throw input_error("tokenizer: bpe needs merges.txt (merges_file)");
  const std::string vocab_bytes = read_file(options.vocab_file, "the BPE vocabulary");
  const std::string merges_bytes = read_file(options.merges_file, "the BPE merges");
  BpeVocabulary vocab = parse_vocab_json(options.vocab_file, vocab_bytes);
  MergeTable merges = parse_merges_txt(options.merges_file, merges_bytes, vocab);
  const std::string fingerprint = std::string("bpe;add_prefix_space=") + (options.add_prefix_space ? "1" : "0") +
                                  ";vocab=" + tokenize::content_hash(vocab_bytes) +
                                  ";merges=" + tokenize::content_hash(merges_bytes);
  return std::make_unique<ByteLevelBpeTokenizer>(std::move(vocab), std::move(merges), options.vocab_file,
                                                 options.add_prefix_space, fingerprint);
}

}  // namespace tbench
