// model.fused_layer_norm on the CPU: the one-pass LayerNorm(residual + Dropout(x)) against
// LibTorch's three ops, forward and backward. tests/gpu/cuda_test.cpp holds the CUDA kernel to the
// same checks; the parity tests hold whole models built with it to HF's own numbers.
#include <gtest/gtest.h>

#include "tbench/models/residual_layer_norm.hpp"

namespace tbench {
namespace {

constexpr double kEps = 1e-12;

struct Operands {
  torch::Tensor x, residual, weight, bias;
};

// cols 37: not a multiple of anything a kernel might tile by.
Operands operands(torch::IntArrayRef shape, uint64_t seed) {
  torch::manual_seed(seed);
  const int64_t cols = shape.back();
  return {torch::randn(shape), torch::randn(shape) * 3 + 1, torch::randn({cols}) * 0.5 + 1, torch::randn({cols})};
}

torch::Tensor three_ops(const Operands& o, const torch::Tensor& dropped) {
  return torch::layer_norm(o.residual + dropped, {o.x.size(-1)}, o.weight, o.bias, kEps);
}

torch::nn::LayerNorm norm_module(const Operands& o) {
  torch::nn::LayerNorm norm(torch::nn::LayerNormOptions({o.x.size(-1)}).eps(kEps));
  torch::NoGradGuard no_grad;
  norm->weight.copy_(o.weight);
  norm->bias.copy_(o.bias);
  return norm;
}

TEST(ResidualLayerNorm, PassEqualsTheThreeOpsWithoutDropout) {
  const auto o = operands({3, 5, 37}, 1);
  const auto pass = layers::residual_layer_norm_pass(o.x, o.residual, o.weight, o.bias, kEps, 0.0);
  EXPECT_FALSE(pass.keep_mask.defined());
  EXPECT_TRUE(torch::allclose(pass.output, three_ops(o, o.x), 1e-5, 1e-6));
  EXPECT_TRUE(torch::equal(pass.sum, o.residual + o.x));
  const auto reference = at::native_layer_norm(o.residual + o.x, {37}, o.weight, o.bias, kEps);
  EXPECT_EQ(pass.mean.sizes(), std::get<1>(reference).sizes());
  EXPECT_TRUE(torch::allclose(pass.mean, std::get<1>(reference), 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(pass.rstd, std::get<2>(reference), 1e-5, 1e-6));
}

TEST(ResidualLayerNorm, PassDropsWhatItsMaskSaysAndScalesTheRest) {
  const auto o = operands({64, 128}, 2);
  const double p = 0.3;
  const auto pass = layers::residual_layer_norm_pass(o.x, o.residual, o.weight, o.bias, kEps, p);
  ASSERT_TRUE(pass.keep_mask.defined());
  EXPECT_EQ(pass.keep_mask.scalar_type(), torch::kBool);
  EXPECT_NEAR(pass.keep_mask.to(torch::kFloat).mean().item<double>(), 1 - p, 0.02);  // 8192 draws: sd 0.005
  const auto dropped = o.x * pass.keep_mask * static_cast<float>(1 / (1 - p));
  EXPECT_TRUE(torch::allclose(pass.sum, o.residual + dropped, 1e-6, 1e-6));
  EXPECT_TRUE(torch::allclose(pass.output, three_ops(o, dropped), 1e-5, 1e-5));
  // Each call draws a new mask.
  const auto again = layers::residual_layer_norm_pass(o.x, o.residual, o.weight, o.bias, kEps, p);
  EXPECT_FALSE(torch::equal(pass.keep_mask, again.keep_mask));
}

// Gradients of every input: weighted by a fixed random tensor, so each output element counts.
std::vector<torch::Tensor> gradients(const Operands& o, bool fused, double p, uint64_t seed) {
  auto x = o.x.clone().requires_grad_(true);
  auto residual = o.residual.clone().requires_grad_(true);
  auto norm = norm_module(o);
  torch::manual_seed(seed);
  const auto out = layers::residual_layer_norm(x, residual, norm, p, /*training=*/true, fused);
  torch::manual_seed(99);
  (out * torch::randn(out.sizes())).sum().backward();
  return {out.detach(), x.grad(), residual.grad(), norm->weight.grad(), norm->bias.grad()};
}

TEST(ResidualLayerNorm, GradientsEqualTheThreeOps) {
  const auto o = operands({4, 7, 37}, 3);
  const auto fused = gradients(o, /*fused=*/true, 0.0, 5);
  const auto unfused = gradients(o, /*fused=*/false, 0.0, 5);
  const char* names[] = {"output", "x", "residual", "weight", "bias"};
  for (std::size_t i = 0; i < fused.size(); ++i) {
    EXPECT_TRUE(torch::allclose(fused[i], unfused[i], 1e-5, 1e-5)) << names[i];
  }
}

// With dropout: the reference is the three ops on the mask the fused pass drew (same seed).
TEST(ResidualLayerNorm, GradientsWithDropoutFollowTheMask) {
  const auto o = operands({4, 7, 37}, 4);
  const double p = 0.25;
  const auto fused = gradients(o, /*fused=*/true, p, 11);
  torch::manual_seed(11);
  const auto mask = layers::residual_layer_norm_pass(o.x, o.residual, o.weight, o.bias, kEps, p).keep_mask;

  auto x = o.x.clone().requires_grad_(true);
  auto residual = o.residual.clone().requires_grad_(true);
  auto weight = o.weight.clone().requires_grad_(true);
  auto bias = o.bias.clone().requires_grad_(true);
  const auto out = torch::layer_norm(residual + x * mask * static_cast<float>(1 / (1 - p)), {37}, weight, bias, kEps);
  torch::manual_seed(99);
  (out * torch::randn(out.sizes())).sum().backward();
  const std::vector<torch::Tensor> reference = {out.detach(), x.grad(), residual.grad(), weight.grad(), bias.grad()};
  const char* names[] = {"output", "x", "residual", "weight", "bias"};
  for (std::size_t i = 0; i < fused.size(); ++i) {
    EXPECT_TRUE(torch::allclose(fused[i], reference[i], 1e-5, 1e-5)) << names[i];
  }
  EXPECT_EQ(fused[1].eq(0).sum().item<int64_t>(), mask.logical_not().sum().item<int64_t>());  // dropped: no gradient
}

TEST(ResidualLayerNorm, NotTrainingMeansNoDropout) {
  const auto o = operands({2, 3, 37}, 6);
  auto norm = norm_module(o);
  torch::NoGradGuard no_grad;
  const auto out = layers::residual_layer_norm(o.x, o.residual, norm, 0.5, /*training=*/false, /*fused=*/true);
  EXPECT_TRUE(torch::allclose(out, three_ops(o, o.x), 1e-5, 1e-6));
}

// What the pass does not take runs as the three ops, with the same result: a bf16 sum on the CPU
// (whose layer_norm keeps bf16 statistics), doubles, shapes that only broadcast, a weight of
// another width.
TEST(ResidualLayerNorm, WhatThePassDoesNotTakeRunsAsTheThreeOps) {
  const auto o = operands({2, 3, 37}, 7);
  EXPECT_TRUE(layers::fused_residual_norm_applies(o.x, o.residual, o.weight, o.bias));
  EXPECT_TRUE(layers::fused_residual_norm_applies(o.x.to(torch::kBFloat16), o.residual, o.weight, o.bias));
  EXPECT_FALSE(layers::fused_residual_norm_applies(o.x.to(torch::kBFloat16), o.residual.to(torch::kBFloat16),
                                                   o.weight, o.bias));
  EXPECT_FALSE(layers::fused_residual_norm_applies(o.x.to(torch::kDouble), o.residual, o.weight, o.bias));
  EXPECT_FALSE(layers::fused_residual_norm_applies(o.x, o.residual.slice(1, 0, 1), o.weight, o.bias));
  EXPECT_FALSE(layers::fused_residual_norm_applies(o.x, o.residual, o.weight.slice(0, 0, 30), o.bias));

  auto norm = norm_module(o);
  torch::NoGradGuard no_grad;
  const auto broadcast = o.residual.slice(1, 0, 1);
  const auto fused = layers::residual_layer_norm(o.x, broadcast, norm, 0.0, /*training=*/false, /*fused=*/true);
  EXPECT_TRUE(torch::equal(fused, norm(broadcast + o.x)));
}

// A bf16 x (autocast's linear output) onto a float residual: the kept value is rounded to bf16 as
// native_dropout rounds it, then added in float.
TEST(ResidualLayerNorm, ALowPrecisionInputAddsOntoTheFloatResidualAsTheThreeOps) {
  const auto o = operands({3, 5, 37}, 8);
  const auto x = o.x.to(torch::kBFloat16);
  const auto pass = layers::residual_layer_norm_pass(x, o.residual, o.weight, o.bias, kEps, 0.2);
  EXPECT_EQ(pass.output.scalar_type(), torch::kFloat);
  const auto dropped = (x.to(torch::kFloat) * static_cast<float>(1 / 0.8)).to(torch::kBFloat16).to(torch::kFloat) *
                       pass.keep_mask;
  EXPECT_TRUE(torch::equal(pass.sum, o.residual + dropped));
  EXPECT_TRUE(torch::allclose(pass.output, three_ops(o, dropped), 1e-5, 1e-5));
}

}  // namespace
}  // namespace tbench
