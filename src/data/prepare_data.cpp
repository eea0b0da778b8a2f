// From the spec's data section to train/eval samples and collate options, checked against the
// model: the one place that knows which source, tokenizer and cache a run uses.
#include <filesystem>
#include <fstream>
#include <numeric>
#include <vector>

#include <spdlog/spdlog.h>

#include "tbench/data/data_sources.hpp"
#include "tbench/errors.hpp"
#include "tbench/json_text.hpp"
#include "tbench/stable_hash.hpp"
#include "tbench/timing/stats.hpp"

namespace tbench {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

[[noreturn]] void fail_field(const RunSpec& spec, const std::string& field, const std::string& message) {
  throw input_error(spec.where(field) + message);
}

TokenizerKind family_tokenizer(Architecture arch) {
  switch (arch) {
    case Architecture::bert:
    case Architecture::distilbert: return TokenizerKind::wordpiece;
    case Architecture::roberta: return TokenizerKind::byte_level_bpe;
    case Architecture::xlnet: return TokenizerKind::sentencepiece;
  }
  return TokenizerKind::wordpiece;
}

// The folders that may hold the tokenizer files: data.tokenizer.path, else the model's own folder
// (an HF model folder keeps config.json, weights and tokenizer files together).
std::vector<fs::path> tokenizer_folders(const RunSpec& spec) {
  std::vector<fs::path> folders;
  if (!spec.data.tokenizer.path.empty()) return {fs::path(spec.data.tokenizer.path)};
  if (!spec.model.config.empty()) folders.push_back(fs::path(spec.model.config).parent_path());
  if (!spec.model.weights.empty()) {
    const fs::path weights(spec.model.weights);
    folders.push_back(fs::is_directory(weights) ? weights : weights.parent_path());
  }
  return folders;
}

json read_tokenizer_config(const fs::path& folder) {
  // Tokens a user added (tokenizer.add_tokens, then save_pretrained) are not read: such a token in
  // the text is split into pieces, where HF keeps it whole.
  if (std::error_code ec; fs::exists(folder / "added_tokens.json", ec)) {
    spdlog::warn("{}: tbench does not read added tokens: text holding them is encoded as if they were not in the "
                 "vocabulary, unlike HF's tokenizer", (folder / "added_tokens.json").string());
  }
  const fs::path path = folder / "tokenizer_config.json";
  std::ifstream in(path);
  if (!in) return json::object();
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw input_error(path.string() + ": not valid JSON: " + e.what());
  }
}

std::optional<bool> config_flag(const json& config, const std::string& key) {
  return config.contains(key) && config[key].is_boolean() ? std::optional<bool>(config[key].get<bool>()) : std::nullopt;
}

bool model_is_cased(const std::string& name) {
  return name.find("cased") != std::string::npos && name.find("uncased") == std::string::npos;
}

// Finds the vocabulary files of `kind` in a folder; true if found.
bool find_files(const fs::path& folder, TokenizerKind kind, TokenizerOptions& o) {
  const auto has = [&](const char* name) { return fs::exists(folder / name); };
  switch (kind) {
    case TokenizerKind::wordpiece:
      if (!has("vocab.txt")) return false;
      o.vocab_file = (folder / "vocab.txt").string();
      return true;
    case TokenizerKind::byte_level_bpe:
      if (!has("vocab.json") || !has("merges.txt")) return false;
      o.vocab_file = (folder / "vocab.json").string();
      o.merges_file = (folder / "merges.txt").string();
      return true;
    case TokenizerKind::sentencepiece:
      if (!has("spiece.model")) return false;
      o.vocab_file = (folder / "spiece.model").string();
      return true;
  }
  return false;
}

TokenizerKind kind_of_vocab_file(const std::string& path, TokenizerKind fallback) {
  const std::string ext = fs::path(path).extension().string();
  if (ext == ".txt") return TokenizerKind::wordpiece;
  if (ext == ".json") return TokenizerKind::byte_level_bpe;
  if (ext == ".model") return TokenizerKind::sentencepiece;
  return fallback;
}

