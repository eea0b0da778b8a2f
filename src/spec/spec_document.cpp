// Reading spec documents: JSON or YAML text -> one JSON tree, plus where each field came from.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <regex>

#include <yaml-cpp/yaml.h>

#include "tbench/embedded.hpp"
#include "tbench/files.hpp"
#include "tbench/errors.hpp"
#include "tbench/spec/spec.hpp"
#include "tbench/text.hpp"

namespace tbench {
namespace {

using nlohmann::json;

// YAML scalars are untyped text; resolve them the way YAML 1.2's core schema does, so that
// `batch_size: 32` is a number and `precision: fp16` a string. Quoted scalars stay strings.
// A YAML number as JSON; one a double cannot hold (5e0548, 1e-400, 400 digits) stays the text it
// was, so validation reports it against its field ("must be a number") instead of std::stod
// throwing past every check.
json yaml_number(const std::string& text) {
  // YAML's own spellings of the non-finite floats, which std::stod does not read: the schema
  // then refuses them by field ("must be a finite number").
  static const std::regex infinity_re("[-+]?\\.(inf|Inf|INF)");
  static const std::regex nan_re("\\.(nan|NaN|NAN)");
  if (std::regex_match(text, infinity_re)) {
    return text[0] == '-' ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  }
  if (std::regex_match(text, nan_re)) return std::numeric_limits<double>::quiet_NaN();
  try {
    return std::stod(text);
  } catch (const std::out_of_range&) {
    return text;
  }
}

json yaml_scalar_to_json(const YAML::Node& node) {
  const std::string& text = node.Scalar();
  if (node.Tag() == "!") return text;  // quoted
  static const std::regex null_re("~|null|Null|NULL|");
  static const std::regex true_re("true|True|TRUE");
  static const std::regex false_re("false|False|FALSE");
  static const std::regex int_re("[-+]?[0-9]+");
  static const std::regex float_re(
      "[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?|[-+]?\\.(inf|Inf|INF)|\\.(nan|NaN|NAN)");
  if (std::regex_match(text, null_re)) return nullptr;
  if (std::regex_match(text, true_re)) return true;
  if (std::regex_match(text, false_re)) return false;
  if (std::regex_match(text, int_re)) {
    try {
      return std::stoll(text);
    } catch (const std::out_of_range&) {
      return yaml_number(text);
    }
  }
  if (std::regex_match(text, float_re)) return yaml_number(text);
  return text;
}

json yaml_to_json(const YAML::Node& node, const std::string& path, const std::string& label,
                  std::map<std::string, std::string>& origin) {
  if (!path.empty() && node.Mark().line >= 0) {
    origin[path] = label + ":" + std::to_string(node.Mark().line + 1);
  }
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar:
      return yaml_scalar_to_json(node);
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (std::size_t i = 0; i < node.size(); ++i) {
        out.push_back(yaml_to_json(node[i], path + "[" + std::to_string(i) + "]", label, origin));
      }
      return out;
    }
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& entry : node) {
        const std::string key = entry.first.as<std::string>();
        const std::string child = path.empty() ? key : path + "." + key;
        if (out.contains(key)) {
          throw input_error(label + ":" + std::to_string(entry.first.Mark().line + 1) + ": " +
                            child + ": duplicate key");
        }
        out[key] = yaml_to_json(entry.second, child, label, origin);
      }
      return out;
    }
  }
  return nullptr;
}

std::string lowercase_extension(const std::string& path) {
  const auto dot = path.find_last_of('.');
  const auto slash = path.find_last_of('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string ext = path.substr(dot + 1);
  for (auto& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

// JSON text as a tree, refusing a key given twice in one object: nlohmann would keep the last
// silently, while a YAML spec with the same mistake is refused.
json parse_json_refusing_duplicate_keys(const std::string& text, const std::string& label) {
  std::vector<std::set<std::string>> keys_of_open_objects;
  std::vector<std::string> path;  // the keys down to the current value
  const json::parser_callback_t check = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        keys_of_open_objects.emplace_back();
        break;
      case json::parse_event_t::key: {
        const std::string key = parsed.get<std::string>();
        path.resize(keys_of_open_objects.size() - 1);
        path.push_back(key);
        if (!keys_of_open_objects.back().insert(key).second) {
          std::string dotted;
          for (const auto& part : path) dotted += (dotted.empty() ? "" : ".") + part;
          throw input_error(label + ": " + dotted + ": duplicate key");
        }
        break;
      }
      case json::parse_event_t::object_end:
        keys_of_open_objects.pop_back();
        break;
      default:
        break;
    }
    return true;
  };
  return json::parse(text, check);
}

}  // namespace

std::string locate_field(const std::string& label, const std::map<std::string, std::string>& origin,
                         const std::string& field) {
  // A field's own origin, else its nearest parent's (a whole section set by --set, say).
  for (std::string path = field;;) {
    const auto it = origin.find(path);
    if (it != origin.end()) return it->second;
    const auto dot = path.find_last_of('.');
    if (dot == std::string::npos) return label;
    path = path.substr(0, dot);
  }
}

std::string SpecDocument::where(const std::string& field) const { return locate_field(label, origin, field); }

