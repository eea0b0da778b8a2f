// model.fused_layer_norm on the CPU: the one-pass LayerNorm(residual + Dropout(x)) against
// LibTorch's three ops, forward and backward. tests/gpu/cuda_test.cpp holds the CUDA kernel to the
// same checks; the parity tests hold whole models built with it to HF's own numbers.
#include <gtest/gtest.h>

#include "tbench/models/residual_layer_norm.hpp"
#include "tbench/train/precision.hpp"

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
  const auto out = layers::residual_layer_norm(x, residual, norm, p, /*training=*/true, fused).stream;
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
  const auto out = layers::residual_layer_norm(o.x, o.residual, norm, 0.5, /*training=*/false, /*fused=*/true).stream;
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
  const auto fused = layers::residual_layer_norm(o.x, broadcast, norm, 0.0, /*training=*/false, /*fused=*/true).stream;
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

// Under autocast the pass writes the next matmul's input itself: the output rounded exactly as
// autocast's cast rounds it, in half or bf16, and only of a float output.
TEST(ResidualLayerNorm, PassWritesTheMatmulsCopyAsTheCastWould) {
  const auto o = operands({3, 5, 37}, 9);
  for (const auto dtype : {torch::kBFloat16, torch::kHalf}) {
    const auto pass = layers::residual_layer_norm_pass(o.x, o.residual, o.weight, o.bias, kEps, 0.1, dtype);
    ASSERT_TRUE(pass.matmul_copy.defined());
    EXPECT_EQ(pass.matmul_copy.scalar_type(), dtype);
    EXPECT_TRUE(torch::equal(pass.matmul_copy, pass.output.to(dtype)));
  }
  EXPECT_FALSE(layers::residual_layer_norm_pass(o.x, o.residual, o.weight, o.bias, kEps, 0.0).matmul_copy.defined());
  EXPECT_THROW(layers::residual_layer_norm_pass(o.x, o.residual, o.weight, o.bias, kEps, 0.0, torch::kFloat),
               c10::Error);
}

// The gradients the three ops give for an incoming gradient `grad` on the output, on `mask`.
std::vector<torch::Tensor> three_ops_gradients(const Operands& o, const torch::Tensor& mask, double p,
                                               const torch::Tensor& grad) {
  auto x = o.x.clone().requires_grad_(true);
  auto residual = o.residual.clone().requires_grad_(true);
  auto weight = o.weight.clone().requires_grad_(true);
  auto bias = o.bias.clone().requires_grad_(true);
  const auto dropped = mask.defined() ? x * mask * static_cast<float>(1 / (1 - p)) : x;
  torch::layer_norm(residual + dropped, {o.x.size(-1)}, weight, bias, kEps).backward(grad);
  return {x.grad(), residual.grad(), weight.grad(), bias.grad()};
}

// The one-pass backward sums the stream's and the copy's gradients (either may be missing) and
// gives layer_norm's and dropout's gradients of that sum; with neither, it gives none.
TEST(ResidualLayerNorm, BackwardSumsTheStreamsAndTheCopysGradients) {
  const auto o = operands({6, 7, 37}, 10);
  const double p = 0.2;
  torch::manual_seed(12);
  const auto pass = layers::residual_layer_norm_pass(o.x, o.residual, o.weight, o.bias, kEps, p, torch::kBFloat16);
  const auto grad_stream = torch::randn(pass.output.sizes());
  const auto grad_copy = torch::randn(pass.output.sizes()).to(torch::kBFloat16);
  struct Case {
    const char* name;
    torch::Tensor stream, copy;
  };
  const std::vector<Case> cases = {{"both", grad_stream, grad_copy},
                                   {"the stream's alone", grad_stream, torch::Tensor()},
                                   {"the copy's alone", torch::Tensor(), grad_copy}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto incoming = torch::zeros(pass.output.sizes());
    if (c.stream.defined()) incoming += c.stream;
    if (c.copy.defined()) incoming += c.copy.to(torch::kFloat);
    const auto expected = three_ops_gradients(o, pass.keep_mask, p, incoming);
    const auto g = layers::residual_layer_norm_backward(c.stream, c.copy, pass, o.weight, p, torch::kFloat);
    const std::vector<torch::Tensor> got = {g.x, g.residual, g.weight, g.bias};
    const char* names[] = {"x", "residual", "weight", "bias"};
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(torch::allclose(got[i], expected[i], 1e-5, 1e-5)) << names[i];
    }
  }
  // No gradient reached the output: none flows back.
  const auto none = layers::residual_layer_norm_backward(torch::Tensor(), torch::Tensor(), pass, o.weight, p,
                                                         torch::kFloat);
  EXPECT_FALSE(none.x.defined() || none.residual.defined() || none.weight.defined() || none.bias.defined());
}

