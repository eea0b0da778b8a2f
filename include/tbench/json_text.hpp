#pragma once
// JSON as text. Strings in tbench's JSON come from users' files (labels, paths, spec values), which
// may hold invalid UTF-8; nlohmann's dump() throws on it (type_error 316), which would turn a bad
// byte in a dataset into an internal error after a whole run. Here such bytes become U+FFFD.
#include <string>

#include <nlohmann/json.hpp>

namespace tbench {

inline std::string json_text(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tbench
