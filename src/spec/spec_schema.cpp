// The run spec's schema: every field, its type, range and default, and the strict validation
// that turns a SpecDocument into a RunSpec. One table below is the single source of truth;
// `tbench validate --fields` prints it.
#include <algorithm>
#include <cmath>
#include <limits>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <type_traits>

#include "tbench/errors.hpp"
#include "tbench/models/model_config.hpp"
#include "tbench/spec/spec.hpp"
#include "tbench/spec/suggest.hpp"
#include "tbench/train/optimizer.hpp"
#include "tbench/env/torch_features.hpp"
#include "tbench/json_text.hpp"
#include "tbench/text.hpp"

namespace tbench {
namespace {

using nlohmann::json;

enum class Kind {
  integer, number, string, boolean, choice, device, nullable_string, nullable_integer, nullable_boolean, string_list,
  grid
};

// An integer an int64 holds: nlohmann keeps 2^63 and above unsigned, and reading one as int64
// would wrap it (2^64 - 1 to -1: "no limit" for train.max_steps).
bool fits_int64(const json& v) {
  return v.is_number_integer() &&
         !(v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
}

// ---- reading a checked JSON value into a RunSpec member -------------------------------------------

void read_into(int64_t& out, const json& v) { out = v.is_null() ? 0 : v.get<int64_t>(); }
void read_into(double& out, const json& v) { out = v.get<double>(); }
void read_into(bool& out, const json& v) { out = v.get<bool>(); }
void read_into(std::string& out, const json& v) { out = v.is_string() ? v.get<std::string>() : ""; }
void read_into(std::optional<bool>& out, const json& v) {
  out = v.is_boolean() ? std::optional<bool>(v.get<bool>()) : std::nullopt;
}
void read_into(std::optional<Precision>& out, const json& v) {  // "auto": unset
  out = parse_choice<Precision>(v.get<std::string>());
}
void read_into(std::vector<std::string>& out, const json& v) { out = v.get<std::vector<std::string>>(); }
void read_into(DeviceRef& out, const json& v) { out = *parse_device(v.get<std::string>()); }
template <typename E, typename = std::enable_if_t<std::is_enum_v<E>>>
void read_into(E& out, const json& v) {
  out = *parse_choice<E>(v.get<std::string>());  // the value was checked against choice_list<E>()
}

template <typename Object, typename T>
T& member(Object& object, T Object::*field) {
  return object.*field;
}
template <typename Object, typename T, typename... Rest>
auto& member(Object& object, T Object::*field, Rest... rest) {
  return member(object.*field, rest...);
}

// Where a field goes in the RunSpec, by name: set(&RunSpec::train, &TrainSpec::epochs).
using Assign = std::function<void(RunSpec&, const json&)>;
template <typename... Members>
Assign set(Members... members) {
  return [=](RunSpec& spec, const json& value) { read_into(member(spec, members...), value); };
}

struct Field {
  std::string path;
  Kind kind;
  json default_value;  // null: no default (or one that depends on other fields)
  double min = -1e300;
  std::vector<std::string> choices = {};
  std::string help = "";
  Assign assign = nullptr;  // null: not a RunSpec member (the sweep block)
};

// Sections are objects; everything else is a leaf field.
const std::vector<std::string>& sections() {
  static const std::vector<std::string> s = {"model", "data", "data.lengths", "data.tokenizer", "mlm", "plm", "distillation",
                                             "train", "timing", "cpu", "cuda", "dist", "sweep"};
  return s;
}

const std::vector<Field>& fields() {
  static const std::vector<Field> f = {
      {"name", Kind::string, nullptr, -1e300, {}, "run name (default: the spec file's stem)", set(&RunSpec::name)},
      {"task", Kind::choice, "classification", -1e300, choice_list<Task>(),
       "classification: fine-tune a sequence classifier; mlm: masked-LM training (*ForMaskedLM) on masked "
       "text; distillation: a masked-LM student learns from a frozen teacher (DistilBERT's recipe); plm: XLNet's "
       "permutation-LM pre-training (XLNetLMHeadModel)",
       set(&RunSpec::task)},
      {"model.name", Kind::nullable_string, nullptr, -1e300, {},
       "a shipped model (`tbench models`), e.g. distilbert-base-uncased", set(&RunSpec::model, &ModelRef::name)},
      {"model.config", Kind::nullable_string, nullptr, -1e300, {},
       "path to an HF config.json (instead of model.name)", set(&RunSpec::model, &ModelRef::config)},
      {"model.weights", Kind::nullable_string, nullptr, -1e300, {},
       "HF weights: a .safetensors file, a folder holding one, or a sharded index (default: random init)",
       set(&RunSpec::model, &ModelRef::weights)},
      {"model.save_weights", Kind::nullable_string, nullptr, -1e300, {},
       "after training, save the weights here as safetensors with HF's names",
       set(&RunSpec::model, &ModelRef::save_weights)},
      {"model.attention", Kind::choice, "auto", -1e300, choice_list<AttentionChoice>(),
       "self-attention kernel (BERT, DistilBERT, RoBERTa): eager matmul + softmax, or sdpa "
       "(at::scaled_dot_product_attention, torch>=2.0); auto: sdpa where available, but eager on CPU when "
       "training with attention dropout and cpu.dropout fused. XLNet is always eager",
       set(&RunSpec::model, &ModelRef::attention)},
      {"model.padding_mask", Kind::choice, "auto", -1e300, choice_list<PaddingMaskChoice>(),
       "the attention's padding mask (BERT, DistilBERT, RoBERTa): auto leaves it out of batches that have no "
       "padding, as HF's sdpa path does, so SDPA may pick its flash kernel; always passes it to every batch",
       set(&RunSpec::model, &ModelRef::padding_mask)},
      {"model.fused_qkv", Kind::boolean, false, -1e300, {},
       "project query, key and value with one GEMM over their concatenated weights (BERT, DistilBERT, "
       "RoBERTa); the parameters and checkpoints keep HF's three",
       set(&RunSpec::model, &ModelRef::fused_qkv)},
      {"model.fused_layer_norm", Kind::boolean, false, -1e300, {},
       "run each block's LayerNorm(residual + Dropout(x)) as one pass (BERT, DistilBERT, RoBERTa): tbench's CUDA "
       "kernel on GPUs, a row loop on the CPU; same arithmetic and parameters, LibTorch's backward",
       set(&RunSpec::model, &ModelRef::fused_layer_norm)},
      {"model.sparse_last_layer", Kind::boolean, false, -1e300, {},
       "task classification: run the last layer only at the position the head reads (BERT, DistilBERT, RoBERTa: "
       "the first token; XLNet: the last), keys and values from every position: HF's logits, loss and gradients "
       "with fewer FLOPs (HF computes the layer at every position and reads one)",
       set(&RunSpec::model, &ModelRef::sparse_last_layer)},
      {"model.unpad", Kind::boolean, false, -1e300, {},
       "tasks classification, mlm and distillation: run each layer's per-token work (projections, MLP, LayerNorms, "
       "dropout) and a masked-LM head on the real tokens alone, and attention on the padded batch, whose mask keeps "
       "padding out (on the CPU, sample by sample over each sample's own tokens); a distillation teacher too: HF's "
       "logits, loss and gradients without the padding's work (HF computes every padded position)",
       set(&RunSpec::model, &ModelRef::unpad)},
      {"num_labels", Kind::integer, 2, 2, {}, "classes of the sequence classifier", set(&RunSpec::num_labels)},
      {"data.source", Kind::choice, "synthetic", -1e300, choice_list<DataSource>(),
       "synthetic; tokenized: JSONL of input_ids + label; text: CSV/TSV/JSONL of text + label; corpus: plain "
       "text (a .txt file or a folder of them) packed into seq_len blocks, for mlm and distillation",
       set(&RunSpec::data, &DataSpec::source)},
      {"data.path", Kind::nullable_string, nullptr, -1e300, {},
       "the data file (source tokenized or text), or a corpus's .txt file or folder of them",
       set(&RunSpec::data, &DataSpec::path)},
      {"data.format", Kind::choice, "auto", -1e300, choice_list<TextFormat>(),
       "text file format (auto: by extension)", set(&RunSpec::data, &DataSpec::format)},
      {"data.text_column", Kind::string, "text", -1e300, {}, "text: the column (or JSON key) holding the text",
       set(&RunSpec::data, &DataSpec::text_column)},
      {"data.text_pair_column", Kind::nullable_string, nullptr, -1e300, {},
       "text: a second text column, for sentence pairs", set(&RunSpec::data, &DataSpec::text_pair_column)},
      {"data.label_column", Kind::string, "label", -1e300, {}, "text, tokenized: the label column (or key)",
       set(&RunSpec::data, &DataSpec::label_column)},
      {"data.labels", Kind::string_list, nlohmann::json::array(), -1e300, {},
       "label names in index order (default: integer labels, or the names found, sorted)",
       set(&RunSpec::data, &DataSpec::labels)},
      {"data.num_samples", Kind::nullable_integer, nullptr, 0, {},
       "synthetic: samples per epoch (default 1024); files: use at most this many (default all)",
       set(&RunSpec::data, &DataSpec::num_samples)},
      {"data.seq_len", Kind::integer, 128, 2, {}, "max tokens per sample (truncation; padding max_length pads to it)",
       set(&RunSpec::data, &DataSpec::seq_len)},
      {"data.seed", Kind::nullable_integer, nullptr, 0, {}, "data seed (default: train.seed)",
       set(&RunSpec::data, &DataSpec::seed)},
      {"data.lengths.distribution", Kind::choice, "fixed", -1e300,
       choice_list<LengthDistributionKind>(), "synthetic: sample length distribution",
       set(&RunSpec::data, &DataSpec::lengths, &LengthSpec::distribution)},
      {"data.lengths.min", Kind::integer, 2, 2, {}, "synthetic: shortest sample",
       set(&RunSpec::data, &DataSpec::lengths, &LengthSpec::min)},
      {"data.lengths.mean", Kind::number, 0.0, 0, {}, "synthetic normal/lognormal: mean length",
       set(&RunSpec::data, &DataSpec::lengths, &LengthSpec::mean)},
      {"data.lengths.std", Kind::number, 0.0, 0, {}, "synthetic normal/lognormal: length standard deviation",
       set(&RunSpec::data, &DataSpec::lengths, &LengthSpec::std)},
      {"data.lengths.histogram", Kind::nullable_string, nullptr, -1e300, {},
       "synthetic histogram: file of 'length count' lines (e.g. your data's)",
       set(&RunSpec::data, &DataSpec::lengths, &LengthSpec::histogram)},
      {"data.tokenizer.kind", Kind::choice, "auto", -1e300, {"auto", "wordpiece", "bpe", "sentencepiece"},
       "text: tokenizer (auto: from the files, else the model's family)",
       set(&RunSpec::data, &DataSpec::tokenizer, &TokenizerSpec::kind)},
      {"data.tokenizer.path", Kind::nullable_string, nullptr, -1e300, {},
       "text: folder with vocab.txt | vocab.json + merges.txt | spiece.model (+ tokenizer_config.json)",
       set(&RunSpec::data, &DataSpec::tokenizer, &TokenizerSpec::path)},
      {"data.tokenizer.vocab", Kind::nullable_string, nullptr, -1e300, {}, "text: vocab.txt, vocab.json or spiece.model",
       set(&RunSpec::data, &DataSpec::tokenizer, &TokenizerSpec::vocab)},
      {"data.tokenizer.merges", Kind::nullable_string, nullptr, -1e300, {}, "text, bpe: merges.txt",
       set(&RunSpec::data, &DataSpec::tokenizer, &TokenizerSpec::merges)},
      {"data.tokenizer.lowercase", Kind::nullable_boolean, nullptr, -1e300, {},
       "text: lowercase (default: tokenizer_config.json, else uncased models' wordpiece)",
       set(&RunSpec::data, &DataSpec::tokenizer, &TokenizerSpec::lowercase)},
      {"data.tokenizer.strip_accents", Kind::nullable_boolean, nullptr, -1e300, {},
       "text: strip accents (default: as HF: follows lowercase for wordpiece, on for XLNet)",
       set(&RunSpec::data, &DataSpec::tokenizer, &TokenizerSpec::strip_accents)},
      {"data.padding", Kind::choice, "max_length", -1e300, choice_list<Padding>(),
       "pad every batch to seq_len, or to its longest sample (dynamic padding)",
       set(&RunSpec::data, &DataSpec::padding)},
      {"data.line_by_line", Kind::boolean, false, -1e300, {},
       "corpus: each non-blank line is a sample, truncated to seq_len and padded per data.padding (HF run_mlm's "
       "--line_by_line; HF's distillation example trains on such sentences); false packs the lines into blocks of "
       "exactly seq_len tokens",
       set(&RunSpec::data, &DataSpec::line_by_line)},
      {"data.bucket_by_length", Kind::boolean, false, -1e300, {}, "batch samples of similar length together",
       set(&RunSpec::data, &DataSpec::bucket_by_length)},
      {"data.drop_last", Kind::boolean, true, -1e300, {}, "leave out the last, partial step of an epoch",
       set(&RunSpec::data, &DataSpec::drop_last)},
      {"data.eval_fraction", Kind::number, 0.0, 0, {}, "held out for eval loss and accuracy after each epoch",
       set(&RunSpec::data, &DataSpec::eval_fraction)},
      {"data.prefetch", Kind::integer, 2, 0, {}, "batches collated ahead on a background thread (0: inline)",
       set(&RunSpec::data, &DataSpec::prefetch)},
      {"data.cache", Kind::boolean, true, -1e300, {}, "cache tokenized text (keyed by file and tokenizer)",
       set(&RunSpec::data, &DataSpec::cache)},
      {"data.cache_dir", Kind::nullable_string, nullptr, -1e300, {},
       "token cache folder (default $XDG_CACHE_HOME/tbench or ~/.cache/tbench)",
       set(&RunSpec::data, &DataSpec::cache_dir)},
      {"mlm.probability", Kind::number, 0.15, 0, {}, "mlm, distillation: share of tokens picked for prediction",
       set(&RunSpec::mlm, &MlmSpec::probability)},
      {"mlm.mask_fraction", Kind::number, 0.8, 0, {}, "of the picked tokens: replaced by the mask token",
       set(&RunSpec::mlm, &MlmSpec::mask_fraction)},
      {"mlm.random_fraction", Kind::number, 0.1, 0, {},
       "of the picked tokens: replaced by a random token (the rest stay as they are)",
       set(&RunSpec::mlm, &MlmSpec::random_fraction)},
      {"mlm.mask_token_id", Kind::nullable_integer, nullptr, 0, {},
       "the mask token (default: the tokenizer's; without one, [MASK] 103 for BERT/DistilBERT, <mask> = "
       "vocab_size - 1 for RoBERTa)", set(&RunSpec::mlm, &MlmSpec::mask_token_id)},
      {"mlm.pseudo_perplexity_fraction", Kind::number, 0.0, 0, {},
       "share of the held-out blocks also scored by pseudo-perplexity after each epoch: every token masked alone, "
       "one forward each (0: off; needs data.eval_fraction)",
       set(&RunSpec::mlm, &MlmSpec::pseudo_perplexity_fraction)},
      {"mlm.sparse_prediction", Kind::boolean, false, -1e300, {},
       "project only the masked positions onto the vocabulary in training and held-out scoring (same loss "
       "and gradients as every position, as HF computes it, with fewer FLOPs; distillation needs "
       "restrict_ce_to_mask)",
       set(&RunSpec::mlm, &MlmSpec::sparse_prediction)},
      {"plm.probability", Kind::number, 1.0 / 6.0, 0, {},
       "plm: a masked span's share of the context drawn around it (HF's plm_probability)",
       set(&RunSpec::plm, &PlmSpec::probability)},
      {"plm.max_span_length", Kind::integer, 5, 1, {}, "plm: longest span of consecutive targets",
       set(&RunSpec::plm, &PlmSpec::max_span_length)},
      {"plm.mask_token_id", Kind::nullable_integer, nullptr, 0, {},
       "plm: the token that replaces each target (default: the tokenizer's <mask>; without one, XLNet's 6)",
       set(&RunSpec::plm, &PlmSpec::mask_token_id)},
      {"distillation.teacher", Kind::nullable_string, nullptr, -1e300, {},
       "distillation: the teacher, a shipped model name or an HF config.json (BERT, DistilBERT or RoBERTa)",
       set(&RunSpec::distillation, &DistillationSpec::teacher, &ModelRef::name)},
      {"distillation.teacher_weights", Kind::nullable_string, nullptr, -1e300, {},
       "distillation: the teacher's safetensors (default: random init, for timing only)",
       set(&RunSpec::distillation, &DistillationSpec::teacher, &ModelRef::weights)},
      {"distillation.teacher_precision", Kind::choice, "auto", -1e300, {"auto", "fp32", "fp16", "bf16"},
       "distillation: autocast of the teacher's forward (auto: the run's precision)",
       set(&RunSpec::distillation, &DistillationSpec::teacher_precision)},
      {"distillation.temperature", Kind::number, 2.0, 0, {}, "distillation: softmax temperature T",
       set(&RunSpec::distillation, &DistillationSpec::temperature)},
      {"distillation.alpha_ce", Kind::number, 5.0, 0, {}, "distillation: weight of T^2 KL(student/T || teacher/T)",
       set(&RunSpec::distillation, &DistillationSpec::alpha_ce)},
      {"distillation.alpha_mlm", Kind::number, 2.0, 0, {}, "distillation: weight of the student's masked-LM loss",
       set(&RunSpec::distillation, &DistillationSpec::alpha_mlm)},
      {"distillation.alpha_cos", Kind::number, 1.0, 0, {},
       "distillation: weight of the cosine loss between the last hidden states",
       set(&RunSpec::distillation, &DistillationSpec::alpha_cos)},
      {"distillation.restrict_ce_to_mask", Kind::boolean, false, -1e300, {},
       "distillation: the KL term over the masked tokens only (HF's --restrict_ce_to_mask); false: over every "
       "real token, as DistilBERT was trained", set(&RunSpec::distillation, &DistillationSpec::restrict_ce_to_mask)},
      {"distillation.init_from_teacher", Kind::boolean, true, -1e300, {},
       "distillation: start the student from the teacher's embeddings, evenly spaced layers (0 2 4 7 9 11 of "
       "12) and head, as DistilBERT was made; false: random init",
       set(&RunSpec::distillation, &DistillationSpec::init_from_teacher)},
      {"train.epochs", Kind::integer, 1, 1, {}, "epochs to train", set(&RunSpec::train, &TrainSpec::epochs)},
      {"train.batch_size", Kind::integer, 32, 1, {}, "samples per micro-step (per device)",
       set(&RunSpec::train, &TrainSpec::batch_size)},
      {"train.lr", Kind::number, 5e-5, 0, {}, "peak learning rate of AdamW", set(&RunSpec::train, &TrainSpec::lr)},
      {"train.warmup_steps", Kind::integer, 0, 0, {}, "linear LR warm-up, in optimizer steps",
       set(&RunSpec::train, &TrainSpec::warmup_steps)},
      {"train.weight_decay", Kind::number, 0.0, 0, {}, "AdamW weight decay (not on biases, LayerNorm)",
       set(&RunSpec::train, &TrainSpec::weight_decay)},
      {"train.grad_accum_steps", Kind::integer, 1, 1, {}, "micro-steps per optimizer step",
       set(&RunSpec::train, &TrainSpec::grad_accum_steps)},
      {"train.max_steps", Kind::integer, 0, 0, {}, "stop after this many optimizer steps (0: no limit)",
       set(&RunSpec::train, &TrainSpec::max_steps)},
      {"train.seed", Kind::integer, 42, 0, {}, "seed for weights and dropout (and data, unless data.seed)",
       set(&RunSpec::train, &TrainSpec::seed)},
      {"train.max_grad_norm", Kind::number, 1.0, 0, {}, "gradient clipping norm (0: off)",
       set(&RunSpec::train, &TrainSpec::max_grad_norm)},
      {"train.dropout", Kind::boolean, true, -1e300, {}, "dropout on, as in HF fine-tuning",
       set(&RunSpec::train, &TrainSpec::dropout)},
      {"train.optimizer_impl", Kind::choice, "auto", -1e300, choice_list<OptimizerImpl>(),
       "AdamW kernels: loop (per tensor), foreach (multi-tensor), onepass (tbench's one-pass CPU loop), fused "
       "(ATen's kernel; CUDA torch>=2.0, CPU >=2.4); auto: fused where available, else onepass on CPU and "
       "foreach on CUDA", set(&RunSpec::train, &TrainSpec::optimizer_impl)},
      {"train.cuda_graph", Kind::nullable_boolean, nullptr, -1e300, {},
       "CUDA only: capture the whole train step in a CUDA graph at step 2 and replay it (static shapes: padding "
       "max_length, drop_last, grad_accum_steps 1; fused AdamW; torch>=2.2; one process); null (default): wherever "
       "the spec allows it, recorded as true or false in the result",
       set(&RunSpec::train, &TrainSpec::cuda_graph)},
      {"precision", Kind::choice, "fp32", -1e300, choice_list<Precision>(), "training precision",
       set(&RunSpec::precision)},
      {"device", Kind::device, "cpu", -1e300, {}, "cpu, cuda or cuda:N", set(&RunSpec::device)},
      {"threads", Kind::integer, 0, 0, {},
       "CPU intra-op threads (0: the physical cores this process may use, shared among its node's processes)",
       set(&RunSpec::threads)},
      {"timing.warmup_steps", Kind::integer, 5, 0, {}, "first steps excluded from the summary",
       set(&RunSpec::timing, &TimingSpec::warmup_steps)},
      {"timing.profile_steps", Kind::integer, 0, 0, {},
       "run the run's last N steps under LibTorch's profiler (Kineto): the result's profile section sums GPU "
       "kernels (CPU: operators' self time) by kind and by name, and <output>.trace.json holds the trace for "
       "Perfetto; those steps are left out of the summary",
       set(&RunSpec::timing, &TimingSpec::profile_steps)},
      {"timing.mllog", Kind::boolean, false, -1e300, {},
       "also write <output>.mllog: the run's events as MLPerf's logging library writes them (':::MLLOG {json}' "
       "lines: init, run, block, epoch and eval intervals, the hyperparameters, each epoch's throughput), streamed "
       "as they happen, for MLPerf's log tools",
       set(&RunSpec::timing, &TimingSpec::mllog)},
      {"timing.cpu_peak_probe", Kind::boolean, true, -1e300, {},
       "on a CPU, probe the peak matmul rate (the model's own GEMMs, about 1.2 s) before and after the timed "
       "epochs: MFU's denominator. false: no probe and no MFU, for smoke runs and sweeps that need none (a GPU's "
       "peak comes from its datasheet either way)",
       set(&RunSpec::timing, &TimingSpec::cpu_peak_probe)},
      {"cpu.allocator", Kind::choice, "caching", -1e300, choice_list<CpuAllocatorChoice>(),
       "CPU tensors: caching keeps freed blocks for reuse (no page faults per step); system is malloc, as PyTorch",
       set(&RunSpec::cpu, &CpuSpec::allocator)},
      {"cpu.dropout", Kind::choice, "fused", -1e300, choice_list<CpuDropoutChoice>(),
       "CPU dropout: fused draws each mask in one parallel pass (counter-based, seeded by train.seed) and keeps it "
       "as bytes for backward; torch is LibTorch's (bernoulli_ noise, serial without MKL). Same distribution",
       set(&RunSpec::cpu, &CpuSpec::dropout)},
      {"cuda.tf32", Kind::boolean, false, -1e300, {},
       "CUDA only: TF32 tensor cores for fp32 matmuls and convolutions (changes fp32 numerics)",
       set(&RunSpec::cuda, &CudaSpec::tf32)},
      {"dist.bucket_mb", Kind::number, 25, 0, {},
       "data-parallel only: gradient all-reduce bucket size in MiB (0: one bucket per parameter)",
       set(&RunSpec::dist, &DistSpec::bucket_mb)},
      {"dist.sync_every_micro_step", Kind::boolean, false, -1e300, {},
       "data-parallel only: all-reduce after every accumulation micro-step (default: only the last)",
       set(&RunSpec::dist, &DistSpec::sync_every_micro_step)},
      {"dist.gradient_as_bucket_view", Kind::boolean, true, -1e300, {},
       "data-parallel only: each gradient lives in its all-reduce bucket, as DDP's option of that name (no "
       "gradient copies, one gradient-sized buffer less); false: copied in and out every step",
       set(&RunSpec::dist, &DistSpec::gradient_as_bucket_view)},
      {"dist.timeout_s", Kind::integer, 300, 1, {},
       "data-parallel only: seconds to wait for a peer (rendezvous, collectives) before failing",
       set(&RunSpec::dist, &DistSpec::timeout_s)},
      {"dist.heartbeat_timeout_s", Kind::integer, 15, 0, {},
       "data-parallel only: a rank whose heartbeat (beaten every second in the rendezvous store) stands still "
       "this long is given up on: by the rank that watches it during a collective, and by rank 0 while it "
       "gathers the reports (0: off, and only dist.timeout_s ends such a wait; at least 3 otherwise)",
       set(&RunSpec::dist, &DistSpec::heartbeat_timeout_s)},
      {"dist.stall_timeout_s", Kind::integer, 0, 0, {},
       "data-parallel only: a rank whose process lives (its heartbeat beats) but which stays this long in "
       "work of its own while the rank watching it waits for it in a collective (a file-system read that never "
       "returns, a deadlock) is given up on and named as the run's cause (0: only once dist.timeout_s ends the "
       "wait; otherwise at least 3 and below dist.timeout_s, and above the longest stretch between two "
       "collectives in training: an epoch's eval, a step; a rank still setting up is left to dist.timeout_s)",
       set(&RunSpec::dist, &DistSpec::stall_timeout_s)},
      {"dist.group_at_world_size_1", Kind::boolean, false, -1e300, {},
       "a launcher's single process (WORLD_SIZE=1) still joins a process group of one and all-reduces its "
       "gradients through the backend, as DDP does: the backend's overhead against the same spec without a "
       "launcher (default: such a launch runs the single-process path)",
       set(&RunSpec::dist, &DistSpec::group_at_world_size_1)},
      {"output", Kind::string, "results/{name}-{timestamp}.json", -1e300, {},
       "result path; placeholders {name} {model} {precision} {device} {host} {timestamp}", set(&RunSpec::output)},
      {"sweep.grid", Kind::grid, nlohmann::json::object(), -1e300, {},
       "`tbench sweep` only: {field: [values]}, run as a cartesian product"},
      {"sweep.repeat", Kind::integer, 1, 1, {}, "`tbench sweep` only: runs per point"},
      {"sweep.out_dir", Kind::nullable_string, nullptr, -1e300, {},
       "`tbench sweep` only: where point results go (default results/sweep-<name>)"},
  };
  return f;
}

const char* kind_text(const Field& field) {
  switch (field.kind) {
    case Kind::integer: return "an integer";
    case Kind::number: return "a number";
    case Kind::string: return "a string";
    case Kind::boolean: return "true or false";
    case Kind::choice: return "one of the listed values";
    case Kind::device: return "cpu, cuda or cuda:N";
    case Kind::nullable_string: return "a string or null";
    case Kind::nullable_integer: return "an integer or null";
    case Kind::nullable_boolean: return "true, false or null";
    case Kind::string_list: return "a list of strings";
    case Kind::grid: return "a mapping of field -> list of values";
  }
  return "";
}

std::string describe(const json& value) {
  std::string text = json_text(value);  // NaN and infinities would print as null
  if (value.is_number_float() && !std::isfinite(value.get<double>())) {
    const double x = value.get<double>();
    text = std::isnan(x) ? ".nan" : x < 0 ? "-.inf" : ".inf";
  }
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text + " (" + value.type_name() + ")";
}

// A field's lower bound as its kind is written: 2 for an integer, 0.0 for a number.
std::string bound_text(const Field& field) {
  const bool whole = field.kind == Kind::integer || field.kind == Kind::nullable_integer;
  return whole ? std::to_string(static_cast<int64_t>(field.min)) : json_text(json(field.min));
}

class Validator {
 public:
  explicit Validator(const SpecDocument& doc) : doc_(doc) {}

  [[noreturn]] void fail(const std::string& field, const std::string& message) const {
    throw input_error(doc_.where(field) + ": " + field + ": " + message);
  }

  // Unknown keys anywhere in the tree are errors, with the nearest known key suggested.
  void check_keys(const json& object, const std::string& prefix) const {
    std::vector<std::string> known;
    const auto add_if_child = [&](const std::string& path) {
      const auto dot = path.find_last_of('.');
      const std::string parent = dot == std::string::npos ? "" : path.substr(0, dot);
      if (parent == prefix) known.push_back(path.substr(dot == std::string::npos ? 0 : dot + 1));
    };
    for (const auto& s : sections()) add_if_child(s);
    for (const auto& f : fields()) add_if_child(f.path);
    for (const auto& item : object.items()) {
      const std::string path = prefix.empty() ? item.key() : prefix + "." + item.key();
      if (std::find(known.begin(), known.end(), item.key()) == known.end()) {
        fail(path, "unknown field" + did_you_mean(item.key(), known));
      }
      const bool is_section = std::find(sections().begin(), sections().end(), path) != sections().end();
      if (is_section) {
        if (!item.value().is_object()) fail(path, "expected a section (a mapping), got " + describe(item.value()));
        check_keys(item.value(), path);
      }
    }
  }

  void check_value(const Field& field, const json& value) const {
    const bool ok = [&] {
      switch (field.kind) {
        case Kind::integer: return fits_int64(value);
        case Kind::number: return value.is_number();
        case Kind::string: return value.is_string();
        case Kind::boolean: return value.is_boolean();
        case Kind::choice: return value.is_string();
        case Kind::device: return value.is_string();
        case Kind::nullable_string: return value.is_string() || value.is_null();
        case Kind::nullable_integer: return fits_int64(value) || value.is_null();
        case Kind::nullable_boolean: return value.is_boolean() || value.is_null();
        case Kind::string_list:
          return value.is_array() && std::all_of(value.begin(), value.end(), [](const json& v) { return v.is_string(); });
        case Kind::grid: return value.is_object();
      }
      return false;
    }();
    if (!ok) fail(field.path, std::string("expected ") + kind_text(field) + ", got " + describe(value));
    if (value.is_number_float() && !std::isfinite(value.get<double>())) {
      fail(field.path, "must be a finite number, got " + describe(value));
    }
    if (value.is_number() && value.get<double>() < field.min) {
      fail(field.path, "must be >= " + bound_text(field) + ", got " + json_text(value));
    }
    if (field.kind == Kind::choice) {
      const auto text = value.get<std::string>();
      if (std::find(field.choices.begin(), field.choices.end(), text) == field.choices.end()) {
        fail(field.path, "'" + text + "' is not one of: " + join(field.choices) + did_you_mean(text, field.choices));
      }
    }
    if (field.kind == Kind::device && !parse_device(value.get<std::string>())) {
      const auto text = value.get<std::string>();
      // "gpu" is one edit from "cpu", but a user who writes it wants a GPU.
      const bool says_gpu = text.rfind("gpu", 0) == 0 || text.rfind("GPU", 0) == 0;
      const std::string hint = says_gpu ? " (a GPU is cuda, or cuda:N for the Nth)" : did_you_mean(text, {"cpu", "cuda"});
      fail(field.path, "expected cpu, cuda or cuda:N, got '" + text + "'" + hint);
    }
    if (field.kind == Kind::grid) {
      for (const auto& axis : value.items()) {
        if (!axis.value().is_array() || axis.value().empty()) {
          fail(field.path + "." + axis.key(), "expected a non-empty list of values, got " + describe(axis.value()));
        }
      }
    }
    if (field.kind == Kind::string && value.get<std::string>().empty()) {
      fail(field.path, "must not be empty");
    }
  }

  const SpecDocument& doc_;
};

const json* find(const json& root, const std::string& path) {
  const json* node = &root;
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!node->is_object() || !node->contains(key)) return nullptr;
    node = &node->at(key);
    if (dot == std::string::npos) return node;
    start = dot + 1;
  }
}

std::string stem_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const auto dot = base.find_last_of('.');
  return dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
}

