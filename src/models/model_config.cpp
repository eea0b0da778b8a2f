// HF config.json -> ModelConfig. Each architecture names its sizes differently; this is the one
// place that knows those names.
#include <fstream>
#include <sstream>

#include "tbench/embedded.hpp"
#include "tbench/files.hpp"
#include "tbench/errors.hpp"
#include "tbench/models/model_config.hpp"
#include "tbench/spec/suggest.hpp"
#include "tbench/json_text.hpp"

namespace tbench {
namespace {

using nlohmann::json;

class ConfigReader {
 public:
  ConfigReader(const json& raw, std::string source) : raw_(raw), source_(std::move(source)) {}

  int64_t integer(const char* key) const {
    const json& v = require(key);
    if (!v.is_number_integer() || v.get<int64_t>() <= 0) fail(key, "expected a positive integer, got " + json_text(v));
    return v.get<int64_t>();
  }
  int64_t integer_or(const char* key, int64_t fallback) const {
    if (!raw_.contains(key) || raw_[key].is_null()) return fallback;
    const json& v = raw_[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0) fail(key, "expected an integer >= 0, got " + json_text(v));
    return v.get<int64_t>();
  }
  double probability_or(const char* key, double fallback) const {
    if (!raw_.contains(key) || raw_[key].is_null()) return fallback;
    const json& v = raw_[key];
    if (!v.is_number() || v.get<double>() < 0 || v.get<double>() >= 1) {
      fail(key, "expected a probability in [0, 1), got " + json_text(v));
    }
    return v.get<double>();
  }
  double positive_or(const char* key, double fallback) const {
    if (!raw_.contains(key) || raw_[key].is_null()) return fallback;
    const json& v = raw_[key];
    if (!v.is_number() || v.get<double>() <= 0) fail(key, "expected a positive number, got " + json_text(v));
    return v.get<double>();
  }
  std::string string_or(const char* key, const std::string& fallback) const {
    if (!raw_.contains(key) || raw_[key].is_null()) return fallback;
    if (!raw_[key].is_string()) fail(key, "expected a string, got " + json_text(raw_[key]));
    return raw_[key].get<std::string>();
  }
  bool boolean_or(const char* key, bool fallback) const {
    if (!raw_.contains(key) || raw_[key].is_null()) return fallback;
    if (!raw_[key].is_boolean()) fail(key, "expected true or false, got " + json_text(raw_[key]));
    return raw_[key].get<bool>();
  }
  // The value at key, or nullptr if the config does not have it.
  const json* find(const char* key) const { return raw_.contains(key) ? &raw_[key] : nullptr; }
  // A setting tbench implements one way only: it must be absent or hold that value.
  void expect_or_absent(const char* key, const json& supported) const {
    if (!raw_.contains(key) || raw_[key] == supported) return;
    fail(key, "only " + json_text(supported) + " is supported, got " + json_text(raw_[key]));
  }
  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    throw input_error(source_ + ": " + key + ": " + message);
  }

