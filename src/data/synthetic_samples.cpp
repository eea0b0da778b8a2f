#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "tbench/data/data.hpp"
#include "tbench/errors.hpp"

namespace tbench {
namespace {

at::Generator seeded(int64_t seed) {
  return at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(seed));
}

std::vector<int64_t> clip_lengths(const torch::Tensor& drawn, int64_t min_length, int64_t max_length) {
  const auto clipped = drawn.round().clamp(static_cast<double>(min_length), static_cast<double>(max_length)).to(torch::kLong);
  return std::vector<int64_t>(clipped.data_ptr<int64_t>(), clipped.data_ptr<int64_t>() + clipped.numel());
}

}  // namespace

std::map<int64_t, double> read_length_histogram(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw input_error(path + ": cannot read the length histogram");
  std::map<int64_t, double> histogram;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.erase(hash);
    for (char& c : line) if (c == ',' || c == '\t') c = ' ';
    std::istringstream fields(line);
    int64_t length = 0;
    double count = 0;
    std::string rest;
    if (!(fields >> length)) {
      if (line.find_first_not_of(" \r") == std::string::npos) continue;  // blank line
      throw input_error(path + ":" + std::to_string(number) + ": expected 'length count', got '" + line + "'");
    }
    if (!(fields >> count) || (fields >> rest) || length < 1 || count < 0) {
      throw input_error(path + ":" + std::to_string(number) + ": expected 'length count' with length >= 1 and count >= 0, got '" + line + "'");
    }
    histogram[length] += count;
  }
  double total = 0;
  for (const auto& [length, count] : histogram) total += count;
  if (total <= 0) throw input_error(path + ": the length histogram is empty (no positive count)");
  return histogram;
}

std::vector<int64_t> sample_lengths(const LengthDistribution& d, int64_t n, int64_t max_length, int64_t seed) {
  // Lengths get their own stream, so a distribution change leaves the token ids as they were.
  auto generator = seeded(seed * 7919 + 17);
  const int64_t low = std::min(d.min_length, max_length);
  if (d.kind == LengthDistributionKind::fixed) return std::vector<int64_t>(static_cast<std::size_t>(n), max_length);
  if (d.kind == LengthDistributionKind::uniform) {
    const auto drawn = torch::randint(low, max_length + 1, {n}, generator, torch::kLong);
    return std::vector<int64_t>(drawn.data_ptr<int64_t>(), drawn.data_ptr<int64_t>() + n);
  }
  if (d.kind == LengthDistributionKind::normal) {
    return clip_lengths(torch::randn({n}, generator, torch::kDouble) * d.stddev + d.mean, low, max_length);
  }
  if (d.kind == LengthDistributionKind::lognormal) {
    // The log's parameters from the length's mean and deviation: real text lengths are right-skewed.
    const double sigma2 = std::log(1.0 + (d.stddev * d.stddev) / (d.mean * d.mean));
    const double mu = std::log(d.mean) - sigma2 / 2;
    return clip_lengths((torch::randn({n}, generator, torch::kDouble) * std::sqrt(sigma2) + mu).exp(), low, max_length);
  }
  if (d.kind == LengthDistributionKind::histogram) {
    std::vector<double> weights;
    std::vector<int64_t> values;
    for (const auto& [length, weight] : d.histogram) {
      values.push_back(length);
      weights.push_back(weight);
    }
    const auto picks = torch::multinomial(torch::tensor(weights, torch::kDouble), n, /*replacement=*/true, generator);
    std::vector<int64_t> lengths;
    for (const int64_t* pick = picks.data_ptr<int64_t>(); pick != picks.data_ptr<int64_t>() + n; ++pick) {
      lengths.push_back(std::clamp(values[static_cast<std::size_t>(*pick)], low, max_length));
    }
    return lengths;
  }
  throw input_error(std::string("data.lengths.distribution: unknown distribution '") + to_string(d.kind) + "'");
}

TokenizedSamples make_synthetic_samples(const SyntheticOptions& o) {
  auto generator = seeded(o.seed);
  auto ids = torch::randint(0, o.vocab_size, {o.num_samples, o.seq_len}, generator, torch::kLong);
  // Keep the padding id out of real text: it changes RoBERTa's position ids and masks nothing.
  ids.masked_fill_(ids.eq(o.pad_token_id), (o.pad_token_id + 1) % o.vocab_size);
  const auto labels = ids.select(1, 1).remainder(o.num_labels).contiguous();
  const auto lengths = sample_lengths(o.lengths, o.num_samples, o.seq_len, o.seed);

  TokenizedSamples samples;
  samples.ids.reserve(static_cast<std::size_t>(o.num_samples * o.seq_len));
  const int64_t* row = ids.data_ptr<int64_t>();
  const int64_t* label = labels.data_ptr<int64_t>();
  for (int64_t i = 0; i < o.num_samples; ++i, row += o.seq_len) {
    samples.ids.insert(samples.ids.end(), row, row + lengths[static_cast<std::size_t>(i)]);
    samples.offsets.push_back(static_cast<int64_t>(samples.ids.size()));
    samples.labels.push_back(label[i]);
  }
  return samples;
}

}  // namespace tbench
