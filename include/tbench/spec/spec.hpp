#pragma once
// The run spec: what to train, on what, for how long, and where the result goes.
// Read from JSON or YAML (by extension), overridden by `--set key.path=value`, validated strictly
// against one schema (src/spec/spec_schema.cpp) and resolved: every default filled in.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace tbench {

// ---- the choices a spec can make -------------------------------------------------------------
// Each is an enum, spelled in the spec, in results and in `validate --fields` as choice_names()
// lists it; the field table takes its choices from there.

enum class Precision { fp32, fp16, bf16 };
enum class DeviceKind { cpu, cuda };
enum class Task { classification, mlm, distillation, plm };  // what the run trains; see RunSpec::task
enum class DataSource { synthetic, tokenized, text, corpus };
enum class TextFormat { automatic, csv, tsv, jsonl };
enum class LengthDistributionKind { fixed, uniform, normal, lognormal, histogram };
enum class Padding { max_length, longest };  // to seq_len, or to the batch's longest sample
enum class AttentionChoice { automatic, eager, sdpa };
enum class PaddingMaskChoice { automatic, always };  // model.padding_mask
enum class OptimizerImpl { automatic, loop, foreach, onepass, fused };
enum class CpuAllocatorChoice { caching, system };  // include/tbench/env/cpu_allocator.hpp
enum class CpuDropoutChoice { fused, torch };        // include/tbench/models/dropout.hpp

template <typename E>
using ChoiceNames = std::vector<std::pair<E, const char*>>;
const ChoiceNames<Precision>& choice_names(Precision);
const ChoiceNames<DeviceKind>& choice_names(DeviceKind);
const ChoiceNames<Task>& choice_names(Task);
const ChoiceNames<DataSource>& choice_names(DataSource);
const ChoiceNames<TextFormat>& choice_names(TextFormat);
const ChoiceNames<LengthDistributionKind>& choice_names(LengthDistributionKind);
const ChoiceNames<Padding>& choice_names(Padding);
const ChoiceNames<AttentionChoice>& choice_names(AttentionChoice);
const ChoiceNames<PaddingMaskChoice>& choice_names(PaddingMaskChoice);
const ChoiceNames<OptimizerImpl>& choice_names(OptimizerImpl);
const ChoiceNames<CpuAllocatorChoice>& choice_names(CpuAllocatorChoice);
const ChoiceNames<CpuDropoutChoice>& choice_names(CpuDropoutChoice);

template <typename E>
const char* choice_name(E value) {
  for (const auto& [choice, name] : choice_names(E{})) {
    if (choice == value) return name;
  }
  return "?";
}
// The enum spelled `text`; nullopt if it is none of them.
template <typename E>
std::optional<E> parse_choice(const std::string& text) {
  for (const auto& [choice, name] : choice_names(E{})) {
    if (text == name) return choice;
  }
  return std::nullopt;
}
template <typename E>
std::vector<std::string> choice_list() {
  std::vector<std::string> names;
  for (const auto& entry : choice_names(E{})) names.emplace_back(entry.second);
  return names;
}

inline const char* to_string(Precision p) { return choice_name(p); }
inline const char* to_string(Task t) { return choice_name(t); }
inline const char* to_string(DataSource s) { return choice_name(s); }
inline const char* to_string(TextFormat f) { return choice_name(f); }
inline const char* to_string(Padding p) { return choice_name(p); }
inline const char* to_string(OptimizerImpl o) { return choice_name(o); }
inline const char* to_string(LengthDistributionKind d) { return choice_name(d); }

// "cpu", "cuda" (the current CUDA device) or "cuda:N".
struct DeviceRef {
  DeviceKind kind = DeviceKind::cpu;
  int64_t index = -1;  // cuda:N; -1: not given

  bool is_cuda() const { return kind == DeviceKind::cuda; }
  std::string text() const;  // as written in a spec
};
// nullopt unless `text` is cpu, cuda or cuda:N.
std::optional<DeviceRef> parse_device(const std::string& text);

