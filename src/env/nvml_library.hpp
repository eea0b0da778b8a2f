#pragma once
// NVIDIA's management library, loaded at run time with dlopen and never linked, for env's facts
// (nvml.cpp) and the GPU monitor's readings (nvml_sampler.cpp). Internal to src/env/.
#include <dlfcn.h>

#include <string>

namespace tbench {

// The few declarations from nvml.h this needs (stable across NVML versions; the _v2/_v3 names
// are the ones nvml.h maps the plain names to).
using NvmlReturn = int;
using NvmlDevice = void*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1, kNvmlClockMem = 2;  // nvmlClockType_t: NVML_CLOCK_SM, NVML_CLOCK_MEM
constexpr int kNvmlTemperatureGpu = 0;              // nvmlTemperatureSensors_t: NVML_TEMPERATURE_GPU
struct NvmlPciInfo {  // nvmlPciInfo_t as nvmlDeviceGetPciInfo_v3 fills it
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};

struct NvmlApi {
  NvmlReturn (*init)();
  NvmlReturn (*shutdown)();
  const char* (*error_string)(NvmlReturn);
  NvmlReturn (*driver_version)(char*, unsigned);
  NvmlReturn (*device_count)(unsigned*);
  NvmlReturn (*device_by_index)(unsigned, NvmlDevice*);
  NvmlReturn (*device_name)(NvmlDevice, char*, unsigned);
  NvmlReturn (*pci_info)(NvmlDevice, NvmlPciInfo*);
  NvmlReturn (*clock)(NvmlDevice, int, unsigned*);
  NvmlReturn (*max_clock)(NvmlDevice, int, unsigned*);
  NvmlReturn (*power_limit)(NvmlDevice, unsigned*);
  // Optional (null where this driver's library lacks them): the readings GpuMonitor samples.
  NvmlReturn (*device_by_pci_bus_id)(const char*, NvmlDevice*);
  NvmlReturn (*power_usage)(NvmlDevice, unsigned*);                 // milliwatts
  NvmlReturn (*temperature)(NvmlDevice, int, unsigned*);            // degrees C
  NvmlReturn (*throttle_reasons)(NvmlDevice, unsigned long long*);  // nvmlClocksEventReasons bits
  NvmlReturn (*total_energy)(NvmlDevice, unsigned long long*);      // millijoules since the driver loaded
};

// Owns the dlopen handle; every required symbol is looked up before any is called.
class NvmlLibrary {
 public:
  explicit NvmlLibrary(const std::string& path) : handle_(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    if (!handle_) {
      const char* why = dlerror();
      error_ = why ? why : "dlopen failed";
      return;
    }
    bind(api_.init, "nvmlInit_v2");
    bind(api_.shutdown, "nvmlShutdown");
    bind(api_.error_string, "nvmlErrorString");
    bind(api_.driver_version, "nvmlSystemGetDriverVersion");
    bind(api_.device_count, "nvmlDeviceGetCount_v2");
    bind(api_.device_by_index, "nvmlDeviceGetHandleByIndex_v2");
    bind(api_.device_name, "nvmlDeviceGetName");
    bind(api_.pci_info, "nvmlDeviceGetPciInfo_v3");
    bind(api_.clock, "nvmlDeviceGetClockInfo");
    bind(api_.max_clock, "nvmlDeviceGetMaxClockInfo");
    bind(api_.power_limit, "nvmlDeviceGetPowerManagementLimit");
    bind_optional(api_.device_by_pci_bus_id, "nvmlDeviceGetHandleByPciBusId_v2");
    bind_optional(api_.power_usage, "nvmlDeviceGetPowerUsage");
    bind_optional(api_.temperature, "nvmlDeviceGetTemperature");
    bind_optional(api_.throttle_reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
    bind_optional(api_.total_energy, "nvmlDeviceGetTotalEnergyConsumption");
  }
  ~NvmlLibrary() {
    if (handle_) dlclose(handle_);
  }
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  const NvmlApi& api() const { return api_; }

 private:
  template <typename Fn>
  void bind(Fn& fn, const char* name) {
    fn = reinterpret_cast<Fn>(dlsym(handle_, name));
    if (!fn && error_.empty()) error_ = std::string("missing symbol ") + name;
  }
  template <typename Fn>
  void bind_optional(Fn& fn, const char* name) {
    fn = reinterpret_cast<Fn>(dlsym(handle_, name));
  }

  void* handle_;
  NvmlApi api_{};
  std::string error_;
};

}  // namespace tbench
