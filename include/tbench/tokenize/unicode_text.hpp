#pragma once
// The Unicode properties and mappings the tokenizers need, as HF's Rust tokenizers see them, from
// ICU: Rust's `char` methods rather than Python's str methods (U+001C..U+001F are not white space
// here) and, for the categories BERT's normalizer and pre-tokenizer ask about, the
// `unicode_categories` crate, whose tables are Unicode 8.0. Compared with HF's tokenizers 0.23.2
// over every code point (with ICU 72), all agree but to_lowercase on the capitals Unicode 16 added,
// which an ICU older than 76 does not know. UTF-8 stepping is in src/tokenize/tokenizer_support.hpp.
#include <string>
#include <string_view>

namespace tbench::unicode {

// White_Space property: Rust's char::is_whitespace.
bool is_white_space(char32_t c);
// General categories as of Unicode 8.0 (the unicode_categories crate): characters assigned later
// are unassigned (Cn), and the few that changed category since keep their 8.0 one.
bool is_punctuation(char32_t c);       // P*: Pc Pd Ps Pe Pi Pf Po
bool is_other(char32_t c);             // Cc Cf Co: the crate's is_other
bool is_nonspacing_mark(char32_t c);   // Mn
// General categories of the ICU in use, as a regex engine's \p{L} and \p{N} see them.
bool is_letter(char32_t c);            // L*
bool is_number(char32_t c);            // N*
// Rust's char::is_ascii_punctuation: ! through /, : through @, [ through `, { through ~.
bool is_ascii_punctuation(char32_t c);

// Canonical decomposition (NFD) of the whole text. U+11938 (Unicode 13) stays composed, as in the
// older normalization tables of HF's tokenizers.
std::u32string nfd(std::u32string_view text);
// Full lowercase mapping of each code point on its own, as Rust's char::to_lowercase: no
// language rules and no context (a final capital sigma becomes σ, not ς; İ becomes i + U+0307).
std::u32string to_lowercase(std::u32string_view text);

}  // namespace tbench::unicode