void check_tokenizer_fits_model(const RunSpec& spec, const ModelConfig& model, const Tokenizer& tokenizer) {
  const std::string field = spec.data.tokenizer.vocab.empty() && !spec.data.tokenizer.path.empty() ? "data.tokenizer.path"
                                                                                                   : "data.tokenizer";
  if (tokenizer.vocab_size() > model.vocab_size) {
    fail_field(spec, field, "the vocabulary has " + std::to_string(tokenizer.vocab_size()) + " tokens but " + model.name +
                                " embeds only " + std::to_string(model.vocab_size) +
                                " (its vocab_size): is this another model's tokenizer?");
  }
  if (tokenizer.special_tokens().pad != model.pad_token_id) {
    fail_field(spec, field, "the tokenizer pads with id " + std::to_string(tokenizer.special_tokens().pad) + " but " +
                                model.name + "'s pad_token_id is " + std::to_string(model.pad_token_id) +
                                ": is this another model's tokenizer?");
  }
}

// The model's special tokens are never cut ([CLS] a [SEP] b [SEP] keeps all three), so a seq_len
// below their count would give samples longer than seq_len: caught here, not at step 1's collate.
void check_seq_len_holds_the_template(const RunSpec& spec, const Tokenizer& tokenizer, bool pair) {
  const int64_t special = tokenizer.num_special_tokens(pair);
  if (spec.data.seq_len >= special) return;
  fail_field(spec, "data.seq_len", std::to_string(spec.data.seq_len) + " is shorter than the " +
                                       std::to_string(special) + " special tokens the " + to_string(tokenizer.kind()) +
                                       " tokenizer adds to every " + (pair ? "pair of texts" : "text") +
                                       ": set data.seq_len to " + std::to_string(special) + " or more");
}

// A data file in the token cache's key: its path, size and a hash of its bytes. A modification time
// would miss a file rewritten within one timestamp tick (a second, on some filesystems) at the same
// size, or restored with its old time (`touch -r`, `cp -p`), and serve the old tokens. Hashing
// runs at about 0.5 GB/s on the 2-core test VM, far faster than tokenizing.
std::string describe_file(const std::string& path) {
  std::error_code ignored;
  const auto size = fs::file_size(path, ignored);
  std::ifstream in(path, std::ios::binary);
  std::vector<char> buffer(1 << 20);
  uint64_t hash = kFnv1aOffset;
  while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0) {
    hash = fnv1a(buffer.data(), static_cast<std::size_t>(in.gcount()), hash);
  }
  return fs::absolute(path).string() + "|" + std::to_string(size) + "|" + std::to_string(hash);
}

struct Loaded {
  TokenizedSamples samples;
  std::vector<std::string> label_names;
  json tokenizer = nullptr;
  json cache = nullptr;
  json corpus = nullptr;
  PaddingConvention padding;
  std::optional<SpecialTokenIds> special;  // the tokenizer's, when the data has one
  std::vector<int64_t> other_special_ids;  // and its <s>, </s>, <eod>, <eop> (HF's all_special_ids beyond those)
};

// The run's tokenizer, checked against the model; `loaded` records which it is.
std::unique_ptr<Tokenizer> load_run_tokenizer(const RunSpec& spec, const ModelConfig& model, Loaded& loaded) {
  const TokenizerOptions options = resolve_tokenizer_options(spec, model);
  std::unique_ptr<Tokenizer> tokenizer;
  try {
    tokenizer = load_tokenizer(options);
  } catch (const Error& e) {
    fail_field(spec, "data.tokenizer", e.what());
  }
  check_tokenizer_fits_model(spec, model, *tokenizer);
  loaded.padding = {tokenizer->pads_left(), tokenizer->pad_token_type_id()};
  loaded.special = tokenizer->special_tokens();
  for (const char* token : {"<s>", "</s>", "<eod>", "<eop>"}) {  // HF's all_special_ids beyond the five
    if (const auto id = tokenizer->token_to_id(token)) loaded.other_special_ids.push_back(*id);
  }
  loaded.tokenizer = {{"kind", to_string(options.kind)},
                      {"vocab", options.vocab_file},
                      {"merges", options.merges_file.empty() ? json(nullptr) : json(options.merges_file)},
                      {"lowercase", options.lowercase},
                      {"vocab_size", tokenizer->vocab_size()}};
  return tokenizer;
}

