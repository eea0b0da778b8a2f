#include "tbench/timing/stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace tbench {

double percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double rank = q / 100.0 * static_cast<double>(values.size() - 1);
  const auto lower = static_cast<std::size_t>(std::floor(rank));
  const auto upper = std::min(lower + 1, values.size() - 1);
  const double fraction = rank - static_cast<double>(lower);
  return values[lower] + (values[upper] - values[lower]) * fraction;
}

Spread spread(const std::vector<double>& values) {
  Spread s;
  s.count = static_cast<int64_t>(values.size());
  if (values.empty()) return s;
  s.median = percentile(values, 50);
  s.p10 = percentile(values, 10);
  s.p90 = percentile(values, 90);
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  double squares = 0;
  for (double v : values) squares += (v - s.mean) * (v - s.mean);
  s.stdev = values.size() > 1 ? std::sqrt(squares / static_cast<double>(values.size() - 1)) : 0.0;
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  s.min = *lo;
  s.max = *hi;
  return s;
}

// A spread of nothing has no figures: null, not zeros a reader would take for measured ones.
void to_json(nlohmann::json& j, const Spread& s) {
  const auto figure = [&](double value) { return s.count > 0 ? nlohmann::json(value) : nlohmann::json(nullptr); };
  j = {{"count", s.count}, {"median", figure(s.median)}, {"p10", figure(s.p10)}, {"p90", figure(s.p90)},
       {"mean", figure(s.mean)}, {"stdev", figure(s.stdev)}, {"min", figure(s.min)}, {"max", figure(s.max)}};
}

namespace {

// The continued fraction of the regularized incomplete beta function I_x(a, b), by the modified
// Lentz method; it converges fast where x < (a + 1) / (a + b + 2).
double incomplete_beta_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300, kEpsilon = 1e-15;
  const auto guard = [](double v) { return std::fabs(v) < kTiny ? kTiny : v; };
  double c = 1, d = 1 / guard(1 - (a + b) * x / (a + 1));
  double fraction = d;
  for (int m = 1; m <= 500; ++m) {
    // The even and the odd term of step m: d_2m = m (b - m) x / ((a + 2m - 1)(a + 2m)),
    // d_2m+1 = -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1)).
    const double even = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
    d = 1 / guard(1 + even * d);
    c = guard(1 + even / c);
    fraction *= d * c;
    const double odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1));
    d = 1 / guard(1 + odd * d);
    c = guard(1 + odd / c);
    const double change = d * c;
    fraction *= change;
    if (std::fabs(change - 1) < kEpsilon) break;
  }
  return fraction;
}

// I_x(a, b) = x^a (1 - x)^b / (a B(a, b)) times the fraction, or 1 - I_{1-x}(b, a) where that
// converges faster.
double regularized_incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double log_front = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  if (x < (a + 1) / (a + b + 2)) return std::exp(log_front) * incomplete_beta_fraction(a, b, x) / a;
  return 1 - std::exp(log_front) * incomplete_beta_fraction(b, a, 1 - x) / b;
}

// P(|T| > t) for Student's t with `df` degrees of freedom: I_{df / (df + t^2)}(df / 2, 1 / 2).
double student_t_two_sided_tail(double t, double df) {
  return regularized_incomplete_beta(df / 2, 0.5, df / (df + t * t));
}

}  // namespace