struct ModelRef {
  std::string name;          // a shipped model (models/<name>.json), or the config file's stem
  std::string config;        // path to an HF config.json; empty for shipped models
  std::string weights;       // HF safetensors weights (file, folder or index); empty = random init
  std::string save_weights;  // where to save the trained weights; empty = not saved
  AttentionChoice attention = AttentionChoice::automatic;  // BERT/DistilBERT/RoBERTa self-attention
  PaddingMaskChoice padding_mask = PaddingMaskChoice::automatic;  // auto: no mask for batches without padding
  bool fused_qkv = false;  // one projection GEMM for query, key and value
  bool fused_layer_norm = false;  // LayerNorm(residual + Dropout(x)) as one pass (a CUDA kernel on GPUs)
  bool sparse_last_layer = false;  // classification: the last layer only at the position the head reads
  bool unpad = false;  // classification, mlm, distillation: per-token work (and a masked-LM head) at the real tokens only
};

// The tokenizer for text datasets. Empty paths and unset switches are found from `path` (a
// folder with vocab.txt, vocab.json + merges.txt or spiece.model, and tokenizer_config.json) and
// the model's family.
struct TokenizerSpec {
  std::string kind = "auto";  // auto | wordpiece | bpe | sentencepiece (tokenize/tokenizer.hpp)
  std::string path;           // a folder holding the tokenizer files
  std::string vocab;          // vocab.txt / vocab.json / spiece.model
  std::string merges;         // bpe: merges.txt
  std::optional<bool> lowercase;
  std::optional<bool> strip_accents;
};

struct LengthSpec {  // synthetic data only
  LengthDistributionKind distribution = LengthDistributionKind::fixed;
  int64_t min = 2;
  double mean = 0;
  double std = 0;
  std::string histogram;  // file of "length count" lines
};

struct DataSpec {
  DataSource source = DataSource::synthetic;
  std::string path;  // the data file (tokenized, text)
  TextFormat format = TextFormat::automatic;
  std::string text_column, text_pair_column, label_column;  // text: columns (pair: empty = none)
  std::vector<std::string> labels;  // label names in index order; empty = integers, or names sorted
  int64_t num_samples = 0;  // synthetic: samples per epoch; files: at most this many (0 = all)
  int64_t seq_len = 0;      // truncation length, and the padded length with padding max_length
  int64_t seed = 0;         // data seed; defaults to train.seed
  LengthSpec lengths;
  TokenizerSpec tokenizer;
  Padding padding = Padding::max_length;
  bool line_by_line = false;      // corpus: each non-blank line a sample (false: packed into seq_len blocks)
  bool bucket_by_length = false;  // group similar lengths into a batch (with padding longest)
  bool drop_last = true;          // false: the last, partial step is trained too
  double eval_fraction = 0;       // held out for eval loss and accuracy after each epoch
  int64_t prefetch = 0;           // batches collated ahead on a background thread (0: inline)
  bool cache = true;              // reuse tokenized text from cache_dir
  std::string cache_dir;          // default $XDG_CACHE_HOME/tbench or ~/.cache/tbench
};

struct TrainSpec {
  int64_t epochs = 0;
  int64_t batch_size = 0;  // per optimizer micro-step
  double lr = 0;
  int64_t warmup_steps = 0;  // linear LR warm-up (optimizer steps)
  double weight_decay = 0;
  int64_t grad_accum_steps = 0;
  int64_t max_steps = 0;  // 0 = no limit; else stop after this many optimizer steps in total
  int64_t seed = 0;
  double max_grad_norm = 0;  // 0 = no clipping
  bool dropout = true;       // train-mode dropout, as HF fine-tuning runs it
  OptimizerImpl optimizer_impl = OptimizerImpl::automatic;  // include/tbench/train/optimizer.hpp
  // Capture the whole step in a CUDA graph (kCudaGraphCaptureStep). Unset (null, the default):
  // wherever the step can be captured (cuda_graph_obstacles finds nothing, one process).
  std::optional<bool> cuda_graph;
};

