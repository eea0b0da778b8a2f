#pragma once
// What this build's LibTorch offers, decided at compile time from its version and CUDA support.
// The spec checks these, so asking for something the build cannot do is a bad-input error before
// any work starts, and code that calls an API only some versions have is guarded by the macros.
#include <torch/version.h>

#ifndef TBENCH_WITH_CUDA
#define TBENCH_WITH_CUDA 0
#endif

// tbench's own nvcc-built kernels (src/cuda/*.cu): a CUDA build where CMake found a CUDA compiler.
#ifndef TBENCH_WITH_CUDA_KERNELS
#define TBENCH_WITH_CUDA_KERNELS 0
#endif

#define TBENCH_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

// at::scaled_dot_product_attention (fused attention kernels).
#define TBENCH_HAS_SDPA TBENCH_TORCH_AT_LEAST(2, 0)
// at::_fused_adamw_: a CUDA kernel since torch 2.0, a CPU kernel since 2.4.
#define TBENCH_HAS_FUSED_ADAMW_CUDA (TBENCH_WITH_CUDA && TBENCH_TORCH_AT_LEAST(2, 0))
#define TBENCH_HAS_FUSED_ADAMW_CPU TBENCH_TORCH_AT_LEAST(2, 4)
// CUDA graph capture of a whole train step needs at::cuda::CUDAGraph and the overload of
// _fused_adamw_ that reads the learning rate from a device tensor (torch >= 2.2), so a replayed
// graph follows the LR schedule.
#define TBENCH_HAS_CUDA_GRAPH_STEP (TBENCH_WITH_CUDA && TBENCH_TORCH_AT_LEAST(2, 2))

// at::_foreach_mul_(TensorList, const Tensor&): every gradient scaled by a device scalar in one
// launch, without reading it on the host (added in torch 2.1; 2.2 is the first version checked).
#define TBENCH_HAS_FOREACH_MUL_BY_TENSOR TBENCH_TORCH_AT_LEAST(2, 2)

// c10d::TCPStoreOptions::useLibUV (torch >= 2.2; on by default from 2.4).
#define TBENCH_HAS_TCPSTORE_LIBUV_OPTION TBENCH_TORCH_AT_LEAST(2, 2)

namespace tbench::features {

inline constexpr bool kSdpa = TBENCH_HAS_SDPA;
inline constexpr bool kCudaGraphStep = TBENCH_HAS_CUDA_GRAPH_STEP;
inline constexpr bool kCudaKernels = TBENCH_WITH_CUDA_KERNELS;

// Whether at::_fused_adamw_ has a kernel for this device type in this build.
constexpr bool fused_adamw(bool on_cuda) {
  return on_cuda ? TBENCH_HAS_FUSED_ADAMW_CUDA : TBENCH_HAS_FUSED_ADAMW_CPU;
}

}  // namespace tbench::features
