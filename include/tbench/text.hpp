#pragma once
// Small text helpers shared by messages and tables.
#include <string>
#include <vector>

namespace tbench {

// The items in order with `separator` between neighbours: join({"a", "", "b"}, ", ") is "a, , b"
// (an empty item keeps its place); "" for none.
std::string join(const std::vector<std::string>& items, const std::string& separator = ", ");

// join's inverse: the pieces between the separators, empty ones kept where they stand, a last one
// too: split("a,,b,", ',') is {"a", "", "b", ""} (std::getline drops that last one); {""} for "".
std::vector<std::string> split(const std::string& text, char separator);

// The items as a sentence lists them: "A", "A and B", "A, B and C"; "" for none.
std::string join_as_prose(const std::vector<std::string>& items);

}  // namespace tbench
