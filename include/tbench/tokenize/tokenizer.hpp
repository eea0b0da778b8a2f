#pragma once
// Tokenizers that give HuggingFace's output on the same vocabulary files: WordPiece (BERT,
// DistilBERT: vocab.txt), byte-level BPE (RoBERTa: vocab.json + merges.txt) and SentencePiece
// (XLNet: spiece.model, read by tbench's own unigram implementation). Each kind lives in its own
// file in src/tokenize/; what they share (truncation, encode(), padding, loading) is in
// tokenizer.cpp, and the pieces of their pipelines they share in tokenizer_support.hpp.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tbench {

enum class TokenizerKind { wordpiece, byte_level_bpe, sentencepiece };
const char* to_string(TokenizerKind kind);
// "wordpiece", "bpe" (or "byte_level_bpe"), "sentencepiece"; nullopt for anything else.
std::optional<TokenizerKind> tokenizer_kind_from_string(const std::string& name);

// The files and switches of a tokenizer, as HF's tokenizer_config.json would set them.
struct TokenizerOptions {
  TokenizerKind kind = TokenizerKind::wordpiece;
  std::string vocab_file;   // wordpiece: vocab.txt; bpe: vocab.json; sentencepiece: spiece.model
  std::string merges_file;  // bpe only: merges.txt
  bool lowercase = true;    // wordpiece: do_lower_case; sentencepiece: do_lower_case (XLNet: false)
  // wordpiece: unset follows `lowercase`, as HF's BertTokenizer does; sentencepiece: XLNet's
  // keep_accents is the negation (false: accents are stripped).
  std::optional<bool> strip_accents;
  bool tokenize_chinese_chars = true;  // wordpiece
  bool add_prefix_space = false;       // bpe (RoBERTa's default)
};

// HF's padding side and pad token type for a kind: XLNet pads on the left with token type 3 (one
// apart from both texts' types and <cls>'s 2), BERT and RoBERTa on the right with 0. The one place
// that says so: the tokenizers and prepare_data (for data that loads no tokenizer) both ask it.
struct PaddingConvention {
  bool pads_left = false;
  int64_t pad_token_type_id = 0;
};
PaddingConvention padding_convention(TokenizerKind kind);

// How many special tokens a kind's template puts after the last text: BERT's [SEP], RoBERTa's
// </s>, XLNet's <sep> <cls>. Cutting ids made by another program (pre-tokenized data) keeps these
// at the end, as HF truncates the text before it adds them: XLNet's classifier reads <cls>.
int64_t closing_special_tokens(TokenizerKind kind);

// One encoded sample with its special tokens, not padded.
struct Encoding {
  std::vector<int64_t> input_ids;
  std::vector<int64_t> token_type_ids;
  bool truncated = false;  // encode() cut ids to fit max_length
};

struct SpecialTokenIds {
  int64_t pad = 0;
  int64_t unk = 0;
  int64_t cls = 0;  // RoBERTa: <s>
  int64_t sep = 0;  // RoBERTa: </s>
  int64_t mask = -1;  // [MASK] / <mask>, for masked-LM data; -1: the vocabulary has none
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual TokenizerKind kind() const = 0;

  // HF's tokenizer.tokenize(text): the pieces, no special tokens.
  virtual std::vector<std::string> tokenize(const std::string& text) const = 0;
  // HF's tokenizer(text, add_special_tokens=False).input_ids: encode_text_until with no limit.
  std::vector<int64_t> encode_text(const std::string& text) const;
  // encode_text as HF's tokenizers (0.23) run it when truncating to max_length: they stop after
  // the first word of text (a pre-tokenizer split; special tokens in the text count, but never
  // end it) that leaves max_length ids or more. That decides which text of a long pair keeps the
  // odd token in encode(). The one encoding each kind implements.
  virtual std::vector<int64_t> encode_text_until(const std::string& text, std::size_t max_length) const = 0;

  virtual int64_t vocab_size() const = 0;  // ids are in [0, vocab_size)
  virtual std::optional<int64_t> token_to_id(const std::string& token) const = 0;
  virtual SpecialTokenIds special_tokens() const = 0;

  // The model's template around one text or a pair (BERT: [CLS] a [SEP] b [SEP]; RoBERTa:
  // <s> a </s></s> b </s>; XLNet: a <sep> b <sep> <cls>) and its token type ids.
  virtual Encoding add_special_tokens(const std::vector<int64_t>& a, const std::vector<int64_t>* b) const = 0;
  virtual int64_t num_special_tokens(bool pair) const = 0;
  // padding_convention(kind()): not virtual, so no kind can disagree with it.
  bool pads_left() const;
  int64_t pad_token_type_id() const;

  // Identity of the tokenizer for the token cache: kind, switches and a hash of the file contents.
  virtual std::string fingerprint() const = 0;

  // HF's tokenizer(text, pair, truncation=True, max_length=max_length): both texts encoded
  // (encode_text_until), truncated longest-first to leave room for the special tokens, then the
  // template added. max_length <= 0: no truncation.
  Encoding encode(const std::string& text, const std::string* pair, int64_t max_length) const;
};

// Reads the files and checks them. Throws a bad-input Error naming the file (and the line, for a
// malformed vocab.txt or merges.txt).
std::unique_ptr<Tokenizer> load_tokenizer(const TokenizerOptions& options);

std::unique_ptr<Tokenizer> load_wordpiece_tokenizer(const TokenizerOptions& options);
std::unique_ptr<Tokenizer> load_byte_level_bpe_tokenizer(const TokenizerOptions& options);
std::unique_ptr<Tokenizer> load_sentencepiece_tokenizer(const TokenizerOptions& options);

// HF's longest_first truncation of a pair (or of `a` alone) so that the two together hold at most
// `max_tokens` ids (below zero: none), keeping each text's first ids. HF's whole truncation is
// Tokenizer::encode, which first encodes each text with encode_text_until.
void truncate_longest_first(std::vector<int64_t>& a, std::vector<int64_t>* b, int64_t max_tokens);

}  // namespace tbench