void check_output_placeholders(const Validator& v, const std::string& output) {
  static const std::set<std::string> known = {"name", "model", "precision", "device", "host", "timestamp"};
  static const std::regex placeholder("\\{([^}]*)\\}");
  for (auto it = std::sregex_iterator(output.begin(), output.end(), placeholder);
       it != std::sregex_iterator(); ++it) {
    const std::string key = (*it)[1];
    if (!known.count(key)) {
      v.fail("output", "unknown placeholder {" + key + "}" +
                           did_you_mean(key, std::vector<std::string>(known.begin(), known.end())) +
                           "; known: {name} {model} {precision} {device} {host} {timestamp}");
    }
  }
}

}  // namespace

// A captured step replays the same kernels on the same buffers: every step must have the same
// shapes, and nothing in it may wait for the host (so the optimizer is the fused one).
std::vector<FieldProblem> cuda_graph_obstacles(const RunSpec& spec) {
  std::vector<FieldProblem> found;
  const auto blocks = [&found](const std::string& field, const std::string& message) {
    found.push_back({field, message});
  };
  if (!spec.device.is_cuda()) {
    blocks("train.cuda_graph", "CUDA graphs need a CUDA device, but device is '" + spec.device.text() + "'");
  }
  if (spec.model.unpad) {
    blocks("model.unpad", "cannot be captured with train.cuda_graph (the real tokens' count, and so the shapes, "
                          "change from batch to batch)");
  }
  if (spec.timing.warmup_steps < kCudaGraphCaptureStep) {
    blocks("timing.warmup_steps", "must be at least " + std::to_string(kCudaGraphCaptureStep) +
                                      " with train.cuda_graph (the eager step and the capture step are not "
                                      "representative and must not be timed), got " +
                                      std::to_string(spec.timing.warmup_steps));
  }
  if (!features::kCudaGraphStep) {
    blocks("train.cuda_graph", std::string("needs a CUDA build of torch >= 2.2 (graph capture with a device-side "
                                           "learning rate); this build has LibTorch ") + TORCH_VERSION);
  }
  if (spec.train.optimizer_impl != OptimizerImpl::fused && spec.train.optimizer_impl != OptimizerImpl::automatic) {
    blocks("train.optimizer_impl", std::string("'") + to_string(spec.train.optimizer_impl) +
                                       "' cannot be captured with train.cuda_graph (use fused or auto)");
  }
  if (spec.train.grad_accum_steps != 1) {
    blocks("train.grad_accum_steps", "must be 1 with train.cuda_graph (one micro-batch per captured step)");
  }
  if (spec.data.padding != Padding::max_length) {
    blocks("data.padding", "must be max_length with train.cuda_graph (a graph replays fixed shapes)");
  }
  if (!spec.data.drop_last) {
    blocks("data.drop_last", "must be true with train.cuda_graph (a last, smaller step would change the shapes)");
  }
  if (spec.task == Task::mlm || spec.task == Task::distillation) {
    blocks("train.cuda_graph", std::string("is not supported with task ") + to_string(spec.task) +
                                   " (the masked positions differ per batch: selecting them has a data-dependent shape)");
  }
  if (spec.task == Task::plm) {
    blocks("train.cuda_graph", "is not supported with task plm (the captured step has no input buffers for the "
                               "permutation mask and target mapping)");
  }
  return found;
}

