// Plain-text corpora for masked-LM training: .txt files (Gutenberg books, say) tokenized line by
// line and packed into fixed-length blocks, as HF's run_mlm groups texts, or each line a sample of
// its own (data.line_by_line), as run_mlm's --line_by_line and HF's distillation example read them.
#include <algorithm>
#include <filesystem>
#include <limits>

#include "tbench/data/data.hpp"
#include "tbench/errors.hpp"
#include "tbench/files.hpp"
#include "tbench/tokenize/unicode_text.hpp"
#include "../tokenize/tokenizer_support.hpp"

namespace tbench {
namespace {

namespace fs = std::filesystem;

// Python's str.isspace, which HF's run_mlm asks of a line: every code point Unicode white space
// (NBSP, U+3000 and the like too) or one of U+001C..U+001F, which Python counts and Unicode does not.
bool is_blank(const std::string& line) {
  for (std::size_t at = 0; at < line.size();) {
    const tokenize::CodePoint c = tokenize::decode_utf8(line, at);
    const bool separator = c.value >= 0x1C && c.value <= 0x1F;
    if (!c.valid || !(unicode::is_white_space(c.value) || separator)) return false;
    at += c.size;
  }
  return true;
}

// Calls `take` with each non-blank line of `text`, without its line break, until it returns false.
// A line ends at \n, \r\n or a lone \r, as Python's universal newlines (HF reads the files so).
// Blank lines (paragraph breaks) are skipped, as HF's run_mlm skips them with --line_by_line
// (without it HF would add an empty [CLS] [SEP] for each). Returns false where `take` stopped.
template <typename Take>
bool for_each_line(const std::string& text, Take take) {
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find_first_of("\r\n", start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + (text.compare(end, 2, "\r\n") == 0 ? 2 : 1);
    if (is_blank(line)) continue;
    if (!take(line)) return false;
  }
  return true;
}

// A corpus file as text: its bytes, refused where they are not UTF-8 (a Latin-1 or cp1252 export),
// naming the line, since each tokenizer would read such bytes differently and HF not at all.
std::string read_corpus_file(const std::string& file) {
  std::string text = read_file(file, "a corpus file");
  const std::size_t bad = tokenize::invalid_utf8_at(text);
  if (bad != std::string::npos) {
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(bad), '\n');
    throw input_error(file + ":" + std::to_string(line) + ": " + tokenize::not_utf8_error(text, bad));
  }
  return text;
}

}  // namespace

std::vector<std::string> corpus_files(const std::string& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return {path};
  if (!fs::is_directory(path, ec)) throw input_error(path + ": no such file or folder");
  std::vector<std::string> files;
  for (auto it = fs::recursive_directory_iterator(path, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec) && it->path().extension() == ".txt") files.push_back(it->path().string());
  }
  if (ec) throw input_error(path + ": cannot list the folder: " + ec.message());
  if (files.empty()) throw input_error(path + ": the folder holds no .txt files");
  std::sort(files.begin(), files.end());
  return files;
}

TokenizedSamples pack_corpus(const std::vector<std::string>& files, const Tokenizer& tokenizer, int64_t block_size,
                             int64_t max_blocks) {
  const std::size_t enough = max_blocks > 0 ? static_cast<std::size_t>(max_blocks * block_size)
                                            : std::numeric_limits<std::size_t>::max();
  // Every line with the model's special tokens, back to back.
  std::vector<int64_t> stream;
  const auto append = [&](const std::string& line) {
    const Encoding encoding = tokenizer.encode(line, nullptr, /*max_length=*/0);
    stream.insert(stream.end(), encoding.input_ids.begin(), encoding.input_ids.end());
    return stream.size() < enough;
  };
  for (const auto& file : files) {
    if (!for_each_line(read_corpus_file(file), append)) break;
  }
  TokenizedSamples samples;
  const std::size_t blocks = std::min(stream.size(), enough) / static_cast<std::size_t>(block_size);
  samples.ids.reserve(blocks * static_cast<std::size_t>(block_size));
  for (std::size_t b = 0; b < blocks; ++b) {
    const auto first = stream.begin() + static_cast<std::ptrdiff_t>(b * static_cast<std::size_t>(block_size));
    samples.ids.insert(samples.ids.end(), first, first + block_size);  // ids were checked against the vocabulary
    samples.offsets.push_back(static_cast<int64_t>(samples.ids.size()));
    samples.labels.push_back(0);  // no class: the targets are the tokens themselves
  }
  return samples;
}

TokenizedSamples corpus_lines(const std::vector<std::string>& files, const Tokenizer& tokenizer, int64_t seq_len,
                              int64_t max_lines) {
  TokenizedSamples samples;
  const auto add = [&](const std::string& line) {
    const Encoding encoding = tokenizer.encode(line, nullptr, seq_len);
    if (encoding.truncated) ++samples.truncated;
    // No token types, as packed blocks: one segment (HF's masked-LM collators give BERT's and
    // RoBERTa's zeros, and its permutation collator drops XLNet's). No label: the targets are the tokens.
    samples.add(encoding.input_ids, /*sample_type_ids=*/{}, /*label=*/0);
    return max_lines <= 0 || samples.size() < max_lines;
  };
  for (const auto& file : files) {
    if (!for_each_line(read_corpus_file(file), add)) break;
  }
  return samples;
}

}  // namespace tbench
