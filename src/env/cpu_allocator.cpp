#include "tbench/env/cpu_allocator.hpp"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace tbench {
namespace {

// Every block starts with a header holding its size, so the deleter needs no lookup; the data
// after it keeps LibTorch's 64-byte alignment (enough for AVX-512). The context is the data
// pointer itself, as raw_allocate()/raw_deallocate() (used inside some LibTorch kernels) require.
constexpr std::size_t kAlignment = 64;
constexpr std::size_t kHeaderBytes = kAlignment;
constexpr std::size_t kPageBytes = 4096;

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

class CachingCpuAllocator final : public c10::Allocator {
 public:
  explicit CachingCpuAllocator(std::size_t limit) { stats_.cache_limit_bytes = limit; }

  // LibTorch 1.13 declares allocate() const, 2.3 and later non-const: defining both overrides
  // whichever the build has (the other is an ordinary member).
  c10::DataPtr allocate(std::size_t n) const { return allocate_block(n); }
  c10::DataPtr allocate(std::size_t n) { return allocate_block(n); }
  // Pure virtual from LibTorch 2.3 on (Allocator::clone uses it); unused before.
  void copy_data(void* dest, const void* src, std::size_t count) const { std::memcpy(dest, src, count); }
  c10::DeleterFnPtr raw_deleter() const override { return &CachingCpuAllocator::release; }

  void set_limit(std::size_t limit) {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.cache_limit_bytes = limit;
  }

  void empty() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [size, blocks] : free_) {
      for (void* block : blocks) std::free(block);
    }
    free_.clear();
    stats_.cached_bytes = 0;
  }

  CpuAllocatorStats stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  static void release(void* data);

 private:
  static std::size_t block_bytes(std::size_t n) {
    const std::size_t total = kHeaderBytes + n;
    return total < kCachedBlockMinBytes ? round_up(total, kAlignment) : round_up(total, kPageBytes);
  }

  c10::DataPtr allocate_block(std::size_t n) const {
    const std::size_t bytes = block_bytes(n);
    void* block = bytes >= kCachedBlockMinBytes ? take_cached(bytes) : nullptr;
    if (block == nullptr) {
      block = std::aligned_alloc(kAlignment, bytes);
      if (block == nullptr) throw std::bad_alloc();
    }
    std::memcpy(block, &bytes, sizeof(bytes));
    void* data = static_cast<char*>(block) + kHeaderBytes;
    return {data, data, &CachingCpuAllocator::release, c10::Device(c10::DeviceType::CPU)};
  }

  void* take_cached(std::size_t bytes) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(bytes);
    if (it == free_.end() || it->second.empty()) {
      stats_.misses += 1;
      return nullptr;
    }
    void* block = it->second.back();
    it->second.pop_back();
    stats_.cached_bytes -= bytes;
    stats_.hits += 1;
    return block;
  }

  // Keeps the block unless the cache is full: then it goes back to malloc, so a working set
  // larger than the limit keeps the blocks cached first rather than churning the whole cache.
  void give_back(void* block, std::size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stats_.cached_bytes + bytes <= stats_.cache_limit_bytes) {
        free_[bytes].push_back(block);
        stats_.cached_bytes += bytes;
        stats_.peak_cached_bytes = std::max(stats_.peak_cached_bytes, stats_.cached_bytes);
        return;
      }
      stats_.released += 1;
    }
    std::free(block);
  }

  mutable std::mutex mutex_;
  mutable std::unordered_map<std::size_t, std::vector<void*>> free_;
  mutable CpuAllocatorStats stats_;
};

// Never destroyed: tensors freed during static destruction still find it.
CachingCpuAllocator* the_allocator = nullptr;
std::mutex install_mutex;

void CachingCpuAllocator::release(void* data) {
  void* block = static_cast<char*>(data) - kHeaderBytes;
  std::size_t bytes = 0;
  std::memcpy(&bytes, block, sizeof(bytes));
  if (bytes < kCachedBlockMinBytes) {
    std::free(block);
    return;
  }
  the_allocator->give_back(block, bytes);
}

}  // namespace

std::size_t default_cpu_cache_limit() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return std::size_t{1} << 30;
  return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page_size) / 4;
}

bool install_caching_cpu_allocator(std::size_t cache_limit_bytes) {
  std::lock_guard<std::mutex> lock(install_mutex);
  if (the_allocator == nullptr) {
    the_allocator = new CachingCpuAllocator(cache_limit_bytes);
  } else {
    the_allocator->set_limit(cache_limit_bytes);
  }
  // Priority 1: above LibTorch's default CPU allocator (registered at 0).
  c10::SetCPUAllocator(the_allocator, /*priority=*/1);
  return c10::GetCPUAllocator() == the_allocator;
}

void use_system_cpu_allocator() {
  std::lock_guard<std::mutex> lock(install_mutex);
  if (the_allocator == nullptr) return;
  c10::SetCPUAllocator(c10::GetDefaultCPUAllocator(), /*priority=*/1);
  the_allocator->empty();
}

void empty_cpu_cache() {
  std::lock_guard<std::mutex> lock(install_mutex);
  if (the_allocator != nullptr) the_allocator->empty();
}

CpuAllocatorStats cpu_allocator_stats() {
  std::lock_guard<std::mutex> lock(install_mutex);
  if (the_allocator == nullptr) return {};
  CpuAllocatorStats stats = the_allocator->stats();
  stats.installed = c10::GetCPUAllocator() == the_allocator;
  return stats;
}

}  // namespace tbench
