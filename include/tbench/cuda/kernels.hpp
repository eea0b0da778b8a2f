#pragma once
// tbench's own CUDA kernels (src/cuda/*.cu), built by nvcc in CUDA builds where CMake finds a CUDA
// compiler (TBENCH_WITH_CUDA_KERNELS=1): call them only under that macro. The header stays light
// (ATen's Tensor only), because nvcc compiles the files that include it.
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>

namespace tbench::cuda {

// model.fused_layer_norm's pass on the GPU (see models/residual_layer_norm.hpp for the arithmetic):
// output = LayerNorm(residual + Dropout_p(x)) · weight + bias over the last dimension, one warp per
// row. Fills the tensors it is given: output and sum (the sum's dtype), mean and rstd (float, one
// per row), keep_mask (bool, x's shape; left alone when dropout_p is 0), matmul_copy (half or bf16,
// of a float output; left alone when undefined). Dropout draws from the default CUDA generator's
// Philox stream, as native_dropout does, so it is graph-safe.
void residual_layer_norm_forward(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight,
                                 const at::Tensor& bias, double eps, double dropout_p, const at::Tensor& output,
                                 const at::Tensor& sum, const at::Tensor& mean, const at::Tensor& rstd,
                                 const at::Tensor& keep_mask, const at::Tensor& matmul_copy);

// The widest row the backward takes: each block keeps its four rows' column sums in shared memory
// (32 bytes a column), within the 48 KiB a launch may have without opting in.
constexpr int64_t kResidualNormBackwardMaxCols = 1536;

// How many blocks the backward launches for `rows` rows on `device`: the first dimension of the
// partial column sums it fills.
int64_t residual_layer_norm_backward_blocks(int64_t rows, c10::Device device);

// The pass's backward in one kernel (see models/residual_layer_norm.hpp for the arithmetic). Reads
// grad_output (the sum's dtype) and grad_copy (half or bf16), either of which may be undefined, the
// saved sum, mean, rstd and keep_mask, and the weight. Fills grad_residual (the sum's dtype),
// grad_x (x's dtype; left alone when undefined, where the caller takes grad_residual for it) and
// partials, float [residual_layer_norm_backward_blocks(rows), 2, cols]: each block's column sums of
// g·x̂ (the weight's gradient) and of g (the bias's), which the caller adds up.
void residual_layer_norm_backward(const at::Tensor& grad_output, const at::Tensor& grad_copy, const at::Tensor& sum,
                                  const at::Tensor& mean, const at::Tensor& rstd, const at::Tensor& weight,
                                  const at::Tensor& keep_mask, float dropout_scale, const at::Tensor& grad_residual,
                                  const at::Tensor& grad_x, const at::Tensor& partials);

}  // namespace tbench::cuda
