#include "tbench/tokenize/unicode_text.hpp"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/ustring.h>

#include <algorithm>
#include <stdexcept>

namespace tbench::unicode {
namespace {

uint32_t category_mask(char32_t c) { return U_GET_GC_MASK(static_cast<UChar32>(c)); }

// The general category the unicode_categories crate (Unicode 8.0 tables) gives `c`. The exceptions
// are the characters whose category changed since in a way that moves them in or out of P*, Mn or
// Cc/Cf/Co (found by comparing HF's tokenizers with ICU over every code point).
uint32_t unicode_8_category_mask(char32_t c) {
  if (c < 0x250) return category_mask(c);  // Latin and its supplements: all there since Unicode 5.0
  switch (c) {
    case 0x166D:   // CANADIAN SYLLABICS CHI SIGN: So since Unicode 12
    case 0x111C9:  // SHARADA SANDHI MARK: Mn since Unicode 11
      return U_GC_PO_MASK;
    case 0x1734:  // HANUNOO SIGN PAMUDPOD: Mc since Unicode 14
      return U_GC_MN_MASK;
    case 0x1885:  // MONGOLIAN LETTER ALI GALI BALUDA and THREE BALUDA: Mn since Unicode 9
    case 0x1886:
      return U_GC_LO_MASK;
    case 0xA9BD:  // JAVANESE CONSONANT SIGN KERET: Mn since Unicode 12
      return U_GC_MC_MASK;
    default:
      break;
  }
  UVersionInfo age;
  u_charAge(static_cast<UChar32>(c), age);
  return age[0] <= 8 ? category_mask(c) : U_GC_CN_MASK;
}

void check(UErrorCode status, const char* what) {
  if (U_FAILURE(status)) throw std::runtime_error(std::string("ICU ") + what + ": " + u_errorName(status));
}

std::u32string icu_nfd(std::u32string_view text) {
  // Nothing below U+00C0 decomposes: most text skips the trip through UTF-16.
  if (std::all_of(text.begin(), text.end(), [](char32_t c) { return c < 0xC0; })) return std::u32string(text);
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* normalizer = icu::Normalizer2::getNFDInstance(status);
  check(status, "NFD instance");
  const icu::UnicodeString source =
      icu::UnicodeString::fromUTF32(reinterpret_cast<const UChar32*>(text.data()), static_cast<int32_t>(text.size()));
  if (normalizer->isNormalized(source, status) && U_SUCCESS(status)) return std::u32string(text);
  status = U_ZERO_ERROR;
  const icu::UnicodeString normalized = normalizer->normalize(source, status);
  check(status, "NFD");
  std::u32string out(static_cast<std::size_t>(normalized.countChar32()), U'\0');
  normalized.toUTF32(reinterpret_cast<UChar32*>(out.data()), static_cast<int32_t>(out.size()), status);
  check(status, "NFD to UTF-32");
  return out;
}

}  // namespace

bool is_white_space(char32_t c) {
  if (c < 0x80) return c == U' ' || (c >= U'\t' && c <= U'\r');  // the common case, without a call
  return u_isUWhiteSpace(static_cast<UChar32>(c));
}

bool is_punctuation(char32_t c) { return (unicode_8_category_mask(c) & U_GC_P_MASK) != 0; }

bool is_other(char32_t c) {
  return (unicode_8_category_mask(c) & (U_GC_CC_MASK | U_GC_CF_MASK | U_GC_CO_MASK)) != 0;
}

bool is_nonspacing_mark(char32_t c) { return (unicode_8_category_mask(c) & U_GC_MN_MASK) != 0; }

bool is_letter(char32_t c) { return (category_mask(c) & U_GC_L_MASK) != 0; }

bool is_number(char32_t c) { return (category_mask(c) & U_GC_N_MASK) != 0; }

bool is_ascii_punctuation(char32_t c) {
  return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
}

std::u32string nfd(std::u32string_view text) {
  // U+11938 is a starter, so the text around it normalizes on its own.
  constexpr char32_t kLeftComposed = 0x11938;
  std::u32string out;
  for (std::size_t start = 0;;) {
    const std::size_t stop = text.find(kLeftComposed, start);
    out += icu_nfd(text.substr(start, stop == std::u32string_view::npos ? stop : stop - start));
    if (stop == std::u32string_view::npos) return out;
    out.push_back(kLeftComposed);
    start = stop + 1;
  }
}

std::u32string to_lowercase(std::u32string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (char32_t c : text) {
    if (c < 0x80) {  // the common case, without a trip through UTF-16
      out.push_back(c >= U'A' && c <= U'Z' ? c + (U'a' - U'A') : c);
      continue;
    }
    // u_strToLower on the lone code point: full mappings (İ -> i + U+0307) in the root locale, and
    // no neighbours to give a sigma a final-form context.
    UChar source[2];
    int32_t source_length = 0;
    U16_APPEND_UNSAFE(source, source_length, static_cast<UChar32>(c));
    UChar lowered[8];
    UErrorCode status = U_ZERO_ERROR;
    const int32_t lowered_length = u_strToLower(lowered, 8, source, source_length, "", &status);
    check(status, "lowercase");
    for (int32_t i = 0; i < lowered_length;) {
      UChar32 mapped;
      U16_NEXT(lowered, i, lowered_length, mapped);
      out.push_back(static_cast<char32_t>(mapped));
    }
  }
  return out;
}

}  // namespace tbench::unicode
