#pragma once
// The machine a result was measured on: versions, CPU, memory, BLAS, threads, devices.
#include <nlohmann/json.hpp>

namespace tbench {

// Everything `tbench env` prints and a result's "env" records. Cheap (reads /proc, no benchmarks).
nlohmann::json collect_env();

// Peak resident set size of this process so far, in bytes (VmHWM).
int64_t peak_rss_bytes();

// Physical CPU cores (not hyper-threads) of this machine; at least 1.
int physical_cores();

}  // namespace tbench
