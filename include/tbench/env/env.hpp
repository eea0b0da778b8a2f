#pragma once
// The machine a result was measured on: versions, CPU, memory, BLAS, threads, devices.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tbench {

// Everything `tbench env` prints and a result's "env" records. Cheap (reads /proc, no benchmarks).
nlohmann::json collect_env();

// This machine's host name, as recorded in results and placed in output paths ({host}).
std::string host_name();

// Peak resident set size of this process so far, in bytes (VmHWM).
int64_t peak_rss_bytes();

// The name CUDA reports for a device ("NVIDIA H100 80GB HBM3"); "" in builds without CUDA.
std::string cuda_device_name(int64_t index);
// Its PCI bus id ("00000000:3B:00.0"), which NVML finds it by; "" in builds without CUDA.
std::string cuda_pci_bus_id(int64_t index);

// Physical CPU cores (not hyper-threads) of this machine; at least 1.
int physical_cores();
// The physical cores this process may run on: its CPU affinity (taskset, srun --cpu-bind, a
// container's cpuset) counted by core. What `threads: 0` shares out.
int usable_cores();

// NVML, loaded with dlopen at run time (never linked), so CPU builds and machines without a
// driver run the same binary: {"available": true, "driver_version", "devices": [clocks, power
// limit, pci_bus_id]}, or {"available": false, "status": "not available (<reason>)"}.
nlohmann::json nvml_info(const std::string& library = "libnvidia-ml.so.1");

// The CUDA architectures this LibTorch was compiled for, as torch.cuda.get_arch_list() gives
// them ("sm_80", ..., "compute_90"), parsed from at::show_config()'s "NVCC architecture flags"
// line; empty when there is no such line (CPU builds).
std::vector<std::string> cuda_arch_list(const std::string& show_config);

// TF32 for fp32 matmuls (cuBLAS) and convolutions (cuDNN): `cuda.tf32` sets both; the state
// is recorded in env.cuda.tf32.
void set_cuda_tf32(bool enabled);
nlohmann::json tf32_state();

}  // namespace tbench
