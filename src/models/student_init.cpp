// A student's start from its teacher: one rename table per architecture pair, then a copy.
#include "tbench/models/student_init.hpp"

#include <cmath>
#include <map>
#include <optional>
#include <regex>

#include "tbench/errors.hpp"

namespace tbench {
namespace {

const char* base_prefix(Architecture arch) {
  switch (arch) {
    case Architecture::bert: return "bert";
    case Architecture::roberta: return "roberta";
    case Architecture::distilbert: return "distilbert";
    case Architecture::xlnet: return "transformer";
  }
  return "";
}

// DistilBERT parameter names (after distilbert.transformer.layer.N. or at the top) -> BERT's.
const std::map<std::string, std::string>& distilbert_to_bert() {
  static const std::map<std::string, std::string> names = {
      {"attention.q_lin", "attention.self.query"},   {"attention.k_lin", "attention.self.key"},
      {"attention.v_lin", "attention.self.value"},   {"attention.out_lin", "attention.output.dense"},
      {"sa_layer_norm", "attention.output.LayerNorm"}, {"ffn.lin1", "intermediate.dense"},
      {"ffn.lin2", "output.dense"},                  {"output_layer_norm", "output.LayerNorm"},
      {"vocab_transform", "cls.predictions.transform.dense"},
      {"vocab_layer_norm", "cls.predictions.transform.LayerNorm"},
  };
  return names;
}

// "module.path.weight" -> ("module.path", "weight").
std::pair<std::string, std::string> split_leaf(const std::string& key) {
  const auto dot = key.find_last_of('.');
  return {key.substr(0, dot), key.substr(dot + 1)};
}

// The teacher's name for a student parameter; nullopt where the teacher has none.
std::optional<std::string> teacher_key(const std::string& key, const ModelConfig& student, const ModelConfig& teacher,
                                       const std::vector<int64_t>& layers) {
  static const std::regex layer_key(R"(^(\w+)\.(encoder|transformer)\.layer\.(\d+)\.(.*)$)");
  const std::string teacher_base = base_prefix(teacher.arch);
  std::smatch m;
  const bool in_layer = std::regex_match(key, m, layer_key);
  if (student.arch == teacher.arch) {
    if (!in_layer) return key;
    const auto index = static_cast<std::size_t>(std::stoll(m[3]));
    return std::string(m[1]) + "." + std::string(m[2]) + ".layer." + std::to_string(layers[index]) + "." + std::string(m[4]);
  }
  // A DistilBERT student of a BERT teacher.
  if (in_layer) {
    const auto [module, leaf] = split_leaf(m[4]);
    const auto renamed = distilbert_to_bert().find(module);
    if (renamed == distilbert_to_bert().end()) return std::nullopt;
    const auto index = static_cast<std::size_t>(std::stoll(m[3]));
    return teacher_base + ".encoder.layer." + std::to_string(layers[index]) + "." + renamed->second + "." + leaf;
  }
  if (key.rfind("distilbert.embeddings.", 0) == 0) return teacher_base + key.substr(std::string("distilbert").size());
  if (key == "vocab_projector.bias") return std::string("cls.predictions.bias");
  const auto [module, leaf] = split_leaf(key);
  const auto renamed = distilbert_to_bert().find(module);
  if (renamed == distilbert_to_bert().end()) return std::nullopt;
  return renamed->second + "." + leaf;
}

}  // namespace

std::vector<int64_t> teacher_layers_for(int64_t student_layers, int64_t teacher_layers) {
  std::vector<int64_t> layers;
  for (int64_t i = 0; i < student_layers; ++i) {
    const double at = student_layers == 1 ? 0.0
                                          : static_cast<double>(i) * static_cast<double>(teacher_layers - 1) /
                                                static_cast<double>(student_layers - 1);
    layers.push_back(static_cast<int64_t>(std::llround(at)));
  }
  return layers;
}

std::string student_init_mismatch(const ModelConfig& s, const ModelConfig& t) {
  const bool pair_known = s.arch == t.arch || (s.arch == Architecture::distilbert && t.arch == Architecture::bert);
  if (!pair_known) {
    return std::string("a ") + to_string(s.arch) + " student cannot start from a " + to_string(t.arch) +
           " teacher's layers (known: the same architecture, or DistilBERT from BERT)";
  }
  const std::vector<std::pair<const char*, std::pair<int64_t, int64_t>>> sizes = {
      {"hidden_size", {s.hidden_size, t.hidden_size}},
      {"intermediate_size", {s.intermediate_size, t.intermediate_size}},
      {"num_heads", {s.num_heads, t.num_heads}},
      {"vocab_size", {s.vocab_size, t.vocab_size}},
      {"max_position_embeddings", {s.max_position_embeddings, t.max_position_embeddings}},
      // A DistilBERT student has no token types to take; otherwise the tables must match.
      {"type_vocab_size", {s.arch == t.arch ? s.type_vocab_size : 0, s.arch == t.arch ? t.type_vocab_size : 0}}};
  for (const auto& [name, values] : sizes) {
    if (values.first != values.second) {
      return std::string("the student's ") + name + " is " + std::to_string(values.first) + ", the teacher's " +
             std::to_string(values.second) + ": a student starts from its teacher's layers only at the same width";
    }
  }
  if (s.num_layers > t.num_layers) {
    return "the student has more layers (" + std::to_string(s.num_layers) + ") than the teacher (" +
           std::to_string(t.num_layers) + ")";
  }
  return "";
}

std::vector<std::string> init_student_from_teacher(torch::nn::Module& student, const ModelConfig& student_config,
                                                   const torch::nn::Module& teacher, const ModelConfig& teacher_config) {
  const std::string mismatch = student_init_mismatch(student_config, teacher_config);
  if (!mismatch.empty()) throw input_error(mismatch);
  const auto layers = teacher_layers_for(student_config.num_layers, teacher_config.num_layers);
  const auto teacher_params = teacher.named_parameters();
  std::vector<std::string> set;
  torch::NoGradGuard no_grad;
  for (auto& item : student.named_parameters()) {
    if (!item.value().requires_grad()) continue;  // fixed sinusoidal positions stay fixed
    const auto from = teacher_key(item.key(), student_config, teacher_config, layers);
    const torch::Tensor* source = from ? teacher_params.find(*from) : nullptr;
    if (!source) continue;
    if (source->sizes() != item.value().sizes()) {
      throw input_error("cannot start the student's " + item.key() + " " + c10::str(item.value().sizes()) +
                        " from the teacher's " + *from + " " + c10::str(source->sizes()));
    }
    item.value().copy_(*source);
    set.push_back(item.key());
  }
  return set;
}

}  // namespace tbench