// A cached tokenization for `key`, if the cache holds one that fits the model.
std::optional<CachedSamples> cached_samples(const RunSpec& spec, const ModelConfig& model, const std::string& cache_path,
                                            const std::string& key) {
  if (!spec.data.cache) return std::nullopt;
  auto cached = load_token_cache(cache_path, key);
  if (cached && !samples_fit_model(cached->samples, model.vocab_size, token_type_limit(model), spec.num_labels)) {
    spdlog::warn("token cache {}: ids outside the model's tables (a damaged file); tokenizing again", cache_path);
    cached.reset();
  }
  if (cached) spdlog::info("tokens from the cache: {}", cache_path);
  return cached;
}

// Part of every token cache key, and raised whenever tbench encodes the same inputs differently
// (a fix that brings it closer to HF): a cache written before holds other tokens. 2: an empty pair
// field is a pair; PLM spans drawn as HF draws them in short rows.
constexpr const char* kEncodingVersion = "encoding 2|";

// A plain-text corpus packed into seq_len blocks, or read a line a sample (masked-LM tasks).
Loaded load_corpus(const RunSpec& spec, const ModelConfig& model) {
  const DataSpec& d = spec.data;
  Loaded loaded;
  const auto tokenizer = load_run_tokenizer(spec, model, loaded);
  if (d.line_by_line) check_seq_len_holds_the_template(spec, *tokenizer, /*pair=*/false);  // blocks are cut, not encoded
  std::vector<std::string> files;
  try {
    files = corpus_files(d.path);
  } catch (const Error& e) {
    fail_field(spec, "data.path", e.what());
  }
  std::string key = kEncodingVersion + std::string(d.line_by_line ? "corpus-lines|" : "corpus|") + std::to_string(d.seq_len) + "|" +
                    std::to_string(d.num_samples) + "|" + tokenizer->fingerprint();
  for (const auto& f : files) key += "|" + describe_file(f);
  const std::string cache_path = token_cache_path(d.cache_dir.empty() ? default_cache_dir() : d.cache_dir, d.path, key);
  if (auto cached = cached_samples(spec, model, cache_path, key)) {
    loaded.samples = std::move(cached->samples);
    loaded.cache = {{"path", cache_path}, {"hit", true}};
  } else {
    loaded.samples = d.line_by_line ? corpus_lines(files, *tokenizer, d.seq_len, d.num_samples)
                                    : pack_corpus(files, *tokenizer, d.seq_len, d.num_samples);
    if (d.cache) {
      save_token_cache(cache_path, key, {loaded.samples, {}});
      loaded.cache = {{"path", cache_path}, {"hit", false}};
    }
  }
  if (loaded.samples.size() == 0) {
    fail_field(spec, "data.path", "'" + d.path + "' " +
                                      (d.line_by_line ? std::string("holds no line that is not blank")
                                                      : "holds fewer than data.seq_len " + std::to_string(d.seq_len) +
                                                            " tokens: not one block to train on"));
  }
  if (d.line_by_line) {
    loaded.corpus = {{"files", files.size()}, {"lines", loaded.samples.size()}};
  } else {
    loaded.corpus = {{"files", files.size()}, {"blocks", loaded.samples.size()}, {"block_tokens", d.seq_len}};
  }
  return loaded;
}

