#pragma once
// Entry points into src/cuda/, which is compiled only in CUDA builds (TBENCH_WITH_CUDA=1): call
// them only under `#if TBENCH_WITH_CUDA`. Everything else in tbench stays free of CUDA headers.
#include <cstdint>
#include <memory>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "tbench/step_timer.hpp"

namespace tbench::cuda {

// CUDA-event step timer on `device`'s current stream (src/cuda/cuda_step_timer.cpp).
std::unique_ptr<StepTimer> make_event_step_timer(const torch::Device& device);

// The caching allocator's high-water marks since the last reset (src/cuda/cuda_memory.cpp).
struct AllocatorPeaks {
  int64_t allocated_bytes = 0;  // tensors alive at the peak
  int64_t reserved_bytes = 0;   // what the allocator held from the driver at its peak
};
void reset_allocator_peaks(int device_index);
AllocatorPeaks allocator_peaks(int device_index);

// Runtime, driver, cuDNN and per-device facts for `env.cuda` (src/cuda/cuda_env.cpp).
nlohmann::json runtime_info();
nlohmann::json device_info(int device_index);

}  // namespace tbench::cuda
