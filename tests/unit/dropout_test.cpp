// The fused CPU dropout kernel (cpu.dropout: fused) against at::dropout's contract: the share
// kept, the scale, independent draws, the same mask in backward, draws that follow the seed and
// not the thread count, and at::dropout's edge cases.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tbench/models/dropout.hpp"

namespace tbench {
namespace {

constexpr int64_t kElements = 1 << 20;  // more than one parallel chunk

// Restores the process-wide kernel and thread count a test changes.
class Dropout : public ::testing::Test {
 protected:
  void TearDown() override {
    layers::set_cpu_dropout_kernel(CpuDropoutChoice::fused);
    torch::set_num_threads(threads_);
  }
  int threads_ = torch::get_num_threads();
};

torch::Tensor kept(const torch::Tensor& y) { return y.ne(0).to(torch::kDouble); }

// Inputs the mask can be read back from: never 0 (randn gives an exact 0 about once in 10^7
// draws, which kept() would count as dropped).
torch::Tensor nonzero_values(at::IntArrayRef sizes) { return torch::rand(sizes).add_(0.5); }

TEST_F(Dropout, KeepsOneMinusPOfTheElementsScaledByItsInverse) {
  for (const double p : {0.1, 0.5}) {
    const auto x = torch::ones({kElements});
    const auto y = layers::fused_dropout(x, p, 1234);
    const auto share = kept(y).mean().item<double>();
    // 5 standard deviations of a binomial share over 2^20 draws: < 0.0025.
    EXPECT_NEAR(share, 1 - p, 5 * std::sqrt(p * (1 - p) / kElements)) << "p = " << p;
    const auto values = std::get<0>(at::_unique(y));
    ASSERT_EQ(values.numel(), 2);
    EXPECT_EQ(values[0].item<float>(), 0.0f);
    EXPECT_FLOAT_EQ(values[1].item<float>(), static_cast<float>(1.0 / (1 - p)));
  }
}

// Both halves of a 64-bit draw, and neighbouring draws, decide independently: each pair of
// neighbours is kept together (1 - p)^2 of the time, at even and at odd offsets.
TEST_F(Dropout, NeighboursAreDrawnIndependently) {
  const double p = 0.3;
  const auto k = kept(layers::fused_dropout(torch::ones({kElements}), p, 99));
  const auto even = k.slice(0, 0, kElements, 2), odd = k.slice(0, 1, kElements, 2);
  const double tolerance = 5 * std::sqrt(0.49 * 0.51 / (kElements / 2));
  EXPECT_NEAR((even * odd).mean().item<double>(), 0.49, tolerance);  // the two halves of a draw
  EXPECT_NEAR((odd.slice(0, 0, kElements / 2 - 1) * even.slice(0, 1)).mean().item<double>(), 0.49, tolerance);
}

TEST_F(Dropout, BackwardUsesTheForwardsMask) {
  const double p = 0.2;
  const auto x = nonzero_values({64, 1024}).requires_grad_(true);
  const auto y = layers::fused_dropout(x, p, 7);
  const auto upstream = torch::randn({64, 1024});
  y.backward(upstream);
  const auto expected = upstream * kept(y).to(torch::kFloat) / (1 - p);
  EXPECT_TRUE(torch::allclose(x.grad(), expected, 1e-6, 0)) << (x.grad() - expected).abs().max();
  EXPECT_TRUE(torch::allclose(y, x.detach() * kept(y).to(torch::kFloat) / (1 - p), 1e-6, 0));
}

TEST_F(Dropout, TheKeyDecidesTheMaskNotTheThreadCount) {
  const auto x = torch::randn({kElements});
  torch::set_num_threads(1);
  const auto one_thread = layers::fused_dropout(x, 0.1, 42);
  torch::set_num_threads(2);
  EXPECT_TRUE(torch::equal(layers::fused_dropout(x, 0.1, 42), one_thread));
  EXPECT_FALSE(torch::equal(layers::fused_dropout(x, 0.1, 43), one_thread));
}

TEST_F(Dropout, DrawsFollowLibTorchsSeed) {
  const auto x = torch::ones({4096});
  torch::manual_seed(5);
  const auto first = layers::dropout(x, 0.1, true), second = layers::dropout(x, 0.1, true);
  EXPECT_FALSE(torch::equal(first, second));
  torch::manual_seed(5);
  EXPECT_TRUE(torch::equal(layers::dropout(x, 0.1, true), first));
}

TEST_F(Dropout, KeepsAtDropoutsEdgeCases) {
  const auto x = torch::randn({8, 16});
  EXPECT_TRUE(layers::dropout(x, 0.1, /*training=*/false).is_same(x));
  EXPECT_TRUE(layers::dropout(x, 0.0, true).is_same(x));
  EXPECT_TRUE(torch::equal(layers::dropout(x, 1.0, true), torch::zeros_like(x)));
  // A dropped NaN or infinity still gives NaN, as at::dropout's x * 0 does: fp16's loss scaler
  // must see it.
  auto bad = torch::full({kElements}, std::numeric_limits<float>::infinity());
  const auto y = layers::fused_dropout(bad, 0.5, 3);
  EXPECT_EQ(y.isnan().sum().item<int64_t>() + y.isinf().sum().item<int64_t>(), kElements);
}

TEST_F(Dropout, TakesReducedPrecisionAndStridedInputs) {
  const auto x = nonzero_values({256, 512});
  const auto bf16 = layers::fused_dropout(x.to(torch::kBFloat16), 0.1, 11);
  EXPECT_EQ(bf16.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(bf16.ne(0), layers::fused_dropout(x, 0.1, 11).ne(0)));  // the same draws
  const auto strided = x.t();
  EXPECT_TRUE(torch::equal(layers::fused_dropout(strided, 0.1, 12), layers::fused_dropout(strided.contiguous(), 0.1, 12)));
}

TEST_F(Dropout, TheTorchKernelIsLibTorchsOwn) {
  const auto x = torch::randn({4096});
  layers::set_cpu_dropout_kernel(CpuDropoutChoice::torch);
  torch::manual_seed(9);
  const auto ours = layers::dropout(x, 0.1, true);
  torch::manual_seed(9);
  EXPECT_TRUE(torch::equal(ours, torch::dropout(x, 0.1, true)));
}

}  // namespace
}  // namespace tbench
