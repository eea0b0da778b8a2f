#pragma once
// Pieces the HF-exact tokenizers share: UTF-8 stepping, HF's split of the input on added tokens
// (special tokens and the like, matched in the raw text before any normalization), the walk over a
// text that every kind's encoding makes (and where truncation stops it), a word cache, file
// reading and a content hash for fingerprints. Internal to src/tokenize/.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tbench::tokenize {

// One code point of a UTF-8 string. A malformed sequence reads as one invalid byte (U+FFFD), so
// stepping always advances.
struct CodePoint {
  char32_t value = 0;
  std::size_t size = 1;  // bytes it takes in the string
  bool valid = true;
};
CodePoint decode_utf8(std::string_view text, std::size_t pos);
// Where `text` stops being UTF-8 (the offset of the first byte of a malformed sequence), or npos.
std::size_t invalid_utf8_at(std::string_view text);
// "not UTF-8 (byte 0xE9); save the file as UTF-8": the error for the byte at `pos`.
std::string not_utf8_error(std::string_view text, std::size_t pos);
void append_utf8(std::string& out, char32_t code_point);
void append_utf8(std::string& out, std::u32string_view code_points);
// Every code point of `text`, a malformed sequence as U+FFFD.
std::u32string to_code_points(std::string_view text);
// A byte that continues a character rather than starting one (10xxxxxx).
inline bool is_continuation_byte(char byte) { return (static_cast<unsigned char>(byte) & 0xC0) == 0x80; }
// `text` with every malformed sequence replaced by U+FFFD (HF only ever sees valid strings).
std::string sanitize_utf8(std::string_view text);

// A token HF's AddedVocabulary matches in the raw text before the model sees it.
struct AddedToken {
  std::string content;
  int64_t id = 0;
  bool lstrip = false;  // absorbs the whitespace on its left (RoBERTa's and XLNet's <mask>)
};

// A part of the input: either plain text for the normalizer and model, or one added token.
struct TextSegment {
  std::string_view text;
  std::optional<int64_t> added_token_id;
};

// HF's AddedVocabulary::find_matches: leftmost-longest matches of the added tokens; an lstrip
// token takes the whitespace before it (never text already matched). The segments cover the whole
// input in order; plain segments are never empty, and an empty input gives no segment.
std::vector<TextSegment> split_on_added_tokens(std::string_view text, const std::vector<AddedToken>& tokens);

// HF's encoding of one text, the same for every kind. The added tokens are split out first and go
// to on_token(text, id) as they are (an added token's text is what it took, the whitespace an
// lstrip token absorbed included). Each text between them goes to for_each_word(segment, on_word),
// the kind's normalizer and pre-tokenizer, which calls on_word(word) for each word in order and
// stops when it returns false; encode_word(word, on_token) gives that word's tokens.
// Truncating to max_tokens, HF's tokenizers (0.23) stop after the first word that brings the count
// of tokens (added tokens included) to max_tokens or more: an added token never ends the text.
template <typename ForEachWord, typename EncodeWord, typename OnToken>
void for_each_token(std::string_view text, const std::vector<AddedToken>& added_tokens, std::size_t max_tokens,
                    ForEachWord&& for_each_word, EncodeWord&& encode_word, OnToken&& on_token) {
  std::size_t count = 0;
  const auto counted = [&](std::string_view token, int64_t id) {
    ++count;
    on_token(token, id);
  };
  bool full = false;
  for (const TextSegment& segment : split_on_added_tokens(text, added_tokens)) {
    if (segment.added_token_id) {
      counted(segment.text, *segment.added_token_id);
      continue;
    }
    for_each_word(segment.text, [&](const auto& word) {
      encode_word(word, counted);
      full = count >= max_tokens;
      return !full;
    });
    if (full) return;
  }
}

// The ids of pre-tokenized words, kept because the same words recur all through a dataset. Safe
// to share between threads; it starts over when full rather than grow without bound.
class WordIdCache {
 public:
  // The ids cached for `word`, else encode(word)'s, then cached. encode runs outside the lock, so
  // two threads may both encode a new word; both get the same ids.
  template <typename Encode>
  std::vector<int64_t> ids_of(const std::string& word, Encode&& encode) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const auto it = ids_.find(word);
      if (it != ids_.end()) return it->second;
    }
    std::vector<int64_t> encoded = encode(word);
    std::lock_guard<std::mutex> lock(mutex_);
    if (ids_.size() >= kMaxWords) ids_.clear();
    ids_.emplace(word, encoded);
    return encoded;
  }

 private:
  static constexpr std::size_t kMaxWords = 100000;
  std::mutex mutex_;
  std::unordered_map<std::string, std::vector<int64_t>> ids_;
};

// The id `ids` maps `token` to, if any: every kind's vocabulary is such a map.
template <typename Map, typename Key>
std::optional<int64_t> find_id(const Map& ids, const Key& token) {
  const auto it = ids.find(token);
  if (it == ids.end()) return std::nullopt;
  return it->second;
}

// Calls on_line(line, line_number) for each line of a vocabulary file (numbered from 1, without its
// '\n'); the last line counts without a '\n' too, but a final '\n' starts no empty line.
template <typename OnLine>
void for_each_line(std::string_view bytes, OnLine&& on_line) {
  std::size_t line_number = 0;
  for (std::size_t start = 0; start < bytes.size();) {
    std::size_t end = bytes.find('\n', start);
    if (end == std::string_view::npos) end = bytes.size();
    on_line(bytes.substr(start, end - start), ++line_number);
    start = end + 1;
  }
}


// FNV-1a 64 of the bytes, as 16 hex digits: identifies a vocabulary file's contents.
std::string content_hash(std::string_view bytes);

}  // namespace tbench::tokenize
