// BERT's and DistilBERT's WordPiece as HF's fast tokenizer runs it on a vocab.txt
// (tokenizers' BertNormalizer, BertPreTokenizer, WordPiece model and BertProcessing): the input is
// split on the special tokens, each other part is cleaned, spaced around CJK ideographs, stripped
// of accents and lowercased, cut at white space and punctuation, and each word is matched greedily,
// longest piece first, with "##" marking the pieces that continue a word.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tbench/errors.hpp"
#include "tbench/tokenize/tokenizer.hpp"
#include "tbench/tokenize/unicode_text.hpp"
#include "tbench/files.hpp"
#include "tokenizer_support.hpp"

namespace tbench {
namespace {

constexpr std::size_t kMaxInputCharsPerWord = 100;  // longer words are [UNK] whole
constexpr std::string_view kContinuation = "##";
constexpr std::string_view kUnknown = "[UNK]";
constexpr const char* kRequiredSpecials[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]"};
constexpr const char* kMask = "[MASK]";  // split out when the vocabulary has it; not needed to fine-tune

// --- vocab.txt ------------------------------------------------------------------------------------
// One token per line, its id the line's index. HF trims trailing white space (so CRLF files work);
// an empty line still takes an id.

struct Vocabulary {
  std::unordered_map<std::string, int64_t> ids;
  int64_t size = 0;  // lines, so ids are in [0, size)
};

std::string where(const std::string& path, std::size_t line_number) {
  return path + ":" + std::to_string(line_number);
}

// The line without its trailing white space; nullopt if it is not valid UTF-8.
std::optional<std::string_view> trimmed_token(std::string_view line) {
  std::size_t kept = 0;
  for (std::size_t pos = 0; pos < line.size();) {
    const tokenize::CodePoint cp = tokenize::decode_utf8(line, pos);
    if (!cp.valid) return std::nullopt;
    pos += cp.size;
    if (!unicode::is_white_space(cp.value)) kept = pos;
  }
  return line.substr(0, kept);
}

Vocabulary parse_vocab_txt(const std::string& path, const std::string& bytes) {
  if (bytes.empty()) throw input_error(path + ": empty vocabulary file (expected one token per line)");
  Vocabulary vocab;
  std::unordered_map<std::string, std::size_t> first_line;
  tokenize::for_each_line(bytes, [&](std::string_view line, std::size_t line_number) {
    const std::optional<std::string_view> token = trimmed_token(line);
    if (!token) throw input_error(where(path, line_number) + ": token is not valid UTF-8");
    if (!token->empty()) {
      const auto [it, inserted] = first_line.emplace(std::string(*token), line_number);
      if (!inserted) {
        throw input_error(where(path, line_number) + ": duplicate token '" + it->first + "' (first on line " +
                          std::to_string(it->second) + ")");
      }
      vocab.ids.emplace(it->first, vocab.size);
    }
    ++vocab.size;
  });
  return vocab;
}

// --- BertNormalizer -------------------------------------------------------------------------------

struct NormalizerOptions {
  bool lowercase = true;
  bool strip_accents = true;
  bool handle_chinese_chars = true;
};

// BERT counts tab, newline and carriage return as white space, not as control characters.
bool is_bert_whitespace(char32_t c) { return c == U'\t' || c == U'\n' || c == U'\r' || unicode::is_white_space(c); }

bool is_bert_control(char32_t c) { return c != U'\t' && c != U'\n' && c != U'\r' && unicode::is_other(c); }

// The CJK Unified Ideographs blocks (not Hangul, Hiragana or Katakana, which use spaces between
// words): BERT makes each ideograph a word of its own.
bool is_cjk_ideograph(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// BERT's punctuation: all of ASCII's symbols ($, +, <, ^, ` and | included) and Unicode's P*.
bool is_bert_punctuation(char32_t c) { return unicode::is_ascii_punctuation(c) || unicode::is_punctuation(c); }

// clean_text: drop NUL, U+FFFD and control characters; every kind of white space becomes ' '.
std::u32string clean_text(std::u32string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (char32_t c : text) {
    if (c == 0 || c == 0xFFFD || is_bert_control(c)) continue;
    out.push_back(is_bert_whitespace(c) ? U' ' : c);
  }
  return out;
}

std::u32string space_cjk_ideographs(std::u32string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (char32_t c : text) {
    if (is_cjk_ideograph(c)) {
      out += U' ';
      out += c;
      out += U' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::u32string strip_accents(std::u32string_view text) {
  std::u32string out = unicode::nfd(text);
  out.erase(std::remove_if(out.begin(), out.end(), unicode::is_nonspacing_mark), out.end());
  return out;
}

std::u32string normalize(std::u32string text, const NormalizerOptions& options) {
  text = clean_text(text);
  if (options.handle_chinese_chars) text = space_cjk_ideographs(text);
  if (options.strip_accents) text = strip_accents(text);
  if (options.lowercase) text = unicode::to_lowercase(text);
  return text;
}

// --- BertPreTokenizer -----------------------------------------------------------------------------
// Words end at white space (dropped) and every punctuation character is a word of its own.

// on_word returns false to stop early.
template <typename OnWord>
void for_each_bert_word(std::u32string_view text, OnWord&& on_word) {
  std::size_t word_start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const bool space = unicode::is_white_space(text[i]);
    if (!space && !is_bert_punctuation(text[i])) continue;
    if (word_start < i && !on_word(text.substr(word_start, i - word_start))) return;
    if (!space && !on_word(text.substr(i, 1))) return;
    word_start = i + 1;
  }
  if (word_start < text.size()) on_word(text.substr(word_start));
}

// --- The tokenizer --------------------------------------------------------------------------------

class WordPieceTokenizer final : public Tokenizer {
 public:
  WordPieceTokenizer(Vocabulary vocab, const TokenizerOptions& options, const std::string& fingerprint)
      : vocab_(std::move(vocab)), fingerprint_(fingerprint) {
    normalizer_.lowercase = options.lowercase;
    normalizer_.strip_accents = options.strip_accents.value_or(options.lowercase);
    normalizer_.handle_chinese_chars = options.tokenize_chinese_chars;
    special_.pad = require(options.vocab_file, "[PAD]");
    special_.unk = require(options.vocab_file, "[UNK]");
    special_.cls = require(options.vocab_file, "[CLS]");
    special_.sep = require(options.vocab_file, "[SEP]");
    for (const char* token : kRequiredSpecials) added_tokens_.push_back({token, *token_to_id(token), false});
    if (const auto mask = token_to_id(kMask)) {
      added_tokens_.push_back({kMask, *mask, false});
      special_.mask = *mask;
    }
  }

  TokenizerKind kind() const override { return TokenizerKind::wordpiece; }

  std::vector<std::string> tokenize(const std::string& text) const override {
    std::vector<std::string> pieces;
    for_each_piece(text, std::numeric_limits<std::size_t>::max(),
                   [&](std::string_view piece, int64_t) { pieces.emplace_back(piece); });
    return pieces;
  }

  std::vector<int64_t> encode_text_until(const std::string& text, std::size_t max_length) const override {
    std::vector<int64_t> ids;
    for_each_piece(text, max_length, [&](std::string_view, int64_t id) { ids.push_back(id); });
    return ids;
  }

  int64_t vocab_size() const override { return vocab_.size; }

  std::optional<int64_t> token_to_id(const std::string& token) const override {
    return tokenize::find_id(vocab_.ids, token);
  }

  SpecialTokenIds special_tokens() const override { return special_; }

  // [CLS] a [SEP] and [CLS] a [SEP] b [SEP]; b and its [SEP] are token type 1.
  Encoding add_special_tokens(const std::vector<int64_t>& a, const std::vector<int64_t>* b) const override {
    Encoding out;
    out.input_ids.reserve(a.size() + (b ? b->size() : 0) + 3);
    out.input_ids.push_back(special_.cls);
    out.input_ids.insert(out.input_ids.end(), a.begin(), a.end());
    out.input_ids.push_back(special_.sep);
    out.token_type_ids.assign(out.input_ids.size(), 0);
    if (b) {
      out.input_ids.insert(out.input_ids.end(), b->begin(), b->end());
      out.input_ids.push_back(special_.sep);
      out.token_type_ids.resize(out.input_ids.size(), 1);
    }
    return out;
  }

  int64_t num_special_tokens(bool pair) const override { return pair ? 3 : 2; }

  std::string fingerprint() const override { return fingerprint_; }

 private:
  int64_t require(const std::string& path, const std::string& token) const {
    const std::optional<int64_t> id = token_to_id(token);
    if (!id) {
      throw input_error(path + ": vocabulary has no " + token +
                        " token (a BERT vocab.txt has [PAD], [UNK], [CLS], [SEP] and [MASK])");
    }
    return *id;
  }

  // Reused from word to word.
  struct MatchBuffers {
    std::string word;  // UTF-8
    std::string candidate;
    std::vector<std::pair<std::string_view, int64_t>> pieces;  // views of the vocabulary's keys
  };

  // Calls on_piece(piece, id) for every piece of `text` in order (tokenize::for_each_token, which
  // also says where max_pieces stops it): special tokens as they are, the rest normalized, split
  // into words and matched against the vocabulary.
  template <typename OnPiece>
  void for_each_piece(const std::string& text, std::size_t max_pieces, OnPiece&& on_piece) const {
    MatchBuffers buffers;
    // A malformed byte reads as U+FFFD, which clean_text drops as HF would.
    const auto words = [&](std::string_view segment, auto&& on_word) {
      for_each_bert_word(normalize(tokenize::to_code_points(segment), normalizer_), on_word);
    };
    const auto pieces = [&](std::u32string_view word, auto&& on_word_piece) {
      match_word(word, buffers, on_word_piece);
    };
    tokenize::for_each_token(text, added_tokens_, max_pieces, words, pieces, on_piece);
  }

  // Greedy longest match first: the longest vocabulary entry that starts the rest of the word,
  // "##"-prefixed after the first piece. A word with a part no entry matches is [UNK] whole.
  template <typename OnPiece>
  void match_word(std::u32string_view word, MatchBuffers& buffers, OnPiece&& on_piece) const {
    if (word.size() > kMaxInputCharsPerWord) {
      on_piece(kUnknown, special_.unk);
      return;
    }
    std::string& utf8 = buffers.word;
    utf8.clear();
    tokenize::append_utf8(utf8, word);
    buffers.pieces.clear();
    for (std::size_t start = 0; start < utf8.size();) {
      std::size_t end = utf8.size();
      for (; end > start; end = previous_character(utf8, end)) {
        buffers.candidate.assign(start > 0 ? kContinuation : std::string_view());
        buffers.candidate.append(utf8, start, end - start);
        const auto it = vocab_.ids.find(buffers.candidate);
        if (it != vocab_.ids.end()) {
          buffers.pieces.emplace_back(it->first, it->second);
          break;
        }
      }
      if (end == start) {
        on_piece(kUnknown, special_.unk);
        return;
      }
      start = end;
    }
    for (const auto& [piece, id] : buffers.pieces) on_piece(piece, id);
  }

  // Where the character before byte `end` starts: pieces end on whole characters.
  static std::size_t previous_character(const std::string& utf8, std::size_t end) {
    do {
      --end;
    } while (end > 0 && tokenize::is_continuation_byte(utf8[end]));
    return end;
  }

  Vocabulary vocab_;
  NormalizerOptions normalizer_;
  SpecialTokenIds special_;
  std::vector<tokenize::AddedToken> added_tokens_;
  std::string fingerprint_;
};

}  // namespace

std::unique_ptr<Tokenizer> load_wordpiece_tokenizer(const TokenizerOptions& options) {
  const std::string bytes = read_file(options.vocab_file, "the vocabulary");
  Vocabulary vocab = parse_vocab_txt(options.vocab_file, bytes);
  const bool strip_accents = options.strip_accents.value_or(options.lowercase);
  const std::string fingerprint = std::string("wordpiece;lowercase=") + (options.lowercase ? "1" : "0") +
                                  ";strip_accents=" + (strip_accents ? "1" : "0") +
                                  ";chinese_chars=" + (options.tokenize_chinese_chars ? "1" : "0") +
                                  ";vocab=" + tokenize::content_hash(bytes);
  return std::make_unique<WordPieceTokenizer>(std::move(vocab), options, fingerprint);
}

}  // namespace tbench
