// The caching CPU allocator: a freed block of a size comes back for the next tensor of that size,
// small blocks and blocks over the limit go back to malloc, LibTorch's raw interface works, and
// the system allocator can be put back.
#include <gtest/gtest.h>

#include <c10/core/CPUAllocator.h>
#include <torch/torch.h>

#include <cstdint>

#include "tbench/env/cpu_allocator.hpp"

namespace tbench {
namespace {

constexpr std::size_t kGiB = std::size_t{1} << 30;

// Installs the cache for one test and puts LibTorch's allocator back after it.
class CachingCpuAllocatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(install_caching_cpu_allocator(kGiB));
    empty_cpu_cache();
  }
  void TearDown() override { use_system_cpu_allocator(); }
};

TEST_F(CachingCpuAllocatorTest, AFreedBlockServesTheNextTensorOfItsSize) {
  const auto before = cpu_allocator_stats();
  void* first = nullptr;
  {
    auto t = torch::ones({256, 1024});  // 1 MiB
    first = t.data_ptr();
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(first) % 64, 0u) << "LibTorch's 64-byte alignment";
  }
  EXPECT_GE(cpu_allocator_stats().cached_bytes, std::size_t{1} << 20);
  auto again = torch::empty({256, 1024});
  EXPECT_EQ(again.data_ptr(), first);
  const auto after = cpu_allocator_stats();
  EXPECT_EQ(after.hits, before.hits + 1);
  EXPECT_TRUE(after.installed);
  // A reused block holds whatever was there: tensors from it are written before they are read.
  again.fill_(2.0f);
  EXPECT_EQ(again.sum().item<float>(), 2.0f * 256 * 1024);
}

// Shapes that change from step to step (dynamic padding, model.unpad) rarely ask for a size
// twice: a cached block serves any tensor from half its size up, the smallest such block first.
TEST_F(CachingCpuAllocatorTest, AFreedBlockServesSmallerTensorsDownToHalfItsSize) {
  void* big = nullptr;
  void* bigger = nullptr;
  {
    auto a = torch::empty({256, 1024});  // 1 MiB
    auto b = torch::empty({400, 1024});  // ~1.6 MiB
    big = a.data_ptr();
    bigger = b.data_ptr();
  }
  const auto before = cpu_allocator_stats();
  {
    auto t = torch::empty({200, 1024});  // ~0.8 MiB: the 1 MiB block is the best fit
    EXPECT_EQ(t.data_ptr(), big);
    auto u = torch::empty({210, 1024});  // the 1.6 MiB block is within twice its size
    EXPECT_EQ(u.data_ptr(), bigger);
  }
  EXPECT_EQ(cpu_allocator_stats().hits, before.hits + 2);
  auto small = torch::empty({100, 1024});  // 0.4 MiB: under half of either
  EXPECT_NE(small.data_ptr(), big);
  EXPECT_NE(small.data_ptr(), bigger);
  EXPECT_EQ(cpu_allocator_stats().misses, before.misses + 1);
}

TEST_F(CachingCpuAllocatorTest, SmallBlocksGoStraightToMalloc) {
  const auto before = cpu_allocator_stats();
  { auto t = torch::ones({16}); }
  const auto after = cpu_allocator_stats();
  EXPECT_EQ(after.cached_bytes, before.cached_bytes);
  EXPECT_EQ(after.misses, before.misses) << "blocks under kCachedBlockMinBytes are not looked up";
}

TEST_F(CachingCpuAllocatorTest, ABlockThatWouldPassTheLimitIsReleased) {
  ASSERT_TRUE(install_caching_cpu_allocator(512 * 1024));  // room for no 1 MiB block
  const auto before = cpu_allocator_stats();
  { auto t = torch::ones({256, 1024}); }
  const auto after = cpu_allocator_stats();
  EXPECT_EQ(after.released, before.released + 1);
  EXPECT_EQ(after.cached_bytes, 0u);
  EXPECT_EQ(after.peak_cached_bytes, before.peak_cached_bytes) << "nothing was cached";
}

