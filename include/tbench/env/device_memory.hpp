#pragma once
// Memory high-water marks per epoch: the CUDA caching allocator's peaks (reset at each epoch's
// start) and the process's peak resident set. -1 where a figure does not exist (no allocator
// statistics on CPU).
#include <cstdint>

#include <torch/torch.h>

namespace tbench {

struct MemoryPeaks {
  int64_t allocated_bytes = -1;  // CUDA: tensors alive at the peak (torch.cuda.max_memory_allocated)
  int64_t reserved_bytes = -1;   // CUDA: held by the caching allocator at its peak (max_memory_reserved)
  int64_t rss_bytes = -1;        // the process's peak resident set so far (VmHWM), CPU and GPU runs
};

// Starts a new high-water mark for the allocator of `device` (nothing to do on CPU).
void reset_memory_peaks(const torch::Device& device);
MemoryPeaks memory_peaks(const torch::Device& device);

}  // namespace tbench
