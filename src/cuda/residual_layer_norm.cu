// NOT COMPILED in the CPU build: nvcc builds src/cuda/*.cu only in CUDA builds where CMake finds a
// CUDA compiler (TBENCH_WITH_CUDA_KERNELS). model.fused_layer_norm's kernels; the arithmetic, and
// the CPU loops they must agree with, are in src/models/residual_layer_norm.cpp.
//
// Forward: output = LayerNorm(residual + Dropout_p(x)) · weight + bias, over rows of `cols` values,
// and under autocast the output's low-precision copy for the next matmul. One warp per row: a row
// of BERT-base is 768 values, 24 per lane, so a warp's shuffles reduce it without shared memory or
// block barriers. Three sweeps over the row: the sum (written, and kept for the backward), its
// variance about the mean (two-pass, as stable as layer_norm's Welford), and the output. The
// second and third sweeps re-read the row the same lanes just wrote, from L1/L2.
//
// Backward: one warp per row again, two sweeps (the row's two dot products, then the gradients),
// and each warp adds its rows' g·x̂ and g into its own column sums in shared memory; at the end the
// block adds its warps' sums and writes them out, one row of partials per block.
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <ATen/cuda/PhiloxUtils.cuh>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <curand_kernel.h>

#include <algorithm>
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
// `copy` is null where no matmul copy is asked for (Copy is then float, unused); it gets the output
// rounded as autocast's cast rounds it.
template <typename In, typename Out, typename Copy>
__global__ void residual_layer_norm_kernel(const In* __restrict__ x, const Out* __restrict__ residual,
                                           const float* __restrict__ weight, const float* __restrict__ bias,
                                           Out* sum, Out* __restrict__ out, Copy* __restrict__ copy,
                                           float* __restrict__ row_mean, float* __restrict__ row_rstd,
                                           bool* __restrict__ keep, int64_t rows, int64_t cols, float eps,
                                           float keep_prob, at::PhiloxCudaState philox) {
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
    const Out value = static_cast<Out>(normalised * weight[j] + bias[j]);
    out[base + j] = value;
    if (copy) copy[base + j] = static_cast<Copy>(static_cast<float>(value));
  }
  if (lane == 0) {
    row_mean[row] = mean;
    row_rstd[row] = rstd;
  }
}

// Calls launch.run<In, Out, Copy>() for x's dtype (In), the sum's (Out) and the matmul copy's or
// its gradient's (Copy). A copy is only ever of a float sum (autocast's residual stream); without
// one, Copy is float and its pointer null.
template <typename In, typename Launcher>
void dispatch_sum_and_copy(at::ScalarType sum, const at::Tensor& copy, const Launcher& launch) {
  if (copy.defined()) {
    TORCH_CHECK(sum == at::kFloat, "model.fused_layer_norm: the matmul's copy is of a float output");
    switch (copy.scalar_type()) {
      case at::kHalf: return launch.template run<In, float, c10::Half>();
      case at::kBFloat16: return launch.template run<In, float, c10::BFloat16>();
      default: TORCH_CHECK(false, "model.fused_layer_norm: unsupported copy dtype ", copy.scalar_type());
    }
  }
  switch (sum) {
    case at::kHalf: return launch.template run<In, c10::Half, float>();
    case at::kBFloat16: return launch.template run<In, c10::BFloat16, float>();
    case at::kFloat: return launch.template run<In, float, float>();
    default: TORCH_CHECK(false, "model.fused_layer_norm: unsupported sum dtype ", sum);
  }
}

template <typename Launcher>
void dispatch_dtypes(at::ScalarType input, at::ScalarType sum, const at::Tensor& copy, const Launcher& launch) {
  switch (input) {
    case at::kHalf: return dispatch_sum_and_copy<c10::Half>(sum, copy, launch);
    case at::kBFloat16: return dispatch_sum_and_copy<c10::BFloat16>(sum, copy, launch);
    case at::kFloat: return dispatch_sum_and_copy<float>(sum, copy, launch);
    default: TORCH_CHECK(false, "model.fused_layer_norm: unsupported input dtype ", input);
  }
}

struct Launch {
  const at::Tensor &x, &residual, &weight, &bias, &output, &sum, &mean, &rstd, &keep_mask, &matmul_copy;
  int64_t rows, cols;
  float eps, keep_prob;
  at::PhiloxCudaState philox;