Loaded load_text(const RunSpec& spec, const ModelConfig& model) {
  const DataSpec& d = spec.data;
  Loaded loaded;
  const auto tokenizer = load_run_tokenizer(spec, model, loaded);
  // With a pair column the longer pair template applies (to every row: an empty pair is a pair).
  check_seq_len_holds_the_template(spec, *tokenizer, /*pair=*/!d.text_pair_column.empty());
  const TextFileOptions file{d.path, d.format, d.text_column, d.text_pair_column, d.label_column, d.num_samples};
  const std::string key = kEncodingVersion + std::string("text|") + describe_file(d.path) + "|" + to_string(text_file_format(file)) + "|" + d.text_column + "|" +
                          d.text_pair_column + "|" + d.label_column + "|" + json_text(json(d.labels)) + "|" +
                          std::to_string(d.num_samples) + "|" + std::to_string(d.seq_len) + "|" +
                          std::to_string(spec.num_labels) + "|" + tokenizer->fingerprint();
  const std::string cache_path = token_cache_path(d.cache_dir.empty() ? default_cache_dir() : d.cache_dir, d.path, key);
  if (auto cached = cached_samples(spec, model, cache_path, key)) {
    loaded.samples = std::move(cached->samples);
    loaded.label_names = std::move(cached->label_names);
    loaded.cache = {{"path", cache_path}, {"hit", true}};
    return loaded;
  }
  const auto rows = read_text_rows(file);
  std::vector<std::string> labels;
  std::vector<int64_t> lines;
  for (const auto& row : rows) {
    labels.push_back(row.label);
    lines.push_back(row.line);
  }
  loaded.label_names = d.labels;
  const auto indices = resolve_labels(labels, lines, loaded.label_names, spec.num_labels, d.path);
  loaded.samples = tokenize_rows(rows, indices, *tokenizer, d.seq_len);
  // The vocabulary was checked against the model above; this also covers token types (a pair
  // encoded with type 1 for a model whose type table has one row).
  if (!samples_fit_model(loaded.samples, model.vocab_size, token_type_limit(model), spec.num_labels)) {
    fail_field(spec, "data.tokenizer", "its ids or token types fall outside " + model.name + "'s tables (vocab_size " +
                                           std::to_string(model.vocab_size) + ", " + std::to_string(token_type_limit(model)) +
                                           " token types): is this another model's tokenizer?");
  }
  if (d.cache) {
    save_token_cache(cache_path, key, {loaded.samples, loaded.label_names});
    loaded.cache = {{"path", cache_path}, {"hit", false}};
  }
  return loaded;
}

Loaded load_samples(const RunSpec& spec, const ModelConfig& model) {
  const DataSpec& d = spec.data;
  Loaded loaded;
  if (d.source == DataSource::text) return load_text(spec, model);
  if (d.source == DataSource::corpus) return load_corpus(spec, model);
  // Ids made without a tokenizer are padded as the model family's tokenizer would pad them.
  loaded.padding = padding_convention(family_tokenizer(model.arch));
  if (d.source == DataSource::tokenized) {
    loaded.label_names = d.labels;
    const TokenizedJsonlLimits limits{d.seq_len,         closing_special_tokens(family_tokenizer(model.arch)),
                                      model.vocab_size, token_type_limit(model),
                                      spec.num_labels,  d.num_samples};
    loaded.samples = read_tokenized_jsonl(d.path, d.label_column, limits, loaded.label_names);
    return loaded;
  }
  SyntheticOptions o{d.num_samples, d.seq_len, model.vocab_size, model.pad_token_id, spec.num_labels, d.seed, {}};
  o.lengths.kind = d.lengths.distribution;
  o.lengths.min_length = d.lengths.min;
  o.lengths.mean = d.lengths.mean;
  o.lengths.stddev = d.lengths.std;
  if (d.lengths.distribution == LengthDistributionKind::histogram) o.lengths.histogram = read_length_histogram(d.lengths.histogram);
  loaded.samples = make_synthetic_samples(o);
  return loaded;
}

