// The AdamW implementations agree with LibTorch's torch::optim::AdamW: weight-decay groups, LR
// changes between steps, a skipped step, and a parameter that misses a gradient.
#include <gtest/gtest.h>

#include "tbench/errors.hpp"
#include "tbench/train/optimizer.hpp"
#include "tbench/env/torch_features.hpp"

namespace tbench {
namespace {

struct Params {
  std::vector<torch::Tensor> decay, no_decay;
  std::vector<torch::Tensor> all() const {
    auto v = decay;
    v.insert(v.end(), no_decay.begin(), no_decay.end());
    return v;
  }
};

Params make_params() {
  torch::manual_seed(11);
  Params p;
  p.decay = {torch::randn({7, 5}), torch::randn({33})};
  p.no_decay = {torch::randn({5}), torch::randn({2, 3, 4})};
  for (auto& t : p.all()) t.set_requires_grad(true);
  return p;
}

Params clone(const Params& p) {
  Params c;
  for (const auto& t : p.decay) c.decay.push_back(t.detach().clone().set_requires_grad(true));
  for (const auto& t : p.no_decay) c.no_decay.push_back(t.detach().clone().set_requires_grad(true));
  return c;
}

std::unique_ptr<Optimizer> adamw(OptimizerImpl impl, const Params& p, double lr) {
  return make_adamw(impl, {{p.decay, 0.05}, {p.no_decay, 0.0}}, {lr, 0.9, 0.999, 1e-8}, torch::kCPU);
}

// Runs the same schedule of gradients through one implementation: LR changes every step, step 3
// is skipped (as after an fp16 overflow), and one parameter has no gradient at step 4.
void train(Optimizer& optimizer, const Params& p) {
  const auto params = p.all();
  for (int step = 1; step <= 6; ++step) {
    torch::manual_seed(100 + step);
    for (std::size_t i = 0; i < params.size(); ++i) {
      params[i].mutable_grad() = (step == 4 && i == 1) ? torch::Tensor() : torch::randn_like(params[i]);
    }
    optimizer.set_lr(1e-2 / step);
    if (step != 3) optimizer.step();
  }
}

void expect_same_as_libtorch(OptimizerImpl impl) {
  const Params reference = make_params(), tested = clone(reference);
  const auto before = clone(reference).all();
  auto loop = adamw(OptimizerImpl::loop, reference, 1e-2);
  auto other = adamw(impl, tested, 1e-2);
  ASSERT_EQ(other->impl(), impl);
  train(*loop, reference);
  train(*other, tested);
  const auto a = reference.all(), b = tested.all();
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_FALSE(torch::allclose(a[i], before[i])) << "parameter " << i << " never moved";
    EXPECT_TRUE(torch::allclose(a[i], b[i], /*rtol=*/0, /*atol=*/1e-6))
        << to_string(impl) << " parameter " << i << ": max diff " << (a[i] - b[i]).abs().max().item<double>();
  }
}

TEST(Optimizer, ForeachEqualsLibTorchAdamW) { expect_same_as_libtorch(OptimizerImpl::foreach); }

TEST(Optimizer, OnePassEqualsLibTorchAdamW) { expect_same_as_libtorch(OptimizerImpl::onepass); }

// Parameters large enough to be split among threads, in every dtype the loop takes, and ones it
// leaves to ATen's ops (non-contiguous; a gradient of another dtype): the same update as foreach.
// Parameters large enough to be split among threads, in double and bf16, and ones the one-pass
// loop leaves to ATen's ops (non-contiguous; a gradient of another dtype): the same update as
// foreach, from `impl`.
void expect_same_as_foreach_on_large_tensors(OptimizerImpl impl, bool with_grad_of_other_dtype) {
  const int threads = torch::get_num_threads();
  torch::set_num_threads(2);
  torch::manual_seed(5);
  const std::vector<torch::Tensor> shapes = {
      torch::randn({300, 1000}),                          // 19 chunks of the loop
      torch::randn({1000, 70}).t(),                       // non-contiguous
      torch::randn({40000}, torch::kDouble),              // double
      torch::randn({50000}).to(torch::kBFloat16),         // opmath float, stored bf16
      torch::randn({3})};
  std::vector<bool> grad_cases = {false};
  if (with_grad_of_other_dtype) grad_cases.push_back(true);
  for (const bool grad_of_other_dtype : grad_cases) {
    std::vector<torch::Tensor> a, b;
    for (const auto& t : shapes) {
      a.push_back(t.clone().set_requires_grad(true));
      b.push_back(t.clone().set_requires_grad(true));
    }
    auto foreach = make_adamw(OptimizerImpl::foreach, {{a, 0.01}}, {1e-2, 0.9, 0.999, 1e-8}, torch::kCPU);
    auto tested = make_adamw(impl, {{b, 0.01}}, {1e-2, 0.9, 0.999, 1e-8}, torch::kCPU);
    for (int step = 1; step <= 3; ++step) {
      for (std::size_t i = 0; i < a.size(); ++i) {
        auto grad = torch::randn_like(a[i]);
        a[i].mutable_grad() = grad;
        b[i].mutable_grad() = grad_of_other_dtype && i == 4 ? grad.to(torch::kDouble) : grad.clone();
      }
      if (grad_of_other_dtype) a[4].mutable_grad() = b[4].grad().to(torch::kFloat);
      foreach->step();
      tested->step();
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
      // bf16: foreach rounds after every op, the loop once per element; allow about two bf16 ulps.
      const bool bf16 = a[i].scalar_type() == torch::kBFloat16;
      EXPECT_TRUE(torch::allclose(a[i].to(torch::kDouble), b[i].to(torch::kDouble), bf16 ? 1.0 / 64 : 0,
                                  bf16 ? 1e-2 : 1e-6))
          << to_string(impl) << " tensor " << i << ": max diff "
          << (a[i].to(torch::kDouble) - b[i].to(torch::kDouble)).abs().max().item<double>();
    }
  }
  torch::set_num_threads(threads);
}

TEST(Optimizer, OnePassEqualsForeachOnLargeReducedPrecisionAndStridedTensors) {
  expect_same_as_foreach_on_large_tensors(OptimizerImpl::onepass, /*with_grad_of_other_dtype=*/true);
}

// fp16 parameters (moments in fp16, arithmetic in float): the update of float parameters, to
// fp16's precision. Gradients of at least 0.5, so the second moment stays clear of fp16's
// subnormals (where any fp16 AdamW divides by eps alone).
TEST(Optimizer, OnePassUpdatesHalfParametersInFloatArithmetic) {
  torch::manual_seed(6);
  const auto start = torch::randn({70000});
  auto reference = start.clone().set_requires_grad(true);
  auto half = start.to(torch::kHalf).set_requires_grad(true);
  auto foreach = make_adamw(OptimizerImpl::foreach, {{{reference}, 0.01}}, {1e-2, 0.9, 0.999, 1e-8}, torch::kCPU);
  auto onepass = make_adamw(OptimizerImpl::onepass, {{{half}, 0.01}}, {1e-2, 0.9, 0.999, 1e-8}, torch::kCPU);
  for (int step = 1; step <= 3; ++step) {
    const auto grad = torch::rand({70000}).add_(0.5);
    reference.mutable_grad() = grad;
    half.mutable_grad() = grad.to(torch::kHalf);
    foreach->step();
    onepass->step();
  }
  EXPECT_TRUE(torch::allclose(half.to(torch::kFloat), reference.detach(), 1.0 / 512, 1e-3))
      << "max diff " << (half.to(torch::kFloat) - reference.detach()).abs().max().item<double>();
  EXPECT_FALSE(torch::allclose(half.to(torch::kFloat), start.to(torch::kHalf).to(torch::kFloat)));
}

// The loop writes through raw pointers; autograd still learns that the parameters changed.
TEST(Optimizer, OnePassBumpsTheParametersVersion) {
  const Params p = make_params();
  auto onepass = adamw(OptimizerImpl::onepass, p, 1e-2);
  const auto before = p.decay[0]._version();
  for (const auto& t : p.all()) t.mutable_grad() = torch::ones_like(t);
  onepass->step();
  EXPECT_GT(p.decay[0]._version(), before);
}

TEST(Optimizer, OnePassRefusesAParameterListedTwice) {
  const Params p = make_params();
  EXPECT_THROW(make_adamw(OptimizerImpl::onepass, {{p.decay, 0.01}, {{p.decay[0]}, 0.0}}, {1e-3, 0.9, 0.999, 1e-8},
                          torch::kCPU),
               std::invalid_argument);
}

TEST(Optimizer, OnePassIsABadInputErrorOnCuda) {
  const Params p = make_params();
  try {
    make_adamw(OptimizerImpl::onepass, {{p.decay, 0.0}}, {1e-3, 0.9, 0.999, 1e-8}, torch::Device(torch::kCUDA, 0));
    FAIL() << "onepass AdamW was made for a CUDA device";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find("train.optimizer_impl"), std::string::npos) << e.what();
  }
}

