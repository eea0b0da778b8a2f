// Fuzz targets for the run spec: JSON, YAML and `--set` overrides, each parsed and then resolved
// (validation is where most of the spec's error paths are).
#include <sstream>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "fuzz_target.hpp"
#include "tbench/spec/spec.hpp"

namespace {

using nlohmann::json;
using tbench::fuzz::expect_success_or_input_error;

std::vector<std::string> config_texts() {
  std::vector<std::string> texts;
  for (const auto& path : tbench::fuzz::repo_files("configs", ".json")) texts.push_back(tbench::fuzz::repo_file(path));
  return texts;
}

// JSON to block-style YAML, so the YAML seeds exercise YAML's own syntax (and its line numbers).
YAML::Node to_yaml(const json& j) {
  if (j.is_object()) {
    YAML::Node node(YAML::NodeType::Map);
    for (const auto& item : j.items()) node[item.key()] = to_yaml(item.value());
    return node;
  }
  if (j.is_array()) {
    YAML::Node node(YAML::NodeType::Sequence);
    for (const auto& v : j) node.push_back(to_yaml(v));
    return node;
  }
  if (j.is_null()) return YAML::Node(YAML::NodeType::Null);
  if (j.is_string()) return YAML::Node(j.get<std::string>());
  return YAML::Node(j.dump());  // numbers and booleans as YAML reads them back
}

// Every leaf of a config as one `path=value` line.
void flatten(const json& j, const std::string& prefix, std::string& lines) {
  if (j.is_object()) {
    for (const auto& item : j.items()) flatten(item.value(), prefix.empty() ? item.key() : prefix + "." + item.key(), lines);
    return;
  }
  lines += prefix + "=" + (j.is_string() ? j.get<std::string>() : j.dump()) + "\n";
}

void parse_and_resolve(const std::string& bytes, bool yaml) {
  expect_success_or_input_error([&] {
    const auto doc = tbench::parse_spec_text(bytes, yaml ? "fuzz.yaml" : "fuzz.json", yaml);
    tbench::resolve_spec(doc);
  });
}

}  // namespace

TBENCH_FUZZ_TARGET(spec_json) { parse_and_resolve(bytes, false); }
TBENCH_FUZZ_SEEDS(spec_json) { return config_texts(); }

TBENCH_FUZZ_TARGET(spec_yaml) { parse_and_resolve(bytes, true); }
TBENCH_FUZZ_SEEDS(spec_yaml) {
  std::vector<std::string> seeds;
  for (const auto& text : config_texts()) {
    YAML::Emitter out;
    out << to_yaml(json::parse(text));
    seeds.emplace_back(out.c_str());
  }
  return seeds;
}

// One `--set` override per line, applied to the embedded default spec.
TBENCH_FUZZ_TARGET(spec_set) {
  std::vector<std::string> overrides;
  std::istringstream lines(bytes);
  for (std::string line; std::getline(lines, line);) overrides.push_back(line);
  expect_success_or_input_error([&] {
    auto doc = tbench::default_spec_document();
    tbench::apply_overrides(doc, overrides);
    tbench::resolve_spec(doc);
  });
}
TBENCH_FUZZ_SEEDS(spec_set) {
  std::vector<std::string> seeds;
  for (const auto& text : config_texts()) {
    std::string lines;
    flatten(json::parse(text), "", lines);
    seeds.push_back(lines);
  }
  seeds.push_back("train.batch_size=[1,2]\ndata.lengths.distribution=histogram\nmodel=bert-base-cased\n");
  return seeds;
}