// A seeded, fixed split: the same samples are held out every epoch and every run.
void split_eval(const RunSpec& spec, TokenizedSamples all, PreparedData& out) {
  const int64_t n = all.size();
  const int64_t held_out = spec.data.eval_fraction > 0
                               ? std::max<int64_t>(1, static_cast<int64_t>(std::llround(spec.data.eval_fraction * static_cast<double>(n))))
                               : 0;
  if (held_out == 0) {
    out.train = std::move(all);
    return;
  }
  // At least one sample is held out, so a tiny dataset can give them all to eval: a run would then
  // train on nothing and write a result of nulls (with drop_last no step is ever required).
  if (held_out >= n) {
    fail_field(spec, "data.eval_fraction", json_text(json(spec.data.eval_fraction)) + " of " + std::to_string(n) +
                                               " sample(s) holds out " + std::to_string(held_out) +
                                               " (at least one), leaving none to train on: add data or set data.eval_fraction to 0");
  }
  auto order = epoch_order(n, spec.data.seed, /*epoch=*/0);
  std::vector<int64_t> eval(order.end() - held_out, order.end()), train(order.begin(), order.end() - held_out);
  std::sort(eval.begin(), eval.end());
  std::sort(train.begin(), train.end());
  out.train = all.subset(train);
  out.train.truncated = all.truncated;
  out.eval = all.subset(eval);
}

// The percentiles as the timings' are taken (interpolated, numpy's default): of lengths 2, 2, 10
// and 10 the median is 6, where the order statistic below it said 2.
json length_stats(const TokenizedSamples& s) {
  std::vector<double> lengths;
  for (int64_t i = 0; i < s.size(); ++i) lengths.push_back(static_cast<double>(s.length(i)));
  if (lengths.empty()) return nullptr;
  const Spread l = spread(lengths);
  const auto whole = [](double length) { return static_cast<int64_t>(length); };
  return {{"mean", l.mean}, {"min", whole(l.min)}, {"p10", l.p10}, {"median", l.median}, {"p90", l.p90}, {"max", whole(l.max)}};
}

}  // namespace

int64_t token_type_limit(const ModelConfig& model) {
  return model.type_vocab_size > 0 ? model.type_vocab_size : 4;
}

bool samples_fit_model(const TokenizedSamples& samples, int64_t vocab_size, int64_t token_types, int64_t num_labels) {
  const auto outside = [](int64_t value, int64_t limit) { return value < 0 || value >= limit; };
  return std::none_of(samples.ids.begin(), samples.ids.end(), [&](int32_t id) { return outside(id, vocab_size); }) &&
         std::none_of(samples.type_ids.begin(), samples.type_ids.end(), [&](int8_t t) { return outside(t, token_types); }) &&
         std::none_of(samples.labels.begin(), samples.labels.end(), [&](int64_t l) { return outside(l, num_labels); });
}

