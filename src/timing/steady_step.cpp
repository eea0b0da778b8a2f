#include "tbench/timing/steady_step.hpp"

#include <cmath>

namespace tbench {

double SteadyStep::seconds_at(double flops) const { return line && flops > 0 ? line->at(flops) : mean_seconds; }

std::optional<double> SteadyStep::half_ci95_at(double flops) const {
  if (!line || !(flops > 0)) return mean_half_ci95;
  const auto ci = line->mean_interval_95_at(flops);
  if (!ci) return std::nullopt;
  return (ci->high - ci->low) / 2;
}

SteadyStep fit_steady_step(const std::vector<double>& seconds, const std::vector<double>& flops, bool fit_flops) {
  SteadyStep step;
  const Spread s = spread(seconds);
  step.mean_seconds = s.mean;
  if (const auto ci = mean_interval_95(s)) step.mean_half_ci95 = ci->high - s.mean;
  if (!fit_flops || flops.size() != seconds.size() || seconds.size() < 3) return step;
  const auto line = fit_line(flops, seconds);
  if (!line) return step;
  const bool work_varies = std::sqrt(line->sxx / static_cast<double>(line->count)) > 1e-3 * line->mean_x;
  if (!work_varies || !(line->slope > 0)) return step;
  step.model = "flops line";
  step.line = line;
  return step;
}

}  // namespace tbench
