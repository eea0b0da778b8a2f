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
};

struct DataSpec {
  std::string source;   // "synthetic"
  int64_t num_samples;
  int64_t seq_len;
  int64_t seed;         // data generator seed; defaults to train.seed
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
