#include "tokenizer_support.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tbench/errors.hpp"
#include "tbench/tokenize/unicode_text.hpp"

namespace tbench::tokenize {

namespace {

constexpr char32_t kReplacementCharacter = 0xFFFD;

}  // namespace

CodePoint decode_utf8(std::string_view text, std::size_t pos) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  if (lead < 0x80) return {lead, 1, true};
  std::size_t size = 0;
  char32_t value = 0;
  char32_t smallest = 0;  // below this the sequence is overlong
  if ((lead & 0xE0) == 0xC0) {
    size = 2, value = lead & 0x1F, smallest = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    size = 3, value = lead & 0x0F, smallest = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    size = 4, value = lead & 0x07, smallest = 0x10000;
  } else {
    return {kReplacementCharacter, 1, false};
  }
  if (pos + size > text.size()) return {kReplacementCharacter, 1, false};
  for (std::size_t i = 1; i < size; ++i) {
    if (!is_continuation_byte(text[pos + i])) return {kReplacementCharacter, 1, false};
    const auto byte = static_cast<unsigned char>(text[pos + i]);
    value = (value << 6) | (byte & 0x3F);
  }
  const bool surrogate = value >= 0xD800 && value <= 0xDFFF;
  if (value < smallest || value > 0x10FFFF || surrogate) return {kReplacementCharacter, 1, false};
  return {value, size, true};
}

std::size_t invalid_utf8_at(std::string_view text) {
  for (std::size_t at = 0; at < text.size();) {
    const CodePoint c = decode_utf8(text, at);
    if (!c.valid) return at;
    at += c.size;
  }
  return std::string_view::npos;
}

std::string not_utf8_error(std::string_view text, std::size_t pos) {
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned>(static_cast<unsigned char>(text[pos])));
  return std::string("not UTF-8 (byte ") + hex + "); save the file as UTF-8";
}

void append_utf8(std::string& out, char32_t code_point) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xC0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xE0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
}

void append_utf8(std::string& out, std::u32string_view code_points) {
  for (const char32_t code_point : code_points) append_utf8(out, code_point);
}

std::u32string to_code_points(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (std::size_t pos = 0; pos < text.size();) {
    const CodePoint cp = decode_utf8(text, pos);
    out.push_back(cp.value);
    pos += cp.size;
  }
  return out;
}

std::string sanitize_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t pos = 0; pos < text.size();) {
    const CodePoint cp = decode_utf8(text, pos);
    if (cp.valid) {
      out.append(text.substr(pos, cp.size));
    } else {
      append_utf8(out, kReplacementCharacter);
    }
    pos += cp.size;
  }
  return out;
}

namespace {

// The longest added token that starts at `pos`, if any.
const AddedToken* longest_token_at(std::string_view text, std::size_t pos, const std::vector<AddedToken>& tokens) {
  const AddedToken* best = nullptr;
  for (const AddedToken& token : tokens) {
    // The first-byte test keeps this cheap: it runs at every position of every text.
    if (token.content.empty() || token.content[0] != text[pos]) continue;
    if (text.compare(pos, token.content.size(), token.content) != 0) continue;
    if (!best || token.content.size() > best->content.size()) best = &token;
  }
  return best;
}

// Where the run of whitespace that ends at `end` begins, looking no further left than `floor`.
std::size_t whitespace_run_start(std::string_view text, std::size_t floor, std::size_t end) {
  std::size_t run_start = end;
  for (std::size_t pos = floor; pos < end;) {
    const CodePoint cp = decode_utf8(text, pos);
    if (!cp.valid || !unicode::is_white_space(cp.value)) run_start = end;
    else if (run_start == end) run_start = pos;
    pos += cp.size;
  }
  return run_start;
}

}  // namespace

std::vector<TextSegment> split_on_added_tokens(std::string_view text, const std::vector<AddedToken>& tokens) {
  std::vector<TextSegment> segments;
  std::size_t plain_start = 0;  // end of the previous match
  for (std::size_t pos = 0; pos < text.size();) {
    const AddedToken* token = longest_token_at(text, pos, tokens);
    if (!token) {
      pos += decode_utf8(text, pos).size;
      continue;
    }
    const std::size_t start = token->lstrip ? whitespace_run_start(text, plain_start, pos) : pos;
    if (plain_start < start) segments.push_back({text.substr(plain_start, start - plain_start), std::nullopt});
    pos += token->content.size();
    segments.push_back({text.substr(start, pos - start), token->id});
    plain_start = pos;
  }
  if (plain_start < text.size()) segments.push_back({text.substr(plain_start), std::nullopt});
  return segments;
}

std::string content_hash(std::string_view bytes) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char byte : bytes) {
    hash ^= static_cast<unsigned char>(byte);
    hash *= 0x100000001b3ULL;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

}  // namespace tbench::tokenize
