#pragma once
// "Did you mean ...?" for unknown keys, model names and choices.
#include <string>
#include <vector>

namespace tbench {

// Edit distance between two strings (insertions, deletions, substitutions, all cost 1).
std::size_t edit_distance(const std::string& a, const std::string& b);

// The closest candidate to `word`, or "" when none is close enough to be a plausible typo.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

// " (did you mean 'x'?)" or "" — ready to append to an error message.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace tbench
