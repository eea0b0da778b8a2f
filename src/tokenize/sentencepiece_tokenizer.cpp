// XLNet's tokenizer as HF's fast tokenizer runs it (what transformers' XLNetConverter builds from
// spiece.model), not as libsentencepiece's own Encode would: HF normalizes differently (its
// Precompiled normalizer walks grapheme clusters and keeps spaces that spm would trim), splits
// words on "▁" before the unigram model, and matches control and user-defined pieces in the raw
// text. The pipeline below reproduces HF's, reading spiece.model's protobuf itself:
//   added tokens (control + user-defined pieces, <unk>, <mask> with lstrip) split out of the text;
//   the rest: Replace(`` -> "), Replace('' -> "), [NFKD + StripAccents], [Lowercase],
//   Precompiled(the model's charsmap), Replace(" {2,}" -> " "); Metaspace("▁", prepend always,
//   split); Unigram (Viterbi, unknown runs fused into one <unk>).
// Template: a <sep> <cls> and a <sep> b <sep> <cls>, token types 0.., 1.., 2.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <unicode/brkiter.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/utext.h>

#include "tbench/errors.hpp"
#include "tbench/tokenize/tokenizer.hpp"
#include "tbench/tokenize/unicode_text.hpp"
#include "tbench/files.hpp"
#include "tokenizer_support.hpp"

namespace tbench {

namespace {

using tokenize::AddedToken;
using tokenize::CodePoint;
using tokenize::decode_utf8;

constexpr std::string_view kMetaspace = "\xE2\x96\x81";  // U+2581 "▁", SentencePiece's space

// ---------------------------------------------------------------------------------------------
// The ModelProto fields the tokenizer needs: each piece's text, score and type, the trainer's model
// type and the normalizer's precompiled charsmap, read with a minimal protobuf wire-format reader.
// Why not libsentencepiece: Debian's build exports the protobuf it bundles, and loaded beside
// Debian's LibTorch (which links libprotobuf) the two protobufs' symbols collide and the process
// crashes before main(). HF's fast tokenizer does not use the library either: it runs this same
// pipeline on the model's pieces and scores.

enum class PieceType : uint64_t { normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6 };
constexpr uint64_t kUnigramModelType = 1;

struct ModelFields {
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::vector<PieceType> piece_types;
  uint64_t model_type = kUnigramModelType;
  std::string precompiled_charsmap;
};

// The little-endian uint32 at `pos` (the caller checks that 4 bytes are there): protobuf's
// fixed32 fields and the charsmap's header and trie units are all stored so.
uint32_t read_le32(std::string_view bytes, std::size_t pos) {
  uint32_t value = 0;
  for (std::size_t i = 4; i-- > 0;) value = (value << 8) | static_cast<unsigned char>(bytes[pos + i]);
  return value;
}

class ProtoReader {
 public:
  explicit ProtoReader(std::string_view bytes) : bytes_(bytes) {}
  bool done() const { return pos_ >= bytes_.size(); }

  uint64_t varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (done()) throw std::runtime_error("truncated varint");
      const auto byte = static_cast<unsigned char>(bytes_[pos_++]);
      value |= static_cast<uint64_t>(byte & 0x7F) << shift;
      if (!(byte & 0x80)) return value;
    }
    throw std::runtime_error("overlong varint");
  }

  float fixed32_float() {
    if (bytes_.size() - pos_ < 4) throw std::runtime_error("truncated float");
    const uint32_t bits = read_le32(bytes_, pos_);
    pos_ += 4;
    float value = 0;
    std::memcpy(&value, &bits, sizeof value);  // protobuf floats are little-endian IEEE 754
    return value;
  }

  std::string_view length_delimited() {
    const uint64_t size = varint();
    if (size > bytes_.size() - pos_) throw std::runtime_error("truncated field");
    const std::string_view field = bytes_.substr(pos_, size);
    pos_ += size;
    return field;
  }

  void skip(uint64_t wire_type) {
    switch (wire_type) {
      case 0: varint(); return;
      case 1: advance(8); return;
      case 2: length_delimited(); return;
      case 5: advance(4); return;
      default: throw std::runtime_error("unsupported wire type " + std::to_string(wire_type));
    }
  }

 private:
  void advance(std::size_t n) {
    if (n > bytes_.size() - pos_) throw std::runtime_error("truncated field");
    pos_ += n;
  }

