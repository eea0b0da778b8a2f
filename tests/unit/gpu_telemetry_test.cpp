// The GPU monitor: its summary of an epoch's readings, its sampling thread, and NVML's absence.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "tbench/env/gpu_telemetry.hpp"

namespace tbench {
namespace {

GpuSample at(double seconds, double sm_mhz, double power_w) {
  GpuSample s;
  s.seconds = seconds;
  s.sm_clock_mhz = sm_mhz;
  s.memory_clock_mhz = 2619;
  s.power_w = power_w;
  s.temperature_c = 40 + seconds;
  return s;
}

TEST(GpuTelemetry, SummarizesClocksPowerAndTemperature) {
  const std::vector<GpuSample> samples = {at(0, 1980, 300), at(1, 1755, 700), at(2, 1980, 500), at(3, 1410, 500)};
  const GpuTelemetry t = summarize_gpu_samples(samples, 100);
  EXPECT_EQ(t.samples, 4);
  EXPECT_EQ(t.sm_clock_mhz_median, (1755.0 + 1980.0) / 2);
  EXPECT_EQ(t.sm_clock_mhz_min, 1410.0);
  EXPECT_EQ(t.memory_clock_mhz_median, 2619.0);
  EXPECT_EQ(t.power_w_mean, 500.0);
  EXPECT_EQ(t.power_w_max, 700.0);
  EXPECT_EQ(t.temperature_c_max, 43.0);
  // No energy counter: trapezoids of the power, (300+700)/2 + (700+500)/2 + (500+500)/2 joules.
  EXPECT_EQ(t.energy_source, "power samples");
  EXPECT_DOUBLE_EQ(*t.energy_j, 500 + 600 + 500);
  EXPECT_TRUE(t.throttle_reasons.empty());
}

// The readings at start() and stop() bracket the epoch, often with the GPU idle: they bound the
// energy but do not pass for the clocks, power or throttling under load.
TEST(GpuTelemetry, BoundaryReadingsCountOnlyForEnergy) {
  std::vector<GpuSample> samples = {at(0, 345, 60), at(1, 1980, 700), at(2, 1755, 500), at(3, 345, 60)};
  samples.front().boundary = samples.back().boundary = true;
  samples.front().throttle_reasons = samples.back().throttle_reasons = 0x1;  // idle
  samples[1].throttle_reasons = 0x4;
  const GpuTelemetry t = summarize_gpu_samples(samples, 100);
  EXPECT_EQ(t.samples, 4);
  EXPECT_EQ(t.sm_clock_mhz_min, 1755.0);
  EXPECT_EQ(t.power_w_mean, 600.0);
  EXPECT_EQ(t.throttle_reasons, std::vector<std::string>{"sw_power_cap"});
  EXPECT_DOUBLE_EQ(*t.energy_j, (60 + 700) / 2.0 + (700 + 500) / 2.0 + (500 + 60) / 2.0);
  // Only boundary readings (an epoch shorter than the interval): they are all there is.
  const GpuTelemetry short_epoch = summarize_gpu_samples({samples.front(), samples.back()}, 100);
  EXPECT_EQ(short_epoch.sm_clock_mhz_median, 345.0);
  EXPECT_EQ(short_epoch.throttle_reasons, std::vector<std::string>{"gpu_idle"});
}

// The driver's counter, where it has one, is the energy; a sample missing it leaves the ends.
TEST(GpuTelemetry, EnergyComesFromTheCounterWhereBothEndsReadIt) {
  std::vector<GpuSample> samples = {at(0, 1980, 300), at(1, 1980, 700), at(2, 1980, 500)};
  samples[0].energy_j = 1000.0;
  samples[2].energy_j = 2234.5;
  const GpuTelemetry t = summarize_gpu_samples(samples, 100);
  EXPECT_EQ(t.energy_source, "energy counter");
  EXPECT_DOUBLE_EQ(*t.energy_j, 1234.5);
  samples[2].energy_j.reset();
  EXPECT_EQ(summarize_gpu_samples(samples, 100).energy_source, "power samples");
}

TEST(GpuTelemetry, NothingReadIsNull) {
  const GpuTelemetry none = summarize_gpu_samples({GpuSample{}, GpuSample{}}, 100);
  EXPECT_EQ(none.samples, 2);
  EXPECT_FALSE(none.sm_clock_mhz_median || none.power_w_mean || none.energy_j || none.temperature_c_max);
  const auto j = to_json(none);
  EXPECT_TRUE(j["sm_clock_mhz_median"].is_null());
  EXPECT_TRUE(j["energy_j"].is_null());
  EXPECT_TRUE(j["energy_source"].is_null());
  EXPECT_EQ(j["throttle_reasons"], nlohmann::json::array());
}

TEST(GpuTelemetry, ThrottleReasonsByName) {
  std::vector<GpuSample> samples = {at(0, 1980, 500), at(1, 1410, 700)};
  samples[0].throttle_reasons = 0x1;   // idle, waiting for the host
  samples[1].throttle_reasons = 0x44;  // power cap and hardware thermal slowdown
  EXPECT_EQ(summarize_gpu_samples(samples, 100).throttle_reasons,
            (std::vector<std::string>{"gpu_idle", "sw_power_cap", "hw_thermal_slowdown"}));
  EXPECT_EQ(throttle_reason_names(0x80 | (uint64_t{1} << 40)),
            (std::vector<std::string>{"hw_power_brake_slowdown", "bit 40"}));
}

// Counts its readings and reports a rising SM clock, so the order of the samples shows.
struct CountingGpu : GpuSampleSource {
  std::atomic<int> reads{0};
  GpuSample read() override {
    GpuSample s;
    s.sm_clock_mhz = ++reads;
    return s;
  }
};

TEST(GpuMonitor, SamplesBetweenStartAndStopOnItsOwnThread) {
  auto source = std::make_unique<CountingGpu>();
  CountingGpu& gpu = *source;
  GpuMonitor monitor(std::move(source), std::chrono::milliseconds(2));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(gpu.reads.load(), 0);  // nothing before an epoch starts
  EXPECT_EQ(monitor.stop().samples, 0);  // no epoch to summarize
  monitor.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const GpuTelemetry first = monitor.stop();
  EXPECT_GE(first.samples, 3);  // start, stop and the thread's in between
  EXPECT_EQ(first.interval_ms, 2.0);
  EXPECT_GT(*first.sm_clock_mhz_min, 1.0);  // reading 1 was start()'s, a boundary one
  const int after_stop = gpu.reads.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_LE(gpu.reads.load(), after_stop + 1);  // idle between epochs (one reading may have been under way)
  monitor.start();  // the next epoch starts afresh
  const GpuTelemetry second = monitor.stop();
  EXPECT_GE(second.samples, 2);
  EXPECT_GT(*second.sm_clock_mhz_min, static_cast<double>(first.samples));
}

TEST(GpuMonitor, StopsItsThreadWhenDestroyedMidEpoch) {
  auto monitor = std::make_unique<GpuMonitor>(std::make_unique<CountingGpu>(), std::chrono::milliseconds(1));
  monitor->start();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  monitor.reset();  // joins: a hang here fails the test by its timeout
  SUCCEED();
}

TEST(GpuMonitor, WithoutNvmlThereIsNoSourceAndItSaysWhy) {
  std::string why;
  EXPECT_EQ(make_nvml_sample_source("00000000:3B:00.0", why, "/nonexistent/libnvidia-ml.so.1"), nullptr);
  EXPECT_NE(why.find("libnvidia-ml"), std::string::npos) << why;
}

}  // namespace
}  // namespace tbench