namespace {

// Kernels and switches this build's LibTorch does not have are refused up front, naming the field.
void check_build_supports(const Validator& v, const RunSpec& spec) {
  const bool on_cuda = spec.device.is_cuda();
  const std::string optimizer_reason = optimizer_unavailable_reason(spec.train.optimizer_impl, on_cuda);
  if (!optimizer_reason.empty()) v.fail("train.optimizer_impl", optimizer_reason);
  if (spec.model.fused_layer_norm && on_cuda && !features::kCudaKernels) {
    v.fail("model.fused_layer_norm", "on a CUDA device needs tbench's CUDA kernels, and this build has none (it "
                                     "was configured without nvcc); use false");
  }
  if (spec.model.attention == AttentionChoice::sdpa && !features::kSdpa) {
    v.fail("model.attention", std::string("sdpa (at::scaled_dot_product_attention) needs torch >= 2.0, but this "
                                          "build has LibTorch ") + TORCH_VERSION + " (use eager or auto)");
  }
  if (spec.cuda.tf32 && !on_cuda) {
    v.fail("cuda.tf32", "TF32 is a CUDA tensor-core mode, but device is '" + spec.device.text() + "' (set it to false)");
  }
  // Asked for, the graph must be possible; left unset, it is used where it is (runner.cpp).
  if (spec.train.cuda_graph == true) {
    for (const auto& problem : cuda_graph_obstacles(spec)) v.fail(problem.field, problem.message);
  }
}

void check_data_files(const Validator& v, const DataSpec& d) {
  if (d.source != DataSource::synthetic && d.path.empty()) {
    v.fail("data.path", std::string("data.source '") + to_string(d.source) + "' reads a file: set data.path");
  }
  const std::vector<std::pair<std::string, std::string>> files = {
      {"data.path", d.path}, {"data.lengths.histogram", d.lengths.histogram}, {"data.tokenizer.path", d.tokenizer.path},
      {"data.tokenizer.vocab", d.tokenizer.vocab}, {"data.tokenizer.merges", d.tokenizer.merges}};
  for (const auto& [field, path] : files) {
    if (!path.empty() && !std::filesystem::exists(path)) v.fail(field, "cannot open '" + path + "'");
  }
}

void check_length_distribution(const Validator& v, const DataSpec& d) {
  const auto& l = d.lengths;
  using Shape = LengthDistributionKind;
  if (l.distribution != Shape::fixed && d.source != DataSource::synthetic) {
    v.fail("data.lengths.distribution", std::string("shapes synthetic data only; data.source is '") +
                                            to_string(d.source) + "'");
  }
  if ((l.distribution == Shape::normal || l.distribution == Shape::lognormal) && l.mean <= 0) {
    v.fail("data.lengths.mean", std::string("the ") + to_string(l.distribution) + " distribution needs a mean length > 0");
  }
  if (l.distribution == Shape::lognormal && l.std <= 0) v.fail("data.lengths.std", "lognormal needs a std > 0");
  if (l.distribution == Shape::histogram && l.histogram.empty()) {
    v.fail("data.lengths.histogram", "the histogram distribution needs a file of 'length count' lines");
  }
  if (l.min > d.seq_len) {
    v.fail("data.lengths.min", std::to_string(l.min) + " is longer than data.seq_len " + std::to_string(d.seq_len));
  }
}

// HF's permutation collator needs an even length (the factorisation order permutes the two halves
// alike, so no token sees its own target through the other half); dynamic padding rounds a batch
// up to even, so only the longest length must be.
void check_plm(const Validator& v, const RunSpec& spec) {
  const PlmSpec& p = spec.plm;
  if (p.probability <= 0 || p.probability > 1) v.fail("plm.probability", "must be in (0, 1], got " + json_text(json(p.probability)));
  if (spec.data.seq_len % 2 != 0) {
    v.fail("data.seq_len", "must be even with task plm (XLNet's permutation mask splits each sequence in halves), got " +
                               std::to_string(spec.data.seq_len));
  }
}

// data.labels numbers the classes in its order: a name twice would leave a class unused (and the
// second never matched), and more names than num_labels name classes the head does not have.
void check_label_names(const Validator& v, const RunSpec& spec) {
  const std::vector<std::string>& names = spec.data.labels;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i].empty()) v.fail("data.labels", "holds an empty name (entry " + std::to_string(i) + ")");
    const auto earlier = std::find(names.begin(), names.begin() + static_cast<long>(i), names[i]);
    if (earlier != names.begin() + static_cast<long>(i)) {
      v.fail("data.labels", "'" + names[i] + "' is listed twice (entries " + std::to_string(earlier - names.begin()) +
                                " and " + std::to_string(i) + "): each name is one class");
    }
  }
  if (spec.task == Task::classification && static_cast<int64_t>(names.size()) > spec.num_labels) {
    v.fail("data.labels", "names " + std::to_string(names.size()) + " classes, but num_labels is " +
                              std::to_string(spec.num_labels) + ": set num_labels to " + std::to_string(names.size()));
  }
}

