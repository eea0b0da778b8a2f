#include "tbench/results.hpp"

#include <algorithm>
#include <cmath>

#include "tbench/stats.hpp"

namespace tbench {

namespace {

// Does the step timer see the whole epoch? Compares the epochs' wall time with the sum of their
// step times; the difference is the host work between steps (records, progress, the epoch-end
// wait). On CUDA that work overlaps queued device work, so the gap stays small there too.
nlohmann::json timing_check(const std::vector<EpochRecord>& epochs, const std::string& method) {
  double wall = 0, steps = 0;
  for (const auto& e : epochs) {
    wall += e.seconds;
    steps += e.step_seconds;
  }
  const double gap = wall > 0 ? (wall - steps) / wall : 0.0;
  return {{"method", method.empty() ? nlohmann::json(nullptr) : nlohmann::json(method)},
          {"step_seconds", steps},
          {"epoch_seconds", wall},
          {"gap_fraction", wall > 0 ? nlohmann::json(gap) : nlohmann::json(nullptr)},
          {"margin", kTimingGapMargin},
          {"within_margin", wall > 0 ? nlohmann::json(std::abs(gap) <= kTimingGapMargin) : nlohmann::json(nullptr)}};
}

// The highest allocator peaks over the epochs; -1 where none was measured (CPU).
std::pair<int64_t, int64_t> allocator_peaks(const std::vector<EpochRecord>& epochs) {
  int64_t allocated = -1, reserved = -1;
  for (const auto& e : epochs) {
    allocated = std::max(allocated, e.peak_allocated_bytes);
    reserved = std::max(reserved, e.peak_reserved_bytes);
  }
  return {allocated, reserved};
}

}  // namespace

nlohmann::json summarize(const Recorder& recorder, const SummaryInputs& in) {
  using nlohmann::json;
  std::vector<double> step_ms, data_ms;
  double seconds = 0;
  int64_t samples = 0, tokens = 0, real_tokens = 0, skipped = 0;
  double flops = 0;  // per-step FLOPs at the padded lengths (dynamic padding changes them per step)
  int64_t excluded = 0;
  for (const auto& r : recorder.iterations) {
    if (r.warmup) {
      ++excluded;
      continue;
    }
    step_ms.push_back(r.seconds * 1e3);
    data_ms.push_back(r.data_seconds * 1e3);
    seconds += r.seconds;
    samples += r.samples;
    tokens += r.tokens;
    real_tokens += r.real_tokens;
    flops += r.train_flops > 0 ? r.train_flops : static_cast<double>(r.samples) * in.train_flops_per_sample;
    skipped += r.skipped ? 1 : 0;
  }
  const Spread steps = spread(step_ms);
  const auto rate = [&](double count) { return seconds > 0 ? json(count / seconds) : json(nullptr); };

  std::vector<double> complete_epochs;
  for (const auto& e : recorder.epochs) {
    if (e.complete) complete_epochs.push_back(e.seconds);
  }
  const Spread epochs = spread(complete_epochs);
  const double projected = static_cast<double>(in.steps_per_epoch) * steps.mean / 1e3;
  const json samples_per_s = rate(static_cast<double>(samples));

  json summary = {
      {"scope", "per-device"},
      {"warmup_steps", excluded},
      {"warmup_steps_requested", in.warmup_steps},
      {"timed_steps", steps.count},
      {"total_steps", static_cast<int64_t>(recorder.iterations.size())},
      {"step_ms", steps},
      {"data_ms", spread(data_ms)},
      {"samples_per_s", samples_per_s},
      {"tokens_per_s", rate(static_cast<double>(tokens))},
      {"real_tokens_per_s", rate(static_cast<double>(real_tokens))},
      {"it_per_s", rate(static_cast<double>(steps.count))},
      {"padding_efficiency", tokens > 0 ? json(static_cast<double>(real_tokens) / static_cast<double>(tokens)) : json(nullptr)},
      {"skipped_steps", skipped},
      {"train_flops_per_s", rate(flops)},
      {"epochs_completed", epochs.count},
      {"epoch_seconds", epochs.count > 0 ? json(epochs.mean) : json(nullptr)},
      {"epoch_time", epochs.count > 0 ? json(format_duration(epochs.mean)) : json(nullptr)},
      {"steps_per_epoch", in.steps_per_epoch},
      {"projected_epoch_seconds", steps.count > 0 ? json(projected) : json(nullptr)},
      {"projected_epoch_time", steps.count > 0 ? json(format_duration(projected)) : json(nullptr)},
      {"wall_seconds", in.wall_seconds},
      {"started_at", in.started_at},
      {"ended_at", in.ended_at},
      {"status", to_string(in.status)},
      {"error", in.error.empty() ? json(nullptr) : json(in.error)},
  };
  summary["timing_check"] = timing_check(recorder.epochs, in.timing_method);
  const auto [allocated, reserved] = allocator_peaks(recorder.epochs);
  summary["peak_allocated_bytes"] = allocated < 0 ? json(nullptr) : json(allocated);
  summary["peak_reserved_bytes"] = reserved < 0 ? json(nullptr) : json(reserved);
  return summary;
}

}  // namespace tbench
