#pragma once
// Dropout as every architecture here applies it: y = x · m / (1 − p), m ~ Bernoulli(1 − p) drawn
// per element while training; y = x otherwise.
//
// On CPU two kernels compute it (cpu.dropout):
// - torch: LibTorch's at::dropout. Built without MKL (as Debian's is), it draws the noise one
//   element at a time from the CPU generator under its lock (bernoulli_, ~6 ns an element on the
//   2-core test VM), divides it by 1 − p and multiplies: three passes over a float noise tensor,
//   which it keeps for backward. On XLNet that was a tenth of the step.
// - fused (the default): one parallel pass writes y and a one-byte mask, and backward reads the
//   mask. m comes from a counter-based generator: the SplitMix64 output at the element's index,
//   in a stream picked by a 64-bit key drawn from LibTorch's CPU generator. So the masks follow
//   train.seed, do not depend on the thread count, and differ between calls. The same
//   distribution as torch's; other draws.
// On CUDA LibTorch's kernel is already one pass (Philox), and is always used.
#include <cstdint>

#include <torch/torch.h>

#include "tbench/spec/spec.hpp"

namespace tbench::layers {

// Process-wide, as the spec's cpu.dropout sets it before the models are built.
void set_cpu_dropout_kernel(CpuDropoutChoice kernel);
CpuDropoutChoice cpu_dropout_kernel();

torch::Tensor dropout(const torch::Tensor& x, double p, bool training);

// What a kept element is multiplied by: 1 / (1 − p), so the output's expectation is the input's;
// 1 where nothing is dropped.
inline double keep_scale(double p) { return p > 0 ? 1.0 / (1.0 - p) : 1.0; }

// The fused kernel itself, with the key given (tests; dropout() draws it).
torch::Tensor fused_dropout(const torch::Tensor& x, double p, uint64_t key);

// torch::nn::Dropout's module (no parameters, so checkpoints are unaffected), on dropout() above.
class DropoutImpl : public torch::nn::Module {
 public:
  explicit DropoutImpl(double p) : p_(p) {}
  torch::Tensor forward(const torch::Tensor& x) { return layers::dropout(x, p_, is_training()); }
  double p() const { return p_; }

 private:
  double p_;
};
TORCH_MODULE(Dropout);

}  // namespace tbench::layers
