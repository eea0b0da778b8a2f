// Fuzz targets for data files: text datasets (CSV, TSV, JSONL), pre-tokenized JSONL, the length
// histogram and the token cache.
#include "fuzz_target.hpp"
#include "tbench/data/data.hpp"
#include "tbench/data/data_sources.hpp"
#include "tbench/files.hpp"

namespace {

using tbench::fuzz::expect_success_or_input_error;

constexpr int64_t kVocabSize = 100, kTypeVocabSize = 2, kNumLabels = 3, kSeqLen = 16;

}  // namespace

// Input: one byte picking the format (c: CSV, t: TSV, anything else: JSONL), then the file. The
// reader's columns: text, pair, label.
TBENCH_FUZZ_TARGET(text_dataset) {
  if (bytes.empty()) return;
  tbench::TextFileOptions options;
  options.format = bytes[0] == 'c' ? tbench::TextFormat::csv : bytes[0] == 't' ? tbench::TextFormat::tsv : tbench::TextFormat::jsonl;
  options.path = tbench::fuzz::write_scratch_file("data.txt", bytes.substr(1));
  options.text_pair_column = "pair";
  expect_success_or_input_error([&] {
    const auto rows = tbench::read_text_rows(options);
    std::vector<std::string> labels, names;
    std::vector<int64_t> lines;
    for (const auto& row : rows) {
      labels.push_back(row.label);
      lines.push_back(row.line);
    }
    tbench::resolve_labels(labels, lines, names, kNumLabels, options.path);
  });
}
TBENCH_FUZZ_SEEDS(text_dataset) {
  return {"ctext,pair,label\n\"a, quoted \"\"text\"\"\",second,1\nplain,\"multi\nline\",0\n",
          "ttext\tpair\tlabel\nhello\tworld\tpositive\nbye\tnow\tnegative\n",
          "j{\"text\": \"hello\", \"pair\": \"world\", \"label\": 2}\n{\"text\": \"x\", \"pair\": \"y\", \"label\": 0}\n"};
}

TBENCH_FUZZ_TARGET(tokenized_jsonl) {
  const std::string path = tbench::fuzz::write_scratch_file("tokens.jsonl", bytes);
  expect_success_or_input_error([&] {
    std::vector<std::string> names;
    const auto samples = tbench::read_tokenized_jsonl(path, "label", {kSeqLen, 1, kVocabSize, kTypeVocabSize, kNumLabels, 0}, names);
    // What the reader returns indexes the embedding tables and the loss: it must be in range.
    for (const int32_t id : samples.ids) {
      if (id < 0 || id >= kVocabSize) std::abort();
    }
    for (const int8_t t : samples.type_ids) {
      if (t < 0 || t >= kTypeVocabSize) std::abort();
    }
    for (const int64_t label : samples.labels) {
      if (label < 0 || label >= kNumLabels) std::abort();
    }
  });
}
TBENCH_FUZZ_SEEDS(tokenized_jsonl) {
  return {"{\"input_ids\": [1, 5, 7, 2], \"label\": 1}\n{\"input_ids\": [1, 9, 2], \"label\": 0, \"token_type_ids\": [0, 0, 1]}\n",
          "{\"input_ids\": [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20], \"label\": \"2\"}\n"};
}

TBENCH_FUZZ_TARGET(length_histogram) {
  const std::string path = tbench::fuzz::write_scratch_file("lengths.txt", bytes);
  expect_success_or_input_error([&] {
    tbench::LengthDistribution distribution;
    distribution.kind = tbench::LengthDistributionKind::histogram;
    distribution.histogram = tbench::read_length_histogram(path);
    for (const int64_t length : tbench::sample_lengths(distribution, 64, kSeqLen, 1)) {
      if (length < 1 || length > kSeqLen) std::abort();
    }
  });
}
TBENCH_FUZZ_SEEDS(length_histogram) { return {"# length count\n12 30\n16 10\n3 2\n", "5,1\n7,2.5\n"}; }

TBENCH_FUZZ_TARGET(token_cache) {
  const std::string path = tbench::fuzz::write_scratch_file("data.tokens", bytes);
  expect_success_or_input_error([&] {
    const auto cached = tbench::load_token_cache(path, "fuzz-key");
    if (!cached) return;
    const auto& s = cached->samples;
    // A cache that loads is whole: offsets cover the ids, types match them.
    if (s.offsets.size() != s.labels.size() + 1 || s.offsets.back() != static_cast<int64_t>(s.ids.size())) std::abort();
    for (int64_t i = 0; i < s.size(); ++i) {
      if (s.length(i) < 0) std::abort();
    }
  });
}
TBENCH_FUZZ_SEEDS(token_cache) {
  tbench::CachedSamples cached;
  cached.samples.add({1, 5, 7, 2}, {}, 1);
  cached.samples.add({1, 9, 2}, {0, 0, 1}, 0);
  cached.label_names = {"negative", "positive"};
  const std::string path = tbench::fuzz::scratch_dir() + "/seed.tokens";
  tbench::save_token_cache(path, "fuzz-key", cached);
  return {tbench::read_file(path, "the seed")};
}
