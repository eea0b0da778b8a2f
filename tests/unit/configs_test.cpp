// Every spec shipped in configs/ is valid as it is (GPU specs: valid up to the device check on a
// machine without CUDA).
#include <gtest/gtest.h>

#include <filesystem>

#include "tbench/errors.hpp"
#include "tbench/run/runner.hpp"

namespace tbench {
namespace {

TEST(Configs, EveryShippedSpecValidates) {
  int checked = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(TBENCH_SOURCE_DIR "/configs")) {
    if (entry.path().extension() != ".json" && entry.path().extension() != ".yaml") continue;
    ++checked;
    try {
      const RunPlan plan = prepare_run(load_spec(entry.path().string(), {}));
      EXPECT_GT(plan.steps.total_steps, 0) << entry.path();
    } catch (const Error& e) {
      const bool needs_gpu = std::string(e.what()).find("no CUDA device is available") != std::string::npos;
      EXPECT_TRUE(needs_gpu && !torch::cuda::is_available()) << e.what();
    }
  }
  EXPECT_GE(checked, 10);
}

}  // namespace
}  // namespace tbench
