// GPU tests. Compiled only in CUDA builds (TBENCH_WITH_CUDA); on a machine without a CUDA device
// (the offline CUDA build check, scripts/check-cuda-build) each one skips and says why.
#include <gtest/gtest.h>

#include <ATen/cuda/CUDAGeneratorImpl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>

#include "support/cli.hpp"
#include "support/ranks.hpp"
#include "tbench/cuda/cuda.hpp"
#include "tbench/dist/dist.hpp"
#include "tbench/models/layers.hpp"
#include "tbench/models/residual_layer_norm.hpp"
#include "tbench/train/optimizer.hpp"
#include "tbench/timing/step_timer.hpp"
#include "tbench/env/torch_features.hpp"

namespace tbench {
namespace {

using nlohmann::json;
using testing::ScratchDir;

#define REQUIRE_CUDA() \
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device on this machine: GPU test not run"

const torch::Device kGpu(torch::kCUDA, 0);

// --- src/cuda/ pieces on their own ---------------------------------------------------------------

// Event time and wall time agree around work the host waits for.
TEST(CudaTimer, EventTimeMatchesWallTimeAroundSynchronizedWork) {
  REQUIRE_CUDA();
  auto timer = make_step_timer(kGpu);
  EXPECT_STREQ(timer->method(), "cuda_events");
  const auto a = torch::randn({4096, 4096}, kGpu);
  torch::cuda::synchronize();
  const auto wall_start = std::chrono::steady_clock::now();
  timer->begin();
  for (int i = 0; i < 20; ++i) a.mm(a);
  timer->end();
  torch::cuda::synchronize();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  ASSERT_EQ(timer->pending(), 1u);
  EXPECT_TRUE(timer->oldest_done());
  const StepTime t = timer->take_oldest();
  EXPECT_GT(t.seconds, 0);
  EXPECT_LE(t.seconds, wall * 1.001);
  EXPECT_GT(t.seconds, wall * 0.8) << "event " << t.seconds << " s, wall " << wall << " s";
}

TEST(CudaMemory, PeaksFollowTheCachingAllocator) {
  REQUIRE_CUDA();
  torch::cuda::synchronize();
  cuda::reset_allocator_peaks(0);
  const int64_t bytes = 256LL << 20;
  {
    const auto big = torch::empty({bytes / 4}, torch::TensorOptions().dtype(torch::kFloat).device(kGpu));
    const auto peaks = cuda::allocator_peaks(0);
    EXPECT_GE(peaks.allocated_bytes, bytes);
    EXPECT_GE(peaks.reserved_bytes, peaks.allocated_bytes);
  }
  EXPECT_GE(cuda::allocator_peaks(0).allocated_bytes, bytes) << "a peak must outlive the tensor";
}

TEST(CudaEnv, DescribesRuntimeAndDevice) {
  REQUIRE_CUDA();
  const json runtime = cuda::runtime_info();
  const json device = cuda::device_info(0);
  EXPECT_FALSE(runtime.empty()) << runtime.dump();
  EXPECT_TRUE(device.contains("name")) << device.dump();
  EXPECT_GT(device.value("sms", 0), 0) << device.dump();
}

// --- kernels against their references ------------------------------------------------------------

// The CUDA fused AdamW (the default optimizer on CUDA) against LibTorch's AdamW on the CPU.
TEST(CudaOptimizer, FusedOnCudaEqualsLibTorchAdamWOnCpu) {
  REQUIRE_CUDA();
  if (!features::fused_adamw(true)) GTEST_SKIP() << "this torch has no CUDA fused AdamW";
  torch::manual_seed(21);
  std::vector<torch::Tensor> cpu = {torch::randn({64, 33}), torch::randn({33})};
  std::vector<torch::Tensor> gpu;
  for (auto& p : cpu) {
    p.set_requires_grad(true);
    gpu.push_back(p.detach().to(kGpu).set_requires_grad(true));
  }
  auto reference = make_adamw(OptimizerImpl::loop, {{cpu, 0.01}}, {1e-2, 0.9, 0.999, 1e-8}, torch::kCPU);
  auto fused = make_adamw(OptimizerImpl::fused, {{gpu, 0.01}}, {1e-2, 0.9, 0.999, 1e-8}, kGpu);
  for (int step = 1; step <= 5; ++step) {
    torch::manual_seed(step);
    for (std::size_t i = 0; i < cpu.size(); ++i) {
      cpu[i].mutable_grad() = torch::randn_like(cpu[i]);
      gpu[i].mutable_grad() = cpu[i].grad().to(kGpu);
    }
    reference->set_lr(1e-2 / step);
    fused->set_lr(1e-2 / step);
    reference->step();
    fused->step();
  }
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    const auto back = gpu[i].detach().cpu();
    EXPECT_TRUE(torch::allclose(cpu[i], back, 0, 1e-5)) << i << ": " << (cpu[i] - back).abs().max().item<double>();
  }
}

TEST(CudaAttention, SdpaEqualsEagerWithPaddingInFp32AndBf16) {
  REQUIRE_CUDA();
  if (!features::kSdpa) GTEST_SKIP() << "this torch has no SDPA";
  torch::manual_seed(5);
  for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
    const auto opts = torch::TensorOptions().dtype(dtype).device(kGpu);
    const auto q = torch::randn({2, 12, 128, 64}, opts), k = torch::randn({2, 12, 128, 64}, opts),
               v = torch::randn({2, 12, 128, 64}, opts);
    auto mask = torch::ones({2, 128}, torch::TensorOptions().dtype(torch::kLong).device(kGpu));
    mask.index_put_({1, torch::indexing::Slice(90)}, 0);
    const auto bias = layers::padding_bias(mask, dtype);
    const auto eager = layers::attention(q, k, v, bias, 0.0, false, AttentionKernel::eager).to(torch::kFloat);
    const auto sdpa = layers::attention(q, k, v, bias, 0.0, false, AttentionKernel::sdpa).to(torch::kFloat);
    const double tol = dtype == torch::kFloat ? 1e-4 : 2e-2;
    EXPECT_TRUE(torch::allclose(eager, sdpa, tol, tol)) << dtype << ": " << (eager - sdpa).abs().max().item<double>();
  }
}

