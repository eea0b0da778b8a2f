// NVIDIA's management library, loaded at run time with dlopen and never linked: the same binary
// runs on machines without a driver, and a CPU build still reports GPUs' clocks when it can.
// Only what a benchmark result needs is read: driver version, current and maximum SM and memory
// clocks (a GPU held at low clocks explains a slow result), and the power limit.
#include <cstdio>
#include <string>

#include "nvml_library.hpp"
#include "tbench/env/env.hpp"

namespace tbench {
namespace {

using nlohmann::json;

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
  entry["sm_clock_mhz"] = clock_mhz(api, device, kNvmlClockSm, false);
  entry["max_sm_clock_mhz"] = clock_mhz(api, device, kNvmlClockSm, true);
  entry["memory_clock_mhz"] = clock_mhz(api, device, kNvmlClockMem, false);
  entry["max_memory_clock_mhz"] = clock_mhz(api, device, kNvmlClockMem, true);
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
