// NOT COMPILED in the CPU build: nvcc builds src/cuda/*.cu only in CUDA builds where CMake finds a
// CUDA compiler (TBENCH_WITH_CUDA_KERNELS). model.fused_layer_norm's kernel; the arithmetic, and
// the CPU loop it must agree with, are in src/models/residual_layer_norm.cpp.
//
// output = LayerNorm(residual + Dropout_p(x)) · weight + bias, over rows of `cols` values. One
// warp per row: a row of BERT-base is 768 values, 24 per lane, so a warp's shuffles reduce it
// without shared memory or block barriers. Three sweeps over the row: the sum (written, and kept
// for the backward), its variance about the mean (two-pass, as stable as layer_norm's Welford),
// and the output. The second and third sweeps re-read the row the same lanes just wrote, from L1/L2.
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <ATen/cuda/PhiloxUtils.cuh>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <curand_kernel.h>

#include <mutex>
#include <optional>

#include "tbench/cuda/kernels.hpp"

namespace tbench::cuda {
namespace {

constexpr int kWarp = 32;
constexpr int kRowsPerBlock = 4;  // 128 threads: four rows per block

__device__ float warp_sum(float value) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

// `keep` is null when nothing is dropped. Dropout rounds as native_dropout does: the kept value
// times 1/keep_prob, rounded to x's dtype; the sum is rounded to Out before the statistics see it.
template <typename In, typename Out>
__global__ void residual_layer_norm_kernel(const In* __restrict__ x, const Out* __restrict__ residual,
                                           const float* __restrict__ weight, const float* __restrict__ bias,
                                           Out* sum, Out* __restrict__ out, float* __restrict__ row_mean,
                                           float* __restrict__ row_rstd, bool* __restrict__ keep, int64_t rows,
                                           int64_t cols, float eps, float keep_prob, at::PhiloxCudaState philox) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.y;
  if (row >= rows) return;  // the whole warp leaves together: a warp is one row
  const int lane = threadIdx.x;
  const int64_t base = row * cols;

  curandStatePhilox4_32_10_t rng;
  if (keep) {
    const auto seed_and_offset = at::cuda::philox::unpack(philox);
    curand_init(std::get<0>(seed_and_offset), static_cast<uint64_t>(row) * kWarp + lane,
                std::get<1>(seed_and_offset), &rng);
  }
  const float scale = 1.0f / keep_prob;

  float total = 0.0f;
  for (int64_t j = lane; j < cols; j += kWarp) {
    float dropped = static_cast<float>(x[base + j]);
    if (keep) {
      const bool kept = curand_uniform(&rng) < keep_prob;
      keep[base + j] = kept;
      dropped = kept ? static_cast<float>(static_cast<In>(dropped * scale)) : 0.0f;
    }
    const Out s = static_cast<Out>(static_cast<float>(residual[base + j]) + dropped);
    sum[base + j] = s;
    total += static_cast<float>(s);
  }
  const float mean = warp_sum(total) / static_cast<float>(cols);

  float squares = 0.0f;
  for (int64_t j = lane; j < cols; j += kWarp) {
    const float centred = static_cast<float>(sum[base + j]) - mean;
    squares += centred * centred;
  }
  const float rstd = rsqrtf(warp_sum(squares) / static_cast<float>(cols) + eps);

  for (int64_t j = lane; j < cols; j += kWarp) {
    const float normalised = (static_cast<float>(sum[base + j]) - mean) * rstd;
    out[base + j] = static_cast<Out>(normalised * weight[j] + bias[j]);
  }
  if (lane == 0) {
    row_mean[row] = mean;
    row_rstd[row] = rstd;
  }
}

struct Launch {
  const at::Tensor &x, &residual, &weight, &bias, &output, &sum, &mean, &rstd, &keep_mask;
  int64_t rows, cols;
  float eps, keep_prob;
  at::PhiloxCudaState philox;

  template <typename In, typename Out>
  void run() const {
    const dim3 block(kWarp, kRowsPerBlock);
    const dim3 grid(static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock));
    residual_layer_norm_kernel<In, Out><<<grid, block, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<In>(), residual.data_ptr<Out>(), weight.data_ptr<float>(), bias.data_ptr<float>(),
        sum.data_ptr<Out>(), output.data_ptr<Out>(), mean.data_ptr<float>(), rstd.data_ptr<float>(),
        keep_mask.defined() ? keep_mask.data_ptr<bool>() : nullptr, rows, cols, eps, keep_prob, philox);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }

  template <typename In>
  void run_for_input() const {
    switch (sum.scalar_type()) {
      case at::kHalf: return run<In, c10::Half>();
      case at::kBFloat16: return run<In, c10::BFloat16>();
      case at::kFloat: return run<In, float>();
      default: TORCH_CHECK(false, "model.fused_layer_norm: unsupported sum dtype ", sum.scalar_type());
    }
  }

  void operator()() const {
    switch (x.scalar_type()) {
      case at::kHalf: return run_for_input<c10::Half>();
      case at::kBFloat16: return run_for_input<c10::BFloat16>();
      case at::kFloat: return run_for_input<float>();
      default: TORCH_CHECK(false, "model.fused_layer_norm: unsupported input dtype ", x.scalar_type());
    }
  }
};

// The default generator's Philox seed and offset for this launch, advanced past the numbers each
// thread draws (rounded up to a multiple of 4, as PyTorch's kernels reserve them). Under graph
// capture the offset is read from the graph's own counter, so every replay draws new masks.
at::PhiloxCudaState reserve_random_numbers(int64_t per_thread) {
  auto* generator = at::get_generator_or_default<at::CUDAGeneratorImpl>(std::nullopt,
                                                                        at::cuda::detail::getDefaultCUDAGenerator());
  std::lock_guard<std::mutex> lock(generator->mutex_);
  return generator->philox_cuda_state(static_cast<uint64_t>((per_thread + 3) / 4 * 4));
}

}  // namespace

void residual_layer_norm_forward(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight,
                                 const at::Tensor& bias, double eps, double dropout_p, const at::Tensor& output,
                                 const at::Tensor& sum, const at::Tensor& mean, const at::Tensor& rstd,
                                 const at::Tensor& keep_mask) {
  TORCH_CHECK(x.is_cuda() && x.is_contiguous() && residual.is_contiguous() && sum.is_contiguous() &&
                  output.is_contiguous(),
              "model.fused_layer_norm: the CUDA pass takes contiguous CUDA tensors");
  TORCH_CHECK(residual.scalar_type() == sum.scalar_type() && output.scalar_type() == sum.scalar_type(),
              "model.fused_layer_norm: the residual, sum and output must share a dtype");
  TORCH_CHECK(dropout_p == 0 || keep_mask.defined(), "model.fused_layer_norm: dropout needs a keep mask");
  const c10::cuda::CUDAGuard device_guard(x.device());
  const int64_t cols = x.size(-1), rows = x.numel() / cols;
  if (rows == 0) return;
  const bool dropout = dropout_p > 0;
  const at::Tensor no_mask;
  const Launch launch{x,
                      residual,
                      weight,
                      bias,
                      output,
                      sum,
                      mean,
                      rstd,
                      dropout ? keep_mask : no_mask,
                      rows,
                      cols,
                      static_cast<float>(eps),
                      static_cast<float>(1.0 - dropout_p),
                      dropout ? reserve_random_numbers((cols + kWarp - 1) / kWarp) : at::PhiloxCudaState()};
  launch();
}

}  // namespace tbench::cuda
