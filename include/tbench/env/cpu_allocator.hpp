// LibTorch's CPU allocator hands every tensor to malloc and every free back to it. A training step
// frees and re-allocates the same large buffers (activations, gradients, optimizer temporaries)
// every step; glibc serves those above its mmap threshold with fresh mmap()s, so each step pays a
// page fault and a kernel zero-fill per 4 KiB page. On a 2-core VM that was a quarter of the CPU
// time of a DistilBERT step. The caching allocator keeps freed blocks of 64 KiB and more, by
// size, and hands each out again to a tensor of its size or down to half of it (the smallest
// such block first, so shapes that change from batch to batch reuse them too): after the first
// step (with changing shapes, the largest), a step touches no new pages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tbench {

struct CpuAllocatorStats {
  bool installed = false;           // LibTorch's CPU tensors come from the cache
  std::size_t cache_limit_bytes = 0;
  int64_t hits = 0;                 // allocations served from the cache
  int64_t misses = 0;               // cacheable allocations that went to malloc
  int64_t released = 0;             // blocks given back to malloc because the cache was full
  std::size_t cached_bytes = 0;     // free blocks held now
  std::size_t peak_cached_bytes = 0;
};

// Blocks smaller than this go straight to malloc, which serves them from its heap without faults.
constexpr std::size_t kCachedBlockMinBytes = 64 * 1024;

// The default cap on free blocks held: a quarter of physical memory.
std::size_t default_cpu_cache_limit();

// Makes the caching allocator LibTorch's CPU allocator, for the rest of the process. Memory
// allocated before stays with its own allocator and is freed by it. Calling it again only changes
// the limit. Returns false if LibTorch kept another allocator (one registered with a higher priority).
bool install_caching_cpu_allocator(std::size_t cache_limit_bytes);

// Makes LibTorch's own allocator (malloc) the CPU allocator again; cached blocks are freed, and
// blocks still in use go to malloc (free) when their tensors are freed.
void use_system_cpu_allocator();

// Gives every free block back to malloc (the blocks in use stay).
void empty_cpu_cache();

CpuAllocatorStats cpu_allocator_stats();

}  // namespace tbench
