#include "support/ranks.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "support/cli.hpp"
#include "tbench/dist/dist.hpp"

namespace tbench::testing {

namespace {

bool have_backend(const std::string& name) {
  const auto backends = available_backends();
  return std::find(backends.begin(), backends.end(), name) != backends.end();
}

}  // namespace

bool have_gloo() { return have_backend("gloo"); }
bool have_nccl() { return have_backend("nccl"); }

std::vector<float> read_floats(const std::string& path) {
  const std::string bytes = read_text(path);
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  return values;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
  return worst;
}

}  // namespace tbench::testing
