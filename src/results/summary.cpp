#include "tbench/results/summary.hpp"

#include <algorithm>
#include <cmath>

#include "tbench/text.hpp"
#include "tbench/timing/steady_step.hpp"

namespace tbench {
namespace {

// Does the step timer see the whole epoch? Compares the epochs' wall time with the sum of their
// step times; the difference is the host work between steps (records, progress, the epoch-end
// wait). On CUDA that work overlaps queued device work, so the gap stays small there too.
TimingCheck timing_check(const std::vector<EpochRecord>& epochs, const std::string& method) {
  TimingCheck check;
  check.method = method;
  for (const auto& e : epochs) {
    check.epoch_seconds += e.seconds - e.profiler_seconds;
    check.step_seconds += e.step_seconds;
  }
  if (check.epoch_seconds > 0) check.gap_fraction = (check.epoch_seconds - check.step_seconds) / check.epoch_seconds;
  return check;
}

// The highest of the epochs' high-water marks; none where no epoch measured one.
std::optional<int64_t> highest(const std::vector<EpochRecord>& epochs, int64_t EpochRecord::*peak) {
  std::optional<int64_t> best;
  for (const auto& e : epochs) {
    if (e.*peak >= 0) best = std::max(best.value_or(0), e.*peak);
  }
  return best;
}

// The GPU monitor's epochs summed: power weighted by each epoch's time, energy over the samples
// of the epochs that measured it.
void set_gpu_figures(Summary& s, const std::vector<EpochRecord>& epochs) {
  double power_time = 0, seconds = 0, joules = 0;
  int64_t samples = 0;
  for (const auto& e : epochs) {
    if (!e.gpu) continue;
    if (e.gpu->power_w_mean) {
      power_time += *e.gpu->power_w_mean * e.seconds;
      seconds += e.seconds;
    }
    if (e.gpu->energy_j) {
      joules += *e.gpu->energy_j;
      samples += e.samples;
    }
  }
  if (seconds > 0) s.gpu_power_w_mean = power_time / seconds;
  if (samples > 0) s.gpu_energy_j_per_sample = joules / static_cast<double>(samples);
}

}  // namespace

double epoch_seconds_unprofiled(const EpochRecord& e, const std::vector<IterationRecord>& iterations,
                                const SteadyStep* steady) {
  double profiled_seconds = 0, steady_seconds = 0;
  for (const auto& r : iterations) {
    if (r.epoch != e.epoch || !r.profiled) continue;
    profiled_seconds += r.seconds;
    if (steady) steady_seconds += steady->seconds_at(r.train_flops);
  }
  const double seconds = e.seconds - e.profiler_seconds;
  if (!steady || profiled_seconds == 0) return seconds;
  return seconds - profiled_seconds + steady_seconds;
}

TimedSteps timed_steps(const std::vector<IterationRecord>& iterations, double train_flops_per_sample) {
  TimedSteps t;
  bool every_step_counted = true;
  bool every_host_time = true;
  for (const auto& r : iterations) {
    if (r.warmup) {
      ++t.excluded;
      continue;
    }
    if (r.profiled) {
      ++t.profiled;
      continue;
    }
    t.step_ms.push_back(r.seconds * 1e3);
    t.data_ms.push_back(r.data_seconds * 1e3);
    t.comm_wait_ms.push_back(r.comm_wait_seconds * 1e3);
    every_host_time = every_host_time && r.host_seconds.has_value();
    if (every_host_time) t.host_ms.push_back(*r.host_seconds * 1e3);
    // An epoch's first step follows the last one's drain (its records waited for, an evaluation):
    // its device is idle whoever sets the pace, so it says nothing of that.
    if (r.device_idle_at_start && r.step > 1) {
      ++t.device_idle_known;
      t.device_idle_at_start += *r.device_idle_at_start ? 1 : 0;
    }
    t.seconds += r.seconds;
    t.comm_wait_seconds += r.comm_wait_seconds;
    t.samples += r.samples;
    t.tokens += r.tokens;
    t.real_tokens += r.real_tokens;
    // Each step's own FLOPs at its padded lengths (dynamic padding changes them per step).
    t.flops += r.train_flops > 0 ? r.train_flops : static_cast<double>(r.samples) * train_flops_per_sample;
    every_step_counted = every_step_counted && r.train_flops > 0;
    if (every_step_counted) t.step_flops.push_back(r.train_flops);
    t.skipped += r.skipped ? 1 : 0;
  }
  if (!every_step_counted) t.step_flops.clear();
  if (!every_host_time) t.host_ms.clear();
  return t;
}

Summary summarize(const RunRecords& records, const SummaryInputs& in) {
  const TimedSteps t = timed_steps(records.iterations, in.train_flops_per_sample);
  const auto rate = [&](double count) { return t.seconds > 0 ? std::optional<double>(count / t.seconds) : std::nullopt; };

  Summary s;
  s.warmup_steps = t.excluded;
  s.profiled_steps = t.profiled;
  s.warmup_steps_requested = in.warmup_steps;
  s.total_steps = static_cast<int64_t>(records.iterations.size());
  s.step_ms = spread(t.step_ms);
  s.data_ms = spread(t.data_ms);
  s.samples_per_s = rate(static_cast<double>(t.samples));
  s.tokens_per_s = rate(static_cast<double>(t.tokens));
  s.real_tokens_per_s = rate(static_cast<double>(t.real_tokens));
  s.it_per_s = rate(static_cast<double>(s.step_ms.count));
  s.train_flops_per_s = rate(t.flops);
  if (t.tokens > 0) s.padding_efficiency = static_cast<double>(t.real_tokens) / static_cast<double>(t.tokens);
  s.skipped_steps = t.skipped;
  if (!t.host_ms.empty()) s.host_ms = spread(t.host_ms);
  if (t.device_idle_known > 0) {
    s.device_idle_at_start_fraction =
        static_cast<double>(t.device_idle_at_start) / static_cast<double>(t.device_idle_known);
  }

  std::vector<double> complete_epochs;
  std::optional<SteadyStep> steady;  // in seconds, at any step's work: for the profiled steps
  if (t.profiled > 0 && !t.step_ms.empty()) {
    std::vector<double> step_seconds;
    for (double ms : t.step_ms) step_seconds.push_back(ms / 1e3);
    steady = fit_steady_step(step_seconds, t.step_flops, /*fit_flops=*/true);
  }
  for (const auto& e : records.epochs) {
    if (e.complete) complete_epochs.push_back(epoch_seconds_unprofiled(e, records.iterations, steady ? &*steady : nullptr));
  }
  const Spread epochs = spread(complete_epochs);
  s.epochs_completed = epochs.count;
  if (epochs.count > 0) s.epoch_seconds = epochs.mean;
  s.steps_per_epoch = in.steps_per_epoch;
  if (s.step_ms.count > 0) {
    const double expected = in.expected_step_train_flops.value_or(0.0);
    const SteadyStep step = fit_steady_step(t.step_ms, t.step_flops, expected > 0);
    const double epoch_seconds_per_step_ms = static_cast<double>(in.steps_per_epoch) / 1e3;
    const double step_ms = step.seconds_at(expected);
    s.projected_step_model = step.model_at(expected);
    s.step_lag1_autocorrelation = step.lag1_autocorrelation;
    s.projected_epoch_seconds = epoch_seconds_per_step_ms * step_ms;
    if (const auto half = step.half_ci95_at(expected)) {
      s.projected_epoch_seconds_ci95 = Interval{epoch_seconds_per_step_ms * std::max(0.0, step_ms - *half),
                                                epoch_seconds_per_step_ms * (step_ms + *half)};
    }
  }

  s.wall_seconds = in.wall_seconds;
  s.started_at = in.started_at;
  s.ended_at = in.ended_at;
  s.status = in.outcome.status;
  s.error = in.outcome.error;
  s.timing_check = timing_check(records.epochs, in.outcome.timing_method);
  s.peak_allocated_bytes = highest(records.epochs, &EpochRecord::peak_allocated_bytes);
  s.peak_reserved_bytes = highest(records.epochs, &EpochRecord::peak_reserved_bytes);
  set_gpu_figures(s, records.epochs);
  return s;
}

std::optional<double> probe_spread(const std::vector<double>& probes_flops_per_s) {
  if (probes_flops_per_s.size() < 2) return std::nullopt;
  const auto [slowest, fastest] = std::minmax_element(probes_flops_per_s.begin(), probes_flops_per_s.end());
  if (!(*slowest > 0)) return std::nullopt;
  return *fastest / *slowest - 1.0;
}

std::string probes_gflops_text(const std::vector<double>& probes_flops_per_s) {
  std::vector<std::string> rates;
  for (const double rate : probes_flops_per_s) rates.push_back(format_fixed(rate / 1e9, 1));
  return join(rates, " and ");
}

DevicePeak with_later_probe(DevicePeak peak, double flops_per_s) {
  peak.probes_flops_per_s.push_back(flops_per_s);
  peak.flops_per_s = std::max(peak.flops_per_s, flops_per_s);
  return peak;
}

void set_utilisation(Summary& s, const DevicePeak& per_device_peak, int64_t devices) {
  s.peak = per_device_peak;
  s.mfu.reset();
  s.mfu_error.clear();
  if (!(per_device_peak.flops_per_s > 0) || !s.train_flops_per_s) return;
  const double peak = per_device_peak.flops_per_s * static_cast<double>(std::max<int64_t>(1, devices));
  const double mfu = *s.train_flops_per_s / peak;
  if (mfu > 1.0) {
    s.mfu_error = "the model ran at " + format_fixed(*s.train_flops_per_s / 1e9, 1) + " GFLOP/s, above the peak of " +
                  format_fixed(peak / 1e9, 1) + " GFLOP/s (" + per_device_peak.source +
                  "): the peak is not an upper bound here, so no MFU is given";
    return;
  }
  s.mfu = mfu;
}

}  // namespace tbench