#if TBENCH_HAS_FUSED_ADAMW_CPU
TEST(Optimizer, FusedEqualsLibTorchAdamW) { expect_same_as_libtorch(OptimizerImpl::fused); }

// ATen's CPU kernel is `auto` on torch >= 2.4: the same tensors the one-pass loop is checked on.
TEST(Optimizer, FusedEqualsForeachOnLargeReducedPrecisionAndStridedTensors) {
  expect_same_as_foreach_on_large_tensors(OptimizerImpl::fused, /*with_grad_of_other_dtype=*/false);
}

// The fused kernel skips on the device: found_inf = 1 leaves weights, moments and step counts.
TEST(Optimizer, FusedSkipsWhereFoundInfIsSet) {
  const Params reference = make_params(), tested = clone(reference);
  auto loop = adamw(OptimizerImpl::loop, reference, 1e-2);
  auto fused = adamw(OptimizerImpl::fused, tested, 1e-2);
  ASSERT_TRUE(fused->skips_on_device());
  const auto a = reference.all(), b = tested.all();
  for (int step = 1; step <= 4; ++step) {
    torch::manual_seed(step);
    for (std::size_t i = 0; i < a.size(); ++i) {
      a[i].mutable_grad() = torch::randn_like(a[i]);
      b[i].mutable_grad() = a[i].grad().clone();
    }
    const bool overflow = step == 2;
    if (!overflow) loop->step();
    fused->step_unless_inf(torch::full({1}, overflow ? 1.0 : 0.0));
  }
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::allclose(a[i], b[i], 0, 1e-6)) << i;
}
#else
TEST(Optimizer, FusedIsABadInputErrorWithoutTheKernel) {
  const Params p = make_params();
  try {
    adamw(OptimizerImpl::fused, p, 1e-3);
    FAIL() << "fused AdamW was built on a torch without the CPU kernel";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find("train.optimizer_impl"), std::string::npos) << e.what();
  }
}
#endif

TEST(Optimizer, AutoIsAtensFusedWhereAvailableElseOnePassOnCpuAndForeachOnCuda) {
  EXPECT_EQ(resolve_optimizer_impl(OptimizerImpl::automatic, false),
            features::fused_adamw(false) ? OptimizerImpl::fused : OptimizerImpl::onepass);
  EXPECT_EQ(resolve_optimizer_impl(OptimizerImpl::automatic, true),
            features::fused_adamw(true) ? OptimizerImpl::fused : OptimizerImpl::foreach);
  EXPECT_EQ(resolve_optimizer_impl(OptimizerImpl::loop, true), OptimizerImpl::loop);
  EXPECT_EQ(parse_choice<OptimizerImpl>("foreach"), OptimizerImpl::foreach);
  EXPECT_FALSE(parse_choice<OptimizerImpl>("fast").has_value());
}

}  // namespace
}  // namespace tbench