// Which data each task trains on, and the sections that only one task reads.
void check_task(const Validator& v, const RunSpec& spec, const json& given) {
  const bool pretraining = spec.task != Task::classification;
  const bool masked_lm = spec.task == Task::mlm || spec.task == Task::distillation;
  const DataSource source = spec.data.source;
  if (pretraining && source != DataSource::synthetic && source != DataSource::corpus) {
    v.fail("data.source", std::string("task ") + to_string(spec.task) + " trains on plain text: use corpus (a .txt "
                          "file or a folder of them) or synthetic, not '" + to_string(source) + "'");
  }
  if (!pretraining && source == DataSource::corpus) {
    v.fail("data.source", "corpus is unlabelled text, for task mlm, distillation or plm; a classifier needs text or "
                          "tokenized data with labels");
  }
  if (spec.data.line_by_line && source != DataSource::corpus) {
    v.fail("data.line_by_line", std::string("reads a corpus's lines as samples; data.source is '") + to_string(source) +
                                    "' (each of its samples is already one)");
  }
  const std::string task_is = std::string("(task is ") + to_string(spec.task) + ")";
  if (!masked_lm && given.contains("mlm")) v.fail("mlm", "only used with task mlm or distillation " + task_is);
  if (spec.task != Task::plm && given.contains("plm")) v.fail("plm", "only used with task plm " + task_is);
  if (pretraining && spec.model.sparse_last_layer) {
    v.fail("model.sparse_last_layer", "only used with task classification " + task_is + ": this task's head reads "
                                      "every position of the last layer");
  }
  if (spec.task == Task::plm && spec.model.unpad) {
    v.fail("model.unpad", "not with task plm " + task_is + ": XLNet's two-stream attention runs on the padded grid");
  }
  // A distillation section under a classification task is a forgotten `task: distillation`; under
  // mlm it is ignored, so a sweep can take a spec across both masked-LM tasks.
  if (!masked_lm && given.contains("distillation")) {
    v.fail("distillation", "only used with task distillation " + task_is + ": set task: distillation");
  }
  if (spec.task == Task::plm) check_plm(v, spec);
  if (masked_lm) {
    const MlmSpec& m = spec.mlm;
    if (m.probability <= 0 || m.probability > 1) v.fail("mlm.probability", "must be in (0, 1], got " + json_text(json(m.probability)));
    if (m.pseudo_perplexity_fraction > 1) {
      v.fail("mlm.pseudo_perplexity_fraction", "must be in [0, 1], got " + json_text(json(m.pseudo_perplexity_fraction)));
    }
    if (m.pseudo_perplexity_fraction > 0 && spec.data.eval_fraction <= 0) {
      v.fail("mlm.pseudo_perplexity_fraction", "scores held-out blocks: set data.eval_fraction too");
    }
    if (m.mask_fraction + m.random_fraction > 1 + 1e-12) {
      // Named by the one the spec set (both set: the second of the pair).
      const json* set_random = find(given, "mlm.random_fraction");
      v.fail(set_random == nullptr && find(given, "mlm.mask_fraction") ? "mlm.mask_fraction" : "mlm.random_fraction",
             "mlm.mask_fraction + mlm.random_fraction must be at most 1, got " +
                                        json_text(json(m.mask_fraction)) + " + " + json_text(json(m.random_fraction)));
    }
  }
  if (spec.task == Task::distillation) {
    if (spec.distillation.teacher.name.empty()) {
      v.fail("distillation.teacher", "task distillation needs a teacher: a shipped model (e.g. bert-base-uncased) or "
                                     "an HF config.json");
    }
    if (spec.distillation.temperature <= 0) v.fail("distillation.temperature", "must be > 0");
    const auto& d = spec.distillation;
    if (d.alpha_ce + d.alpha_mlm + d.alpha_cos <= 0) {
      v.fail("distillation.alpha_ce", "alpha_ce, alpha_mlm and alpha_cos are all 0: there is nothing to train on");
    }
    if (!d.teacher.config.empty() && !std::ifstream(d.teacher.config).good()) {
      v.fail("distillation.teacher", "cannot open '" + d.teacher.config + "'");
    }
    if (!d.teacher.weights.empty() && !std::filesystem::exists(d.teacher.weights)) {
      v.fail("distillation.teacher_weights", "cannot open '" + d.teacher.weights + "'");
    }
    if (spec.mlm.sparse_prediction && !d.restrict_ce_to_mask) {
      v.fail("mlm.sparse_prediction", "needs distillation.restrict_ce_to_mask: true (without it the KL term reads the "
                                      "scores of every real token, not only the masked ones)");
    }
    if (d.teacher_precision == Precision::fp16 && !spec.device.is_cuda()) {
      v.fail("distillation.teacher_precision", "fp16 needs a CUDA device (use fp32 or bf16 on CPU)");
    }
  }
}

