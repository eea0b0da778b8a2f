#pragma once
// Mixed precision: autocast regions for bf16/fp16 on LibTorch 1.13 and 2.x alike.
#include <torch/torch.h>

#include "tbench/spec/spec.hpp"

namespace tbench {

// Enables autocast to the precision's dtype on `device` for its lifetime (no-op for fp32).
// On exit from the outermost region it clears autocast's cache of cast weights: in C++ nothing
// else does, and a stale cache would feed the next step the previous step's weights.
class AutocastGuard {
 public:
  AutocastGuard(Precision precision, const torch::Device& device);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool active_ = false;
  bool cuda_ = false;
  bool was_enabled_ = false;
  torch::ScalarType previous_dtype_ = torch::kFloat;
};

torch::ScalarType autocast_dtype(Precision precision);

// Whether autocast is on now, for CUDA (`cuda`) or the CPU.
bool autocast_enabled(bool cuda);

// The dtype autocast casts to now, for CUDA (`cuda`) or the CPU (whether or not it is on).
torch::ScalarType current_autocast_dtype(bool cuda);

}  // namespace tbench
