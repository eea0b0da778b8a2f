// The run spec's schema: every field, its type, range and default, and the strict validation
// that turns a SpecDocument into a RunSpec. One table below is the single source of truth;
// `tbench validate --fields` prints it.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <set>

#include "tbench/errors.hpp"
#include "tbench/model_config.hpp"
#include "tbench/spec.hpp"
#include "tbench/suggest.hpp"
#include "tbench/torch_features.hpp"

namespace tbench {
namespace {

using nlohmann::json;

enum class Kind {
  integer, number, string, boolean, choice, nullable_string, nullable_integer, nullable_boolean, string_list, grid
};

struct Field {
  std::string path;
  Kind kind;
  json default_value;  // null with required=true: no default
  double min = -1e300;
  std::vector<std::string> choices = {};
  std::string help = "";
};

// Sections are objects; everything else is a leaf field.
const std::vector<std::string>& sections() {
  static const std::vector<std::string> s = {"model", "data", "data.lengths", "data.tokenizer", "train", "timing", "cuda",
                                             "dist", "sweep"};
  return s;
}

const std::vector<Field>& fields() {
  static const std::vector<Field> f = {
      {"name", Kind::string, nullptr, -1e300, {}, "run name (default: the spec file's stem)"},
      {"model.name", Kind::nullable_string, nullptr, -1e300, {},
       "a shipped model (`tbench models`), e.g. distilbert-base-uncased"},
      {"model.config", Kind::nullable_string, nullptr, -1e300, {},
       "path to an HF config.json (instead of model.name)"},
      {"model.weights", Kind::nullable_string, nullptr, -1e300, {},
       "HF weights: a .safetensors file, a folder holding one, or a sharded index (default: random init)"},
      {"model.save_weights", Kind::nullable_string, nullptr, -1e300, {},
       "after training, save the weights here as safetensors with HF's names"},
      {"model.attention", Kind::choice, "auto", -1e300, {"auto", "eager", "sdpa"},
       "self-attention kernel (BERT, DistilBERT, RoBERTa): eager matmul + softmax, or sdpa "
       "(at::scaled_dot_product_attention, torch>=2.0); auto: sdpa where available. XLNet is always eager"},
      {"num_labels", Kind::integer, 2, 2, {}, "classes of the sequence classifier"},
      {"data.source", Kind::choice, "synthetic", -1e300, {"synthetic", "tokenized", "text"},
       "synthetic; tokenized: JSONL of input_ids + label; text: CSV/TSV/JSONL of text + label"},
      {"data.path", Kind::nullable_string, nullptr, -1e300, {}, "the data file (source tokenized or text)"},
      {"data.format", Kind::choice, "auto", -1e300, {"auto", "csv", "tsv", "jsonl"},
       "text file format (auto: by extension)"},
      {"data.text_column", Kind::string, "text", -1e300, {}, "text: the column (or JSON key) holding the text"},
      {"data.text_pair_column", Kind::nullable_string, nullptr, -1e300, {},
       "text: a second text column, for sentence pairs"},
      {"data.label_column", Kind::string, "label", -1e300, {}, "text, tokenized: the label column (or key)"},
      {"data.labels", Kind::string_list, nlohmann::json::array(), -1e300, {},
       "label names in index order (default: integer labels, or the names found, sorted)"},
      {"data.num_samples", Kind::nullable_integer, nullptr, 0, {},
       "synthetic: samples per epoch (default 1024); files: use at most this many (default all)"},
      {"data.seq_len", Kind::integer, 128, 2, {}, "max tokens per sample (truncation; padding max_length pads to it)"},
      {"data.seed", Kind::nullable_integer, nullptr, 0, {}, "data seed (default: train.seed)"},
      {"data.lengths.distribution", Kind::choice, "fixed", -1e300,
       {"fixed", "uniform", "normal", "lognormal", "histogram"}, "synthetic: sample length distribution"},
      {"data.lengths.min", Kind::integer, 2, 2, {}, "synthetic: shortest sample"},
      {"data.lengths.mean", Kind::number, 0.0, 0, {}, "synthetic normal/lognormal: mean length"},
      {"data.lengths.std", Kind::number, 0.0, 0, {}, "synthetic normal/lognormal: length standard deviation"},
      {"data.lengths.histogram", Kind::nullable_string, nullptr, -1e300, {},
       "synthetic histogram: file of 'length count' lines (e.g. your data's)"},
      {"data.tokenizer.kind", Kind::choice, "auto", -1e300, {"auto", "wordpiece", "bpe", "sentencepiece"},
       "text: tokenizer (auto: from the files, else the model's family)"},
      {"data.tokenizer.path", Kind::nullable_string, nullptr, -1e300, {},
       "text: folder with vocab.txt | vocab.json + merges.txt | spiece.model (+ tokenizer_config.json)"},
      {"data.tokenizer.vocab", Kind::nullable_string, nullptr, -1e300, {}, "text: vocab.txt, vocab.json or spiece.model"},
      {"data.tokenizer.merges", Kind::nullable_string, nullptr, -1e300, {}, "text, bpe: merges.txt"},
      {"data.tokenizer.lowercase", Kind::nullable_boolean, nullptr, -1e300, {},
       "text: lowercase (default: tokenizer_config.json, else uncased models' wordpiece)"},
      {"data.tokenizer.strip_accents", Kind::nullable_boolean, nullptr, -1e300, {},
       "text: strip accents (default: as HF: follows lowercase for wordpiece, on for XLNet)"},
      {"data.padding", Kind::choice, "max_length", -1e300, {"max_length", "longest"},
       "pad every batch to seq_len, or to its longest sample (dynamic padding)"},
      {"data.bucket_by_length", Kind::boolean, false, -1e300, {}, "batch samples of similar length together"},
      {"data.drop_last", Kind::boolean, true, -1e300, {}, "leave out the last, partial step of an epoch"},
      {"data.eval_fraction", Kind::number, 0.0, 0, {}, "held out for eval loss and accuracy after each epoch"},
      {"data.prefetch", Kind::integer, 2, 0, {}, "batches collated ahead on a background thread (0: inline)"},
      {"data.cache", Kind::boolean, true, -1e300, {}, "cache tokenized text (keyed by file and tokenizer)"},
      {"data.cache_dir", Kind::nullable_string, nullptr, -1e300, {},
       "token cache folder (default $XDG_CACHE_HOME/tbench or ~/.cache/tbench)"},
      {"train.epochs", Kind::integer, 1, 1, {}, "epochs to train"},
      {"train.batch_size", Kind::integer, 32, 1, {}, "samples per micro-step (per device)"},
      {"train.lr", Kind::number, 5e-5, 0, {}, "peak learning rate of AdamW"},
      {"train.warmup_steps", Kind::integer, 0, 0, {}, "linear LR warm-up, in optimizer steps"},
      {"train.weight_decay", Kind::number, 0.0, 0, {}, "AdamW weight decay (not on biases, LayerNorm)"},
      {"train.grad_accum_steps", Kind::integer, 1, 1, {}, "micro-steps per optimizer step"},
      {"train.max_steps", Kind::integer, 0, 0, {}, "stop after this many optimizer steps (0: no limit)"},
      {"train.seed", Kind::integer, 42, 0, {}, "seed for weights and dropout (and data, unless data.seed)"},
      {"train.max_grad_norm", Kind::number, 1.0, 0, {}, "gradient clipping norm (0: off)"},
      {"train.dropout", Kind::boolean, true, -1e300, {}, "dropout on, as in HF fine-tuning"},
      {"train.optimizer_impl", Kind::choice, "auto", -1e300, {"auto", "loop", "foreach", "fused"},
       "AdamW kernels: loop (per tensor), foreach (multi-tensor), fused (one kernel; CUDA torch>=2.0, CPU "
       ">=2.4); auto: fused on CUDA where available, else foreach"},
      {"train.cuda_graph", Kind::boolean, false, -1e300, {},
       "CUDA only: capture the whole train step in a CUDA graph at step 2 and replay it (static shapes: "
       "padding max_length, drop_last, grad_accum_steps 1; fused AdamW; torch>=2.2)"},
      {"precision", Kind::choice, "fp32", -1e300, {"fp32", "fp16", "bf16"}, "training precision"},
      {"device", Kind::string, "cpu", -1e300, {}, "cpu, cuda or cuda:N"},
      {"threads", Kind::integer, 0, 0, {}, "CPU intra-op threads (0: one per core)"},
      {"timing.warmup_steps", Kind::integer, 5, 0, {}, "first steps excluded from the summary"},
      {"cuda.tf32", Kind::boolean, false, -1e300, {},
       "CUDA only: TF32 tensor cores for fp32 matmuls and convolutions (changes fp32 numerics)"},
      {"dist.bucket_mb", Kind::number, 25, 0, {},
       "data-parallel only: gradient all-reduce bucket size in MiB (0: one bucket per parameter)"},
      {"dist.sync_every_micro_step", Kind::boolean, false, -1e300, {},
       "data-parallel only: all-reduce after every accumulation micro-step (default: only the last)"},
      {"dist.timeout_s", Kind::integer, 300, 1, {},
       "data-parallel only: seconds to wait for a peer (rendezvous, collectives) before failing"},
      {"output", Kind::string, "results/{name}-{timestamp}.json", -1e300, {},
       "result path; placeholders {name} {model} {precision} {device} {host} {timestamp}"},
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
    case Kind::nullable_string: return "a string or null";
    case Kind::nullable_integer: return "an integer or null";
    case Kind::nullable_boolean: return "true, false or null";
    case Kind::string_list: return "a list of strings";
    case Kind::grid: return "a mapping of field -> list of values";
  }
  return "";
}

std::string describe(const json& value) {
  std::string text = value.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text + " (" + value.type_name() + ")";
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
        case Kind::integer: return value.is_number_integer();
        case Kind::number: return value.is_number();
        case Kind::string: return value.is_string();
        case Kind::boolean: return value.is_boolean();
        case Kind::choice: return value.is_string();
        case Kind::nullable_string: return value.is_string() || value.is_null();
        case Kind::nullable_integer: return value.is_number_integer() || value.is_null();
        case Kind::nullable_boolean: return value.is_boolean() || value.is_null();
        case Kind::string_list:
          return value.is_array() && std::all_of(value.begin(), value.end(), [](const json& v) { return v.is_string(); });
        case Kind::grid: return value.is_object();
      }
      return false;
    }();
    if (!ok) fail(field.path, std::string("expected ") + kind_text(field) + ", got " + describe(value));
    if (value.is_number() && value.get<double>() < field.min) {
      fail(field.path, "must be >= " + json(field.min).dump() + ", got " + value.dump());
    }
    if (value.is_number_float() && !std::isfinite(value.get<double>())) {
      fail(field.path, "must be a finite number, got " + value.dump());
    }
    if (field.kind == Kind::choice) {
      const auto text = value.get<std::string>();
      if (std::find(field.choices.begin(), field.choices.end(), text) == field.choices.end()) {
        std::string list;
        for (const auto& c : field.choices) list += (list.empty() ? "" : ", ") + c;
        fail(field.path, "'" + text + "' is not one of: " + list + did_you_mean(text, field.choices));
      }
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

json* find(json& root, const std::string& path) {
  json* node = &root;
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!node->is_object() || !node->contains(key)) return nullptr;
    node = &(*node)[key];
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

// A captured step replays the same kernels on the same buffers: every step must have the same
// shapes, and nothing in it may wait for the host (so the optimizer is the fused one).
void check_cuda_graph(const Validator& v, const RunSpec& spec, bool on_cuda) {
  if (!on_cuda) v.fail("train.cuda_graph", "CUDA graphs need a CUDA device, but device is '" + spec.device + "'");
  if (!features::kCudaGraphStep) {
    v.fail("train.cuda_graph", std::string("needs a CUDA build of torch >= 2.2 (graph capture with a device-side "
                                           "learning rate); this build has LibTorch ") + TORCH_VERSION);
  }
  if (spec.train.optimizer_impl == "loop" || spec.train.optimizer_impl == "foreach") {
    v.fail("train.optimizer_impl", "'" + spec.train.optimizer_impl +
                                       "' cannot be captured with train.cuda_graph (use fused or auto)");
  }
  if (spec.train.grad_accum_steps != 1) {
    v.fail("train.grad_accum_steps", "must be 1 with train.cuda_graph (one micro-batch per captured step)");
  }
  if (spec.data.padding != "max_length") {
    v.fail("data.padding", "must be max_length with train.cuda_graph (a graph replays fixed shapes)");
  }
  if (!spec.data.drop_last) {
    v.fail("data.drop_last", "must be true with train.cuda_graph (a last, smaller step would change the shapes)");
  }
}

// Kernels and switches this build's LibTorch does not have are refused up front, naming the field.
void check_build_supports(const Validator& v, const RunSpec& spec) {
  const bool on_cuda = spec.device != "cpu";
  if (spec.train.optimizer_impl == "fused" && !features::fused_adamw(on_cuda)) {
    v.fail("train.optimizer_impl", std::string("fused AdamW needs torch >= ") + (on_cuda ? "2.0 with CUDA" : "2.4 on CPU") +
                                       ", but this build has LibTorch " + TORCH_VERSION + " (use foreach or loop)");
  }
  if (spec.model.attention == "sdpa" && !features::kSdpa) {
    v.fail("model.attention", std::string("sdpa (at::scaled_dot_product_attention) needs torch >= 2.0, but this "
                                          "build has LibTorch ") + TORCH_VERSION + " (use eager or auto)");
  }
  if (spec.cuda.tf32 && !on_cuda) {
    v.fail("cuda.tf32", "TF32 is a CUDA tensor-core mode, but device is '" + spec.device + "' (set it to false)");
  }
  if (spec.train.cuda_graph) check_cuda_graph(v, spec, on_cuda);
}

std::string optional_string(const json& value) { return value.is_string() ? value.get<std::string>() : ""; }

std::optional<bool> optional_bool(const json& value) {
  return value.is_boolean() ? std::optional<bool>(value.get<bool>()) : std::nullopt;
}

void check_data_files(const Validator& v, const DataSpec& d) {
  if (d.source != "synthetic" && d.path.empty()) {
    v.fail("data.path", "data.source '" + d.source + "' reads a file: set data.path");
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
  if (l.distribution != "fixed" && d.source != "synthetic") {
    v.fail("data.lengths.distribution", "shapes synthetic data only; data.source is '" + d.source + "'");
  }
  if ((l.distribution == "normal" || l.distribution == "lognormal") && l.mean <= 0) {
    v.fail("data.lengths.mean", "the " + l.distribution + " distribution needs a mean length > 0");
  }
  if (l.distribution == "lognormal" && l.std <= 0) v.fail("data.lengths.std", "lognormal needs a std > 0");
  if (l.distribution == "histogram" && l.histogram.empty()) {
    v.fail("data.lengths.histogram", "the histogram distribution needs a file of 'length count' lines");
  }
  if (l.min > d.seq_len) {
    v.fail("data.lengths.min", std::to_string(l.min) + " is longer than data.seq_len " + std::to_string(d.seq_len));
  }
}

DataSpec read_data_spec(const Validator& v, const json& data) {
  DataSpec d;
  d.source = data["source"];
  d.path = optional_string(data["path"]);
  d.format = data["format"];
  d.text_column = data["text_column"];
  d.text_pair_column = optional_string(data["text_pair_column"]);
  d.label_column = data["label_column"];
  d.labels = data["labels"].get<std::vector<std::string>>();
  d.num_samples = data["num_samples"].is_null() ? (d.source == "synthetic" ? 1024 : 0) : data["num_samples"].get<int64_t>();
  d.seq_len = data["seq_len"];
  d.seed = data["seed"];
  const json& lengths = data["lengths"];
  d.lengths = {lengths["distribution"], lengths["min"], lengths["mean"], lengths["std"], optional_string(lengths["histogram"])};
  const json& tokenizer = data["tokenizer"];
  d.tokenizer = {tokenizer["kind"], optional_string(tokenizer["path"]), optional_string(tokenizer["vocab"]),
                 optional_string(tokenizer["merges"]), optional_bool(tokenizer["lowercase"]),
                 optional_bool(tokenizer["strip_accents"])};
  d.padding = data["padding"];
  d.bucket_by_length = data["bucket_by_length"];
  d.drop_last = data["drop_last"];
  d.eval_fraction = data["eval_fraction"];
  d.prefetch = data["prefetch"];
  d.cache = data["cache"];
  d.cache_dir = optional_string(data["cache_dir"]);

  if (d.source == "synthetic" && d.num_samples == 0) v.fail("data.num_samples", "synthetic data needs at least 1 sample");
  if (d.eval_fraction >= 0.9) v.fail("data.eval_fraction", "must be below 0.9, got " + std::to_string(d.eval_fraction));
  check_data_files(v, d);
  check_length_distribution(v, d);
  return d;
}

}  // namespace

void expand_model_shorthand(nlohmann::json& root) {
  if (!root.contains("model") || !root["model"].is_string()) return;
  const std::string text = root["model"].get<std::string>();
  const bool is_path = text.find('/') != std::string::npos ||
                       (text.size() > 5 && text.compare(text.size() - 5, 5, ".json") == 0);
  root["model"] = is_path ? json{{"config", text}} : json{{"name", text}};
}

const char* to_string(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::fp16: return "fp16";
    case Precision::bf16: return "bf16";
  }
  return "?";
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
    json* value = find(root, field.path);
    if (value) {
      v.check_value(field, *value);
      continue;
    }
    const auto dot = field.path.find('.');
    if (dot != std::string::npos && !root.contains(field.path.substr(0, dot))) {
      root[field.path.substr(0, dot)] = json::object();
    }
    json& slot = root[json::json_pointer("/" + std::regex_replace(field.path, std::regex("\\."), "/"))];
    slot = field.default_value;
  }

