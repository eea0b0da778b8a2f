#pragma once
// JSON as text. Strings in tbench's JSON come from users' files (labels, paths, spec values), which
// may hold invalid UTF-8; nlohmann's dump() throws on it (type_error 316), which would turn a bad
// byte in a dataset into an internal error after a whole run. Here such bytes become U+FFFD.
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace tbench {

inline std::string json_text(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A figure that may be unknown, as JSON: null where it is.
template <typename T>
nlohmann::json or_null(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

// Text that may be empty, as JSON: null where it is.
inline nlohmann::json or_null(const std::string& text) {
  return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text);
}

// A document's fields as dotted paths ("train.batch_size"): objects descended into, anything else
// (arrays and empty objects too) kept whole.
inline void flatten_fields(const nlohmann::json& value, const std::string& path, std::map<std::string, nlohmann::json>& into) {
  if (!value.is_object() || value.empty()) {
    into[path] = value;
    return;
  }
  for (const auto& [key, child] : value.items()) flatten_fields(child, path.empty() ? key : path + "." + key, into);
}

inline std::map<std::string, nlohmann::json> flatten_fields(const nlohmann::json& value) {
  std::map<std::string, nlohmann::json> fields;
  flatten_fields(value, "", fields);
  return fields;
}

}  // namespace tbench
