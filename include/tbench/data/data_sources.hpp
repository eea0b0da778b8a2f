#pragma once
// Where samples come from: the run spec's data section turned into TokenizedSamples.
//   text files (CSV, TSV, JSONL) -> rows of text (+ pair) and label -> the tokenizer
//   pre-tokenized JSONL ({"input_ids": [...], "label": ...}) -> checked against the model
//   synthetic -> seeded ids at a fixed or drawn length
// Tokenized text is cached on disk, keyed by the file and the tokenizer, and reused next run.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tbench/data/data.hpp"
#include "tbench/models/model_config.hpp"
#include "tbench/spec/spec.hpp"
#include "tbench/tokenize/tokenizer.hpp"

namespace tbench {

// One row of a text dataset, before tokenization. The label is kept as written.
struct TextRow {
  std::string text;
  std::optional<std::string> pair;  // set wherever a pair column is configured, even empty (HF encodes "" as a pair)
  std::string label;
  int64_t line = 0;   // where the row starts in the file (1-based), for error messages
};

struct TextFileOptions {
  std::string path;
  TextFormat format = TextFormat::automatic;
  std::string text_column = "text";
  std::string text_pair_column;  // empty: single texts
  std::string label_column = "label";
  int64_t max_rows = 0;  // 0: all
};

// The file's format: `format`, or from the path's extension when it is auto.
TextFormat text_file_format(const TextFileOptions& options);

// Reads the rows. CSV as RFC 4180 (quoted fields may hold commas, quotes and newlines), TSV as
// tab-separated without quoting (GLUE's files), JSONL one object per line; CSV and TSV need a
// header row naming the columns. Throws a bad-input Error naming the file and line.
std::vector<TextRow> read_text_rows(const TextFileOptions& options);

// Labels to class indices. With `names`, a label is one of them (or its index); without, labels
// are integers in [0, num_labels), or names, numbered in sorted order. `names` is filled with
// the names used (empty for integer labels). Throws naming the file and line of a bad label.
std::vector<int64_t> resolve_labels(const std::vector<std::string>& labels, const std::vector<int64_t>& lines,
                                    std::vector<std::string>& names, int64_t num_labels, const std::string& path);

// Tokenizes rows: each text (and pair) truncated longest-first to seq_len with the model's
// special tokens.
TokenizedSamples tokenize_rows(const std::vector<TextRow>& rows, const std::vector<int64_t>& labels,
                               const Tokenizer& tokenizer, int64_t seq_len);

// What a model and a spec allow of pre-tokenized samples.
struct TokenizedJsonlLimits {
  int64_t seq_len = 0;         // longer samples are cut to this length...
  int64_t closing_tokens = 0;  // ...keeping their last closing_tokens ids (closing_special_tokens)
  int64_t vocab_size = 0;      // ids are in [0, vocab_size)
  int64_t token_types = 0;     // token types in [0, token_types) (token_type_limit)
  int64_t num_labels = 0;
  int64_t max_rows = 0;  // 0: every line
};

// Reads pre-tokenized JSONL: {"input_ids": [...], "<label_column>": ..., "token_type_ids": [...]}.
// A sample longer than seq_len loses the ids before its closing special tokens, not them.
TokenizedSamples read_tokenized_jsonl(const std::string& path, const std::string& label_column,
                                      const TokenizedJsonlLimits& limits, std::vector<std::string>& names);

// How many token types a model takes: its type_vocab_size (BERT 2, RoBERTa 1); without a
// token-type table (DistilBERT ignores types, XLNet compares segment ids) the 4 its tokenizers use.
int64_t token_type_limit(const ModelConfig& model);

// Whether every id, token type and label of `samples` indexes within the model's tables and the
// label count: checked on every path samples enter by (files, the token cache).
bool samples_fit_model(const TokenizedSamples& samples, int64_t vocab_size, int64_t token_types, int64_t num_labels);

// The tokenizer for a text dataset: files from data.tokenizer (or the model's folder), kind and
// switches from the files, tokenizer_config.json and the model's family. Throws naming the field.
TokenizerOptions resolve_tokenizer_options(const RunSpec& spec, const ModelConfig& model);

// --- token cache --------------------------------------------------------------------------------

struct CachedSamples {
  TokenizedSamples samples;
  std::vector<std::string> label_names;
};

// The cache file for a dataset: <dir>/<file stem>-<hash of key>.tokens.
std::string token_cache_path(const std::string& dir, const std::string& data_path, const std::string& key);
// nullopt when the file is missing, of another key, or damaged (then it is rebuilt).
std::optional<CachedSamples> load_token_cache(const std::string& path, const std::string& key);
void save_token_cache(const std::string& path, const std::string& key, const CachedSamples& cached);
std::string default_cache_dir();

// --- everything together ------------------------------------------------------------------------

struct PreparedData {
  TokenizedSamples train;
  TokenizedSamples eval;       // empty without data.eval_fraction
  CollateOptions collate;
  nlohmann::json description;  // the result's "data" section: source, sizes, lengths, tokenizer, cache
};

// Reads or generates the samples the spec asks for, checked against the model (vocabulary size,
// padding id, label count). Throws a bad-input Error naming the file, line or field.
PreparedData prepare_data(const RunSpec& spec, const ModelConfig& model);

}  // namespace tbench