// model.fused_layer_norm's kernel against LibTorch's three ops on the GPU, in each dtype pairing
// the models give it: float everywhere (fp32), a bf16 or fp16 x onto the float residual stream
// (autocast), and all bf16 (no autocast). Without dropout the outputs agree to float rounding
// (to the output dtype's where it is bf16); with it, the kernel's own mask reproduces its output.
TEST(CudaResidualLayerNorm, KernelEqualsTheThreeOpsInEachDtype) {
  REQUIRE_CUDA();
  if (!features::kCudaKernels) GTEST_SKIP() << "this build has no tbench CUDA kernels (no nvcc)";
  torch::manual_seed(3);
  const std::vector<std::pair<torch::ScalarType, torch::ScalarType>> pairs = {
      {torch::kFloat, torch::kFloat}, {torch::kBFloat16, torch::kFloat}, {torch::kHalf, torch::kFloat},
      {torch::kBFloat16, torch::kBFloat16}};
  for (const auto& [x_type, residual_type] : pairs) {
    for (const int64_t cols : {768, 1000}) {
      SCOPED_TRACE(std::string(c10::toString(x_type)) + " onto " + c10::toString(residual_type) + ", " +
                   std::to_string(cols) + " columns");
      const auto opts = torch::TensorOptions().device(kGpu);
      const auto x = torch::randn({8, 129, cols}, opts).to(x_type);
      const auto residual = (torch::randn({8, 129, cols}, opts) * 3 + 1).to(residual_type);
      const auto weight = torch::randn({cols}, opts) * 0.5 + 1, bias = torch::randn({cols}, opts);
      ASSERT_TRUE(layers::fused_residual_norm_applies(x, residual, weight, bias));
      const auto reference = [&](const torch::Tensor& dropped) {
        const auto sum = residual + dropped;
        return torch::layer_norm(sum.to(torch::kFloat), {cols}, weight, bias, 1e-12).to(sum.scalar_type());
      };
      const double tol = residual_type == torch::kFloat ? 2e-5 : 2e-2;
      const auto plain = layers::residual_layer_norm_pass(x, residual, weight, bias, 1e-12, 0.0);
      EXPECT_EQ(plain.output.scalar_type(), residual_type);
      EXPECT_TRUE(torch::allclose(plain.output, reference(x), tol, tol))
          << (plain.output.to(torch::kFloat) - reference(x).to(torch::kFloat)).abs().max().item<double>();
      const auto dropped = layers::residual_layer_norm_pass(x, residual, weight, bias, 1e-12, 0.1);
      ASSERT_TRUE(dropped.keep_mask.defined());
      EXPECT_NEAR(dropped.keep_mask.to(torch::kFloat).mean().item<double>(), 0.9, 0.01);
      const auto kept = (x.to(torch::kFloat) * static_cast<float>(1 / 0.9)).to(x_type) * dropped.keep_mask;
      EXPECT_TRUE(torch::allclose(dropped.output, reference(kept), tol, tol));
    }
  }
}

