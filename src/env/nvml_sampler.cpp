// GpuMonitor's readings from NVML: the clocks, power, temperature, energy counter and throttle
// reasons of one GPU, found by its PCI bus id (CUDA's device numbers need not be NVML's, e.g.
// under CUDA_VISIBLE_DEVICES).
#include <memory>
#include <optional>
#include <string>

#include "nvml_library.hpp"
#include "tbench/env/gpu_telemetry.hpp"

namespace tbench {
namespace {

class NvmlSampleSource : public GpuSampleSource {
 public:
  NvmlSampleSource(std::unique_ptr<NvmlLibrary> library, NvmlDevice device)
      : library_(std::move(library)), api_(library_->api()), device_(device) {}
  ~NvmlSampleSource() override { api_.shutdown(); }

  GpuSample read() override {
    GpuSample s;
    s.sm_clock_mhz = clock_mhz(kNvmlClockSm);
    s.memory_clock_mhz = clock_mhz(kNvmlClockMem);
    unsigned value = 0;
    if (api_.power_usage && api_.power_usage(device_, &value) == kNvmlSuccess) s.power_w = value / 1000.0;
    if (api_.temperature && api_.temperature(device_, kNvmlTemperatureGpu, &value) == kNvmlSuccess) {
      s.temperature_c = value;
    }
    unsigned long long wide = 0;
    if (api_.total_energy && api_.total_energy(device_, &wide) == kNvmlSuccess) s.energy_j = wide / 1000.0;
    if (api_.throttle_reasons && api_.throttle_reasons(device_, &wide) == kNvmlSuccess) s.throttle_reasons = wide;
    return s;
  }

 private:
  std::optional<double> clock_mhz(int type) const {
    unsigned mhz = 0;
    return api_.clock(device_, type, &mhz) == kNvmlSuccess ? std::optional<double>(mhz) : std::nullopt;
  }

  std::unique_ptr<NvmlLibrary> library_;
  const NvmlApi& api_;
  NvmlDevice device_;
};

}  // namespace

std::unique_ptr<GpuSampleSource> make_nvml_sample_source(const std::string& pci_bus_id, std::string& why,
                                                         const std::string& library) {
  auto nvml = std::make_unique<NvmlLibrary>(library);
  if (!nvml->ok()) {
    why = nvml->error();
    return nullptr;
  }
  const NvmlApi& api = nvml->api();
  if (!api.device_by_pci_bus_id) {
    why = "this NVML has no nvmlDeviceGetHandleByPciBusId_v2";
    return nullptr;
  }
  if (const NvmlReturn rc = api.init(); rc != kNvmlSuccess) {
    why = std::string("nvmlInit failed: ") + api.error_string(rc);
    return nullptr;
  }
  NvmlDevice device = nullptr;
  if (const NvmlReturn rc = api.device_by_pci_bus_id(pci_bus_id.c_str(), &device); rc != kNvmlSuccess) {
    why = "no NVML device at PCI bus id " + pci_bus_id + ": " + api.error_string(rc);
    api.shutdown();
    return nullptr;
  }
  return std::make_unique<NvmlSampleSource>(std::move(nvml), device);
}

}  // namespace tbench
