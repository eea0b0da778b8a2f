#include "tbench/results.hpp"
#include "tbench/stats.hpp"

namespace tbench {

nlohmann::json summarize(const Recorder& recorder, const SummaryInputs& in) {
  using nlohmann::json;
  std::vector<double> step_ms, data_ms;
  double seconds = 0;
  int64_t samples = 0, tokens = 0, real_tokens = 0, skipped = 0;
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
      {"train_flops_per_s", samples_per_s.is_null() ? json(nullptr) : json(samples_per_s.get<double>() * in.train_flops_per_sample)},
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
  return summary;
}

}  // namespace tbench
