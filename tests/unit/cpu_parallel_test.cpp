// cpu_parallel_for: tbench's CPU kernels really run on LibTorch's intra-op threads (at::parallel_for
// from a file built without OpenMP would run them all on the caller), cover their range exactly
// once in grain-sized pieces, and stay serial where they must.
#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "tbench/cpu_parallel.hpp"

namespace tbench {
namespace {

struct Calls {
  std::mutex mutex;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  std::set<std::thread::id> threads;
};

void run(int64_t n, int64_t grain, Calls& calls) {
  cpu_parallel_for(n, grain, [&](int64_t begin, int64_t end) {
    std::lock_guard<std::mutex> lock(calls.mutex);
    calls.ranges.emplace_back(begin, end);
    calls.threads.insert(std::this_thread::get_id());
  });
}

class CpuParallel : public ::testing::Test {
 protected:
  void TearDown() override { torch::set_num_threads(threads_); }
  int threads_ = torch::get_num_threads();
};

TEST_F(CpuParallel, SplitsTheRangeOverLibTorchsThreads) {
  torch::set_num_threads(2);
  Calls calls;
  run(1000, 10, calls);
  EXPECT_EQ(calls.threads.size(), 2u) << "every range ran on one thread";
}

TEST_F(CpuParallel, CoversTheRangeOnceInWholeGrains) {
  torch::set_num_threads(2);
  for (const int64_t n : {1, 9, 10, 11, 1001, 4096}) {
    Calls calls;
    run(n, 10, calls);
    std::vector<int> seen(static_cast<std::size_t>(n), 0);
    for (const auto& [begin, end] : calls.ranges) {
      ASSERT_LT(begin, end) << "n = " << n;
      if (end != n) {
        EXPECT_EQ((end - begin) % 10, 0) << "n = " << n << ": [" << begin << ", " << end << ")";
      }
      for (int64_t i = begin; i < end; ++i) seen[static_cast<std::size_t>(i)] += 1;
    }
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(seen[static_cast<std::size_t>(i)], 1) << "n = " << n << ", i = " << i;
    if (n > 10) {
      EXPECT_GE(calls.ranges.size(), 2u) << "n = " << n << " ran as one range";
    }
  }
}

TEST_F(CpuParallel, StaysSerialAtOneThreadAndInsideAParallelRegion) {
  torch::set_num_threads(1);
  Calls one;
  run(1000, 10, one);
  EXPECT_EQ(one.ranges.size(), 1u);
  EXPECT_EQ(one.threads.size(), 1u);

  torch::set_num_threads(2);
  Calls outer, inner;
  run(2, 1, outer);
  ASSERT_EQ(outer.ranges.size(), 2u);
  cpu_parallel_for(2, 1, [&](int64_t, int64_t) { run(1000, 10, inner); });
  EXPECT_EQ(inner.ranges.size(), 2u) << "a call inside a parallel region split its range again";
}

TEST_F(CpuParallel, NothingToDoForAnEmptyRange) {
  Calls calls;
  run(0, 10, calls);
  EXPECT_TRUE(calls.ranges.empty());
}

TEST_F(CpuParallel, RethrowsABodysException) {
  torch::set_num_threads(2);
  EXPECT_THROW(cpu_parallel_for(1000, 10,
                                [](int64_t begin, int64_t) {
                                  if (begin > 0) throw std::runtime_error("from a worker");
                                }),
               std::runtime_error);
}

}  // namespace
}  // namespace tbench
