#include "tbench/env/cpu_allocator.hpp"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>
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
  // whichever the build has (the other is an ordinary member), so neither can say `override`
  // (clang warns about that; the fuzz build compiles with clang).
#ifdef __clang__
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Winconsistent-missing-override"
#endif
  c10::DataPtr allocate(std::size_t n) const { return allocate_block(n); }
  c10::DataPtr allocate(std::size_t n) { return allocate_block(n); }
#ifdef __clang__
#pragma clang diagnostic pop
#endif
  // Pure virtual from LibTorch 2.3 on (Allocator::clone uses it); unused before.
  void copy_data(void* dest, const void* src, std::size_t count) const { std::memcpy(dest, src, count); }
  c10::DeleterFnPtr raw_deleter() const override { return &CachingCpuAllocator::release; }

  void set_limit(std::size_t limit) {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.cache_limit_bytes = limit;
    if (stats_.cached_bytes > limit) empty_locked();
  }

  void empty() {
    std::lock_guard<std::mutex> lock(mutex_);
    empty_locked();
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
    const c10::Device cpu(c10::DeviceType::CPU);
    if (n == 0) return {nullptr, nullptr, &CachingCpuAllocator::release, cpu};
    TORCH_CHECK(n <= std::numeric_limits<std::size_t>::max() - 2 * kPageBytes,
                "DefaultCPUAllocator: can't allocate memory: you tried to allocate ", n, " bytes");
    std::size_t bytes = block_bytes(n);
    void* block = nullptr;
    if (bytes >= kCachedBlockMinBytes) std::tie(block, bytes) = take_cached(bytes);
    if (block == nullptr) block = std::aligned_alloc(kAlignment, bytes);
    if (block == nullptr) {  // the cached blocks may be what is missing
      const_cast<CachingCpuAllocator*>(this)->empty();
      block = std::aligned_alloc(kAlignment, bytes);
    }
    // LibTorch's own wording, which the trainer recognises as out of memory.
    TORCH_CHECK(block != nullptr, "DefaultCPUAllocator: can't allocate memory: you tried to allocate ", n, " bytes");
    std::memcpy(block, &bytes, sizeof(bytes));
    void* data = static_cast<char*>(block) + kHeaderBytes;
    return {data, data, &CachingCpuAllocator::release, cpu};
  }

  // The smallest cached block of `bytes` up to twice that, and its size; {nullptr, bytes} if none.
  // With shapes that change from step to step (dynamic padding, model.unpad) a size rarely comes
  // back exactly, and a block of the exact size only would miss every step: a fresh block from
  // malloc, whose pages fault in as the kernel first writes them (on the 2-core VM that made
  // unpadded bert-base's GELU 8x slower than on the padded batch, whose sizes repeat).
  std::pair<void*, std::size_t> take_cached(std::size_t bytes) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto fit = free_.lower_bound(bytes);  // free_ holds only sizes with blocks
    if (fit == free_.end() || fit->first > 2 * bytes) {
      stats_.misses += 1;
      return {nullptr, bytes};
    }
    const std::size_t size = fit->first;
    void* block = fit->second.blocks.back();
    fit->second.blocks.pop_back();
    if (fit->second.blocks.empty()) free_.erase(fit);
    stats_.cached_bytes -= size;
    stats_.hits += 1;
    return {block, size};
  }

  // Keeps the block. When the cache is full, blocks of the sizes used least recently (a block is
  // in use until it comes back here) go back to malloc first: with dynamic shapes, old sizes may
  // never come again. If that does not make room, this block goes instead. After
  // use_system_cpu_allocator() nothing is kept.
  void give_back(void* block, std::size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (c10::GetCPUAllocator() == this) {
        if (stats_.cached_bytes + bytes > stats_.cache_limit_bytes) evict_stalest(bytes);
        if (stats_.cached_bytes + bytes <= stats_.cache_limit_bytes) {
          SizeClass& size_class = free_[bytes];
          size_class.blocks.push_back(block);
          size_class.last_used = ++tick_;
          stats_.cached_bytes += bytes;
          stats_.peak_cached_bytes = std::max(stats_.peak_cached_bytes, stats_.cached_bytes);
          return;
        }
      }
      stats_.released += 1;
    }
    std::free(block);
  }

  // Frees cached blocks of other sizes, least recently used first, until `bytes` fits.
  void evict_stalest(std::size_t bytes) {
    std::vector<std::pair<uint64_t, std::size_t>> by_age;
    for (const auto& [size, size_class] : free_) {
      if (size != bytes) by_age.emplace_back(size_class.last_used, size);
    }
    std::sort(by_age.begin(), by_age.end());
    for (const auto& [age, size] : by_age) {
      const auto size_class = free_.find(size);
      auto& blocks = size_class->second.blocks;
      while (!blocks.empty() && stats_.cached_bytes + bytes > stats_.cache_limit_bytes) {
        std::free(blocks.back());
        blocks.pop_back();
        stats_.cached_bytes -= size;
        stats_.released += 1;
      }
      if (blocks.empty()) free_.erase(size_class);
      if (stats_.cached_bytes + bytes <= stats_.cache_limit_bytes) return;
    }
  }

  void empty_locked() {
    for (auto& [size, size_class] : free_) {
      for (void* block : size_class.blocks) std::free(block);
    }
    free_.clear();
    stats_.cached_bytes = 0;
  }

  struct SizeClass {
    std::vector<void*> blocks;
    uint64_t last_used = 0;  // tick_ when a block of this size last came back
  };

  mutable std::mutex mutex_;
  mutable std::map<std::size_t, SizeClass> free_;  // the sizes that have blocks, ordered for the best fit
  mutable uint64_t tick_ = 0;
  mutable CpuAllocatorStats stats_;
};

// Never destroyed: tensors freed during static destruction still find it.
CachingCpuAllocator* the_allocator = nullptr;
std::mutex install_mutex;

void CachingCpuAllocator::release(void* data) {
  if (data == nullptr) return;  // a 0-byte allocation
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
