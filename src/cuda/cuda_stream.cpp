// NOT COMPILED in the CPU build: src/cuda/ builds only with a CUDA LibTorch (TBENCH_WITH_CUDA).
#include <c10/cuda/CUDAStream.h>

#include "tbench/cuda/cuda.hpp"

namespace tbench::cuda {

void wait_for_current_stream(int device_index) {
  c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device_index)).synchronize();
}

}  // namespace tbench::cuda
