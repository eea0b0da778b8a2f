#pragma once
// A CPU's peak matmul rate, measured on the spot: no datasheet says what a given VM, BLAS and
// thread count sustain. It is the denominator of MFU on CPUs, so it must be an upper bound:
// the best of several trials of the model's own largest GEMMs (what its training time is made
// of), and of a square GEMM, each long enough to reach the BLAS's plateau.
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace tbench {

struct GemmShape {
  int64_t m = 0, k = 0, n = 0;  // [m, k] x [k, n]
  std::string text() const;     // "4096x768x3072"
};

// The GEMMs of one training step of a transformer layer with this hidden and feed-forward size
// on `rows` tokens: the feed-forward up-projection forward, its input gradient and its weight
// gradient. Rows are capped (at 4096, and so that one call is at most 8 GFLOP, rounded down to
// a multiple of 64) so the probe stays short on large batches and wide models.
std::vector<GemmShape> transformer_gemm_shapes(int64_t rows, int64_t hidden, int64_t intermediate);

struct CpuPeak {
  double flops_per_s = 0;
  std::string how;  // what was timed, e.g. "best of 3 trials of >= 100 ms each of bf16 matmuls 4096x768x3072, ..."
};

struct CpuPeakProbe {
  int threads = 1;
  bool bf16 = false;
  std::vector<GemmShape> shapes;  // plus a 1024^3 square
  int trials = 3;                 // per shape; the best counts
  double trial_seconds = 0.1;     // each trial repeats its GEMM at least this long
  // Read after every GEMM call: once set, the probe stops and returns no rate (Ctrl-C after a
  // run's epochs must not hold up, or lose, its result).
  const std::atomic<bool>* stop = nullptr;
};

// Times the probe's GEMMs and returns the best rate (0 where `stop` cut it short). Its operands
// come from its own generator: the global RNG that seeds dropout and weights is left untouched,
// so results do not depend on whether the probe ran.
CpuPeak measure_cpu_peak(const CpuPeakProbe& probe);

}  // namespace tbench