  template <typename In, typename Out, typename Copy>
  void run() const {
    const dim3 block(kWarp, kRowsPerBlock);
    const dim3 grid(static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock));
    residual_layer_norm_kernel<In, Out, Copy><<<grid, block, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<In>(), residual.data_ptr<Out>(), weight.data_ptr<float>(), bias.data_ptr<float>(),
        sum.data_ptr<Out>(), output.data_ptr<Out>(), matmul_copy.defined() ? matmul_copy.data_ptr<Copy>() : nullptr,
        mean.data_ptr<float>(), rstd.data_ptr<float>(), keep_mask.defined() ? keep_mask.data_ptr<bool>() : nullptr,
        rows, cols, eps, keep_prob, philox);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }

  void operator()() const { dispatch_dtypes(x.scalar_type(), sum.scalar_type(), matmul_copy, *this); }
};

// The gradient reaching the output at one element: the stream's plus the matmul copy's (either
// pointer may be null).
template <typename Out, typename Copy>
__device__ float incoming_gradient(const Out* grad_output, const Copy* grad_copy, int64_t at) {
  float g = grad_output ? static_cast<float>(grad_output[at]) : 0.0f;
  if (grad_copy) g += static_cast<float>(grad_copy[at]);
  return g;
}

// The backward, rows striding over the grid. With g the incoming gradient and x̂ = (sum − mean)·rstd:
//   d sum = rstd · (g·w − mean(g·w) − x̂ · mean(g·w·x̂))        (layer_norm's backward)
//   d x   = round_x(round_x(d sum) · keep · 1/(1 − p))           (dropout's, as LibTorch rounds it)
// Each warp adds its rows' g·x̂ and g into its own slice of shared memory (lane j owns columns
// j, j + 32, …, so no two lanes touch one value), then the block writes the sum of its warps'.
template <typename In, typename Out, typename Copy>
__global__ void residual_layer_norm_backward_kernel(const Out* __restrict__ grad_output,
                                                    const Copy* __restrict__ grad_copy, const Out* __restrict__ sum,
                                                    const float* __restrict__ row_mean,
                                                    const float* __restrict__ row_rstd,
                                                    const float* __restrict__ weight, const bool* __restrict__ keep,
                                                    Out* __restrict__ grad_residual, In* __restrict__ grad_x,
                                                    float* __restrict__ partials, int64_t rows, int64_t cols,
                                                    float scale) {
  extern __shared__ float column_sums[];  // [kRowsPerBlock][2][cols]
  const int warp = threadIdx.y, lane = threadIdx.x;
  float* weight_sums = column_sums + static_cast<int64_t>(warp) * 2 * cols;
  float* bias_sums = weight_sums + cols;
  for (int64_t j = lane; j < cols; j += kWarp) {
    weight_sums[j] = 0.0f;
    bias_sums[j] = 0.0f;
  }
  const float inv_cols = 1.0f / static_cast<float>(cols);
  const int64_t row_stride = static_cast<int64_t>(gridDim.x) * kRowsPerBlock;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + warp; row < rows; row += row_stride) {
    const int64_t base = row * cols;
    const float mean = row_mean[row], rstd = row_rstd[row];
    float dot = 0.0f, dot_normalised = 0.0f;
    for (int64_t j = lane; j < cols; j += kWarp) {
      const float g = incoming_gradient(grad_output, grad_copy, base + j);
      const float normalised = (static_cast<float>(sum[base + j]) - mean) * rstd;
      dot += g * weight[j];
      dot_normalised += g * weight[j] * normalised;
      weight_sums[j] += g * normalised;
      bias_sums[j] += g;
    }
    const float mean_dot = warp_sum(dot) * inv_cols, mean_dot_normalised = warp_sum(dot_normalised) * inv_cols;
    for (int64_t j = lane; j < cols; j += kWarp) {
      const float g = incoming_gradient(grad_output, grad_copy, base + j);
      const float normalised = (static_cast<float>(sum[base + j]) - mean) * rstd;
      const Out d = static_cast<Out>(rstd * (g * weight[j] - mean_dot - normalised * mean_dot_normalised));
      grad_residual[base + j] = d;
      if (!grad_x) continue;
      In gx = static_cast<In>(static_cast<float>(d));
      if (keep) gx = keep[base + j] ? static_cast<In>(static_cast<float>(gx) * scale) : static_cast<In>(0.0f);
      grad_x[base + j] = gx;
    }
  }
  __syncthreads();
  const int threads = kWarp * kRowsPerBlock, thread = warp * kWarp + lane;
  for (int64_t j = thread; j < 2 * cols; j += threads) {
    float total = 0.0f;
    for (int w = 0; w < kRowsPerBlock; ++w) total += column_sums[static_cast<int64_t>(w) * 2 * cols + j];
    partials[static_cast<int64_t>(blockIdx.x) * 2 * cols + j] = total;
  }
}

struct BackwardLaunch {
  const at::Tensor &grad_output, &grad_copy, &sum, &mean, &rstd, &weight, &keep_mask, &grad_residual, &grad_x,
      &partials;
  int64_t rows, cols;
  float scale;