SpecDocument parse_spec_text(const std::string& text, const std::string& label, bool yaml) {
  SpecDocument doc;
  doc.label = label;
  if (yaml) {
    try {
      doc.root = yaml_to_json(YAML::Load(text), "", label, doc.origin);
    } catch (const YAML::Exception& e) {
      throw input_error(label + ":" + std::to_string(e.mark.line + 1) + ": YAML syntax error: " +
                        e.msg);
    }
  } else {
    try {
      doc.root = parse_json_refusing_duplicate_keys(text, label);
    } catch (const json::exception& e) {
      // nlohmann's message already says "at line L, column C".
      std::string what = e.what();
      const auto pos = what.find("parse error");
      throw input_error(label + ": JSON " + (pos == std::string::npos ? what : what.substr(pos)));
    }
  }
  if (!doc.root.is_object()) {
    throw input_error(label + ": a run spec must be a mapping of fields (e.g. {\"model\": ...}), got " +
                      std::string(doc.root.type_name()));
  }
  // Its fields would be reported unknown one by one (data.corpus, ...), which says nothing of the mix-up.
  const auto schema = doc.root.find("schema");
  if (schema != doc.root.end() && schema->is_string() && schema->get<std::string>().rfind("tbench.", 0) == 0) {
    const bool result = schema->get<std::string>().rfind("tbench.result", 0) == 0;
    throw input_error(label + ": " + (result ? "a tbench result" : "a file tbench writes") + " (" +
                      schema->get<std::string>() + "), not a run spec" +
                      (result ? "; the spec it ran is its \"spec\" section" : ""));
  }
  return doc;
}

SpecDocument read_spec_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw input_error(path + ": is a directory; give a spec file (.json, .yaml or .yml)");
  }
  const std::string ext = lowercase_extension(path);
  if (ext != "json" && ext != "yaml" && ext != "yml") {
    throw input_error(path + ": unknown spec format '." + ext + "' (use .json, .yaml or .yml)");
  }
  return parse_spec_text(read_file(path, "the spec file"), path, ext != "json");
}

SpecDocument default_spec_document() {
  return parse_spec_text(embedded::default_spec(), "<embedded default spec>", false);
}

namespace {

// `--set model=NAME` (or a sweep's `model=...` axis) on a spec whose model is a mapping: the short
// form names the model, as it does in a spec, so only model.name (or model.config, for a path) is
// replaced and the rest (weights, fused_qkv, ...) stays. Returns the field it sets.
std::string rename_model(json& model, const json& name) {
  json named = {{"model", name}};
  expand_model_shorthand(named);  // {"name": NAME} or {"config": PATH}
  const std::string field = named["model"].begin().key();
  model.erase("name");
  model.erase("config");
  return "model." + field;
}

}  // namespace

void apply_overrides(SpecDocument& doc, const std::vector<std::string>& overrides) {
  for (const auto& item : overrides) {
    const std::string where = "--set " + item;
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw input_error(where + ": expected key.path=value, e.g. --set train.batch_size=16");
    }
    std::string key = item.substr(0, eq);
    const std::string text = item.substr(eq + 1);
    json value;
    try {
      std::map<std::string, std::string> ignored;
      value = yaml_to_json(YAML::Load(text), "", where, ignored);
    } catch (const YAML::Exception& e) {
      throw input_error(where + ": cannot read the value: " + e.msg);
    }
    if (key == "model" && value.is_string() && doc.root["model"].is_object()) {
      key = rename_model(doc.root["model"], value);  // the rest of the mapping is kept
    }
    json* node = &doc.root;
    const auto parts = split(key, '.');  // "a." is {"a", ""}: a trailing dot is refused like "a..b"
    if (std::find(parts.begin(), parts.end(), "") != parts.end()) {
      throw input_error(where + ": empty name in key path '" + key + "'");
    }
    std::string path;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      path = path.empty() ? parts[i] : path + "." + parts[i];
      if (i + 1 == parts.size()) {
        (*node)[parts[i]] = value;
        break;
      }
      json& next = (*node)[parts[i]];
      if (path == "model") expand_model_shorthand(doc.root);  // `--set model.weights=...` on `model: name`
      if (next.is_null()) {  // a section the override makes (`--set plm.probability=0`) is its doing
        next = json::object();
        doc.origin.emplace(path, where);
      }
      if (!next.is_object()) throw input_error(where + ": '" + path + "' is not a section");
      node = &next;
    }
    // Everything under the overridden key now comes from the command line.
    for (auto it = doc.origin.begin(); it != doc.origin.end();) {
      it = (it->first == key || it->first.rfind(key + ".", 0) == 0) ? doc.origin.erase(it) : ++it;
    }
    doc.origin[key] = where;
  }
}

std::string yaml_quoted(const std::string& text) {
  std::string quoted = "'";
  for (const char c : text) quoted += c == '\'' ? std::string("''") : std::string(1, c);
  return quoted + "'";
}

RunSpec load_spec(const std::string& path, const std::vector<std::string>& overrides,
                  const std::string& output_option) {
  SpecDocument doc = path.empty() ? default_spec_document() : read_spec_file(path);
  apply_overrides(doc, overrides);
  if (!output_option.empty()) {
    apply_overrides(doc, {"output=" + yaml_quoted(output_option)});
    doc.origin["output"] = "-o " + output_option;
  }
  RunSpec spec = resolve_spec(doc);
  spec.source = doc.label;
  return spec;
}

}  // namespace tbench
