#include "support/json_schema.hpp"

#include <regex>

namespace tbench::testing {
namespace {

using nlohmann::json;

bool has_type(const json& value, const std::string& type) {
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "string") return value.is_string();
  if (type == "integer") return value.is_number_integer();
  if (type == "number") return value.is_number();
  if (type == "boolean") return value.is_boolean();
  if (type == "null") return value.is_null();
  return false;
}

class Checker {
 public:
  explicit Checker(const json& root) : root_(root) {}

  void check(const json& schema, const json& value, const std::string& at) {
    if (schema.contains("$ref")) {
      const std::string ref = schema["$ref"];
      check(root_.at(json::json_pointer(ref.substr(1))), value, at);
    }
    if (schema.contains("type")) {
      const json& t = schema["type"];
      bool ok = false;
      for (const auto& type : t.is_array() ? t : json::array({t})) ok = ok || has_type(value, type);
      if (!ok) return fail(at, "expected type " + t.dump() + ", got " + value.dump().substr(0, 60));
    }
    if (schema.contains("const") && value != schema["const"]) fail(at, "expected " + schema["const"].dump());
    if (schema.contains("enum")) {
      const auto& e = schema["enum"];
      if (std::find(e.begin(), e.end(), value) == e.end()) fail(at, value.dump() + " not in " + e.dump());
    }
    if (value.is_number()) {
      const double v = value.get<double>();
      if (schema.contains("minimum") && v < schema["minimum"].get<double>()) fail(at, "below minimum");
      if (schema.contains("exclusiveMinimum") && v <= schema["exclusiveMinimum"].get<double>()) {
        fail(at, "not above exclusiveMinimum");
      }
    }
    if (value.is_string() && schema.contains("pattern") &&
        !std::regex_search(value.get<std::string>(), std::regex(schema["pattern"].get<std::string>()))) {
      fail(at, "'" + value.get<std::string>() + "' does not match " + schema["pattern"].get<std::string>());
    }
    if (value.is_object()) check_object(schema, value, at);
    if (value.is_array() && schema.contains("items")) {
      for (std::size_t i = 0; i < value.size(); ++i) check(schema["items"], value[i], at + "/" + std::to_string(i));
    }
  }

  std::vector<std::string> violations;

 private:
  void check_object(const json& schema, const json& value, const std::string& at) {
    for (const auto& key : schema.value("required", json::array())) {
      if (!value.contains(key.get<std::string>())) fail(at, "missing required '" + key.get<std::string>() + "'");
    }
    const json properties = schema.value("properties", json::object());
    for (const auto& item : value.items()) {
      if (properties.contains(item.key())) {
        check(properties[item.key()], item.value(), at + "/" + item.key());
      } else if (schema.contains("additionalProperties") && schema["additionalProperties"] == false) {
        fail(at, "unexpected property '" + item.key() + "'");
      }
    }
  }

  void fail(const std::string& at, const std::string& message) {
    violations.push_back((at.empty() ? "/" : at) + ": " + message);
  }

  const json& root_;
};

}  // namespace

std::vector<std::string> schema_violations(const nlohmann::json& schema, const nlohmann::json& document) {
  Checker checker(schema);
  checker.check(schema, document, "");
  return checker.violations;
}

}  // namespace tbench::testing
