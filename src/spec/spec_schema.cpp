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

namespace tbench {
namespace {

using nlohmann::json;

enum class Kind { integer, number, string, boolean, choice, nullable_string, nullable_integer, grid };

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
  static const std::vector<std::string> s = {"model", "data", "train", "timing", "dist", "sweep"};
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
      {"num_labels", Kind::integer, 2, 2, {}, "classes of the sequence classifier"},
      {"data.source", Kind::choice, "synthetic", -1e300, {"synthetic"}, "where samples come from"},
      {"data.num_samples", Kind::integer, 1024, 1, {}, "samples per epoch"},
      {"data.seq_len", Kind::integer, 128, 2, {}, "tokens per sample"},
      {"data.seed", Kind::nullable_integer, nullptr, 0, {}, "data seed (default: train.seed)"},
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
      {"precision", Kind::choice, "fp32", -1e300, {"fp32", "fp16", "bf16"}, "training precision"},
      {"device", Kind::string, "cpu", -1e300, {}, "cpu, cuda or cuda:N"},
      {"threads", Kind::integer, 0, 0, {}, "CPU intra-op threads (0: one per core)"},
      {"timing.warmup_steps", Kind::integer, 5, 0, {}, "first steps excluded from the summary"},
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
    for (const auto& s : sections()) {
      if (prefix.empty()) known.push_back(s);
    }
    for (const auto& f : fields()) {
      const auto dot = f.path.find_last_of('.');
      const std::string parent = dot == std::string::npos ? "" : f.path.substr(0, dot);
      if (parent == prefix) known.push_back(f.path.substr(dot == std::string::npos ? 0 : dot + 1));
    }
    for (const auto& item : object.items()) {
      const std::string path = prefix.empty() ? item.key() : prefix + "." + item.key();
      if (std::find(known.begin(), known.end(), item.key()) == known.end()) {
        fail(path, "unknown field" + did_you_mean(item.key(), known));
      }
      const bool is_section =
          prefix.empty() && std::find(sections().begin(), sections().end(), item.key()) != sections().end();
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
  spec.data.source = root["data"]["source"];
  spec.data.num_samples = root["data"]["num_samples"];
  spec.data.seq_len = root["data"]["seq_len"];
  spec.data.seed = root["data"]["seed"];
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
  if (spec.data.num_samples < samples_per_step) {
    v.fail("data.num_samples", "is " + std::to_string(spec.data.num_samples) +
                                   ", fewer than one optimizer step needs (train.batch_size " +
                                   std::to_string(spec.train.batch_size) + " x train.grad_accum_steps " +
                                   std::to_string(spec.train.grad_accum_steps) + ")");
  }
  check_output_placeholders(v, spec.output);

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