  std::string_view bytes_;
  std::size_t pos_ = 0;
};

struct Piece {
  std::string text;
  float score = 0;
  PieceType type = PieceType::normal;
};

// ModelProto.SentencePiece: piece = 1 (string), score = 2 (float), type = 3 (enum).
Piece read_piece(std::string_view piece_message) {
  Piece piece;
  for (ProtoReader reader(piece_message); !reader.done();) {
    const uint64_t tag = reader.varint();
    if (tag >> 3 == 1 && (tag & 7) == 2) piece.text = std::string(reader.length_delimited());
    else if (tag >> 3 == 2 && (tag & 7) == 5) piece.score = reader.fixed32_float();
    else if (tag >> 3 == 3 && (tag & 7) == 0) piece.type = static_cast<PieceType>(reader.varint());
    else reader.skip(tag & 7);
  }
  return piece;
}

uint64_t read_model_type(std::string_view trainer_spec) {
  uint64_t model_type = kUnigramModelType;
  for (ProtoReader reader(trainer_spec); !reader.done();) {
    const uint64_t tag = reader.varint();
    if (tag >> 3 == 3 && (tag & 7) == 0) model_type = reader.varint();
    else reader.skip(tag & 7);
  }
  return model_type;
}

std::string read_precompiled_charsmap(std::string_view normalizer_spec) {
  std::string charsmap;
  for (ProtoReader reader(normalizer_spec); !reader.done();) {
    const uint64_t tag = reader.varint();
    if (tag >> 3 == 2 && (tag & 7) == 2) charsmap = std::string(reader.length_delimited());
    else reader.skip(tag & 7);
  }
  return charsmap;
}

ModelFields read_model_fields(std::string_view model_proto) {
  ModelFields fields;
  for (ProtoReader reader(model_proto); !reader.done();) {
    const uint64_t tag = reader.varint();
    const uint64_t field = tag >> 3;
    if ((tag & 7) != 2 || field < 1 || field > 3) {
      reader.skip(tag & 7);
      continue;
    }
    const std::string_view message = reader.length_delimited();
    if (field == 1) {
      Piece piece = read_piece(message);
      fields.pieces.push_back(std::move(piece.text));
      fields.scores.push_back(piece.score);
      fields.piece_types.push_back(piece.type);
    }
    if (field == 2) fields.model_type = read_model_type(message);
    if (field == 3) fields.precompiled_charsmap = read_precompiled_charsmap(message);
  }
  return fields;
}

// ---------------------------------------------------------------------------------------------
// The precompiled charsmap: a little-endian uint32 byte size, a darts-clone double-array trie of
// that size whose values are offsets into the NUL-separated replacement strings that follow.

class PrecompiledCharsmap {
 public:
  PrecompiledCharsmap() = default;

  static PrecompiledCharsmap parse(std::string_view blob, const std::string& path) {
    PrecompiledCharsmap charsmap;
    if (blob.empty()) return charsmap;
    const auto bad = [&](const std::string& what) { return input_error(path + ": precompiled_charsmap: " + what); };
    if (blob.size() < 4) throw bad("shorter than its header");
    const uint32_t trie_bytes = read_le32(blob, 0);
    if (trie_bytes == 0 || trie_bytes % 4 != 0 || trie_bytes > blob.size() - 4) throw bad("bad trie size");
    charsmap.units_.resize(trie_bytes / 4);
    for (std::size_t i = 0; i < charsmap.units_.size(); ++i) charsmap.units_[i] = read_le32(blob, 4 + 4 * i);
    charsmap.replacements_ = std::string(blob.substr(4 + trie_bytes));
    return charsmap;
  }

  bool empty() const { return units_.empty(); }

  // The replacement of the *shortest* key that is a prefix of `chunk`, even when it covers only
  // part of the chunk: that is what HF's Precompiled (spm_precompiled's transform) does.
  std::optional<std::string_view> shortest_prefix_replacement(std::string_view chunk) const {
    std::size_t node = 0;
    if (!in_range(node)) return std::nullopt;
    node ^= offset(units_[node]);
    for (const char ch : chunk) {
      const auto byte = static_cast<unsigned char>(ch);
      if (byte == 0) break;
      node ^= byte;
      if (!in_range(node)) return std::nullopt;
      const uint32_t unit = units_[node];
      if (label(unit) != byte) return std::nullopt;
      node ^= offset(unit);
      if (has_leaf(unit)) {
        if (!in_range(node)) return std::nullopt;
        return replacement_at(value(units_[node]));
      }
    }
    return std::nullopt;
  }

