#pragma once
// The run spec: what to train, on what, for how long, and where the result goes.
// Read from JSON or YAML (by extension), overridden by `--set key.path=value`, validated strictly
// against one schema (src/spec/spec_schema.cpp) and resolved: every default filled in.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tbench {

enum class Precision { fp32, fp16, bf16 };
const char* to_string(Precision p);

struct ModelRef {
  std::string name;     // a shipped model (models/<name>.json), or the config file's stem
  std::string config;   // path to an HF config.json; empty for shipped models
  std::string weights;       // HF safetensors weights (file, folder or index); empty = random init
  std::string save_weights;  // where to save the trained weights; empty = not saved
  std::string attention = "auto";  // auto | eager | sdpa (BERT/DistilBERT/RoBERTa self-attention)
};

// The tokenizer for text datasets. Empty paths and unset switches are found from `path` (a
// folder with vocab.txt, vocab.json + merges.txt or spiece.model, and tokenizer_config.json) and
// the model's family.
struct TokenizerSpec {
  std::string kind = "auto";  // auto | wordpiece | bpe | sentencepiece
  std::string path;           // a folder holding the tokenizer files
  std::string vocab;          // vocab.txt / vocab.json / spiece.model
  std::string merges;         // bpe: merges.txt
  std::optional<bool> lowercase;
  std::optional<bool> strip_accents;
};

struct LengthSpec {  // synthetic data only
  std::string distribution = "fixed";  // fixed | uniform | normal | lognormal | histogram
  int64_t min = 2;
  double mean = 0;
  double std = 0;
  std::string histogram;  // file of "length count" lines
};

struct DataSpec {
  std::string source;   // "synthetic", "tokenized" (JSONL of input_ids) or "text" (CSV/TSV/JSONL)
  std::string path;     // the data file (tokenized, text)
  std::string format;   // auto | csv | tsv | jsonl
  std::string text_column, text_pair_column, label_column;  // text: columns (pair: empty = none)
  std::vector<std::string> labels;  // label names in index order; empty = integers, or names sorted
  int64_t num_samples;  // synthetic: samples per epoch; files: at most this many (0 = all)
  int64_t seq_len;      // truncation length, and the padded length with padding max_length
  int64_t seed;         // data seed; defaults to train.seed
  LengthSpec lengths;
  TokenizerSpec tokenizer;
  std::string padding;    // max_length | longest
  bool bucket_by_length;  // group similar lengths into a batch (with padding longest)
  bool drop_last;         // false: the last, partial step is trained too
  double eval_fraction;   // held out for eval loss and accuracy after each epoch
  int64_t prefetch;       // batches collated ahead on a background thread (0: inline)
  bool cache;             // reuse tokenized text from cache_dir
  std::string cache_dir;  // default $XDG_CACHE_HOME/tbench or ~/.cache/tbench
};

struct TrainSpec {
  int64_t epochs;
  int64_t batch_size;          // per optimizer micro-step
  double lr;
  int64_t warmup_steps;        // linear LR warm-up (optimizer steps)
  double weight_decay;
  int64_t grad_accum_steps;
  int64_t max_steps;           // 0 = no limit; else stop after this many optimizer steps in total
  int64_t seed;
  double max_grad_norm;        // 0 = no clipping
  bool dropout;                // train-mode dropout, as HF fine-tuning runs it
  std::string optimizer_impl = "auto";  // auto | loop | foreach | fused (include/tbench/optimizer.hpp)
  bool cuda_graph = false;     // capture the whole step in a CUDA graph after the first step
};

struct CudaSpec {
  bool tf32 = false;  // TF32 for fp32 matmuls and convolutions
};

struct TimingSpec {
  int64_t warmup_steps;  // first optimizer steps excluded from the summary statistics
};

// Data-parallel training (only used when a launcher starts several processes; see dist.hpp).
struct DistSpec {
  double bucket_mb = 25;               // gradient all-reduce bucket size in MiB (0: one per parameter)
  bool sync_every_micro_step = false;  // false: reduce only on the last accumulation micro-step
  int64_t timeout_s = 300;             // rendezvous, collective and store timeout
};

// Where a field's value came from: "configs/x.yaml:7: ", "--set train.lr=1: " or the file.
std::string locate_field(const std::string& label, const std::map<std::string, std::string>& origin,
                         const std::string& field);

struct RunSpec {
  std::string name;
  ModelRef model;
  int64_t num_labels;
  DataSpec data;
  TrainSpec train;
  Precision precision;
  std::string device;  // "cpu", "cuda" or "cuda:N"
  int64_t threads;     // CPU intra-op threads actually requested (0 in the file = all cores)
  TimingSpec timing;
  DistSpec dist;
  CudaSpec cuda;
  std::string output;  // result path, placeholders expanded at run time
  std::string source;  // where the spec came from: a path, or "<embedded default>"
  nlohmann::json resolved;  // the whole spec with defaults filled: saved into the result
  std::map<std::string, std::string> origin;  // as in SpecDocument, for errors found later

  // "<where the field was set>: <field>: " — the prefix of an error about `field`.
  std::string where(const std::string& field) const { return locate_field(source, origin, field) + ": " + field + ": "; }
};

// A spec document before validation: its JSON form and where each field came from.
struct SpecDocument {
  std::string label;  // file path (or "<embedded default>") used in every error message
  nlohmann::json root;
  // "train.batch_size" -> "configs/x.yaml:7" (YAML) or "--set train.batch_size=8" (overrides);
  // fields not listed are reported as "<label>".
  std::map<std::string, std::string> origin;

  std::string where(const std::string& field) const;
};

// Parses a JSON or YAML text. Throws a bad-input Error naming `label` and the line on syntax errors.
SpecDocument parse_spec_text(const std::string& text, const std::string& label, bool yaml);
// Reads `path`; the extension (.json, .yaml, .yml) picks the parser.
SpecDocument read_spec_file(const std::string& path);
SpecDocument default_spec_document();

// Applies `key.path=value` overrides. The value is read as YAML (so 32 is a number, fp16 a string,
// [1,2] a list); a key that is not in the schema is rejected by validation, with a suggestion.
void apply_overrides(SpecDocument& doc, const std::vector<std::string>& overrides);

// `model: bert-base-cased` and `model: path/to/config.json` are shorthands for the model section.
void expand_model_shorthand(nlohmann::json& root);

// Validates and resolves a document. Throws a bad-input Error naming the file, the field and,
// for YAML, the line.
RunSpec resolve_spec(const SpecDocument& doc);

// Convenience: read_spec_file (or the default when path is empty) + overrides + resolve.
RunSpec load_spec(const std::string& path, const std::vector<std::string>& overrides);

// Documentation of every field, for `tbench validate --fields` and the README.
nlohmann::json spec_field_reference();

}  // namespace tbench
