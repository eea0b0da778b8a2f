// NOT COMPILED in the CPU build: src/cuda/ builds only with a CUDA LibTorch (TBENCH_WITH_CUDA).
// Written against torch 2.x and the CUDA runtime API (CUDA 12/13: only cudaDeviceProp fields
// that CUDA 13 kept are read; clocks come from NVML, src/env/nvml.cpp).
#include <cstdio>
#include <string>

#include <ATen/cuda/CUDAContext.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <cuda_runtime_api.h>

#include "tbench/cuda/cuda.hpp"

namespace tbench::cuda {
namespace {

using nlohmann::json;

// 12080 -> "12.8" (CUDA encodes versions as 1000 x major + 10 x minor).
std::string cuda_version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v / 10 % 100); }

// 90100 -> "9.1.0" for cuDNN 9 (10000 x major + 100 x minor + patch); 8902 -> "8.9.2" for cuDNN 8.
std::string cudnn_version_text(long v) {
  if (v >= 90000) return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
  return std::to_string(v / 1000) + "." + std::to_string(v / 100 % 10) + "." + std::to_string(v % 100);
}

// The form NVML and nvidia-smi use ("00000000:3B:00.0"), so env.nvml's entries can be matched.
std::string pci_bus_id(const cudaDeviceProp& p) {
  char text[32];
  std::snprintf(text, sizeof text, "%08X:%02X:%02X.0", static_cast<unsigned>(p.pciDomainID),
                static_cast<unsigned>(p.pciBusID), static_cast<unsigned>(p.pciDeviceID));
  return text;
}

}  // namespace

json runtime_info() {
  int runtime = 0, driver = 0;
  json info = {{"runtime_version", nullptr}, {"driver_api_version", nullptr}, {"built_with", cuda_version_text(CUDART_VERSION)}};
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) info["runtime_version"] = cuda_version_text(runtime);
  if (cudaDriverGetVersion(&driver) == cudaSuccess) info["driver_api_version"] = cuda_version_text(driver);
  const auto& hooks = at::detail::getCUDAHooks();
  info["cudnn_version"] = hooks.compiledWithCuDNN() ? json(cudnn_version_text(hooks.versionCuDNN())) : json(nullptr);
  return info;
}

json device_info(int device_index) {
  const cudaDeviceProp* p = at::cuda::getDeviceProperties(device_index);
  return {{"index", device_index},
          {"name", p->name},
          {"capability", std::to_string(p->major) + "." + std::to_string(p->minor)},
          {"sms", p->multiProcessorCount},
          {"memory_bytes", static_cast<int64_t>(p->totalGlobalMem)},
          {"l2_cache_bytes", p->l2CacheSize},
          {"pci_bus_id", pci_bus_id(*p)}};
}

}  // namespace tbench::cuda
