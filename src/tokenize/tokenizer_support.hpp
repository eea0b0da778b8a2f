#pragma once
// Pieces the HF-exact tokenizers share: UTF-8 stepping, HF's split of the input on added tokens
// (special tokens and the like, matched in the raw text before any normalization), and a content
// hash for fingerprints. Internal to src/tokenize/.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
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
void append_utf8(std::string& out, char32_t code_point);
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

// The whole file; a bad-input Error naming it when it cannot be read.
std::string read_file_bytes(const std::string& path);

// FNV-1a 64 of the bytes, as 16 hex digits: identifies a vocabulary file's contents.
std::string content_hash(std::string_view bytes);

}  // namespace tbench::tokenize