// train.cuda_graph: step 1 runs eagerly, this step is captured (and run once for real), later
// steps replay the graph. Both must be warm-up steps, so timing.warmup_steps must be at least this.
inline constexpr int64_t kCudaGraphCaptureStep = 2;

struct CpuSpec {
  CpuAllocatorChoice allocator = CpuAllocatorChoice::caching;  // where LibTorch's CPU tensors come from
  CpuDropoutChoice dropout = CpuDropoutChoice::fused;          // which kernel draws dropout masks on CPU
};

struct CudaSpec {
  bool tf32 = false;  // TF32 for fp32 matmuls and convolutions
};

struct TimingSpec {
  int64_t warmup_steps = 0;  // first optimizer steps excluded from the summary statistics
  int64_t profile_steps = 0;  // the run's last steps, run under the profiler (0: none)
  bool mllog = false;         // also write <output>.mllog, the run's events as MLPerf logs them
  // A CPU run probes its peak matmul rate before and after its timed epochs (MFU's denominator,
  // about 1.2 s each); false skips both, and the run has no MFU.
  bool cpu_peak_probe = true;
};

// Data-parallel training (only used when a launcher starts several processes; see dist.hpp).
struct DistSpec {
  double bucket_mb = 25;               // gradient all-reduce bucket size in MiB (0: one per parameter)
  bool sync_every_micro_step = false;  // false: reduce only on the last accumulation micro-step
  bool gradient_as_bucket_view = true; // each .grad a view into its bucket (DDP's option): no copies
  int64_t timeout_s = 300;             // rendezvous, collective and store timeout
  // A rank whose heartbeat stands still this long is given up on (0: off, dist.timeout_s only).
  int64_t heartbeat_timeout_s = 15;
  // A rank that stays this long in work of its own (its heartbeat beating) while its watcher waits
  // for it in a collective is given up on (0: named only once dist.timeout_s ends the wait).
  int64_t stall_timeout_s = 0;
  // A launch of one process (WORLD_SIZE=1) joins a process group of one and all-reduces through
  // the backend, as DDP would: the backend's overhead against the same spec run without a launcher.
  // false: such a launch runs the single-process path.
  bool group_at_world_size_1 = false;
};

// Masked-LM corruption, as HF's DataCollatorForLanguageModeling draws it (task mlm, distillation).
struct MlmSpec {
  double probability = 0.15;    // chance that a (non-special) token is picked for prediction
  double mask_fraction = 0.8;   // of the picked: replaced by the mask token
  double random_fraction = 0.1; // of the picked: replaced by a random token; the rest are kept
  int64_t mask_token_id = -1;   // -1: the tokenizer's, or for data without one the family's (103, <mask>)
  // Share of the held-out blocks also scored by pseudo-perplexity (one forward per token, each
  // token masked alone; Salazar et al., 2020). 0: off; the seed scored 10%.
  double pseudo_perplexity_fraction = 0;
  // Project only the masked positions onto the vocabulary while training (the loss reads nothing
  // else): the same loss and gradients as HF's head on every position, without its largest matmul
  // at the other 85% of them. Off: HF's computation.
  bool sparse_prediction = false;
};

// XLNet's permutation LM, as HF's DataCollatorForPermutationLanguageModeling draws it (task plm):
// spans of up to max_span_length tokens, one per span_length / probability tokens of context, are
// the targets, and a random factorisation order decides which tokens each position may see.
struct PlmSpec {
  double probability = 1.0 / 6.0;  // HF's plm_probability: the span's share of its context
  int64_t max_span_length = 5;
  int64_t mask_token_id = -1;      // -1: the tokenizer's <mask>, or for data without one XLNet's (6)
};

