#pragma once
// A small JSON Schema (2020-12) checker for the keywords the result schema uses: type, required,
// properties, additionalProperties, items, enum, const, minimum, exclusiveMinimum, pattern and
// local $ref. Returns every violation with its JSON pointer, so a failing test says what is wrong.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tbench::testing {

std::vector<std::string> schema_violations(const nlohmann::json& schema, const nlohmann::json& document);

}  // namespace tbench::testing