// x's gradient in x's dtype, rounded as native_dropout_backward rounds it on the GPU: the
// residual's gradient to bf16, then times keep · scale in float, rounded to bf16 once more.
TEST(ResidualLayerNorm, BackwardRoundsXsGradientAsDropoutsBackward) {
  const auto o = operands({4, 9, 37}, 13);
  const auto x = o.x.to(torch::kBFloat16);
  const double p = 0.3;
  const auto pass = layers::residual_layer_norm_pass(x, o.residual, o.weight, o.bias, kEps, p);
  const auto grad = torch::randn(pass.output.sizes());
  const auto g = layers::residual_layer_norm_backward(grad, torch::Tensor(), pass, o.weight, p, torch::kBFloat16);
  ASSERT_EQ(g.x.scalar_type(), torch::kBFloat16);
  EXPECT_EQ(g.residual.scalar_type(), torch::kFloat);
  const auto scale = static_cast<float>(1 / (1 - p));
  const auto expected = (g.residual.to(torch::kBFloat16).to(torch::kFloat) * pass.keep_mask * scale).to(torch::kBFloat16);
  EXPECT_TRUE(torch::equal(g.x, expected));
}

// The weight's and bias's gradients are summed in blocks of rows fixed by the row count, so the
// same inputs give the same bits at any thread count.
TEST(ResidualLayerNorm, BackwardGivesTheSameBitsAtAnyThreadCount) {
  const auto o = operands({16, 40, 37}, 14);  // 640 rows: 20 blocks
  const auto pass = layers::residual_layer_norm_pass(o.x, o.residual, o.weight, o.bias, kEps, 0.1);
  const auto grad = torch::randn(pass.output.sizes());
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const auto one = layers::residual_layer_norm_backward(grad, torch::Tensor(), pass, o.weight, 0.1, torch::kFloat);
  at::set_num_threads(2);
  const auto two = layers::residual_layer_norm_backward(grad, torch::Tensor(), pass, o.weight, 0.1, torch::kFloat);
  at::set_num_threads(threads);
  EXPECT_TRUE(torch::equal(one.weight, two.weight));
  EXPECT_TRUE(torch::equal(one.bias, two.bias));
  EXPECT_TRUE(torch::equal(one.x, two.x));
}

// Under autocast the fused norm hands the matmul its copy, and the gradients through a matmul on
// the copy and an add on the stream are those of the three ops with autocast's own cast.
TEST(ResidualLayerNorm, UnderAutocastTheMatmulReadsTheCopyAndTheGradientsAgree) {
  const auto o = operands({3, 6, 37}, 15);
  torch::manual_seed(16);
  const auto projection = torch::randn({37, 37}) * 0.2;
  std::vector<std::vector<torch::Tensor>> runs;
  for (const bool fused : {true, false}) {
    auto x = o.x.clone().requires_grad_(true);
    auto residual = o.residual.clone().requires_grad_(true);
    auto norm = norm_module(o);
    auto weight = projection.clone().requires_grad_(true);
    torch::Tensor loss;
    {
      AutocastGuard autocast(Precision::bf16, torch::kCPU);
      const auto hidden = layers::residual_layer_norm(x, residual, norm, 0.0, /*training=*/true, fused);
      if (fused) {
        EXPECT_EQ(hidden.matmul_input.scalar_type(), torch::kBFloat16);
        EXPECT_TRUE(torch::equal(hidden.matmul_input, hidden.stream.to(torch::kBFloat16)));
      } else {
        EXPECT_TRUE(hidden.matmul_input.is_same(hidden.stream));
      }
      EXPECT_EQ(hidden.stream.scalar_type(), torch::kFloat);
      const auto projected = torch::matmul(hidden.matmul_input, weight);  // autocast: bf16 either way
      EXPECT_EQ(projected.scalar_type(), torch::kBFloat16);
      loss = (projected.to(torch::kFloat) + hidden.stream).pow(2).sum();
    }
    loss.backward();
    runs.push_back({x.grad(), residual.grad(), norm->weight.grad(), norm->bias.grad(), weight.grad()});
  }
  const char* names[] = {"x", "residual", "norm weight", "norm bias", "projection"};
  for (std::size_t i = 0; i < runs[0].size(); ++i) {
    EXPECT_TRUE(torch::allclose(runs[0][i], runs[1][i], 1e-4, 1e-4))
        << names[i] << ": " << (runs[0][i] - runs[1][i]).abs().max().item<float>();
  }
}

}  // namespace
}  // namespace tbench
