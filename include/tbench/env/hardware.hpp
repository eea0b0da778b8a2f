#pragma once
// What a device can do at best: dense peak FLOP/s per precision and memory bandwidth, from vendor
// datasheets. MFU and cross-device prediction stand on these; CPUs are measured (cpu_peak.hpp).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tbench {

struct DeviceSpec {
  std::string name;          // "H100 SXM"
  std::vector<std::string> aliases;  // lower-case fragments that identify it in a device name
  double fp32_tflops = 0;    // non-tensor FP32
  double tf32_tflops = 0;    // dense TF32 tensor (0: none)
  double fp16_tflops = 0;    // dense FP16 tensor, FP32 accumulate
  double bf16_tflops = 0;    // dense BF16 tensor (0: unsupported)
  double memory_gbps = 0;
  std::string source;        // where the figures come from
  // A spec file without tf32_tflops says nothing of TF32 (not "none"): a TF32 run's prediction
  // would fall to the non-tensor FP32 peak, 6x slower on an A100.
  bool tf32_stated = true;
};

// Built-in table: V100, T4, A100, H100, H200, RTX 3090, Titan RTX, L4, A10 ...
const std::vector<DeviceSpec>& known_gpus();

// By name ("H100", "v100", "RTX 3090") or from a device name as CUDA reports it
// ("NVIDIA H100 80GB HBM3"). nullopt when nothing matches.
std::optional<DeviceSpec> find_gpu(const std::string& name);

// A spec file: {"name": ..., "fp32_tflops": ..., "tf32_tflops": ..., "fp16_tflops": ..., "bf16_tflops": ...,
// "memory_gbps": ...}; tf32, fp16 and bf16 optional.
DeviceSpec read_device_spec(const std::string& path);

// Dense peak TFLOP/s of `device` for a training precision ("fp32", "fp16", "bf16"); 0 if unsupported.
double peak_tflops(const DeviceSpec& device, const std::string& precision, bool tf32 = false);

}  // namespace tbench