void check_data_spec(const Validator& v, const DataSpec& d) {
  if (d.source == DataSource::synthetic && d.num_samples == 0) {
    v.fail("data.num_samples", "synthetic data needs at least 1 sample");
  }
  if (d.eval_fraction >= 0.9) v.fail("data.eval_fraction", "must be below 0.9, got " + std::to_string(d.eval_fraction));
  check_data_files(v, d);
  check_length_distribution(v, d);
}

// Fills every absent field with its default, and the defaults that depend on other fields.
void fill_defaults(json& root, const SpecDocument& doc) {
  for (const auto& field : fields()) {
    if (find(root, field.path)) continue;
    const auto dot = field.path.find('.');
    if (dot != std::string::npos && !root.contains(field.path.substr(0, dot))) {
      root[field.path.substr(0, dot)] = json::object();
    }
    root[json::json_pointer("/" + std::regex_replace(field.path, std::regex("\\."), "/"))] = field.default_value;
  }
  if (root["name"].is_null()) root["name"] = doc.label.front() == '<' ? "default" : stem_of(doc.label);
  if (root["data"]["seed"].is_null()) root["data"]["seed"] = root["train"]["seed"];
}

// A model given as one string is a config file when it has a '/' or ends in .json, else a shipped name.
bool names_a_config_file(const std::string& text) {
  return text.find('/') != std::string::npos || (text.size() > 5 && text.compare(text.size() - 5, 5, ".json") == 0);
}