  template <typename In, typename Out, typename Copy>
  void run() const {
    const dim3 block(kWarp, kRowsPerBlock);
    const dim3 grid(static_cast<unsigned>(partials.size(0)));
    const size_t shared_bytes = sizeof(float) * kRowsPerBlock * 2 * static_cast<size_t>(cols);
    residual_layer_norm_backward_kernel<In, Out, Copy><<<grid, block, shared_bytes, at::cuda::getCurrentCUDAStream()>>>(
        grad_output.defined() ? grad_output.data_ptr<Out>() : nullptr,
        grad_copy.defined() ? grad_copy.data_ptr<Copy>() : nullptr, sum.data_ptr<Out>(), mean.data_ptr<float>(),
        rstd.data_ptr<float>(), weight.data_ptr<float>(), keep_mask.defined() ? keep_mask.data_ptr<bool>() : nullptr,
        grad_residual.data_ptr<Out>(), grad_x.defined() ? grad_x.data_ptr<In>() : nullptr, partials.data_ptr<float>(),
        rows, cols, scale);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }

  // x's dtype is grad_x's, or the sum's where the caller takes the residual's gradient for x's.
  void operator()() const {
    dispatch_dtypes(grad_x.defined() ? grad_x.scalar_type() : sum.scalar_type(), sum.scalar_type(), grad_copy, *this);
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
                                 const at::Tensor& keep_mask, const at::Tensor& matmul_copy) {
  TORCH_CHECK(x.is_cuda() && x.is_contiguous() && residual.is_contiguous() && sum.is_contiguous() &&
                  output.is_contiguous() && (!matmul_copy.defined() || matmul_copy.is_contiguous()),
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
                      matmul_copy,
                      rows,
                      cols,
                      static_cast<float>(eps),
                      static_cast<float>(1.0 - dropout_p),
                      dropout ? reserve_random_numbers((cols + kWarp - 1) / kWarp) : at::PhiloxCudaState()};
  launch();
}

int64_t residual_layer_norm_backward_blocks(int64_t rows, c10::Device device) {
  // Four blocks an SM (16 warps, and 4 × 32 bytes a column of shared memory), and no more: every
  // block writes a row of partials for the caller to read back, so at BERT-base's 4096 rows a
  // step (batch 32, seq 128) each warp takes about two rows rather than one. A first guess, for
  // the GPU session's `norm` stage to weigh.
  const int64_t sms = at::cuda::getDeviceProperties(device.index())->multiProcessorCount;
  const int64_t needed = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  return std::max<int64_t>(1, std::min<int64_t>(needed, sms * 4));
}

void residual_layer_norm_backward(const at::Tensor& grad_output, const at::Tensor& grad_copy, const at::Tensor& sum,
                                  const at::Tensor& mean, const at::Tensor& rstd, const at::Tensor& weight,
                                  const at::Tensor& keep_mask, float dropout_scale, const at::Tensor& grad_residual,
                                  const at::Tensor& grad_x, const at::Tensor& partials) {
  const auto contiguous_or_absent = [](const at::Tensor& t) { return !t.defined() || t.is_contiguous(); };
  TORCH_CHECK(sum.is_cuda() && sum.is_contiguous() && grad_residual.is_contiguous() && partials.is_contiguous() &&
                  contiguous_or_absent(grad_output) && contiguous_or_absent(grad_copy) && contiguous_or_absent(grad_x),
              "model.fused_layer_norm: the CUDA backward takes contiguous CUDA tensors");
  TORCH_CHECK(grad_output.defined() || grad_copy.defined(), "model.fused_layer_norm: the backward needs a gradient");
  TORCH_CHECK(!grad_output.defined() || grad_output.scalar_type() == sum.scalar_type(),
              "model.fused_layer_norm: the output's gradient must have the sum's dtype");
  const int64_t cols = sum.size(-1), rows = sum.numel() / cols;
  TORCH_CHECK(cols <= kResidualNormBackwardMaxCols, "model.fused_layer_norm: the CUDA backward takes rows of at most ",
              kResidualNormBackwardMaxCols, " values, got ", cols);
  TORCH_CHECK(partials.dim() == 3 && partials.size(1) == 2 && partials.size(2) == cols &&
                  partials.scalar_type() == at::kFloat,
              "model.fused_layer_norm: the partial column sums must be float [blocks, 2, cols]");
  const c10::cuda::CUDAGuard device_guard(sum.device());
  if (rows == 0) {
    partials.zero_();
    return;
  }
  const BackwardLaunch launch{grad_output, grad_copy, sum,  mean, rstd, weight, keep_mask, grad_residual, grad_x,
                              partials,    rows,      cols, dropout_scale};
  launch();
}

}  // namespace tbench::cuda