 private:
  // darts-clone's unit layout.
  static bool has_leaf(uint32_t unit) { return (unit >> 8) & 1; }
  static uint32_t value(uint32_t unit) { return unit & 0x7FFFFFFFu; }
  static uint32_t label(uint32_t unit) { return unit & (0x80000000u | 0xFFu); }
  static std::size_t offset(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }
  bool in_range(std::size_t node) const { return node < units_.size(); }

  std::optional<std::string_view> replacement_at(std::size_t offset) const {
    if (offset >= replacements_.size()) return std::nullopt;
    const std::size_t end = replacements_.find('\0', offset);
    return std::string_view(replacements_).substr(offset, (end == std::string::npos ? replacements_.size() : end) - offset);
  }

  std::vector<uint32_t> units_;
  std::string replacements_;
};

// ---------------------------------------------------------------------------------------------
// Normalizer steps, each as HF's tokenizers crate does it.

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  for (std::size_t pos = 0;;) {
    const std::size_t hit = text.find(from, pos);
    out.append(text.substr(pos, hit == std::string_view::npos ? std::string_view::npos : hit - pos));
    if (hit == std::string_view::npos) return out;
    out.append(to);
    pos = hit + from.size();
  }
}

icu::UnicodeString to_icu(std::string_view text) {
  return icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
}

// HF's normalization tables predate Unicode 12 (found by comparing HF's tokenizers 0.23.2 with ICU
// over every code point): characters assigned since have no decomposition and combining class 0.
bool is_newer_than_hf_normalization(char32_t c) {
  UVersionInfo age;
  u_charAge(static_cast<UChar32>(c), age);
  return age[0] >= 12;
}

std::string icu_nfkd(std::string_view text) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* normalizer = icu::Normalizer2::getNFKDInstance(status);
  if (U_FAILURE(status)) throw std::runtime_error(std::string("ICU NFKD: ") + u_errorName(status));
  const icu::UnicodeString normalized = normalizer->normalize(to_icu(text), status);
  if (U_FAILURE(status)) throw std::runtime_error(std::string("ICU NFKD: ") + u_errorName(status));
  std::string out;
  normalized.toUTF8String(out);
  return out;
}

// NFKD as HF's tables give it: ICU's on the runs between newer characters, which stay as they are
// (a class-0 character is a barrier to canonical reordering, so the runs are independent).
std::string nfkd(std::string_view text) {
  std::string out;
  std::size_t run_start = 0;
  for (std::size_t pos = 0; pos < text.size();) {
    const CodePoint cp = decode_utf8(text, pos);
    if (is_newer_than_hf_normalization(cp.value)) {
      out += icu_nfkd(text.substr(run_start, pos - run_start));
      out.append(text.substr(pos, cp.size));
      run_start = pos + cp.size;
    }
    pos += cp.size;
  }
  return out + icu_nfkd(text.substr(run_start));
}

// HF's StripAccents drops combining marks, General_Category M* as of Unicode 9.0 (the
// unicode-normalization-alignments crate): marks assigned later stay, and the three characters
// whose category moved since keep their 9.0 one (compared with HF over every code point).
bool is_unicode_9_mark(char32_t c) {
  switch (c) {
    case 0x1CF2:  // VEDIC SIGN ARDHAVISARGA and ROTATED ARDHAVISARGA: Mc in 9.0, Lo since 10.0
    case 0x1CF3:
      return true;
    case 0x111C9:  // SHARADA SANDHI MARK: Po in 9.0, Mn since 11.0
      return false;
    default:
      break;
  }
  UVersionInfo age;
  u_charAge(static_cast<UChar32>(c), age);
  const bool assigned_by_9_0 = age[0] < 9 || (age[0] == 9 && age[1] == 0);
  return assigned_by_9_0 && (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_M_MASK);
}

std::string strip_marks(std::string_view text) {
  std::string out;
  for (std::size_t pos = 0; pos < text.size();) {
    const CodePoint cp = decode_utf8(text, pos);
    if (!is_unicode_9_mark(cp.value)) out.append(text.substr(pos, cp.size));
    pos += cp.size;
  }
  return out;
}

