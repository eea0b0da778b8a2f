#pragma once
// Summary statistics of timing samples.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tbench {

struct Spread {
  int64_t count = 0;
  double median = 0, p10 = 0, p90 = 0, mean = 0, stdev = 0, min = 0, max = 0;
};

// Percentile with linear interpolation between order statistics (numpy's default).
double percentile(std::vector<double> values, double q);
// stdev is the sample standard deviation (n - 1); 0 for fewer than two values.
Spread spread(const std::vector<double>& values);
void to_json(nlohmann::json& j, const Spread& s);

// Student's t at 97.5%, the two-sided 95% quantile, for `degrees_of_freedom` (at least 1; below
// counts as 1), fractional ones too: Welch's and effective counts' are, and between 1 and 3 a
// table's interpolation is off by up to 20%. Solved from the t distribution's tail, the regularized
// incomplete beta function, to 1e-9 up to 1e5 degrees of freedom; above, a Cornish-Fisher
// expansion about the normal quantile (off by under 1e-12 there).
double student_t_975(double degrees_of_freedom);

struct Interval {
  double low = 0, high = 0;
};
// The 95% confidence interval of the mean that `s` summarises: Student's t with count - 1 degrees
// of freedom, its values taken as independent draws; none for fewer than two. Given
// `effective_count` (effective_count below), the values are worth that many independent ones:
// s / sqrt(effective) with effective - 1 degrees of freedom.
std::optional<Interval> mean_interval_95(const Spread& s, std::optional<double> effective_count = std::nullopt);

// An estimate's standard error and the degrees of freedom it was estimated with.
struct StandardError {
  double value = 0, degrees_of_freedom = 0;
};
// The standard error of the mean that `s` summarises, its values worth `effective_count`
// independent ones (at most count), with that count - 1 degrees of freedom; none for fewer than 2.
// Values that correlate also spread less about their own mean than about the true one: the sum of
// squares about the mean expects n sigma^2 (1 - 1/effective), not (n - 1) sigma^2, so where
// effective < count the variance is scaled by (n - 1) / (n - n / effective) before it is divided.
std::optional<StandardError> mean_standard_error(const Spread& s, double effective_count);

// What is known of a mean's log: its variance by the delta method, Var(log mean) = variance /
// (n mean^2) = (standard error / mean)^2, and the degrees of freedom that variance was estimated
// with.
struct LogMean {
  double variance = 0, degrees_of_freedom = 0;
};
// From the values `s` summarises, worth `effective_count` independent ones (at most count): n is
// that count, with n - 1 degrees of freedom. None for fewer than two values (one value says
// nothing of its spread) or a mean of 0.
std::optional<LogMean> log_mean(const Spread& s, double effective_count);
// From a mean of `mean` (> 0) and its standard error.
std::optional<LogMean> log_mean(double mean, const StandardError& se);
// The 95% confidence interval of the ratio of two means, numerator over denominator: ratio x
// exp(+-t se), se^2 the two logs' variances summed, t with Welch-Satterthwaite's degrees of
// freedom (at least 1).
Interval ratio_interval_95(double ratio, const LogMean& numerator, const LogMean& denominator);

// The lag-1 autocorrelation of a series in its order: the lag-1 autocovariance over the variance,
// both about the mean and over n (statsmodels' acf). None for fewer than 3 values or none that
// differ: no spread has no correlation to estimate (nor a bias to correct).
std::optional<double> lag1_autocorrelation(const std::vector<double>& series);

// lag1_autocorrelation's estimate from `n` values, less its small-sample bias: it runs low by
// (1 + 3 rho) / n (Marriott and Pope 1954), so rho = (n r + 1) / (n - 3), held to [-1, 1]. At
// n = 20 and a true rho of 0.6, counting the steps with the raw estimate gave a mean's 95 %
// interval that held the mean 87.7 % of the time, and with this one (and mean_standard_error's
// variance scaling) 92.3 %; at rho 0, 96.5 and 96.8 % (bench/serial_interval_coverage.py).
double bias_corrected_lag1(double r, int64_t n);

// How many independent values `n` values of a series are worth for its mean where neighbours
// correlate by `rho`: n (1 - rho) / (1 + rho), the AR(1) effective sample size (Bretherton et al.
// 1999), never under 2 (one degree of freedom). A negative rho counts as 0: n.
double effective_count(int64_t n, double rho);

// The least-squares line y = intercept + slope * x through points (x_i, y_i).
struct LineFit {
  double intercept = 0, slope = 0;
  int64_t count = 0;
  double mean_x = 0, sxx = 0;    // the x's mean and their squared deviations' sum
  double residual_variance = 0;  // the residuals' squares over count - 2 (0 with two points)
  // What the points are worth as independent ones (effective_count of a series' residuals); the
  // count where they are independent, as fit_line leaves it.
  double effective_count = 0;

  double at(double x) const { return intercept + slope * x; }
  // The standard error of the line's mean at `x`, the residuals taken as draws of one variance,
  // independent, or worth effective_count independent ones (the variance scaled by count /
  // effective_count), with effective_count - 2 degrees of freedom (at least 1); none for fewer
  // than 3 points.
  std::optional<StandardError> mean_standard_error_at(double x) const;
  // The 95% confidence interval of the line's mean at `x`: Student's t on mean_standard_error_at.
  std::optional<Interval> mean_interval_95_at(double x) const;
};
// None for fewer than two points, or where every x is the same.
std::optional<LineFit> fit_line(const std::vector<double>& x, const std::vector<double>& y);

// 83.4 s -> "01:23"; an hour or more -> "1:02:03" (the way people quote epoch times); "-" for NaN
// and for 1e12 s or more.
std::string format_duration(double seconds);

// `value` with `digits` decimals, e.g. format_fixed(1.6971, 2) -> "1.70".
std::string format_fixed(double value, int digits);

// `value` with one decimal, or more where it needs them to show `digits` significant ones (at
// most 9): 123.44 -> "123.4", 0.1113 -> "0.111", 0.018 -> "0.0180". A short run's figures printed
// with one decimal read 0.1 s for 0.111 and ±0.0 s for a 16% spread.
std::string format_significant(double value, int digits = 3);

}  // namespace tbench