double student_t_975(double df) {
  if (!(df >= 1)) df = 1;
  if (df > 1e5) {  // where the tail's incomplete beta loses digits; the expansion's next term is ~1e-15
    const double z = 1.959963984540054;
    return z + (z * z * z + z) / (4 * df) + (5 * std::pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * df * df);
  }
  // The tail falls as t grows: bisect for a two-sided tail of 5%. t_975 is 12.706 at one degree of
  // freedom and falls towards 1.96, so [1.9, 13] holds it.
  double lo = 1.9, hi = 13;
  for (int i = 0; i < 100 && hi - lo > 1e-12; ++i) {
    const double mid = (lo + hi) / 2;
    (student_t_two_sided_tail(mid, df) > 0.05 ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

std::optional<StandardError> mean_standard_error(const Spread& s, double effective_count) {
  if (s.count < 2) return std::nullopt;
  const double count = static_cast<double>(s.count);
  const double n = std::min(count, effective_count);
  // (n > 1: effective_count never gives less than 2, and the scale needs n above 1.)
  const double variance_scale = n < count && n > 1 ? (count - 1) / (count - count / n) : 1.0;
  return StandardError{s.stdev * std::sqrt(variance_scale / n), n - 1};
}

std::optional<Interval> mean_interval_95(const Spread& s, std::optional<double> effective_count) {
  const auto se = mean_standard_error(s, effective_count.value_or(static_cast<double>(s.count)));
  if (!se) return std::nullopt;
  const double half = student_t_975(se->degrees_of_freedom) * se->value;
  return Interval{s.mean - half, s.mean + half};
}

std::optional<LogMean> log_mean(const Spread& s, double effective_count) {
  const auto se = mean_standard_error(s, effective_count);
  if (!se || !(se->degrees_of_freedom > 0)) return std::nullopt;
  return log_mean(s.mean, *se);
}

std::optional<LogMean> log_mean(double mean, const StandardError& se) {
  if (!(mean > 0)) return std::nullopt;
  return LogMean{(se.value / mean) * (se.value / mean), se.degrees_of_freedom};
}

Interval ratio_interval_95(double ratio, const LogMean& numerator, const LogMean& denominator) {
  const double variance = numerator.variance + denominator.variance;
  double df = 1;
  const auto welch_term = [](const LogMean& m) {
    return m.degrees_of_freedom > 0 ? m.variance * m.variance / m.degrees_of_freedom : 0.0;
  };
  const double denom = welch_term(numerator) + welch_term(denominator);
  if (denom > 0) df = variance * variance / denom;
  const double half = student_t_975(df) * std::sqrt(variance);
  return {ratio * std::exp(-half), ratio * std::exp(half)};
}

std::optional<double> lag1_autocorrelation(const std::vector<double>& series) {
  const std::size_t n = series.size();
  if (n < 3) return std::nullopt;
  // Compared exactly: a constant series' mean can miss its value by an ulp, and deviations that
  // all equal that ulp would read as a correlation near 1.
  const auto differs = [&](double v) { return v != series.front(); };
  if (std::none_of(series.begin(), series.end(), differs)) return std::nullopt;
  const double mean = std::accumulate(series.begin(), series.end(), 0.0) / static_cast<double>(n);
  double variance = 0, lag1 = 0;
  for (std::size_t i = 0; i < n; ++i) {
    variance += (series[i] - mean) * (series[i] - mean);
    if (i + 1 < n) lag1 += (series[i] - mean) * (series[i + 1] - mean);
  }
  if (!(variance > 0)) return std::nullopt;
  return lag1 / variance;
}

double bias_corrected_lag1(double r, int64_t n) {
  if (n <= 3) return r;
  const double count = static_cast<double>(n);
  return std::clamp((count * r + 1) / (count - 3), -1.0, 1.0);
}

double effective_count(int64_t n, double rho) {
  const double count = static_cast<double>(n);
  if (!(rho > 0) || n < 2) return count;
  return std::max(2.0, count * (1 - rho) / (1 + rho));
}

std::optional<LineFit> fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  const std::size_t n = std::min(x.size(), y.size());
  if (n < 2) return std::nullopt;
  LineFit line;
  line.count = static_cast<int64_t>(n);
  line.effective_count = static_cast<double>(n);
  double mean_y = 0;
  for (std::size_t i = 0; i < n; ++i) {
    line.mean_x += x[i];
    mean_y += y[i];
  }
  line.mean_x /= static_cast<double>(n);
  mean_y /= static_cast<double>(n);
  double sxy = 0;
  for (std::size_t i = 0; i < n; ++i) {  // deviations from the means: no cancellation at large x
    line.sxx += (x[i] - line.mean_x) * (x[i] - line.mean_x);
    sxy += (x[i] - line.mean_x) * (y[i] - mean_y);
  }
  if (!(line.sxx > 0)) return std::nullopt;
  line.slope = sxy / line.sxx;
  line.intercept = mean_y - line.slope * line.mean_x;
  if (n > 2) {
    double squares = 0;
    for (std::size_t i = 0; i < n; ++i) squares += (y[i] - line.at(x[i])) * (y[i] - line.at(x[i]));
    line.residual_variance = squares / static_cast<double>(n - 2);
  }
  return line;
}

std::optional<StandardError> LineFit::mean_standard_error_at(double x) const {
  if (count < 3) return std::nullopt;
  const double n = static_cast<double>(count);
  const double effective = std::min(n, effective_count > 0 ? effective_count : n);
  const double se = std::sqrt(residual_variance * n / effective * (1.0 / n + (x - mean_x) * (x - mean_x) / sxx));
  return StandardError{se, std::max(1.0, effective - 2)};
}

std::optional<Interval> LineFit::mean_interval_95_at(double x) const {
  const auto se = mean_standard_error_at(x);
  if (!se) return std::nullopt;
  const double half = student_t_975(se->degrees_of_freedom) * se->value;
  return Interval{at(x) - half, at(x) + half};
}

std::string format_duration(double seconds) {
  // llround is undefined past long long's range; no run lasts 30 000 years.
  if (!(seconds < 1e12)) return "-";
  char text[32];
  // Under 10 s whole seconds say too little (a CPU smoke run's epoch read "00:00"): keep the
  // mm:ss form with the fraction the figure needs, milliseconds under a second: 5.432 s ->
  // "00:05.43", 0.0637 s -> "00:00.064".
  if (seconds < 0.9995) {
    std::snprintf(text, sizeof text, "00:0%.3f", std::max(0.0, seconds));
    return text;
  }
  if (seconds < 9.995) {
    std::snprintf(text, sizeof text, "00:0%.2f", seconds);
    return text;
  }
  const auto total = static_cast<long long>(std::llround(seconds));
  const long long h = total / 3600, m = (total % 3600) / 60, s = total % 60;
  if (h > 0) {
    std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", h, m, s);
  } else {
    std::snprintf(text, sizeof text, "%02lld:%02lld", m, s);
  }
  return text;
}

std::string format_fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

std::string format_significant(double value, int digits) {
  if (!(std::fabs(value) > 0) || !std::isfinite(value)) return format_fixed(value, 1);
  const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(value))));
  return format_fixed(value, std::clamp(digits - 1 - magnitude, 1, 9));
}

}  // namespace tbench