// Rust's char::to_lowercase, one character at a time (so no context such as a final sigma).
std::string lowercase_chars(std::string_view text) {
  std::string out;
  tokenize::append_utf8(out, unicode::to_lowercase(tokenize::to_code_points(text)));
  return out;
}

// Runs of two or more ASCII spaces become one: Replace(Regex(" {2,}"), " ").
std::string collapse_spaces(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == ' ' && i > 0 && text[i - 1] == ' ') continue;
    out += text[i];
  }
  return out;
}

// A grapheme-cluster iterator per thread: ICU's break iterators are not thread-safe.
icu::BreakIterator& grapheme_iterator() {
  thread_local std::unique_ptr<icu::BreakIterator> iterator = [] {
    UErrorCode status = U_ZERO_ERROR;
    std::unique_ptr<icu::BreakIterator> created(icu::BreakIterator::createCharacterInstance(icu::Locale::getRoot(), status));
    if (U_FAILURE(status)) throw std::runtime_error(std::string("ICU grapheme iterator: ") + u_errorName(status));
    return created;
  }();
  return *iterator;
}

bool is_ascii(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// The grapheme clusters of `text` as [start, end) byte ranges, in order.
template <typename Visit>
void for_each_grapheme(std::string_view text, Visit&& visit) {
  if (is_ascii(text)) {
    // The common case, without ICU: in ASCII only CR LF is a cluster of more than one character.
    for (std::size_t pos = 0; pos < text.size();) {
      const std::size_t size = (text[pos] == '\r' && pos + 1 < text.size() && text[pos + 1] == '\n') ? 2 : 1;
      visit(text.substr(pos, size));
      pos += size;
    }
    return;
  }
  UErrorCode status = U_ZERO_ERROR;
  UText* utext = utext_openUTF8(nullptr, text.data(), static_cast<int64_t>(text.size()), &status);
  icu::BreakIterator& graphemes = grapheme_iterator();
  graphemes.setText(utext, status);
  if (U_FAILURE(status)) {
    utext_close(utext);
    throw std::runtime_error(std::string("ICU grapheme iterator: ") + u_errorName(status));
  }
  for (int32_t start = graphemes.first(), end = graphemes.next(); end != icu::BreakIterator::DONE;
       start = end, end = graphemes.next()) {
    visit(text.substr(static_cast<std::size_t>(start), static_cast<std::size_t>(end - start)));
  }
  utext_close(utext);
}

// HF's Precompiled normalizer: a grapheme cluster shorter than 6 bytes is replaced whole when a
// key is a prefix of it; otherwise each of its characters is looked up on its own.
std::string apply_charsmap(std::string_view text, const PrecompiledCharsmap& charsmap) {
  std::string out;
  out.reserve(text.size());
  for_each_grapheme(text, [&](std::string_view grapheme) {
    if (grapheme.size() < 6) {
      if (auto whole = charsmap.shortest_prefix_replacement(grapheme)) {
        out.append(*whole);
        return;
      }
    }
    for (std::size_t pos = 0; pos < grapheme.size();) {
      const std::string_view character = grapheme.substr(pos, decode_utf8(grapheme, pos).size);
      const auto replaced = charsmap.shortest_prefix_replacement(character);
      out.append(replaced ? *replaced : character);
      pos += character.size();
    }
  });
  return out;
}

// ---------------------------------------------------------------------------------------------

struct NormalizerSettings {
  bool strip_accents = true;
  bool lowercase = false;
};

std::string normalize(std::string_view text, const NormalizerSettings& settings, const PrecompiledCharsmap& charsmap) {
  std::string s = replace_all(replace_all(text, "``", "\""), "''", "\"");
  // ASCII has no decompositions and no marks.
  if (settings.strip_accents && !is_ascii(s)) s = strip_marks(nfkd(s));
  if (settings.lowercase) s = lowercase_chars(s);
  if (!charsmap.empty()) s = apply_charsmap(s, charsmap);
  return collapse_spaces(s);
}

// Metaspace(replacement "▁", prepend_scheme always, split): spaces become "▁", a "▁" is put in
// front unless there is one, and every "▁" starts a new word.
std::vector<std::string> metaspace_words(std::string_view normalized) {
  if (normalized.empty()) return {};
  std::string text = replace_all(normalized, " ", kMetaspace);
  if (text.compare(0, kMetaspace.size(), kMetaspace) != 0) text.insert(0, kMetaspace);
  std::vector<std::string> words;
  std::size_t start = 0;
  for (std::size_t pos = kMetaspace.size(); (pos = text.find(kMetaspace, pos)) != std::string::npos; pos += kMetaspace.size()) {
    words.push_back(text.substr(start, pos - start));
    start = pos;
  }
  words.push_back(text.substr(start));
  return words;
}

// ---------------------------------------------------------------------------------------------
// HF's Unigram model (encode_optimized): best-scoring segmentation of a word over the vocabulary;
// a character no piece starts with costs min_score - 10 and is unknown, and consecutive unknowns
// fuse into one <unk>.

struct UnigramVocabulary {
  UnigramVocabulary() = default;
  UnigramVocabulary(UnigramVocabulary&&) = default;
  UnigramVocabulary& operator=(UnigramVocabulary&&) = default;
  UnigramVocabulary(const UnigramVocabulary&) = delete;  // piece_ids would point into the original

  std::vector<std::string> pieces;                          // by id
  std::vector<double> scores;                               // by id
  std::unordered_map<std::string_view, int64_t> piece_ids;  // views into `pieces`
  std::size_t longest_piece_bytes = 0;
  int64_t unk_id = 0;
  double unk_score = 0;
};

struct PieceSpan {
  std::size_t begin;
  std::size_t end;
  int64_t id;
};

std::vector<PieceSpan> unigram_segment(std::string_view word, const UnigramVocabulary& vocab) {
  struct Best {
    double score = 0;
    std::size_t begin = 0;
    int64_t id = -1;  // -1: not reached yet
  };
  std::vector<Best> best(word.size() + 1);
  best[0].id = 0;
  for (std::size_t begin = 0; begin < word.size();) {
    const std::size_t char_size = decode_utf8(word, begin).size;
    const double score_here = best[begin].score;
    bool has_single_char_piece = false;
    auto offer = [&](std::size_t end, int64_t id, double score) {
      const double candidate = score_here + score;
      if (best[end].id < 0 || candidate > best[end].score) best[end] = {candidate, begin, id};
    };
    // Shorter pieces first, as HF's trie returns them: on equal scores the first one found stays.
    for (std::size_t end = begin + char_size; end <= word.size() && end - begin <= vocab.longest_piece_bytes;
         end += decode_utf8(word, end).size) {
      const auto it = vocab.piece_ids.find(word.substr(begin, end - begin));
      if (it != vocab.piece_ids.end()) {
        offer(end, it->second, vocab.scores[static_cast<std::size_t>(it->second)]);
        if (end - begin == char_size) has_single_char_piece = true;
      }
      if (end == word.size()) break;
    }
    if (!has_single_char_piece) offer(begin + char_size, vocab.unk_id, vocab.unk_score);
    begin += char_size;
  }
  std::vector<PieceSpan> pieces;
  for (std::size_t end = word.size(); end > 0; end = best[end].begin) {
    const Best& node = best[end];
    if (node.id == vocab.unk_id && !pieces.empty() && pieces.back().id == vocab.unk_id) {
      pieces.back().begin = node.begin;  // fuse with the unknown run on its right
    } else {
      pieces.push_back({node.begin, end, node.id});
    }
  }
  std::reverse(pieces.begin(), pieces.end());
  return pieces;
}

// XLNetConverter lowers a piece ending in digit + "," by 100, so "9," splits into "9" and ",",
// as the slow tokenizer does. "Digit" is Python's str.isdigit: Numeric_Type Decimal or Digit.
bool is_number_comma(std::string_view piece) {
  if (piece.empty() || piece.back() != ',') return false;
  std::size_t last_start = piece.size() - 1, before = std::string_view::npos;
  for (std::size_t pos = 0; pos < last_start;) {
    before = pos;
    pos += decode_utf8(piece, pos).size;
  }
  if (before == std::string_view::npos) return false;
  const auto numeric = u_getIntPropertyValue(static_cast<UChar32>(decode_utf8(piece, before).value), UCHAR_NUMERIC_TYPE);
  return numeric == U_NT_DECIMAL || numeric == U_NT_DIGIT;
}

// ---------------------------------------------------------------------------------------------

class SentencePieceTokenizer final : public Tokenizer {
 public:
  SentencePieceTokenizer(UnigramVocabulary vocab, PrecompiledCharsmap charsmap, std::vector<AddedToken> added_tokens,
                         SpecialTokenIds special, NormalizerSettings settings, std::string fingerprint)
      : vocab_(std::move(vocab)),
        charsmap_(std::move(charsmap)),
        added_tokens_(std::move(added_tokens)),
        special_(special),
        settings_(settings),
        fingerprint_(std::move(fingerprint)) {}

  TokenizerKind kind() const override { return TokenizerKind::sentencepiece; }

  std::vector<std::string> tokenize(const std::string& text) const override {
    std::vector<std::string> tokens;
    // Segmented afresh, not through the id cache: an unknown run's token is the run itself, as in
    // HF, not its piece.
    const auto pieces = [&](const std::string& word, auto&& on_token) {
      for (const PieceSpan& piece : unigram_segment(word, vocab_)) {
        on_token(std::string_view(word).substr(piece.begin, piece.end - piece.begin), piece.id);
      }
    };
    for_each_token(text, std::numeric_limits<std::size_t>::max(), pieces,
                   [&](std::string_view token, int64_t) { tokens.emplace_back(token); });
    return tokens;
  }

  std::vector<int64_t> encode_text_until(const std::string& text, std::size_t max_length) const override {
    std::vector<int64_t> ids;
    const auto word_ids = [&](const std::string& word, auto&& on_token) {
      for (const int64_t id : encode_word(word)) on_token(std::string_view(), id);
    };
    for_each_token(text, max_length, word_ids, [&](std::string_view, int64_t id) { ids.push_back(id); });
    return ids;
  }

  int64_t vocab_size() const override { return static_cast<int64_t>(vocab_.pieces.size()); }

  std::optional<int64_t> token_to_id(const std::string& token) const override {
    return tokenize::find_id(vocab_.piece_ids, token);
  }

  SpecialTokenIds special_tokens() const override { return special_; }

  Encoding add_special_tokens(const std::vector<int64_t>& a, const std::vector<int64_t>* b) const override {
    Encoding encoding;
    auto append = [&](const std::vector<int64_t>& ids, int64_t type) {
      encoding.input_ids.insert(encoding.input_ids.end(), ids.begin(), ids.end());
      encoding.input_ids.push_back(special_.sep);
      encoding.token_type_ids.insert(encoding.token_type_ids.end(), ids.size() + 1, type);
    };
    append(a, 0);
    if (b) append(*b, 1);
    encoding.input_ids.push_back(special_.cls);
    encoding.token_type_ids.push_back(kClsTokenType);
    return encoding;
  }

  int64_t num_special_tokens(bool pair) const override { return pair ? 3 : 2; }
  std::string fingerprint() const override { return fingerprint_; }

 private:
  static constexpr int64_t kClsTokenType = 2;

  // One word's unigram ids, through the cache: segmenting is the costly step of encoding.
  std::vector<int64_t> encode_word(const std::string& word) const {
    return cache_.ids_of(word, [&](const std::string& uncached) {
      std::vector<int64_t> ids;
      for (const PieceSpan& piece : unigram_segment(uncached, vocab_)) ids.push_back(piece.id);
      return ids;
    });
  }

  // Calls on_token(token, id) for each token of `text` in order, as tokenize::for_each_token walks
  // it (which also says where max_tokens stops it); word_tokens(word, on_token) gives the tokens of
  // one normalized, pre-tokenized word.
  template <typename WordTokens, typename OnToken>
  void for_each_token(const std::string& raw_text, std::size_t max_tokens, WordTokens&& word_tokens,
                      OnToken&& on_token) const {
    const std::string text = tokenize::sanitize_utf8(raw_text);
    const auto words = [&](std::string_view segment, auto&& on_word) {
      for (const std::string& word : metaspace_words(normalize(segment, settings_, charsmap_))) {
        if (!on_word(word)) return;
      }
    };
    tokenize::for_each_token(text, added_tokens_, max_tokens, words, word_tokens, on_token);
  }

  UnigramVocabulary vocab_;
  PrecompiledCharsmap charsmap_;
  std::vector<AddedToken> added_tokens_;
  SpecialTokenIds special_;
  NormalizerSettings settings_;
  std::string fingerprint_;
  mutable tokenize::WordIdCache cache_;  // each word's unigram ids
};

// ---------------------------------------------------------------------------------------------
// Loading.

UnigramVocabulary make_unigram_vocabulary(const ModelFields& fields, const std::string& path) {
  UnigramVocabulary vocab;
  const std::size_t size = fields.pieces.size();
  vocab.pieces.reserve(size);
  vocab.scores.reserve(size);
  double min_score = 0;
  for (std::size_t id = 0; id < size; ++id) {
    vocab.pieces.push_back(fields.pieces[id]);
    double score = fields.scores[id];
    if (is_number_comma(vocab.pieces.back())) score -= 100.0;
    vocab.scores.push_back(score);
    min_score = id == 0 ? score : std::min(min_score, score);
    vocab.longest_piece_bytes = std::max(vocab.longest_piece_bytes, vocab.pieces.back().size());
  }
  for (std::size_t id = 0; id < size; ++id) {
    if (!vocab.piece_ids.emplace(vocab.pieces[id], static_cast<int64_t>(id)).second) {
      throw input_error(path + ": not a valid SentencePiece model: the piece '" + vocab.pieces[id] + "' appears twice");
    }
  }
  const auto unk = std::find(fields.piece_types.begin(), fields.piece_types.end(), PieceType::unknown);
  if (unk == fields.piece_types.end()) throw input_error(path + ": not a valid SentencePiece model: no unknown piece");
  vocab.unk_id = static_cast<int>(unk - fields.piece_types.begin());
  constexpr double kUnknownPenalty = 10.0;  // HF's K_UNK_PENALTY
  vocab.unk_score = min_score - kUnknownPenalty;
  return vocab;
}

int64_t required_piece(const UnigramVocabulary& vocab, const std::string& piece, const std::string& path) {
  const std::optional<int64_t> id = tokenize::find_id(vocab.piece_ids, piece);
  if (!id) throw input_error(path + ": the model has no " + piece + " piece");
  return *id;
}

// What HF matches before the model: the model's control and user-defined pieces (SpmConverter),
// plus transformers' special tokens: <unk>, and <mask> with lstrip=True ("a <mask>" keeps no space).
std::vector<AddedToken> make_added_tokens(const UnigramVocabulary& vocab, const std::vector<PieceType>& types) {
  std::vector<AddedToken> tokens;
  for (std::size_t id = 0; id < types.size(); ++id) {
    const std::string& piece = vocab.pieces[id];
    const bool matched_in_text =
        types[id] == PieceType::control || types[id] == PieceType::user_defined || piece == "<unk>";
    if (matched_in_text && !piece.empty()) tokens.push_back({piece, static_cast<int64_t>(id), piece == "<mask>"});
  }
  return tokens;
}

}  // namespace

