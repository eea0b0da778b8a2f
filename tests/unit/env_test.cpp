// The machine description: NVML is optional at run time, the CUDA arch list comes from LibTorch's
// build configuration, and TF32 switches are recorded.
#include <atomic>
#include <chrono>

#include <gtest/gtest.h>

#include <torch/torch.h>

#include "tbench/env/cpu_peak.hpp"
#include "tbench/env/env.hpp"

namespace tbench {
namespace {

TEST(Nvml, AMissingLibraryIsReportedNotFatal) {
  const auto info = nvml_info("libtbench-no-such-nvml.so.1");
  EXPECT_FALSE(info["available"].get<bool>());
  const std::string status = info["status"];
  EXPECT_EQ(status.rfind("not available (", 0), 0u) << status;
  EXPECT_NE(status.find("libtbench-no-such-nvml.so.1"), std::string::npos) << status;
}

TEST(Nvml, ALibraryWithoutNvmlSymbolsIsNotAvailable) {
  const auto info = nvml_info("libm.so.6");
  EXPECT_FALSE(info["available"].get<bool>());
  EXPECT_NE(info["status"].get<std::string>().find("missing symbol nvmlInit_v2"), std::string::npos) << info.dump();
}

// Whatever this machine has, the default probe answers with a well-formed entry.
TEST(Nvml, TheDefaultProbeAlwaysAnswers) {
  const auto info = nvml_info();
  ASSERT_TRUE(info["available"].is_boolean());
  ASSERT_TRUE(info["status"].is_string());
  if (info["available"].get<bool>()) {
    EXPECT_TRUE(info["devices"].is_array());
  }
  EXPECT_EQ(collect_env()["nvml"]["available"], info["available"]);
}

TEST(CudaArchList, ParsedFromTheNvccFlagsOfShowConfig) {
  const std::string config =
      "PyTorch built with:\n  - CUDA Runtime 12.8\n"
      "  - NVCC architecture flags: -gencode;arch=compute_80,code=sm_80;-gencode;arch=compute_90,code=sm_90;"
      "-gencode;arch=compute_90,code=compute_90;-gencode;arch=compute_100,code=[sm_100,compute_100]\n"
      "  - CuDNN 9.1\n";
  EXPECT_EQ(cuda_arch_list(config),
            (std::vector<std::string>{"sm_80", "sm_90", "compute_90", "sm_100", "compute_100"}));
  EXPECT_TRUE(cuda_arch_list("PyTorch built with:\n  - CPU capability usage: AVX2\n").empty());
}

TEST(Tf32, SwitchesAreSetAndRecorded) {
  set_cuda_tf32(true);
  EXPECT_EQ(tf32_state(), (nlohmann::json{{"matmul", true}, {"cudnn", true}}));
  EXPECT_EQ(collect_env()["cuda"]["tf32"]["matmul"], true);
  set_cuda_tf32(false);
  EXPECT_EQ(tf32_state(), (nlohmann::json{{"matmul", false}, {"cudnn", false}}));
}

// The probe must not move the global RNG: dropout masks and weights would then depend on it.
TEST(CpuPeak, TheProbeLeavesTheGlobalRngAlone) {
  CpuPeakProbe probe;
  probe.shapes = transformer_gemm_shapes(16, 8, 32);
  probe.trials = 1;
  probe.trial_seconds = 0.001;
  torch::manual_seed(7);
  const auto expected = torch::rand({4});
  torch::manual_seed(7);
  const CpuPeak peak = measure_cpu_peak(probe);
  EXPECT_TRUE(torch::equal(torch::rand({4}), expected));
  EXPECT_GT(peak.flops_per_s, 0);
  EXPECT_NE(peak.how.find("16x8x32"), std::string::npos) << peak.how;
  EXPECT_NE(peak.how.find("1024x1024x1024"), std::string::npos) << peak.how;
}

// A stop (Ctrl-C after a run's epochs) ends the probe at its next GEMM call, with no rate: its
// trials would otherwise take 4 GEMMs x 3 trials x 10 s here.
TEST(CpuPeak, AStopEndsTheProbeWithNoRate) {
  CpuPeakProbe probe;
  probe.shapes = transformer_gemm_shapes(16, 8, 32);
  probe.trial_seconds = 10;
  std::atomic<bool> stop{true};
  probe.stop = &stop;
  const auto start = std::chrono::steady_clock::now();
  const CpuPeak peak = measure_cpu_peak(probe);
  EXPECT_EQ(peak.flops_per_s, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(CpuPeak, ProbesTheLayersOwnGemmsCappedInRows) {
  const auto shapes = transformer_gemm_shapes(32 * 512, 768, 3072);
  ASSERT_EQ(shapes.size(), 3u);
  // Rows capped so a call is at most 8 GFLOP (1664 x 768 x 3072 x 2 = 7.85e9): the rate has
  // plateaued long before that.
  EXPECT_EQ(shapes[0].text(), "1664x768x3072");
  EXPECT_EQ(shapes[1].text(), "1664x3072x768");
  EXPECT_EQ(shapes[2].text(), "768x1664x3072");
  EXPECT_EQ(transformer_gemm_shapes(1000, 128, 512)[0].text(), "1000x128x512");  // small: as asked
  EXPECT_EQ(transformer_gemm_shapes(100000, 8, 32)[0].text(), "4096x8x32");      // never above 4096
}

}  // namespace
}  // namespace tbench
