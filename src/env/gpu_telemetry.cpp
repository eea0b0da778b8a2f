#include "tbench/env/gpu_telemetry.hpp"

#include <algorithm>
#include <iterator>

#include "tbench/json_text.hpp"
#include "tbench/timing/stats.hpp"

namespace tbench {
namespace {

using nlohmann::json;

// The values one field took over the samples that have it.
template <typename Field>
std::vector<double> readings(const std::vector<GpuSample>& samples, Field field) {
  std::vector<double> out;
  for (const auto& s : samples) {
    if ((s.*field).has_value()) out.push_back(*(s.*field));
  }
  return out;
}

// The spread of one field over the samples that read it; none if no sample did.
template <typename Field>
std::optional<Spread> spread_of(const std::vector<GpuSample>& samples, Field field) {
  const std::vector<double> values = readings(samples, field);
  if (values.empty()) return std::nullopt;
  return spread(values);
}

// Trapezoids between consecutive samples that both read the power.
std::optional<double> integrated_power_j(const std::vector<GpuSample>& samples) {
  std::optional<double> joules;
  const GpuSample* previous = nullptr;
  for (const auto& s : samples) {
    if (!s.power_w) continue;
    if (previous) joules = joules.value_or(0.0) + (s.seconds - previous->seconds) * (*s.power_w + *previous->power_w) / 2;
    previous = &s;
  }
  return joules;
}

}  // namespace

std::vector<std::string> throttle_reason_names(uint64_t bits) {
  static const std::pair<uint64_t, const char*> kReasons[] = {
      {0x1, "gpu_idle"},           {0x2, "applications_clocks_setting"}, {0x4, "sw_power_cap"},
      {0x8, "hw_slowdown"},        {0x10, "sync_boost"},                  {0x20, "sw_thermal_slowdown"},
      {0x40, "hw_thermal_slowdown"}, {0x80, "hw_power_brake_slowdown"},   {0x100, "display_clock_setting"}};
  std::vector<std::string> names;
  for (const auto& [bit, name] : kReasons) {
    if (bits & bit) names.emplace_back(name);
    bits &= ~bit;
  }
  for (int b = 0; b < 64; ++b) {
    if (bits & (uint64_t{1} << b)) names.push_back("bit " + std::to_string(b));
  }
  return names;
}

GpuTelemetry summarize_gpu_samples(const std::vector<GpuSample>& samples, double interval_ms) {
  GpuTelemetry t;
  t.samples = static_cast<int64_t>(samples.size());
  t.interval_ms = interval_ms;
  std::vector<GpuSample> under_load;
  std::copy_if(samples.begin(), samples.end(), std::back_inserter(under_load), [](const GpuSample& s) { return !s.boundary; });
  const std::vector<GpuSample>& running = under_load.empty() ? samples : under_load;
  if (const auto sm = spread_of(running, &GpuSample::sm_clock_mhz)) {
    t.sm_clock_mhz_median = sm->median;
    t.sm_clock_mhz_min = sm->min;
  }
  if (const auto memory = spread_of(running, &GpuSample::memory_clock_mhz)) t.memory_clock_mhz_median = memory->median;
  if (const auto power = spread_of(running, &GpuSample::power_w)) {
    t.power_w_mean = power->mean;
    t.power_w_max = power->max;
  }
  if (const auto temperature = spread_of(running, &GpuSample::temperature_c)) t.temperature_c_max = temperature->max;
  if (samples.size() >= 2 && samples.front().energy_j && samples.back().energy_j) {
    t.energy_j = *samples.back().energy_j - *samples.front().energy_j;
    t.energy_source = "energy counter";
  } else if (const auto integrated = integrated_power_j(samples)) {
    t.energy_j = integrated;
    t.energy_source = "power samples";
  }
  uint64_t reasons = 0;
  for (const auto& s : running) reasons |= s.throttle_reasons.value_or(0);
  t.throttle_reasons = throttle_reason_names(reasons);
  return t;
}

json to_json(const GpuTelemetry& t) {
  return {{"samples", t.samples},
          {"interval_ms", t.interval_ms},
          {"sm_clock_mhz_median", or_null(t.sm_clock_mhz_median)},
          {"sm_clock_mhz_min", or_null(t.sm_clock_mhz_min)},
          {"memory_clock_mhz_median", or_null(t.memory_clock_mhz_median)},
          {"power_w_mean", or_null(t.power_w_mean)},
          {"power_w_max", or_null(t.power_w_max)},
          {"energy_j", or_null(t.energy_j)},
          {"energy_source", or_null(t.energy_source)},
          {"temperature_c_max", or_null(t.temperature_c_max)},
          {"throttle_reasons", t.throttle_reasons}};
}

GpuMonitor::GpuMonitor(std::unique_ptr<GpuSampleSource> source, std::chrono::milliseconds interval)
    : source_(std::move(source)), interval_(interval), thread_([this] { run(); }) {}

GpuMonitor::~GpuMonitor() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void GpuMonitor::start() {
  uint64_t epoch = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    epoch = ++epoch_;
    samples_.clear();
    started_ = std::chrono::steady_clock::now();
    sampling_ = true;
  }
  wake_.notify_all();
  sample(epoch, /*boundary=*/true);
}

GpuTelemetry GpuMonitor::stop() {
  uint64_t epoch = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!sampling_) return summarize_gpu_samples({}, static_cast<double>(interval_.count()));
    epoch = epoch_;
  }
  sample(epoch, /*boundary=*/true);
  GpuTelemetry summary;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    sampling_ = false;
    ++epoch_;  // a reading the thread is taking now belongs to no epoch
    summary = summarize_gpu_samples(samples_, static_cast<double>(interval_.count()));
  }
  wake_.notify_all();
  return summary;
}

// Reads outside the lock (a driver call can take a while), then files the reading unless the
// epoch it was taken for has ended meanwhile.
void GpuMonitor::sample(uint64_t epoch, bool boundary) {
  GpuSample reading = source_->read();
  reading.boundary = boundary;
  std::lock_guard<std::mutex> lock(mutex_);
  if (epoch != epoch_) return;
  reading.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  samples_.push_back(std::move(reading));
}

void GpuMonitor::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!quit_) {
    if (!sampling_) {
      wake_.wait(lock, [this] { return quit_ || sampling_; });
      continue;
    }
    if (wake_.wait_for(lock, interval_, [this] { return quit_ || !sampling_; })) continue;
    const uint64_t epoch = epoch_;
    lock.unlock();
    sample(epoch, /*boundary=*/false);
    lock.lock();
  }
}

}  // namespace tbench