TEST_F(CachingCpuAllocatorTest, AFullCacheGivesUpTheSizesNotUsedLately) {
  ASSERT_TRUE(install_caching_cpu_allocator(std::size_t{3} << 19));  // 1.5 MiB: one 1 MiB block fits
  { auto old_size = torch::ones({256, 1024}); }                        // 1 MiB, cached
  const auto before = cpu_allocator_stats();
  { auto new_size = torch::ones({300, 1024}); }                        // ~1.2 MiB: the old one must go
  const auto after = cpu_allocator_stats();
  EXPECT_EQ(after.released, before.released + 1) << "the 1 MiB block was evicted";
  EXPECT_GT(after.cached_bytes, std::size_t{1} << 20);
  EXPECT_LE(after.cached_bytes, after.cache_limit_bytes);
  auto again = torch::empty({300, 1024});
  EXPECT_EQ(cpu_allocator_stats().hits, after.hits + 1) << "the newer size is the one kept";
}

TEST_F(CachingCpuAllocatorTest, ZeroBytesAndOutOfMemoryAreLibTorchs) {
  auto empty = torch::empty({0});
  EXPECT_EQ(empty.numel(), 0);
  try {
    auto huge = torch::empty({int64_t{1} << 60}, torch::kByte);
    FAIL() << "2^60 bytes should not be allocatable";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("can't allocate memory"), std::string::npos) << e.what();
  }
}

TEST_F(CachingCpuAllocatorTest, TheRawInterfaceLibTorchKernelsUseWorks) {
  c10::Allocator* allocator = c10::GetCPUAllocator();
  ASSERT_NE(allocator->raw_deleter(), nullptr);
  void* p = allocator->raw_allocate(1 << 20);
  static_cast<char*>(p)[(1 << 20) - 1] = 1;
  allocator->raw_deallocate(p);
  void* q = allocator->raw_allocate(1 << 20);
  EXPECT_EQ(q, p) << "the raw block went back to the cache";
  allocator->raw_deallocate(q);
}

TEST_F(CachingCpuAllocatorTest, TrainingStepsStopMissingAfterTheFirst) {
  auto w = torch::randn({512, 512}, torch::requires_grad());
  const auto step = [&] {
    auto loss = torch::relu(torch::randn({256, 512}).matmul(w)).pow(2).mean();
    loss.backward();
    w.mutable_grad() = torch::Tensor();
  };
  step();
  const auto warm = cpu_allocator_stats();
  for (int i = 0; i < 3; ++i) step();
  EXPECT_EQ(cpu_allocator_stats().misses, warm.misses) << "the same sizes every step: all hits";
}

// A batch's length changing within a factor of two (dynamic padding, model.unpad): once the
// longest has run, the steps stop missing.
TEST_F(CachingCpuAllocatorTest, StepsOfChangingLengthsStopMissingOnceTheLongestRan) {
  auto w = torch::randn({512, 512}, torch::requires_grad());
  const auto step = [&](int64_t rows) {
    auto loss = torch::relu(torch::randn({rows, 512}).matmul(w)).pow(2).mean();
    loss.backward();
    w.mutable_grad() = torch::Tensor();
  };
  step(256);
  const auto warm = cpu_allocator_stats();
  for (const int64_t rows : {200, 160, 240, 131}) step(rows);
  EXPECT_EQ(cpu_allocator_stats().misses, warm.misses) << "every shorter step reuses the longest one's blocks";
}

TEST_F(CachingCpuAllocatorTest, TheSystemAllocatorCanBePutBack) {
  auto kept = torch::ones({256, 1024});  // allocated from the cache, freed after the switch
  use_system_cpu_allocator();
  EXPECT_EQ(c10::GetCPUAllocator(), c10::GetDefaultCPUAllocator());
  EXPECT_FALSE(cpu_allocator_stats().installed);
  kept = torch::Tensor();  // its own deleter still finds the allocator, which frees it
  EXPECT_EQ(cpu_allocator_stats().cached_bytes, 0u) << "nothing is kept once malloc is back";
  auto fresh = torch::ones({256, 1024});
  EXPECT_EQ(fresh.sum().item<float>(), 256.0f * 1024);
}

}  // namespace
}  // namespace tbench
