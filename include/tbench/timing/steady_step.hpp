#pragma once
// The step an epoch is made of once warmed up, from a run's timed steps (neither warm-up nor
// profiled): what the result's projected epoch and `predict --epochs` scale to whole epochs.
#include <optional>
#include <string>
#include <vector>

#include "tbench/timing/stats.hpp"

namespace tbench {

// Where every step does the same work, the timed steps' mean (scaled to the planned work where that
// differs: a partial last step the timed ones did not include). Where their work varies (dynamic
// padding: each batch pads to its own longest) a line in the steps' FLOPs: the timed steps are one
// epoch's batches or fewer, and the epochs to come draw others, whose mean work the run plans.
//
// Steps are a series, not independent draws: a machine that drifts (a shared VM's speed states,
// clocks, a neighbour's load) makes neighbouring steps alike, and then the steps know their mean
// less well than as many independent ones. From kSerialStepsMin timed steps on, the intervals count
// the steps (or the line's residuals) as effective_count of their lag-1 autocorrelation.
inline constexpr int64_t kSerialStepsMin = 10;

struct SteadyStep {
  std::string model = "mean";  // or "flops line"
  double mean_seconds = 0;     // the timed steps' mean
  // Its standard error, the steps counted as effective_steps; none for fewer than 2.
  std::optional<StandardError> mean_standard_error;
  std::optional<LineFit> line;  // seconds in FLOPs, where model is "flops line"
  // The model's deviations (the steps about their mean, or the line's residuals) in step order:
  // their lag-1 autocorrelation (about the mean: bias-corrected, bias_corrected_lag1; none under
  // kSerialStepsMin steps), and what the steps are worth as independent ones.
  std::optional<double> lag1_autocorrelation;
  double effective_steps = 0;
  // The timed steps' mean FLOPs, where every one is known and the caller plans the work (fit_flops).
  double mean_flops = 0;

  // A steady step of `flops`' work: the line's where there is one, else the mean, scaled by the
  // work where the planned steps do other work than the timed ones did on average (a partial last
  // step under data.drop_last false: a line needs steps of varied work, and these were alike).
  double seconds_at(double flops) const;
  // `model`, or "<model>, scaled to the planned work" where seconds_at(flops) scales the mean.
  std::string model_at(double flops) const;
  // flops over the timed steps' mean, where the mean stands for steps of `flops`' work; else 1.
  double work_ratio(double flops) const;
  // The 95% interval's half-width of the mean of steady steps of `flops`' work on average.
  std::optional<double> half_ci95_at(double flops) const;
  // That mean's standard error, the steps counted as effective_steps (a line: its mean's at
  // `flops`); none for fewer than 2 steps (3 for a line).
  std::optional<StandardError> standard_error_at(double flops) const;
};

// `seconds`: the timed steps' times. `flops`: each one's training FLOPs, empty where any is
// unknown (older results). `fit_flops`: the caller knows the mean work of the steps it predicts,
// so a line may be read there. The line is fitted where there are at least 3 steps, their work
// spreads by more than 0.1% (fixed shapes leave a slope to the noise), and more work took longer;
// else the mean.
SteadyStep fit_steady_step(const std::vector<double>& seconds, const std::vector<double>& flops, bool fit_flops);

}  // namespace tbench