  // Defaults that depend on other fields.
  if (root["name"].is_null()) root["name"] = doc.label.front() == '<' ? "default" : stem_of(doc.label);
  if (root["data"]["seed"].is_null()) root["data"]["seed"] = root["train"]["seed"];

  const json& model = root["model"];
  const bool has_name = model["name"].is_string();
  const bool has_config = model["config"].is_string();
  if (has_name == has_config) {
    v.fail("model", has_name ? "give model.name or model.config, not both"
                             : "needs model.name (a shipped model) or model.config (an HF config.json)");
  }

  RunSpec spec;
  spec.name = root["name"];
  spec.model.config = has_config ? model["config"].get<std::string>() : "";
  spec.model.name = has_name ? model["name"].get<std::string>() : model_name_from_config_path(spec.model.config);
  spec.model.weights = model["weights"].is_string() ? model["weights"].get<std::string>() : "";
  spec.model.save_weights = model["save_weights"].is_string() ? model["save_weights"].get<std::string>() : "";
  spec.num_labels = root["num_labels"];
  spec.data = read_data_spec(v, root["data"]);
  const json& t = root["train"];
  spec.train = {t["epochs"], t["batch_size"], t["lr"], t["warmup_steps"], t["weight_decay"],
                t["grad_accum_steps"], t["max_steps"], t["seed"], t["max_grad_norm"], t["dropout"]};
  const std::string precision = root["precision"];
  spec.precision = precision == "fp16" ? Precision::fp16 : precision == "bf16" ? Precision::bf16 : Precision::fp32;
  spec.device = root["device"];
  spec.threads = root["threads"];
  spec.timing.warmup_steps = root["timing"]["warmup_steps"];
  spec.dist.bucket_mb = root["dist"]["bucket_mb"];
  spec.dist.sync_every_micro_step = root["dist"]["sync_every_micro_step"];
  spec.dist.timeout_s = root["dist"]["timeout_s"];
  spec.model.attention = model["attention"];
  spec.train.optimizer_impl = t["optimizer_impl"];
  spec.train.cuda_graph = t["cuda_graph"];
  spec.cuda.tf32 = root["cuda"]["tf32"];
  spec.output = root["output"];
  spec.source = doc.label;