// The backward (LibTorch's, on what the kernel saved) against autograd through the three ops on
// the kernel's mask, and the CPU loop's forward on the same numbers.
TEST(CudaResidualLayerNorm, GradientsFollowTheKernelsMaskAndMatchTheCpu) {
  REQUIRE_CUDA();
  if (!features::kCudaKernels) GTEST_SKIP() << "this build has no tbench CUDA kernels (no nvcc)";
  torch::manual_seed(4);
  const auto x0 = torch::randn({4, 33, 768}), r0 = torch::randn({4, 33, 768});
  torch::nn::LayerNorm norm(torch::nn::LayerNormOptions({768}).eps(1e-12));
  norm->to(kGpu);
  auto x = x0.to(kGpu).requires_grad_(true), residual = r0.to(kGpu).requires_grad_(true);
  at::Generator generator = at::cuda::detail::getDefaultCUDAGenerator();  // a handle: the same generator
  const auto cuda_state = generator.get_state();
  const auto out = layers::residual_layer_norm(x, residual, norm, 0.1, /*training=*/true, /*fused=*/true).stream;
  const auto weights = torch::randn(out.sizes(), out.options());
  (out * weights).sum().backward();
  // The same draw again, for the mask.
  generator.set_state(cuda_state);
  const auto mask = layers::residual_layer_norm_pass(x.detach(), residual.detach(), norm->weight.detach(),
                                                     norm->bias.detach(), 1e-12, 0.1).keep_mask;
  auto x2 = x0.to(kGpu).requires_grad_(true), residual2 = r0.to(kGpu).requires_grad_(true);
  auto w2 = norm->weight.detach().clone().requires_grad_(true), b2 = norm->bias.detach().clone().requires_grad_(true);
  const auto reference = torch::layer_norm(residual2 + x2 * mask * static_cast<float>(1 / 0.9), {768}, w2, b2, 1e-12);
  (reference * weights).sum().backward();
  EXPECT_TRUE(torch::allclose(out, reference, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(x.grad(), x2.grad(), 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(residual.grad(), residual2.grad(), 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(norm->weight.grad(), w2.grad(), 1e-4, 1e-4));
  EXPECT_TRUE(torch::allclose(norm->bias.grad(), b2.grad(), 1e-4, 1e-4));
  const auto cpu = layers::residual_layer_norm_pass(x0, r0, norm->weight.detach().cpu(), norm->bias.detach().cpu(),
                                                    1e-12, 0.0);
  const auto gpu = layers::residual_layer_norm_pass(x0.to(kGpu), r0.to(kGpu), norm->weight.detach(),
                                                    norm->bias.detach(), 1e-12, 0.0);
  EXPECT_TRUE(torch::allclose(cpu.output, gpu.output.cpu(), 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(cpu.rstd, gpu.rstd.cpu(), 1e-5, 1e-5));
}

// Under autocast the kernel also writes the matmul's copy: the output as the cast rounds it.
TEST(CudaResidualLayerNorm, KernelWritesTheMatmulsCopyAsTheCastWould) {
  REQUIRE_CUDA();
  if (!features::kCudaKernels) GTEST_SKIP() << "this build has no tbench CUDA kernels (no nvcc)";
  torch::manual_seed(5);
  const auto opts = torch::TensorOptions().device(kGpu);
  const auto x = torch::randn({8, 129, 768}, opts).to(torch::kBFloat16), residual = torch::randn({8, 129, 768}, opts);
  const auto weight = torch::randn({768}, opts), bias = torch::randn({768}, opts);
  for (const auto dtype : {torch::kBFloat16, torch::kHalf}) {
    const auto pass = layers::residual_layer_norm_pass(x, residual, weight, bias, 1e-12, 0.1, dtype);
    ASSERT_TRUE(pass.matmul_copy.defined());
    EXPECT_TRUE(torch::equal(pass.matmul_copy, pass.output.to(dtype))) << dtype;
  }
}

// The one-pass backward kernel against autograd through LibTorch's three ops on the kernel's own
// mask, for the incoming gradient stream + copy: in each dtype pairing the models give it, at
// BERT-base's width and an odd one, over more rows than the grid holds warps (so a warp takes
// several rows), and at a width past the kernel's column sums (LibTorch's ops then).
TEST(CudaResidualLayerNorm, BackwardKernelEqualsTheThreeOpsGradients) {
  REQUIRE_CUDA();
  if (!features::kCudaKernels) GTEST_SKIP() << "this build has no tbench CUDA kernels (no nvcc)";
  struct Pairing {
    torch::ScalarType x, residual;
    std::optional<torch::ScalarType> copy;
  };
  const std::vector<Pairing> pairings = {{torch::kFloat, torch::kFloat, std::nullopt},
                                         {torch::kBFloat16, torch::kFloat, torch::kBFloat16},
                                         {torch::kHalf, torch::kFloat, torch::kHalf},
                                         {torch::kBFloat16, torch::kBFloat16, std::nullopt}};
  const double p = 0.1;
  for (const auto& pairing : pairings) {
    for (const int64_t cols : {768, 1000, 2048}) {
      SCOPED_TRACE(std::string(c10::toString(pairing.x)) + " onto " + c10::toString(pairing.residual) + ", " +
                   std::to_string(cols) + " columns");
      torch::manual_seed(6);
      const auto opts = torch::TensorOptions().device(kGpu);
      const auto x = torch::randn({8, 700, cols}, opts).to(pairing.x);
      const auto residual = (torch::randn({8, 700, cols}, opts) * 3 + 1).to(pairing.residual);
      const auto weight = torch::randn({cols}, opts) * 0.5 + 1, bias = torch::randn({cols}, opts);
      const auto pass = layers::residual_layer_norm_pass(x, residual, weight, bias, 1e-12, p, pairing.copy);
      const auto grad_output = torch::randn(pass.output.sizes(), pass.output.options());
      const auto grad_copy = pairing.copy ? torch::randn(pass.output.sizes(), opts).to(*pairing.copy) : torch::Tensor();
      const auto g = layers::residual_layer_norm_backward(grad_output, grad_copy, pass, weight, p, pairing.x);

      auto rx = x.detach().clone().requires_grad_(true), rr = residual.detach().clone().requires_grad_(true);
      auto rw = weight.clone().requires_grad_(true), rb = bias.clone().requires_grad_(true);
      const auto kept = (rx.to(torch::kFloat) * static_cast<float>(1 / (1 - p))).to(pairing.x) * pass.keep_mask;
      const auto sum = rr + kept;
      const auto out = torch::layer_norm(sum.to(torch::kFloat), {cols}, rw, rb, 1e-12);
      auto incoming = grad_output.to(torch::kFloat);
      if (grad_copy.defined()) incoming = incoming + grad_copy.to(torch::kFloat);
      out.backward(incoming);
      const double tol = pairing.residual == torch::kFloat && pairing.x == torch::kFloat ? 1e-4 : 3e-2;
      const auto close = [&](const torch::Tensor& got, const torch::Tensor& want, double scale_tol) {
        return torch::allclose(got.to(torch::kFloat), want.to(torch::kFloat), scale_tol, scale_tol);
      };
      EXPECT_EQ(g.x.scalar_type(), pairing.x);
      EXPECT_TRUE(close(g.x, rx.grad(), tol)) << (g.x.to(torch::kFloat) - rx.grad().to(torch::kFloat)).abs().max();
      EXPECT_TRUE(close(g.residual, rr.grad(), tol));
      // 5600 rows summed: float rounding grows with the rows.
      EXPECT_TRUE(close(g.weight, rw.grad(), 1e-2)) << (g.weight - rw.grad()).abs().max();
      EXPECT_TRUE(close(g.bias, rb.grad(), 1e-2)) << (g.bias - rb.grad()).abs().max();
    }
  }
}

// --- whole runs of the binary on the GPU -------------------------------------------------------

class CudaRun : public ::testing::Test {
 public:
  ScratchDir dir;
  // tiny-bert on cuda:0 with the given overrides; returns the exit code, the result in `result`.
  // Eager steps unless an override sets train.cuda_graph (true, or null: wherever it can be).
  int run(const std::vector<std::string>& overrides, json& result, std::string* err = nullptr) {
    json spec = testing::tiny_spec(dir.file("r.json"));
    spec["device"] = "cuda:0";
    spec["train"]["cuda_graph"] = false;
    std::string args = "run -q --force " + dir.write("spec.json", spec.dump());
    for (const auto& o : overrides) args += " --set " + o;
    const auto r = testing::run_tbench(args);
    if (err) *err = r.err;
    if (r.exit_code == 0 || r.exit_code == 4) result = testing::read_json(dir.file("r.json"));
    return r.exit_code;
  }
};

TEST_F(CudaRun, EachPrecisionTrainsWithEventTiming) {
  REQUIRE_CUDA();
  for (const char* precision : {"fp32", "fp16", "bf16"}) {
    json result;
    std::string err;
    ASSERT_EQ(run({std::string("precision=") + precision}, result, &err), 0) << precision << ": " << err;
    EXPECT_EQ(result["summary"]["status"], "completed") << precision;
    EXPECT_EQ(result["summary"]["timing_check"]["method"], "cuda_events") << precision;
    EXPECT_GT(result["summary"]["peak_allocated_bytes"].get<int64_t>(), 0) << precision;
    for (const auto& it : result["iterations"]) {
      EXPECT_TRUE(std::isfinite(it["loss"].get<double>())) << precision;
      EXPECT_GE(it["host_seconds"].get<double>(), 0) << precision;
      EXPECT_TRUE(it["device_idle_at_start"].is_boolean()) << precision;
    }
    // tiny-bert's kernels take microseconds: the GPU runs out of work between steps, and the host
    // sets the pace.
    EXPECT_GT(result["summary"]["device_idle_at_start_fraction"].get<double>(), 0.5) << precision;
    EXPECT_GT(result["summary"]["host_ms"]["median"].get<double>(), 0) << precision;
    if (std::string(precision) == "fp16") {
      EXPECT_GT(result["iterations"][0]["loss_scale"].get<double>(), 1.0) << "fp16 runs with a dynamic loss scale";
    }
  }
}

// The other side of the host-pace figures: bert-base at batch 16, seq 512 in fp32 gives the GPU
// about a tenth of a second of work a step, against a few milliseconds for the host to issue it, so
// the host runs ahead and the GPU has queued work whenever a step begins.
TEST_F(CudaRun, AGpuBoundStepFindsTheGpuBusyWhenItBegins) {
  REQUIRE_CUDA();
  json result;
  std::string err;
  ASSERT_EQ(run({"model=bert-base-cased", "precision=fp32", "train.batch_size=16", "data.seq_len=512",
                 "data.num_samples=160", "train.epochs=1", "train.max_steps=8", "timing.warmup_steps=2"},
                result, &err),
            0)
      << err;
  const auto& summary = result["summary"];
  EXPECT_LT(summary["device_idle_at_start_fraction"].get<double>(), 0.5) << summary.dump();
  EXPECT_LT(summary["host_ms"]["median"].get<double>(), summary["step_ms"]["median"].get<double>()) << summary.dump();
}

TEST_F(CudaRun, EventStepTimesAccountForTheEpoch) {
  REQUIRE_CUDA();
  json result;
  std::string err;
  ASSERT_EQ(run({"data.num_samples=256", "train.epochs=1"}, result, &err), 0) << err;
  const json check = result["summary"]["timing_check"];
  EXPECT_LT(check["gap_fraction"].get<double>(), 0.02) << check.dump();
}

// Where NVML answers, each epoch says what the GPU did while it trained: clocks above zero, power
// and energy, and the reasons are names; env's one reading after the run is no substitute.
TEST_F(CudaRun, EpochsCarryTheGpusClocksAndPowerWhileItTrained) {
  REQUIRE_CUDA();
  json result;
  std::string err;
  ASSERT_EQ(run({"data.num_samples=512", "train.epochs=2"}, result, &err), 0) << err;
  if (!result["env"]["nvml"].value("available", false)) GTEST_SKIP() << "no NVML here: " << result["env"]["nvml"].dump();
  for (const auto& epoch : result["epochs"]) {
    const json gpu = epoch["gpu"];
    ASSERT_TRUE(gpu.is_object()) << epoch.dump();
    EXPECT_GE(gpu["samples"].get<int64_t>(), 2);
    EXPECT_GT(gpu["sm_clock_mhz_median"].get<double>(), 0) << gpu.dump();
    EXPECT_GT(gpu["power_w_mean"].get<double>(), 0) << gpu.dump();
    EXPECT_GT(gpu["energy_j"].get<double>(), 0) << gpu.dump();
    EXPECT_TRUE(gpu["throttle_reasons"].is_array());
  }
  EXPECT_GT(result["summary"]["gpu_energy_j_per_sample"].get<double>(), 0);
}

// The same run eagerly and with the captured step (dropout off): the same losses, step by step.
// Returns the graphed result.
json expect_graph_replays_eager(CudaRun& fixture, std::vector<std::string> spec) {
  json eager, graphed;
  std::string err;
  spec.insert(spec.end(), {"train.dropout=false", "timing.warmup_steps=2", "train.optimizer_impl=fused"});
  EXPECT_EQ(fixture.run(spec, eager, &err), 0) << err;
  spec.push_back("train.cuda_graph=true");
  EXPECT_EQ(fixture.run(spec, graphed, &err), 0) << err;
  EXPECT_EQ(eager["iterations"].size(), graphed["iterations"].size());
  for (std::size_t i = 0; i < std::min(eager["iterations"].size(), graphed["iterations"].size()); ++i) {
    EXPECT_NEAR(eager["iterations"][i]["loss"].get<double>(), graphed["iterations"][i]["loss"].get<double>(), 1e-4)
        << "step " << i;
  }
  return graphed;
}

TEST_F(CudaRun, CudaGraphStepReplaysToTheEagerLosses) {
  REQUIRE_CUDA();
  if (!features::kCudaGraphStep) GTEST_SKIP() << "this torch has no CUDA graph step (needs >= 2.2)";
  expect_graph_replays_eager(*this, {});
}

// Every architecture's step can be captured (the unset default captures them all): each replays
// to its eager losses (XLNet's relative attention and summary head, RoBERTa's positions from the
// padding).
TEST_F(CudaRun, EveryArchitecturesCapturedStepReplaysToTheEagerLosses) {
  REQUIRE_CUDA();
  if (!features::kCudaGraphStep) GTEST_SKIP() << "this torch has no CUDA graph step (needs >= 2.2)";
  for (const char* model : {"tiny-distilbert", "tiny-roberta", "tiny-xlnet"}) {
    SCOPED_TRACE(model);
    expect_graph_replays_eager(*this, {std::string("model=") + model, "data.lengths.distribution=uniform",
                                       "data.lengths.min=4"});
  }
}

// Synthetic batches of lengths that vary, padded to seq_len: every batch but a rare one holds
// padding, so the captured step must keep the mask (batches_can_pad) and replay to the eager losses.
TEST_F(CudaRun, CudaGraphStepKeepsTheMaskWhereBatchesCanPad) {
  REQUIRE_CUDA();
  if (!features::kCudaGraphStep) GTEST_SKIP() << "this torch has no CUDA graph step (needs >= 2.2)";
  const json graphed = expect_graph_replays_eager(*this, {"data.lengths.distribution=uniform", "data.lengths.min=4"});
  EXPECT_LT(graphed["summary"]["padding_efficiency"].get<double>(), 1.0);
}

// model.padding_mask auto leaves the mask out of batches without padding, so SDPA can take its
// flash kernel (bf16 takes it on sm80+); with the mask on every batch it cannot. Read from the
// profiled step's kernels.
TEST_F(CudaRun, BatchesWithoutPaddingReachTheFlashKernel) {
  REQUIRE_CUDA();
  if (!features::kSdpa) GTEST_SKIP() << "this torch has no SDPA";
  const auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
  };
  const auto kernels_of = [&](const std::string& padding_mask) {
    json result;
    std::string err;
    EXPECT_EQ(run({"model=bert-base-cased", "precision=bf16", "data.seq_len=128", "timing.warmup_steps=2",
                   "timing.profile_steps=1", "train.epochs=1", "model.padding_mask=" + padding_mask},
                  result, &err),
              0)
        << err;
    // Every kernel's name from the trace (pip's LibTorch has Kineto) and the 25 largest. On torch
    // 2.11 (H200) a trace read this way once gave no kernel at all: the listing below says what it held.
    std::string names, seen;
    const auto trace = result["profile"]["trace"];
    if (trace.is_string()) {
      std::map<std::string, int> categories;
      const json events = testing::read_json(trace.get<std::string>())["traceEvents"];
      for (const auto& e : events) {
        const std::string category = e.contains("cat") && e["cat"].is_string() ? e["cat"].get<std::string>() : "";
        ++categories[category];
        if (lower(category) == "kernel") names += e.value("name", "") + "\n";
      }
      seen = std::to_string(events.size()) + " trace events, by category:";
      for (const auto& [category, count] : categories) seen += " " + category + "=" + std::to_string(count);
    }
    for (const auto& k : result["profile"]["top"]) names += k["name"].get<std::string>() + "\n";
    EXPECT_FALSE(names.empty()) << seen << "; profile: " << result["profile"].dump().substr(0, 2000);
    return names;
  };
  const std::string without_mask = lower(kernels_of("auto")), with_mask = lower(kernels_of("always"));
  EXPECT_NE(without_mask.find("flash"), std::string::npos) << without_mask;
  // PyTorch's flash-attention kernels (flash_fwd_kernel, ...) take no mask at all.
  EXPECT_EQ(with_mask.find("flash_fwd"), std::string::npos) << with_mask;
}

// Unset, train.cuda_graph captures a step whose shapes are static, and the result says so; with
// dynamic padding the steps run eagerly.
TEST_F(CudaRun, UnsetCudaGraphCapturesAStaticStep) {
  REQUIRE_CUDA();
  if (!features::kCudaGraphStep) GTEST_SKIP() << "this torch has no CUDA graph step (needs >= 2.2)";
  json captured, eager;
  std::string err;
  ASSERT_EQ(run({"train.cuda_graph=null", "timing.warmup_steps=2"}, captured, &err), 0) << err;
  EXPECT_EQ(captured["spec"]["train"]["cuda_graph"], true) << err;
  ASSERT_EQ(run({"train.cuda_graph=null", "timing.warmup_steps=2", "data.padding=longest"}, eager, &err), 0) << err;
  EXPECT_EQ(eager["spec"]["train"]["cuda_graph"], false);
}

TEST_F(CudaRun, CudaGraphStepRunsWithDropout) {
  REQUIRE_CUDA();
  if (!features::kCudaGraphStep) GTEST_SKIP() << "this torch has no CUDA graph step (needs >= 2.2)";
  json result;
  std::string err;
  ASSERT_EQ(run({"train.cuda_graph=true", "timing.warmup_steps=2", "train.dropout=true"}, result, &err), 0) << err;
  EXPECT_EQ(result["summary"]["status"], "completed");
}

// The fused residual LayerNorm trains as the three ops in each precision (dropout off, so the
// steps are deterministic), and its dropout draws are captured into a graph and replayed.
TEST_F(CudaRun, FusedLayerNormTrainsLikeTheThreeOpsAndIsCaptured) {
  REQUIRE_CUDA();
  if (!features::kCudaKernels) GTEST_SKIP() << "this build has no tbench CUDA kernels (no nvcc)";
  for (const char* precision : {"fp32", "bf16"}) {
    json plain, fused;
    std::string err;
    ASSERT_EQ(run({std::string("precision=") + precision, "train.dropout=false"}, plain, &err), 0) << err;
    ASSERT_EQ(run({std::string("precision=") + precision, "train.dropout=false", "model.fused_layer_norm=true"}, fused,
                  &err),
              0)
        << err;
    ASSERT_EQ(plain["iterations"].size(), fused["iterations"].size());
    const double tol = std::string(precision) == "fp32" ? 1e-4 : 2e-2;
    for (std::size_t i = 0; i < plain["iterations"].size(); ++i) {
      EXPECT_NEAR(plain["iterations"][i]["loss"].get<double>(), fused["iterations"][i]["loss"].get<double>(), tol)
          << precision << ", step " << i;
    }
  }
  if (!features::kCudaGraphStep) return;
  expect_graph_replays_eager(*this, {"model.fused_layer_norm=true"});
  json dropout;
  std::string err;
  ASSERT_EQ(run({"train.cuda_graph=true", "timing.warmup_steps=2", "train.dropout=true", "model.fused_layer_norm=true"},
                dropout, &err),
            0)
      << err;
  EXPECT_EQ(dropout["summary"]["status"], "completed");
}

// model.unpad on the GPU (the loader's positions copied with the batch, SDPA with the padding
// mask on the grid): mixed lengths, no dropout, the padded run's losses step for step.
TEST_F(CudaRun, UnpaddedTokensTrainLikeThePaddedBatch) {
  REQUIRE_CUDA();
  for (const char* precision : {"fp32", "bf16"}) {
    const std::vector<std::string> ragged{std::string("precision=") + precision, "train.dropout=false",
                                          "data.lengths.distribution=uniform", "data.lengths.min=4"};
    json padded, unpadded;
    std::string err;
    ASSERT_EQ(run(ragged, padded, &err), 0) << err;
    auto with_unpad = ragged;
    with_unpad.push_back("model.unpad=true");
    ASSERT_EQ(run(with_unpad, unpadded, &err), 0) << err;
    ASSERT_EQ(padded["iterations"].size(), unpadded["iterations"].size());
    const double tol = std::string(precision) == "fp32" ? 1e-4 : 2e-2;
    for (std::size_t i = 0; i < padded["iterations"].size(); ++i) {
      const auto &a = padded["iterations"][i], &b = unpadded["iterations"][i];
      EXPECT_NEAR(a["loss"].get<double>(), b["loss"].get<double>(), tol) << precision << ", step " << i;
      EXPECT_LT(b["train_flops"].get<double>(), a["train_flops"].get<double>()) << precision << ", step " << i;
    }
  }
}

TEST_F(CudaRun, OutOfMemoryIsARunFailureWithAClearMessage) {
  REQUIRE_CUDA();
  json result;
  std::string err;
  EXPECT_EQ(run({"model=bert-base-cased", "data.seq_len=512", "train.batch_size=8192", "data.num_samples=8192",
                 "train.max_steps=1"},
                result, &err),
            4)
      << err;
  EXPECT_NE(err.find("out of memory"), std::string::npos) << err;
  EXPECT_EQ(result["summary"]["status"], "failed");
}

TEST_F(CudaRun, NcclWorldSizeOneTrainsLikeTheSingleProcess) {
  REQUIRE_CUDA();
  if (!testing::have_nccl()) GTEST_SKIP() << "no NCCL in this build";
  json spec = testing::tiny_spec(dir.file("dist.json"));
  spec["device"] = "cuda:0";
  spec["train"]["dropout"] = false;
  spec["dist"] = {{"group_at_world_size_1", true}};  // else one process runs the single-process path
  const std::string spec_path = dir.write("dist-spec.json", spec.dump());
  const int port = testing::free_tcp_port();
  const pid_t pid = testing::spawn_tbench({"run", "-q", spec_path},
                                         {{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"LOCAL_RANK", "0"},
                                          {"LOCAL_WORLD_SIZE", "1"}, {"MASTER_ADDR", "127.0.0.1"},
                                          {"MASTER_PORT", std::to_string(port)}},
                                         dir.file("rank0.out"), dir.file("rank0.err"));
  ASSERT_EQ(testing::wait_for_exit(pid, 120), 0) << testing::read_text(dir.file("rank0.err"));
  const json result = testing::read_json(dir.file("dist.json"));
  EXPECT_EQ(result["dist"]["backend"], "nccl");
  EXPECT_EQ(result["dist"]["world_size"], 1);
  // The all-reduce wait is timed on the stream, inside the step (the host never waited for it).
  for (const auto& it : result["iterations"]) {
    EXPECT_GE(it["comm_wait_seconds"].get<double>(), 0);
    EXPECT_LE(it["comm_wait_seconds"].get<double>(), it["seconds"].get<double>());
  }
  json single;
  ASSERT_EQ(run({"train.dropout=false"}, single), 0);
  for (std::size_t i = 0; i < single["iterations"].size(); ++i) {
    EXPECT_NEAR(single["iterations"][i]["loss"].get<double>(), result["iterations"][i]["loss"].get<double>(), 1e-5)
        << "step " << i;
  }
}

}  // namespace
}  // namespace tbench
