#pragma once
// The machine a result was measured on: versions, CPU, memory, BLAS, threads, devices.
#include <string>

#include <nlohmann/json.hpp>

namespace tbench {

// Everything `tbench env` prints and a result's "env" records. Cheap (reads /proc, no benchmarks).
nlohmann::json collect_env();

// Peak resident set size of this process so far, in bytes (VmHWM).
int64_t peak_rss_bytes();

// The name CUDA reports for a device ("NVIDIA H100 80GB HBM3"); "" in builds without CUDA.
std::string cuda_device_name(int64_t index);

// Physical CPU cores (not hyper-threads) of this machine; at least 1.
int physical_cores();

}  // namespace tbench
