#pragma once
// JSON as text. Strings in tbench's JSON come from users' files (labels, paths, spec values), which
// may hold invalid UTF-8; nlohmann's dump() throws on it (type_error 316), which would turn a bad
// byte in a dataset into an internal error after a whole run. Here such bytes become U+FFFD.
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

}  // namespace tbench