 private:
  const json& require(const char* key) const {
    if (!raw_.contains(key)) fail(key, "missing (required for this model_type)");
    return raw_[key];
  }
  const json& raw_;
  std::string source_;
};

void read_bert_like(const ConfigReader& r, ModelConfig& c) {
  c.vocab_size = r.integer("vocab_size");
  c.hidden_size = r.integer("hidden_size");
  c.num_layers = r.integer("num_hidden_layers");
  c.num_heads = r.integer("num_attention_heads");
  c.intermediate_size = r.integer("intermediate_size");
  c.max_position_embeddings = r.integer("max_position_embeddings");
  c.type_vocab_size = r.integer_or("type_vocab_size", 2);
  c.pad_token_id = r.integer_or("pad_token_id", c.arch == Architecture::roberta ? 1 : 0);
  c.layer_norm_eps = r.positive_or("layer_norm_eps", 1e-12);
  c.hidden_dropout = r.probability_or("hidden_dropout_prob", 0.1);
  c.attention_dropout = r.probability_or("attention_probs_dropout_prob", 0.1);
  c.classifier_dropout = r.probability_or("classifier_dropout", c.hidden_dropout);
  c.activation = r.string_or("hidden_act", "gelu");
  const std::string positions = r.string_or("position_embedding_type", "absolute");
  if (positions != "absolute") r.fail("position_embedding_type", "only \"absolute\" is supported, got \"" + positions + "\"");
}

void read_distilbert(const ConfigReader& r, ModelConfig& c) {
  c.vocab_size = r.integer("vocab_size");
  c.hidden_size = r.integer("dim");
  c.num_layers = r.integer("n_layers");
  c.num_heads = r.integer("n_heads");
  c.intermediate_size = r.integer("hidden_dim");
  c.max_position_embeddings = r.integer("max_position_embeddings");
  c.type_vocab_size = 0;
  c.pad_token_id = r.integer_or("pad_token_id", 0);
  c.layer_norm_eps = 1e-12;  // hard-coded in HF's modeling_distilbert
  c.hidden_dropout = r.probability_or("dropout", 0.1);
  c.attention_dropout = r.probability_or("attention_dropout", 0.1);
  c.classifier_dropout = r.probability_or("seq_classif_dropout", 0.2);
  c.activation = r.string_or("activation", "gelu");
  c.sinusoidal_positions = r.boolean_or("sinusoidal_pos_embds", false);
}

void read_xlnet(const ConfigReader& r, ModelConfig& c) {
  c.vocab_size = r.integer("vocab_size");
  c.hidden_size = r.integer("d_model");
  c.num_layers = r.integer("n_layer");
  c.num_heads = r.integer("n_head");
  c.intermediate_size = r.integer("d_inner");
  c.max_position_embeddings = 0;
  c.type_vocab_size = 0;
  c.pad_token_id = r.integer_or("pad_token_id", 5);
  c.layer_norm_eps = r.positive_or("layer_norm_eps", 1e-12);
  c.hidden_dropout = r.probability_or("dropout", 0.1);
  c.attention_dropout = c.hidden_dropout;
  c.classifier_dropout = r.probability_or("summary_last_dropout", 0.1);
  c.activation = r.string_or("ff_activation", "gelu");
  // HF derives d_head from d_model / n_head and rejects a config that says otherwise. (A d_model
  // that n_head does not divide is reported as an n_head error below.)
  if (const json* d_head = r.find("d_head"); d_head && c.hidden_size % c.num_heads == 0) {
    if (!d_head->is_number_integer() || d_head->get<int64_t>() * c.num_heads != c.hidden_size) {
      r.fail("d_head", "must equal d_model / n_head, got " + d_head->dump());
    }
  }
  if (c.hidden_size % 2 != 0) r.fail("d_model", "must be even (the position encoding is half sines, half cosines)");
  // What HF's XLNetForSequenceClassification fine-tunes: bidirectional attention, one relative
  // encoding for the whole batch, unclamped distances, and the tanh projection of the last token.
  r.expect_or_absent("attn_type", "bi");
  r.expect_or_absent("bi_data", false);
  if (const json* clamp = r.find("clamp_len"); clamp && !(clamp->is_number() && clamp->get<double>() <= 0)) {
    r.fail("clamp_len", "only -1 (no clamping) is supported, got " + clamp->dump());
  }
  r.expect_or_absent("summary_type", "last");
  r.expect_or_absent("summary_use_proj", true);
  r.expect_or_absent("summary_activation", "tanh");
  r.expect_or_absent("summary_proj_to_labels", false);
  r.expect_or_absent("summary_first_dropout", 0);
}

}  // namespace

const char* to_string(Architecture a) {
  switch (a) {
    case Architecture::bert: return "bert";
    case Architecture::distilbert: return "distilbert";
    case Architecture::roberta: return "roberta";
    case Architecture::xlnet: return "xlnet";
  }
  return "?";
}

const char* to_string(AttentionKernel k) { return k == AttentionKernel::sdpa ? "sdpa" : "eager"; }

