// AutocastGuard on the CPU: bf16 regions through the per-device API (LibTorch 1.13) or the
// device-generic one (torch >= 2.4), whichever this build compiled.
#include <gtest/gtest.h>

#include "tbench/train/precision.hpp"

namespace tbench {
namespace {

torch::Tensor linear_output() {
  torch::manual_seed(3);
  const auto x = torch::randn({4, 8});
  const auto w = torch::randn({16, 8});
  return torch::linear(x, w);
}

TEST(Autocast, Bf16RegionRunsMatmulsInBf16OnCpu) {
  EXPECT_EQ(linear_output().scalar_type(), torch::kFloat);
  {
    AutocastGuard guard(Precision::bf16, torch::kCPU);
    EXPECT_EQ(linear_output().scalar_type(), torch::kBFloat16);
  }
  EXPECT_EQ(linear_output().scalar_type(), torch::kFloat) << "autocast left on after the region";
}

TEST(Autocast, Fp32IsNoRegion) {
  AutocastGuard guard(Precision::fp32, torch::kCPU);
  EXPECT_EQ(linear_output().scalar_type(), torch::kFloat);
}

TEST(Autocast, NestedRegionsRestoreTheOuterOne) {
  AutocastGuard outer(Precision::bf16, torch::kCPU);
  {
    AutocastGuard inner(Precision::bf16, torch::kCPU);
    EXPECT_EQ(linear_output().scalar_type(), torch::kBFloat16);
  }
  EXPECT_EQ(linear_output().scalar_type(), torch::kBFloat16) << "the inner region switched the outer one off";
}

// The cast-weight cache is cleared when the outermost region ends: a weight changed in place
// between two regions is seen by the second one.
TEST(Autocast, SecondRegionSeesWeightsUpdatedInBetween) {
  auto w = torch::ones({2, 2}, torch::requires_grad());
  const auto x = torch::ones({1, 2});
  torch::Tensor first, second;
  {
    AutocastGuard guard(Precision::bf16, torch::kCPU);
    first = torch::linear(x, w).to(torch::kFloat);
  }
  {
    torch::NoGradGuard no_grad;
    w.mul_(3);
  }
  {
    AutocastGuard guard(Precision::bf16, torch::kCPU);
    second = torch::linear(x, w).to(torch::kFloat);
  }
  EXPECT_TRUE(torch::allclose(second, first * 3)) << first << second;
}

}  // namespace
}  // namespace tbench