  // Checks that involve more than one field.
  static const std::regex device_re("cpu|cuda(:[0-9]+)?");
  if (!std::regex_match(spec.device, device_re)) {
    v.fail("device", "expected cpu, cuda or cuda:N, got '" + spec.device + "'" +
                         did_you_mean(spec.device, {"cpu", "cuda"}));
  }
  if (spec.precision == Precision::fp16 && spec.device == "cpu") {
    v.fail("precision", "fp16 needs a CUDA device, but device is 'cpu' (use fp32 or bf16 on CPU)");
  }
  if (!spec.model.weights.empty() && !std::filesystem::exists(spec.model.weights)) {
    v.fail("model.weights", "cannot open '" + spec.model.weights + "'");
  }
  if (has_config && !std::ifstream(spec.model.config).good()) {
    v.fail("model.config", "cannot open '" + spec.model.config + "'");
  }
  const int64_t samples_per_step = spec.train.batch_size * spec.train.grad_accum_steps;
  if (spec.data.source == "synthetic" && spec.data.num_samples < samples_per_step) {
    v.fail("data.num_samples", "is " + std::to_string(spec.data.num_samples) +
                                   ", fewer than one optimizer step needs (train.batch_size " +
                                   std::to_string(spec.train.batch_size) + " x train.grad_accum_steps " +
                                   std::to_string(spec.train.grad_accum_steps) + ")");
  }
  check_output_placeholders(v, spec.output);
  check_build_supports(v, spec);

  spec.resolved = root;
  spec.origin = doc.origin;
  return spec;
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