std::unique_ptr<Tokenizer> load_sentencepiece_tokenizer(const TokenizerOptions& options) {
  const std::string& path = options.vocab_file;
  if (path.empty()) throw input_error("tokenizer: sentencepiece needs spiece.model (vocab_file)");
  const std::string bytes = read_file(path, "the sentencepiece model");
  ModelFields fields;
  try {
    fields = read_model_fields(bytes);
  } catch (const std::runtime_error& e) {
    throw input_error(path + ": not a valid SentencePiece model: " + e.what());
  }
  if (fields.model_type != kUnigramModelType) {
    throw input_error(path + ": XLNet's tokenizer needs a unigram SentencePiece model, this one is not");
  }
  if (fields.pieces.empty()) throw input_error(path + ": not a valid SentencePiece model: it holds no pieces");

  UnigramVocabulary vocab = make_unigram_vocabulary(fields, path);
  const SpecialTokenIds special{required_piece(vocab, "<pad>", path), required_piece(vocab, "<unk>", path),
                                required_piece(vocab, "<cls>", path), required_piece(vocab, "<sep>", path),
                                required_piece(vocab, "<mask>", path)};
  for (const char* piece : {"<s>", "</s>"}) required_piece(vocab, piece, path);
  std::vector<AddedToken> added_tokens = make_added_tokens(vocab, fields.piece_types);
  PrecompiledCharsmap charsmap = PrecompiledCharsmap::parse(fields.precompiled_charsmap, path);

  const NormalizerSettings settings{options.strip_accents.value_or(true), options.lowercase};
  const std::string fingerprint = std::string("sentencepiece;lowercase=") + (settings.lowercase ? "1" : "0") +
                                  ";strip_accents=" + (settings.strip_accents ? "1" : "0") +
                                  ";model=" + tokenize::content_hash(bytes);
  return std::make_unique<SentencePieceTokenizer>(std::move(vocab), std::move(charsmap), std::move(added_tokens),
                                                  special, settings, fingerprint);
}

}  // namespace tbench
