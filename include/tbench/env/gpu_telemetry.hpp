#pragma once
// What the GPU did while an epoch trained: its clocks, power draw, energy, temperature and the
// reasons its clocks were held down, sampled on a background thread (NVML on a real GPU; any
// GpuSampleSource in the tests). A GPU that throttled, or idled at low clocks waiting for the
// host, explains a slow result; the readings env takes after the run do not show it. Plain C++
// (no LibTorch): the records and the result writer include it.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace tbench {

// One reading; what the device or driver cannot report stays empty.
struct GpuSample {
  double seconds = 0;  // since the epoch's monitoring started
  std::optional<double> sm_clock_mhz, memory_clock_mhz, power_w, temperature_c;
  std::optional<double> energy_j;            // the driver's energy counter (since it loaded)
  std::optional<uint64_t> throttle_reasons;  // NVML's clocks-event (throttle) reason bits
  // Taken by start() or stop(), when the GPU may be idle (before the first kernel, after the
  // device drained): it bounds the energy, but says nothing of the clocks under load.
  bool boundary = false;
};

// An epoch's readings summed up. Empty optionals are figures no sample had.
struct GpuTelemetry {
  int64_t samples = 0;
  double interval_ms = 0;
  std::optional<double> sm_clock_mhz_median, sm_clock_mhz_min, memory_clock_mhz_median;
  std::optional<double> power_w_mean, power_w_max, temperature_c_max;
  std::optional<double> energy_j;  // over the epoch
  std::string energy_source;       // "energy counter", "power samples" or "" (none)
  std::vector<std::string> throttle_reasons;  // every reason seen in any sample, by name
};

// The names of NVML's throttle reason bits (nvmlClocksEventReasons): gpu_idle, sw_power_cap,
// hw_slowdown, sw_thermal_slowdown, hw_thermal_slowdown, hw_power_brake, ...
std::vector<std::string> throttle_reason_names(uint64_t bits);

// Clocks, power, temperature and throttle reasons from the samples taken while the epoch ran
// (all of them if there are only boundary ones). Energy from the counter's first and last
// reading where both exist, else all the power samples integrated over time (trapezoids).
GpuTelemetry summarize_gpu_samples(const std::vector<GpuSample>& samples, double interval_ms);

nlohmann::json to_json(const GpuTelemetry& telemetry);

class GpuSampleSource {
 public:
  virtual ~GpuSampleSource() = default;
  // Called from the monitor's thread and from start() and stop() on the caller's, possibly at
  // once: a source must be thread-safe (NVML is). `seconds` and `boundary` are set by the monitor.
  virtual GpuSample read() = 0;
};

// Samples `source` every `interval` between start() and stop() on its own thread, so nothing in
// a training step waits for it; one reading at start and one at stop bound even a short epoch.
class GpuMonitor {
 public:
  GpuMonitor(std::unique_ptr<GpuSampleSource> source, std::chrono::milliseconds interval);
  ~GpuMonitor();
  GpuMonitor(const GpuMonitor&) = delete;
  GpuMonitor& operator=(const GpuMonitor&) = delete;

  void start();          // an epoch begins: earlier samples are dropped
  GpuTelemetry stop();   // the epoch's summary (empty without a start()); the thread idles until the next start()

 private:
  void sample(uint64_t epoch, bool boundary);
  void run();

  std::unique_ptr<GpuSampleSource> source_;
  std::chrono::milliseconds interval_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool sampling_ = false, quit_ = false;
  uint64_t epoch_ = 0;  // which start() the samples belong to
  std::chrono::steady_clock::time_point started_;
  std::vector<GpuSample> samples_;
  std::thread thread_;
};

// An NVML reader of the GPU with this PCI bus id ("00000000:3B:00.0", as env records it), or
// null with `why` set where NVML cannot be loaded or has no such device (src/env/nvml_sampler.cpp).
std::unique_ptr<GpuSampleSource> make_nvml_sample_source(const std::string& pci_bus_id, std::string& why,
                                                         const std::string& library = "libnvidia-ml.so.1");

}  // namespace tbench