ModelConfig parse_model_config(const std::string& text, const std::string& name, const std::string& source) {
  json raw;
  try {
    raw = json::parse(text);
  } catch (const json::exception& e) {
    throw input_error(source + ": not valid JSON: " + e.what());
  }
  if (!raw.is_object()) throw input_error(source + ": an HF config.json must be a JSON object");
  const ConfigReader reader(raw, source);
  ModelConfig c;
  c.name = name;
  c.source = source;
  c.raw = raw;
  const std::string type = reader.string_or("model_type", "");
  const std::vector<std::string> known = {"bert", "distilbert", "roberta", "xlnet"};
  if (type == "bert") {
    c.arch = Architecture::bert;
    read_bert_like(reader, c);
  } else if (type == "roberta") {
    c.arch = Architecture::roberta;
    read_bert_like(reader, c);
  } else if (type == "distilbert") {
    c.arch = Architecture::distilbert;
    read_distilbert(reader, c);
  } else if (type == "xlnet") {
    c.arch = Architecture::xlnet;
    read_xlnet(reader, c);
  } else {
    reader.fail("model_type", (type.empty() ? std::string("missing") : "'" + type + "' is not supported") +
                                  "; supported: bert, distilbert, roberta, xlnet" + did_you_mean(type, known));
  }
  c.initializer_range = reader.positive_or("initializer_range", 0.02);
  const bool xlnet = c.arch == Architecture::xlnet;
  if (c.hidden_size % c.num_heads != 0) {
    reader.fail(xlnet ? "n_head" : "num_attention_heads", "hidden size " + std::to_string(c.hidden_size) +
                                           " is not a multiple of the number of heads " +
                                           std::to_string(c.num_heads));
  }
  if (c.activation != "gelu" && c.activation != "relu" && c.activation != "gelu_new") {
    reader.fail(c.arch == Architecture::distilbert ? "activation" : xlnet ? "ff_activation" : "hidden_act",
                "'" + c.activation + "' is not supported (gelu, gelu_new, relu)");
  }
  // Both index embedding tables: out of range, LibTorch would fail at the first step instead.
  if (c.pad_token_id < 0 || c.pad_token_id >= c.vocab_size) reader.fail("pad_token_id", "is outside the vocabulary");
  if (c.type_vocab_size < 0) reader.fail("type_vocab_size", "must be >= 0");
  // Samples store token types as int8 (TokenizedSamples::type_ids, the token cache): a byte per
  // token keeps IMDB-sized sets small, and BERT's and RoBERTa's configs have 2 and 1. A larger
  // table would let types from 128 on wrap negative and fail inside LibTorch at step 1.
  if (c.type_vocab_size > kMaxTokenTypes) {
    reader.fail("type_vocab_size", std::to_string(c.type_vocab_size) + " is more token types than tbench stores (at most " +
                                       std::to_string(kMaxTokenTypes) + ")");
  }
  return c;
}

std::string model_name_from_config_path(const std::string& path) {
  const auto slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) name.resize(name.size() - 5);
  if (name == "config" && slash != std::string::npos && slash > 0) {
    const std::string dir = path.substr(0, slash);
    const auto parent = dir.find_last_of('/');
    name = parent == std::string::npos ? dir : dir.substr(parent + 1);
  }
  return name;
}

ModelConfig read_model_config(const std::string& path) {
  return parse_model_config(read_file(path, "the model config"), model_name_from_config_path(path), path);
}

std::vector<std::string> shipped_model_names() {
  std::vector<std::string> names;
  for (const auto& file : embedded::model_configs()) names.push_back(file.name);
  return names;
}

ModelConfig shipped_model_config(const std::string& name) {
  for (const auto& file : embedded::model_configs()) {
    if (file.name == name) return parse_model_config(file.text, name, "models/" + name + ".json");
  }
  throw input_error("model.name: '" + name + "' is not a shipped model" + did_you_mean(name, shipped_model_names()) +
                    "; `tbench models` lists them, or give model.config: path/to/config.json");
}

}  // namespace tbench