// Each field's checked value into its RunSpec member, by name (the table's `assign`).
RunSpec assign_fields(const json& root) {
  RunSpec spec;
  for (const auto& field : fields()) {
    if (field.assign) field.assign(spec, *find(root, field.path));
  }
  // Defaults that depend on other fields and stay null in the resolved spec.
  if (root["data"]["num_samples"].is_null()) {
    spec.data.num_samples = spec.data.source == DataSource::synthetic ? 1024 : 0;
  }
  if (root["model"]["config"].is_string()) spec.model.name = model_name_from_config_path(spec.model.config);
  if (root["mlm"]["mask_token_id"].is_null()) spec.mlm.mask_token_id = -1;
  if (root["plm"]["mask_token_id"].is_null()) spec.plm.mask_token_id = -1;
  // distillation.teacher names a shipped model or, like `model:`, an HF config.json.
  const std::string teacher = spec.distillation.teacher.name;
  if (names_a_config_file(teacher)) {
    spec.distillation.teacher.config = teacher;
    spec.distillation.teacher.name = model_name_from_config_path(teacher);
  }
  return spec;
}

}  // namespace

void expand_model_shorthand(nlohmann::json& root) {
  if (!root.contains("model") || !root["model"].is_string()) return;
  const std::string text = root["model"].get<std::string>();
  root["model"] = names_a_config_file(text) ? json{{"config", text}} : json{{"name", text}};
}

