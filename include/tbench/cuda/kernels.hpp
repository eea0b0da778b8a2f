#pragma once
// tbench's own CUDA kernels (src/cuda/*.cu), built by nvcc in CUDA builds where CMake finds a CUDA
// compiler (TBENCH_WITH_CUDA_KERNELS=1): call them only under that macro. The header stays light
// (ATen's Tensor only), because nvcc compiles the files that include it.
#include <ATen/core/Tensor.h>

namespace tbench::cuda {

// model.fused_layer_norm's pass on the GPU (see models/residual_layer_norm.hpp for the arithmetic):
// output = LayerNorm(residual + Dropout_p(x)) · weight + bias over the last dimension, one warp per
// row. Fills the tensors it is given: output and sum (the sum's dtype), mean and rstd (float, one
// per row), keep_mask (bool, x's shape; left alone when dropout_p is 0). Dropout draws from the
// default CUDA generator's Philox stream, as native_dropout does, so it is graph-safe.
void residual_layer_norm_forward(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight,
                                 const at::Tensor& bias, double eps, double dropout_p, const at::Tensor& output,
                                 const at::Tensor& sum, const at::Tensor& mean, const at::Tensor& rstd,
                                 const at::Tensor& keep_mask);

}  // namespace tbench::cuda
