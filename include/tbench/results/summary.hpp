#pragma once
// The summary of a run: step-time spread and throughput over the steady-state steps (warm-up
// excluded), epoch times, memory peaks, the device's peak and the model FLOP utilisation. A plain
// value, computed from the records; src/results/result.cpp writes it.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tbench/timing/stats.hpp"
#include "tbench/train/train_run.hpp"

namespace tbench {

// The timing check: the sum of step times may fall short of the epochs' wall time only by the
// work between steps. A gap beyond this fraction means time escapes the step timer.
inline constexpr double kTimingGapMargin = 0.02;

struct TimingCheck {
  std::string method;  // TrainOutcome::timing_method; empty: unknown
  double step_seconds = 0;
  double epoch_seconds = 0;
  std::optional<double> gap_fraction;  // (epoch - steps) / epoch; none without epoch time
  bool within_margin() const { return gap_fraction && std::abs(*gap_fraction) <= kTimingGapMargin; }
};

// The best the device can do at this precision, the denominator of MFU. Always per device.
struct DevicePeak {
  double flops_per_s = 0;  // 0: unknown
  double bytes_per_s = 0;  // 0: unknown
  std::string source;      // how it was found: measured (how) or which datasheet
  // A CPU's probes, in the order they ran (before and after the timed epochs); flops_per_s is the
  // best of them. Empty for a datasheet's figure.
  std::vector<double> probes_flops_per_s;
};

// How far apart peak probes are, fastest over slowest − 1; none with fewer than two.
std::optional<double> probe_spread(const std::vector<double>& probes_flops_per_s);

// The probes as the run's log and compare write them: "32.0 and 64.0" (GFLOP/s).
std::string probes_gflops_text(const std::vector<double>& probes_flops_per_s);

// A probe spread (probe_spread) above this means the machine's speed moved during the run: the
// run says so, as its rates and MFU carry that noise.
inline constexpr double kPeakProbeSpreadWarning = 0.2;

// The peak with a later probe added to its probes: the best of them is the peak (`source` is the
// caller's to reword).
DevicePeak with_later_probe(DevicePeak peak, double flops_per_s);

// Steps most of which began with the GPU idle (device_idle_at_start_fraction) were paced by the host.
inline bool is_host_paced(std::optional<double> device_idle_at_start_fraction) {
  return device_idle_at_start_fraction && *device_idle_at_start_fraction > 0.5;
}

struct Summary {
  std::string scope = "per-device";  // "global" once a data-parallel run's ranks are merged
  int64_t warmup_steps = 0;          // steps actually excluded
  int64_t warmup_steps_requested = 0;
  int64_t profiled_steps = 0;        // timing.profile_steps: excluded too (the profiler slows them)
  int64_t total_steps = 0;
  Spread step_ms, data_ms;  // step_ms.count: the timed steps
  std::optional<double> samples_per_s, tokens_per_s, real_tokens_per_s, it_per_s, train_flops_per_s;
  std::optional<double> padding_efficiency;
  // CUDA: the host's time to issue each timed step, and the share of timed steps that began with
  // the GPU idle, having run everything queued (IterationRecord; an epoch's first step, which
  // follows a drain, left out): near 1, the host sets the step's time and a faster GPU would not
  // shorten it. None where the steps do not record them (CPU).
  std::optional<Spread> host_ms;
  std::optional<double> device_idle_at_start_fraction;
  bool host_paced() const { return is_host_paced(device_idle_at_start_fraction); }
  int64_t skipped_steps = 0;
  int64_t epochs_completed = 0;
  std::optional<double> epoch_seconds;  // mean over the complete epochs
  int64_t steps_per_epoch = 0;
  // steps_per_epoch x the steady step (fit_steady_step): the timed steps' mean, or where their work
  // varied, a line in their FLOPs read at the planned epochs' mean work per step.
  std::optional<double> projected_epoch_seconds;
  std::string projected_step_model;  // "mean" | "mean, scaled to the planned work" | "flops line"; empty without timed steps
  // ... and its 95% confidence interval: steps_per_epoch x the steady step's, the timed steps
  // taken as draws of the epoch's. None with fewer than two timed steps (three for a line).
  std::optional<Interval> projected_epoch_seconds_ci95;
  // The steady step's deviations in step order: their lag-1 autocorrelation, from 10 timed steps
  // on (SteadyStep), which the interval counts.
  std::optional<double> step_lag1_autocorrelation;
  double wall_seconds = 0;
  std::string started_at, ended_at;
  RunStatus status = RunStatus::completed;
  std::string error;
  TimingCheck timing_check;
  std::optional<int64_t> peak_allocated_bytes, peak_reserved_bytes;  // CUDA allocator, over the epochs
  std::optional<int64_t> peak_rss_bytes;
  // One GPU's own figures (epochs[].gpu, over the epochs NVML sampled, warm-up included): its mean
  // power draw, weighted by epoch time, and its energy per sample it trained.
  std::optional<double> gpu_power_w_mean, gpu_energy_j_per_sample;
  DevicePeak peak;
  std::optional<double> mfu;  // train_flops_per_s over the peak of every device that ran
  std::string mfu_error;      // why there is no MFU although both rates are known
  // Data-parallel only (scope "global").
  std::optional<int64_t> world_size;
  std::optional<double> per_device_samples_per_s, per_device_train_flops_per_s, comm_share, rank_step_spread;
};

// Totals over the steady-state steps (warm-up excluded): what the summary and each data-parallel
// rank's report are computed from.
struct TimedSteps {
  std::vector<double> step_ms, data_ms, comm_wait_ms;
  std::vector<double> host_ms;  // each step's host time, where every timed step records one
  int64_t device_idle_at_start = 0, device_idle_known = 0;  // steps that began on an idle device, of those that say
  std::vector<double> step_flops;  // each step's own count; empty where any step has none
  double seconds = 0, comm_wait_seconds = 0, flops = 0;
  int64_t samples = 0, tokens = 0, real_tokens = 0, skipped = 0, excluded = 0, profiled = 0;
};
// An epoch's time as training alone would have taken it: less the profiler's own start and stop
// (timing.profile_steps), and with its profiled steps, which the profiler slows (about 2x on a tiny
// CPU model), counted as `steady` steps of their own work (SteadyStep::seconds_at their FLOPs: the
// profiled last steps may be a partial one, or pad to other widths). Its wall time where nothing
// in it was profiled, or where no step was timed (no `steady`).
struct SteadyStep;
double epoch_seconds_unprofiled(const EpochRecord& e, const std::vector<IterationRecord>& iterations,
                                const SteadyStep* steady);

// `train_flops_per_sample` counts for records without their own FLOPs.
TimedSteps timed_steps(const std::vector<IterationRecord>& iterations, double train_flops_per_sample);

struct SummaryInputs {
  int64_t warmup_steps = 0;  // requested by timing.warmup_steps
  int64_t steps_per_epoch = 0;
  double train_flops_per_sample = 0;  // for records without their own FLOPs
  std::optional<double> expected_step_train_flops;  // the planned epochs' mean per step, where known
  std::string started_at, ended_at;
  double wall_seconds = 0;
  TrainOutcome outcome;
};

// The per-device summary of one process's records.
Summary summarize(const RunRecords& records, const SummaryInputs& inputs);

// Model FLOP utilisation: achieved training FLOP/s over the peak of all `devices` that ran.
// A rate above the peak means the peak was not an upper bound: then there is no MFU, and
// `mfu_error` says why, rather than a figure above 100%.
void set_utilisation(Summary& summary, const DevicePeak& per_device_peak, int64_t devices);

}  // namespace tbench