RunSpec resolve_spec(const SpecDocument& doc) {
  const Validator v(doc);
  json root = doc.root;
  expand_model_shorthand(root);
  if (!root.contains("model")) {
    v.fail("model", "missing; name a shipped model (e.g. \"model\": \"distilbert-base-uncased\") "
                    "or an HF config (\"model\": {\"config\": \"path/config.json\"})");
  }
  v.check_keys(root, "");
  for (const auto& field : fields()) {
    if (const json* value = find(root, field.path)) v.check_value(field, *value);
  }
  fill_defaults(root, doc);
  const bool has_name = root["model"]["name"].is_string();
  if (has_name == root["model"]["config"].is_string()) {
    v.fail("model", has_name ? "give model.name or model.config, not both"
                             : "needs model.name (a shipped model) or model.config (an HF config.json)");
  }

  RunSpec spec = assign_fields(root);
  spec.source = doc.label;
  spec.resolved = root;
  spec.origin = doc.origin;

  // Checks that involve more than one field.
  check_data_spec(v, spec.data);
  check_label_names(v, spec);
  check_task(v, spec, doc.root);
  if (spec.dist.heartbeat_timeout_s > 0 && spec.dist.heartbeat_timeout_s < 3) {
    v.fail("dist.heartbeat_timeout_s", "must be 0 (off) or at least 3 (a read that lands between two beats of a "
                                       "second is no sign of silence), got " + std::to_string(spec.dist.heartbeat_timeout_s));
  }
  if (spec.dist.stall_timeout_s > 0 && spec.dist.stall_timeout_s < 3) {
    v.fail("dist.stall_timeout_s", "must be 0 (at dist.timeout_s) or at least 3 (reads of a second apart need a few to "
                                   "see a stillness), got " + std::to_string(spec.dist.stall_timeout_s));
  } else if (spec.dist.stall_timeout_s > 0 && spec.dist.stall_timeout_s >= spec.dist.timeout_s) {
    v.fail("dist.stall_timeout_s", "must be below dist.timeout_s (" + std::to_string(spec.dist.timeout_s) +
                                   "), which ends the wait first, got " + std::to_string(spec.dist.stall_timeout_s));
  }
  if (spec.precision == Precision::fp16 && !spec.device.is_cuda()) {
    v.fail("precision", "fp16 needs a CUDA device, but device is 'cpu' (use fp32 or bf16 on CPU)");
  }
  if (!spec.model.weights.empty() && !std::filesystem::exists(spec.model.weights)) {
    v.fail("model.weights", "cannot open '" + spec.model.weights + "'");
  }
  if (root["model"]["config"].is_string() && !std::ifstream(spec.model.config).good()) {
    v.fail("model.config", "cannot open '" + spec.model.config + "'");
  }
  check_output_placeholders(v, spec.output);
  check_build_supports(v, spec);
  // Synthetic data's size is known now; files are checked once read (prepare_run).
  if (spec.data.source == DataSource::synthetic) {
    check_samples_fill_a_step(spec, "data.num_samples", spec.data.num_samples, 0, 1);
  }
  return spec;
}

