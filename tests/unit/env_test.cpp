// The machine description: NVML is optional at run time, the CUDA arch list comes from LibTorch's
// build configuration, and TF32 switches are recorded.
#include <gtest/gtest.h>

#include "tbench/env.hpp"

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

}  // namespace
}  // namespace tbench
