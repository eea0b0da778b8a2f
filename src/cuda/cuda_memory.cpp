// NOT COMPILED in the CPU build: src/cuda/ builds only with a CUDA LibTorch (TBENCH_WITH_CUDA).
// Written against torch 2.x's c10::cuda::CUDACachingAllocator.
//
// The caching allocator's own high-water marks, as torch.cuda.max_memory_allocated() and
// max_memory_reserved() report them: "allocated" is what live tensors held at the peak,
// "reserved" what the allocator had taken from the driver (allocated + its cache), which is
// what decides an out-of-memory.
#include <ATen/ATen.h>
#include <c10/cuda/CUDACachingAllocator.h>

#include "tbench/cuda/cuda.hpp"

namespace tbench::cuda {
namespace {

// Index 0 of every stat array is the aggregate over the small and large pools in every torch
// version; the enum naming it moved between namespaces across 2.x, the index did not.
constexpr std::size_t kAggregate = 0;

// The caching allocator sizes its per-device tables when CUDA is first initialised; before that,
// torch 2.11 answers "Invalid device argument" to a stats query. An empty CUDA tensor initialises
// CUDA on every torch version (the call that does it directly was renamed across 2.x).
void ensure_allocator_initialised(int device_index) {
  (void)at::empty({0}, at::TensorOptions().device(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device_index))));
}

}  // namespace

void reset_allocator_peaks(int device_index) {
  ensure_allocator_initialised(device_index);
  c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(device_index));
}

AllocatorPeaks allocator_peaks(int device_index) {
  ensure_allocator_initialised(device_index);
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device_index));
  AllocatorPeaks peaks;
  peaks.allocated_bytes = stats.allocated_bytes[kAggregate].peak;
  peaks.reserved_bytes = stats.reserved_bytes[kAggregate].peak;
  return peaks;
}

}  // namespace tbench::cuda
