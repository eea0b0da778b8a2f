#include "tbench/env/device_memory.hpp"

#include "tbench/env/env.hpp"

#if TBENCH_WITH_CUDA
#include "tbench/cuda/cuda.hpp"
#endif

namespace tbench {
#if TBENCH_WITH_CUDA
namespace {

int index_of(const torch::Device& device) { return device.has_index() ? device.index() : 0; }

}  // namespace
#endif

void reset_memory_peaks(const torch::Device& device) {
#if TBENCH_WITH_CUDA
  if (device.is_cuda()) cuda::reset_allocator_peaks(index_of(device));
#endif
  (void)device;
}

MemoryPeaks memory_peaks(const torch::Device& device) {
  MemoryPeaks peaks;
#if TBENCH_WITH_CUDA
  if (device.is_cuda()) {
    const auto allocator = cuda::allocator_peaks(index_of(device));
    peaks.allocated_bytes = allocator.allocated_bytes;
    peaks.reserved_bytes = allocator.reserved_bytes;
  }
#endif
  const int64_t rss = peak_rss_bytes();
  peaks.rss_bytes = rss > 0 ? rss : -1;
  return peaks;
}

}  // namespace tbench
