// What every tokenizer kind shares: names, loading by kind, padding, and HF's truncation and
// encode().
#include "tbench/tokenize/tokenizer.hpp"

#include <algorithm>
#include <limits>
#include <utility>

#include "tbench/errors.hpp"

namespace tbench {

const char* to_string(TokenizerKind kind) {
  switch (kind) {
    case TokenizerKind::wordpiece: return "wordpiece";
    case TokenizerKind::byte_level_bpe: return "bpe";
    case TokenizerKind::sentencepiece: return "sentencepiece";
  }
  return "unknown";
}

std::optional<TokenizerKind> tokenizer_kind_from_string(const std::string& name) {
  if (name == "wordpiece") return TokenizerKind::wordpiece;
  if (name == "bpe" || name == "byte_level_bpe") return TokenizerKind::byte_level_bpe;
  if (name == "sentencepiece") return TokenizerKind::sentencepiece;
  return std::nullopt;
}

PaddingConvention padding_convention(TokenizerKind kind) {
  switch (kind) {
    case TokenizerKind::wordpiece:
    case TokenizerKind::byte_level_bpe: return {false, 0};
    case TokenizerKind::sentencepiece: return {true, 3};
  }
  return {};
}

int64_t closing_special_tokens(TokenizerKind kind) { return kind == TokenizerKind::sentencepiece ? 2 : 1; }

std::unique_ptr<Tokenizer> load_tokenizer(const TokenizerOptions& options) {
  switch (options.kind) {
    case TokenizerKind::wordpiece: return load_wordpiece_tokenizer(options);
    case TokenizerKind::byte_level_bpe: return load_byte_level_bpe_tokenizer(options);
    case TokenizerKind::sentencepiece: return load_sentencepiece_tokenizer(options);
  }
  throw Error(ExitCode::internal, "load_tokenizer: unknown tokenizer kind");
}

namespace {

// HF's split of a budget between two texts that do not fit it together (LongestFirst in
// tokenizers/src/utils/truncation.rs): the shorter keeps all it has when the longer can take the
// cut alone; otherwise each keeps half, and the odd token goes to the longer one (to the second on
// a tie). The lengths returned may exceed a text's own; they are limits.
std::pair<std::size_t, std::size_t> longest_first_lengths(std::size_t first, std::size_t second, std::size_t budget) {
  const std::size_t shorter = std::min(first, second);
  std::size_t keep_shorter = shorter;
  std::size_t keep_longer = shorter > budget ? shorter : std::max(shorter, budget - shorter);
  if (keep_shorter + keep_longer > budget) {
    keep_shorter = budget / 2;
    keep_longer = budget - keep_shorter;
  }
  return first > second ? std::make_pair(keep_longer, keep_shorter) : std::make_pair(keep_shorter, keep_longer);
}

void keep_first(std::vector<int64_t>& ids, std::size_t n) {
  if (ids.size() > n) ids.resize(n);
}

}  // namespace

void truncate_longest_first(std::vector<int64_t>& a, std::vector<int64_t>* b, int64_t max_tokens) {
  const std::size_t budget = static_cast<std::size_t>(std::max<int64_t>(max_tokens, 0));
  if (!b) {
    keep_first(a, budget);
    return;
  }
  if (a.size() + b->size() <= budget) return;
  const auto [a_length, b_length] = longest_first_lengths(a.size(), b->size(), budget);
  keep_first(a, a_length);
  keep_first(*b, b_length);
}

std::vector<int64_t> Tokenizer::encode_text(const std::string& text) const {
  return encode_text_until(text, std::numeric_limits<std::size_t>::max());
}

bool Tokenizer::pads_left() const { return padding_convention(kind()).pads_left; }

int64_t Tokenizer::pad_token_type_id() const { return padding_convention(kind()).pad_token_type_id; }

Encoding Tokenizer::encode(const std::string& text, const std::string* pair, int64_t max_length) const {
  if (max_length <= 0) {
    const std::vector<int64_t> b = pair ? encode_text(*pair) : std::vector<int64_t>();
    return add_special_tokens(encode_text(text), pair ? &b : nullptr);
  }
  // Each text as HF encodes it when truncating (cut near max_length, at a word's end), so the
  // longest-first split below sees the lengths HF's sees.
  const auto limit = static_cast<std::size_t>(max_length);
  std::vector<int64_t> a = encode_text_until(text, limit);
  std::vector<int64_t> b = pair ? encode_text_until(*pair, limit) : std::vector<int64_t>();
  std::vector<int64_t>* second = pair ? &b : nullptr;
  const std::size_t before = a.size() + b.size();
  // The template's tokens come off max_length. Where max_length is below their count HF's
  // unsigned subtraction wraps around and nothing is cut; here both texts are cut to nothing
  // instead (only the template is left).
  truncate_longest_first(a, second, max_length - num_special_tokens(pair != nullptr));
  Encoding encoding = add_special_tokens(a, second);
  // A text stopped early holds at least max_length ids, more than the budget, so the split below
  // always cuts then too.
  encoding.truncated = a.size() + b.size() < before;
  return encoding;
}

}  // namespace tbench