TokenizerOptions resolve_tokenizer_options(const RunSpec& spec, const ModelConfig& model) {
  const TokenizerSpec& t = spec.data.tokenizer;
  const TokenizerKind family = family_tokenizer(model.arch);
  TokenizerOptions o;
  o.kind = t.kind == "auto" ? (t.vocab.empty() ? family : kind_of_vocab_file(t.vocab, family))
                            : *tokenizer_kind_from_string(t.kind);
  if (o.kind != family) {
    fail_field(spec, t.kind == "auto" ? "data.tokenizer.vocab" : "data.tokenizer.kind",
               std::string("a ") + to_string(o.kind) + " tokenizer does not fit " + model.name + " (" +
                   to_string(model.arch) + " uses " + to_string(family) + ")");
  }
  json config = json::object();
  if (!t.vocab.empty()) {
    o.vocab_file = t.vocab;
    o.merges_file = t.merges;
    config = read_tokenizer_config(fs::path(t.vocab).parent_path());
  } else {
    const auto folders = tokenizer_folders(spec);
    const auto found = std::find_if(folders.begin(), folders.end(), [&](const fs::path& f) { return find_files(f, o.kind, o); });
    if (found == folders.end()) {
      fail_field(spec, t.path.empty() ? "data.tokenizer" : "data.tokenizer.path",
                 std::string("text data needs the model's tokenizer files (") +
                     (o.kind == TokenizerKind::wordpiece ? "vocab.txt" : o.kind == TokenizerKind::byte_level_bpe ? "vocab.json + merges.txt" : "spiece.model") +
                     "): set data.tokenizer.path to the folder holding them, or data.tokenizer.vocab");
    }
    config = read_tokenizer_config(*found);
  }
  if (o.kind == TokenizerKind::byte_level_bpe && o.merges_file.empty()) {
    fail_field(spec, "data.tokenizer.merges", "a bpe tokenizer needs merges.txt beside vocab.json");
  }
  // Switches: the spec, else tokenizer_config.json, else what HF's tokenizer class defaults to.
  const bool default_lowercase = o.kind == TokenizerKind::wordpiece && !model_is_cased(model.name);
  o.lowercase = t.lowercase.value_or(config_flag(config, "do_lower_case").value_or(default_lowercase));
  o.strip_accents = t.strip_accents ? t.strip_accents : config_flag(config, "strip_accents");
  if (o.kind == TokenizerKind::sentencepiece && !t.strip_accents) {
    if (const auto keep = config_flag(config, "keep_accents")) o.strip_accents = !*keep;
  }
  o.add_prefix_space = config_flag(config, "add_prefix_space").value_or(false);
  o.tokenize_chinese_chars = config_flag(config, "tokenize_chinese_chars").value_or(true);  // BertTokenizerFast's
  return o;
}

