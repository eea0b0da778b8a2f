#include "tbench/timing/steady_step.hpp"

#include <algorithm>
#include <cmath>

namespace tbench {

double SteadyStep::work_ratio(double flops) const {
  return !line && flops > 0 && mean_flops > 0 ? flops / mean_flops : 1.0;
}

double SteadyStep::seconds_at(double flops) const {
  return line && flops > 0 ? line->at(flops) : mean_seconds * work_ratio(flops);
}

std::string SteadyStep::model_at(double flops) const {
  return std::fabs(work_ratio(flops) - 1) > 1e-9 ? model + ", scaled to the planned work" : model;
}

std::optional<double> SteadyStep::half_ci95_at(double flops) const {
  const auto se = standard_error_at(flops);
  if (!se) return std::nullopt;
  return student_t_975(se->degrees_of_freedom) * se->value;
}

std::optional<StandardError> SteadyStep::standard_error_at(double flops) const {
  if (line && flops > 0) return line->mean_standard_error_at(flops);
  if (!mean_standard_error) return std::nullopt;
  return StandardError{mean_standard_error->value * work_ratio(flops), mean_standard_error->degrees_of_freedom};
}

namespace {

// The lag-1 autocorrelation of a model's deviations in step order, from kSerialStepsMin steps on
// (fewer estimate it too loosely to act on). The steps about their own mean: less its
// small-sample bias (bias_corrected_lag1, derived for just that). A line's residuals: as
// estimated, since two fitted parameters bias it otherwise and no correction is derived here.
std::optional<double> serial_correlation(const std::vector<double>& deviations, bool about_their_mean) {
  const auto n = static_cast<int64_t>(deviations.size());
  if (n < kSerialStepsMin) return std::nullopt;
  const std::optional<double> r = lag1_autocorrelation(deviations);
  if (!r) return 0.0;  // no spread: nothing to correlate, and nothing for a correction to move
  return about_their_mean ? bias_corrected_lag1(*r, n) : *r;
}

}  // namespace

SteadyStep fit_steady_step(const std::vector<double>& seconds, const std::vector<double>& flops, bool fit_flops) {
  SteadyStep step;
  const Spread s = spread(seconds);
  step.mean_seconds = s.mean;
  step.lag1_autocorrelation = serial_correlation(seconds, /*about_their_mean=*/true);
  step.effective_steps = effective_count(s.count, step.lag1_autocorrelation.value_or(0.0));
  step.mean_standard_error = mean_standard_error(s, step.effective_steps);
  if (!fit_flops || flops.size() != seconds.size() || seconds.empty()) return step;
  if (std::all_of(flops.begin(), flops.end(), [](double f) { return f > 0; })) step.mean_flops = spread(flops).mean;
  if (seconds.size() < 3) return step;
  auto line = fit_line(flops, seconds);
  if (!line) return step;
  const bool work_varies = std::sqrt(line->sxx / static_cast<double>(line->count)) > 1e-3 * line->mean_x;
  if (!work_varies || !(line->slope > 0)) return step;
  std::vector<double> residuals;
  for (std::size_t i = 0; i < seconds.size(); ++i) residuals.push_back(seconds[i] - line->at(flops[i]));
  step.lag1_autocorrelation = serial_correlation(residuals, /*about_their_mean=*/false);
  step.effective_steps = effective_count(line->count, step.lag1_autocorrelation.value_or(0.0));
  line->effective_count = step.effective_steps;
  step.model = "flops line";
  step.line = line;
  return step;
}

}  // namespace tbench
