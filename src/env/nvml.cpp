// NVIDIA's management library, loaded at run time with dlopen and never linked: the same binary
// runs on machines without a driver, and a CPU build still reports GPUs' clocks when it can.
// Only what a benchmark result needs is read: driver version, current and maximum SM and memory
// clocks (a GPU held at low clocks explains a slow result), and the power limit.
#include <dlfcn.h>

#include <cstdio>
#include <string>

#include "tbench/env/env.hpp"

namespace tbench {
namespace {

using nlohmann::json;

// The few declarations from nvml.h this needs (stable across NVML versions; the _v2/_v3 names
// are the ones nvml.h maps the plain names to).
using NvmlReturn = int;
using NvmlDevice = void*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr int kClockSm = 1, kClockMem = 2;  // nvmlClockType_t: NVML_CLOCK_SM, NVML_CLOCK_MEM
struct NvmlPciInfo {                        // nvmlPciInfo_t as nvmlDeviceGetPciInfo_v3 fills it
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
};

// Owns the dlopen handle; every symbol is looked up before any is called.
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

  void* handle_;
  NvmlApi api_{};
  std::string error_;
};

json not_available(const std::string& reason) {
  return {{"available", false}, {"status", "not available (" + reason + ")"}};
}

// A reading that fails (unsupported on this GPU, no permission) is null, not an error.
json clock_mhz(const NvmlApi& api, NvmlDevice device, int type, bool maximum) {
  unsigned mhz = 0;
  const NvmlReturn rc = (maximum ? api.max_clock : api.clock)(device, type, &mhz);
  return rc == kNvmlSuccess ? json(mhz) : json(nullptr);
}

json device_entry(const NvmlApi& api, unsigned index) {
  NvmlDevice device = nullptr;
  if (const NvmlReturn rc = api.device_by_index(index, &device); rc != kNvmlSuccess) {
    return {{"index", index}, {"error", api.error_string(rc)}};
  }
  json entry = {{"index", index}};
  char name[96] = {0};
  entry["name"] = api.device_name(device, name, sizeof name) == kNvmlSuccess ? json(name) : json(nullptr);
  NvmlPciInfo pci{};
  if (api.pci_info(device, &pci) == kNvmlSuccess) {
    char bus_id[32];
    std::snprintf(bus_id, sizeof bus_id, "%08X:%02X:%02X.0", pci.domain, pci.bus, pci.device);
    entry["pci_bus_id"] = bus_id;
  } else {
    entry["pci_bus_id"] = nullptr;
  }
  entry["sm_clock_mhz"] = clock_mhz(api, device, kClockSm, false);
  entry["max_sm_clock_mhz"] = clock_mhz(api, device, kClockSm, true);
  entry["memory_clock_mhz"] = clock_mhz(api, device, kClockMem, false);
  entry["max_memory_clock_mhz"] = clock_mhz(api, device, kClockMem, true);
  unsigned milliwatts = 0;
  entry["power_limit_w"] =
      api.power_limit(device, &milliwatts) == kNvmlSuccess ? json(milliwatts / 1000.0) : json(nullptr);
  return entry;
}

}  // namespace

json nvml_info(const std::string& library) {
  const NvmlLibrary nvml(library);
  if (!nvml.ok()) return not_available(nvml.error());
  const NvmlApi& api = nvml.api();
  if (const NvmlReturn rc = api.init(); rc != kNvmlSuccess) {
    return not_available(std::string("nvmlInit failed: ") + api.error_string(rc));
  }
  json info = {{"available", true}, {"status", "ok"}, {"library", library}};
  char driver[96] = {0};
  info["driver_version"] = api.driver_version(driver, sizeof driver) == kNvmlSuccess ? json(driver) : json(nullptr);
  unsigned count = 0;
  json devices = json::array();
  if (api.device_count(&count) == kNvmlSuccess) {
    for (unsigned i = 0; i < count; ++i) devices.push_back(device_entry(api, i));
  }
  info["devices"] = devices;
  api.shutdown();
  return info;
}

}  // namespace tbench