namespace {

// The token that replaces a target, and the tokens that are never targets: the tokenizer's, or for
// data made without one, the family's (BERT's [MASK] is 103 in every HF vocabulary, RoBERTa's
// <mask> its last id, XLNet's <mask> 6). `field` is the spec's mask_token_id (-1: unset).
struct MaskTokens {
  int64_t mask_token_id = 0;
  std::vector<int64_t> special_ids;  // sorted, unique, the mask token included
};

MaskTokens mask_tokens_for(const RunSpec& spec, const ModelConfig& model, const Loaded& loaded,
                           const std::string& field, int64_t given) {
  const std::optional<SpecialTokenIds>& special = loaded.special;
  MaskTokens m;
  // HF's all_special_ids: [CLS] [SEP] [PAD] [UNK] [MASK] (RoBERTa's <s> </s> <pad> <unk> <mask>).
  m.special_ids = {model.pad_token_id};
  if (special) {
    for (const int64_t id : {special->cls, special->sep, special->pad, special->unk}) m.special_ids.push_back(id);
    for (const int64_t id : loaded.other_special_ids) m.special_ids.push_back(id);
    if (special->mask >= 0) m.special_ids.push_back(special->mask);
  }
  if (given >= 0) {
    m.mask_token_id = given;
  } else if (special && special->mask >= 0) {
    m.mask_token_id = special->mask;
  } else if (special) {
    fail_field(spec, field, "the tokenizer has no mask token ([MASK] or <mask>): set " + field);
  } else {
    const int64_t family = model.arch == Architecture::roberta ? model.vocab_size - 1
                           : model.arch == Architecture::xlnet ? 6
                                                               : 103;
    m.mask_token_id = family < model.vocab_size ? family : model.vocab_size - 1;
  }
  if (m.mask_token_id >= model.vocab_size) {
    fail_field(spec, field, std::to_string(m.mask_token_id) + " is not an id of " + model.name + " (vocab_size " +
                                std::to_string(model.vocab_size) + ")");
  }
  m.special_ids.push_back(m.mask_token_id);
  std::sort(m.special_ids.begin(), m.special_ids.end());
  m.special_ids.erase(std::unique(m.special_ids.begin(), m.special_ids.end()), m.special_ids.end());
  return m;
}

// The masked-LM corruption for a run (task mlm, distillation).
MaskingOptions masking_for(const RunSpec& spec, const ModelConfig& model, const Loaded& loaded) {
  MaskingOptions m;
  if (spec.task != Task::mlm && spec.task != Task::distillation) return m;
  m.enabled = true;
  m.probability = spec.mlm.probability;
  m.mask_fraction = spec.mlm.mask_fraction;
  m.random_fraction = spec.mlm.random_fraction;
  m.vocab_size = model.vocab_size;
  m.seed = spec.data.seed;
  m.list_scored_positions = spec.mlm.sparse_prediction;
  const MaskTokens tokens = mask_tokens_for(spec, model, loaded, "mlm.mask_token_id", spec.mlm.mask_token_id);
  m.mask_token_id = tokens.mask_token_id;
  m.special_ids = tokens.special_ids;
  return m;
}

// XLNet's permutation-LM corruption for a run (task plm).
PermutationOptions permutation_for(const RunSpec& spec, const ModelConfig& model, const Loaded& loaded) {
  PermutationOptions p;
  if (spec.task != Task::plm) return p;
  p.enabled = true;
  p.probability = spec.plm.probability;
  p.max_span_length = spec.plm.max_span_length;
  p.seed = spec.data.seed;
  const MaskTokens tokens = mask_tokens_for(spec, model, loaded, "plm.mask_token_id", spec.plm.mask_token_id);
  p.mask_token_id = tokens.mask_token_id;
  p.special_ids = tokens.special_ids;
  return p;
}

json describe_permutation(const PermutationOptions& p) {
  if (!p.enabled) return nullptr;
  return {{"probability", p.probability},       {"max_span_length", p.max_span_length},
          {"mask_token_id", p.mask_token_id},   {"never_masked", p.special_ids},
          {"dynamic", true}};
}

json describe_masking(const MaskingOptions& m) {
  if (!m.enabled) return nullptr;
  return {{"probability", m.probability},   {"mask_fraction", m.mask_fraction}, {"random_fraction", m.random_fraction},
          {"mask_token_id", m.mask_token_id}, {"never_masked", m.special_ids},  {"dynamic", true},
          {"sparse_prediction", m.list_scored_positions}};
}

}  // namespace

PreparedData prepare_data(const RunSpec& spec, const ModelConfig& model) {
  Loaded loaded = load_samples(spec, model);
  const int64_t total = loaded.samples.size(), truncated = loaded.samples.truncated;
  PreparedData out;
  split_eval(spec, std::move(loaded.samples), out);

  out.collate = {spec.data.seq_len, spec.data.padding, model.pad_token_id, loaded.padding.pad_token_type_id,
                 loaded.padding.pads_left, masking_for(spec, model, loaded), permutation_for(spec, model, loaded),
                 /*list_token_positions=*/spec.model.unpad};
  out.description = {{"source", to_string(spec.data.source)},
                     {"path", spec.data.path.empty() ? json(nullptr) : json(spec.data.path)},
                     {"samples", total},
                     {"train_samples", out.train.size()},
                     {"eval_samples", out.eval.size()},
                     {"truncated_samples", truncated},
                     {"lengths", length_stats(out.train)},
                     {"label_names", loaded.label_names},
                     {"padding", to_string(spec.data.padding)},
                     {"bucket_by_length", spec.data.bucket_by_length},
                     {"tokenizer", loaded.tokenizer},
                     {"cache", loaded.cache},
                     {"corpus", loaded.corpus},
                     {"masking", describe_masking(out.collate.masking)},
                     {"permutation", describe_permutation(out.collate.permutation)}};
  if (truncated > 0) {
    spdlog::info("{} of {} samples were longer than data.seq_len {} and were truncated", truncated, total, spec.data.seq_len);
  }
  return out;
}

}  // namespace tbench
