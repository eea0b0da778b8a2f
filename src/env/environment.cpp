// Reads the machine's description from /proc, uname and LibTorch. Each probe is best-effort:
// a field it cannot read is recorded as null rather than guessed.
#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <torch/torch.h>
#include <torch/version.h>

#include <ATen/Version.h>

#if TBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>

#include "tbench/cuda/cuda.hpp"
#endif

#include "tbench/env/cpu_allocator.hpp"
#include "tbench/env/env.hpp"
#include "tbench/json_text.hpp"
#include "tbench/version.hpp"

namespace tbench {
namespace {

using nlohmann::json;

std::string trim(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t\"");
  const auto end = s.find_last_not_of(" \t\"\n");
  return begin == std::string::npos ? "" : s.substr(begin, end - begin + 1);
}

// The value of the first "key: value" (or key=value) line in a file; "" if absent.
std::string field_of(const std::string& path, const std::string& key, char separator) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const auto pos = line.find(separator);
    if (pos != std::string::npos && trim(line.substr(0, pos)) == key) return trim(line.substr(pos + 1));
  }
  return "";
}

// Which BLAS the process really loaded: libblas.so.3 is a Debian alternative (reference BLAS,
// OpenBLAS, ...), and it changes CPU timings by an order of magnitude.
json loaded_blas() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  std::set<std::string> libraries;
  while (std::getline(maps, line)) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    const auto name_at = path.find_last_of('/');
    const std::string name = path.substr(name_at + 1);
    if (name.find("blas") != std::string::npos || name.find("mkl_core") != std::string::npos ||
        name.find("lapack") != std::string::npos) {
      char resolved[4096];
      libraries.insert(realpath(path.c_str(), resolved) ? resolved : path);
    }
  }
  return libraries.empty() ? json(nullptr) : json(std::vector<std::string>(libraries.begin(), libraries.end()));
}

std::string compiler() {
#if defined(__clang__)
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "gcc " __VERSION__;
#else
  return "unknown";
#endif
}

// Which allocator served CPU tensors, and how often its cache did (cpu.allocator in the spec).
json cpu_allocator_info() {
  const CpuAllocatorStats s = cpu_allocator_stats();
  if (!s.installed) return {{"kind", "system"}};
  return {{"kind", "caching"},
          {"cache_limit_bytes", s.cache_limit_bytes},
          {"hits", s.hits},
          {"misses", s.misses},
          {"released", s.released},
          {"cached_bytes", s.cached_bytes},
          {"peak_cached_bytes", s.peak_cached_bytes}};
}

json cpu_info() {
  return {{"model", or_null(field_of("/proc/cpuinfo", "model name", ':'))},
          {"logical_cores", std::thread::hardware_concurrency()},
          {"physical_cores", physical_cores()},
          {"usable_cores", usable_cores()},
          {"torch_threads", torch::get_num_threads()},
          {"torch_interop_threads", torch::get_num_interop_threads()},
          {"omp_num_threads", or_null(std::getenv("OMP_NUM_THREADS") ? std::getenv("OMP_NUM_THREADS") : "")},
          {"blas", loaded_blas()},
          {"allocator", cpu_allocator_info()}};
}

json gpu_info() {
  json gpus = json::array();
#if TBENCH_WITH_CUDA
  for (int64_t i = 0; i < static_cast<int64_t>(torch::cuda::device_count()); ++i) {
    gpus.push_back(cuda::device_info(static_cast<int>(i)));
  }
#endif
  return gpus;
}

json cuda_info() {
  json info = {{"available", torch::cuda::is_available()},
               {"device_count", torch::cuda::device_count()},
               {"built_with_cuda", TBENCH_WITH_CUDA == 1},
               {"arch_list", cuda_arch_list(at::show_config())},
               {"tf32", tf32_state()},
               {"devices", gpu_info()}};
#if TBENCH_WITH_CUDA
  if (torch::cuda::is_available()) info.update(cuda::runtime_info());
#endif
  return info;
}

}  // namespace

std::string cuda_device_name(int64_t index) {
#if TBENCH_WITH_CUDA
  if (index < static_cast<int64_t>(torch::cuda::device_count())) {
    return at::cuda::getDeviceProperties(static_cast<int>(index))->name;
  }
#endif
  (void)index;
  return "";
}

std::string cuda_pci_bus_id(int64_t index) {
#if TBENCH_WITH_CUDA
  if (index < static_cast<int64_t>(torch::cuda::device_count())) {
    return cuda::device_info(static_cast<int>(index)).value("pci_bus_id", "");
  }
#endif
  (void)index;
  return "";
}

int physical_cores() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, physical_id;
  std::set<std::string> cores;
  while (std::getline(in, line)) {
    const auto pos = line.find(':');
    if (pos == std::string::npos) continue;
    const std::string key = trim(line.substr(0, pos)), value = trim(line.substr(pos + 1));
    if (key == "physical id") physical_id = value;
    if (key == "core id") cores.insert(physical_id + "/" + value);
  }
  const int logical = static_cast<int>(std::thread::hardware_concurrency());
  return cores.empty() ? std::max(1, logical) : static_cast<int>(cores.size());
}

int usable_cores() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return physical_cores();
  // Count the allowed processors by core: two hyperthreads of one core are one core.
  std::ifstream in("/proc/cpuinfo");
  std::string line, physical_id;
  int processor = -1;
  std::set<std::string> cores;
  while (std::getline(in, line)) {
    const auto pos = line.find(':');
    if (pos == std::string::npos) continue;
    const std::string key = trim(line.substr(0, pos)), value = trim(line.substr(pos + 1));
    if (key == "processor") processor = std::atoi(value.c_str());
    if (key == "physical id") physical_id = value;
    if (key == "core id" && processor >= 0 && processor < CPU_SETSIZE && CPU_ISSET(processor, &allowed)) {
      cores.insert(physical_id + "/" + value);
    }
  }
  return cores.empty() ? std::max(1, CPU_COUNT(&allowed)) : static_cast<int>(cores.size());
}

int64_t peak_rss_bytes() {
  const std::string kb = field_of("/proc/self/status", "VmHWM", ':');
  return kb.empty() ? 0 : std::atoll(kb.c_str()) * 1024;
}

std::string host_name() {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  return host;
}

json collect_env() {
  const std::string host = host_name();
  struct utsname uts {};
  uname(&uts);
  const std::string ram_kb = field_of("/proc/meminfo", "MemTotal", ':');
  json env = {
      {"tbench", {{"version", version()}, {"git", git_sha()}}},
      {"torch", TORCH_VERSION},
      {"compiler", compiler()},
      {"os", {{"name", or_null(field_of("/etc/os-release", "PRETTY_NAME", '='))},
              {"kernel", std::string(uts.sysname) + " " + uts.release},
              {"arch", uts.machine}}},
      {"host", host},
      {"cpu", cpu_info()},
      {"ram_bytes", ram_kb.empty() ? json(nullptr) : json(std::atoll(ram_kb.c_str()) * 1024)},
      {"cuda", cuda_info()},
      {"nvml", nvml_info()},
  };
  return env;
}

}  // namespace tbench