void check_samples_fill_a_step(const RunSpec& spec, const std::string& field, int64_t train_samples, int64_t held_out,
                               int64_t world_size) {
  const int64_t per_step = spec.train.batch_size * spec.train.grad_accum_steps * world_size;
  if (!spec.data.drop_last || train_samples >= per_step) return;
  throw input_error(spec.where(field) + std::to_string(train_samples) + " training samples" +
                    (held_out > 0 ? " (after holding out " + std::to_string(held_out) + " for eval)" : "") +
                    " are fewer than one optimizer step takes (train.batch_size " +
                    std::to_string(spec.train.batch_size) + " x train.grad_accum_steps " +
                    std::to_string(spec.train.grad_accum_steps) +
                    (world_size > 1 ? " x " + std::to_string(world_size) + " processes" : "") + " = " +
                    std::to_string(per_step) + ")");
}

nlohmann::json spec_field_reference() {
  json out = json::array();
  for (const auto& f : fields()) {
    json entry = {{"field", f.path}, {"type", kind_text(f)}, {"default", f.default_value}, {"help", f.help}};
    if (f.min > -1e300) entry["min"] = f.min;
    if (!f.choices.empty()) entry["choices"] = f.choices;
    out.push_back(entry);
  }
  return out;
}

}  // namespace tbench
