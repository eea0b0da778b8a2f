#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "tbench/analysis/analysis.hpp"
#include "tbench/errors.hpp"
#include "tbench/text.hpp"
#include "tbench/timing/stats.hpp"
#include "tbench/timing/steady_step.hpp"

namespace tbench {
namespace {

double mean(const std::vector<double>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double percent_error(double predicted, double actual) { return 100.0 * (predicted - actual) / actual; }

double total_training_seconds(const ResultFile& r) {
  return std::accumulate(r.epoch_wall_seconds.begin(), r.epoch_wall_seconds.end(), 0.0);
}

// The measured step split by the source's kernel profile. Kernels that ran longer in sum than the
// mean step (overlapping streams, or steps the profiler slowed) are scaled down to it: the
// measured step is the figure, the profile only its split.
StepParts measured_step_parts(const ResultFile::KernelSeconds& kernels, double step_seconds) {
  StepParts parts{kernels.compute, kernels.memory, 0.0};
  const double busy = parts.compute + parts.memory;
  if (busy > step_seconds) {
    parts.compute *= step_seconds / busy;
    parts.memory *= step_seconds / busy;
  }
  parts.held = std::max(0.0, step_seconds - parts.compute - parts.memory);
  return parts;
}

std::string largest_part(const StepParts& parts) {
  if (parts.held > parts.compute && parts.held > parts.memory) return "host";
  return parts.compute >= parts.memory ? "compute" : "memory";
}

// Time an epoch spends outside its steps (the epoch's plan, the loader's start, records between
// steps), per epoch: the complete epochs' mean; for a run cut short before any, its partial
// epoch's, most of which an epoch pays once whatever its length.
double outside_steps_per_epoch(const ResultFile& r) {
  if (r.epoch_wall_seconds.empty()) return r.partial_epoch->wall_seconds - r.partial_epoch->step_sum;
  double outside = 0;
  for (std::size_t i = 0; i < r.epoch_wall_seconds.size(); ++i) outside += r.epoch_wall_seconds[i] - r.epoch_step_sum[i];
  return outside / static_cast<double>(r.epoch_wall_seconds.size());
}

// How `actual` differs from `r` in what sets a step's time: the work (model, samples a step,
// length, precision), the processes sharing it and whether the step replayed a CUDA graph; with
// `same_device`, the processor it ran on and how many steps an epoch holds as well (an epoch
// prediction is for the run's own kind of machine and data; another host of that kind is only
// warned of, by the predict command).
std::vector<std::string> workload_differences(const ResultFile& r, const ResultFile& actual, bool same_device) {
  std::vector<std::string> differences;
  const auto differ = [&](const std::string& field, const std::string& ours, const std::string& theirs) {
    if (ours != theirs) differences.push_back(field + " " + theirs + " (predicted for " + ours + ")");
  };
  const auto precision = [](const ResultFile& x) { return x.precision + (x.tf32 ? " with TF32" : ""); };
  differ("model", model_row(r), model_row(actual));
  differ("samples a step", std::to_string(r.batch_size * r.grad_accum), std::to_string(actual.batch_size * actual.grad_accum));
  differ("seq_len", std::to_string(r.seq_len), std::to_string(actual.seq_len));
  differ("precision", precision(r), precision(actual));
  differ("world size", std::to_string(r.world_size), std::to_string(actual.world_size));
  // A replayed CUDA graph takes the host out of the step: another step than the eager one.
  const auto step = [](const ResultFile& x) { return std::string(x.cuda_graph ? "captured (CUDA graph)" : "eager"); };
  differ("step", step(r), step(actual));
  if (same_device) {
    differ("device", processor_of(r), processor_of(actual));
    differ("steps an epoch", std::to_string(r.steps_per_epoch), std::to_string(actual.steps_per_epoch));
  }
  return differences;
}

void require_same_workload(const ResultFile& r, const ResultFile& actual, bool same_device) {
  const std::vector<std::string> differences = workload_differences(r, actual, same_device);
  if (differences.empty()) return;
  throw input_error(actual.path + ": " + join(differences) + "; the actual must run the workload of " + r.path);
}

// Scores a prediction against a real run of its N epochs: training time, and with evaluation
// where both evaluated every epoch.
void score_against(const ResultFile& r, const ResultFile& actual, EpochPrediction& p) {
  require_same_workload(r, actual, /*same_device=*/true);
  if (static_cast<int64_t>(actual.epoch_wall_seconds.size()) != p.epochs) {
    throw input_error(actual.path + ": has " + std::to_string(actual.epoch_wall_seconds.size()) +
                      " complete epochs, but the prediction is for " + std::to_string(p.epochs));
  }
  p.actual_seconds = total_training_seconds(actual);
  p.error_pct = percent_error(p.predicted_seconds, *p.actual_seconds);
  if (const auto& ci = p.predicted_seconds_ci95) {
    p.actual_within_ci95 = ci->low <= *p.actual_seconds && *p.actual_seconds <= ci->high;
  }
  if (p.naive_seconds) p.naive_error_pct = percent_error(*p.naive_seconds, *p.actual_seconds);
  if (p.predicted_with_eval_seconds && static_cast<int64_t>(actual.epoch_eval_seconds.size()) == p.epochs) {
    p.actual_with_eval_seconds = *p.actual_seconds + std::accumulate(actual.epoch_eval_seconds.begin(),
                                                                     actual.epoch_eval_seconds.end(), 0.0);
    p.with_eval_error_pct = percent_error(*p.predicted_with_eval_seconds, *p.actual_with_eval_seconds);
  }
}

// A figure each timed step records (`of`), in step_seconds' order; empty where any timed step did
// not record it (above 0): older results without it.
template <typename Figure>
std::vector<double> timed_step_values(const ResultFile& r, Figure of) {
  std::vector<double> values;
  for (const auto& it : r.iterations) {
    if (it.warmup || it.profiled) continue;
    const double value = static_cast<double>(of(it));
    if (!(value > 0)) return {};
    values.push_back(value);
  }
  return values;
}

// Their mean; none where they are empty.
template <typename Figure>
std::optional<double> timed_step_mean(const ResultFile& r, Figure of) {
  const std::vector<double> values = timed_step_values(r, of);
  if (values.empty()) return std::nullopt;
  return mean(values);
}

double train_flops_of(const ResultIteration& it) { return it.train_flops; }

// The mean step over the kernels it launched: for a step its host held, the host's time a launch.
std::optional<double> seconds_per_launch(const ResultFile& r) {
  if (!r.kernel_launches_per_step || !(*r.kernel_launches_per_step > 0) || r.step_seconds.empty()) return std::nullopt;
  return mean(r.step_seconds) / *r.kernel_launches_per_step;
}

// Why `r` cannot time its host's launching, or "" where it can.
std::string why_not_a_host_pace(const ResultFile& r) {
  if (r.device.rfind("cuda", 0) != 0) return "ran on " + r.device + ", not on the target machine's GPU";
  if (r.cuda_graph) return "replayed a CUDA graph (spec.train.cuda_graph), whose kernels the device launches, not the host";
  if (r.world_size > 1) return "ran data-parallel (dist.world_size " + std::to_string(r.world_size) + "): its steps also waited for all-reduces";
  if (!r.kernel_launches_per_step) {  // counted only beside a kernel split
    return "has no kernel profile that counts its launches (profile.bounds with calls: timing.profile_steps on a "
           "CUDA run)";
  }
  if (!seconds_per_launch(r)) return "profile.bounds: its profile counted no kernel launches";
  const double held = host_held_share(r).value_or(0.0);
  if (held < kHostHeldShare) {
    return "its GPU waited for the host " + format_fixed(100 * held, 0) + "% of the step, under " +
           format_fixed(100 * kHostHeldShare, 0) +
           "%: the GPU set its pace, so its step does not time the host's launching (a smaller model, or fp16 "
           "or bf16, makes a step the host holds)";
  }
  return "";
}

// The target's host launches the source's kernels at its own pace; the target GPU runs them, and
// waits for the source's all-reduces, in its own time. The step takes the longer of the two.
void pace_by_the_target_host(const ResultFile& r, const HostPace& host, TargetPrediction& p) {
  if (r.cuda_graph) {
    throw input_error(r.path + ": replayed a CUDA graph, so no host launches its kernels: --target-host does not "
                      "apply to it");
  }
  if (!r.kernel_launches_per_step) {
    throw input_error(r.path + ": has no kernel profile that counts its launches (profile.bounds with calls), so the "
                      "kernels its step launches are unknown: --target-host needs them");
  }
  if (!p.target_parts) {
    throw input_error(r.path + ": summary.peak_bytes_per_s: unknown, so its memory-bound kernels cannot be scaled to "
                      "the target: --target-host needs the kernel profile's prediction");
  }
  p.target_host = host;
  p.launches_per_step = *r.kernel_launches_per_step;
  p.target_host_step_seconds = *p.launches_per_step * host.seconds_per_launch;
  // The GPU's own time: its kernels, and what it waited for that was not the host: the all-reduces,
  // and in a step the GPU bounds the gaps between queued kernels, the rest of its held time. In a
  // step its host held, that rest was the host's. In between, the rest counts as gaps in
  // proportion, all of it with no time held by the host and none from kHostHeldShare on, so the
  // prediction moves smoothly with the source's split.
  const double communication = std::min(p.source_parts->held, r.comm_share.value_or(0.0) * p.source_step_seconds);
  // host_held_share(r), from the parts already split (none for a step of 0 s, as there).
  const double share =
      p.source_step_seconds > 0 ? (p.source_parts->held - communication) / p.source_step_seconds : 0.0;
  const double gaps = (p.source_parts->held - communication) * std::max(0.0, 1.0 - share / kHostHeldShare);
  const double waits = communication + gaps;
  p.target_device_step_seconds = p.target_parts->compute + p.target_parts->memory + waits;
  p.predicted_step_seconds = std::max(*p.target_host_step_seconds, *p.target_device_step_seconds);
  p.method = "kernel profile + target host";
  if (*p.target_host_step_seconds > *p.target_device_step_seconds) {
    p.bound = "host";
  } else {
    p.bound = p.target_parts->compute >= p.target_parts->memory ? "compute" : "memory";
  }
  if (share >= kHostHeldShare) p.source_seconds_per_launch = seconds_per_launch(r);
}

}  // namespace

std::optional<double> host_held_share(const ResultFile& r) {
  if (!r.kernel_seconds_per_step || r.step_seconds.empty()) return std::nullopt;
  const double step = mean(r.step_seconds);
  if (!(step > 0)) return std::nullopt;
  const StepParts parts = measured_step_parts(*r.kernel_seconds_per_step, step);
  return std::max(0.0, parts.held - r.comm_share.value_or(0.0) * step) / step;
}

HostPace measure_host_pace(const std::vector<const ResultFile*>& runs) {
  if (runs.empty()) throw input_error("--target-host: no result given");
  HostPace pace;
  for (const ResultFile* r : runs) {
    const std::string why = why_not_a_host_pace(*r);
    if (!why.empty()) throw input_error(r->path + ": " + why + "; --target-host takes a run whose GPU waited for its host");
    pace.from.push_back(r->path);
    pace.by_run.push_back(*seconds_per_launch(*r));
  }
  pace.seconds_per_launch = percentile(pace.by_run, 50);
  return pace;
}

std::optional<double> planned_step_flops(const std::vector<double>& planned, int64_t epochs) {
  if (planned.empty() || epochs <= 0) return std::nullopt;
  const auto first = static_cast<std::ptrdiff_t>(std::min<std::size_t>(planned.size(), static_cast<std::size_t>(epochs)));
  return std::accumulate(planned.begin(), planned.begin() + first, 0.0) / static_cast<double>(first);
}

SteadyStep run_steady_step(const ResultFile& r, bool fit_flops) {
  return fit_steady_step(r.step_seconds, timed_step_values(r, train_flops_of), fit_flops);
}

EpochPrediction predict_epochs(const ResultFile& r, int64_t epochs, const ResultFile* actual) {
  if (r.epoch_wall_seconds.empty() && !r.partial_epoch) {
    throw input_error(r.path + ": no epoch with steps measured; predicting epochs needs at least one");
  }
  if (r.steps_per_epoch <= 0) throw input_error(r.path + ": summary.steps_per_epoch: none, so no epoch to scale to");
  EpochPrediction p;
  p.epochs = epochs;
  const double steps = static_cast<double>(epochs * r.steps_per_epoch);
  p.step_train_flops = planned_step_flops(r.planned_epoch_step_train_flops, epochs);
  const SteadyStep step = run_steady_step(r, p.step_train_flops.has_value());
  p.step_model = step.model_at(p.step_train_flops.value_or(0.0));
  p.steady_step_seconds = step.seconds_at(p.step_train_flops.value_or(0.0));
  p.step_lag1_autocorrelation = step.lag1_autocorrelation;
  p.effective_steps = step.effective_steps;
  p.from_partial_epoch = r.epoch_wall_seconds.empty();
  p.steady_epoch_seconds = static_cast<double>(r.steps_per_epoch) * p.steady_step_seconds + outside_steps_per_epoch(r);
  // Warm-up steps are paid once per run, not once per epoch: what each took beyond a steady step
  // of its work.
  double warmup_flops = 0;
  for (const auto& it : r.iterations) {
    if (!it.warmup || it.profiled) continue;
    p.warmup_overhead_seconds += it.seconds - step.seconds_at(it.train_flops);
    warmup_flops += it.train_flops;
  }
  p.predicted_seconds = p.warmup_overhead_seconds + static_cast<double>(epochs) * p.steady_epoch_seconds;
  // The prediction is the warm-up steps as measured, the epochs' time outside their steps, and
  // every other step at the steady step: their count times the steady step's interval, read at
  // those steps' mean work (the planned mean less the warm-up steps' own).
  const double steady_steps = std::max(0.0, steps - static_cast<double>(r.warmup_seconds.size()));
  double steady_flops = p.step_train_flops.value_or(0.0);
  if (step.line && steady_steps > 0) {
    const double without_warmup = (steps * steady_flops - warmup_flops) / steady_steps;
    if (without_warmup > 0) steady_flops = without_warmup;  // else warm-up steps the plan does not know
  }
  if (const auto half_step = step.half_ci95_at(steady_flops)) {
    const double half = steady_steps * *half_step;
    // A time is never below 0: a wide interval of a few noisy steps stops there.
    p.predicted_seconds_ci95 = Interval{std::max(0.0, p.predicted_seconds - half), p.predicted_seconds + half};
  }
  if (!r.epoch_wall_seconds.empty()) p.naive_seconds = static_cast<double>(epochs) * r.epoch_wall_seconds.front();
  if (!r.epoch_eval_seconds.empty()) {
    p.eval_seconds_per_epoch = mean(r.epoch_eval_seconds);
    p.predicted_with_eval_seconds = p.predicted_seconds + static_cast<double>(epochs) * *p.eval_seconds_per_epoch;
  }
  if (actual) score_against(r, *actual, p);
  return p;
}

double estimate_bytes_per_step(const ResultFile& r) {
  const double params = static_cast<double>(r.params);
  // Weights read forward and backward, gradients written, AdamW reads w, g, m, v and writes
  // w, m, v: ~10 fp32 accesses per parameter per optimizer step.
  const double parameter_bytes = 10.0 * 4.0 * params;
  // Activations saved for backward (Korthikanti et al. 2022): per layer s*b*h*(34 + 5*a*s/h)
  // bytes in 16-bit, the 5*a*s/h being attention's [S, S] scores, probabilities and dropout
  // mask, which SDPA's fused kernels recompute instead of storing. Doubled for fp32, written
  // forward and read back in backward.
  // The tokens are the padded ones the timed steps computed (dynamic padding makes them fewer than
  // seq_len per sample), else seq_len's. Under model.unpad the per-token part is at the real tokens'
  // rows the layers ran, but for attention on the padded grid (a GPU's) the queries, keys and
  // values it saves there (6 of the 34); the scores stay at the grid's S x S (on the CPU, attending
  // sample by sample, they are each sample's L x L: fewer, which this leaves in).
  const double hidden = r.hidden_size, layers = r.num_layers, heads = r.num_heads;
  const double b = static_cast<double>(r.batch_size * r.grad_accum);
  const double tokens = timed_step_mean(r, [](const ResultIteration& it) { return it.tokens; })
                            .value_or(static_cast<double>(r.seq_len) * b);
  const double rows = r.unpadded
                          ? timed_step_mean(r, [](const ResultIteration& it) { return it.real_tokens; }).value_or(tokens)
                          : tokens;
  const double on_grid = r.unpadded && r.device != "cpu" ? 6.0 : 0.0;  // per token, at the grid's tokens
  const double s = tokens / b;  // the mean padded length: attention's S x S
  const double width = r.precision == "fp32" ? 2.0 : 1.0;
  const double scores_per_token = r.stores_attention_scores ? 5.0 * heads * s / hidden : 0.0;
  const double per_layer = (34.0 - on_grid) * rows + (on_grid + scores_per_token) * tokens;
  const double activation_bytes = 2.0 * layers * hidden * per_layer * width;
  return parameter_bytes + activation_bytes;
}

TargetPrediction predict_target(const ResultFile& r, const DeviceSpec& target, const ResultFile* actual,
                                const HostPace* target_host) {
  if (r.steps_per_epoch <= 0) throw input_error(r.path + ": summary.steps_per_epoch: none, so no epoch to scale to");
  TargetPrediction p;
  p.precision = r.precision;
  p.target_device = target.name;
  const double source_peak = r.peak_flops_per_s.value_or(0.0);
  if (!(source_peak > 0)) {
    throw input_error(r.path + ": summary.peak_flops_per_s: unknown (" + r.peak_source +
                      "), so the measured device cannot be calibrated");
  }
  p.source_device = r.peak_source;
  p.source_peak_flops = source_peak;
  // The same peak the run's MFU used: TF32's for fp32 runs with cuda.tf32 on.
  if (r.precision == "fp32" && r.tf32 && !target.tf32_stated) {
    throw input_error("--target " + target.source + ": tf32_tflops: missing, and " + r.path +
                      " ran its fp32 matmuls on TF32 tensor cores (cuda.tf32): give the target's dense TF32 "
                      "TFLOPS (0 for a device without them)");
  }
  const double target_peak = peak_tflops(target, r.precision, r.tf32) * 1e12;
  if (!(target_peak > 0)) {
    throw input_error("--target: " + target.name + " has no " + r.precision + " tensor throughput in its spec");
  }
  const double samples_per_step = static_cast<double>(r.batch_size * r.grad_accum);
  // A step's own count where the run recorded it: with padding `longest`, model.unpad or sparse
  // prediction the steps do less than the plan's figure at seq_len for every sample.
  p.flops_per_step = timed_step_mean(r, train_flops_of)
                         .value_or(r.train_flops_per_sample * samples_per_step);
  p.bytes_per_step = estimate_bytes_per_step(r);
  p.source_step_seconds = mean(r.step_seconds);
  // An additive roofline: a training step runs its matmuls (compute-bound) and its elementwise
  // ops, norms and optimizer (memory-bound) one after another, so its ideal time is the sum of
  // the two, not the larger. One efficiency, calibrated on the source, scales both. The memory
  // side counts only where the source's bandwidth is known, so both ends are modelled alike.
  const double source_bandwidth = r.peak_bytes_per_s.value_or(0.0);
  const bool with_memory = source_bandwidth > 0;
  const double source_ideal = p.flops_per_step / source_peak + (with_memory ? p.bytes_per_step / source_bandwidth : 0.0);
  p.source_efficiency = source_ideal / p.source_step_seconds;
  // Its FLOPs alone faster than the peak (the memory estimate is rough, the FLOPs are counted):
  // the recorded peak is wrong (an older CPU result measured its own too low).
  const double flops_over_peak = p.flops_per_step / source_peak / p.source_step_seconds;
  if (flops_over_peak > 1) {
    throw input_error(r.path + ": its steps ran at " + format_fixed(100 * flops_over_peak, 0) +
                      "% of the peak it records (summary.peak_flops_per_s, from " + r.peak_source +
                      "): that peak is too low for this run, so no prediction calibrated on it can be right");
  }
  const double compute = p.flops_per_step / target_peak;
  const double target_bandwidth = target.memory_gbps * 1e9;
  const double memory = p.bytes_per_step / target_bandwidth;
  // Without the source's bandwidth the roofline is its compute side alone: so is its bound.
  p.bound = !with_memory || compute >= memory ? "compute" : "memory";
  p.roofline_step_seconds = (compute + (with_memory ? memory : 0.0)) / p.source_efficiency;
  p.predicted_step_seconds = p.roofline_step_seconds;
  p.method = "roofline";
  // Better than any estimate of the step's FLOPs and bytes: its kernels' measured time. Each part
  // scales by its own ratio of the two GPUs (Habitat's idea, by kind of kernel rather than per
  // kernel); the idle time between kernels, the host launching them, is the host's and stays.
  if (r.kernel_seconds_per_step && with_memory && target_bandwidth > 0) {
    p.method = "kernel profile";
    p.source_parts = measured_step_parts(*r.kernel_seconds_per_step, p.source_step_seconds);
    p.target_parts = StepParts{p.source_parts->compute * source_peak / target_peak,
                               p.source_parts->memory * source_bandwidth / target_bandwidth, p.source_parts->held};
    p.predicted_step_seconds = p.target_parts->total();
    p.bound = largest_part(*p.target_parts);
    p.overlapped_step_seconds =
        std::max(p.source_step_seconds, p.target_parts->compute + p.target_parts->memory);
  }
  if (target_host) pace_by_the_target_host(r, *target_host, p);
  p.naive_step_seconds = p.source_step_seconds * source_peak / target_peak;
  const double steps = static_cast<double>(r.steps_per_epoch);
  p.predicted_epoch_seconds = steps * p.predicted_step_seconds;
  p.naive_epoch_seconds = steps * p.naive_step_seconds;
  if (actual) {
    // Scale the actual's steady step time to this result's epoch, so the work must match.
    if (actual->device.rfind("cuda", 0) != 0) {
      throw input_error(actual->path + ": ran on " + actual->device + "; --actual for --target is a run on that GPU");
    }
    require_same_workload(r, *actual, /*same_device=*/false);
    p.actual_epoch_seconds = steps * mean(actual->step_seconds);
    p.error_pct = percent_error(p.predicted_epoch_seconds, *p.actual_epoch_seconds);
    p.naive_error_pct = percent_error(p.naive_epoch_seconds, *p.actual_epoch_seconds);
    p.roofline_error_pct = percent_error(steps * p.roofline_step_seconds, *p.actual_epoch_seconds);
    if (p.overlapped_step_seconds) {
      p.overlapped_error_pct = percent_error(steps * *p.overlapped_step_seconds, *p.actual_epoch_seconds);
    }
    if (p.target_host) p.additive_error_pct = percent_error(steps * p.target_parts->total(), *p.actual_epoch_seconds);
  }
  return p;
}

}  // namespace tbench