// DistilBERT's distillation (HF's examples/research_projects/distillation): the student learns from
// a frozen teacher's softened outputs, the masked-LM labels and the teacher's last hidden states.
struct DistillationSpec {
  ModelRef teacher;                     // name | config, weights; attention follows model.attention
  std::optional<Precision> teacher_precision;  // unset: the run's precision
  double temperature = 2.0;
  double alpha_ce = 5.0;   // KL(teacher/T || student/T) x T^2 over the real (or masked) positions
  double alpha_mlm = 2.0;  // the student's masked-LM cross-entropy
  double alpha_cos = 1.0;  // 1 - cos(student hidden, teacher hidden) over the real tokens
  bool restrict_ce_to_mask = false;  // the KL over the masked tokens only; false: every real token (HF's default)
  bool init_from_teacher = true;  // DistilBERT's recipe: embeddings, every other layer and the head
};

// Where a field's value came from: "configs/x.yaml:7: ", "--set train.lr=1: " or the file.
std::string locate_field(const std::string& label, const std::map<std::string, std::string>& origin,
                         const std::string& field);

// Every member is assigned by name from the field table in src/spec/spec_schema.cpp, which also
// holds its default, its checks and its documentation.
struct RunSpec {
  std::string name;
  // classification: *ForSequenceClassification; mlm: *ForMaskedLM on masked text; distillation:
  // a *ForMaskedLM student trained against a frozen teacher; plm: XLNet's permutation LM.
  Task task = Task::classification;
  ModelRef model;
  int64_t num_labels = 2;
  DataSpec data;
  MlmSpec mlm;
  PlmSpec plm;
  DistillationSpec distillation;
  TrainSpec train;
  Precision precision = Precision::fp32;
  DeviceRef device;
  int64_t threads = 0;  // CPU intra-op threads actually requested (0 in the file = all cores)
  TimingSpec timing;
  DistSpec dist;
  CpuSpec cpu;
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

// A resolved spec's fields that every run sets for itself and that tell nothing of how it ran: its
// name, its output path and a sweep's own section (a grid grown between runs changes no point).
inline bool is_bookkeeping_field(const std::string& field) {
  return field == "name" || field == "output" || field == "sweep" || field.rfind("sweep.", 0) == 0;
}

// `text` as a --set value that stays that string: single-quoted for YAML, so a path with " #" (a
// comment) or a name such as 2024 or true is not read as something else.
std::string yaml_quoted(const std::string& text);

// `model: bert-base-cased` and `model: path/to/config.json` are shorthands for the model section.
void expand_model_shorthand(nlohmann::json& root);

// Validates and resolves a document. Throws a bad-input Error naming the file, the field and,
// for YAML, the line.
RunSpec resolve_spec(const SpecDocument& doc);

// The one rule that the data must fill an optimizer step: with data.drop_last, at least
// train.batch_size x train.grad_accum_steps x `world_size` training samples. `field` is the
// setting to blame (data.num_samples, data.path); `held_out` the eval samples split off first.
// Throws a bad-input Error naming the spec and the field.
void check_samples_fill_a_step(const RunSpec& spec, const std::string& field, int64_t train_samples, int64_t held_out,
                               int64_t world_size);

// A setting that stops something, and why.
struct FieldProblem {
  std::string field;
  std::string message;
};

// What stops train.cuda_graph capturing this spec's step, in the order validation reports them;
// none: it can be captured (in one process: a data-parallel launch is checked by dist/launch).
std::vector<FieldProblem> cuda_graph_obstacles(const RunSpec& spec);

// Convenience: read_spec_file (or the default when path is empty) + overrides + resolve.
// `output_option`: the command line's -o PATH, the same as --set output=PATH (any path, even
// "123", a string) but named "-o PATH" where an error points at it.
RunSpec load_spec(const std::string& path, const std::vector<std::string>& overrides,
                  const std::string& output_option = "");

// Documentation of every field, for `tbench validate --fields` and the README.
nlohmann::json spec_field_reference();

}  // namespace tbench
