#include "tbench/spec/suggest.hpp"

#include <algorithm>
#include <cctype>

namespace tbench {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

namespace {

// `word` is the start of `name` up to one of its parts (warmup of warmup_steps, grad of
// grad_bucket_mb): a name cut short, too far for an edit distance to find.
bool starts_a_part_of(const std::string& word, const std::string& name) {
  return word.size() >= 3 && name.size() > word.size() && name.compare(0, word.size(), word) == 0 &&
         name[word.size()] == '_';
}

}  // namespace

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  std::vector<std::string> cut_short;
  for (const auto& candidate : candidates) {
    if (starts_a_part_of(word, candidate)) cut_short.push_back(candidate);
  }
  if (cut_short.size() == 1) return cut_short.front();  // more than one: no single guess
  std::string best;
  std::size_t best_distance = std::string::npos;
  for (const auto& candidate : candidates) {
    const std::size_t d = edit_distance(word, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  // A typo changes a few characters; anything further away is a different word.
  const std::size_t allowed = std::max<std::size_t>(2, word.size() / 3);
  return best_distance <= allowed ? best : std::string();
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string match = closest_match(word, candidates);
  return match.empty() ? std::string() : " (did you mean '" + match + "'?)";
}

}  // namespace tbench
