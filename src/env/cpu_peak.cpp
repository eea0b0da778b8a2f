#include "tbench/env/cpu_peak.hpp"

#include <algorithm>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "tbench/timing/clock.hpp"
#include "tbench/text.hpp"

namespace tbench {
namespace {

// Large enough for the BLAS to reach its plateau, small enough that the probe stays short: rows
// are capped, and so is one call's work (a GEMM of 1024 x 768 x 3072, 4.8 GFLOP, already ran at
// this 2-core VM's FMA limit).
constexpr int64_t kMaxRows = 4096;
constexpr int64_t kMinRows = 64;
constexpr double kMaxFlopsPerCall = 8e9;
constexpr int64_t kSquareSide = 1024;
constexpr uint64_t kProbeSeed = 0x7beec;

bool stopped(const CpuPeakProbe& probe) { return probe.stop && probe.stop->load(); }

// The best rate of `trials` timed trials of one GEMM (after one untimed call that sizes the
// thread pool and the BLAS's buffers); 0 once the probe is stopped.
double best_rate(const GemmShape& shape, torch::ScalarType dtype, const CpuPeakProbe& probe, at::Generator& generator) {
  torch::NoGradGuard no_grad;
  const auto a = torch::randn({shape.m, shape.k}, generator).to(dtype);
  const auto b = torch::randn({shape.k, shape.n}, generator).to(dtype);
  auto c = torch::mm(a, b);
  const double flops = 2.0 * static_cast<double>(shape.m) * static_cast<double>(shape.k) * static_cast<double>(shape.n);
  double best = 0;
  for (int trial = 0; trial < probe.trials; ++trial) {
    int calls = 0;
    const auto start = Clock::now();
    double elapsed = 0;
    while (elapsed < probe.trial_seconds || calls < 2) {
      if (stopped(probe)) return 0;
      c = torch::mm(a, b);
      ++calls;
      elapsed = seconds_since(start);
    }
    best = std::max(best, flops * calls / elapsed);
  }
  return best;
}

}  // namespace

std::string GemmShape::text() const { return std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n); }

std::vector<GemmShape> transformer_gemm_shapes(int64_t rows, int64_t hidden, int64_t intermediate) {
  const auto flops_cap = static_cast<int64_t>(kMaxFlopsPerCall / (2.0 * static_cast<double>(hidden * intermediate)));
  const int64_t cap = std::max(kMinRows, std::min(kMaxRows, flops_cap / kMinRows * kMinRows));
  const int64_t r = std::clamp<int64_t>(rows, 1, cap);
  return {{r, hidden, intermediate},   // forward: x W1
          {r, intermediate, hidden},   // backward: dY W1^T (and the forward of W2)
          {hidden, r, intermediate}};  // backward: x^T dY, the weight gradient
}

CpuPeak measure_cpu_peak(const CpuPeakProbe& probe) {
  const int previous_threads = torch::get_num_threads();
  torch::set_num_threads(probe.threads);
  auto generator = at::detail::createCPUGenerator(kProbeSeed);
  const auto dtype = probe.bf16 ? torch::kBFloat16 : torch::kFloat;
  std::vector<GemmShape> shapes = probe.shapes;
  shapes.push_back({kSquareSide, kSquareSide, kSquareSide});
  CpuPeak peak;
  std::string fastest;
  for (const auto& shape : shapes) {
    if (stopped(probe)) break;  // not even the next shape's operands and untimed call
    const double rate = best_rate(shape, dtype, probe, generator);
    if (rate > peak.flops_per_s) {
      peak.flops_per_s = rate;
      fastest = shape.text();
    }
  }
  torch::set_num_threads(previous_threads);
  if (stopped(probe)) return {};
  std::vector<std::string> tried;
  for (const auto& shape : shapes) tried.push_back(shape.text());
  peak.how = "best of " + std::to_string(probe.trials) + " trials of >= " +
             std::to_string(static_cast<int>(probe.trial_seconds * 1000)) + " ms each of " +
             (probe.bf16 ? "bf16" : "fp32") + " matmuls " + join(tried) + " (fastest " + fastest + "), " +
             std::to_string(probe.threads) + " thread(s)";
  return peak;
}

}  // namespace tbench
